//! Host workers: the runner's prepare and finalise run on worker threads when the runner
//! allows it, every outcome still arrives once and in order whatever order the workers
//! answer in, a failing or panicking worker is a typed error or a lost lane, and the last
//! drop joins the workers. The stress test is bounded in runs and in time (a watchdog).

mod common;

use common::host::{HostRunner, OFF_LANE, Seen, Sleepy, lane_with_workers, profile};
use common::{assert_ok, is_ok};
use lane_core::status_latch::AclCode;
use lane_core::{FinaliseFailure, Outcome, RunId, RunRequest, SlotId, SubmitError, Verdict};
use lane_driver::testkit::{Call, Fail, Stall, TestDevice, Then};
use lane_driver::{Concurrency, HostWorker, PrepareError};
use lane_service::{LaneHandle, ServiceConfig, ServiceError, WaitError, spawn_with_workers};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(30);

/// A lane on `TestDevice` with `workers` [`Sleepy`] workers sleeping up to `max_sleep`, one
/// panicking on run `panic_on`, each failing every `fail_bind_every`-th bind (0: never).
fn lane(
    concurrency: Concurrency,
    workers: usize,
    max_sleep: Duration,
    panic_on: Option<u64>,
    fail_bind_every: u64,
) -> (LaneHandle, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let mut config = ServiceConfig::new(profile());
    config.workers = workers;
    let worker_seen = Arc::clone(&seen);
    let runner = HostRunner { concurrency, seen: Arc::clone(&seen) };
    let handle = lane_with_workers(config, TestDevice::real(), runner, move |index| {
        let mut worker = Sleepy::new(index as u64 + 1, max_sleep, Arc::clone(&worker_seen));
        worker.panic_on = panic_on;
        worker.fail_bind_every = fail_bind_every;
        worker
    });
    (handle, seen)
}

/// A lane of the default config on `device`, its host work off the lane thread, on workers
/// made by `worker`.
fn off_lane<W: HostWorker + 'static>(
    device: TestDevice,
    worker: impl Fn(usize) -> W + Send + Sync + 'static,
) -> LaneHandle {
    let runner = HostRunner::off_lane(Arc::default());
    lane_with_workers(ServiceConfig::new(profile()), device, runner, worker)
}

/// Submits `runs` runs (retrying while the lane is full, and with `recovering` while it
/// recovers) and polls every outcome; returns them in the order polled.
fn run_all(handle: &LaneHandle, runs: u64, recovering: bool) -> Vec<Outcome> {
    let start = Instant::now();
    let (mut submitted, mut outcomes) = (0, Vec::new());
    while outcomes.len() < usize::try_from(runs).unwrap() {
        assert!(start.elapsed() < GENEROUS, "{} of {runs} outcomes: {outcomes:?}", outcomes.len());
        if submitted < runs {
            match handle.submit(RunRequest::new()) {
                Ok(_) => submitted += 1,
                Err(ServiceError::Submit(SubmitError::Full { .. })) => {}
                Err(ServiceError::Submit(SubmitError::Poisoned { .. })) if recovering => {}
                Err(other) => panic!("submit: {other}"),
            }
        }
        match handle.poll_outcome() {
            Some(outcome) => outcomes.push(outcome),
            None if submitted == runs || recovering => thread::sleep(Duration::from_micros(50)),
            None => {}
        }
    }
    outcomes
}

/// Runs `runs` runs (as [`run_all`]) and checks that every one arrives, in order, `Ok`.
fn run_all_ok_in_order(handle: &LaneHandle, runs: u64) {
    let outcomes = run_all(handle, runs, false);
    let seqs: Vec<u64> = outcomes.iter().map(Outcome::seq).collect();
    assert_eq!(seqs, (1..=runs).collect::<Vec<_>>());
    assert!(outcomes.iter().all(is_ok), "every run Ok");
}

#[test]
fn prepare_and_finalise_run_on_the_workers_and_every_outcome_arrives_in_order() {
    let (handle, seen) = lane(OFF_LANE, 2, Duration::from_micros(100), None, 0);
    run_all_ok_in_order(&handle, 200);
    assert_eq!(seen.on_lane.load(Ordering::SeqCst), 0, "no host work on the lane thread");
    assert_eq!(seen.on_worker.load(Ordering::SeqCst), 400, "a prepare and a finalise per run");
}

