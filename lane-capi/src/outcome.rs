//! Lane outcomes and close reports as their C structs, strings copied into fixed buffers.

use std::fmt;

use backend_acl::NoticeMonitor;
use core::ffi::c_char;
use lane_core::status_latch::{AclCode, Class, Stage};
use lane_core::{
    Cause, CloseReport, LaneState, Outcome, Overlap, PublicationResult, RunId, RunState, RunStatus,
    TimingSource, Verdict,
};
use lane_service::Report;

use crate::types::{
    RUN_LANE_HINT_BYTES, RUN_LANE_LINE_BYTES, RUN_LANE_NAME_BYTES, RUN_LANE_STAGE_BYTES,
    RUN_LANE_UNTAKEN_IDS, RunLaneClass, RunLaneCloseReport, RunLaneFinaliseVerdict, RunLaneItem,
    RunLaneNoticeMonitor, RunLaneNoticeMonitorReport, RunLaneOutcome, RunLaneOverlap,
    RunLaneRecoveryInfo, RunLaneRunState, RunLaneRunStatus, RunLaneStage, RunLaneState,
    RunLaneTimingSource, RunLaneVerdict,
};

/// Copies `text` into `buffer` NUL-terminated, cut at a character boundary if too long.
pub fn copy_str<const N: usize>(buffer: &mut [c_char; N], text: &str) {
    let mut end = text.len().min(N.saturating_sub(1));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    for (slot, byte) in buffer.iter_mut().zip(&text.as_bytes()[..end]) {
        *slot = *byte as c_char;
    }
    buffer[end..].fill(0);
}

/// A lane's notice monitor as its C report (`None`: the simulator, which installs none).
pub fn monitor_to_c(monitor: Option<&NoticeMonitor>) -> RunLaneNoticeMonitorReport {
    let mut report = RunLaneNoticeMonitorReport {
        size: size_of::<RunLaneNoticeMonitorReport>() as u32,
        state: RunLaneNoticeMonitor::NotAsked,
        code: 0,
        line: [0; RUN_LANE_LINE_BYTES],
    };
    let Some(monitor) = monitor else {
        copy_str(
            &mut report.line,
            "the simulator and a runtime's device table install no fault notice monitor \
             (fault_notice_monitor is for the ACL backend): forward notices with \
             run_lane_report_device_fault",
        );
        return report;
    };
    let forward = " (with run_lane_report_device_fault, from its own exception handler)";
    let tail;
    (report.state, report.code, tail) = match monitor {
        NoticeMonitor::NotAsked => (RunLaneNoticeMonitor::NotAsked, 0, ""),
        NoticeMonitor::Installed => (RunLaneNoticeMonitor::Installed, 0, ""),
        NoticeMonitor::Unavailable { .. } => (RunLaneNoticeMonitor::Unavailable, 0, forward),
        NoticeMonitor::Refused { code } => (RunLaneNoticeMonitor::Refused, *code, forward),
    };
    copy_str(&mut report.line, &format!("{monitor}{tail}"));
    report
}

/// The C stage of a status-latch stage.
const fn stage(stage: Option<Stage>) -> RunLaneStage {
    match stage {
        None => RunLaneStage::None,
        Some(Stage::StreamCreate) => RunLaneStage::StreamCreate,
        Some(Stage::StreamDestroy) => RunLaneStage::StreamDestroy,
        Some(Stage::AicoreLaunch) => RunLaneStage::AicoreLaunch,
        Some(Stage::AicpuLaunch) => RunLaneStage::AicpuLaunch,
        Some(Stage::EventRecord) => RunLaneStage::EventRecord,
        Some(Stage::EventWait) => RunLaneStage::EventWait,
        Some(Stage::StatusRead) => RunLaneStage::StatusRead,
        Some(Stage::CopyBack) => RunLaneStage::CopyBack,
        Some(Stage::Prepare) => RunLaneStage::Prepare,
        Some(Stage::DeviceDrain) => RunLaneStage::DeviceDrain,
        Some(Stage::Reset) => RunLaneStage::Reset,
        Some(Stage::Probe) => RunLaneStage::Probe,
        Some(Stage::Upload) => RunLaneStage::Upload,
        Some(Stage::RecordRead) => RunLaneStage::RecordRead,
        Some(Stage::StreamSync) => RunLaneStage::StreamSync,
        Some(Stage::FaultNotice) => RunLaneStage::FaultNotice,
    }
}

