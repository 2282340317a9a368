//! Whole lanes through `lane_driver::Driver` on `AclDevice` over the fake libascendcl, with a
//! tiny runner of our own (the fake's test-only kernels): runs complete in real time, a hung
//! kernel ends with its device code before the host deadline, the device's message reaches
//! the outcome line, and no path leaks a stream, an event or an allocation.

mod common;

use std::time::{Duration, Instant};

use backend_acl::AclConfig;
use lane_core::{LaneState, Outcome, Profile, ProfileSpec, RunId, Verdict};
use lane_driver::Report;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, Outcome as Kernel};

use common::kernels::{FakeDriver, KERNEL, driver, run_lane};

fn verdict(report: &Report) -> Verdict {
    match report.outcome {
        Outcome::Run(r) => r.verdict,
        Outcome::Publication(p) => panic!("unexpected {p:?}"),
    }
}

#[test]
fn a_lane_runs_its_runs_on_the_fake_in_real_time_and_leaks_nothing() {
    let fake = common::fake();
    let mut d = driver(&fake, fake.config(), Vec::new());
    let reports = run_lane(&mut d, 12);
    assert_eq!(reports.len(), 12);
    for report in &reports {
        assert!(verdict(report).is_ok(), "{report}");
        let Outcome::Run(r) = report.outcome else {
            unreachable!()
        };
        let timing = r.timing.expect("the status read brought the timing buffer");
        assert!(
            timing.end_ns >= timing.start_ns + KERNEL.as_nanos() as u64 / 2,
            "{timing:?}"
        );
    }
    assert_eq!(
        d.lane().state(),
        LaneState::Closed {
            device_lost: false,
            left: lane_core::StreamsLeft::NONE,
        }
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
    let config = AclConfig {
        profile: Some(Profile::custom(spec).unwrap()),
        ..fake.config()
    };
    let mut d = driver(&fake, config, vec![2]);
    let start = Instant::now();
    let reports = run_lane(&mut d, 4);
    assert!(
        start.elapsed() < Duration::from_nanos(host_ns),
        "the device op timeout ended the hang, not the host deadline"
    );
    let verdicts: Vec<Verdict> = reports.iter().map(verdict).collect();
    assert!(verdicts[0].is_ok(), "{}", reports[0]);
    let cause = verdicts[1].cause().expect("run 2 failed");
    assert_eq!(cause.code(), Some(507_014), "{}", reports[1]);
    assert!(
        matches!(verdicts[1], Verdict::Failed { .. }),
        "{}",
        reports[1]
    );
    // Run 3 was queued behind it (depth 2): run 2's synchronize covered it, so run 2's line
    // says a run queued behind may share the cause (L-8a); the poison takes run 3 down; run 4
    // runs after recovery.
    assert!(
        reports[1].to_string().contains("queued behind this one"),
        "{}",
        reports[1]
    );
    assert!(
        matches!(
            verdicts[2],
            Verdict::Poisoned {
                origin: RunId(2),
                ..
            }
        ),
        "{}",
        reports[2]
    );
    assert!(verdicts[3].is_ok(), "{}", reports[3]);
    // The fake's own text for the failed call is on run 2's line (and its poisoned run's).
    for report in &reports[1..3] {
        let line = report.to_string();
        assert!(
            line.contains("; device: fake libascendcl:") && line.contains("507014"),
            "{line}"
        );
    }
    let c = fake.counters();
    assert_eq!(c.force_resets, 1);
    fake.assert_balanced();
}

#[test]
fn no_failing_call_leaks_a_stream_an_event_or_an_allocation_over_a_lane_lifetime() {
    // Each call of the lane's path failing once, at its first use and at a later one.
    let symbols = [
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
    ];
    for symbol in symbols {
        for skip in [0, 3] {
            let fake = common::fake();
            let mut d = driver(&fake, fake.config(), Vec::new());
            fake.control.fail_call(symbol, 507_899, skip, 1).unwrap();
            let reports = run_lane(&mut d, 5);
            assert_eq!(
                reports.len(),
                5,
                "{symbol} skip {skip}: one outcome per run"
            );
            let c = fake.counters();
            // A failed destroy or free after close leaves that one resource alive: the lane
            // is closed and nothing retries it. Everything else is given back.
            let release_failed = matches!(
                symbol,
                "aclrtDestroyStream" | "aclrtDestroyEvent" | "aclrtFree"
            );
            if release_failed && c.force_resets == 0 {
                let alive = c.live_streams + c.live_events + c.live_allocations;
                assert!(alive <= 1, "{symbol} skip {skip}: {c:#?}");
            } else {
                assert!(c.balanced(), "{symbol} skip {skip}: {c:#?}");
            }
        }
    }
}

#[test]
fn a_failed_stream_creates_text_reaches_the_run_that_waited_to_launch() {
    let fake = common::fake();
    let mut d = driver(&fake, fake.config(), Vec::new());
    // 207008 (no stream resource) is not a device fault: only the waiting run fails.
    fake.control
        .fail_call("aclrtCreateStreamWithConfig", 207_008, 0, 1)
        .unwrap();
    let reports = run_lane(&mut d, 2);
    let cause = verdict(&reports[0]).cause().copied().expect("run 1 failed");
    assert_eq!(
        cause.stage(),
        Some(lane_core::status_latch::Stage::StreamCreate)
    );
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
    let (_, probed) = fake.open();
    let profile = Profile::custom(ProfileSpec {
        copies: lane_core::CopyPath::OnStream,
        ..probed.spec()
    })
    .expect("a valid profile");
    AclConfig {
        profile: Some(profile),
        ..fake.config()
    }
}

#[test]
fn with_copies_on_the_streams_no_failing_call_leaks_a_stream_an_event_an_allocation_or_pinned_memory()
 {
    // Each call the OnStream path adds failing once, at its first use and at a later one.
    let symbols = [
        "aclrtMallocHost",
        "aclrtMemcpyAsync",
        "aclrtStreamWaitEvent",
        "aclrtRecordEvent",
        "aclrtFreeHost",
    ];
    for symbol in symbols {
        for skip in [0, 3] {
            let fake = common::fake();
            let mut d = driver(&fake, on_stream(&fake), Vec::new());
            fake.control.fail_call(symbol, 507_899, skip, 1).unwrap();
            let reports = run_lane(&mut d, 5);
            assert_eq!(
                reports.len(),
                5,
                "{symbol} skip {skip}: one outcome per run"
            );
            let c = fake.counters();
            if symbol == "aclrtFreeHost" && c.force_resets == 0 {
                // A failed free after close leaves that one buffer alive (nothing retries it).
                assert!(c.live_host_allocations <= 1, "{symbol} skip {skip}: {c:#?}");
            } else {
                assert!(c.balanced(), "{symbol} skip {skip}: {c:#?}");
            }
        }
    }
}

/// Synchronous copies on a profile without result records: its status read is a copy of its
/// own (with records, the status is read in the record's copy).
fn sync_without_records(fake: &common::Fake) -> AclConfig {
    let (_, probed) = fake.open();
    let profile = Profile::custom(ProfileSpec {
        verdict: lane_core::status_latch::VerdictChannel::StreamSync,
        launch_depth: 1,
        ..probed.spec()
    })
    .expect("a valid profile");
    AclConfig {
        profile: Some(profile),
        ..fake.config()
    }
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
    assert_eq!(
        sync.stage(),
        Some(lane_core::status_latch::Stage::StatusRead)
    );
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

/// A driver on `fake` at the profile's depth two, with a 200 ms device op timeout under a
/// 2 s host deadline: the twelve-run tests' lane.
fn depth_two_driver(fake: &common::Fake) -> FakeDriver {
    let profile = Profile::custom(ProfileSpec {
        device_op_timeout_ns: 200_000_000,
        completion_timeout_ns: 2_000_000_000,
        ..fake.open().1.spec()
    })
    .expect("a valid profile");
    let config = AclConfig {
        profile: Some(profile),
        ..fake.config()
    };
    driver(fake, config, Vec::new())
}

/// Twelve runs at depth two with `fault` on run 5's `engine`: each run's verdict.
fn twelve_with_run_5(engine: u32, fault: Kernel) -> Vec<Report> {
    let fake = common::fake();
    let mut d = depth_two_driver(&fake);
    d.runner_mut().faults.push((5, engine, fault));
    let reports = run_lane(&mut d, 12);
    fake.assert_balanced();
    reports
}

#[test]
fn on_device_semantics_a_faulted_or_hung_run_is_never_ok_and_a_latch_fails_only_its_run() {
    use lane_core::status_latch::{Class, Failure, RuntimeCode, Stage};
    let cases = [
        (ENGINE_AICPU, Kernel::Exception, Some(507_018)),
        (ENGINE_AICORE, Kernel::Exception, Some(507_015)),
        (ENGINE_AICORE, Kernel::Hang, Some(507_014)),
        (ENGINE_AICPU, Kernel::Hang, Some(507_017)),
        (ENGINE_AICPU, Kernel::Latch, None),
        (ENGINE_AICPU, Kernel::Silent, None),
    ];
    for (engine, fault, poison_code) in cases {
        let reports = twelve_with_run_5(engine, fault);
        let case = format!("engine {engine} {fault:?}");
        assert_eq!(reports.len(), 12, "{case}");
        let five = verdict(&reports[4]);
        match poison_code {
            Some(code) => {
                let cause = five
                    .cause()
                    .copied()
                    .unwrap_or_else(|| panic!("{case}: {}", reports[4]));
                assert_eq!(cause.class(), Class::Poison, "{case}: {}", reports[4]);
                assert_eq!(cause.code(), Some(code), "{case}: {}", reports[4]);
                assert_eq!(
                    cause.stage(),
                    Some(Stage::StreamSync),
                    "{case}: {}",
                    reports[4]
                );
                // Run 6 was queued behind it, so run 5's synchronize covered it: run 5's line
                // says so (L-8a), and the poison takes run 6 down with run 5 as origin.
                assert!(
                    reports[4].to_string().contains("queued behind this one"),
                    "{case}: {}",
                    reports[4]
                );
                assert!(
                    matches!(
                        verdict(&reports[5]),
                        Verdict::Poisoned {
                            origin: RunId(5),
                            ..
                        }
                    ),
                    "{case}: {}",
                    reports[5]
                );
            }
            None => {
                let cause = five
                    .cause()
                    .copied()
                    .unwrap_or_else(|| panic!("{case}: {}", reports[4]));
                assert_eq!(cause.class(), Class::RunOnly, "{case}: {}", reports[4]);
                if fault == Kernel::Latch {
                    assert!(
                        matches!(
                            cause.failure,
                            Failure::Record {
                                code: RuntimeCode::ScopeDeadlock,
                                ..
                            }
                        ),
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
        // Runs before the fault are Ok; after a poison, recovery reopens and later runs are Ok.
        for report in reports.iter().take(4).chain(reports.iter().skip(6)) {
            assert!(verdict(report).is_ok(), "{case}: {report}");
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
        library: backend_acl::Library::PathHiding {
            path: fake.path.clone(),
            hidden: ascend_cl_sys::OPTIONAL_SYMBOLS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        },
        notice_monitor: true,
        ..fake.config()
    };
    let mut d = driver(&fake, config, Vec::new());
    let monitor = d.device().notice_monitor().clone();
    assert_eq!(
        monitor,
        backend_acl::NoticeMonitor::Unavailable {
            symbol: "aclrtSetExceptionInfoCallback"
        }
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
    assert_eq!(
        d.device().stream_ids().count(),
        0,
        "no aclrtStreamGetId, no ids"
    );
    assert_eq!(fake.counters().streams_created, 2);
    fake.assert_balanced();
}

/// Twelve runs at depth two on the fake's default device semantics, with `symbol` failing
/// once with `code` after `skip` calls: each run's report.
fn twelve_with_failed_call(symbol: &str, code: i32, skip: u32) -> Vec<Report> {
    let fake = common::fake();
    let mut d = depth_two_driver(&fake);
    fake.control.fail_call(symbol, code, skip, 1).unwrap();
    let reports = run_lane(&mut d, 12);
    assert_eq!(fake.counters().force_resets, 1, "one recovery, for run 5");
    fake.assert_balanced();
    reports
}

/// Run 5 failed with `code` at `stage`, poison; run 6 poisoned by it; every other run its
/// own `Ok` (runs 1 to 4 ahead of it, runs 7 to 12 after the recovery): no run before or
/// after inherits run 5's status.
fn assert_run_5_poisoned_alone(
    reports: &[Report],
    stage: lane_core::status_latch::Stage,
    code: i32,
) {
    use lane_core::status_latch::Class;
    assert_eq!(reports.len(), 12, "one outcome per run");
    let cause = verdict(&reports[4])
        .cause()
        .copied()
        .unwrap_or_else(|| panic!("run 5: {}", reports[4]));
    assert!(
        matches!(verdict(&reports[4]), Verdict::Failed { .. }),
        "{}",
        reports[4]
    );
    assert_eq!(cause.class(), Class::Poison, "{}", reports[4]);
    assert_eq!(cause.code(), Some(code), "{}", reports[4]);
    assert_eq!(cause.stage(), Some(stage), "{}", reports[4]);
    assert!(
        matches!(
            verdict(&reports[5]),
            Verdict::Poisoned {
                origin: RunId(5),
                ..
            }
        ),
        "{}",
        reports[5]
    );
    for report in reports.iter().take(4).chain(reports.iter().skip(6)) {
        assert!(verdict(report).is_ok(), "{report}");
    }
}

#[test]
fn a_failed_record_read_of_run_5_poisons_it_with_the_reads_code_after_a_clean_device_verdict() {
    // The driver's synchronous copies, in its (single-threaded, deterministic) order: each
    // slot's first use zeroes its record region, then every launch arms its slot; each run
    // that completes has its status and record read in one copy. Run 6 is launched (behind
    // run 5, depth two) before run 5's record is read, so ahead of that read come 2 zeroings,
    // 6 arms, and runs 1 to 4's reads.
    let skip = 2 + 6 + 4;
    let reports = twelve_with_failed_call("aclrtMemcpy", 507_899, skip);
    // Its kernels published an ok record, unread: the device verdict is clean and the
    // record-read-failed row poisons with the read's code.
    assert_run_5_poisoned_alone(
        &reports,
        lane_core::status_latch::Stage::RecordRead,
        507_899,
    );
}

#[test]
fn a_boundary_record_failing_after_run_5s_kernels_poisons_it_with_the_record_calls_code() {
    // Three records per run, in launch order: the start event (the fake gives event
    // timestamps) and core_done on the AICore stream, then the boundary on the AICPU stream
    // behind both kernels. Run 5's boundary is the fifteenth.
    let skip = 4 * 3 + 2;
    // 107000 is no device code: the streams stay clean, so the code can only be the call's.
    let reports = twelve_with_failed_call("aclrtRecordEvent", 107_000, skip);
    // Unfenced: the device verdict (both streams clean) decides it, with the call's code at
    // the event record; run 6 never launches behind it and is poisoned by it.
    assert_run_5_poisoned_alone(
        &reports,
        lane_core::status_latch::Stage::EventRecord,
        107_000,
    );
}

/// A driver on `fake` at launch depth `depth` (library as `config` opens it).
fn driver_at_depth(fake: &common::Fake, config: AclConfig, depth: u8) -> FakeDriver {
    let profile = Profile::custom(ProfileSpec {
        launch_depth: depth,
        ..fake.open().1.spec()
    })
    .expect("a valid profile");
    let config = AclConfig {
        profile: Some(profile),
        ..config
    };
    driver(fake, config, Vec::new())
}

/// Each run's device timing, in report order (every run ok).
fn timings(reports: &[Report]) -> Vec<lane_core::DeviceTiming> {
    reports
        .iter()
        .map(|report| {
            let Outcome::Run(r) = report.outcome else {
                panic!("unexpected {report}")
            };
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
    let fake = common::fake();
    let mut d = driver_at_depth(&fake, fake.config(), 1);
    assert!(lane_driver::Device::event_timestamps(d.device()));
    let reports = run_lane(&mut d, 6);
    let timings = timings(&reports);
    assert_eq!(timings.len(), 6);
    for t in &timings {
        assert_eq!(t.source, lane_core::TimingSource::EventTimestamps, "{t:?}");
        assert!(t.start_ns <= t.end_ns, "{t:?}");
        // The kernels ran between the two records (µs resolution).
        assert!(
            t.end_ns - t.start_ns + 1_000 >= KERNEL.as_nanos() as u64,
            "{t:?}"
        );
    }
    for pair in timings.windows(2) {
        assert!(pair[1].start_ns >= pair[0].end_ns, "{pair:?}");
    }
    fake.assert_balanced();
}

/// Without `aclrtEventGetTimestamp` (an older CANN, here hidden) no event asks for a timeline
/// and each run is timed by its timing buffer, as before.
#[test]
fn a_library_without_event_timestamps_times_each_run_from_its_timing_buffer() {
    let fake = common::fake();
    let config = AclConfig {
        library: backend_acl::Library::PathHiding {
            path: fake.path.clone(),
            hidden: vec!["aclrtEventGetTimestamp".to_owned()],
        },
        ..fake.config()
    };
    let mut d = driver_at_depth(&fake, config, 2);
    assert!(!lane_driver::Device::event_timestamps(d.device()));
    let reports = run_lane(&mut d, 4);
    for t in timings(&reports) {
        assert_eq!(t.source, lane_core::TimingSource::TimingBuffer, "{t:?}");
    }
    fake.assert_balanced();
}
