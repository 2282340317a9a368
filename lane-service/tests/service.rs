//! The lane service from other threads: L-16 (commands and polls never wait for a device
//! call in flight), one outcome per accepted item in order, waits, the callback, shutdown
//! on the last drop, and a lost lane after a panic on the lane thread.

mod common;

use common::{Stall, Stalling, StallingRunner, sim};
use lane_core::{CodeRef, Outcome, Profile, PublicationResult, RunId, RunRequest, Verdict};
use lane_service::{ItemId, LaneHandle, ServiceConfig, ServiceError, WaitError, spawn};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(30);

type Prepared = Arc<Mutex<Vec<(RunId, Instant)>>>;

fn stalling(stall: Stall) -> (LaneHandle, Arc<AtomicBool>) {
    let (handle, dropped, _) = stalling_with(ServiceConfig::new(Profile::a2a3()), stall);
    (handle, dropped)
}

fn stalling_with(config: ServiceConfig, stall: Stall) -> (LaneHandle, Arc<AtomicBool>, Prepared) {
    let (tx, rx) = mpsc::channel();
    let handle = spawn(config, move || {
        let device = Stalling::new(sim(&Profile::a2a3(), 7, &[]), stall);
        let _ = tx.send((Arc::clone(&device.dropped), Arc::clone(&device.prepared)));
        Ok::<_, String>((device, StallingRunner))
    })
    .expect("the lane starts");
    let (dropped, prepared) = rx.recv().expect("the device was made");
    (handle, dropped, prepared)
}

