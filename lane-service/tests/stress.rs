//! Stress: eight submitter threads and a poller against the simulator with faults on. Every
//! accepted item gets exactly one outcome (taken by the poller or by its submitter's wait),
//! polled outcomes come in sequence order, no wait misses its wake-up, nothing deadlocks.
//! Bounded in count (runs per submitter, attempts) and in time (a watchdog fails the test
//! instead of hanging). Once with the lane's own threads running its steps, once with the
//! submitting threads running them too, and once with no thread of the lane's own: the
//! callers drive it (L-23), the poller's polls and every submitter's waits make its device
//! waits.

mod common;

use backend_sim::{FaultRule, SharedSim, SimRunner};
use common::sim;
use lane_core::RunId;
use lane_core::{
    CodeRef, Outcome, Profile, PublicationResult, PublishError, RunRequest, SubmitError, Verdict,
};
use lane_service::{Drive, ItemId, LaneHandle, ServiceConfig, ServiceError, WaitError, spawn};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

const SUBMITTERS: u64 = 8;
const RUNS_PER_SUBMITTER: usize = 30;
/// Refusals (full, recovering) a submitter retries before it gives up on a run.
const ATTEMPTS: usize = 20_000;
/// The whole test fails if it has not finished by then.
const WATCHDOG: Duration = Duration::from_secs(60);
/// A wait that long without its outcome is a lost wake-up.
const WAIT: Duration = Duration::from_secs(20);

fn faults() -> Vec<FaultRule> {
    [
        "latch@rate:4%",
        "exception@rate:1%",
        "hang@rate:1%",
        "event-wait@rate:1%",
        "prepare-incompatible@rate:3%",
        "upload@rate:10%",
    ]
    .iter()
    .map(|spec| FaultRule::parse(spec).expect("a fault rule"))
    .collect()
}

/// What a submitter got: its accepted items and the outcomes its waits took.
struct Submitted {
    accepted: Vec<ItemId>,
    waited: Vec<u64>,
}

fn submitter(handle: &LaneHandle, index: u64, stop: &AtomicBool) -> Submitted {
    let mut submitted = Submitted { accepted: Vec::new(), waited: Vec::new() };
    'runs: for k in 0..RUNS_PER_SUBMITTER {
        for _ in 0..ATTEMPTS {
            if stop.load(Ordering::Relaxed) {
                break 'runs;
            }
            let request = RunRequest::new().tagged(index * 1_000 + k as u64);
            match handle.submit(request) {
                Ok(run) => {
                    submitted.accepted.push(ItemId::Run(run));
                    // Half the submitters race the poller for their own outcomes.
                    if index % 2 == 0 {
                        match handle.wait(run, WAIT) {
                            Ok(outcome) => submitted.waited.push(outcome.seq()),
                            Err(WaitError::AlreadyTaken { .. }) => {}
                            Err(other) => panic!("submitter {index}: wait for {run}: {other}"),
                        }
                    }
                    break;
                }
                Err(ServiceError::Submit(
                    SubmitError::Full { .. } | SubmitError::Poisoned { .. },
                )) => {
                    thread::sleep(Duration::from_micros(200));
                }
                Err(ServiceError::Submit(SubmitError::Lost { .. } | SubmitError::Closed)) => {
                    break 'runs;
                }
                Err(other) => panic!("submitter {index}: {other}"),
            }
        }
        if index == 1 && k % 10 == 9 {
            match handle.publish(CodeRef(k as u64)) {
                Ok(publication) => submitted.accepted.push(ItemId::Publication(publication)),
                Err(ServiceError::Publish(
                    PublishError::Full | PublishError::Poisoned { .. } | PublishError::Lost { .. },
                )) => {}
                Err(other) => panic!("publisher: {other}"),
            }
        }
    }
    submitted
}

#[test]
fn eight_submitters_and_a_poller_on_a_faulty_simulator_get_exactly_one_outcome_per_item_in_order() {
    stress(false, Drive::LaneThreads);
}

/// The same with the submitting threads running the lane's steps (a submit to an idle lane
/// prepares and launches on its own thread): submitters, the completion waiter and the lane
/// thread all take the steps in turn.
#[test]
fn with_submitters_bound_eight_submitters_and_a_poller_still_get_exactly_one_outcome_per_item_in_order()
 {
    stress(true, Drive::LaneThreads);
}

/// The same with no thread of the lane's own: every submitter, the poller and the waits run
/// the lane's steps and make its device waits on their own threads (L-23), one inside a
/// device wait at a time, the others sleeping or going on with their commands.
#[test]
fn with_the_callers_driving_eight_submitters_and_a_poller_still_get_exactly_one_outcome_per_item_in_order()
 {
    stress(false, Drive::Caller);
}

