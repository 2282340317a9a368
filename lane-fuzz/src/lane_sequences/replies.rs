//! The backend's answers the body makes up: the reply an [`Op::Answer`] picks for an
//! outstanding effect, and the forgeries made to be refused.
//! Apart from [`super`] for length: one file per side of the body.

use lane_core::status_latch::{
    AclCode, Boundary, CoveredRead, DeviceVerdict, Evidence as Waited, Record, RecordDefect,
    RecordRead, RecordSource, RuntimeCode, VerdictChannel,
};
use lane_core::stream_pair::{Role, StreamHandle, StreamState};
use lane_core::{
    DeviceTiming, Effect, Event, FinaliseFailure, LaneState, LaunchStep, Lease, PublicationId,
    RunId, SlotId,
};

use super::{B, Body, Forgery, Kind, Reply, generation_of};
use crate::pick;

impl Body {
    /// The answer to `effect`, and whether it is a right one.
    pub(super) fn reply(&mut self, effect: Effect, reply: Reply) -> (Event, Kind) {
        let code = |i: u8| acl_code(i);
        match (effect, reply) {
            (Effect::LaunchRun { run, lease, .. }, Reply::Decline) => {
                (Event::LaunchDeclined { run, lease }, Kind::Right)
            }
            // Only a launch has a decline: anything else succeeds.
            (effect, Reply::Decline) => self.reply(effect, Reply::Success),
            (Effect::PrepareRun { run, lease, .. }, Reply::Success) => {
                (Event::Prepared { run, lease }, Kind::Right)
            }
            (Effect::PrepareRun { run, lease, .. }, Reply::Failure { code: c, .. }) => {
                (Event::PrepareFailed { run, lease, code: code(c).into() }, Kind::Right)
            }
            (Effect::PrepareRun { run, lease, .. }, Reply::Other { .. }) => {
                (Event::PrepareIncompatible { run, lease }, Kind::Right)
            }
            (Effect::CreateStream { role }, Reply::Failure { code: c, .. }) => {
                (Event::StreamCreateFailed { role, code: code(c) }, Kind::Right)
            }
            (Effect::CreateStream { role }, Reply::Other { .. }) => {
                let other = match role {
                    Role::Aicpu => Role::Aicore,
                    Role::Aicore => Role::Aicpu,
                };
                match self.lane.pair().stream(other).state {
                    StreamState::Live(handle) | StreamState::Destroying(handle) => {
                        (Event::StreamCreated { role, handle }, Kind::Wrong)
                    }
                    StreamState::Absent | StreamState::Creating => self.created(role),
                }
            }
            (Effect::CreateStream { role }, Reply::Success) => self.created(role),
            (Effect::DestroyStream { role, handle, .. }, Reply::Success) => {
                (Event::StreamDestroyed { role, handle }, Kind::Right)
            }
            (Effect::DestroyStream { role, handle, .. }, Reply::Failure { code: c, .. }) => {
                (Event::StreamDestroyFailed { role, handle, code: code(c) }, Kind::Right)
            }
            (Effect::DestroyStream { role, handle, .. }, Reply::Other { .. }) => (
                Event::StreamDestroyed { role, handle: StreamHandle(handle.0.wrapping_add(1)) },
                Kind::Wrong,
            ),
            (Effect::LaunchRun { run, lease, .. }, Reply::Success) => {
                (Event::Launched { run, lease }, Kind::Right)
            }
            (Effect::LaunchRun { run, lease, .. }, Reply::Failure { code: c, step }) => (
                Event::LaunchFailed { run, lease, step: launch_step(step), code: code(c).into() },
                Kind::Right,
            ),
            // A launch has no third answer: the step is taken from the code index.
            (Effect::LaunchRun { run, lease, .. }, Reply::Other { code: c }) => (
                Event::LaunchFailed { run, lease, step: launch_step(c), code: code(c).into() },
                Kind::Right,
            ),
            (Effect::AwaitCompletion { run, lease, .. }, Reply::Failure { code: c, .. }) => {
                (Event::CompletionFailed { run, lease, code: code(c) }, Kind::Right)
            }
            (Effect::AwaitCompletion { run, lease, channel, .. }, Reply::Other { code: c }) => (
                Event::Completed { run, lease, evidence: completion_evidence(channel, c) },
                Kind::Right,
            ),
            (Effect::AwaitCompletion { run, lease, channel, .. }, _) => (
                Event::Completed {
                    run,
                    lease,
                    // The channel's success: the run's own ok record, or (a runtime without
                    // records) a clean device verdict.
                    evidence: match channel {
                        VerdictChannel::Record => Waited::PUBLISHED_OK,
                        VerdictChannel::StreamSync => Waited::SYNCHRONIZED_CLEAN,
                    },
                },
                Kind::Right,
            ),
            // Every covered run's own ok record; or the first one's record is an error
            // (`code` even) or was never published (odd), every other one ok.
            (Effect::ReadRecords { run, lease, behind }, reply) => {
                let first = match reply {
                    Reply::Other { code: c } if c % 2 == 0 => RecordRead::Read(Record::Error {
                        code: RuntimeCode::ScopeDeadlock,
                        source: RecordSource::Header,
                        payload_len: 0,
                    }),
                    Reply::Other { code: c } => {
                        RecordRead::Read(Record::NeverPublished { stamp: u64::from(c) })
                    }
                    Reply::Failure { code: c, .. } => RecordRead::Failed(code(c)),
                    Reply::Success | Reply::Decline => RecordRead::Read(Record::Ok),
                };
                let records = behind
                    .iter()
                    .enumerate()
                    .map(|(at, (covered, _))| CoveredRead {
                        run: covered.0,
                        record: if at == 0 { first } else { RecordRead::Read(Record::Ok) },
                    })
                    .collect();
                (Event::RecordsRead { run, lease, records }, Kind::Right)
            }
            (Effect::ReadStatus { run, lease, .. }, Reply::Success) => {
                (self.status_read(run, lease, None), Kind::Right)
            }
            (Effect::ReadStatus { run, lease, .. }, Reply::Failure { code: c, .. }) => {
                (Event::StatusReadFailed { run, lease, code: code(c) }, Kind::Right)
            }
            (Effect::ReadStatus { run, lease, .. }, Reply::Other { code: c }) => {
                (self.status_read(run, lease, Some(c)), Kind::Right)
            }
            (Effect::FinaliseRun { run, lease, .. }, Reply::Success) => {
                (Event::Finalised { run, lease }, Kind::Right)
            }
            (Effect::FinaliseRun { run, lease, .. }, Reply::Failure { code: c, .. }) => (
                Event::FinaliseFailed { run, lease, failure: FinaliseFailure::Acl(code(c)) },
                Kind::Right,
            ),
            (Effect::FinaliseRun { run, lease, .. }, Reply::Other { .. }) => (
                Event::FinaliseFailed { run, lease, failure: FinaliseFailure::Validation },
                Kind::Right,
            ),
            (Effect::UploadCode { publication, .. }, Reply::Failure { code: c, .. }) => {
                (Event::UploadFailed { publication, code: code(c).into() }, Kind::Right)
            }
            (Effect::UploadCode { publication, .. }, _) => {
                (Event::Uploaded { publication }, Kind::Right)
            }
            (Effect::DrainDevice { attempt, .. }, _) => {
                (Event::DeviceDrained { attempt }, Kind::Right)
            }
            (Effect::ForceReset { attempt }, Reply::Failure { code: c, .. }) => {
                (Event::ResetFailed { attempt, code: code(c) }, Kind::Right)
            }
            (Effect::ForceReset { attempt }, _) => (Event::ResetDone { attempt }, Kind::Right),
            (Effect::Probe { attempt }, Reply::Failure { code: c, .. }) => {
                (Event::ProbeFailed { attempt, code: code(c) }, Kind::Right)
            }
            (Effect::Probe { attempt }, _) => (Event::ProbePassed { attempt }, Kind::Right),
            // Never outstanding (nothing answers them): an event that answers nothing.
            (Effect::Hook(_) | Effect::AdoptReset, _) => {
                (Event::DeviceDrained { attempt: u8::MAX }, Kind::Wrong)
            }
        }
    }

