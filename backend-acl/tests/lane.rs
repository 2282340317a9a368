//! Whole lanes through `lane_driver::Driver` on `AclDevice` over the fake libascendcl, with a
//! tiny runner of our own (the fake's test-only kernels): runs complete in real time, a hung
//! kernel ends with its device code before the host deadline, the device's message reaches
//! the outcome line, and no path leaks a stream, an event or an allocation.

mod common;

use std::time::{Duration, Instant};

use backend_acl::{AclConfig, Library};
use lane_core::status_latch::{Class, Failure, RuntimeCode, Stage};
use lane_core::{LaneState, Outcome, Profile, ProfileSpec, TimingSource};
use lane_driver::Report;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, Outcome as Kernel};

use common::kernels::{
    FakeDriver, KERNEL, assert_poisoned_by, driver, failed, run_lane, verdict, with_spec,
};

#[test]
fn a_lane_runs_its_runs_on_the_fake_in_real_time_and_leaks_nothing() {
    let fake = common::fake();
    let mut d = driver(&fake, fake.config(), Vec::new());
    let reports = run_lane(&mut d, 12);
    assert_eq!(reports.len(), 12);
    for report in &reports {
        assert!(verdict(report).is_ok(), "{report}");
        let Outcome::Run(r) = report.outcome else { unreachable!() };
        let timing = r.timing.expect("the status read brought the timing buffer");
        assert!(timing.end_ns >= timing.start_ns + KERNEL.as_nanos() as u64 / 2, "{timing:?}");
    }
    assert_eq!(
        d.lane().state(),
        LaneState::Closed { device_lost: false, left: lane_core::StreamsLeft::NONE }
    );
    let c = fake.counters();
    assert_eq!(c.streams_created, 2, "one pair for the whole lane");
    assert_eq!(c.launches, 24);
    fake.assert_balanced();
}

#[test]
fn a_hung_kernel_ends_with_its_device_code_before_the_host_deadline_and_the_lane_recovers() {
    let fake = common::fake();
    let host_ns = 60_000_000_000;
    let spec = ProfileSpec {
        completion_timeout_ns: host_ns,
        device_op_timeout_ns: 300_000_000,
        ..Profile::a2a3().spec()
    };
    let config = fake.config_with(Profile::custom(spec).unwrap());
    let mut d = driver(&fake, config, vec![2]);
    let start = Instant::now();
    let reports = run_lane(&mut d, 4);
    assert!(
        start.elapsed() < Duration::from_nanos(host_ns),
        "the device op timeout ended the hang, not the host deadline"
    );
    assert!(verdict(&reports[0]).is_ok(), "{}", reports[0]);
    assert_eq!(failed(&reports[1]).code(), Some(507_014), "{}", reports[1]);
    // Run 3 was queued behind it (depth 2): run 2's synchronize covered it, so run 2's line
    // says a run queued behind may share the cause (L-8a); the poison takes run 3 down; run 4
    // runs after recovery.
    assert!(reports[1].to_string().contains("queued behind this one"), "{}", reports[1]);
    assert_poisoned_by("hung run 2", &reports, 3, 2);
    assert!(verdict(&reports[3]).is_ok(), "{}", reports[3]);
    // The fake's own text for the failed call is on run 2's line (and its poisoned run's).
    for report in &reports[1..3] {
        let line = report.to_string();
        assert!(line.contains("; device: fake libascendcl:") && line.contains("507014"), "{line}");
    }
    assert_eq!(fake.counters().force_resets, 1);
    fake.assert_balanced();
}

/// Five runs on `config`, with each of `symbols` failing once (at its first use and at a
/// later one): one outcome per run, and everything given back, except that a failed release
/// of `release` after close (no recovery) may leave that one resource alive (the lane is
/// closed and nothing retries it), as `alive` counts it.
fn assert_no_failing_call_leaks(
    config: fn(&common::Fake) -> AclConfig,
    symbols: &[&str],
    release: &[&str],
    alive: fn(&run_lane_fake_ascendcl::FakeCounters) -> u64,
) {
    for symbol in symbols {
        for skip in [0, 3] {
            let fake = common::fake();
            let mut d = driver(&fake, config(&fake), Vec::new());
            fake.control.fail_call(symbol, 507_899, skip, 1).unwrap();
            let reports = run_lane(&mut d, 5);
            assert_eq!(reports.len(), 5, "{symbol} skip {skip}: one outcome per run");
            let c = fake.counters();
            if release.contains(symbol) && c.force_resets == 0 {
                assert!(alive(&c) <= 1, "{symbol} skip {skip}: {c:#?}");
            } else {
                assert!(c.balanced(), "{symbol} skip {skip}: {c:#?}");
            }
        }
    }
}