/// An empty outcome (what `run_lane_poll` leaves when nothing is ready): verdict `NONE`, id
/// 0 (no item has it), `size` this library's.
pub const fn empty_outcome() -> RunLaneOutcome {
    RunLaneOutcome {
        size: size_of::<RunLaneOutcome>() as u32,
        item: RunLaneItem::Run,
        id: 0,
        has_tag: false,
        tag: 0,
        verdict: RunLaneVerdict::None,
        failure_class: RunLaneClass::None,
        has_code: false,
        code: 0,
        stage: RunLaneStage::None,
        origin: 0,
        has_timing: false,
        device_start_ns: 0,
        device_end_ns: 0,
        code_name: [0; RUN_LANE_NAME_BYTES],
        stage_name: [0; RUN_LANE_STAGE_BYTES],
        hint: [0; RUN_LANE_HINT_BYTES],
        failure_line: [0; RUN_LANE_LINE_BYTES],
        run_user: core::ptr::null_mut(),
        declines: 0,
        has_key: false,
        key: 0,
        overlap: RunLaneOverlap::Unknown,
        timing_source: RunLaneTimingSource::TimingBuffer,
    }
}

/// The C class of a failure class.
const fn class(class: Class) -> RunLaneClass {
    match class {
        Class::RunOnly => RunLaneClass::RunOnly,
        Class::Poison => RunLaneClass::Poison,
    }
}

/// Fills the failure fields of `out` from `cause`, and the origin of a poisoned item;
/// `line` is the item's failure line (formatted here: only a failure allocates). Returns the
/// item's verdict: poisoned with an origin, else failed.
fn set_cause(
    out: &mut RunLaneOutcome,
    cause: &Cause,
    origin: Option<RunId>,
    line: &dyn fmt::Display,
) -> RunLaneVerdict {
    out.failure_class = class(cause.class());
    out.has_code = cause.code().is_some();
    out.code = cause.code().unwrap_or(0);
    out.stage = stage(cause.stage());
    copy_str(&mut out.code_name, cause.name());
    copy_str(&mut out.stage_name, cause.stage().map_or("", Stage::name));
    copy_str(&mut out.hint, cause.hint());
    copy_str(&mut out.failure_line, &line.to_string());
    match origin {
        Some(origin) => {
            out.origin = origin.0;
            RunLaneVerdict::Poisoned
        }
        None => RunLaneVerdict::Failed,
    }
}

/// The C outcome of `outcome`. The failure line is the lane's own `Display` of the outcome
/// (for a poisoned item it names the origin's line).
pub fn to_c(outcome: &Outcome) -> RunLaneOutcome {
    outcome_to_c(outcome, outcome)
}

/// The C outcome of a delivered report: as [`to_c`], with the device's text about the failed
/// call (`aclGetRecentErrMsg`) appended to the failure line when the device left one.
pub fn report_to_c(report: &Report) -> RunLaneOutcome {
    outcome_to_c(&report.outcome, report)
}

