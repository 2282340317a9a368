//! The failure line: one stable line per failed run, for logs.

use core::fmt;

use crate::codes::AclCode;
use crate::header::{Stall, Status};
use crate::policy::{Failure, classify};

/// One log line for a failed run: the run, the stage, the code with its name and meaning,
/// the class and rule, and the hint. Built by [`failure_line`]; printed with `Display`.
/// The format is stable (snapshot-tested): tools may grep it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FailureLine {
    /// The failed run's id.
    pub run: u64,
    /// What failed.
    pub failure: Failure,
    /// The decoded header, when the caller has it: a latched failure then also prints
    /// both codes, the scheduler thread and bitmap, and the stall detail.
    pub status: Option<Status>,
}

/// The log line for a run's failure.
pub const fn failure_line(run: u64, failure: &Failure) -> FailureLine {
    FailureLine { run, failure: *failure, status: None }
}

impl FailureLine {
    /// Adds the decoded header the latch came from, so a latched failure prints every latch
    /// field. Ignored for failures that are not latched.
    #[must_use]
    pub const fn with_status(mut self, status: Status) -> Self {
        self.status = Some(status);
        self
    }
}

fn code_or_zero(code: Option<crate::RuntimeCode>) -> i32 {
    code.map_or(0, crate::RuntimeCode::value)
}

fn write_acl(f: &mut fmt::Formatter<'_>, code: AclCode) -> fmt::Result {
    write!(f, "ACL {} {} ({})", code.raw(), code.name(), code.meaning())
}

fn write_stall(f: &mut fmt::Formatter<'_>, stall: &Stall) -> fmt::Result {
    let Some(detail) = stall.detail else {
        return Ok(());
    };
    write!(
        f,
        " stall={} ({}) completed={}/{} running={} ready={} waiting={} orch_done={} task_id={} core={}",
        detail.name(),
        detail.value(),
        stall.completed,
        stall.total,
        stall.running,
        stall.ready,
        stall.waiting,
        stall.orch_done,
        stall.task_id,
        stall.core,
    )
}

impl fmt::Display for FailureLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {} failed", self.run)?;
        FailureDetail { failure: self.failure, status: self.status }.fmt(f)
    }
}

/// The part of a [`FailureLine`] after `run N failed`: stage, code, class, rule and hint.
/// For failures that belong to no run (a publication's upload), printed after the caller's
/// own subject.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FailureDetail {
    /// What failed.
    pub failure: Failure,
    /// The decoded header, as in [`FailureLine::status`].
    pub status: Option<Status>,
}

impl fmt::Display for FailureDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let classification = classify(&self.failure);
        let hint = match self.failure {
            Failure::Latched(latch) => {
                f.write_str(": runtime latch")?;
                match self.status {
                    // The runtime's own three fields, in its order, so a grep for them finds both lines.
                    Some(status) => write!(
                        f,
                        " orch_error_code={} sched_error_code={}",
                        code_or_zero(status.orch),
                        code_or_zero(status.sched)
                    )?,
                    None => write!(f, " {}={}", latch.source.field().name(), latch.code.value())?,
                }
                write!(
                    f,
                    " runtime_status={} {} ({})",
                    latch.runtime_status(),
                    latch.code.name(),
                    latch.code.meaning(),
                )?;
                if let Some(status) = self.status {
                    if status.sched.is_some() {
                        write!(
                            f,
                            " sched_error_thread={} sched_error_bitmap={:#x}",
                            status.sched_thread, status.sched_bitmap
                        )?;
                    }
                    if let Some(stall) = &status.stall {
                        write_stall(f, stall)?;
                    }
                }
                latch.code.hint()
            }
            Failure::Acl { stage, code } => {
                write!(f, " at {stage}: ")?;
                write_acl(f, code)?;
                code.hint()
            }
            Failure::Launch { progress, code } => {
                write!(f, " at {} ({}): ", progress.stage(), progress.name())?;
                write_acl(f, code)?;
                code.hint()
            }
            Failure::HostWaitTimeout => {
                f.write_str(" at host wait: the completion deadline passed before both completion events were seen")?;
                self.failure.hint()
            }
            Failure::CopyBackValidation => {
                f.write_str(
                    " at copy-back: host-side validation of the copied-back output failed",
                )?;
                self.failure.hint()
            }
            Failure::Record { code, source } => {
                // The record's own field, as read: its codes may be signed either way
                // (device-truth §2), so negating it (as `runtime_status`) could mislead.
                write!(
                    f,
                    ": result record error from the {source}: completion_code={} {} ({})",
                    code.value(),
                    code.name(),
                    code.meaning()
                )?;
                code.hint()
            }
            Failure::NoRecord => {
                f.write_str(
                    ": no result record: the run did not complete its normal path (its boundary completed and \
                     both streams synchronized clean)",
                )?;
                self.failure.hint()
            }
            Failure::NoRecordBesideCode { code, left_by } => {
                f.write_str(
                    ": no result record: the run did not complete its normal path (its boundary completed; \
                     the synchronize's ",
                )?;
                write_acl(f, code)?;
                write!(
                    f,
                    " is run {left_by}'s, left on the AICPU stream by its fatal status, and the AICore stream \
                     synchronized clean)"
                )?;
                self.failure.hint()
            }
            Failure::Covering { code, behind } => {
                f.write_str(" at stream synchronize: ")?;
                write_acl(f, code)?;
                let runs = if behind == 1 { "run" } else { "runs" };
                write!(
                    f,
                    "; the synchronize also waited for {behind} {runs} queued behind this one, which may \
                     share the cause"
                )?;
                code.hint()
            }
            Failure::MalformedRecord(defect) => {
                write!(f, ": malformed result record ({defect})")?;
                self.failure.hint()
            }
            Failure::Returned { stage, code } => {
                // As returned (negated, `runtime_status`), so a grep for the latch line's field
                // finds this one too; never an ACL code.
                write!(
                    f,
                    " at {stage}: runtime latch code returned runtime_status={} {} ({})",
                    code.value().wrapping_neg(),
                    code.name(),
                    code.meaning()
                )?;
                code.hint()
            }
        };
        write!(f, "; class={} rule={}; hint: {hint}", classification.class, classification.rule)
    }
}