/// Polls until `count` outcomes arrived (or `GENEROUS` passed).
fn collect(handle: &LaneHandle, count: usize) -> Vec<Outcome> {
    let start = Instant::now();
    let mut outcomes = Vec::new();
    while outcomes.len() < count {
        assert!(
            start.elapsed() < GENEROUS,
            "only {} of {count} outcomes",
            outcomes.len()
        );
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
    assert!(
        took < Duration::from_millis(50),
        "{what} took {took:?} while the device was blocked"
    );
    result
}

#[test]
fn submit_poll_and_publish_return_at_once_while_the_lane_thread_is_blocked_in_a_2s_device_wait() {
    let (started_tx, started_rx) = mpsc::channel();
    let (handle, _) = stalling(Stall::Block(Duration::from_secs(2), started_tx));
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let blocked_at = started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");

    let other = handle.clone();
    let (second, publication, done_at) = thread::spawn(move || {
        let second = timed("submit", || other.submit(RunRequest::new())).expect("accepted");
        let polled = timed("poll_outcome", || other.poll_outcome());
        assert_eq!(polled, None, "nothing finished yet");
        let publication = timed("publish", || other.publish(CodeRef(1))).expect("accepted");
        // Both of a2a3's slots are held: the refusal comes at once too.
        let full = timed("submit", || other.submit(RunRequest::new()));
        assert!(
            matches!(
                full,
                Err(ServiceError::Submit(lane_core::SubmitError::Full {
                    slots: 2
                }))
            ),
            "{full:?}"
        );
        (second, publication, Instant::now())
    })
    .join()
    .expect("the caller thread");
    // The calls really overlapped the blocked wait.
    assert!(done_at.duration_since(blocked_at) < Duration::from_millis(1500));

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
    let (started_tx, started_rx) = mpsc::channel();
    let (handle, _) = stalling(Stall::Block(Duration::from_millis(300), started_tx));
    let run = handle.submit(RunRequest::new()).expect("accepted");
    started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");
    assert_eq!(
        handle.wait(run, Duration::from_millis(10)),
        Err(WaitError::TimedOut { item: run.0 })
    );
    let outcome = handle.wait(run, GENEROUS).expect("the outcome");
    assert_eq!(outcome.seq(), run.0);
    assert_eq!(
        handle.wait(run, GENEROUS),
        Err(WaitError::AlreadyTaken { item: run.0 })
    );
    assert_eq!(
        handle.wait(RunId(99), GENEROUS),
        Err(WaitError::Unknown { item: 99 })
    );
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
fn the_callback_sees_every_outcome_in_order_on_the_lane_thread_without_taking_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let mut config = ServiceConfig::new(Profile::a5());
    config.on_outcome = Some(Box::new(move |outcome: &Outcome| {
        let name = thread::current().name().map(str::to_owned);
        log.lock().unwrap().push((name, outcome.seq()));
    }));
    let handle = spawn(config, || {
        Ok::<_, String>((sim(&Profile::a5(), 3, &[]), backend_sim::SimRunner))
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
    let lane = Some("lane".to_owned());
    assert_eq!(
        seen,
        ids.iter()
            .map(|&seq| (lane.clone(), seq))
            .collect::<Vec<_>>()
    );
}

#[test]
fn dropping_the_last_handle_lets_launched_runs_finish_and_joins_the_lane_thread() {
    let (started_tx, started_rx) = mpsc::channel();
    let (handle, dropped) = stalling(Stall::Block(Duration::from_millis(200), started_tx));
    let clone = handle.clone();
    handle.submit(RunRequest::new()).expect("accepted");
    started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");
    drop(clone);
    assert!(!dropped.load(Ordering::SeqCst), "a clone is still alive");
    let start = Instant::now();
    drop(handle);
    // The drop returned only after the lane thread ended (it dropped the device).
    assert!(dropped.load(Ordering::SeqCst));
    assert!(start.elapsed() < GENEROUS);
}

#[test]
fn a_panic_on_the_lane_thread_wakes_every_waiter_with_the_cause_and_fails_every_later_call() {
    let (started_tx, started_rx) = mpsc::channel();
    let (handle, _) = stalling(Stall::Panic(Duration::from_millis(200), started_tx));
    let run = handle.submit(RunRequest::new()).expect("accepted");
    let waiter = {
        let handle = handle.clone();
        thread::spawn(move || {
            let start = Instant::now();
            (handle.wait(run, Duration::from_secs(60)), start.elapsed())
        })
    };
    started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");
    let (result, took) = waiter.join().expect("the waiter");
    assert!(took < GENEROUS, "the waiter hung for {took:?}");
    match result {
        Err(WaitError::Lost { item, cause }) => {
            assert_eq!(item, run.0);
            assert!(cause.0.contains("the device exploded"), "{cause}");
        }
        other => panic!("expected a lost lane, got {other:?}"),
    }
    assert!(matches!(
        handle.submit(RunRequest::new()),
        Err(ServiceError::Lost(_))
    ));
    assert!(matches!(
        handle.publish(CodeRef(1)),
        Err(ServiceError::Lost(_))
    ));
    assert!(matches!(handle.close(), Err(ServiceError::Lost(_))));
    assert_eq!(handle.poll_outcome(), None);
    let cause = handle.lost().expect("lost");
    assert!(cause.0.contains("panic on the lane thread"), "{cause}");
    // Dropping it joins a thread that already ended: no hang.
    drop(handle);
}

#[test]
fn a_failing_or_panicking_make_is_returned_from_spawn() {
    let failed = spawn(ServiceConfig::new(Profile::a2a3()), || {
        Err::<(backend_sim::SimDevice, backend_sim::SimRunner), _>("no device 3")
    });
    assert!(
        matches!(&failed, Err(ServiceError::Make(text)) if text == "no device 3"),
        "{failed:?}"
    );
    let panicked = spawn(
        ServiceConfig::new(Profile::a2a3()),
        || -> Result<(backend_sim::SimDevice, backend_sim::SimRunner), String> {
            panic!("aclInit failed")
        },
    );
    assert!(
        matches!(&panicked, Err(ServiceError::Make(text)) if text.contains("aclInit failed")),
        "{panicked:?}"
    );
}

#[test]
fn close_cancels_queued_runs_at_once_and_later_commands_are_refused() {
    let (started_tx, started_rx) = mpsc::channel();
    let (handle, _) = stalling(Stall::Block(Duration::from_millis(300), started_tx));
    let first = handle.submit(RunRequest::new()).expect("accepted");
    started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");
    let second = handle.submit(RunRequest::new()).expect("accepted");
    timed("close", || handle.close()).expect("closed");
    assert!(matches!(
        handle.submit(RunRequest::new()),
        Err(ServiceError::Submit(lane_core::SubmitError::Closed))
    ));
    let outcomes = collect(&handle, 2);
    assert_eq!(
        outcomes.iter().map(Outcome::seq).collect::<Vec<_>>(),
        vec![first.0, second.0]
    );
}

#[test]
fn a_run_submitted_during_a_long_completion_wait_is_prepared_within_a_few_slices() {
    let (started_tx, started_rx) = mpsc::channel();
    let mut config = ServiceConfig::new(Profile::a2a3());
    config.wait_slice = Duration::from_millis(5);
    let (handle, _, prepared) =
        stalling_with(config, Stall::Slow(Duration::from_millis(1500), started_tx));
    let first = handle.submit(RunRequest::new()).expect("accepted");
    let waiting_since = started_rx
        .recv_timeout(GENEROUS)
        .expect("the lane thread waits");
    let submitted_at = Instant::now();
    let second = handle.submit(RunRequest::new()).expect("accepted");
    let start = Instant::now();
    let prepared_at = loop {
        let found = prepared
            .lock()
            .unwrap()
            .iter()
            .find(|(run, _)| *run == second)
            .map(|p| p.1);
        if let Some(at) = found {
            break at;
        }
        assert!(
            start.elapsed() < GENEROUS,
            "the second run was never prepared"
        );
        thread::sleep(Duration::from_millis(1));
    };
    let late = prepared_at.duration_since(submitted_at);
    // Prepared while the first run still runs: at most a few 5 ms slices late, not 1.5 s.
    assert!(
        late < Duration::from_millis(500),
        "prepared {late:?} after its submit"
    );
    assert!(prepared_at.duration_since(waiting_since) < Duration::from_millis(1500));
    assert_eq!(handle.wait(first, GENEROUS).map(|o| o.seq()), Ok(first.0));
    assert_eq!(handle.wait(second, GENEROUS).map(|o| o.seq()), Ok(second.0));
}

#[test]
fn the_handle_is_send_sync_and_clone() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<LaneHandle>();
}