#[test]
fn a_job_whose_worker_cannot_bind_runs_on_the_lane_thread_and_every_outcome_arrives_in_order() {
    let (handle, seen) = lane(OFF_LANE, 2, Duration::from_micros(100), None, 3);
    // A failed bind fails no run.
    run_all_ok_in_order(&handle, 200);
    let failed = seen.binds_failed.load(Ordering::SeqCst);
    assert!(failed > 0, "some binds failed");
    assert_eq!(
        seen.on_lane.load(Ordering::SeqCst),
        failed,
        "each handed-back job ran on the lane thread's runner"
    );
    assert_eq!(
        seen.on_worker.load(Ordering::SeqCst) + failed,
        400,
        "a prepare and a finalise per run, none lost, none run twice"
    );
}

#[test]
fn a_runner_that_keeps_its_work_on_the_lane_thread_gets_no_workers() {
    let (handle, seen) = lane(Concurrency::LANE_THREAD, 2, Duration::ZERO, None, 0);
    assert_eq!(run_all(&handle, 20, false).len(), 20);
    assert_eq!(seen.on_lane.load(Ordering::SeqCst), 40);
    assert_eq!(seen.on_worker.load(Ordering::SeqCst), 0);
    drop(handle);
    // No worker was ever made, so none was dropped.
    assert!(!seen.worker_dropped.load(Ordering::SeqCst));
}

#[test]
fn zero_workers_keep_the_work_on_the_lane_thread() {
    let (handle, seen) = lane(OFF_LANE, 0, Duration::ZERO, None, 0);
    assert_eq!(run_all(&handle, 20, false).len(), 20);
    assert_eq!(seen.on_lane.load(Ordering::SeqCst), 40);
    assert_eq!(seen.on_worker.load(Ordering::SeqCst), 0);
}

#[test]
fn with_synchronous_copies_each_status_read_answers_from_the_waiters_copy_of_the_record() {
    // The completion waiter reads each run's status with its record in one copy; its answer
    // carries the bytes through the mailbox and the dispatch machine to the executor, whose
    // status read then makes no copy of its own (decision 0023).
    let device = TestDevice::real();
    device.script().quiet = false;
    let watch = device.watch();
    let runner = HostRunner::off_lane(Arc::default());
    let handle = lane_service::spawn(ServiceConfig::new(profile()), move || {
        Ok::<_, String>((device, runner))
    })
    .expect("the lane starts");
    run_all_ok_in_order(&handle, 20);
    assert_eq!(
        watch.script().calls.iter().filter(|c| c.starts_with("memcpy_from_device")).count(),
        0,
        "no status copy of the executor's own"
    );
    assert_eq!(
        watch.script().count(Call::MemcpyFromDevice),
        20,
        "each run's status read once, with its record"
    );
}

#[test]
fn dropping_the_last_handle_joins_the_workers() {
    let (handle, seen) = lane(OFF_LANE, 3, Duration::from_micros(50), None, 0);
    assert_eq!(run_all(&handle, 10, false).len(), 10);
    assert!(!seen.worker_dropped.load(Ordering::SeqCst));
    drop(handle);
    // Joined: each worker's thread ended, dropping its worker, before the drop returned.
    assert!(seen.worker_dropped.load(Ordering::SeqCst));
}

#[test]
fn a_failing_or_panicking_worker_factory_fails_the_spawn_with_its_index() {
    let spawn = |fail_at: usize, panic: bool| {
        spawn_with_workers(
            ServiceConfig::new(profile()),
            || Ok::<_, String>((TestDevice::real(), HostRunner::off_lane(Arc::default()))),
            move |index| {
                if index == fail_at {
                    assert!(!panic, "worker {index} panics");
                    return Err(format!("no device for worker {index}"));
                }
                Ok::<Box<dyn HostWorker>, String>(Box::new(Sleepy::new(
                    1,
                    Duration::ZERO,
                    Arc::default(),
                )))
            },
        )
    };
    match spawn(1, false) {
        Err(ServiceError::Worker { index: 1, text }) => assert_eq!(text, "no device for worker 1"),
        other => panic!("expected worker 1's error, got {other:?}"),
    }
    match spawn(0, true) {
        Err(ServiceError::Worker { index: 0, text }) => {
            assert!(text.contains("panicked") && text.contains("worker 0 panics"), "{text}");
        }
        other => panic!("expected worker 0's panic, got {other:?}"),
    }
}