    fn created(&mut self, role: Role) -> (Event, Kind) {
        self.next_handle += 1;
        (Event::StreamCreated { role, handle: StreamHandle(self.next_handle) }, Kind::Right)
    }

    fn status_read(&self, run: RunId, lease: Lease, latch: Option<u8>) -> Event {
        let mut status = self.layout_clean;
        if let Some(i) = latch {
            let at = usize::from(i) % (RuntimeCode::ALL.len() + 1);
            let code = RuntimeCode::ALL.get(at).copied().unwrap_or(RuntimeCode::Unknown(4242));
            if i % 2 == 0 {
                status.orch = Some(code);
            } else {
                status.sched = Some(code);
            }
        }
        Event::StatusRead {
            run,
            lease,
            status,
            timing: DeviceTiming {
                start_ns: run.0 * 1_000,
                end_ns: run.0 * 1_000 + 500,
                ..Default::default()
            },
        }
    }

    pub(super) fn forge(&mut self, forgery: Forgery) -> Result<(), String> {
        let event = match forgery {
            Forgery::Replay(i) => match pick(&self.history, i) {
                Some(event) => event,
                None => return Ok(()),
            },
            Forgery::StaleLease(i) => {
                let runs: Vec<Effect> = self
                    .current()
                    .into_iter()
                    .map(|at| self.outstanding[at].effect)
                    .filter(|e| e.run().is_some())
                    .collect();
                let Some(effect) = pick(&runs, i) else {
                    return Ok(());
                };
                let (event, _) = self.reply(effect, Reply::Success);
                with_lease(event, |lease| Lease {
                    slot: lease.slot,
                    generation: generation_of(lease.generation.get().wrapping_add(1)),
                })
            }
            Forgery::UnknownRun(i) => {
                let delivered: Vec<u64> =
                    self.accepted.iter().filter(|a| a.delivered).map(|a| a.seq).collect();
                let run = match pick(&delivered, i) {
                    Some(seq) if i % 2 == 0 => RunId(seq),
                    _ => RunId(self.accepted.last().map_or(1, |a| a.seq) + 1 + u64::from(i)),
                };
                let lease = pick(&self.former_leases, i)
                    .unwrap_or(Lease { slot: SlotId(0), generation: generation_of(1) });
                match i % 5 {
                    0 => Event::Prepared { run, lease },
                    1 => Event::Launched { run, lease },
                    2 => Event::Completed { run, lease, evidence: Waited::PUBLISHED_OK },
                    3 => self.status_read(run, lease, None),
                    _ => Event::Finalised { run, lease },
                }
            }
            Forgery::WrongAttempt(i) => {
                let attempt = match self.lane.state() {
                    LaneState::Recovering { attempt, .. } => attempt.wrapping_add(1 + i % 3),
                    _ => 1 + i % 3,
                };
                match i % 3 {
                    0 => Event::DeviceDrained { attempt },
                    1 => Event::ResetDone { attempt },
                    _ => Event::ProbePassed { attempt },
                }
            }
            Forgery::UnknownPublication(i) => {
                let uploading: Vec<u64> = self
                    .current()
                    .into_iter()
                    .filter_map(|at| match self.outstanding[at].effect {
                        Effect::UploadCode { publication, .. } => Some(publication.0),
                        _ => None,
                    })
                    .collect();
                let seq = pick(&self.accepted, i).map_or(u64::from(i), |a| a.seq);
                if uploading.contains(&seq) {
                    return Ok(());
                }
                Event::Uploaded { publication: PublicationId(seq) }
            }
        };
        let rejected_before = self.lane.rejected_events();
        self.feed(event, Kind::Wrong)?;
        if self.lane.rejected_events() > rejected_before {
            self.reach(B::ForgeryRejected);
        } else if matches!(forgery, Forgery::Replay(_)) {
            self.reach(B::ReplayAccepted);
        }
        Ok(())
    }
}

