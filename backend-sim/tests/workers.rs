//! Virtual host workers and the completion waiter: the runner's prepare and finalise run on
//! worker tracks and every device wait on the waiter's track in virtual time, the trace shows
//! those tracks, faults at the runner's sites fail their run on a worker exactly as on the
//! lane thread, and a run with workers is as deterministic as one without.

use std::path::Path;

use backend_sim::scenario::{self, BackendName};
use backend_sim::trace::{Record, WAITER_TRACK, chrome_json};
use backend_sim::workload::Points;
use backend_sim::{FaultRule, Report, SimConfig, Workload, run};
use lane_core::{Outcome, Verdict};
use serde_json::Value;

fn with_workers(workers: u8, faults: &[&str]) -> SimConfig {
    SimConfig {
        workers,
        slots: Some(4),
        prepare_window: Some(2),
        seed: 3,
        workload: Workload {
            runs: 12,
            device_ns: 50_000,
            publish_after: Points { every: None, at: vec![6] },
            ..Workload::default()
        },
        faults: faults
            .iter()
            .map(|f| FaultRule::parse(f).unwrap_or_else(|e| panic!("{f}: {e}")))
            .collect(),
        trace: true,
        ..SimConfig::default()
    }
}

fn simulate(config: &SimConfig) -> Report {
    run(config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"))
}

/// The outcome lines of the runs that failed on their own account: what a fault at a site
/// decides. (Which runs a poison takes down, and whether a close finds a run prepared, depend
/// on timing, which workers change.)
fn failed_runs(report: &Report) -> Vec<String> {
    report
        .outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Run(r) if matches!(r.verdict, Verdict::Failed { .. })))
        .map(ToString::to_string)
        .collect()
}

/// `(worker, call name)` of every call made on a host worker's track, in trace order.
fn worker_calls(report: &Report) -> Vec<(u8, &'static str)> {
    report
        .trace
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Call { track: Some(worker), name, .. } if *worker != WAITER_TRACK => {
                Some((*worker, *name))
            }
            _ => None,
        })
        .collect()
}

fn lane_thread_calls(report: &Report) -> Vec<&'static str> {
    report
        .trace
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Call { track: None, name, .. } => Some(*name),
            _ => None,
        })
        .collect()
}

#[test]
fn with_workers_prepare_and_finalise_leave_the_lane_thread_and_each_worker_binds_first() {
    let report = simulate(&with_workers(2, &[]));
    assert_eq!(report.summary.counts.ok, 12);
    let lane = lane_thread_calls(&report);
    assert!(!lane.contains(&"prepare_run") && !lane.contains(&"finalise_run"));
    let calls = worker_calls(&report);
    for worker in 0..2 {
        let mine: Vec<&str> = calls
            .iter()
            .filter(|(w, name)| *w == worker && *name != "wake_up")
            .map(|(_, name)| *name)
            .collect();
        assert_eq!(mine.first(), Some(&"set_device"), "worker {worker}: {mine:?}");
        assert_eq!(mine.iter().filter(|n| **n == "set_device").count(), 1);
    }
    let count = |name| calls.iter().filter(|(_, n)| *n == name).count();
    assert_eq!((count("prepare_run"), count("finalise_run")), (12, 12));
    // A worker asleep when its job comes wakes first: at least its first job does.
    assert!(count("wake_up") >= 2 && count("wake_up") <= 24, "{calls:?}");
    // Their host time is the workers', not the lane thread's.
    for run in &report.runs {
        assert!(run.worker_ns >= 90_000, "{run:?}");
    }
}

#[test]
fn without_workers_everything_stays_on_the_lane_thread() {
    let report = simulate(&with_workers(0, &[]));
    assert!(worker_calls(&report).is_empty());
    assert!(lane_thread_calls(&report).contains(&"prepare_run"));
    assert!(report.runs.iter().all(|r| r.worker_ns == 0));
}

#[test]
fn a_perfetto_trace_with_workers_has_a_track_per_worker_beside_the_lane_thread_and_streams() {
    let report = simulate(&with_workers(2, &[]));
    let doc: Value =
        serde_json::from_str(&chrome_json(&[("workers", &report.trace, &report.stream_roles)]))
            .expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("events");
    let thread_names: Vec<(u64, u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap_or(0),
                e["tid"].as_u64().unwrap_or(0),
                e["args"]["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let named = |pid: u64, prefix: &str| {
        thread_names.iter().filter(|(p, _, n)| *p == pid && n.starts_with(prefix)).count()
    };
    assert_eq!(named(1, "lane thread"), 1);
    assert_eq!(named(1, "host worker"), 2, "{thread_names:#?}");
    assert!(named(2, "stream") >= 2);
    for (_, tid, name) in thread_names.iter().filter(|(_, _, n)| n.starts_with("host worker")) {
        let prepares = events
            .iter()
            .filter(|e| e["tid"] == *tid && e["pid"] == 1 && e["name"] == "prepare_run")
            .count();
        assert!(prepares > 0, "{name} shows no prepare");
    }
    // The completion waiter has its own named track, with the device waits on it.
    let waiter = thread_names
        .iter()
        .find(|(pid, _, name)| *pid == 1 && name.starts_with("completion waiter"))
        .map(|(_, tid, _)| *tid)
        .expect("a completion waiter track");
    assert!(
        events
            .iter()
            .any(|e| e["tid"] == waiter && e["pid"] == 1 && e["name"] == "synchronize_event"),
        "the waiter's track shows no wait"
    );
    // The text trace names the worker and the waiter as the actors.
    let text = report.text_trace();
    assert!(text.contains("worker 1    prepare_run"));
    assert!(text.contains("waiter      synchronize_event"));
}

#[test]
fn runner_faults_fail_their_run_on_a_worker_exactly_as_on_the_lane_thread() {
    for faults in [
        &["prepare@run:3"][..],
        &["prepare-incompatible@run:4", "copy-back@run:5"],
        &["validation@run:2", "prepare=507899@run:9"],
    ] {
        let lane = simulate(&with_workers(0, faults));
        let workers = simulate(&with_workers(2, faults));
        assert!(!failed_runs(&lane).is_empty(), "{faults:?} failed nothing");
        assert_eq!(failed_runs(&lane), failed_runs(&workers), "{faults:?}");
        assert_eq!((lane.end, lane.resets), (workers.end, workers.resets));
    }
}

#[test]
fn every_fault_scenario_gives_the_same_outcomes_with_workers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    for path in files {
        let s = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        if !s.runs_on(BackendName::Sim) {
            continue;
        }
        let lane = simulate(&s.config);
        let workers = simulate(&SimConfig { workers: 2, ..s.config.clone() });
        assert_eq!(failed_runs(&lane), failed_runs(&workers), "{}", path.display());
        assert_eq!(lane.end, workers.end, "{}", path.display());
    }
}

