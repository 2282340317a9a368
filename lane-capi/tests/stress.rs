//! Stress through the C ABI: six threads submit and wait on one simulated lane at once,
//! with and without host workers, with the submitting threads running the lane's steps
//! (`submitters_bound`) and without. Every run gets exactly one outcome, `Ok`, through its
//! own submitter's wait; a callback is never entered while another runs on a lane without
//! off-lane callbacks (the one-at-a-time contract, whichever thread runs it); and the lane's
//! threads are joined at destroy. Bounded in count, and every wait in time.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::{create, destroy, last_error};
use core::ffi::c_void;
use run_lane::*;

const SUBMITTERS: usize = 6;
const RUNS_PER_SUBMITTER: usize = 40;
/// A `FULL` or `RECOVERING` refusal is retried for at most this long.
const RETRY_FOR: Duration = Duration::from_secs(30);

/// How many callbacks are running now, and the most ever at once.
#[derive(Default)]
struct Callbacks {
    inside: AtomicUsize,
    most: AtomicUsize,
    prepares: AtomicUsize,
}

impl Callbacks {
    fn enter(&self) {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        // Long enough for another thread to come in if the contract broke.
        thread::yield_now();
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

fn callbacks<'a>(user: *mut c_void) -> &'a Callbacks {
    // SAFETY: every lane of this test gets a `Callbacks` that outlives it.
    unsafe { &*user.cast::<Callbacks>() }
}

unsafe extern "C" fn prepare(user: *mut c_void, _run: *const RunLaneRunInfo) -> i32 {
    let callbacks = callbacks(user);
    callbacks.prepares.fetch_add(1, Ordering::SeqCst);
    callbacks.enter();
    0
}

unsafe extern "C" fn finalise(user: *mut c_void, _run: *const RunLaneRunInfo, _copy: bool) -> i32 {
    callbacks(user).enter();
    0
}

/// Six submitters on one lane; returns the most callbacks seen at once.
fn stress(workers: u32, submitters_bound: bool) -> usize {
    let seen = Callbacks::default();
    let mut config = common::sim_config();
    config.workers = workers;
    config.submitters_bound = submitters_bound;
    // Every interleaving the stress makes is also checked against the lane's invariants.
    config.check_invariants = true;
    config.runner.user = std::ptr::from_ref(&seen).cast_mut().cast();
    config.runner.prepare = Some(prepare);
    config.runner.finalise = Some(finalise);
    config.runner.concurrency.off_lane_thread = workers > 0;
    let lane = create(&config);
    let handle = lane.addr();
    let ids: Vec<Vec<u64>> = thread::scope(|scope| {
        let submitters: Vec<_> = (0..SUBMITTERS)
            .map(|_| {
                scope.spawn(move || {
                    let lane: *mut RunLane = std::ptr::with_exposed_provenance_mut(handle);
                    let mut mine = Vec::new();
                    for _ in 0..RUNS_PER_SUBMITTER {
                        let start = Instant::now();
                        let id = loop {
                            match common::submit(lane) {
                                Ok(id) => break id,
                                Err(RunLaneStatus::Full | RunLaneStatus::Recovering)
                                    if start.elapsed() < RETRY_FOR =>
                                {
                                    thread::sleep(Duration::from_micros(100));
                                }
                                Err(status) => panic!("submit: {status:?}: {}", last_error()),
                            }
                        };
                        let outcome = common::wait(lane, id);
                        assert_eq!(outcome.id, id);
                        common::assert_ok("a submitter's own", &outcome);
                        mine.push(id);
                    }
                    mine
                })
            })
            .collect();
        submitters.into_iter().map(|s| s.join().expect("a submitter")).collect()
    });
    destroy(lane);
    let all: BTreeSet<u64> = ids.iter().flatten().copied().collect();
    let runs = SUBMITTERS * RUNS_PER_SUBMITTER;
    let once = "every run accepted once, its outcome taken once";
    assert_eq!(all.len(), runs, "{once}");
    let prepares = seen.prepares.load(Ordering::SeqCst);
    assert_eq!(prepares, runs, "one prepare per run");
    seen.most.load(Ordering::SeqCst)
}

#[test]
fn six_submitters_on_one_lane_each_get_their_own_outcomes_and_callbacks_stay_one_at_a_time() {
    assert_eq!(stress(0, false), 1);
}

#[test]
fn with_submitters_bound_six_submitters_each_get_their_own_outcomes_and_callbacks_stay_one_at_a_time()
 {
    assert_eq!(stress(0, true), 1);
}

#[test]
fn with_host_workers_and_submitters_bound_six_submitters_each_get_their_own_outcomes() {
    // Off-lane callbacks may overlap on the workers (so the count is not checked); every run
    // still gets its one outcome and its one prepare (checked inside).
    stress(2, true);
    stress(2, false);
}
