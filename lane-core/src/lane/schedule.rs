//! Scheduling: what the lane starts next after every input (upload, launch, preparation,
//! await), and close.

use stream_pair::{Owner, Readiness, Role, StreamState};

use crate::effect::Effect;
use crate::error::InvariantViolation;
use crate::ids::Timestamp;
use crate::outcome::{Outcome, PublicationOutcome, PublicationResult, RunOutcome, Verdict};
use crate::profile::FinaliseOrder;
use crate::publication::{PublicationInput, PublicationPhase};
use crate::run::{RunInput, RunPhase};
use crate::state::{LaneInput, LaneState};

use super::Lane;
use super::items::Item;

impl Lane {
    /// Delivers finished outcomes in order, then starts whatever the current state allows.
    ///
    /// One pass is enough, in this order: an upload, a launch, preparations, an await.
    /// Preparing, uploading and launching are answered by events, so none of them enables
    /// another start before the next input, except a launch, which can let the next queued
    /// run prepare; that is why the launch comes before the preparation. Preparations start
    /// until the prepare window is full or the next queued run must wait (each start takes
    /// one window place, so this ends). No start finishes an item, so nothing new is left to
    /// deliver afterwards.
    pub(super) fn progress(&mut self, now: Timestamp) {
        self.deliver();
        match self.state {
            LaneState::Open => {
                self.start_upload();
                self.start_launch();
                while self.start_prepare() {}
                self.start_await(now);
            }
            LaneState::Closing => {
                self.start_await(now);
                self.finish_closing();
            }
            LaneState::Suspect { .. } => {
                self.start_await(now);
                // Recovery ends what had not launched: deliver those outcomes too.
                self.recover_if_launched_done();
                self.deliver();
            }
            LaneState::ReleasingStreams { .. } => {
                self.release_streams();
            }
            LaneState::Recovering { .. }
            | LaneState::Unusable
            | LaneState::Lost
            | LaneState::Closed { .. } => {}
        }
        debug_assert!(
            !self.items.first().is_some_and(|item| self.deliverable(item)),
            "a start finished an item"
        );
    }

    /// Moves finished items at the front into the outcome queue (L-2, L-14).
    pub(super) fn deliver(&mut self) {
        while self.items.first().is_some_and(|item| self.deliverable(item)) {
            let item = self.items.remove(0);
            let outcome = match item {
                Item::Run(r) => Outcome::Run(RunOutcome {
                    run: r.id,
                    tag: r.tag,
                    // A run is delivered done, with its verdict.
                    verdict: r.phase.verdict().unwrap_or(Verdict::Cancelled),
                    timing: r.timing,
                    key: r.key,
                    declines: r.declines,
                }),
                Item::Publication(p) => Outcome::Publication(PublicationOutcome {
                    publication: p.id,
                    // A publication is delivered done, with its result.
                    result: match p.phase {
                        PublicationPhase::Done { result } => result,
                        PublicationPhase::Waiting | PublicationPhase::Uploading => {
                            PublicationResult::Cancelled
                        }
                    },
                }),
            };
            self.last_delivered = Some(item.order());
            self.delivered += 1;
            self.outcomes.push(outcome);
        }
    }

    /// Whether `item`'s outcome may be delivered: it is done and no runner callback for it
    /// is still out (L-26: the outcome tells the runtime it may free the run's state, so a
    /// run a poison abandoned while its prepare or finalise ran on a host worker is held
    /// until that call answered).
    pub(super) fn deliverable(&self, item: &Item) -> bool {
        item.is_done()
            && !matches!(item, Item::Run(r) if self.runner_work.iter().flatten().any(|w| w.run == r.id))
    }

    /// A publication at the front of the FIFO uploads: every earlier item has its outcome.
    fn start_upload(&mut self) -> bool {
        if !matches!(self.items.first(), Some(Item::Publication(_))) {
            return false;
        }
        // Its action emits `UploadCode`; one uploading already refuses.
        self.step_publication(0, PublicationInput::Upload).is_ok()
    }

    /// What stands before the item at `idx`: whether a publication is unfinished, whether any
    /// run is unfinished, whether all unfinished runs have launched (their launch answered:
    /// one still `Launching` may yet be declined, and launches stay in order, L-2), and
    /// whether one of them collects diagnostics.
    pub(super) fn ahead_of(&self, idx: usize) -> Ahead {
        let mut ahead = Ahead::default();
        for item in &self.items[..idx] {
            match item {
                Item::Publication(_) if !item.is_done() => ahead.publication = true,
                Item::Run(r) if !r.phase.is_done() => {
                    ahead.live_run = true;
                    ahead.all_launched &= r.phase.past_launch() && r.phase != RunPhase::Launching;
                    ahead.diagnostics |= r.diagnostics;
                }
                _ => {}
            }
        }
        ahead
    }