#[test]
fn no_failing_call_leaks_a_stream_an_event_or_an_allocation_over_a_lane_lifetime() {
    assert_no_failing_call_leaks(
        common::Fake::config,
        &[
            "aclrtCreateStreamWithConfig",
            "aclrtCreateEventExWithFlag",
            "aclrtMalloc",
            "aclrtMemcpy",
            "aclrtRecordEvent",
            "aclrtSynchronizeEventWithTimeout",
            "aclrtDestroyStream",
            "aclrtDestroyEvent",
            "aclrtFree",
            "runlanefake_launch_run",
            "aclrtStreamWaitEvent",
            "aclrtSynchronizeStreamWithTimeout",
        ],
        &["aclrtDestroyStream", "aclrtDestroyEvent", "aclrtFree"],
        |c| c.live_streams + c.live_events + c.live_allocations,
    );
}

#[test]
fn with_copies_on_the_streams_no_failing_call_leaks_a_stream_an_event_an_allocation_or_pinned_memory()
 {
    // Each call the OnStream path adds.
    assert_no_failing_call_leaks(
        on_stream,
        &[
            "aclrtMallocHost",
            "aclrtMemcpyAsync",
            "aclrtStreamWaitEvent",
            "aclrtRecordEvent",
            "aclrtFreeHost",
        ],
        &["aclrtFreeHost"],
        |c| c.live_host_allocations,
    );
}

#[test]
fn a_failed_stream_creates_text_reaches_the_run_that_waited_to_launch() {
    let fake = common::fake();
    let mut d = driver(&fake, fake.config(), Vec::new());
    // 207008 (no stream resource) is not a device fault: only the waiting run fails.
    fake.control.fail_call("aclrtCreateStreamWithConfig", 207_008, 0, 1).unwrap();
    let reports = run_lane(&mut d, 2);
    let cause = verdict(&reports[0]).cause().copied().expect("run 1 failed");
    assert_eq!(cause.stage(), Some(Stage::StreamCreate));
    assert_eq!(
        reports[0].device_message.as_deref(),
        Some("fake libascendcl: aclrtCreateStreamWithConfig returned 207008")
    );
    assert!(verdict(&reports[1]).is_ok(), "{}", reports[1]);
    assert_eq!(reports[1].device_message, None);
    fake.assert_balanced();
}

/// A config whose profile is the probed one with both copies on the streams.
fn on_stream(fake: &common::Fake) -> AclConfig {
    with_spec(fake, fake.config(), |s| {
        s.copies = lane_core::CopyPath::OnStream;
    })
}

/// Synchronous copies on a profile without result records: its status read is a copy of its
/// own (with records, the status is read in the record's copy).
fn sync_without_records(fake: &common::Fake) -> AclConfig {
    with_spec(fake, fake.config(), |s| {
        s.verdict = lane_core::status_latch::VerdictChannel::StreamSync;
        s.launch_depth = 1;
    })
}

#[test]
fn a_failed_readback_enqueue_fails_its_run_at_the_status_read_as_a_failed_synchronous_read_does() {
    // Synchronous copies of a first run on a profile without records: the record region's
    // zeroing, the arm, the status read. On the streams: the arm, then the readback. Fail the
    // status read's.
    let failed_read = |config: fn(&common::Fake) -> AclConfig, symbol: &str, skip: u32| {
        let fake = common::fake();
        let mut d = driver(&fake, config(&fake), Vec::new());
        fake.control.fail_call(symbol, 507_899, skip, 1).unwrap();
        let reports = run_lane(&mut d, 1);
        let cause = verdict(&reports[0]).cause().copied().expect("run 1 failed");
        (cause, reports[0].to_string())
    };
    let (sync, sync_line) = failed_read(sync_without_records, "aclrtMemcpy", 2);
    let (on_stream, on_stream_line) = failed_read(on_stream, "aclrtMemcpyAsync", 1);
    assert_eq!(sync.stage(), Some(Stage::StatusRead));
    assert_eq!(on_stream, sync, "{on_stream_line}\n{sync_line}");
    assert_eq!(
        on_stream_line.split("; device:").next(),
        sync_line.split("; device:").next(),
        "the same outcome line"
    );
    // The device's text about the failed call reaches the outcome on both paths: on the
    // streams it was left by the enqueue at the launch, and kept for the status read.
    assert!(sync_line.contains("; device:"), "{sync_line}");
    assert!(on_stream_line.contains("; device:"), "{on_stream_line}");
}

