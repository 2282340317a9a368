//! The lane service from other threads: L-16 (commands and polls never wait for a device
//! call in flight, and the work they ask for starts while the completion waiter is in one),
//! L-18 (a run submitted while its predecessor executes is launched before it ends), one
//! outcome per accepted item in order, waits, the callback, shutdown on the last drop, and
//! a lost lane after a panic on the lane thread or the waiter.

mod common;

use backend_sim::SharedSim;
use common::{Noting, Times, assert_ok, lane_on, run_ok, sim, stalled};
use lane_core::{CodeRef, Outcome, Profile, PublicationResult, RunId, RunRequest, Verdict};
use lane_driver::testkit::{Call, Fail, TestDevice, Then};
use lane_service::{ItemId, LaneHandle, ServiceConfig, ServiceError, WaitError, spawn};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(30);

/// A lane on `TestDevice` whose first event wait stalls `lasts`, then does `then`: when the
/// stall started, a handle on the device's script, and the runner (when each run was
/// prepared and launched).
fn stalling(lasts: Duration, then: Then) -> (LaneHandle, Receiver<Instant>, TestDevice, Noting) {
    let (device, started) = stalled(lasts, then);
    let (watch, runner) = (device.watch(), Noting::default());
    let config = ServiceConfig::new(Profile::a2a3());
    (lane_on(config, device, runner.clone()), started, watch, runner)
}

