//! A lane the caller drives (L-23, `Drive::Caller`): no thread of the lane's own; every call
//! runs the lane's steps on its caller's thread, callbacks included; `wait` makes the device
//! wait itself, bounded by its timeout, and an expired one leaves the run live; queueing
//! (L-18) holds whichever thread submits; a command from another thread returns while a
//! caller is inside the device wait (L-16); a deadline that passes while no call is made is
//! acted on at the next call; close finishes the launched run.
//!
//! Its own test binary: no lane here starts a thread, so no thread named `lane*` may appear.

mod common;

use backend_sim::{FaultRule, SharedSim, SimRunner};
use common::{Noting, Threads, Times, assert_ok, run_ok, sim, stalled};
use lane_core::status_latch::Class;
use lane_core::{Outcome, Profile, RunRequest, SubmitError, Verdict};
use lane_driver::testkit::Then;
use lane_service::{Drive, LaneHandle, ServiceConfig, ServiceError, WaitError, spawn};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(30);

/// A caller-driven lane on `TestDevice`, whose first event wait stalls with `stall`
/// (`None`: no stall); when the stall started, when each run was launched, and the threads
/// of every callback (and of `make`, and of the outcome callback).
fn caller_lane(
    profile: Profile,
    stall: Option<Duration>,
) -> (LaneHandle, Receiver<Instant>, Times, Threads) {
    let threads: Threads = Arc::default();
    let mut config = ServiceConfig::new(profile);
    config.drive = Drive::Caller;
    let outcome_threads = Arc::clone(&threads);
    config.on_outcome = Some(Box::new(move |_: &Outcome| {
        outcome_threads.lock().unwrap().push(("on_outcome", thread::current().id()));
    }));
    let (device, started) = stalled(stall.unwrap_or_default(), Then::TimeOut);
    if stall.is_none() {
        device.script().stalls.clear();
    }
    let runner = Noting { threads: Some(Arc::clone(&threads)), ..Noting::default() };
    let launched = Arc::clone(&runner.launched);
    let make_threads = Arc::clone(&threads);
    let handle = spawn(config, move || {
        make_threads.lock().unwrap().push(("make", thread::current().id()));
        Ok::<_, String>((device, runner))
    })
    .expect("the lane starts");
    (handle, started, launched, threads)
}

/// The names of this process's threads that start with `lane`.
#[cfg(target_os = "linux")]
fn lane_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|entry| {
            let tid = entry.ok()?.file_name();
            let comm =
                std::fs::read_to_string(format!("/proc/self/task/{}/comm", tid.to_str()?)).ok()?;
            let comm = comm.trim_end().to_owned();
            comm.starts_with("lane").then_some(comm)
        })
        .collect()
}

#[test]
fn a_lane_the_caller_drives_starts_no_thread_and_runs_every_callback_on_the_calling_thread() {
    let (handle, _, _, threads) = caller_lane(Profile::a2a3(), None);
    let here = thread::current().id();
    for _ in 0..4 {
        run_ok(&handle, GENEROUS);
    }
    #[cfg(target_os = "linux")]
    assert_eq!(lane_threads(), Vec::<String>::new(), "no thread of the lane's");
    handle.shut_down().expect("from the driving thread");
    let threads = threads.lock().unwrap().clone();
    for what in ["make", "prepare", "launch_aicore", "launch_aicpu", "finalise", "on_outcome"] {
        assert!(threads.iter().any(|&(w, _)| w == what), "{what} never ran: {threads:?}");
    }
    for (what, thread) in &threads {
        assert_eq!(*thread, here, "{what} ran on another thread");
    }
}

