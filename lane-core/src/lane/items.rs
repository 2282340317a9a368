//! The item FIFO: one record per accepted run or publication, in submission order, until
//! its outcome is delivered.

use crate::error::EventError;
use crate::ids::{CodeRef, DeviceTiming, ItemOrder, Lease, OrderKey, PublicationId, RunId, Tag};
use crate::publication::PublicationPhase;
use crate::run::RunPhase;

use super::Lane;

#[derive(Clone, Copy, Debug)]
pub(super) struct RunRecord {
    pub(super) id: RunId,
    pub(super) tag: Option<Tag>,
    pub(super) diagnostics: bool,
    pub(super) lease: Lease,
    /// Its ordering key: where it was placed in the FIFO (L-2 as amended).
    pub(super) key: Option<OrderKey>,
    /// Submitted held and not activated yet: it does not launch.
    pub(super) held: bool,
    /// The runtime's epoch for its result record, if it gave one.
    pub(super) epoch: Option<u64>,
    /// How many times the runner declined its launch: from the first, it launches only onto
    /// an empty pair, and it no longer counts in the prepare window.
    pub(super) declines: u32,
    /// Its last launch was queued behind a run on the pair (`LaunchRun`'s `after` named
    /// one): only such a launch may be declined.
    pub(super) queued_launch: bool,
    /// Where it is, with what that phase holds (its deadline, evidence, verdict).
    pub(super) phase: RunPhase,
    /// What the status read returned for its device timing.
    pub(super) timing: Option<DeviceTiming>,
    /// AICore stream creations counted by the pair when this run's launch was submitted to
    /// it; `None` if it never reached the pair.
    pub(super) launched_on: Option<u64>,
}

impl RunRecord {
    /// A freshly accepted run of `request`, on `lease`.
    pub(super) const fn queued(id: RunId, request: &super::RunRequest, lease: Lease) -> Self {
        Self {
            id,
            tag: request.tag,
            diagnostics: request.diagnostics,
            lease,
            key: request.key,
            held: request.held,
            epoch: request.epoch,
            declines: 0,
            queued_launch: false,
            phase: RunPhase::Queued { incompatible: false },
            timing: None,
            launched_on: None,
        }
    }
}

impl RunRecord {
    /// Whether the run counts in the prepare window (L-18): preparing, or prepared and not
    /// launched, unless its launch was declined (it waits for the pair, not for a prepare).
    pub(super) const fn in_prepare_window(&self) -> bool {
        matches!(self.phase, RunPhase::Preparing { .. } | RunPhase::Prepared { .. })
            && self.declines == 0
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct PublicationRecord {
    pub(super) id: PublicationId,
    pub(super) code: CodeRef,
    /// Where it is, with its result once done.
    pub(super) phase: PublicationPhase,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Item {
    Run(RunRecord),
    Publication(PublicationRecord),
}

impl Item {
    /// Where the item stands in the lane's order.
    pub(super) const fn order(&self) -> ItemOrder {
        match self {
            Self::Run(r) => ItemOrder { seq: r.id.0, key: r.key },
            Self::Publication(p) => ItemOrder { seq: p.id.0, key: None },
        }
    }

    pub(super) const fn is_done(&self) -> bool {
        match self {
            Self::Run(r) => r.phase.is_done(),
            Self::Publication(p) => p.phase.is_done(),
        }
    }

    pub(super) const fn as_run(&self) -> Option<&RunRecord> {
        match self {
            Self::Run(r) => Some(r),
            Self::Publication(_) => None,
        }
    }

    pub(super) const fn is_live_publication(&self) -> bool {
        matches!(self, Self::Publication(p) if !p.phase.is_done())
    }
}

impl Lane {
    pub(super) fn mint_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Runs the lane holds: every accepted run whose outcome is not delivered yet, including
    /// finished runs held behind an unfinished predecessor (so the FIFO stays bounded).
    pub(super) fn held_runs(&self) -> usize {
        self.items.iter().filter(|i| matches!(i, Item::Run(_))).count()
    }

    /// Publications without their outcome.
    pub(super) fn live_publications(&self) -> usize {
        self.items.iter().filter(|i| i.is_live_publication()).count()
    }

    pub(super) fn live_runs(&self) -> impl Iterator<Item = &RunRecord> {
        self.items.iter().filter_map(Item::as_run).filter(|r| !r.phase.is_done())
    }

    /// The oldest queued run.
    pub(super) fn first_queued(&self) -> Option<usize> {
        self.items.iter().position(|i| matches!(i, Item::Run(r) if r.phase.is_queued()))
    }

    #[inline(always)]
    pub(super) fn run(&self, idx: usize) -> &RunRecord {
        match &self.items[idx] {
            Item::Run(r) => r,
            // Callers only pass indices they found as runs.
            Item::Publication(_) => unreachable!("item {idx} is a publication"),
        }
    }

    #[inline(always)]
    pub(super) fn run_mut(&mut self, idx: usize) -> &mut RunRecord {
        match &mut self.items[idx] {
            Item::Run(r) => r,
            Item::Publication(_) => unreachable!("item {idx} is a publication"),
        }
    }

    /// Finds the live run an event names and checks its lease: `None` when no run by that id
    /// is live (never accepted, or done).
    #[inline]
    pub(super) fn live_run(
        &self,
        run: RunId,
        lease: Lease,
        event: &'static str,
    ) -> Result<Option<usize>, EventError> {
        let Some((idx, live)) = self.items.iter().enumerate().find_map(|(idx, item)| match item {
            Item::Run(r) if r.id == run && !r.phase.is_done() => Some((idx, r.lease)),
            _ => None,
        }) else {
            return Ok(None);
        };
        if live != lease {
            return Err(EventError::StaleLease { run, event, got: lease, live });
        }
        Ok(Some(idx))
    }
}
