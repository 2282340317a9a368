//! Test support (cargo feature `testkit`): `Display` for [`Effect`] and [`Event`] in the
//! trace format, and [`Succeed`], the one backend-like helper that answers every effect
//! with success.
//!
//! Not a backend: it touches no device and keeps no state beyond stream handle numbers.
//! Tests, benches, fuzz bodies and doc examples drive a lane with it.

use core::fmt;

use status_latch::{
    AclCode, Boundary, CoveredRead, DeviceVerdict, Evidence, Record, RecordRead, ReturnCode,
    Status, VerdictChannel,
};
use stream_pair::{DestroyMode, StreamHandle};

use crate::effect::{Effect, RecoveryHook};
use crate::error::EventError;
use crate::event::Event;
use crate::ids::{DeviceTiming, Timestamp};
use crate::lane::Lane;

/// Nanoseconds as microseconds with three decimals (`1234` → `1.234`), as traces print them.
struct Micros(u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1_000, self.0 % 1_000)
    }
}

/// ` <raw> <name>` of an ACL code.
struct Code(AclCode);

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " {} {}", self.0.raw(), self.0.name())
    }
}

/// ` <raw> <name>` of a code a runtime call returned (an ACL code prints as [`Code`]; a
/// runtime latch code as returned, negated).
struct Returned(ReturnCode);

impl fmt::Display for Returned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " {} {}", self.0.raw(), self.0.name())
    }
}

/// ` origin <run> (<failure>)` of a recovery hook, or ` (<failure>)` for a fault notice.
fn hook_origin(
    f: &mut fmt::Formatter<'_>,
    origin: Option<crate::RunId>,
    cause: crate::Cause,
) -> fmt::Result {
    if let Some(origin) = origin {
        write!(f, " origin {origin}")?;
    }
    write!(f, " ({})", cause.name())
}

/// One effect as a trace line (backend-sim's text trace prints effects this way).
impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::PrepareRun { run, lease, diagnostics } => write!(
                f,
                "PrepareRun {run} ({lease}){}",
                if diagnostics { " diagnostics" } else { "" }
            ),
            Self::CreateStream { role } => write!(f, "CreateStream {role:?}"),
            Self::DestroyStream { role, handle, mode: DestroyMode::Healthy } => {
                write!(f, "DestroyStream {role:?} h{}", handle.0)
            }
            Self::DestroyStream { role, handle, mode: DestroyMode::Force } => {
                write!(f, "DestroyStream {role:?} h{} force", handle.0)
            }
            Self::LaunchRun { run, lease, aicpu, aicore, after, epoch } => {
                write!(f, "LaunchRun {run} ({lease}) aicpu h{} aicore h{}", aicpu.0, aicore.0)?;
                for (at, lease) in after.iter().enumerate() {
                    let open = if at == 0 { " after (" } else { ", " };
                    write!(f, "{open}{lease}")?;
                }
                if !after.is_empty() {
                    f.write_str(")")?;
                }
                match epoch {
                    Some(epoch) => write!(f, " epoch {epoch}"),
                    None => Ok(()),
                }
            }
            Self::ReadRecords { run, behind, .. } => {
                write!(f, "ReadRecords {run} behind")?;
                for (covered, _) in behind.iter() {
                    write!(f, " {covered}")?;
                }
                Ok(())
            }
            Self::AwaitCompletion { run, deadline, unfenced, .. } => {
                write!(f, "AwaitCompletion {run} (deadline {} us)", Micros(deadline.0))?;
                match unfenced {
                    Some(code) => write!(f, " unfenced ({})", code.raw()),
                    None => Ok(()),
                }
            }
            Self::ReadStatus { run, .. } => write!(f, "ReadStatus {run}"),
            Self::FinaliseRun { run, copy_back, .. } => {
                write!(f, "FinaliseRun {run}{}", if copy_back { " copy-back" } else { "" })
            }
            Self::UploadCode { publication, code } => {
                write!(f, "UploadCode {publication} code {}", code.0)
            }
            Self::DrainDevice { attempt, timeout_ns } => {
                write!(f, "DrainDevice attempt {attempt} (timeout {} ms)", timeout_ns / 1_000_000)
            }
            Self::ForceReset { attempt } => write!(f, "ForceReset attempt {attempt}"),
            Self::Probe { attempt } => write!(f, "Probe attempt {attempt}"),
            Self::Hook(RecoveryHook::OnPoison { origin, cause }) => {
                write!(f, "Hook OnPoison")?;
                hook_origin(f, origin, cause)
            }
            Self::Hook(RecoveryHook::BeforeReset { origin, cause }) => {
                write!(f, "Hook BeforeReset")?;
                hook_origin(f, origin, cause)
            }
            Self::Hook(RecoveryHook::AfterReset { recovered }) => write!(
                f,
                "Hook AfterReset {}",
                if recovered { "recovered" } else { "not recovered" }
            ),
            Self::AdoptReset => write!(f, "AdoptReset"),
        }
    }
}