/// The C outcome of `outcome`, whose failure line is `line`'s `Display` (formatted only for
/// a failed or poisoned item: an `Ok` outcome allocates nothing).
fn outcome_to_c(outcome: &Outcome, line: &dyn fmt::Display) -> RunLaneOutcome {
    let mut out = empty_outcome();
    out.id = outcome.seq();
    match outcome {
        Outcome::Run(run) => {
            out.item = RunLaneItem::Run;
            out.has_tag = run.tag.is_some();
            out.tag = run.tag.map_or(0, |t| t.0);
            out.declines = run.declines;
            out.has_key = run.key.is_some();
            out.key = run.key.map_or(0, |k| k.0);
            if let Some(timing) = run.timing {
                out.has_timing = true;
                out.device_start_ns = timing.start_ns;
                out.device_end_ns = timing.end_ns;
                out.timing_source = match timing.source {
                    TimingSource::TimingBuffer => RunLaneTimingSource::TimingBuffer,
                    TimingSource::EventTimestamps => RunLaneTimingSource::EventTimestamps,
                };
            }
            out.overlap = match run.overlap() {
                Overlap::Unknown => RunLaneOverlap::Unknown,
                Overlap::NotQueued => RunLaneOverlap::NotQueued,
                Overlap::Proven => RunLaneOverlap::Proven,
                Overlap::NotProven => RunLaneOverlap::NotProven,
            };
            out.verdict = match run.verdict {
                Verdict::Ok => RunLaneVerdict::Ok,
                Verdict::Cancelled => RunLaneVerdict::Cancelled,
                Verdict::Failed { cause } => set_cause(&mut out, &cause, None, line),
                Verdict::Poisoned { cause, origin } => {
                    set_cause(&mut out, &cause, Some(origin), line)
                }
            };
        }
        Outcome::Publication(publication) => {
            out.item = RunLaneItem::Publication;
            out.verdict = match publication.result {
                PublicationResult::Uploaded => RunLaneVerdict::Ok,
                PublicationResult::Cancelled => RunLaneVerdict::Cancelled,
                PublicationResult::Failed { cause } => set_cause(&mut out, &cause, None, line),
                PublicationResult::Poisoned { cause, origin } => {
                    set_cause(&mut out, &cause, Some(origin), line)
                }
            };
        }
    }
    out
}

/// What `finalise_verdict` is told of `verdict`, with the run's copy-back (its request's, for
/// an `Ok` run): a poisoned run is never finalised, so it never comes here.
pub fn finalise_verdict_to_c(verdict: &Verdict, copy_back: bool) -> RunLaneFinaliseVerdict {
    let (verdict, cause) = match verdict {
        Verdict::Ok => (RunLaneVerdict::Ok, None),
        Verdict::Cancelled => (RunLaneVerdict::Cancelled, None),
        Verdict::Failed { cause } => (RunLaneVerdict::Failed, Some(cause)),
        Verdict::Poisoned { cause, .. } => (RunLaneVerdict::Poisoned, Some(cause)),
    };
    let code = cause.and_then(Cause::code);
    RunLaneFinaliseVerdict {
        copy_back,
        verdict,
        failure_class: cause.map_or(RunLaneClass::None, |cause| class(cause.class())),
        has_code: code.is_some(),
        code: code.unwrap_or(0),
        stage: stage(cause.and_then(Cause::stage)),
    }
}

/// A run's state as `run_lane_run_state` reports it.
pub fn run_status_to_c(status: &RunStatus) -> RunLaneRunStatus {
    RunLaneRunStatus {
        size: size_of::<RunLaneRunStatus>() as u32,
        state: match status.state {
            RunState::Queued => RunLaneRunState::Queued,
            RunState::Preparing => RunLaneRunState::Preparing,
            RunState::Prepared => RunLaneRunState::Prepared,
            RunState::Launched => RunLaneRunState::Launched,
            RunState::Done => RunLaneRunState::Done,
        },
        held: status.held,
        declines: status.declines,
        has_key: status.key.is_some(),
        key: status.key.map_or(0, |k| k.0),
    }
}

/// What took the device down, as `on_poison` and `before_reset` receive it: the origin run
/// (none for a fault notice) and the cause's code, stage, name and failure line.
pub fn recovery_info(origin: Option<RunId>, cause: &Cause) -> RunLaneRecoveryInfo {
    let mut info = RunLaneRecoveryInfo {
        has_origin: origin.is_some(),
        origin: origin.map_or(0, |run| run.0),
        has_code: cause.code().is_some(),
        code: cause.code().unwrap_or(0),
        stage: stage(cause.failure.stage()),
        code_name: [0; RUN_LANE_NAME_BYTES],
        failure_line: [0; RUN_LANE_LINE_BYTES],
    };
    copy_str(&mut info.code_name, cause.name());
    let line = match origin {
        Some(run) => cause.line(run),
        None => format!("a device fault notice{}", cause.detail()),
    };
    copy_str(&mut info.failure_line, &line);
    info
}

