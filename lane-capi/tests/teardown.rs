//! The teardown through the C ABI, on the fake libascendcl (S-7, L-15): a stream destroy that
//! fails at close is retried at once and once more by `run_lane_destroy`, and what still
//! survives is named in the close report (`streams_left`, each stream's code, the teardown
//! line), which the fake's own count of live streams confirms. The fake's
//! `aclrtDestroyStream` fails on cue (`Control::fail_call`): the teardown destroys the AICPU
//! stream, then the AICore stream; its retry and the destroy's last one go in the same order.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{Kernels, Via, control, text};
use run_lane::*;

/// Each run: a pair of 200 us fake kernels.
static KERNELS: Kernels = Kernels::healthy(Duration::from_micros(200));

const CODE: i32 = 507_901;

/// A lane on the fake that ran one run to its outcome, so both streams exist,
/// and was closed; the fake's `aclrtDestroyStream` then fails `failures` times in a row.
fn closed_lane_after_one_run(via: Via, failures: u32) -> *mut RunLane {
    let control = control();
    let lane = common::fake_lane(via, 0, &KERNELS, 5_000);
    let run = common::submit(lane).expect("run 1");
    common::assert_ok("run 1", &common::wait(lane, run));
    assert_eq!(control.counters().expect("counters").live_streams, 2);
    if failures > 0 {
        let rule = control.fail_call("aclrtDestroyStream", CODE, 0, failures);
        rule.expect("arm the fault");
    }
    // SAFETY: the report is optional.
    let closed = unsafe { run_lane_close(lane, std::ptr::null_mut()) };
    assert_eq!(closed, RunLaneStatus::Ok);
    lane
}

/// `run_lane_close` again until the report says `CLOSED` (the teardown ended), bounded.
fn report_once_closed(lane: *mut RunLane) -> RunLaneCloseReport {
    let start = Instant::now();
    loop {
        let mut report = run_lane::sized::init::<RunLaneCloseReport>();
        // SAFETY: a live handle and a writable report.
        let closed = unsafe { run_lane_close(lane, report.as_mut_ptr()) };
        assert_eq!(closed, RunLaneStatus::Ok);
        // SAFETY: written on OK.
        let report = unsafe { report.assume_init() };
        if report.state == RunLaneState::Closed {
            return report;
        }
        assert_eq!(report.streams_left, 0, "nothing is reported before the end");
        assert!(start.elapsed() < Duration::from_secs(30), "the teardown never ended");
        thread::yield_now();
    }
}

fn a_clean_teardown_reports_no_stream_left_and_leaves_the_fake_balanced(via: Via) {
    let _fake = common::fresh();
    let lane = closed_lane_after_one_run(via, 0);
    let report = common::destroy_with_report(lane);
    assert_eq!(report.state, RunLaneState::Closed);
    assert_eq!(report.streams_left, 0);
    assert_eq!((report.aicpu_stream_code, report.aicore_stream_code), (0, 0));
    assert_eq!(text(&report.teardown_line), "");
    assert!(control().counters().expect("counters").balanced());
    // SAFETY: any handle value is checked.
    let again = unsafe { run_lane_destroy_with_report(lane, std::ptr::null_mut()) };
    assert_eq!(again, RunLaneStatus::InvalidHandle, "the handle is gone");
}

fn streams_whose_every_destroy_fails_are_named_with_their_codes_and_the_fake_still_holds_them(
    via: Via,
) {
    let _fake = common::fresh();
    // Six failures: both streams' destroys, both retries, both of destroy's last destroys.
    let lane = closed_lane_after_one_run(via, 6);
    let interim = report_once_closed(lane);
    assert_eq!(interim.streams_left, 2, "both left after the teardown's retry");
    let report = common::destroy_with_report(lane);
    assert_eq!(report.state, RunLaneState::Closed);
    assert_eq!(report.streams_left, 2);
    assert_eq!((report.aicpu_stream_code, report.aicore_stream_code), (CODE, CODE));
    let line = text(&report.teardown_line);
    let first = "close left the AICPU stream: its every destroy failed, the last with ACL 507901";
    assert!(line.starts_with(first), "{line}");
    assert!(line.contains("; and the AICore stream: "), "{line}");
    assert!(line.contains("hint: "), "{line}");
    let counters = control().counters().expect("counters");
    assert_eq!(counters.live_streams, 2, "the report is the fake's truth");
    assert_eq!(counters.streams_destroyed, 0, "no destroy of the pair succeeded");
}

fn a_stream_the_teardown_left_is_named_by_a_later_close_and_destroyed_by_run_lane_destroy(
    via: Via,
) {
    let _fake = common::fresh();
    // Three failures: both first destroys and the AICPU stream's retry; the AICore retry
    // succeeds, and so does destroy's last destroy of the AICPU stream.
    let lane = closed_lane_after_one_run(via, 3);
    let interim = report_once_closed(lane);
    assert_eq!(interim.streams_left, 1);
    assert_eq!((interim.aicpu_stream_code, interim.aicore_stream_code), (CODE, 0));
    assert!(text(&interim.teardown_line).starts_with("close left the AICPU stream"));
    assert_eq!(control().counters().expect("counters").live_streams, 1);
    let report = common::destroy_with_report(lane);
    assert_eq!(report.streams_left, 0, "destroyed by the last retry");
    assert_eq!(text(&report.teardown_line), "");
    let balanced = control().counters().expect("counters").balanced();
    assert!(balanced, "nothing leaked");
}

common::on_each_backend!(
    a_clean_teardown_reports_no_stream_left_and_leaves_the_fake_balanced,
    streams_whose_every_destroy_fails_are_named_with_their_codes_and_the_fake_still_holds_them,
    a_stream_the_teardown_left_is_named_by_a_later_close_and_destroyed_by_run_lane_destroy,
);