/// Twelve runs at depth two (a 200 ms device op timeout under a 2 s host deadline), run 5's
/// `engine` kernel ending with `fault` and `symbol` failing once with `code` after `skip`
/// calls, if given: each run's report.
fn twelve(fault: Option<(u32, Kernel)>, call: Option<(&str, i32, u32)>) -> Vec<Report> {
    let fake = common::fake();
    let config = with_spec(&fake, fake.config(), |s| {
        s.device_op_timeout_ns = 200_000_000;
        s.completion_timeout_ns = 2_000_000_000;
    });
    let mut d = driver(&fake, config, Vec::new());
    d.runner_mut().faults.extend(fault.map(|(engine, ending)| (5, engine, ending)));
    if let Some((symbol, code, skip)) = call {
        fake.control.fail_call(symbol, code, skip, 1).unwrap();
    }
    let reports = run_lane(&mut d, 12);
    if call.is_some() {
        assert_eq!(fake.counters().force_resets, 1, "one recovery, for run 5");
    }
    fake.assert_balanced();
    assert_eq!(reports.len(), 12, "one outcome per run");
    reports
}

/// Run 5 failed with `code` at `stage`, poison; run 6 poisoned by it; every other run its
/// own `Ok` (runs 1 to 4 ahead of it, runs 7 to 12 after the recovery): no run before or
/// after inherits run 5's status.
fn assert_run_5_poisoned_alone(case: &str, reports: &[Report], stage: Stage, code: i32) {
    let cause = failed(&reports[4]);
    assert_eq!(cause.class(), Class::Poison, "{case}: {}", reports[4]);
    assert_eq!(cause.code(), Some(code), "{case}: {}", reports[4]);
    assert_eq!(cause.stage(), Some(stage), "{case}: {}", reports[4]);
    assert_poisoned_by(case, reports, 6, 5);
    for report in reports.iter().take(4).chain(reports.iter().skip(6)) {
        assert!(verdict(report).is_ok(), "{case}: {report}");
    }
}

#[test]
fn on_device_semantics_a_faulted_or_hung_run_is_never_ok_and_a_latch_fails_only_its_run() {
    for (engine, fault, poison_code) in [
        (ENGINE_AICPU, Kernel::Exception, Some(507_018)),
        (ENGINE_AICORE, Kernel::Exception, Some(507_015)),
        (ENGINE_AICORE, Kernel::Hang, Some(507_014)),
        (ENGINE_AICPU, Kernel::Hang, Some(507_017)),
        (ENGINE_AICPU, Kernel::Latch, None),
        (ENGINE_AICPU, Kernel::Silent, None),
    ] {
        let reports = twelve(Some((engine, fault)), None);
        let case = format!("engine {engine} {fault:?}");
        if let Some(code) = poison_code {
            // Run 6 was queued behind it, so run 5's synchronize covered it: run 5's line
            // says so (L-8a), and the poison takes run 6 down with run 5 as origin.
            assert_run_5_poisoned_alone(&case, &reports, Stage::StreamSync, code);
            assert!(
                reports[4].to_string().contains("queued behind this one"),
                "{case}: {}",
                reports[4]
            );
            continue;
        }
        let cause = verdict(&reports[4])
            .cause()
            .copied()
            .unwrap_or_else(|| panic!("{case}: {}", reports[4]));
        assert_eq!(cause.class(), Class::RunOnly, "{case}: {}", reports[4]);
        if fault == Kernel::Latch {
            assert!(
                matches!(cause.failure, Failure::Record { code: RuntimeCode::ScopeDeadlock, .. }),
                "{case}: {}",
                reports[4]
            );
        } else {
            assert_eq!(cause.failure, Failure::NoRecord, "{case}: {}", reports[4]);
        }
        // Every other run gets its own verdict: Ok (no later run inherits run 5's).
        for (i, report) in reports.iter().enumerate().filter(|(i, _)| *i != 4) {
            assert!(verdict(report).is_ok(), "{case}: run {}: {report}", i + 1);
        }
    }
}

/// Issue 24 §3: the notice calls are optional symbols. A library without any of them (an
/// older CANN, here the fake with them hidden) opens even with the monitor asked for, says
/// why there is no monitor, takes no stream ids, and runs its lane as any other.
#[test]
fn a_lane_on_a_library_without_the_notice_symbols_opens_with_the_monitor_unavailable_and_runs() {
    let fake = common::fake();
    let config = AclConfig {
        library: Library::PathHiding {
            path: fake.path.clone(),
            hidden: ascend_cl_sys::OPTIONAL_SYMBOLS.iter().map(|s| (*s).to_owned()).collect(),
        },
        notice_monitor: true,
        ..fake.config()
    };
    let mut d = driver(&fake, config, Vec::new());
    let monitor = d.device().notice_monitor().clone();
    assert_eq!(
        monitor,
        backend_acl::NoticeMonitor::Unavailable { symbol: "aclrtSetExceptionInfoCallback" }
    );
    let message = monitor.to_string();
    assert!(
        message.contains("not installed")
            && message.contains("lacks aclrtSetExceptionInfoCallback")
            && message.contains("forwards"),
        "says what is missing and what still works: {message}"
    );
    let reports = run_lane(&mut d, 6);
    assert_eq!(reports.len(), 6);
    assert!(reports.iter().all(|r| verdict(r).is_ok()), "{reports:?}");
    assert_eq!(d.device().stream_ids().count(), 0, "no aclrtStreamGetId, no ids");
    assert_eq!(fake.counters().streams_created, 2);
    fake.assert_balanced();
}

