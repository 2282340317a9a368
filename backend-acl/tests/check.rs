//! The device check run against the fake libascendcl, as `cargo xtask device-check --lib`
//! runs it: every device-side step passes, kernels are reported as not checked, and a
//! machine without a library or a device gets one line, never a crash.

mod common;

use std::path::PathBuf;

use backend_acl::Library;
use backend_acl::check::{self, CheckOptions, CheckReport, Step, Verdict};
use lane_core::{Overlap, TimingSource};

/// The overrun step's copies on the fake, whose device memory is the host's: small.
const OVERRUN_BYTES: usize = 16 << 20;

/// The overlap step's runs per depth and its stand-in copies on the fake: few and small.
const OVERLAP_RUNS: usize = 12;
const OVERLAP_BYTES: usize = 4 << 20;

fn options(library: Library) -> CheckOptions {
    CheckOptions {
        library,
        device_id: 0,
        overrun_copy_bytes: OVERRUN_BYTES,
        overlap_runs: OVERLAP_RUNS,
        overlap_copy_bytes: OVERLAP_BYTES,
    }
}

/// The check on the fake's device 0.
fn on_fake(fake: &common::Fake) -> CheckReport {
    check::run(&options(Library::Path(fake.path.clone())))
}

fn step<'a>(report: &'a CheckReport, name: &str) -> &'a Step {
    report
        .steps
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no step {name}: {report}"))
}

#[test]
fn every_device_side_check_passes_on_the_fake_and_kernels_are_not_checked() {
    let fake = common::fake();
    let report = on_fake(&fake);
    let text = report.to_string();
    assert!(report.passed(), "{text}");
    let names: Vec<&str> = report.steps.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "probe",
            "op timeout",
            "streams",
            "stream ids",
            "events",
            "stream synchronize",
            "event wait overrun",
            "copies",
            "overlap",
            "force reset then probe",
            "devlib refusal",
            "kernels",
            "verdict channel"
        ],
        "{text}"
    );
    for name in ["kernels", "verdict channel"] {
        let step = step(&report, name);
        assert_eq!(step.verdict, Verdict::NotChecked);
        assert!(step.detail.contains("docs/hardware.md"));
    }
    let channel = report.steps.last().unwrap();
    assert!(channel.detail.contains("fatal-status"), "{text}");
    assert!(text.contains("SoC Ascend910B1, profile a2a3"), "{text}");
    assert!(text.ends_with("device-check: 11 passed, 0 failed, 2 not checked\n"), "{text}");
    let c = fake.counters();
    assert_eq!(c.force_resets, 1);
    fake.assert_balanced();
}

#[test]
fn a_failing_call_fails_its_step_with_the_code_and_the_librarys_message() {
    let fake = common::fake();
    fake.control.fail_call("aclrtRecordEvent", 507_899, 0, 1).unwrap();
    let report = on_fake(&fake);
    assert!(!report.passed());
    let events = step(&report, "events");
    assert_eq!(events.verdict, Verdict::Failed);
    assert!(
        events.detail.contains("507899") && events.detail.contains("aclrtRecordEvent"),
        "{}",
        events.detail
    );
    // The other steps still ran and passed, and the failed step released what it made.
    assert!(report.steps.iter().filter(|s| s.verdict == Verdict::Passed).count() >= 6);
    fake.assert_balanced();
}

#[test]
fn no_library_is_one_line_and_a_failure() {
    let report =
        check::run(&options(Library::Path(PathBuf::from("/nonexistent/lib64/libascendcl.so"))));
    assert!(!report.passed());
    let text = report.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("device-check: no CANN install found"), "{text}");
}

#[test]
fn no_device_or_a_bad_device_id_is_one_line_and_a_failure() {
    let fake = common::fake();
    let options = CheckOptions { device_id: 16, ..options(Library::Path(fake.path.clone())) };
    let text = check::run(&options).to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("device id 16 is out of range"), "{text}");
    fake.control.set_device_count(0).unwrap();
    let report = check::run(&CheckOptions { device_id: 0, ..options });
    assert!(!report.passed());
    assert!(report.to_string().contains("no Ascend device visible"));
}

#[test]
fn a_stream_synchronize_that_accepts_a_zero_timeout_fails_its_step() {
    let fake = common::fake();
    // The fake refuses 0 as ACL does; make the first synchronize answer 0 instead.
    fake.control.fail_call("aclrtSynchronizeStreamWithTimeout", 0, 0, 1).unwrap();
    let report = on_fake(&fake);
    let step = step(&report, "stream synchronize");
    assert_eq!(step.verdict, Verdict::Failed, "{report}");
}

#[test]
fn the_event_wait_overrun_step_prints_how_far_past_each_timeout_the_wait_returned() {
    // WAITER_GRACE_NS must cover a wait's overrun (device-truth §5): the step measures it,
    // here on the fake, whose copies outlast the short timeouts.
    let fake = common::fake();
    let report = on_fake(&fake);
    let step = step(&report, "event wait overrun");
    assert_eq!(step.verdict, Verdict::Passed, "{}", step.detail);
    for timeout in ["1 ms timeout", "10 ms timeout"] {
        assert!(step.detail.contains(timeout), "{}", step.detail);
    }
    assert!(step.detail.contains("past it"), "{}", step.detail);
    assert!(step.detail.contains("grace is 6000 ms"), "{}", step.detail);
    fake.assert_balanced();
}

/// Issue 45 item 7: the overlap step runs the lane at depth one, then at depth two, in one
/// process, its stand-in kernels copies on the run's streams, and gives each run's timing from
/// the event timestamps; at depth one no run is queued, at depth two the queued runs' launches
/// return while the run ahead is still on the device.
#[test]
fn the_overlap_step_times_depth_one_and_depth_two_by_event_timestamps() {
    let fake = common::fake();
    let report = on_fake(&fake);
    let step = step(&report, "overlap");
    assert_eq!(step.verdict, Verdict::Passed, "{}", step.detail);
    let depths: Vec<u8> = report.overlap.iter().map(|a| a.depth).collect();
    assert_eq!(depths, [1, 2]);
    for arm in &report.overlap {
        assert_eq!(arm.timings.len(), OVERLAP_RUNS);
        for t in &arm.timings {
            assert_eq!(t.source, TimingSource::EventTimestamps, "{t:?}");
            assert!(t.start_ns <= t.end_ns, "{t:?}");
        }
    }
    let one = &report.overlap[0].timings;
    assert!(one.iter().all(|t| t.overlap == Overlap::NotQueued), "{one:?}");
    for pair in one.windows(2) {
        assert!(pair[1].start_ns >= pair[0].end_ns, "{pair:?}");
    }
    let two = &report.overlap[1].timings;
    assert!(two.iter().any(|t| t.overlap == Overlap::Proven), "{two:?}");
    fake.assert_balanced();
}

/// Without `aclrtEventGetTimestamp` the runs cannot be timed on the device's clock: the
/// overlap step is not checked, and the check still passes.
#[test]
fn without_event_timestamps_the_overlap_step_is_not_checked() {
    let fake = common::fake();
    let report = check::run(&options(Library::PathHiding {
        path: fake.path.clone(),
        hidden: vec!["aclrtEventGetTimestamp".to_owned()],
    }));
    let step = step(&report, "overlap");
    assert_eq!(step.verdict, Verdict::NotChecked, "{}", step.detail);
    assert!(step.detail.contains("aclrtEventGetTimestamp"), "{}", step.detail);
    assert!(report.overlap.is_empty());
    assert!(report.passed(), "{report}");
    fake.assert_balanced();
}
