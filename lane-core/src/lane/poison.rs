//! Poison and recovery (L-10, SPEC §5.3): a poison takes every unfinished item down with
//! the device; recovery drains, force-resets and probes until the device is proven usable
//! or the attempts run out.

use crate::effect::Effect;
use crate::error::EventError;
use crate::outcome::{Cause, PublicationResult, Verdict};
use crate::publication::PublicationInput;
use crate::run::RunInput;
use crate::state::{LaneInput, LaneState, RecoveryStep};

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
            match &mut self.items[idx] {
                Item::Run(r) if Some(r.id) == origin => {
                    if !r.phase.is_done() {
                        self.decide(idx, RunInput::Abandon);
                    }
                    self.settle(idx, Verdict::Failed { cause });
                }
                Item::Run(r) if !r.phase.is_done() => {
                    if self.decide(idx, RunInput::Abandon).is_some() {
                        let verdict = match origin {
                            Some(origin) => Verdict::Poisoned { cause, origin },
                            None => Verdict::Failed { cause },
                        };
                        self.settle(idx, verdict);
                    }
                }
                Item::Publication(p) => {
                    if p.step(PublicationInput::Abandon).is_ok() {
                        p.result = Some(match origin {
                            Some(origin) => PublicationResult::Poisoned { cause, origin },
                            None => PublicationResult::Failed { cause },
                        });
                    }
                }
                Item::Run(_) => {}
            }
        }
        self.slots.clear();
        self.pair.abandon();
        self.launch_waiter = None;
        // Abandoned handles died with the reset: nothing is left to destroy or report.
        self.streams_left = super::StreamsLeft::NONE;
    }

    /// Enters recovery through `input` (a poison, or the end of a suspect state): it starts
    /// with `Quiesce`, since runner work still out must answer before the drain (L-18); with
    /// none out it is left at once.
    pub(super) fn start_recovery(&mut self, input: LaneInput) {
        if self.step_state(input).is_ok() {
            self.quiesce_if_done();
        }
    }

    /// One recovery event: checks it answers the step in flight, then emits the next step.
    pub(super) fn recovery(
        &mut self,
        expected: RecoveryStep,
        input: LaneInput,
        attempt: u8,
        event: &'static str,
    ) -> Result<(), EventError> {
        let unexpected = EventError::UnexpectedRecovery {
            event,
            attempt,
            state: self.state,
        };
        match self.state {
            LaneState::Recovering {
                step,
                attempt: live,
                ..
            } if step == expected && live == attempt => {}
            _ => return Err(unexpected),
        }
        // A last failed attempt ends in `Lost` or `Closed { device_lost: true }`.
        let next = self.step_state(input).map_err(|_| unexpected)?;
        self.emit_recovery_step(next);
        Ok(())
    }

    /// Emits the recovery step a state asks for, if any.
    pub(super) fn emit_recovery_step(&mut self, state: LaneState) {
        match state {
            // Nothing to emit: the answers of runner work out end it.
            LaneState::Recovering {
                step: RecoveryStep::Quiesce,
                ..
            } => {}
            LaneState::Recovering {
                step: RecoveryStep::Drain,
                attempt,
                ..
            } => self.emit(Effect::DrainDevice {
                attempt,
                timeout_ns: self.profile.drain_timeout_ns(),
            }),
            LaneState::Recovering {
                step: RecoveryStep::Reset,
                attempt,
                ..
            } => self.emit(Effect::ForceReset { attempt }),
            LaneState::Recovering {
                step: RecoveryStep::Probe,
                attempt,
                ..
            } => self.emit(Effect::Probe { attempt }),
            // Confirmed: every handle was abandoned at poison time, so the next launch
            // creates a fresh pair (L-10).
            LaneState::Open | LaneState::Closing | LaneState::Lost => {}
            LaneState::Suspect { .. } => {}
            LaneState::ReleasingStreams { .. } | LaneState::Closed { .. } => {}
        }
    }
}
