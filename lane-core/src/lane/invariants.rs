//! [`Lane::check_invariants`]: every lane invariant, as typed violations.

use stream_pair::Owner;

use crate::error::InvariantViolation as V;
use crate::ids::PublicationId;
use crate::profile::{FinaliseOrder, MAX_PENDING_PUBLICATIONS};
use crate::publication::PublicationPhase;
use crate::run::RunPhase;
use crate::state::{LaneState, RecoveryStep};

use super::Lane;
use super::items::Item;
use super::schedule::Ahead;
use super::work::WorkKind;

impl Lane {
    /// Checks every lane invariant (for tests, the simulator and the fuzzers; call it after
    /// every step). Allocates only to describe a violation.
    ///
    /// - Exactly one outcome per accepted run and publication, in the lane's order
    ///   (submission order, but for a keyed run placed ahead of keyed runs with a greater
    ///   key, L-2).
    /// - No slot is both free and owned; every unfinished run holds its slot's live lease.
    /// - The stream pair's own invariants hold, and its FIFO is exactly the runs on the
    ///   pair, in order.
    /// - No run launched before its predecessor; no launch behind an unfinished publication;
    ///   no held run launched; a run whose launch was declined is the oldest on the pair;
    ///   with `FinaliseOrder::BeforeNextLaunch` no run is on the pair behind an unfinished
    ///   one.
    /// - Runs on the pair never exceed the launch depth; a diagnostics run is alone.
    /// - No run launched after a publication runs on an AICore stream created before it.
    /// - A suspect lane (L-19) has its notice on record.
    /// - Recovering, lost and closed lanes have no unfinished run; a closed lane reports
    ///   exactly its live streams as left.
    /// - L-18 Overlap: runner work out is at most one per slot, for the run holding that
    ///   slot in the phase that asked for it (or, abandoned, only while recovery quiesces);
    ///   fewer than `prepare_window` runs submitted before a run preparing or prepared are
    ///   so ahead of it (without keys: at most `prepare_window` in all); no upload and no drain,
    ///   reset or probe runs while runner work is out; `Quiesce` waits only on work out.
    /// - No step so far met a lane bug (a pair call or phase input the lane itself decided
    ///   that was refused).
    // A violation is a lane bug, found once: its size (a run's phase and input) costs
    // nothing on the path that finds none.
    #[allow(clippy::result_large_err)]
    pub fn check_invariants(&self) -> Result<(), V> {
        if let Some(bug) = self.bug {
            return Err(bug);
        }
        self.pair.check_invariants().map_err(V::Pair)?;
        self.slots.check()?;

        // One outcome per accepted item, in order.
        let queued_outcomes = u64::try_from(self.outcomes.len()).unwrap_or(u64::MAX);
        let pending = u64::try_from(self.items.len()).unwrap_or(u64::MAX);
        if self.delivered + pending != self.accepted {
            return Err(V::OutcomeCount {
                accepted: self.accepted,
                delivered: self.delivered,
                pending,
            });
        }
        if queued_outcomes > self.delivered {
            return Err(V::OutcomesOverDelivered);
        }
        // The lane's order (L-2): submission order, but for a keyed run placed ahead of keyed
        // runs with a greater key. Outcomes come in it, and every pending item stands in it
        // behind the last delivered one.
        let outcomes = self.outcomes.as_slice();
        if outcomes.windows(2).any(|pair| !pair[0].order().may_precede(pair[1].order())) {
            return Err(V::OutcomesOutOfOrder);
        }
        for (at, item) in self.items.iter().enumerate() {
            let order = item.order();
            let behind_delivered = self.last_delivered.is_none_or(|last| last.may_precede(order));
            let behind_earlier =
                self.items[..at].iter().all(|earlier| earlier.order().may_precede(order));
            if !(behind_delivered && behind_earlier) {
                return Err(V::ItemsOutOfOrder);
            }
        }
        if self.items.first().is_some_and(|item| self.deliverable(item)) {
            return Err(V::UndeliveredFront);
        }

        // Slots and leases: every leased slot's holder is live with that lease, and every
        // live run holds its slot.
        for (slot, generation, run) in self.slots.leased() {
            let held = self
                .live_runs()
                .any(|r| r.id == run && r.lease.slot == slot && r.lease.generation == generation);
            if !held {
                return Err(V::SlotHolderMismatch { slot, run });
            }
        }
        if let Some(r) = self.live_runs().find(|r| !self.slots.is_leased_to(r.lease, r.id)) {
            return Err(V::RunWithoutSlot { run: r.id });
        }
        if self.slots.room(self.held_runs()).is_none() {
            return Err(V::OverCapacity);
        }
        if self.live_publications() > MAX_PENDING_PUBLICATIONS {
            return Err(V::TooManyPublications);
        }

        // The pair's FIFO is exactly the runs on the pair, in order.
        let mut on_pair = self.live_runs().filter(|r| r.phase.on_pair()).map(|r| Owner(r.id.0));
        let submissions = self.pair.submissions();
        for owner in submissions {
            if on_pair.next() != Some(*owner) {
                return Err(V::PairSubmissionsDiffer);
            }
        }
        if on_pair.next().is_some() {
            return Err(V::RunOnPairWithoutSubmission);
        }
        if submissions.len() > usize::from(self.profile.launch_depth().get()) {
            return Err(V::PairOverDepth);
        }

        // Launch order, publication barrier, diagnostics alone, one await.
        let mut ahead = Ahead::default();
        let mut awaiting = 0;
        let mut first_on_pair = true;
        for item in &self.items {
            match item {
                Item::Publication(_) if !item.is_done() => ahead.publication = true,
                Item::Run(r) if !r.phase.is_done() => {
                    // Runs that reached the pair: with a prepare window above one, a run
                    // may be finalised (a failed prepare, a cancel) before an earlier run
                    // launched, which launches nothing.
                    if r.phase.past_launch() && r.launched_on.is_some() {
                        if !ahead.all_launched {
                            return Err(V::LaunchedBeforePredecessor { run: r.id });
                        }
                        if r.held {
                            return Err(V::LaunchedWhileHeld { run: r.id });
                        }
                        if r.phase.on_pair()
                            && ahead.live_run
                            && self.profile.finalise_order() == FinaliseOrder::BeforeNextLaunch
                        {
                            return Err(V::LaunchedBeforeFinalise { run: r.id });
                        }
                        if ahead.publication {
                            return Err(V::LaunchedBehindPublication { run: r.id });
                        }
                        if (r.diagnostics || ahead.diagnostics) && ahead.live_run {
                            return Err(V::LaunchedWithDiagnostics { run: r.id });
                        }
                    }
                    if r.phase.is_awaiting() {
                        awaiting += 1;
                        if !first_on_pair {
                            return Err(V::AwaitedNotOldest { run: r.id });
                        }
                    }
                    if r.phase.on_pair() {
                        // A declined launch goes again only onto an empty pair, and stays the
                        // pair's oldest until it retires.
                        if r.declines > 0 && !first_on_pair {
                            return Err(V::DeclinedLaunchQueued { run: r.id });
                        }
                        first_on_pair = false;
                    }
                    if let Some(mark) = self.last_publication {
                        if r.launched_on.is_some_and(|created| created <= mark.aicore_creations)
                            && r.id.0 > mark.seq
                        {
                            return Err(V::LaunchedOnStaleAicore {
                                run: r.id,
                                publication: PublicationId(mark.seq),
                            });
                        }
                    }
                    ahead.live_run = true;
                    ahead.all_launched &= r.phase.past_launch();
                    ahead.diagnostics |= r.diagnostics;
                }
                _ => {}
            }
        }
        if awaiting > 1 {
            return Err(V::SeveralAwaited);
        }

        // Effects refer to live runs only.
        for effect in self.effects.as_slice() {
            if let Some(run) = effect.run() {
                if !self.live_runs().any(|r| r.id == run) {
                    return Err(V::EffectForDoneRun { effect: effect.name(), run });
                }
            }
        }

        self.check_overlap()?;

        match self.state {
            LaneState::Recovering { .. } | LaneState::Unusable | LaneState::Lost => {
                if self.live_runs().next().is_some() {
                    return Err(V::LiveRunWhileRecovering);
                }
                if self.poison.is_none() && !(self.notice_recovery && self.notice.is_some()) {
                    return Err(V::RecoveringWithoutPoison);
                }
            }
            LaneState::Closed { .. } | LaneState::ReleasingStreams { .. } => {
                if !self.items.is_empty() {
                    return Err(V::ClosedWithItems);
                }
                if let LaneState::Closed { left, .. } = self.state {
                    // Nothing leaks silently: every live stream of a closed lane is reported.
                    for role in stream_pair::Role::ALL {
                        let live = matches!(
                            self.pair.stream(role).state,
                            stream_pair::StreamState::Live(_)
                        );
                        if live != left.code(role).is_some() {
                            return Err(V::StreamsLeftMisreported { role, live });
                        }
                    }
                }
            }
            LaneState::Suspect { .. } => {
                if self.notice.is_none() || !self.notice_recovery {
                    return Err(V::RecoveringWithoutPoison);
                }
                // What was asked before the notice stays asked: a launch already emitted
                // is a launched run, which gets its own verdict.
            }
            LaneState::Open | LaneState::Closing => {}
        }
        Ok(())
    }