/// When `run` shows up in `times` (polled; `GENEROUS` at most).
fn when(times: &Times, run: RunId, what: &str) -> Instant {
    let start = Instant::now();
    loop {
        let found = times.lock().unwrap().iter().find(|(r, _)| *r == run).map(|p| p.1);
        if let Some(at) = found {
            return at;
        }
        assert!(start.elapsed() < GENEROUS, "{run} was never {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Polls until `count` outcomes arrived (or `GENEROUS` passed).
fn collect(handle: &LaneHandle, count: usize) -> Vec<Outcome> {
    let start = Instant::now();
    let mut outcomes = Vec::new();
    while outcomes.len() < count {
        assert!(start.elapsed() < GENEROUS, "only {} of {count} outcomes", outcomes.len());
        match handle.poll_outcome() {
            Some(outcome) => outcomes.push(outcome),
            None => thread::sleep(Duration::from_millis(1)),
        }
    }
    outcomes
}

fn timed<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let result = call();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(50), "{what} took {took:?} while the device was blocked");
    result
}

#[test]
fn submit_poll_and_publish_return_at_once_while_the_waiter_is_blocked_in_a_2s_device_wait() {
    let (handle, started_rx, _, seen) = stalling(Duration::from_secs(2), Then::Answer);
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let blocked_at = started_rx.recv_timeout(GENEROUS).expect("the waiter waits");

    let other = handle.clone();
    let (second, publication, done_at) = thread::spawn(move || {
        let second = timed("submit", || other.submit(RunRequest::new())).expect("accepted");
        let polled = timed("poll_outcome", || other.poll_outcome());
        assert_eq!(polled, None, "nothing finished yet");
        let publication = timed("publish", || other.publish(CodeRef(1))).expect("accepted");
        // Both of a2a3's slots are held: the refusal comes at once too.
        let full = timed("submit", || other.submit(RunRequest::new()));
        assert!(
            matches!(full, Err(ServiceError::Submit(lane_core::SubmitError::Full { slots: 2 }))),
            "{full:?}"
        );
        (second, publication, Instant::now())
    })
    .join()
    .expect("the caller thread");
    // The calls really overlapped the blocked wait.
    assert!(done_at.duration_since(blocked_at) < Duration::from_millis(1500));
    // And the lane thread acted on the submit while the waiter was still blocked (a device
    // call that ignores its bound): the second run was launched behind the first.
    let launched = when(&seen.launched, second, "launched");
    assert!(
        launched.duration_since(blocked_at) < Duration::from_millis(1500),
        "launched {:?} into the 2 s wait",
        launched.duration_since(blocked_at)
    );

    let outcomes = collect(&handle, 3);
    let seqs: Vec<u64> = outcomes.iter().map(Outcome::seq).collect();
    assert_eq!(seqs, vec![first.0, second.0, publication.0]);
    for outcome in &outcomes {
        match outcome {
            Outcome::Run(run) => assert_eq!(run.verdict, Verdict::Ok),
            Outcome::Publication(p) => assert_eq!(p.result, PublicationResult::Uploaded),
        }
    }
    assert_eq!(handle.poll_outcome(), None, "exactly one outcome per item");
}

#[test]
fn wait_blocks_only_its_caller_and_takes_each_outcome_once() {
    let (handle, started_rx, _, _) = stalling(Duration::from_millis(300), Then::Answer);
    let run = handle.submit(RunRequest::new()).expect("accepted");
    started_rx.recv_timeout(GENEROUS).expect("the waiter waits");
    assert_eq!(
        handle.wait(run, Duration::from_millis(10)),
        Err(WaitError::TimedOut { item: run.0 })
    );
    let outcome = handle.wait(run, GENEROUS).expect("the outcome");
    assert_eq!(outcome.seq(), run.0);
    assert_eq!(handle.wait(run, GENEROUS), Err(WaitError::AlreadyTaken { item: run.0 }));
    assert_eq!(handle.wait(RunId(99), GENEROUS), Err(WaitError::Unknown { item: 99 }));
    // A polled outcome is taken too.
    let next = handle.submit(RunRequest::new()).expect("accepted");
    let polled = collect(&handle, 1);
    assert_eq!(polled[0].seq(), next.0);
    assert_eq!(
        handle.wait(ItemId::Run(next), GENEROUS),
        Err(WaitError::AlreadyTaken { item: next.0 })
    );
}

#[test]
fn the_callback_sees_every_outcome_in_order_on_a_lane_thread_running_the_steps_without_taking_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let mut config = ServiceConfig::new(Profile::a5());
    config.on_outcome = Some(Box::new(move |outcome: &Outcome| {
        let name = thread::current().name().map(str::to_owned);
        log.lock().unwrap().push((name, outcome.seq()));
    }));
    let handle = spawn(config, || {
        Ok::<_, String>((SharedSim::new(sim(&Profile::a5(), 3, &[])), backend_sim::SimRunner))
    })
    .expect("the lane starts");
    let mut ids = Vec::new();
    for k in 0..6 {
        loop {
            match handle.submit(RunRequest::new().tagged(k)) {
                Ok(run) => break ids.push(run.0),
                Err(ServiceError::Submit(lane_core::SubmitError::Full { .. })) => {
                    thread::sleep(Duration::from_millis(1));
                }
                Err(other) => panic!("refused: {other}"),
            }
        }
    }
    let polled: Vec<u64> = collect(&handle, 6).iter().map(Outcome::seq).collect();
    assert_eq!(polled, ids);
    drop(handle);
    let seen = seen.lock().unwrap().clone();
    let shown: Vec<u64> = seen.iter().map(|&(_, seq)| seq).collect();
    assert_eq!(shown, ids);
    // Whichever of the lane's own threads ran the steps that delivered it (no submitter is
    // bound here): the completion waiter delivers most.
    for (name, seq) in &seen {
        assert!(
            matches!(name.as_deref(), Some("lane" | "lane-waiter")),
            "outcome {seq} shown on {name:?}"
        );
    }
}

#[test]
fn dropping_the_last_handle_lets_launched_runs_finish_and_joins_the_lane_thread() {
    let (handle, started_rx, watch, _) = stalling(Duration::from_millis(200), Then::Answer);
    let clone = handle.clone();
    handle.submit(RunRequest::new()).expect("accepted");
    started_rx.recv_timeout(GENEROUS).expect("the waiter waits");
    drop(clone);
    assert!(!watch.script().dropped, "a clone is still alive");
    let start = Instant::now();
    drop(handle);
    // The drop returned only after the lane thread ended (it dropped the device).
    assert!(watch.script().dropped);
    assert!(start.elapsed() < GENEROUS);
}