#[test]
fn a_panicking_worker_loses_the_lane_with_its_cause_and_wakes_the_waiter() {
    let (handle, _) = lane(OFF_LANE, 2, Duration::ZERO, Some(3), 0);
    let runs: Vec<_> =
        (0..3).map(|_| handle.submit(RunRequest::new()).expect("accepted")).collect();
    match handle.wait(runs[2], GENEROUS) {
        Err(WaitError::Lost { cause, .. }) => {
            assert!(cause.0.contains("panic on host worker"), "{cause}");
            assert!(cause.0.contains("the worker panics on run 3"), "{cause}");
        }
        other => panic!("expected the loss, got {other:?}"),
    }
    assert!(matches!(handle.submit(RunRequest::new()), Err(ServiceError::Lost(_))));
}

/// Stress: two submitters and a poller, workers answering after a seeded random sleep, so
/// answers come back in every order. Every accepted run gets exactly one outcome, polled in
/// sequence order, and no wake-up is lost (a watchdog bounds the whole test).
#[test]
fn stress_with_workers_answering_in_random_order_loses_no_outcome_and_no_wake_up() {
    const SUBMITTERS: usize = 2;
    const RUNS: usize = 300;
    let (done_tx, done_rx) = mpsc::channel();
    let body = thread::spawn(move || {
        let (handle, seen) = lane(OFF_LANE, 3, Duration::from_micros(200), None, 0);
        let submitters: Vec<_> = (0..SUBMITTERS)
            .map(|_| {
                let handle = handle.clone();
                thread::spawn(move || {
                    let mut accepted = 0;
                    while accepted < RUNS {
                        match handle.submit(RunRequest::new()) {
                            Ok(_) => accepted += 1,
                            Err(ServiceError::Submit(SubmitError::Full { .. })) => {
                                thread::sleep(Duration::from_micros(100));
                            }
                            Err(other) => panic!("submit: {other}"),
                        }
                    }
                })
            })
            .collect();
        let mut seqs = Vec::new();
        let start = Instant::now();
        while seqs.len() < SUBMITTERS * RUNS {
            assert!(start.elapsed() < GENEROUS, "{} outcomes", seqs.len());
            match handle.poll_outcome() {
                Some(outcome) => {
                    assert_ok(&outcome);
                    seqs.push(outcome.seq());
                }
                None => thread::sleep(Duration::from_micros(100)),
            }
        }
        for submitter in submitters {
            submitter.join().expect("a submitter");
        }
        let expected: Vec<u64> = (1..=(SUBMITTERS * RUNS) as u64).collect();
        assert_eq!(seqs, expected, "one outcome per run, in sequence order");
        assert_eq!(seen.on_lane.load(Ordering::SeqCst), 0);
        assert!(handle.poll_outcome().is_none(), "no outcome twice");
        drop(handle);
        done_tx.send(()).expect("the watchdog listens");
    });
    assert!(
        done_rx.recv_timeout(Duration::from_secs(60)).is_ok(),
        "the stress test did not finish within 60 s"
    );
    body.join().expect("the stress body");
}

#[test]
fn a_poison_with_worker_calls_in_flight_recovers_after_their_answers_and_the_lane_runs_on() {
    // The third status read fails with a device fault while workers are still preparing
    // (each call sleeps up to 2 ms): the lane waits for their answers before it drains, the
    // service keeps feeding them while recovering, and runs after the recovery succeed.
    let seen = Arc::new(Seen::default());
    let device = TestDevice::real();
    device.script().fail.push(Fail::nth(Call::MemcpyFromDevice, 3, 507_015));
    let worker_seen = Arc::clone(&seen);
    let runner = HostRunner::off_lane(Arc::clone(&seen));
    let handle = lane_with_workers(ServiceConfig::new(profile()), device, runner, move |index| {
        Sleepy::new(index as u64 + 7, Duration::from_millis(2), Arc::clone(&worker_seen))
    });
    // Keep submitting through the recovery (refused while it recovers) until 20 accepted
    // runs have their outcomes.
    let outcomes = run_all(&handle, 20, true);
    assert!(handle.lost().is_none(), "the lane is not lost: {:?}", handle.lost());
    let seqs: Vec<u64> = outcomes.iter().map(Outcome::seq).collect();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>(), "one outcome per run, in order");
    assert!(!outcomes.iter().all(is_ok), "the faulted run (and what it took down) failed");
    assert!(
        outcomes.last().is_some_and(is_ok),
        "runs after the recovery succeed: {:?}",
        outcomes.last()
    );
    assert_eq!(seen.on_lane.load(Ordering::SeqCst), 0);
}

