//! Runner work out (L-18): each `PrepareRun` and `FinaliseRun` the driver has taken and not
//! yet answered, at most one per slot, so a poison can wait for it before touching the device.
//!
//! Work is recorded when [`Lane::poll_effect`] hands the effect out, not when it is emitted:
//! effects not yet taken are dropped at a poison, so they never run.

use crate::effect::Effect;
use crate::error::InvariantViolation;
use crate::event::Event;
use crate::ids::{Lease, RunId};
use crate::profile::MAX_SLOTS;
use crate::state::{LaneInput, LaneState, RecoveryStep};

use super::Lane;

/// What the runner was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkKind {
    Prepare,
    Finalise,
}

/// One piece of runner work handed out and not answered yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RunnerWork {
    pub(super) run: RunId,
    pub(super) lease: Lease,
    pub(super) kind: WorkKind,
}

impl RunnerWork {
    /// The work an effect hands to the runner, if any.
    #[inline]
    pub(super) const fn of_effect(effect: &Effect) -> Option<Self> {
        match *effect {
            Effect::PrepareRun { run, lease, .. } => {
                Some(Self { run, lease, kind: WorkKind::Prepare })
            }
            Effect::FinaliseRun { run, lease, .. } => {
                Some(Self { run, lease, kind: WorkKind::Finalise })
            }
            _ => None,
        }
    }

    /// The work an event answers, if it answers runner work.
    const fn of_event(event: &Event) -> Option<Self> {
        match *event {
            Event::Prepared { run, lease }
            | Event::PrepareIncompatible { run, lease }
            | Event::PrepareFailed { run, lease, .. } => {
                Some(Self { run, lease, kind: WorkKind::Prepare })
            }
            Event::Finalised { run, lease } | Event::FinaliseFailed { run, lease, .. } => {
                Some(Self { run, lease, kind: WorkKind::Finalise })
            }
            _ => None,
        }
    }
}

/// Runner work out, indexed by slot (inline: no heap per run).
pub(super) type WorkTable = [Option<RunnerWork>; MAX_SLOTS as usize];

/// Records runner work handed out ([`RunnerWork::of_effect`] of the effect taken). A slot
/// that already has work out is a lane bug (two pieces of runner work on one slot overlap,
/// L-18), recorded in `bug` like [`Lane::record_bug`] does. Takes the two fields, not the
/// lane, so [`Lane::poll_effect`] can call it while the effect is still in its queue.
#[inline]
pub(super) fn hand_out(
    table: &mut WorkTable,
    bug: &mut Option<InvariantViolation>,
    work: RunnerWork,
) {
    match table.get_mut(usize::from(work.lease.slot.0)) {
        Some(entry @ None) => *entry = Some(work),
        // Work out on this slot already (or a slot beyond the table): keep the first.
        Some(Some(_)) | None => {
            bug.get_or_insert(InvariantViolation::RunnerWorkOverlap { run: work.run });
        }
    }
}

impl Lane {
    /// Takes the record of the runner work `event` answers, if that work is out: the slot
    /// and the record, so a rejected event can put it back.
    pub(super) fn take_answered(&mut self, event: &Event) -> Option<(usize, RunnerWork)> {
        let answer = RunnerWork::of_event(event)?;
        let slot = usize::from(answer.lease.slot.0);
        let entry = self.runner_work.get_mut(slot)?;
        if *entry == Some(answer) { entry.take().map(|work| (slot, work)) } else { None }
    }

    /// Whether any runner work is out.
    pub(super) fn runner_work_out(&self) -> bool {
        self.runner_work.iter().any(Option::is_some)
    }

    /// How many pieces of runner work are out.
    #[must_use]
    pub fn runner_work_count(&self) -> usize {
        self.runner_work.iter().flatten().count()
    }

    /// Leaves `Quiesce` once no runner work is out: the drain may start (L-18).
    pub(super) fn quiesce_if_done(&mut self) {
        if self.runner_work_out() {
            return;
        }
        if let LaneState::Recovering { step: RecoveryStep::Quiesce, .. } = self.state {
            // Its action emits the drain.
            let _ = self.step_state(LaneInput::Quiesced);
        }
    }
}