/// The launch step at `i % 4`.
fn launch_step(i: u8) -> LaunchStep {
    match i % 5 {
        0 => LaunchStep::Arm,
        1 => LaunchStep::Aicore,
        2 => LaunchStep::Aicpu,
        3 => LaunchStep::RecordEvent,
        _ => LaunchStep::CoreDone,
    }
}

/// The completion evidence other than the channel's success, picked by `c` (see
/// [`Reply::Other`]): on the record channel, the verdict rule's rows past `record-ok`; on the
/// stream-synchronize channel, a device fault. Each with a `no device verdict made` shape, a
/// backend that did not synchronize when the rule asks it to.
fn completion_evidence(channel: VerdictChannel, c: u8) -> Waited {
    if channel == VerdictChannel::StreamSync {
        return Waited {
            channel,
            boundary: Boundary::Complete,
            record: RecordRead::NotRead,
            device: match c % 2 {
                0 => Some(DeviceVerdict::Fault(acl_code(c / 2))),
                _ => None,
            },
        };
    }
    let never = RecordRead::Read(Record::NeverPublished { stamp: u64::from(c) });
    let (record, device) = match c % 8 {
        0 => {
            let at = usize::from(c / 8) % (RuntimeCode::ALL.len() + 1);
            let code = RuntimeCode::ALL.get(at).copied().unwrap_or(RuntimeCode::Unknown(4242));
            // The waiter makes no device verdict on an error record: it decides the run.
            let record = Record::Error { code, source: RecordSource::Header, payload_len: 0 };
            (RecordRead::Read(record), None)
        }
        1 => (never, Some(DeviceVerdict::Clean)),
        2 => (never, Some(DeviceVerdict::Fault(acl_code(c / 8)))),
        3 => (RecordRead::Failed(acl_code(c / 8)), Some(DeviceVerdict::Clean)),
        4 => {
            (RecordRead::Read(Record::Malformed(record_defect(c / 8))), Some(DeviceVerdict::Clean))
        }
        // What the synchronize returned, for the lane to attribute (L-8a): the AICPU
        // stream's code (a sticky fatal status reads as 507018), or the AICore stream's.
        6 => (
            never,
            Some(DeviceVerdict::Returned { aicpu: Some(AclCode::RtAicpuException), aicore: None }),
        ),
        7 => (
            never,
            Some(DeviceVerdict::Returned { aicpu: None, aicore: Some(AclCode::RtAicoreException) }),
        ),
        _ => (never, None),
    };
    Waited { channel, boundary: Boundary::Complete, record, device }
}