    /// Whether the run at `idx`, its turn come, is held back from launching by the lane's
    /// own rules: a held run waits for its activation; a run with diagnostics, or one behind
    /// it, runs alone (L-3); a run whose launch was declined launches only onto an empty pair;
    /// with `FinaliseOrder::BeforeNextLaunch` a run launches only once every run ahead of it
    /// has its verdict; the pair holds at most the launch depth (L-11); and nothing queues
    /// behind an unfenced run (its boundary cannot order a successor, L-5). Stream readiness
    /// is the pair's to say.
    pub(super) fn launch_held_back(&self, idx: usize, ahead: Ahead) -> bool {
        let r = self.run(idx);
        if r.held {
            return true;
        }
        if (r.diagnostics || ahead.diagnostics) && ahead.live_run {
            return true;
        }
        if self.profile.finalise_order() == FinaliseOrder::BeforeNextLaunch && ahead.live_run {
            return true;
        }
        if self.live_runs().any(|r| r.phase.unfenced().is_some()) {
            return true;
        }
        let on_pair = self.live_runs().filter(|r| r.phase.on_pair()).count();
        if r.declines > 0 && on_pair > 0 {
            return true;
        }
        on_pair >= usize::from(self.profile.launch_depth().get())
    }

    /// The oldest prepared run, with what stands before it, if its turn has come: every
    /// earlier run has launched (or never will) and no publication before it is unfinished
    /// (L-2, L-12).
    pub(super) fn next_to_launch(&self) -> Option<(usize, Ahead)> {
        let idx =
            self.items.iter().position(|i| matches!(i, Item::Run(r) if r.phase.is_prepared()))?;
        let ahead = self.ahead_of(idx);
        (!ahead.publication && ahead.all_launched).then_some((idx, ahead))
    }

    /// Runs in the prepare window ahead of the item at `idx` (`items.len()`: all of them):
    /// preparing, or prepared and not launched yet. A run whose launch was declined has left
    /// the window (it waits for the pair to empty, not for a prepare).
    pub(super) fn in_prepare_window(&self, idx: usize) -> usize {
        self.items[..idx].iter().filter_map(Item::as_run).filter(|r| r.in_prepare_window()).count()
    }

    /// Prepares the oldest queued run when the profile and its predecessors allow (L-3, §5.4,
    /// L-18): prepares start in the lane's order, behind no unfinished publication, with
    /// fewer than `prepare_window` runs preparing or prepared ahead of it. With a window of
    /// one that is exactly "every earlier run launched" (the oldest queued run has no queued
    /// predecessor, and none of them is preparing or prepared). Runs behind it do not count:
    /// a run an earlier key placed ahead of staged runs (L-2) prepares in their place.
    ///
    /// Returns whether the next queued run may be tried: a start that fills the window ends
    /// the round (the next try would find it full).
    fn start_prepare(&mut self) -> bool {
        let Some(idx) = self.first_queued() else {
            return false;
        };
        let ahead = self.ahead_of(idx);
        if ahead.publication {
            return false;
        }
        let window = usize::from(self.profile.prepare_window());
        let in_window = self.in_prepare_window(idx);
        if in_window >= window {
            return false;
        }
        let r = self.run(idx);
        if ahead.live_run
            && (!self.profile.concurrent_prepare()
                || r.diagnostics
                || matches!(r.phase, RunPhase::Queued { incompatible: true })
                || ahead.diagnostics)
        {
            return false;
        }
        if !self.decide(idx, RunInput::Prepare) {
            return false;
        }
        in_window + 1 < window
    }

    /// Launches the oldest prepared run when order, depth and the pair allow (L-2, L-3, L-11).
    fn start_launch(&mut self) -> bool {
        let Some((idx, ahead)) = self.next_to_launch() else {
            return false;
        };
        if self.launch_held_back(idx, ahead) {
            return false;
        }
        let run = self.run(idx).id;
        match self.pair.ready() {
            Readiness::Ready { .. } => {
                if let Err(error) = self.pair.submit(Owner(run.0)) {
                    // The depth was checked above: a refusal after `Ready` is a lane bug.
                    self.record_bug(InvariantViolation::SubmitRefused { run, error });
                    return false;
                }
                // `Prepared` accepts `Launch` (the run was found in that phase above); the
                // action emits `LaunchRun` on the pair's streams.
                self.decide(idx, RunInput::Launch)
            }
            Readiness::Pending(effects) => {
                // The run launches once the pair's results arrive, and fails if they fail.
                self.decide(idx, RunInput::ReadyPair);
                let changed = !effects.is_empty();
                for effect in effects {
                    self.emit(match effect {
                        stream_pair::Effect::Create { role } => Effect::CreateStream { role },
                        stream_pair::Effect::Destroy { role, handle, mode } => {
                            Effect::DestroyStream { role, handle, mode }
                        }
                    });
                }
                changed
            }
            // Draining: the retirements of runs on the pair come first. Closing: the
            // teardown's results come first. Either way a later input retries.
            Readiness::Draining | Readiness::Closing => false,
        }
    }