    /// The L-18 Overlap rule: what may run while runner work is out.
    // A violation is a lane bug, found once: its size (a run's phase and input) costs
    // nothing on the path that finds none.
    #[allow(clippy::result_large_err)]
    fn check_overlap(&self) -> Result<(), V> {
        let quiescing =
            matches!(self.state, LaneState::Recovering { step: RecoveryStep::Quiesce, .. });
        // Each run in the window started with fewer than `window` runs in it ahead of it;
        // since then only runs submitted later (placed ahead by an earlier key, L-2) can have
        // joined it there.
        let window = self.profile.prepare_window();
        for (at, item) in self.items.iter().enumerate() {
            let Item::Run(r) = item else { continue };
            if !r.in_prepare_window() {
                continue;
            }
            let runs = self.items[..at]
                .iter()
                .filter_map(Item::as_run)
                .filter(|earlier| earlier.in_prepare_window() && earlier.id < r.id)
                .count();
            if runs >= usize::from(window) {
                return Err(V::PrepareWindowExceeded { run: r.id, runs, window });
            }
        }
        let out = self.runner_work_out();
        let uploading = self.items.iter().any(
            |item| matches!(item, Item::Publication(p) if p.phase == PublicationPhase::Uploading),
        );
        if out && uploading {
            return Err(V::UploadWithRunnerWorkOut);
        }
        match self.state {
            LaneState::Recovering { .. } | LaneState::Unusable if out && !quiescing => {
                return Err(V::RecoveryWithRunnerWorkOut);
            }
            _ if quiescing && !out => return Err(V::QuiescingWithNothingOut),
            _ => {}
        }
        for (slot, work) in self.runner_work.iter().enumerate() {
            let Some(work) = work else { continue };
            let in_place = match self.live_runs().find(|r| r.id == work.run) {
                Some(r) => {
                    matches!(
                        (work.kind, r.phase),
                        (WorkKind::Prepare, RunPhase::Preparing { .. })
                            | (WorkKind::Finalise, RunPhase::Finalising { .. })
                    ) && r.lease == work.lease
                        && usize::from(r.lease.slot.0) == slot
                        && self.slots.is_leased_to(r.lease, r.id)
                }
                // Abandoned by a poison: its answer is awaited only while quiescing.
                None => quiescing,
            };
            if !in_place {
                return Err(V::RunnerWorkOutOfPhase { run: work.run });
            }
        }
        Ok(())
    }
}