#[test]
fn a_failed_record_read_of_run_5_poisons_it_with_the_reads_code_after_a_clean_device_verdict() {
    // The driver's synchronous copies, in its (single-threaded, deterministic) order: each
    // slot's first use zeroes its record region, then every launch arms its slot; each run
    // that completes has its status and record read in one copy. Run 6 is launched (behind
    // run 5, depth two) before run 5's record is read, so ahead of that read come 2 zeroings,
    // 6 arms, and runs 1 to 4's reads.
    let reports = twelve(None, Some(("aclrtMemcpy", 507_899, 2 + 6 + 4)));
    // Its kernels published an ok record, unread: the device verdict is clean and the
    // record-read-failed row poisons with the read's code.
    assert_run_5_poisoned_alone("record read", &reports, Stage::RecordRead, 507_899);
}

#[test]
fn a_boundary_record_failing_after_run_5s_kernels_poisons_it_with_the_record_calls_code() {
    // Three records per run, in launch order: the start event (the fake gives event
    // timestamps) and core_done on the AICore stream, then the boundary on the AICPU stream
    // behind both kernels. Run 5's boundary is the fifteenth.
    // 107000 is no device code: the streams stay clean, so the code can only be the call's.
    let reports = twelve(None, Some(("aclrtRecordEvent", 107_000, 4 * 3 + 2)));
    // Unfenced: the device verdict (both streams clean) decides it, with the call's code at
    // the event record; run 6 never launches behind it and is poisoned by it.
    assert_run_5_poisoned_alone("boundary", &reports, Stage::EventRecord, 107_000);
}

/// Six runs (or four) at launch depth `depth` on `config`'s library: each run's device
/// timing, every run ok, with `event_timestamps` the device's say.
fn timings(
    depth: u8,
    config: fn(&common::Fake) -> AclConfig,
    stamps: bool,
) -> Vec<lane_core::DeviceTiming> {
    let fake = common::fake();
    let config = with_spec(&fake, config(&fake), |s| s.launch_depth = depth);
    let mut d: FakeDriver = driver(&fake, config, Vec::new());
    assert_eq!(lane_driver::Device::event_timestamps(d.device()), stamps);
    let reports = run_lane(&mut d, if stamps { 6 } else { 4 });
    fake.assert_balanced();
    reports
        .iter()
        .map(|report| {
            let Outcome::Run(r) = report.outcome else { panic!("unexpected {report}") };
            assert!(r.verdict.is_ok(), "{report}");
            r.timing.expect("a timing")
        })
        .collect()
}

/// Issue 45 item 7: the fake exports `aclrtEventGetTimestamp`, so every event is created with
/// `ACL_EVENT_TIME_LINE` and each run's device start and end are its start event's and its
/// boundary's timestamps; at depth one no run starts before its predecessor ended.
#[test]
fn on_the_fake_runs_are_timed_by_event_timestamps_and_at_depth_one_each_starts_after_the_previous_ended()
 {
    let timings = timings(1, common::Fake::config, true);
    assert_eq!(timings.len(), 6);
    for t in &timings {
        assert_eq!(t.source, TimingSource::EventTimestamps, "{t:?}");
        assert!(t.start_ns <= t.end_ns, "{t:?}");
        // The kernels ran between the two records (µs resolution).
        assert!(t.end_ns - t.start_ns + 1_000 >= KERNEL.as_nanos() as u64, "{t:?}");
    }
    for pair in timings.windows(2) {
        assert!(pair[1].start_ns >= pair[0].end_ns, "{pair:?}");
    }
}

/// Without `aclrtEventGetTimestamp` (an older CANN, here hidden) no event asks for a timeline
/// and each run is timed by its timing buffer, as before.
#[test]
fn a_library_without_event_timestamps_times_each_run_from_its_timing_buffer() {
    let hidden = |fake: &common::Fake| AclConfig {
        library: Library::PathHiding {
            path: fake.path.clone(),
            hidden: vec!["aclrtEventGetTimestamp".to_owned()],
        },
        ..fake.config()
    };
    for t in timings(2, hidden, false) {
        assert_eq!(t.source, TimingSource::TimingBuffer, "{t:?}");
    }
}
