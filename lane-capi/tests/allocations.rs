//! The path users link allocates nothing per run in steady state: through the C ABI, on the
//! fake libascendcl (opened by the ACL backend, and reached through a runtime's device table),
//! a run's submit (and a `FULL` refusal), its callbacks, its wait and its
//! outcome make no heap allocation on any thread of this library, whether each run finds the
//! lane idle (submit, then wait, one at a time) or the documented loop keeps the lane full
//! (submit until `FULL`, then wait for the oldest); with `submitters_bound` off and on, and
//! with an outcome callback set. The buffers that hold outcomes not taken (or not shown the
//! callback) yet grow only past their high-water mark, which a starved thread can raise.
//!
//! Counted by a global allocator that sees every thread of this binary (the lane thread, the
//! completion waiter, the submitting thread), over 300 runs after a warm-up (which grows
//! every buffer the lane and this library keep to their working size). The fake
//! libascendcl is a separate shared library with its own allocator, so its allocations (a
//! real libascendcl's are not ours either) are not counted. One test in this binary, so no
//! other test's allocations are counted.

mod common;

use std::alloc::System;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use core::ffi::c_void;

use common::{Kernels, Via, create, destroy, fake_config, last_error, serial, submit, wait};
use run_lane::*;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const WARM_UP: u64 = 50;
const COUNTED: u64 = 300;
static KERNELS: Kernels = Kernels::healthy(Duration::from_micros(50));

/// Outcomes the callback was shown.
static SHOWN: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_outcome(_user: *mut c_void, _outcome: *const RunLaneOutcome) {
    SHOWN.fetch_add(1, Ordering::SeqCst);
}

/// `run_lane_wait` for `run` ([`common::wait`], which allocates nothing unless it fails),
/// which must end `Ok`.
fn wait_ok(lane: *mut RunLane, run: u64) {
    assert_eq!(wait(lane, run).verdict, RunLaneVerdict::Ok, "run {run}");
}

/// `runs` runs, each submitted once its predecessor's outcome is taken: every submit finds
/// the lane idle.
fn one_at_a_time(lane: *mut RunLane, runs: u64) {
    for _ in 0..runs {
        let run = submit(lane).unwrap_or_else(|s| panic!("submit: {s:?}: {}", last_error()));
        wait_ok(lane, run);
    }
}

/// `runs` runs through the documented loop (submit until `FULL`, then wait for the oldest),
/// its queue allocated before the count.
fn documented(lane: *mut RunLane, runs: u64, in_flight: &mut VecDeque<u64>) {
    let mut submitted = 0;
    while submitted < runs {
        match submit(lane) {
            Ok(run) => {
                submitted += 1;
                in_flight.push_back(run);
            }
            Err(RunLaneStatus::Full) => {
                let oldest = in_flight.pop_front().expect("FULL with nothing in flight");
                wait_ok(lane, oldest);
            }
            Err(status) => panic!("submit refused with {status:?}: {}", last_error()),
        }
    }
    while let Some(oldest) = in_flight.pop_front() {
        wait_ok(lane, oldest);
    }
}

/// The allocations (and reallocations) of `COUNTED` runs of `drive` on a fresh lane, after
/// `WARM_UP` runs of it; with `bound`, `submitters_bound` on; with `callback`, an outcome
/// callback set. The library's defaults otherwise (invariant checks off).
fn counted(
    via: Via,
    bound: bool,
    callback: bool,
    drive: &mut dyn FnMut(*mut RunLane, u64),
) -> stats_alloc::Stats {
    let mut config = fake_config(via, 0, &KERNELS, 5_000);
    config.check_invariants = false;
    config.submitters_bound = bound;
    if callback {
        config.runner.on_outcome = Some(on_outcome);
    }
    let lane = create(&config);
    drive(lane, WARM_UP);
    let region = Region::new(GLOBAL);
    drive(lane, COUNTED);
    let change = region.change();
    destroy(lane);
    change
}

#[test]
fn runs_through_the_c_abi_allocate_nothing_in_steady_state_on_any_thread() {
    let _serial = serial();
    // The counter counts other threads: a thread's allocation shows in this region.
    let region = Region::new(GLOBAL);
    std::thread::spawn(|| drop(std::hint::black_box(vec![1u8; 64])))
        .join()
        .expect("the allocating thread");
    assert!(region.change().allocations >= 1, "the counter sees other threads");

    let mut queue = VecDeque::with_capacity(16);
    // Through the ACL backend, and through a runtime's device table (whose forwarding entries
    // allocate nothing themselves): one test, so no other test's allocations are counted.
    let vias = [Via::Acl, Via::DeviceOps];
    let cases = [(false, false), (true, false), (false, true)];
    for (via, (bound, callback)) in
        vias.into_iter().flat_map(|via| cases.into_iter().map(move |case| (via, case)))
    {
        let idle = counted(via, bound, callback, &mut one_at_a_time);
        let kept = counted(via, bound, callback, &mut |lane, runs| {
            documented(lane, runs, &mut queue);
        });
        let case = format!("{via:?}, submitters_bound {bound}, outcome callback {callback}");
        // Outcomes pile up when a thread is starved (a busy machine): the documented loop
        // takes one outcome per `FULL`, so two runs can end in one of its turns, and the lane
        // thread shows the callback its outcomes when it gets a CPU. The buffers that hold
        // them (the lane's outcomes, the runs' requests) then grow to a new high-water mark,
        // a few times at most. An allocation per run would be at least COUNTED.
        for (loop_name, change) in [("one at a time", idle), ("the documented loop", kept)] {
            assert!(
                change.allocations + change.reallocations
                    < usize::try_from(COUNTED / 10).expect("small"),
                "{COUNTED} runs, {loop_name}, {case}: {change:?}"
            );
        }
        // One at a time with no callback, nothing can pile up: not one allocation.
        if !callback {
            assert_eq!(
                idle.allocations + idle.reallocations,
                0,
                "{COUNTED} runs one at a time, {case}: {idle:?}"
            );
        }
    }
    // Every outcome of the callback's two lanes on each backend was shown (the lanes are
    // destroyed, so their callbacks are done).
    assert_eq!(SHOWN.load(Ordering::SeqCst), 2 * vias.len() as u64 * (WARM_UP + COUNTED));
}
