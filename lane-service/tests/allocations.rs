//! Steady state allocates nothing per run with host workers on and an outcome callback set:
//! the workers' queues are allocated once, answers travel through them, no channel allocates
//! per message, and the outcomes the callback is shown pass through buffers that keep their
//! capacity. Those buffers (outcomes not taken yet, not shown yet) grow only when more pile
//! up than ever before, which a starved thread can cause at any time: a few doublings at
//! most, never one per run.
//! Counted by a global allocator that sees every thread (the lane thread and the workers,
//! not only the test's), over 2,000 runs after a warm-up. One test in this binary, so no
//! other test's allocations are counted.

mod common;

use common::assert_ok;
use common::host::{HostRunner, Seen, Sleepy, lane_with_workers, profile};
use lane_core::{RunRequest, SubmitError};
use lane_driver::testkit::TestDevice;
use lane_service::{LaneHandle, ServiceConfig, ServiceError};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Submits `runs` runs and polls their outcomes (all `Ok`), allocating nothing itself.
fn run_many(handle: &LaneHandle, runs: u64) {
    let start = Instant::now();
    let (mut submitted, mut done) = (0, 0);
    while done < runs {
        assert!(start.elapsed() < Duration::from_secs(60), "stuck at {done} of {runs}");
        if submitted < runs {
            match handle.submit(RunRequest::new()) {
                Ok(_) => submitted += 1,
                Err(ServiceError::Submit(SubmitError::Full { .. })) => thread::yield_now(),
                Err(_) => panic!("the submit failed"),
            }
        }
        if let Some(outcome) = handle.poll_outcome() {
            assert_ok(&outcome);
            done += 1;
        }
    }
}

#[test]
fn two_thousand_runs_with_workers_and_an_outcome_callback_allocate_nothing_on_any_thread() {
    // The counter counts other threads: a thread's allocation shows in this region.
    let region = Region::new(GLOBAL);
    thread::spawn(|| drop(std::hint::black_box(vec![1u8; 64])))
        .join()
        .expect("the allocating thread");
    assert!(region.change().allocations >= 1, "the counter sees other threads");

    let seen = Arc::new(Seen::default());
    let mut config = ServiceConfig::new(profile());
    config.workers = 2;
    let shown = Arc::new(AtomicU64::new(0));
    let callback_shown = Arc::clone(&shown);
    config.on_outcome = Some(Box::new(move |_| {
        callback_shown.fetch_add(1, Ordering::SeqCst);
    }));
    let worker_seen = Arc::clone(&seen);
    let handle = lane_with_workers(
        config,
        TestDevice::real(),
        HostRunner::off_lane(Arc::clone(&seen)),
        move |index| {
            Sleepy::new(index as u64 + 1, Duration::from_micros(20), Arc::clone(&worker_seen))
        },
    );
    // Warm up: streams, slot resources, the queues at their high-water marks.
    run_many(&handle, 200);
    let region = Region::new(GLOBAL);
    run_many(&handle, 2_000);
    let change = region.change();
    // On an idle machine this is 0. With one CPU hogged by another process, the lane thread
    // or this poller is starved now and then, outcomes pile up past every earlier high-water
    // mark, and the buffers that hold them double: up to 8 reallocations were seen (before
    // and after the mailbox began to notify with its lock released). An allocation per run
    // would be 2,000.
    assert!(
        change.allocations + change.reallocations < 20,
        "allocations during 2,000 runs with workers: {change:?}"
    );
    assert_eq!(seen.on_worker.load(Ordering::SeqCst), 2 * 2_200, "the workers did the work");
    // Polled and shown alike: the callback sees every outcome (the last ones may still be
    // on their way to it).
    drop(handle);
    assert_eq!(shown.load(Ordering::SeqCst), 2_200, "the callback saw them");
}