#[test]
fn a_run_submitted_from_another_thread_while_a_caller_is_inside_the_device_wait_launches_at_once() {
    // Run 1 completes only 1.5 s after its wait starts; the caller inside that wait holds no
    // lock and no claim, so the submit from another thread prepares and launches run 2 at
    // once, queued behind run 1 on the pair (L-16, L-18).
    let (handle, started_rx, launched, _) =
        caller_lane(Profile::a2a3(), Some(Duration::from_millis(1500)));
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let waiting = {
        let handle = handle.clone();
        thread::spawn(move || handle.wait(first, GENEROUS))
    };
    let waiting_since = started_rx.recv_timeout(GENEROUS).expect("the caller waits");
    let submitted_at = Instant::now();
    let second = handle.submit(RunRequest::new()).expect("accepted");
    let returned = submitted_at.elapsed();
    assert!(returned < Duration::from_millis(500), "the submit took {returned:?}");
    let launched_at = launched
        .lock()
        .unwrap()
        .iter()
        .find(|&&(run, _)| run == second)
        .map(|&(_, at)| at)
        .expect("run 2 launched inside its submit");
    assert!(launched_at.duration_since(waiting_since) < Duration::from_millis(1500));
    let first = waiting.join().expect("the waiting caller").expect("run 1's outcome");
    assert_ok(&first);
    let second = handle.wait(second, GENEROUS).expect("run 2's outcome");
    assert_ok(&second);
}

#[test]
fn an_expired_wait_leaves_the_run_live_and_a_later_wait_gets_its_outcome() {
    let (handle, _, _, _) = caller_lane(Profile::a2a3(), Some(Duration::from_millis(600)));
    let run = handle.submit(RunRequest::new()).expect("accepted");
    let start = Instant::now();
    assert_eq!(
        handle.wait(run, Duration::from_millis(100)),
        Err(WaitError::TimedOut { item: run.0 })
    );
    assert!(start.elapsed() < Duration::from_millis(500), "{:?}", start.elapsed());
    assert_eq!(handle.poll_outcome(), None, "still running");
    let outcome = handle.wait(run, GENEROUS).expect("its outcome");
    assert_ok(&outcome);
    assert!(handle.lost().is_none());
}

#[test]
fn close_finishes_the_launched_run_and_refuses_new_submits_when_the_caller_drives() {
    let (handle, _, _, _) = caller_lane(Profile::a2a3(), None);
    let run = handle.submit(RunRequest::new()).expect("accepted");
    handle.close().expect("closed");
    assert_eq!(handle.submit(RunRequest::new()), Err(ServiceError::Submit(SubmitError::Closed)));
    let outcome = handle.wait(run, GENEROUS).expect("the launched run's outcome");
    assert_ok(&outcome);
    let shutdown = handle.shut_down().expect("from the caller");
    assert!(shutdown.report.state.is_closed(), "{:?}", shutdown.report);
    assert_eq!(shutdown.left, None);
}