    /// Awaits the oldest launched run once nothing older is awaited: its deadline starts now,
    /// when its predecessor completed or when it launched (SPEC §5.4).
    fn start_await(&mut self, now: Timestamp) -> bool {
        if self.live_runs().any(|r| r.phase.is_awaiting()) {
            return false;
        }
        let Some(idx) =
            self.items.iter().position(|i| matches!(i, Item::Run(r) if r.phase.on_pair()))
        else {
            return false;
        };
        if !matches!(self.run(idx).phase, RunPhase::Launched { .. }) {
            return false;
        }
        let deadline = now.after_ns(self.profile.completion_timeout_ns());
        self.decide(idx, RunInput::Await(deadline))
    }

    /// Closing and every item has its outcome: the teardown starts (`TearDown`).
    fn finish_closing(&mut self) {
        if self.items.is_empty() {
            let _ = self.step_state(LaneInput::Idle);
        }
    }

    /// The teardown (L-15, S-7): destroys every live stream of the pair, then each one whose
    /// destroy failed once more, up to the state's `rounds` (a close's teardown:
    /// [`TEARDOWN_ATTEMPTS`](super::TEARDOWN_ATTEMPTS)), each round a `DestroyRound` step,
    /// and settles `Closed`: `StreamsReleased` when nothing is left, `StreamsLeft` with the
    /// survivors and their codes. Waits while stream results are outstanding (a create, or a
    /// round's destroys); their results call it again.
    pub(super) fn release_streams(&mut self) {
        let LaneState::ReleasingStreams { round, rounds, .. } = self.state else {
            return;
        };
        if !self.pair.teardown_complete() {
            return;
        }
        let live = Role::ALL.into_iter().any(|role| self.stream_live(role));
        if round == 0 || (live && round < rounds) {
            // A create or a replacement destroy is still outstanding: its result calls this
            // again.
            if self.pair.destroy_all_refusal().is_some() {
                return;
            }
            // `round < rounds` (a teardown has at least one round): accepted, and its action
            // emits the round's destroys.
            let stepped = self.step_state(LaneInput::DestroyRound).is_ok();
            debug_assert!(stepped, "lane_step refused a destroy round");
            if !self.pair.teardown_complete() {
                return;
            }
        }
        // Settled: what is still live is left, with its last destroy's code.
        let LaneState::ReleasingStreams { mut left, .. } = self.state else {
            return;
        };
        for role in Role::ALL {
            if !self.stream_live(role) {
                left.set(role, None);
            }
        }
        let input =
            if left.is_empty() { LaneInput::StreamsReleased } else { LaneInput::StreamsLeft(left) };
        let _ = self.step_state(input);
    }

    /// Emits a teardown round's destroys: one for each live stream of the pair.
    pub(super) fn destroy_round(&mut self) {
        match self.pair.destroy_all() {
            Ok(effects) => {
                for effect in effects {
                    if let stream_pair::Effect::Destroy { role, handle, mode } = effect {
                        self.emit(Effect::DestroyStream { role, handle, mode });
                    }
                }
            }
            // `release_streams` asked the pair first.
            Err(rejection) => {
                self.record_bug(InvariantViolation::DestroyRoundRefused { rejection })
            }
        }
    }

    /// Whether the pair's `role` stream is live (made and not destroyed).
    fn stream_live(&self, role: Role) -> bool {
        matches!(self.pair.stream(role).state, StreamState::Live(_))
    }

    /// Close: cancel everything that has not launched (L-14, L-15). A queued run is done
    /// `Cancelled`, a prepared one finalised without copy-back, and one whose prepare is out
    /// cancelled when it answers (`run::step`).
    pub(super) fn cancel_unlaunched(&mut self) {
        for idx in 0..self.items.len() {
            match &self.items[idx] {
                // An upload in flight finishes (refused); a waiting publication is cancelled.
                Item::Publication(_) => {
                    let _ = self.step_publication(idx, PublicationInput::Cancel);
                }
                Item::Run(r)
                    if matches!(
                        r.phase,
                        RunPhase::Queued { .. }
                            | RunPhase::Preparing { .. }
                            | RunPhase::Prepared { .. }
                    ) =>
                {
                    self.decide(idx, RunInput::Cancel);
                }
                Item::Run(_) => {}
            }
        }
        self.slots.clear_reservations();
    }
}

/// What stands before an item in the FIFO.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ahead {
    pub(super) publication: bool,
    pub(super) live_run: bool,
    pub(super) all_launched: bool,
    pub(super) diagnostics: bool,
}

impl Default for Ahead {
    fn default() -> Self {
        Self { publication: false, live_run: false, all_launched: true, diagnostics: false }
    }
}
