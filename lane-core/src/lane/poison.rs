//! Poison and recovery (L-10, SPEC §5.3): a poison takes every unfinished item down with
//! the device; recovery drains, force-resets and probes until the device is proven usable
//! or the attempts run out.

use crate::effect::{Effect, RecoveryHook};
use crate::error::EventError;
use crate::notice::FaultNotice;
use crate::outcome::{Cause, PublicationResult, Verdict};
use crate::publication::PublicationInput;
use crate::run::RunInput;
use crate::state::{LaneAction, LaneInput, LaneState, RecoveryStep};
use status_latch::{Failure, Stage};

use super::items::Item;
use super::{Lane, PoisonRecord};
use crate::ids::RunId;

impl Lane {
    /// Poison (L-10): the origin run gets its own cause, every other unfinished item names it
    /// as origin, handles are abandoned without destroys, and recovery starts.
    ///
    /// The origin's failure already stepped it to `Done`; every other unfinished run is
    /// abandoned through the phase machine.
    pub(super) fn poison_from(&mut self, origin_idx: usize, cause: Cause) {
        let origin = self.run(origin_idx).id;
        self.poison = Some(PoisonRecord { origin, cause });
        self.notice_recovery = false;
        self.take_down(Some(origin), cause);
        self.start_recovery(LaneInput::Poison);
    }

    /// Ends every unfinished item before a reset: `origin` (if any) fails with `cause`, every
    /// other run and publication is poisoned naming it, or, with no origin (a fault notice,
    /// L-19), fails with `cause` itself. Handles are abandoned without destroys.
    pub(super) fn take_down(&mut self, origin: Option<RunId>, cause: Cause) {
        // Effects not yet taken are for work the reset abandons.
        self.effects.clear();
        for idx in 0..self.items.len() {
            match &self.items[idx] {
                // The origin's failure stepped it to `Done` with its cause already.
                Item::Run(r) if !r.phase.is_done() => {
                    let verdict = match origin {
                        Some(origin) if origin != r.id => Verdict::Poisoned { cause, origin },
                        Some(_) | None => Verdict::Failed { cause },
                    };
                    self.decide(idx, RunInput::Abandon(verdict));
                }
                // Done already: refused, nothing changes.
                Item::Publication(_) => {
                    let result = match origin {
                        Some(origin) => PublicationResult::Poisoned { cause, origin },
                        None => PublicationResult::Failed { cause },
                    };
                    let _ = self.step_publication(idx, PublicationInput::Abandon(result));
                }
                Item::Run(_) => {}
            }
        }
        self.slots.clear();
        self.pair.abandon();
    }

    /// What took the device down: the poison's origin run and cause, or, for a fault notice
    /// (L-19), no origin and the notice as the cause. `None` before any poison or notice.
    pub(super) fn downed(&self) -> Option<(Option<RunId>, Cause)> {
        if self.notice_recovery {
            let notice = self.notice?;
            return Some((None, notice_cause(notice)));
        }
        self.poison.map(|poison| (Some(poison.origin), poison.cause))
    }

    /// Enters recovery through `input` (a poison, or the end of a suspect state): its action
    /// starts with `Quiesce`, since runner work still out must answer before the drain
    /// (L-18); with none out it is left at once.
    pub(super) fn start_recovery(&mut self, input: LaneInput) {
        let _ = self.step_state(input);
    }

    /// One recovery event: checks it answers the step in flight, then steps the lane, whose
    /// action emits the next step.
    pub(super) fn recovery(
        &mut self,
        expected: RecoveryStep,
        input: LaneInput,
        attempt: u8,
        event: &'static str,
    ) -> Result<(), EventError> {
        let unexpected = EventError::UnexpectedRecovery { event, attempt, state: self.state };
        match self.state {
            LaneState::Recovering { step, attempt: live, .. }
                if step == expected && live == attempt => {}
            _ => return Err(unexpected),
        }
        // A last failed attempt ends in `Lost` or `Closed { device_lost: true }`.
        self.step_state(input).map(|_| ()).map_err(|_| unexpected)
    }

    /// Performs what a lane transition asks for ([`LaneAction`]), in its new state: the one
    /// place the lane's own effects are emitted.
    pub(super) fn perform_lane(&mut self, action: LaneAction) {
        let attempt = match self.state {
            LaneState::Recovering { attempt, .. } => attempt,
            _ => 0,
        };
        match action {
            LaneAction::None => {}
            LaneAction::CancelUnlaunched => self.cancel_unlaunched(),
            LaneAction::ReleaseReservations => self.slots.clear_reservations(),
            // Nothing to emit while runner work is out: its answers end it.
            LaneAction::Quiesce => self.quiesce_if_done(),
            LaneAction::BeginReset => {
                if let Some((origin, cause)) = self.downed() {
                    self.emit(Effect::Hook(RecoveryHook::BeforeReset { origin, cause }));
                }
                self.emit(Effect::DrainDevice {
                    attempt,
                    timeout_ns: self.profile.drain_timeout_ns(),
                });
            }
            LaneAction::AfterReset { recovered } => {
                self.emit(Effect::Hook(RecoveryHook::AfterReset { recovered }));
            }
            LaneAction::HandOver => {
                if let Some((origin, cause)) = self.downed() {
                    self.emit(Effect::Hook(RecoveryHook::OnPoison { origin, cause }));
                }
            }
            LaneAction::AdoptReset => self.emit(Effect::AdoptReset),
            LaneAction::Drain => self
                .emit(Effect::DrainDevice { attempt, timeout_ns: self.profile.drain_timeout_ns() }),
            LaneAction::Reset => self.emit(Effect::ForceReset { attempt }),
            LaneAction::Probe => self.emit(Effect::Probe { attempt }),
            LaneAction::TearDown => self.release_streams(),
            LaneAction::DestroyRound => self.destroy_round(),
        }
    }
}

/// The cause a device fault notice gives what it takes down (stage `FaultNotice`, L-19).
pub(super) fn notice_cause(notice: FaultNotice) -> Cause {
    Cause::of(Failure::Acl { stage: Stage::FaultNotice, code: notice.code })
}