#[test]
fn a_run_that_hung_while_no_call_was_made_is_timed_out_at_the_next_calls() {
    // A 200 ms deadline passes while the caller makes no call; the run hangs. The next polls
    // act on it: the first finds it past its deadline and not complete (a host wait timeout,
    // a poison), and the polls after it recover the device; none of them waits for the run.
    let handle = hung_lane(common::timeouts(200, 100, 10));
    let run = handle.submit(RunRequest::new()).expect("accepted");
    thread::sleep(Duration::from_millis(400));
    let mut calls = 0;
    let start = Instant::now();
    let outcome = loop {
        calls += 1;
        assert!(calls < 50, "no outcome after {calls} calls");
        if let Some(outcome) = handle.poll_report() {
            break outcome;
        }
    };
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(outcome.outcome.seq(), run.0);
    assert!(outcome.to_string().contains("rule=host-wait-timeout"), "{outcome}");
    // The device is recovered at the following calls (each makes the next step of the
    // recovery: the drain, the force reset, the probe), and the lane opens again.
    let mut calls = 0;
    loop {
        calls += 1;
        assert!(calls < 50, "still recovering after {calls} calls");
        match handle.submit(RunRequest::new()) {
            Ok(_) => break,
            Err(ServiceError::Submit(SubmitError::Poisoned { .. })) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert!(handle.lost().is_none(), "{:?}", handle.lost());
}

/// A caller-driven lane on lane-driver's `TestDevice` (the real clock) whose runs hang.
fn hung_lane(profile: Profile) -> LaneHandle {
    let mut config = ServiceConfig::new(profile);
    config.drive = Drive::Caller;
    let (device, _) = stalled(Duration::from_secs(3_600), Then::TimeOut);
    common::lane_on(config, device, Noting::default())
}

#[test]
fn a_poll_only_loop_on_the_simulator_gets_every_outcome_in_order_from_its_look_at_the_boundary() {
    // No `wait` at all: each poll looks at the awaited run's boundary through the simulator's
    // event query, which costs a query's virtual time, so the virtual clock reaches each
    // boundary and the poll that finds it complete gives the run its verdict. Queued two deep,
    // with a latched run (run-only, its record decides) and an AICore exception (the device
    // verdict, a poison, recovery: all made by polls).
    let profile = Profile::a2a3();
    let mut config = ServiceConfig::new(profile);
    config.drive = Drive::Caller;
    let faults: Vec<FaultRule> = ["latch@run:3", "exception=507015@run:6"]
        .iter()
        .map(|rule| FaultRule::parse(rule).expect("a fault rule"))
        .collect();
    let handle = spawn(config, move || {
        Ok::<_, String>((SharedSim::new(sim(&profile, 11, &faults)), SimRunner))
    })
    .expect("the lane starts");
    const RUNS: usize = 12;
    let (mut accepted, mut outcomes, mut calls) = (Vec::new(), Vec::new(), 0_u64);
    while accepted.len() < RUNS || outcomes.len() < accepted.len() {
        calls += 1;
        assert!(calls < 1_000_000, "after {calls} calls: {outcomes:?}");
        if accepted.len() < RUNS {
            match handle.submit(RunRequest::new()) {
                Ok(run) => accepted.push(run.0),
                Err(ServiceError::Submit(
                    SubmitError::Full { .. } | SubmitError::Poisoned { .. },
                )) => {}
                Err(other) => panic!("{other}"),
            }
        }
        if let Some(outcome) = handle.poll_outcome() {
            outcomes.push(outcome);
        }
    }
    let seqs: Vec<u64> = outcomes.iter().map(Outcome::seq).collect();
    assert_eq!(seqs, accepted, "one outcome per run, in order");
    let verdict = |run: u64| match &outcomes[usize::try_from(run - 1).unwrap()] {
        Outcome::Run(r) => r.verdict,
        other => panic!("{other:?}"),
    };
    assert!(
        matches!(verdict(3), Verdict::Failed { cause } if cause.class() == Class::RunOnly),
        "{:?}",
        verdict(3)
    );
    // The poison's origin is run 6, or run 7 when its launch met the device's sticky code
    // first; every other run is Ok or taken down by it.
    let last = u64::try_from(RUNS).unwrap();
    let poisons: Vec<u64> = (1..=last)
        .filter(|&run| {
            matches!(verdict(run), Verdict::Failed { cause } if cause.class() == Class::Poison)
        })
        .collect();
    assert!(poisons == [6] || poisons == [7], "{outcomes:?}");
    assert_eq!(verdict(last), Verdict::Ok, "the device recovered");
    for run in (1..=last).filter(|r| *r != 3 && !poisons.contains(r)) {
        assert!(
            matches!(verdict(run), Verdict::Ok | Verdict::Poisoned { .. }),
            "run {run}: {:?}",
            verdict(run)
        );
    }
    assert!(handle.lost().is_none(), "{:?}", handle.lost());
    handle.shut_down().expect("from the driving thread");
}

#[test]
fn two_threads_driving_one_lane_get_every_outcome_once_and_in_order() {
    let (handle, _, _, _) = caller_lane(Profile::a2a3(), None);
    let drivers: Vec<_> = (0..2)
        .map(|_| {
            let handle = handle.clone();
            thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..20 {
                    let start = Instant::now();
                    let run = loop {
                        match handle.submit(RunRequest::new()) {
                            Ok(run) => break run,
                            Err(ServiceError::Submit(SubmitError::Full { .. }))
                                if start.elapsed() < GENEROUS =>
                            {
                                thread::yield_now();
                            }
                            Err(other) => panic!("{other}"),
                        }
                    };
                    assert_ok(&handle.wait(run, GENEROUS).expect("its outcome"));
                    got.push(run.0);
                }
                got
            })
        })
        .collect();
    let mut all: Vec<u64> = drivers.into_iter().flat_map(|d| d.join().expect("a driver")).collect();
    all.sort_unstable();
    assert_eq!(all, (1..=40).collect::<Vec<_>>());
    assert_eq!(handle.poll_outcome(), None);
}