fn stress(submitters_bound: bool, drive: Drive) {
    let profile = Profile::a2a3();
    let mut config = ServiceConfig::new(profile);
    config.submitters_bound = submitters_bound;
    config.drive = drive;
    let handle = spawn(config, move || {
        Ok::<_, String>((SharedSim::new(sim(&profile, 12, &faults())), SimRunner))
    })
    .expect("the lane starts");
    let stop = Arc::new(AtomicBool::new(false));
    let submitters_done = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();

    let poller = {
        let (handle, stop, submitters_done) =
            (handle.clone(), Arc::clone(&stop), Arc::clone(&submitters_done));
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let mut polled = Vec::new();
            let mut failed = 0_usize;
            let mut idle_after_done = 0;
            // Where the callers drive the lane a poll makes no device wait: it looks at the
            // boundary (the simulator's event query), which finds a run complete once the
            // virtual clock passed it, but only a wait moves that clock to a hung run's op
            // timeout, and half the submitters never wait: the poller waits briefly for the
            // next item in turn.
            let mut next = 1;
            while !stop.load(Ordering::Relaxed) {
                let polled_now = match handle.poll_outcome() {
                    None if drive == Drive::Caller => {
                        match handle.wait(RunId(next), Duration::from_millis(2)) {
                            Ok(outcome) => Some(outcome),
                            Err(WaitError::AlreadyTaken { .. }) => {
                                next += 1;
                                None
                            }
                            Err(WaitError::Unknown { .. } | WaitError::TimedOut { .. }) => None,
                            Err(other) => panic!("poller: {other}"),
                        }
                    }
                    polled_now => polled_now,
                };
                if let Some(outcome) = &polled_now {
                    next = next.max(outcome.seq() + 1);
                }
                match polled_now {
                    Some(outcome) => {
                        if let Some(&last) = polled.last() {
                            assert!(outcome.seq() > last, "polled {} after {last}", outcome.seq());
                        }
                        polled.push(outcome.seq());
                        let ok = match outcome {
                            Outcome::Run(run) => run.verdict == Verdict::Ok,
                            Outcome::Publication(p) => p.result == PublicationResult::Uploaded,
                        };
                        failed += usize::from(!ok);
                    }
                    None if submitters_done.load(Ordering::SeqCst) => {
                        // Close and let the lane drain; a few idle rounds after that end it.
                        let _ = handle.close();
                        idle_after_done += 1;
                        if idle_after_done > 500 {
                            break;
                        }
                        thread::sleep(Duration::from_millis(1));
                    }
                    None => thread::yield_now(),
                }
            }
            let _ = done_tx.send(());
            (polled, failed)
        })
    };
    let submitters: Vec<_> = (0..SUBMITTERS)
        .map(|index| {
            let (handle, stop, done_tx) = (handle.clone(), Arc::clone(&stop), done_tx.clone());
            thread::spawn(move || {
                let submitted = submitter(&handle, index, &stop);
                let _ = done_tx.send(());
                submitted
            })
        })
        .collect();

    // The watchdog: every thread reports in, or the test fails.
    let start = Instant::now();
    for _ in 0..SUBMITTERS {
        let left = WATCHDOG.saturating_sub(start.elapsed());
        if done_rx.recv_timeout(left).is_err() {
            stop.store(true, Ordering::SeqCst);
            panic!("deadlock or livelock: submitters still running after {WATCHDOG:?}");
        }
    }
    submitters_done.store(true, Ordering::SeqCst);
    let left = WATCHDOG.saturating_sub(start.elapsed());
    if done_rx.recv_timeout(left).is_err() {
        stop.store(true, Ordering::SeqCst);
        panic!("the poller did not finish within {WATCHDOG:?}");
    }

    let (polled, failed) = poller.join().expect("the poller");
    assert!(failed > 0, "the faults fired");
    let mut taken: BTreeMap<u64, usize> = BTreeMap::new();
    let mut accepted = Vec::new();
    for submitter in submitters {
        let submitted = submitter.join().expect("a submitter");
        accepted.extend(submitted.accepted.iter().map(|item| item.seq()));
        for seq in submitted.waited {
            *taken.entry(seq).or_default() += 1;
        }
    }
    for &seq in &polled {
        *taken.entry(seq).or_default() += 1;
    }
    accepted.sort_unstable();
    assert!(accepted.len() >= 100, "only {} items accepted", accepted.len());
    let once: Vec<u64> = taken.iter().filter(|&(_, &n)| n == 1).map(|(&s, _)| s).collect();
    assert_eq!(once, accepted, "every accepted item has exactly one outcome");
    assert_eq!(taken.len(), accepted.len(), "no outcome for an item never accepted");
    assert_eq!(handle.lost(), None);
    drop(handle);
}
