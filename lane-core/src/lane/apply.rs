//! Applying backend events, and every run-phase change: [`Lane::transition`] (an event's
//! input) and [`Lane::decide`] (the lane's own input) are the only callers of
//! [`run::step`](crate::run::step), and [`Lane::perform`] is the one place a run's action
//! is performed.

use status_latch::{
    Boundary, Class, CoveredRead, DeviceVerdict, Evidence, Failure, HeaderRead, Judgement,
    LaunchProgress, Record, RecordRead, Stage, attribute, judge,
};
use stream_pair::{Owner, Retired, Retirement, Role};

use crate::effect::Effect;
use crate::error::{EventError, InvariantViolation};
use crate::event::{Event, FinaliseFailure, LaunchStep};
use crate::ids::{Lease, PAIR_PEERS, Peers, PublicationId, RunId};
use crate::outcome::{Cause, Verdict};
use crate::publication::{PublicationAction, PublicationInput, PublicationRefusal};
use crate::run::{RunAction, RunInput, RunPhase, step};
use crate::state::{LaneInput, LaneState, RecoveryStep};

use super::items::Item;
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

    /// Applies an event about the live run at `idx` (the run it names, lease checked): each
    /// event is one run input, stepped and performed by [`transition`](Self::transition).
    #[inline(always)]
    fn apply_run_event(
        &mut self,
        idx: usize,
        event: &Event,
        name: &'static str,
    ) -> Result<(), EventError> {
        match *event {
            Event::Prepared { .. } => self.transition(idx, RunInput::Prepared, name),
            Event::PrepareIncompatible { .. } => {
                self.transition(idx, RunInput::Incompatible, name)
            }
            Event::PrepareFailed { code, .. } => {
                let cause = Cause::of(Failure::returned(Stage::Prepare, code));
                self.transition(idx, RunInput::PrepareFailed(cause), name)
            }
            Event::Launched { .. } => self.transition(idx, RunInput::Launched, name),
            Event::LaunchFailed {
                run, step, code, ..
            } => {
                let progress = match step {
                    LaunchStep::Arm | LaunchStep::Aicore => LaunchProgress::NotStarted,
                    // An AICore kernel with no AICPU scheduler behind it (L-5): known now, with
                    // the failed call's own code.
                    LaunchStep::CoreDone | LaunchStep::Aicpu => LaunchProgress::Partial,
                    // A fence record or wait failed after a kernel was accepted (L-5).
                    LaunchStep::RecordEvent => {
                        let code = code.as_acl();
                        return self.transition(idx, RunInput::LaunchedUnfenced(code), name);
                    }
                };
                let cause = Cause::of(Failure::launch(progress, code));
                self.transition(idx, RunInput::LaunchFailed(cause), name)?;
                if cause.class() == Class::RunOnly {
                    // Nothing reached a stream: the submission leaves without staleness (S-2).
                    self.withdraw(run);
                }
                Ok(())
            }
            Event::LaunchDeclined { run, .. } => {
                // Queued behind a run, the run waits for the pair to empty (its action
                // withdraws it); alone, its decline fails it, not started.
                let queued = self.run(idx).queued_launch;
                self.transition(idx, RunInput::LaunchDeclined { queued }, name)?;
                let r = self.run_mut(idx);
                r.declines = r.declines.saturating_add(1);
                // Nothing of it reached a stream: it has not launched (a cancel finds it so).
                r.launched_on = None;
                if !queued {
                    self.withdraw(run);
                } else if self.state == LaneState::Closing {
                    // Close cancelled what had not launched while this launch was out: now
                    // that it did not launch, it is cancelled as they were (L-15).
                    self.decide(idx, RunInput::Cancel);
                }
                Ok(())
            }
            Event::Completed {
                run, mut evidence, ..
            } => {
                // Only an awaited run's completion answers anything: a replay while its code
                // is attributed (`Attributing` accepts `CompletedFaulted` from its records'
                // answer) must not be taken as that answer.
                let phase = self.run(idx).phase;
                if !phase.is_awaiting() {
                    return Err(EventError::UnexpectedForRun {
                        run,
                        event: name,
                        phase,
                        refusal: crate::run::Refusal::NotExpected,
                    });
                }
                // An unfenced run's events proved nothing, whatever the backend says.
                if let Some(code) = self.run(idx).phase.unfenced() {
                    evidence.boundary = Boundary::Unfenced(code);
                }
                // L-8a: a code the synchronize returned is charged by evidence. With runs
                // queued behind on the pair, their records are read first.
                if let Some(DeviceVerdict::Returned { aicpu, aicore }) = evidence.device {
                    let behind = self.behind_on_pair(idx);
                    if !behind.is_empty() {
                        return self.transition(idx, RunInput::Attribute(evidence), name);
                    }
                    evidence.device = Some(self.attribute(aicpu, aicore, &[]));
                }
                self.complete(idx, run, evidence, name)
            }
            Event::RecordsRead { run, records, .. } => {
                let RunPhase::Attributing { mut evidence } = self.run(idx).phase else {
                    let r = self.run(idx);
                    return Err(EventError::UnexpectedForRun {
                        run,
                        event: name,
                        phase: r.phase,
                        refusal: crate::run::Refusal::NotExpected,
                    });
                };
                let mut covered = [CoveredRead {
                    run: 0,
                    record: RecordRead::NotRead,
                }; PAIR_PEERS];
                let mut len = 0;
                for read in records.iter() {
                    covered[len] = read;
                    len += 1;
                }
                let covered = &covered[..len];
                if let Some(DeviceVerdict::Returned { aicpu, aicore }) = evidence.device {
                    evidence.device = Some(self.attribute(aicpu, aicore, covered));
                }
                // A covered run whose record reports an error left its fatal status on the
                // AICPU stream: nothing new joins the stream from now on (L-8a), not only once
                // that run retires.
                if let Some(read) = covered.iter().find(|read| read.reports_error()) {
                    self.pair.mark_sticky(Owner(read.run));
                }
                self.complete(idx, run, evidence, name)
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
                self.transition(idx, RunInput::CompletionFailed(Cause::of(failure)), name)
            }
            Event::StatusRead { status, timing, .. } => {
                let header = match status.latched() {
                    None => HeaderRead::Clean,
                    Some(latch) => HeaderRead::Latched(latch),
                };
                // `ReadingStatus` holds what `Completed` proved; in any other phase the step
                // refuses the event.
                let RunPhase::ReadingStatus { evidence } = self.run(idx).phase else {
                    return self.transition(idx, RunInput::JudgedOk, name);
                };
                let input = match judge(&evidence, header).1 {
                    Judgement::Ok => RunInput::JudgedOk,
                    Judgement::Fail(failure) => RunInput::JudgedFailed(Cause::of(failure)),
                    // The header was read and the device verdict made and attributed: none can
                    // be asked for again, so the run has no positive evidence.
                    Judgement::NeedsDeviceVerdict
                    | Judgement::NeedsHeader
                    | Judgement::NeedsAttribution => {
                        RunInput::JudgedFailed(Cause::of(Failure::NoRecord))
                    }
                };
                self.transition(idx, input, name)?;
                self.run_mut(idx).timing = Some(timing);
                Ok(())
            }
            Event::StatusReadFailed { code, .. } => {
                let cause = Cause::of(Failure::Acl {
                    stage: Stage::StatusRead,
                    code,
                });
                self.transition(idx, RunInput::StatusReadFailed(cause), name)
            }
            Event::Finalised { .. } => self.transition(idx, RunInput::Finalised, name),
            Event::FinaliseFailed { failure, .. } => {
                let failure = match failure {
                    FinaliseFailure::Validation => Failure::CopyBackValidation,
                    FinaliseFailure::Acl(code) => Failure::Acl {
                        stage: Stage::CopyBack,
                        code,
                    },
                    FinaliseFailure::Runtime(code) => Failure::Returned {
                        stage: Stage::CopyBack,
                        code,
                    },
                };
                self.transition(idx, RunInput::FinaliseFailed(Cause::of(failure)), name)
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
                Ok(())
            }
        }
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
                self.finish_upload(publication, PublicationInput::Uploaded, name)?;
            }
            Event::UploadFailed { publication, code } => {
                let cause = Cause::of(Failure::returned(Stage::Upload, code));
                self.finish_upload(publication, PublicationInput::UploadFailed(cause), name)?;
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
            | Event::LaunchDeclined { .. }
            | Event::Completed { .. }
            | Event::CompletionFailed { .. }
            | Event::RecordsRead { .. }
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

    /// A completed run's evidence, its device verdict attributed (or needing none): the
    /// verdict rule poisons on it alone (`CompletedFaulted`), or the run goes on to its status
    /// read and leaves the pair. A run whose record reports an error leaves its fatal status
    /// sticky on the AICPU stream, which is marked for replacement (L-8a, S-1).
    fn complete(
        &mut self,
        idx: usize,
        run: RunId,
        evidence: Evidence,
        name: &'static str,
    ) -> Result<(), EventError> {
        // The evidence alone may already poison (L-8): then the run never reaches the pair's
        // retirement or a status read on a faulted device.
        let cause = match judge(&evidence, HeaderRead::Unread).1 {
            Judgement::Fail(failure) => Some(Cause::of(failure)),
            // The waiter makes the device verdict whenever the rule asks for it, and the lane
            // attributes every code it returns; a backend that did neither proves nothing.
            Judgement::NeedsDeviceVerdict | Judgement::NeedsAttribution => {
                Some(Cause::of(Failure::Acl {
                    stage: Stage::StreamSync,
                    code: status_latch::AclCode::RtFeatureNotSupport,
                }))
            }
            Judgement::Ok | Judgement::NeedsHeader => None,
        };
        if let Some(cause) = cause.filter(|c| c.class() == Class::Poison) {
            return self.transition(idx, RunInput::CompletedFaulted(cause), name);
        }
        self.transition(idx, RunInput::Completed(evidence), name)?;
        let how = match (evidence.channel, evidence.record) {
            (status_latch::VerdictChannel::Record, RecordRead::Read(Record::Error { .. })) => {
                Retirement::Sticky
            }
            _ => Retirement::Complete,
        };
        match self.pair.retire(Owner(run.0), how) {
            Retired::Kept | Retired::StickyMarked => {}
            // Only the oldest run on the pair is awaited: anything else is a lane bug.
            retired => {
                self.record_bug(InvariantViolation::RetiredOutOfOrder { run, retired });
            }
        }
        Ok(())
    }

    /// Withdraws `run`'s submission from the pair: its launch reached no kernel (S-2, nothing
    /// made stale).
    fn withdraw(&mut self, run: RunId) {
        if let Err(error) = self.pair.withdraw(Owner(run.0)) {
            // The run launched, so it holds a submission: a lane bug.
            self.record_bug(InvariantViolation::WithdrawRefused { run, error });
        }
    }

    /// The runs on the pair behind the run at `idx` whose launch returned (launched, fenced or
    /// not), in submission order: what its synchronize may have covered (L-8a).
    pub(super) fn behind_on_pair(&self, idx: usize) -> Peers<(RunId, Lease)> {
        self.items[idx + 1..]
            .iter()
            .filter_map(|item| match item {
                Item::Run(r) if matches!(r.phase, RunPhase::Launched { .. }) => {
                    Some((r.id, r.lease))
                }
                _ => None,
            })
            .collect()
    }

    /// Whose code the synchronize returned (L-8a, [`attribute`]): the AICPU stream's sticky
    /// mark, then the covered runs' records.
    fn attribute(
        &self,
        aicpu: Option<status_latch::AclCode>,
        aicore: Option<status_latch::AclCode>,
        covered: &[CoveredRead],
    ) -> DeviceVerdict {
        let sticky = self.pair.sticky().map(|owner| owner.0);
        attribute(aicpu, aicore, sticky, covered).1
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

    /// A stream create or destroy failed: on the launch path the run readying the pair for
    /// its launch fails `NotStarted` (the next launch retries); while closing the teardown
    /// records it, to destroy the stream again or report it left.
    fn stream_failed(&mut self, role: Role, stage: Stage, code: status_latch::AclCode) {
        if matches!(self.state, LaneState::ReleasingStreams { .. }) {
            // The teardown destroys it again or reports it (`release_streams`).
            let _ = self.step_state(LaneInput::DestroyFailed { role, code });
            return;
        }
        let Some(idx) = self.items.iter().position(
            |i| matches!(i, Item::Run(r) if r.phase == RunPhase::Prepared { readying_pair: true }),
        ) else {
            return;
        };
        let cause = Cause::of(Failure::Acl { stage, code });
        self.decide(idx, RunInput::StreamsFailed(cause));
    }

    /// An upload's answer: steps the publication it names (its action marks the AICore
    /// stream stale); one not uploading rejects the event.
    fn finish_upload(
        &mut self,
        publication: PublicationId,
        input: PublicationInput,
        event: &'static str,
    ) -> Result<(), EventError> {
        let unexpected = EventError::UnexpectedForPublication { publication, event };
        let idx = self
            .items
            .iter()
            .position(|i| matches!(i, Item::Publication(p) if p.id == publication))
            .ok_or(unexpected)?;
        self.step_publication(idx, input).map_err(|_| unexpected)
    }

    /// Steps the publication at `idx` through [`publication::step`](crate::publication::step),
    /// the only place its phase changes, and performs the action; a refused input changes
    /// nothing.
    pub(super) fn step_publication(
        &mut self,
        idx: usize,
        input: PublicationInput,
    ) -> Result<(), PublicationRefusal> {
        let Item::Publication(p) = &mut self.items[idx] else {
            return Err(PublicationRefusal::NotExpected);
        };
        let (next, action) = crate::publication::step(p.phase, input)?;
        p.phase = next;
        let (publication, code) = (p.id, p.code);
        match action {
            PublicationAction::None => {}
            PublicationAction::Upload => self.emit(Effect::UploadCode { publication, code }),
            PublicationAction::MarkStale => {
                self.pair.mark_stale();
                self.last_publication = Some(PublicationMark {
                    seq: publication.0,
                    aicore_creations: self.pair.created_count(),
                });
            }
        }
        Ok(())
    }

    /// Steps the run at `idx` with an event's input and performs the action: the one path of
    /// a backend report. A refused input changes nothing and rejects the event.
    #[inline(always)]
    pub(super) fn transition(
        &mut self,
        idx: usize,
        input: RunInput,
        event: &'static str,
    ) -> Result<(), EventError> {
        let r = self.run_mut(idx);
        match step(r.phase, input) {
            Ok((next, action)) => {
                r.phase = next;
                self.perform(idx, action);
                Ok(())
            }
            Err(refusal) => {
                Err(EventError::UnexpectedForRun { run: r.id, event, phase: r.phase, refusal })
            }
        }
    }

    /// Steps the run at `idx` with an input the lane itself decided (prepare, readying the
    /// pair, launch, await, cancel, a failed readying, abandon) and performs the action;
    /// returns whether it applied. The lane only decides inputs its phase accepts, so a
    /// refusal is a lane bug: recorded for `check_invariants`, and nothing changes.
    #[inline(always)]
    pub(super) fn decide(&mut self, idx: usize, input: RunInput) -> bool {
        let r = self.run_mut(idx);
        let (run, phase) = (r.id, r.phase);
        match step(phase, input) {
            Ok((next, action)) => {
                r.phase = next;
                self.perform(idx, action);
                true
            }
            Err(_) => {
                self.record_bug(InvariantViolation::StepRefused { run, phase, input });
                false
            }
        }
    }

    /// Performs what a run's transition asks for ([`RunAction`]), in its new phase: the one
    /// place a run's effects are emitted, its slot freed on its verdict, and its poison taken.
    #[inline(always)]
    fn perform(&mut self, idx: usize, action: RunAction) {
        let r = self.run(idx);
        let (run, lease) = (r.id, r.lease);
        match action {
            RunAction::Wait => {}
            RunAction::Prepare => {
                let diagnostics = r.diagnostics;
                self.emit(Effect::PrepareRun { run, lease, diagnostics });
            }
            RunAction::Launch => {
                // The pair answered `Ready` and took the submission: both streams are live.
                let Some((aicpu, aicore)) = self.pair.handles() else {
                    self.record_bug(InvariantViolation::LaunchWithoutStreams { run });
                    return;
                };
                let epoch = r.epoch;
                // Runs launch in submission order, so the earlier runs still on the pair,
                // newest first, are those whose boundary this launch may have to wait for:
                // the executor waits on the newest whose boundary it recorded (L-5).
                let after: Peers<Lease> = self.items[..idx]
                    .iter()
                    .rev()
                    .filter_map(|item| match item {
                        Item::Run(r) if r.phase.on_pair() => Some(r.lease),
                        _ => None,
                    })
                    .collect();
                let created = self.pair.created_count();
                let r = self.run_mut(idx);
                r.launched_on = Some(created);
                // Only a launch queued behind a run may be declined.
                r.queued_launch = !after.is_empty();
                self.emit(Effect::LaunchRun { run, lease, aicpu, aicore, after, epoch });
            }
            RunAction::Defer => {
                // It reached no kernel: its submission leaves the pair, nothing made stale.
                // It launches again once the pair is empty (`launch_held_back`).
                self.withdraw(run);
            }
            RunAction::Await => {
                if let RunPhase::Awaiting { deadline, unfenced } = r.phase {
                    self.emit(Effect::AwaitCompletion {
                        run,
                        lease,
                        deadline,
                        sync_bound_ns: self.profile.completion_timeout_ns(),
                        channel: self.profile.verdict(),
                        unfenced,
                    });
                }
            }
            RunAction::ReadCovered => {
                let behind = self.behind_on_pair(idx);
                self.emit(Effect::ReadRecords { run, lease, behind });
            }
            RunAction::ReadStatus => {
                self.emit(Effect::ReadStatus { run, lease, layout: self.profile.header() })
            }
            RunAction::Finalise => {
                if let RunPhase::Finalising { verdict } = r.phase {
                    self.emit(Effect::FinaliseRun {
                        run,
                        lease,
                        copy_back: verdict.is_ok(),
                        verdict,
                    });
                }
            }
            // Its events were released by finalisation or abandoned by a reset.
            RunAction::Settle => self.slots.free_if_held(lease, run),
            RunAction::Poison => {
                if let RunPhase::Done { verdict: Verdict::Failed { cause } } = r.phase {
                    self.poison_from(idx, cause);
                }
            }
        }
    }
}
