//! Issue 45's run controls through the service: a held run activated later, a keyed run
//! placed ahead of a staged one (L-2: its outcome comes first, and the earlier item is still
//! waited for), a cancel, and a run's state from another thread.

mod common;

use common::Noting;
use lane_core::{ControlError, Profile, RunRequest, RunState, Verdict};
use lane_driver::testkit::TestDevice;
use lane_service::{LaneHandle, ServiceConfig, ServiceError, WaitError};
use std::time::Duration;

const GENEROUS: Duration = Duration::from_secs(30);

fn lane() -> LaneHandle {
    common::lane_on(ServiceConfig::new(Profile::a2a3()), TestDevice::real(), Noting::default())
}

fn verdict(outcome: lane_core::Outcome) -> Verdict {
    match outcome {
        lane_core::Outcome::Run(run) => run.verdict,
        lane_core::Outcome::Publication(p) => panic!("a publication: {p:?}"),
    }
}

#[test]
fn a_keyed_runs_outcome_taken_first_leaves_the_earlier_staged_run_to_wait_for() {
    let handle = lane();
    let staged = handle.submit(RunRequest::new().keyed(30).held()).expect("accepted");
    let earlier = handle.submit(RunRequest::new().keyed(20)).expect("accepted");
    assert_eq!(verdict(handle.wait(earlier, GENEROUS).expect("runs first")), Verdict::Ok);
    // Delivered after a later sequence number, it is still to come, not taken.
    assert_eq!(
        handle.wait(staged, Duration::from_millis(20)),
        Err(WaitError::TimedOut { item: staged.0 })
    );
    let status = handle.run_status(staged).expect("pending");
    assert_eq!((status.state, status.held), (RunState::Prepared, true));
    handle.activate(staged).expect("held");
    assert_eq!(verdict(handle.wait(staged, GENEROUS).expect("runs once activated")), Verdict::Ok);
    assert_eq!(handle.wait(staged, GENEROUS), Err(WaitError::AlreadyTaken { item: staged.0 }));
    assert_eq!(handle.run_status(staged), None, "taken");
}

#[test]
fn a_cancel_through_the_handle_gives_a_cancelled_outcome_and_a_launched_run_is_refused() {
    let handle = lane();
    let held = handle.submit(RunRequest::new().held()).expect("accepted");
    handle.cancel(held).expect("unlaunched");
    assert_eq!(verdict(handle.wait(held, GENEROUS).expect("its outcome")), Verdict::Cancelled);
    let run = handle.submit(RunRequest::new()).expect("accepted");
    // The lane thread prepares and launches it at once (L-18): a cancel that comes first
    // cancels it, one that comes after is refused and the run gets its own verdict.
    let expected = match handle.cancel(run) {
        Ok(()) => Verdict::Cancelled,
        Err(ServiceError::Control(ControlError::Launched { .. })) => Verdict::Ok,
        other => panic!("{other:?}"),
    };
    assert_eq!(verdict(handle.wait(run, GENEROUS).expect("its outcome")), expected);
    assert!(matches!(
        handle.activate(run),
        Err(ServiceError::Control(ControlError::Unknown { .. }))
    ));
}