#[test]
fn a_panic_on_the_completion_waiter_wakes_every_waiter_with_the_cause_and_fails_every_later_call() {
    let (handle, started_rx, _, _) = stalling(Duration::from_millis(200), Then::Panic);
    let run = handle.submit(RunRequest::new()).expect("accepted");
    let waiter = {
        let handle = handle.clone();
        thread::spawn(move || {
            let start = Instant::now();
            (handle.wait(run, Duration::from_secs(60)), start.elapsed())
        })
    };
    started_rx.recv_timeout(GENEROUS).expect("the waiter waits");
    let (result, took) = waiter.join().expect("the waiter");
    assert!(took < GENEROUS, "the waiter hung for {took:?}");
    match result {
        Err(WaitError::Lost { item, cause }) => {
            assert_eq!(item, run.0);
            assert!(cause.0.contains("the device exploded"), "{cause}");
        }
        other => panic!("expected a lost lane, got {other:?}"),
    }
    assert!(matches!(handle.submit(RunRequest::new()), Err(ServiceError::Lost(_))));
    assert!(matches!(handle.publish(CodeRef(1)), Err(ServiceError::Lost(_))));
    assert!(matches!(handle.close(), Err(ServiceError::Lost(_))));
    assert_eq!(handle.poll_outcome(), None);
    let cause = handle.lost().expect("lost");
    assert!(cause.0.contains("panic on the completion waiter"), "{cause}");
    // Dropping it joins a thread that already ended: no hang.
    drop(handle);
}

#[test]
fn a_failing_or_panicking_make_is_returned_from_spawn() {
    let failed = spawn(ServiceConfig::new(Profile::a2a3()), || {
        Err::<(SharedSim, backend_sim::SimRunner), _>("no device 3")
    });
    assert!(
        matches!(&failed, Err(ServiceError::Make(text)) if text == "no device 3"),
        "{failed:?}"
    );
    let panicked = spawn(
        ServiceConfig::new(Profile::a2a3()),
        || -> Result<(SharedSim, backend_sim::SimRunner), String> { panic!("aclInit failed") },
    );
    assert!(
        matches!(&panicked, Err(ServiceError::Make(text)) if text.contains("aclInit failed")),
        "{panicked:?}"
    );
}

#[test]
fn close_cancels_queued_runs_at_once_and_later_commands_are_refused() {
    let (handle, started_rx, _, _) = stalling(Duration::from_millis(300), Then::Answer);
    let first = handle.submit(RunRequest::new()).expect("accepted");
    started_rx.recv_timeout(GENEROUS).expect("the waiter waits");
    let second = handle.submit(RunRequest::new()).expect("accepted");
    timed("close", || handle.close()).expect("closed");
    assert!(matches!(
        handle.submit(RunRequest::new()),
        Err(ServiceError::Submit(lane_core::SubmitError::Closed))
    ));
    let outcomes = collect(&handle, 2);
    assert_eq!(outcomes.iter().map(Outcome::seq).collect::<Vec<_>>(), vec![first.0, second.0]);
}

#[test]
fn a_run_submitted_during_a_long_completion_wait_is_launched_before_its_predecessor_completes() {
    let (handle, started_rx, _, seen) = stalling(Duration::from_millis(1500), Then::TimeOut);
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let waiting_since = started_rx.recv_timeout(GENEROUS).expect("the waiter waits");
    let submitted_at = Instant::now();
    let second = handle.submit(RunRequest::new()).expect("accepted");
    let prepared_at = when(&seen.prepared, second, "prepared");
    let launched_at = when(&seen.launched, second, "launched");
    // Acted on at once, not when the first run's wait ends (1.5 s after it began): the lane
    // thread never sits in the wait (L-16, L-18).
    for (what, at) in [("prepared", prepared_at), ("launched", launched_at)] {
        let late = at.duration_since(submitted_at);
        assert!(late < Duration::from_millis(500), "{what} {late:?} after its submit");
        assert!(at.duration_since(waiting_since) < Duration::from_millis(1500));
    }
    assert_eq!(handle.wait(first, GENEROUS).map(|o| o.seq()), Ok(first.0));
    assert_eq!(handle.wait(second, GENEROUS).map(|o| o.seq()), Ok(second.0));
}