/// A published record's defect, picked by `i % 8`.
const fn record_defect(i: u8) -> RecordDefect {
    let raw = i as u32;
    match i % 8 {
        0 => RecordDefect::NoVerdict,
        1 => RecordDefect::ZeroEpoch,
        2 => RecordDefect::UnknownVerdict { raw: 3 + raw },
        3 => RecordDefect::ErrorWithoutCode,
        4 => RecordDefect::UnknownSource { raw: 4 + raw },
        5 => RecordDefect::OkWithDetail { code: -1, source: 0, payload: 0 },
        6 => RecordDefect::PayloadTooLong { bytes: 257 + raw },
        _ => RecordDefect::Short { len: 8 },
    }
}

/// The ACL code at `i % 26`; the 26th is one no table names.
fn acl_code(i: u8) -> AclCode {
    let at = usize::from(i) % (AclCode::ALL.len() + 1);
    AclCode::ALL.get(at).copied().unwrap_or(AclCode::Unknown(999_001))
}

/// `event` with its lease changed by `f` (events without a lease are returned as they are).
fn with_lease(event: Event, f: impl Fn(Lease) -> Lease) -> Event {
    match event {
        Event::Prepared { run, lease } => Event::Prepared { run, lease: f(lease) },
        Event::Launched { run, lease } => Event::Launched { run, lease: f(lease) },
        Event::Completed { run, lease, evidence } => {
            Event::Completed { run, lease: f(lease), evidence }
        }
        Event::StatusRead { run, lease, status, timing } => {
            Event::StatusRead { run, lease: f(lease), status, timing }
        }
        Event::Finalised { run, lease } => Event::Finalised { run, lease: f(lease) },
        other => other,
    }
}
