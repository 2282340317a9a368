//! What wakes the lane thread on the hot path: with `submitters_bound` on, the submitting
//! thread launches and the completion waiter retires, so the lane thread has nothing to do
//! per run, with or without an outcome callback: the callback runs on the thread that runs
//! the steps, before it lets go of them (issue 44), not on the lane thread, which an
//! outcome used to wake for it.
//!
//! Its own test binary: the lane thread is found by name in `/proc/self/task`, so no other
//! test's lane may run beside it (Linux only).

#![cfg(target_os = "linux")]

mod common;

use common::{Noting, run_ok};
use lane_core::{Profile, RunRequest};
use lane_driver::testkit::TestDevice;
use lane_service::{OutcomeCallback, ServiceConfig};
use std::collections::BTreeSet;
use std::time::Duration;

const GENEROUS: Duration = Duration::from_secs(30);
const RUNS: u64 = 60;

/// The ids of this process's threads named `name` now.
fn threads_named(name: &str) -> BTreeSet<u32> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|entry| {
            let tid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            (comm.trim_end() == name).then_some(tid)
        })
        .collect()
}

/// How often thread `tid` has gone to sleep and been woken since it started.
fn sleeps(tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .expect("the lane thread is alive")
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("voluntary_ctxt_switches")
}

/// How often the lane thread slept and was woken while `RUNS` runs were submitted (on this,
/// a bound thread) and waited for one at a time, with or without an outcome callback.
fn lane_thread_wakes(callback: bool) -> u64 {
    let mut config = ServiceConfig::new(Profile::a2a3());
    config.submitters_bound = true;
    if callback {
        let on_outcome: OutcomeCallback = Box::new(|_| {});
        config.on_outcome = Some(on_outcome);
    }
    let before = threads_named("lane");
    let handle = common::lane_on(config, TestDevice::real(), Noting::default());
    // One run first, so the lane's start-up is over before counting.
    let warm = handle.submit(RunRequest::new()).expect("accepted");
    handle.wait(warm, GENEROUS).expect("its outcome");
    let started: Vec<u32> = threads_named("lane").difference(&before).copied().collect();
    assert_eq!(started.len(), 1, "one lane thread: {started:?}");
    let lane = started[0];
    let start = sleeps(lane);
    for _ in 0..RUNS {
        run_ok(&handle, GENEROUS);
    }
    let wakes = sleeps(lane) - start;
    drop(handle);
    wakes
}

/// Both cases in one test, one after the other: each finds its lane thread by name.
#[test]
fn with_submitters_bound_the_lane_thread_sleeps_through_the_runs_with_or_without_an_outcome_callback()
 {
    // Nothing per run reaches the lane thread: only its notice poll (every 50 ms) may wake it
    // while the runs go by. Before issue 44 each outcome the completion waiter delivered woke
    // it to run the callback (21 to 61 wakes in 60 runs on two idle CPUs).
    for callback in [false, true] {
        let wakes = lane_thread_wakes(callback);
        assert!(
            wakes < RUNS / 4,
            "the lane thread woke {wakes} times in {RUNS} runs (outcome callback: {callback})"
        );
    }
}
