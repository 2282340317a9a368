//! Applying backend events, and every run-phase change: [`Lane::advance`] (an event's
//! input) and [`Lane::decide`] (the lane's own input) are the only callers of
//! [`run::step`](crate::run::step).

use status_latch::{
    Boundary, Class, Evidence, Failure, HeaderRead, Judgement, LaunchProgress, RecordRead, Stage,
    judge,
};
use stream_pair::{Owner, Retired, Retirement, Role};

use crate::effect::Effect;
use crate::error::{EventError, InvariantViolation};
use crate::event::{Event, FinaliseFailure, LaunchStep};
use crate::ids::{PublicationId, RunId};
use crate::outcome::{Cause, PublicationResult, Verdict};
use crate::publication::PublicationInput;
use crate::run::{RunInput, RunPhase, step};
use crate::state::{LaneInput, LaneState, RecoveryStep};

use super::items::{Item, RunRecord};
use super::{Lane, PublicationMark};

/// What applying an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Applied {
    /// The event applied.
    Applied,
    /// The event names a run that is not live (never accepted, or done): nothing changed.
    NotLive(RunId),
}

impl Lane {
    /// Applies one event. A run's event looks its run up once, before anything changes: a
    /// run that is not live is [`Applied::NotLive`] and nothing changed ([`Lane::handle`]
    /// accepts it as the answer to runner work a poison abandoned, and rejects it otherwise).
    // Inlined into its one caller, `handle`: the hot path of every event.
    #[inline(always)]
    pub(super) fn apply_event(&mut self, event: &Event) -> Result<Applied, EventError> {
        let name = event.name();
        let Some((run, lease)) = event.run_lease() else {
            self.apply_lane_event(event, name)?;
            return Ok(Applied::Applied);
        };
        let Some(idx) = self.live_run(run, lease, name)? else {
            return Ok(Applied::NotLive(run));
        };
        self.apply_run_event(idx, event, name)?;
        Ok(Applied::Applied)
    }