#[test]
fn the_same_config_with_workers_gives_a_byte_identical_trace() {
    let config = SimConfig { swarm: true, liveness: true, ..with_workers(3, &[]) };
    let (a, b) = (simulate(&config), simulate(&config));
    assert_eq!(a.text_trace(), b.text_trace());
    assert!(!worker_calls(&a).is_empty());
}

/// lane-service's lane thread never blocks in a device wait: the completion waiter makes every
/// one, and the lane thread sleeps only for answers (a worker's, the waiter's), paying a
/// wake-up for each it slept for. The simulated lane does the same: every `synchronize_event`
/// is on the waiter's track (two per run: AICPU's event, then AICore's), none on the lane
/// thread's, the waiter binds first, and completions are seen while the workers' calls run.
#[test]
fn the_lane_thread_makes_no_device_wait_and_sleeps_only_for_answers_as_lane_service_does() {
    let config = SimConfig {
        copies: Some(lane_core::CopyPath::OnStream),
        workload: Workload { runs: 40, device_ns: 20_000, ..Workload::default() },
        ..with_workers(2, &[])
    };
    let report = simulate(&config);
    assert_eq!(report.summary.counts.ok, 40);
    let records = report.trace.records();
    let spans = |on: fn(Option<u8>) -> bool| -> Vec<(u64, u64)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Call { track, start_ns, end_ns, .. } if on(*track) => {
                    Some((*start_ns, *end_ns))
                }
                _ => None,
            })
            .collect()
    };
    let worker_spans = spans(|t| t.is_some_and(|w| w != WAITER_TRACK));
    let mut lane_waits = 0;
    let mut waiter_calls = Vec::new();
    let mut waits_during_a_worker_call = 0;
    let mut completion_wakes = 0;
    let mut answer_wakes = 0;
    for record in records {
        let Record::Call { track, name, start_ns, detail, .. } = record else {
            continue;
        };
        match track {
            None if *name == "synchronize_event" || *name == "synchronize_device" => {
                lane_waits += 1;
            }
            None if *name == "wake_up" && detail == "a completion waiter's answer" => {
                completion_wakes += 1;
            }
            None if *name == "wake_up" && detail == "a worker's answer" => answer_wakes += 1,
            Some(WAITER_TRACK) if *name != "wake_up" => {
                waiter_calls.push(*name);
                if *name == "synchronize_event"
                    && worker_spans.iter().any(|(s, e)| s < start_ns && start_ns < e)
                {
                    waits_during_a_worker_call += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(lane_waits, 0, "the lane thread made a device wait");
    assert_eq!(waiter_calls.first(), Some(&"set_device"), "the waiter binds first");
    let waits = waiter_calls.iter().filter(|n| **n == "synchronize_event").count();
    assert_eq!(waits, 40, "one wait per run, on its boundary");
    let record_reads = waiter_calls.iter().filter(|n| **n == "memcpy_d2h").count();
    assert_eq!(record_reads, 40, "one result record read per run, on the waiter");
    assert!(waits_during_a_worker_call > 0, "no completion overlapped a worker's call");
    // The lane thread slept for answers and was woken by them.
    assert!(completion_wakes > 0, "no completion woke the lane thread");
    assert!(answer_wakes >= 30, "{answer_wakes} wake-ups for workers' answers");
}

#[test]
fn a_job_whose_worker_cannot_bind_runs_on_the_lane_thread_and_its_run_still_succeeds() {
    // Each worker's first bind fails (the `probe` site; the lane thread binds no more here).
    let report = simulate(&with_workers(2, &["probe@call:1,2"]));
    assert_eq!(report.summary.counts.ok, 12, "{}", report.text_trace());
    assert_eq!(report.resets, 0);
    let lane = lane_thread_calls(&report);
    let calls = worker_calls(&report);
    let on_lane = |name| lane.iter().filter(|n| **n == name).count();
    let on_workers = |name| calls.iter().filter(|(_, n)| *n == name).count();
    // Both failed binds handed their job (the first prepares) back to the lane thread, which
    // ran it with its runner; nothing was lost or run twice.
    assert_eq!(on_lane("prepare_run"), 2, "{lane:?}");
    assert_eq!(on_lane("prepare_run") + on_workers("prepare_run"), 12);
    assert_eq!(on_lane("finalise_run") + on_workers("finalise_run"), 12);
    // Each worker tried again before its next job, and bound.
    assert_eq!(on_workers("set_device"), 4, "{calls:?}");
}