#[test]
fn a_device_without_a_completion_waiter_is_refused_at_spawn_with_what_to_do() {
    let device = TestDevice::real();
    device.script().fail.push(Fail::every(Call::CompletionWaiter, 207_000));
    let refused = spawn(ServiceConfig::new(Profile::a2a3()), move || {
        Ok::<_, String>((device, Noting::default()))
    });
    match refused {
        Err(ServiceError::Waiter(code)) => assert!(code.contains("207000"), "{code}"),
        other => panic!("expected the waiter's refusal, got {other:?}"),
    }
    let text = ServiceError::Waiter("207000".into()).to_string();
    assert!(text.contains("implement Device::completion_waiter"), "{text}");
}

/// The waiter stuck in a call that ignores its timeout: the lane thread answers the wait at
/// its bound (the run's deadline plus `WAITER_GRACE_NS`): the run ends with a host wait
/// timeout, the device is recovered (the drain, queued behind the stuck call, is answered at
/// its own bound), and the lane runs on; the waiter's late answer is dropped.
#[test]
fn a_run_whose_waiter_never_answers_ends_with_a_host_wait_timeout_and_the_lane_recovers() {
    let profile = common::timeouts(1_000, 500, 100);
    // Past run 1's bound (its 1 s deadline, the 1 s device verdict's bound after it, and the
    // 6 s grace); its drain then waits behind the stuck call, and run 2's wait comes after it.
    let (device, _) = stalled(Duration::from_secs(10), Then::Answer);
    let handle = lane_on(ServiceConfig::new(profile), device, Noting::default());
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let started = Instant::now();
    let first = handle.wait_report(first, GENEROUS).expect("run 1's outcome");
    let took = started.elapsed();
    assert!(first.to_string().contains("rule=host-wait-timeout"), "{first} (after {took:?})");
    // At the bound (8 s), not when the stuck call returns (10 s).
    let bound = Duration::from_secs(2) + Duration::from_nanos(lane_driver::WAITER_GRACE_NS);
    assert!(took >= bound && took < Duration::from_millis(9_500), "{took:?}");
    let start = Instant::now();
    let second = loop {
        match handle.submit(RunRequest::new()) {
            Ok(run) => break run,
            Err(ServiceError::Submit(lane_core::SubmitError::Poisoned { .. }))
                if start.elapsed() < GENEROUS =>
            {
                thread::sleep(Duration::from_millis(5));
            }
            Err(other) => panic!("refused: {other}"),
        }
    };
    let second = handle.wait(second, GENEROUS).expect("run 2's outcome");
    assert_ok(&second);
    assert_eq!(handle.poll_outcome(), None, "one outcome per item");
    assert!(handle.lost().is_none());
    // The drop joins the waiter once its stuck call returns.
    drop(handle);
}

#[test]
fn the_handle_is_send_sync_and_clone() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<LaneHandle>();
}

#[test]
fn a_failed_calls_device_text_reaches_the_report_and_a_success_carries_none() {
    let device = TestDevice::real();
    let fault =
        Fail::runs(Call::SynchronizeEvent, &[2], 507_015).message("EZ9999: AICore exception");
    device.script().fail.push(fault);
    let handle = lane_on(ServiceConfig::new(Profile::a2a3()), device, Noting::default());
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let first = handle.wait_report(first, GENEROUS).expect("run 1's report");
    assert_ok(&first.outcome);
    assert_eq!(first.device_message, None, "no call failed for run 1");
    let second = handle.submit(RunRequest::new()).expect("accepted");
    let second = handle.wait_report(second, GENEROUS).expect("run 2's report");
    assert!(
        matches!(second.outcome, Outcome::Run(r) if matches!(r.verdict, Verdict::Failed { .. })),
        "{second}"
    );
    assert_eq!(second.device_message.as_deref(), Some("EZ9999: AICore exception"));
    assert!(second.to_string().ends_with("; device: EZ9999: AICore exception"), "{second}");
}

#[test]
fn with_submitters_bound_every_run_still_gets_its_outcome_in_order() {
    let mut config = ServiceConfig::new(Profile::a2a3());
    config.submitters_bound = true;
    let handle = lane_on(config, TestDevice::real(), Noting::default());
    for _ in 0..20 {
        run_ok(&handle, GENEROUS);
    }
    assert!(handle.lost().is_none());
}