/// The C close report of `report`.
pub fn close_to_c(report: &CloseReport) -> RunLaneCloseReport {
    let mut out = RunLaneCloseReport {
        size: size_of::<RunLaneCloseReport>() as u32,
        state: match report.state {
            LaneState::Open => RunLaneState::Open,
            LaneState::Recovering { .. } => RunLaneState::Recovering,
            LaneState::Lost => RunLaneState::Lost,
            LaneState::Closing => RunLaneState::Closing,
            LaneState::ReleasingStreams { .. } => RunLaneState::ReleasingStreams,
            LaneState::Closed { .. } => RunLaneState::Closed,
            LaneState::Suspect { .. } => RunLaneState::Suspect,
            LaneState::Unusable => RunLaneState::Unusable,
        },
        device_lost: report.device_lost,
        poisoned: report.poison.is_some(),
        poison_origin: 0,
        poison_line: [0; RUN_LANE_LINE_BYTES],
        streams_left: report.streams_left.count(),
        aicpu_stream_code: report.streams_left.aicpu.map_or(0, AclCode::raw),
        aicore_stream_code: report.streams_left.aicore.map_or(0, AclCode::raw),
        teardown_line: [0; RUN_LANE_LINE_BYTES],
        noticed: report.notice.is_some(),
        notice_device: report.notice.map_or(0, |n| n.device),
        notice_stream_id: report.notice.map_or(0, |n| n.stream_id),
        notice_code: report.notice.map_or(0, |n| n.code.raw()),
        threads_left: 0,
        untaken: 0,
        untaken_ids: [0; RUN_LANE_UNTAKEN_IDS],
    };
    if let Some(poison) = report.poison {
        out.poison_origin = poison.origin.0;
        copy_str(&mut out.poison_line, &poison.cause.line(RunId(poison.origin.0)));
    }
    if !report.streams_left.is_empty() {
        copy_str(&mut out.teardown_line, &report.streams_left.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::status_latch::Failure;
    use lane_core::{RunOutcome, Tag};
    use std::ffi::CStr;

    fn text<const N: usize>(buffer: &[c_char; N]) -> String {
        // SAFETY: copy_str always leaves a NUL inside the buffer.
        unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned()
    }

    /// Run `run`, tagged `tag`, failed with ACL code `code` at `stage`, and its cause.
    fn failed(run: u64, tag: Option<Tag>, stage: Stage, code: i32) -> (Cause, Outcome) {
        let code = AclCode::check(code).unwrap_err();
        let cause = Cause::of(Failure::Acl { stage, code });
        let outcome = Outcome::Run(RunOutcome {
            run: RunId(run),
            tag,
            verdict: Verdict::Failed { cause },
            timing: None,
            key: None,
            declines: 0,
        });
        (cause, outcome)
    }

    #[test]
    fn a_long_string_is_cut_at_a_character_boundary_and_terminated() {
        let mut buffer = [1 as c_char; 6];
        copy_str(&mut buffer, "abcd\u{e9}f");
        assert_eq!(text(&buffer), "abcd");
        copy_str(&mut buffer, "ab");
        assert_eq!(text(&buffer), "ab");
        assert_eq!(buffer[5], 0);
    }

    #[test]
    fn a_failed_run_carries_its_code_stage_hint_and_failure_line() {
        let (cause, outcome) = failed(4, Some(Tag(40)), Stage::Prepare, 207_001);
        let c = to_c(&outcome);
        assert_eq!(c.verdict, RunLaneVerdict::Failed);
        assert_eq!((c.id, c.has_tag, c.tag), (4, true, 40));
        assert_eq!((c.has_code, c.code), (true, 207_001));
        assert_eq!(c.stage, RunLaneStage::Prepare);
        assert_eq!(text(&c.stage_name), "prepare");
        assert_eq!(text(&c.code_name), cause.name());
        assert_eq!(text(&c.hint), cause.hint());
        assert_eq!(text(&c.failure_line), cause.line(RunId(4)));
        assert!(text(&c.failure_line).starts_with("run 4 failed"));
    }

    #[test]
    fn an_ok_run_has_no_failure_fields() {
        let outcome = Outcome::Run(RunOutcome {
            run: RunId(1),
            tag: None,
            verdict: Verdict::Ok,
            timing: Some(lane_core::DeviceTiming {
                start_ns: 10,
                end_ns: 20,
                ..Default::default()
            }),
            key: None,
            declines: 0,
        });
        let c = to_c(&outcome);
        assert_eq!(c.verdict, RunLaneVerdict::Ok);
        assert_eq!(c.failure_class, RunLaneClass::None);
        assert!(!c.has_code && !c.has_tag);
        assert_eq!((c.has_timing, c.device_start_ns, c.device_end_ns), (true, 10, 20));
        assert_eq!(text(&c.failure_line), "");
    }

    #[test]
    fn a_close_report_names_each_stream_left_with_its_code_and_line() {
        let left = lane_core::StreamsLeft { aicpu: None, aicore: AclCode::from_raw(507_901) };
        let report = CloseReport {
            state: LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE },
            poison: None,
            notice: None,
            device_lost: false,
            streams_left: left,
        };
        let c = close_to_c(&report);
        assert_eq!(c.state, RunLaneState::Closed);
        assert_eq!(c.streams_left, 1);
        assert_eq!((c.aicpu_stream_code, c.aicore_stream_code), (0, 507_901));
        assert_eq!(text(&c.teardown_line), left.to_string());
        assert!(text(&c.teardown_line).starts_with("close left the AICore stream"));
        let clean =
            close_to_c(&CloseReport { streams_left: lane_core::StreamsLeft::NONE, ..report });
        assert_eq!(clean.streams_left, 0);
        assert_eq!((clean.aicpu_stream_code, clean.aicore_stream_code), (0, 0));
        assert_eq!(text(&clean.teardown_line), "");
    }

    #[test]
    fn a_reports_device_text_ends_the_failure_line() {
        let (cause, outcome) = failed(2, None, Stage::EventWait, 507_015);
        let report =
            Report { outcome, device_message: Some("EZ9999: AICore exception".to_owned()) };
        let c = report_to_c(&report);
        assert_eq!(text(&c.failure_line), report.to_string());
        assert!(text(&c.failure_line).ends_with("; device: EZ9999: AICore exception"));
        let plain = report_to_c(&Report { outcome, device_message: None });
        assert_eq!(text(&plain.failure_line), cause.line(RunId(2)));
    }

    #[test]
    fn each_notice_monitor_maps_to_its_state_with_a_line_and_the_refusals_code() {
        let unavailable = NoticeMonitor::Unavailable { symbol: "aclrtSetExceptionInfoCallback" };
        let refused = NoticeMonitor::Refused { code: 507_899 };
        for (monitor, state, code, words) in [
            (Some(NoticeMonitor::NotAsked), RunLaneNoticeMonitor::NotAsked, 0, "not asked for"),
            (Some(NoticeMonitor::Installed), RunLaneNoticeMonitor::Installed, 0, "is installed"),
            (
                Some(unavailable),
                RunLaneNoticeMonitor::Unavailable,
                0,
                "lacks aclrtSetExceptionInfoCallback",
            ),
            (Some(refused), RunLaneNoticeMonitor::Refused, 507_899, "returned 507899"),
            (None, RunLaneNoticeMonitor::NotAsked, 0, "simulator"),
        ] {
            let c = monitor_to_c(monitor.as_ref());
            assert_eq!((c.state, c.code), (state, code), "{monitor:?}");
            let line = text(&c.line);
            assert!(line.contains(words), "{monitor:?}: {line}");
            if !matches!(monitor, Some(NoticeMonitor::Installed)) {
                assert!(
                    line.contains("run_lane_report_device_fault"),
                    "says how notices still reach the lane: {line}"
                );
            }
        }
    }
}