/// A host worker whose finalise of run 1 blocks until the test opens the gate; it says which
/// run each finalise is for as it starts.
struct Gated {
    gate: Arc<(Mutex<bool>, Condvar)>,
    finalising: mpsc::Sender<u64>,
}

impl HostWorker for Gated {
    fn prepare_run(&mut self, _: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        Ok(())
    }
    fn finalise_run(&mut self, run: RunId, _: SlotId, _: bool) -> Result<(), FinaliseFailure> {
        let _ = self.finalising.send(run.0);
        if run.0 == 1 {
            let (open, opened) = &*self.gate;
            let mut open = open.lock().unwrap();
            while !*open {
                open = opened.wait(open).unwrap();
            }
        }
        Ok(())
    }
}

/// Opens the gate when dropped, also when the test fails: the blocked worker then returns
/// and the lane's drop can join it.
struct OpenOnDrop(Arc<(Mutex<bool>, Condvar)>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        let (open, opened) = &*self.0;
        *open.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        opened.notify_all();
    }
}

/// The lane thread sleeps on its mailbox only, so any answer wakes it: with run 1's finalise
/// blocking its worker, run 2's completion (at once on `TestDevice`) still wakes the lane
/// thread through the completion waiter, and run 2 is read and handed to the other worker
/// for its finalise. The completion deadline is 50 s: a lane thread that slept for the
/// worker's answer first would not look at run 2 within the test's bound.
#[test]
fn with_only_a_finalise_out_the_lane_thread_feeds_the_next_completion_without_its_answer() {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (finalising, started) = mpsc::channel();
    let worker_gate = Arc::clone(&gate);
    let handle = off_lane(TestDevice::real(), move |_| Gated {
        gate: Arc::clone(&worker_gate),
        finalising: finalising.clone(),
    });
    let release = OpenOnDrop(Arc::clone(&gate));
    // Three slots: run 1 finalising, runs 2 and 3 on the pair (depth two), nothing to prepare.
    let runs: Vec<RunId> =
        (0..3).map(|_| handle.submit(RunRequest::new()).expect("a slot is free")).collect();
    // Both finalises start while the gate holds run 1's answer back: run 2 was completed
    // and read without it. The two workers may report in either order (each wakes when its
    // job is queued; 2 of 300 runs saw run 2's first).
    let mut finalising = [GENEROUS; 2].map(|wait| started.recv_timeout(wait).ok());
    finalising.sort_unstable();
    assert_eq!(
        finalising,
        [Some(1), Some(2)],
        "run 2 completed and finalising while run 1's finalise is out"
    );
    drop(release);
    for run in runs {
        let outcome = handle.wait(run, GENEROUS).expect("every run finishes");
        assert!(is_ok(&outcome), "{outcome:?}");
    }
}

/// A host worker whose prepare of run 1 and finalise of run 2 fail with an ACL code, leaving
/// a device text as ACL would on the worker's thread; every other job succeeds.
struct FailsWithText {
    text: Option<String>,
}

impl HostWorker for FailsWithText {
    fn prepare_run(&mut self, run: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        if run.0 == 1 {
            self.text = Some(format!("EZ1001: prepare of run {} on a worker", run.0));
            return Err(PrepareError::Failed(AclCode::RtParamInvalid));
        }
        Ok(())
    }
    fn finalise_run(
        &mut self,
        run: RunId,
        _slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        if run.0 == 2 && copy_back {
            self.text = Some(format!("EZ1002: copy-back of run {} on a worker", run.0));
            return Err(FinaliseFailure::Acl(AclCode::RtParamInvalid));
        }
        Ok(())
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.text.take()
    }
}