/// One event as a trace line: its name, its run if any, then what it reports.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        if let Some(run) = self.run() {
            write!(f, " {run}")?;
        }
        match *self {
            Self::StreamCreated { role, handle } | Self::StreamDestroyed { role, handle } => {
                write!(f, " {role:?} h{}", handle.0)
            }
            Self::StreamCreateFailed { role, code } => write!(f, " {role:?}{}", Code(code)),
            Self::StreamDestroyFailed { role, handle, code } => {
                write!(f, " {role:?} h{}{}", handle.0, Code(code))
            }
            Self::PrepareFailed { code, .. } => write!(f, "{}", Returned(code)),
            Self::CompletionFailed { code, .. } | Self::StatusReadFailed { code, .. } => {
                write!(f, "{}", Code(code))
            }
            Self::LaunchFailed { step, code, .. } => write!(f, " at {step:?}{}", Returned(code)),
            Self::StatusRead { status, timing, .. } => write!(
                f,
                " latch {} device {}..{} us",
                status.runtime_status(),
                Micros(timing.start_ns),
                Micros(timing.end_ns)
            ),
            // The common shape prints as before; every other shape says what was proven.
            Self::Completed { evidence, .. } if evidence != Evidence::PUBLISHED_OK => {
                write!(f, " {evidence}")
            }
            Self::FinaliseFailed { failure, .. } => write!(f, " {failure:?}"),
            Self::RecordsRead { records, .. } => {
                for read in records.iter() {
                    match read.record {
                        RecordRead::Read(record) => write!(f, " run {} {record}", read.run)?,
                        RecordRead::Failed(code) => {
                            write!(f, " run {} read-failed{}", read.run, Code(code))?;
                        }
                        RecordRead::NotRead => write!(f, " run {} not-read", read.run)?,
                    }
                }
                Ok(())
            }
            Self::Uploaded { publication } => write!(f, " {publication}"),
            Self::UploadFailed { publication, code } => {
                write!(f, " {publication}{}", Returned(code))
            }
            Self::DeviceDrained { attempt }
            | Self::ResetDone { attempt }
            | Self::ProbePassed { attempt } => write!(f, " attempt {attempt}"),
            Self::ResetFailed { attempt, code } | Self::ProbeFailed { attempt, code } => {
                write!(f, " attempt {attempt}{}", Code(code))
            }
            Self::Prepared { .. }
            | Self::PrepareIncompatible { .. }
            | Self::Launched { .. }
            | Self::LaunchDeclined { .. }
            | Self::Completed { .. }
            | Self::Finalised { .. } => Ok(()),
        }
    }
}

/// Most answers one [`Succeed::drive`] gives before it calls the lane livelocked: far above
/// what any healthy lane asks for in one go (a run takes seven or eight).
pub const DRIVE_LIMIT: usize = 100_000;

/// Answers every effect with success: streams get fresh handles (counting up), runs prepare,
/// launch, complete at once with a clean latch and default timing, finalise; uploads
/// succeed; recovery drains, resets and probes successfully. Allocates nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Succeed {
    /// The last stream handle given out.
    last_handle: u64,
}

impl Succeed {
    /// Stream handles start at 1.
    #[must_use]
    pub const fn new() -> Self {
        Self { last_handle: 0 }
    }

    /// Stream handles start after `last_handle`.
    #[must_use]
    pub const fn with_handles_after(last_handle: u64) -> Self {
        Self { last_handle }
    }

    /// The success event that answers `effect`; `None` for an effect no event answers (a
    /// recovery hook, `AdoptReset`).
    pub fn answer(&mut self, effect: Effect) -> Option<Event> {
        Some(match effect {
            Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
            Effect::CreateStream { role } => {
                self.last_handle += 1;
                Event::StreamCreated { role, handle: StreamHandle(self.last_handle) }
            }
            Effect::DestroyStream { role, handle, .. } => Event::StreamDestroyed { role, handle },
            Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
            Effect::AwaitCompletion { run, lease, channel, unfenced, .. } => Event::Completed {
                run,
                lease,
                evidence: match (unfenced, channel) {
                    // The device verdict alone, on clean streams.
                    (Some(code), channel) => Evidence {
                        channel,
                        boundary: Boundary::Unfenced(code),
                        record: RecordRead::NotRead,
                        device: Some(DeviceVerdict::Clean),
                    },
                    (None, VerdictChannel::Record) => Evidence::PUBLISHED_OK,
                    (None, VerdictChannel::StreamSync) => Evidence::SYNCHRONIZED_CLEAN,
                },
            },
            // Every covered run published its ok record.
            Effect::ReadRecords { run, lease, behind } => Event::RecordsRead {
                run,
                lease,
                records: behind
                    .iter()
                    .map(|(covered, _)| CoveredRead {
                        run: covered.0,
                        record: RecordRead::Read(Record::Ok),
                    })
                    .collect(),
            },
            Effect::ReadStatus { run, lease, layout } => Event::StatusRead {
                run,
                lease,
                status: Status::clean(layout),
                timing: DeviceTiming::default(),
            },
            Effect::FinaliseRun { run, lease, .. } => Event::Finalised { run, lease },
            Effect::UploadCode { publication, .. } => Event::Uploaded { publication },
            Effect::DrainDevice { attempt, .. } => Event::DeviceDrained { attempt },
            Effect::ForceReset { attempt } => Event::ResetDone { attempt },
            Effect::Probe { attempt } => Event::ProbePassed { attempt },
            Effect::Hook(_) | Effect::AdoptReset => return None,
        })
    }

    /// Answers every effect the lane has at `now` until none is left (outcomes stay queued
    /// for the caller). Stops at the first rejected event.
    ///
    /// # Panics
    ///
    /// After [`DRIVE_LIMIT`] answers in one call: a lane that keeps asking while every
    /// answer is a success is livelocked (a lane bug), and a test must fail on it rather
    /// than hang.
    pub fn drive(&mut self, lane: &mut Lane, now: Timestamp) -> Result<(), EventError> {
        let mut answered = 0;
        while let Some(effect) = lane.poll_effect() {
            answered += 1;
            assert!(
                answered <= DRIVE_LIMIT,
                "livelock: the lane still asks after {DRIVE_LIMIT} successful answers ({effect})"
            );
            if let Some(event) = self.answer(effect) {
                lane.handle(now, event)?;
            }
        }
        Ok(())
    }
}