    /// Applies an event about the live run at `idx` (the run it names, lease checked).
    #[inline(always)]
    fn apply_run_event(
        &mut self,
        idx: usize,
        event: &Event,
        name: &'static str,
    ) -> Result<(), EventError> {
        match *event {
            Event::Prepared { .. } => {
                // Cancelled while preparing (`Preparing { cancel: true }`): finalised now.
                if self.advance(idx, RunInput::Prepared, name)?.phase == RunPhase::Finalising {
                    self.finalise(idx, Verdict::Cancelled, false);
                }
            }
            Event::PrepareIncompatible { .. } => {
                // Back in the queue as `Queued { incompatible: true }`; cancelled while
                // preparing, nothing was touched, so it is done.
                if self
                    .advance(idx, RunInput::Incompatible, name)?
                    .phase
                    .is_done()
                {
                    self.settle(idx, Verdict::Cancelled);
                }
            }
            Event::PrepareFailed { code, .. } => {
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::Prepare,
                    code,
                });
                self.fail(idx, RunInput::PrepareFailed(cause.class()), cause, name)?;
            }
            Event::Launched { .. } => {
                self.advance(idx, RunInput::Launched, name)?;
            }
            Event::LaunchFailed {
                run, step, code, ..
            } => {
                let progress = match step {
                    LaunchStep::Arm | LaunchStep::Aicore => LaunchProgress::NotStarted,
                    LaunchStep::Aicpu => LaunchProgress::Partial,
                    LaunchStep::RecordEvent => {
                        // Unfenced (L-5): the kernels may run, and nothing of the run's own
                        // can prove them done. It stays on the pair as launched, awaited
                        // through the device verdict alone (L-8), and holds back every
                        // later launch.
                        self.advance(idx, RunInput::Launched, name)?.unfenced = Some(code);
                        return Ok(());
                    }
                };
                let failure = Failure::Launch { progress, code };
                let cause = Cause::of(failure);
                let input = RunInput::LaunchFailed(cause.class());
                self.expect(idx, input, name)?;
                if cause.class() == Class::RunOnly {
                    // Nothing reached a stream: the submission leaves without staleness (S-2).
                    if let Err(error) = self.pair.withdraw(Owner(run.0)) {
                        // The run launched, so it holds a submission: a lane bug.
                        self.record_bug(InvariantViolation::WithdrawRefused { run, error });
                    }
                }
                self.fail(idx, input, cause, name)?;
            }
            Event::Completed {
                run,
                lease,
                mut evidence,
            } => {
                // An unfenced run's events proved nothing, whatever the backend says.
                if let Some(code) = self.run(idx).unfenced {
                    evidence.boundary = Boundary::Unfenced(code);
                }
                // The evidence alone may already poison (L-8): then the run never reaches
                // the pair's retirement or a status read on a faulted device.
                let cause = match judge(&evidence, HeaderRead::Unread).1 {
                    Judgement::Fail(failure) => Some(Cause::of(failure)),
                    // The waiter makes the device verdict whenever the rule asks for it; a
                    // backend that did not proves nothing.
                    Judgement::NeedsDeviceVerdict => Some(Cause::of(Failure::Acl {
                        stage: Stage::StreamSync,
                        code: status_latch::AclCode::RtFeatureNotSupport,
                    })),
                    Judgement::Ok | Judgement::NeedsHeader => None,
                };
                if let Some(cause) = cause.filter(|c| c.class() == Class::Poison) {
                    self.advance(idx, RunInput::CompletedFaulted, name)?;
                    self.poison_from(idx, cause);
                    return Ok(());
                }
                let record = self.advance(idx, RunInput::Completed, name)?;
                record.deadline = None;
                record.evidence = Some(evidence);
                match self.pair.retire(Owner(run.0), Retirement::Complete) {
                    Retired::Kept => {}
                    // Only the oldest run on the pair is awaited: anything else is a lane bug.
                    retired => {
                        self.record_bug(InvariantViolation::RetiredOutOfOrder { run, retired });
                    }
                }
                let layout = self.profile.header();
                self.emit(Effect::ReadStatus { run, lease, layout });
            }
            Event::CompletionFailed { code, .. } => {
                // The verdict rule's `boundary-failed` row: the wait's code, poison.
                let evidence = Evidence {
                    channel: self.profile.verdict(),
                    boundary: Boundary::Failed(code),
                    record: RecordRead::NotRead,
                    device: None,
                };
                let failure = match judge(&evidence, HeaderRead::Unread).1 {
                    Judgement::Fail(failure) => failure,
                    _ => Failure::Acl {
                        stage: Stage::EventWait,
                        code,
                    },
                };
                self.advance(idx, RunInput::CompletionFailed, name)?;
                self.poison_from(idx, Cause::of(failure));
            }
            Event::StatusRead { status, timing, .. } => {
                let header = match status.latched() {
                    None => HeaderRead::Clean,
                    Some(latch) => HeaderRead::Latched(latch),
                };
                // `Completed` kept its evidence; a run never completed has none, and the
                // phase check below refuses the event.
                let evidence = self.run(idx).evidence.unwrap_or(Evidence {
                    channel: self.profile.verdict(),
                    boundary: Boundary::Failed(status_latch::AclCode::RtParamInvalid),
                    record: RecordRead::NotRead,
                    device: None,
                });
                match judge(&evidence, header).1 {
                    Judgement::Ok => {
                        self.advance(idx, RunInput::JudgedOk, name)?.timing = Some(timing);
                        self.finalise(idx, Verdict::Ok, true);
                    }
                    judgement => {
                        let failure = match judgement {
                            Judgement::Fail(failure) => failure,
                            // The header was read and the device verdict made: neither can
                            // be asked for again, so the run has no positive evidence.
                            _ => Failure::NoRecord,
                        };
                        let cause = Cause::of(failure);
                        self.expect(idx, RunInput::JudgedFailed(cause.class()), name)?;
                        self.run_mut(idx).timing = Some(timing);
                        self.fail(idx, RunInput::JudgedFailed(cause.class()), cause, name)?;
                    }
                }
            }
            Event::StatusReadFailed { code, .. } => {
                self.poison_at(
                    idx,
                    RunInput::StatusReadFailed,
                    Stage::StatusRead,
                    code,
                    name,
                )?;
            }
            Event::Finalised { .. } => {
                let verdict = self
                    .advance(idx, RunInput::Finalised, name)?
                    .verdict
                    .unwrap_or(Verdict::Ok);
                self.settle(idx, verdict);
            }
            Event::FinaliseFailed { failure, .. } => {
                let failure = match failure {
                    FinaliseFailure::Validation => Failure::CopyBackValidation,
                    FinaliseFailure::Acl(code) => Failure::Acl {
                        stage: Stage::CopyBack,
                        code,
                    },
                };
                let cause = Cause::of(failure);
                match cause.class() {
                    Class::RunOnly => {
                        self.advance(idx, RunInput::FinaliseFailed(Class::RunOnly), name)?;
                        // The first failure wins: a run that already failed keeps its cause.
                        let verdict = match self.run(idx).verdict {
                            Some(Verdict::Ok) | None => Verdict::Failed { cause },
                            Some(earlier) => earlier,
                        };
                        self.settle(idx, verdict);
                    }
                    Class::Poison => {
                        self.advance(idx, RunInput::FinaliseFailed(Class::Poison), name)?;
                        self.poison_from(idx, cause);
                    }
                }
            }
            // `Event::run_lease` names no run for these: `apply_lane_event` takes them.
            Event::StreamCreated { .. }
            | Event::StreamDestroyed { .. }
            | Event::StreamCreateFailed { .. }
            | Event::StreamDestroyFailed { .. }
            | Event::Uploaded { .. }
            | Event::UploadFailed { .. }
            | Event::DeviceDrained { .. }
            | Event::ResetDone { .. }
            | Event::ResetFailed { .. }
            | Event::ProbePassed { .. }
            // Names no run: `apply_event` routes it to `apply_lane_event`.
            | Event::ProbeFailed { .. } => {
                self.record_bug(InvariantViolation::EventMisrouted { event: name });
            }
        }
        Ok(())
    }

    /// Applies an event about the stream pair, a publication or the recovery.
    fn apply_lane_event(&mut self, event: &Event, name: &'static str) -> Result<(), EventError> {
        match *event {
            Event::StreamCreated { role, handle } => {
                self.pair_result(stream_pair::Input::Created { role, handle }, name)?;
            }
            Event::StreamDestroyed { role, handle } => {
                self.pair_result(stream_pair::Input::Destroyed { role, handle }, name)?;
            }
            Event::StreamCreateFailed { role, code } => {
                self.pair_result(
                    stream_pair::Input::CreateFailed {
                        role,
                        code: code.raw(),
                    },
                    name,
                )?;
                self.stream_failed(role, Stage::StreamCreate, code);
            }
            Event::StreamDestroyFailed { role, handle, code } => {
                self.pair_result(
                    stream_pair::Input::DestroyFailed {
                        role,
                        handle,
                        code: code.raw(),
                    },
                    name,
                )?;
                self.stream_failed(role, Stage::StreamDestroy, code);
            }
            Event::Uploaded { publication } => {
                self.finish_upload(publication, PublicationResult::Uploaded, name)?;
            }
            Event::UploadFailed { publication, code } => {
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::Upload,
                    code,
                });
                self.finish_upload(publication, PublicationResult::Failed { cause }, name)?;
            }
            Event::DeviceDrained { attempt } => {
                self.recovery(RecoveryStep::Drain, LaneInput::Drained, attempt, name)?;
            }
            Event::ResetDone { attempt } => {
                self.recovery(RecoveryStep::Reset, LaneInput::ResetDone, attempt, name)?;
            }
            Event::ResetFailed { attempt, .. } => {
                self.recovery(RecoveryStep::Reset, LaneInput::ResetFailed, attempt, name)?;
            }
            Event::ProbePassed { attempt } => {
                self.recovery(RecoveryStep::Probe, LaneInput::ProbePassed, attempt, name)?;
            }
            Event::ProbeFailed { attempt, .. } => {
                self.recovery(RecoveryStep::Probe, LaneInput::ProbeFailed, attempt, name)?;
            }
            // `Event::run_lease` names the run of these: `apply_run_event` takes them.
            Event::Prepared { .. }
            | Event::PrepareIncompatible { .. }
            | Event::PrepareFailed { .. }
            | Event::Launched { .. }
            | Event::LaunchFailed { .. }
            | Event::Completed { .. }
            | Event::CompletionFailed { .. }
            | Event::StatusRead { .. }
            | Event::StatusReadFailed { .. }
            | Event::Finalised { .. }
            // Names a run: `apply_event` routes it to `apply_run_event`.
            | Event::FinaliseFailed { .. } => {
                self.record_bug(InvariantViolation::EventMisrouted { event: name });
            }
        }
        Ok(())
    }

    /// An event reports a failure: steps the run, then concludes it.
    fn fail(
        &mut self,
        idx: usize,
        input: RunInput,
        cause: Cause,
        event: &'static str,
    ) -> Result<(), EventError> {
        self.advance(idx, input, event)?;
        self.conclude(idx, cause);
        Ok(())
    }

    /// An event reports a failure that poisons whatever its class: completion was not proven,
    /// so the work may still be running.
    fn poison_at(
        &mut self,
        idx: usize,
        input: RunInput,
        stage: Stage,
        code: status_latch::AclCode,
        event: &'static str,
    ) -> Result<(), EventError> {
        self.advance(idx, input, event)?;
        self.poison_from(idx, Cause::of(Failure::Acl { stage, code }));
        Ok(())
    }

    /// A run-only failure finalises the run (no copy-back); a poison takes the device down.
    fn conclude(&mut self, idx: usize, cause: Cause) {
        match cause.class() {
            Class::RunOnly => self.finalise(idx, Verdict::Failed { cause }, false),
            Class::Poison => self.poison_from(idx, cause),
        }
    }

    fn pair_result(
        &mut self,
        input: stream_pair::Input,
        event: &'static str,
    ) -> Result<(), EventError> {
        // What the pair reports is what the event says (a failure is handled by the event's
        // own arm through `stream_failed`); only its refusal matters here.
        self.pair
            .handle(input)
            .map(|_reported| ())
            .map_err(|rejection| EventError::Stream { event, rejection })
    }

    /// A stream create or destroy failed: on the launch path the waiting run fails
    /// `NotStarted` (the next launch retries); while closing the teardown records it, to
    /// destroy the stream again or report it left.
    fn stream_failed(&mut self, role: Role, stage: Stage, code: status_latch::AclCode) {
        if matches!(self.state, LaneState::ReleasingStreams { .. }) {
            // The teardown destroys it again or reports it (`release_streams`).
            self.streams_left.set(role, Some(code));
            return;
        }
        let Some(waiter) = self.launch_waiter.take() else {
            return;
        };
        let Some(idx) = self.items.iter().position(
            |i| matches!(i, Item::Run(r) if r.id == waiter && r.phase == RunPhase::Prepared),
        ) else {
            return;
        };
        let cause = Cause::of(Failure::Acl { stage, code });
        if self
            .decide(idx, RunInput::StreamsFailed(cause.class()))
            .is_some()
        {
            self.conclude(idx, cause);
        }
    }

    fn finish_upload(
        &mut self,
        publication: PublicationId,
        result: PublicationResult,
        event: &'static str,
    ) -> Result<(), EventError> {
        let input = match result {
            PublicationResult::Uploaded => PublicationInput::Uploaded,
            PublicationResult::Failed { .. }
            | PublicationResult::Cancelled
            | PublicationResult::Poisoned { .. } => PublicationInput::UploadFailed,
        };
        let unexpected = EventError::UnexpectedForPublication { publication, event };
        let Some(Item::Publication(p)) = self
            .items
            .iter_mut()
            .find(|i| matches!(i, Item::Publication(p) if p.id == publication))
        else {
            return Err(unexpected);
        };
        p.step(input).map_err(|_| unexpected)?;
        p.result = Some(result);
        // Uploaded or not, cores may hold instructions from the replaced code: the AICore
        // stream is stale either way (L-12).
        self.pair.mark_stale();
        self.last_publication = Some(PublicationMark {
            seq: publication.0,
            aicore_creations: self.pair.created_count(),
        });
        Ok(())
    }

    /// Applies an event's input to a run and returns the run; a refused input changes
    /// nothing and rejects the event.
    #[inline]
    pub(super) fn advance(
        &mut self,
        idx: usize,
        input: RunInput,
        event: &'static str,
    ) -> Result<&mut RunRecord, EventError> {
        let r = self.run_mut(idx);
        match step(r.phase, input) {
            Ok(next) => {
                r.phase = next;
                Ok(r)
            }
            Err(refusal) => Err(EventError::UnexpectedForRun {
                run: r.id,
                event,
                phase: r.phase,
                refusal,
            }),
        }
    }

    /// Applies an input the lane itself decided (prepare, launch, await, cancel, a failed
    /// readying, abandon). The lane only decides inputs its phase accepts, so a refusal is a
    /// lane bug: recorded for `check_invariants`, and nothing changes.
    #[inline]
    pub(super) fn decide(&mut self, idx: usize, input: RunInput) -> Option<&mut RunRecord> {
        let r = self.run(idx);
        let (run, phase) = (r.id, r.phase);
        match step(phase, input) {
            Ok(next) => {
                let r = self.run_mut(idx);
                r.phase = next;
                Some(r)
            }
            Err(_) => {
                self.record_bug(InvariantViolation::StepRefused { run, phase, input });
                None
            }
        }
    }

    /// Checks an input is allowed without applying it.
    fn expect(&self, idx: usize, input: RunInput, event: &'static str) -> Result<(), EventError> {
        let r = self.run(idx);
        step(r.phase, input)
            .map(|_| ())
            .map_err(|refusal| EventError::UnexpectedForRun {
                run: r.id,
                event,
                phase: r.phase,
                refusal,
            })
    }

    /// Frees the run's slot (its events were released by finalisation or abandoned by a
    /// reset) and fixes its verdict.
    pub(super) fn settle(&mut self, idx: usize, verdict: Verdict) {
        let r = self.run_mut(idx);
        r.verdict = Some(verdict);
        r.deadline = None;
        let (lease, id) = (r.lease, r.id);
        self.slots.free_if_held(lease, id);
        if self.launch_waiter == Some(id) {
            self.launch_waiter = None;
        }
    }

    pub(super) fn finalise(&mut self, idx: usize, verdict: Verdict, copy_back: bool) {
        let r = self.run_mut(idx);
        r.verdict = Some(verdict);
        let (run, lease) = (r.id, r.lease);
        self.emit(Effect::FinaliseRun {
            run,
            lease,
            copy_back,
        });
    }
}