#[test]
fn a_workers_failed_prepare_or_finalise_carries_its_device_text_into_the_failure_line() {
    let handle = off_lane(TestDevice::real(), |_| FailsWithText { text: None });
    let runs: Vec<RunId> =
        (0..3).map(|_| handle.submit(RunRequest::new()).expect("a slot is free")).collect();
    let reports: Vec<_> =
        runs.iter().map(|run| handle.wait_report(*run, GENEROUS).expect("an outcome")).collect();
    let line = |i: usize| reports[i].to_string();
    assert!(line(0).starts_with("run 1 failed at prepare"), "{}", line(0));
    assert!(line(0).ends_with("; device: EZ1001: prepare of run 1 on a worker"), "{}", line(0));
    assert!(line(1).starts_with("run 2 failed at copy-back"), "{}", line(1));
    assert!(line(1).ends_with("; device: EZ1002: copy-back of run 2 on a worker"), "{}", line(1));
    assert!(is_ok(&reports[2].outcome), "{}", line(2));
    assert_eq!(reports[2].device_message, None, "a success reads no text");
}

/// A worker whose prepare of `slow` sleeps `nap` and then notes that it returned.
struct SlowPrepare {
    slow: RunId,
    nap: Duration,
    returned: Arc<std::sync::atomic::AtomicBool>,
}

impl HostWorker for SlowPrepare {
    fn prepare_run(&mut self, run: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        if run == self.slow {
            thread::sleep(self.nap);
            self.returned.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
    fn finalise_run(&mut self, _: RunId, _: SlotId, _: bool) -> Result<(), FinaliseFailure> {
        Ok(())
    }
}

/// L-26: a run abandoned by a poison while its prepare still runs on a host worker gets its
/// outcome (and its `on_outcome`) only once that prepare returned: the outcome is the
/// runtime's signal that it may free the run's state.
#[test]
fn an_abandoned_runs_outcome_waits_for_its_prepare_on_a_worker_to_return() {
    let returned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // What `on_outcome` saw for run 2: whether its prepare had returned.
    let seen_by_callback = Arc::new(Mutex::new(None));
    let mut config = ServiceConfig::new(profile());
    config.workers = 2;
    let (callback_saw, callback_returned) = (Arc::clone(&seen_by_callback), Arc::clone(&returned));
    config.on_outcome = Some(Box::new(move |outcome: &Outcome| {
        if outcome.seq() == 2 {
            *callback_saw.lock().unwrap() = Some(callback_returned.load(Ordering::SeqCst));
        }
    }));
    // Run 1 completes 200 ms on (run 2's prepare has begun on its worker by then: it is
    // handed out when run 2 is submitted), and its status read fails with an AICore
    // exception: a poison that abandons run 2 inside its prepare.
    let device = TestDevice::real();
    let stall = Stall::new(Call::SynchronizeEvent, Duration::from_millis(200), Then::Answer);
    device.script().stalls.push(stall);
    device.script().fail.push(Fail::nth(Call::MemcpyFromDevice, 1, 507_015));
    let worker_returned = Arc::clone(&returned);
    let runner = HostRunner::off_lane(Arc::default());
    let handle = lane_with_workers(config, device, runner, move |_| SlowPrepare {
        slow: RunId(2),
        nap: Duration::from_millis(300),
        returned: Arc::clone(&worker_returned),
    });
    let first = handle.submit(RunRequest::new()).expect("run 1");
    let second = handle.submit(RunRequest::new()).expect("run 2");
    let first = handle.wait(first, GENEROUS).expect("run 1's outcome");
    assert!(
        matches!(&first, Outcome::Run(r) if matches!(r.verdict, Verdict::Failed { .. })),
        "{first:?}"
    );
    let second = handle.wait(second, GENEROUS).expect("run 2's outcome");
    assert!(
        returned.load(Ordering::SeqCst),
        "run 2's outcome came while its prepare still ran: {second:?}"
    );
    assert!(
        matches!(&second, Outcome::Run(r) if matches!(r.verdict, Verdict::Poisoned { .. })),
        "{second:?}"
    );
    drop(handle);
    assert_eq!(
        *seen_by_callback.lock().unwrap(),
        Some(true),
        "on_outcome saw run 2 only after its prepare returned"
    );
}
