//! `LaneHandle::shut_down` and the teardown at the end (S-7, L-15): the shutdown joins every
//! thread of the lane whatever other clones exist, and returns the final close report; a
//! stream whose teardown destroys failed is destroyed once more before the lane thread ends,
//! and named in the report if it still survives. On the simulator with its stream-destroy
//! fault rule.

mod common;

use backend_sim::{FaultRule, SharedSim, SimRunner};
use common::{Noting, sim};
use lane_core::status_latch::AclCode;
use lane_core::{LaneState, Outcome, Profile, RunRequest, StreamsLeft, Verdict};
use lane_driver::testkit::TestDevice;
use lane_service::{LaneHandle, ServiceConfig, ServiceError, WaitError, spawn};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const GENEROUS: Duration = Duration::from_secs(30);

/// A simulated lane whose stream destroys fail as `destroy_fault` says (the sim's
/// `stream-destroy` rule; `None`: never).
fn lane(destroy_fault: Option<&str>) -> LaneHandle {
    let faults: Vec<FaultRule> = destroy_fault
        .map(|spec| FaultRule::parse(spec).expect("a fault rule"))
        .into_iter()
        .collect();
    spawn(ServiceConfig::new(Profile::a2a3()), move || {
        Ok::<_, String>((SharedSim::new(sim(&Profile::a2a3(), 5, &faults)), SimRunner))
    })
    .expect("the lane starts")
}

/// Runs one run to its outcome (so both streams exist), then shuts the lane down.
fn one_run_then_shut_down(handle: &LaneHandle) -> lane_core::CloseReport {
    let run = handle.submit(RunRequest::new()).expect("accepted");
    let outcome = handle.wait(run, GENEROUS).expect("its outcome");
    assert!(matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok));
    handle
        .shut_down()
        .expect("not on the lane's own thread")
        .report
}

#[test]
fn a_clean_shutdown_reports_closed_with_no_stream_left() {
    let handle = lane(None);
    let report = one_run_then_shut_down(&handle);
    assert_eq!(
        report.state,
        LaneState::Closed {
            device_lost: false,
            left: StreamsLeft::NONE,
        }
    );
    assert_eq!(report.streams_left, StreamsLeft::NONE);
    assert!(report.poison.is_none() && !report.device_lost);
}

#[test]
fn a_stream_whose_every_destroy_fails_is_named_with_its_code_in_the_final_report() {
    // The AICPU stream is the first destroy of the teardown (call 1), its retry the third
    // (call 2 is the AICore stream's), and the shutdown's last retry the fourth.
    let handle = lane(Some("stream-destroy=507901@call:1,3,4"));
    let report = one_run_then_shut_down(&handle);
    assert_eq!(
        report.state,
        LaneState::Closed {
            device_lost: false,
            left: report.streams_left,
        }
    );
    assert_eq!(report.streams_left.aicpu, AclCode::from_raw(507_901));
    assert_eq!(
        report.streams_left.aicore, None,
        "the AICore stream was destroyed"
    );
    assert!(
        report
            .streams_left
            .to_string()
            .starts_with("close left the AICPU stream"),
        "{}",
        report.streams_left
    );
}

#[test]
fn a_stream_the_teardown_left_is_destroyed_once_more_at_the_shutdown() {
    // The teardown's destroy and its retry of the AICPU stream fail (calls 1 and 3): only the
    // shutdown's last retry (call 4) can have destroyed it.
    let handle = lane(Some("stream-destroy=507901@call:1,3"));
    let report = one_run_then_shut_down(&handle);
    assert_eq!(
        report.state,
        LaneState::Closed {
            device_lost: false,
            left: StreamsLeft::NONE,
        }
    );
    assert_eq!(report.streams_left, StreamsLeft::NONE, "destroyed at last");
}

#[test]
fn a_second_shut_down_returns_the_same_final_report() {
    let handle = lane(Some("stream-destroy=507901@call:1,3,4"));
    let first = one_run_then_shut_down(&handle);
    let second = handle.shut_down().expect("again").report;
    assert_eq!(first, second);
}

#[test]
fn shut_down_joins_the_lane_with_other_clones_alive_and_they_see_a_lost_lane() {
    let device = TestDevice::real();
    let watch = device.watch();
    let handle = common::lane_on(
        ServiceConfig::new(Profile::a2a3()),
        device,
        Noting::default(),
    );
    let clone = handle.clone();
    let run = clone.submit(RunRequest::new()).expect("accepted");
    let report = handle.shut_down().expect("from the test thread").report;
    assert_eq!(
        report.state,
        LaneState::Closed {
            device_lost: false,
            left: StreamsLeft::NONE,
        }
    );
    assert!(
        watch.script().dropped,
        "the lane thread ended (dropping its device) before shut_down returned"
    );
    // The run launched before the shutdown finished: its outcome is still there to take.
    assert!(
        matches!(clone.poll_outcome(), Some(Outcome::Run(r)) if r.run == run),
        "an outcome delivered before the shutdown is kept"
    );
    match clone.submit(RunRequest::new()) {
        Err(ServiceError::Lost(cause)) => assert!(cause.0.contains("shut down"), "{cause}"),
        other => panic!("expected a lost lane, got {other:?}"),
    }
    match clone.wait(run, GENEROUS) {
        Err(WaitError::AlreadyTaken { .. }) => {}
        other => panic!("expected the taken outcome, got {other:?}"),
    }
}

#[test]
fn shut_down_from_the_outcome_callback_is_refused_as_its_own_thread_and_shuts_down_anyway() {
    let slot: Arc<Mutex<Option<LaneHandle>>> = Arc::new(Mutex::new(None));
    let (answer_tx, answer_rx) = std::sync::mpsc::channel::<Result<(), ServiceError>>();
    let answer_tx = Mutex::new(answer_tx);
    let mut config = ServiceConfig::new(Profile::a2a3());
    let callback_slot = Arc::clone(&slot);
    config.on_outcome = Some(Box::new(move |_outcome: &Outcome| {
        // A clone, dropped at once: the test's own handle stays the last.
        let handle = callback_slot.lock().unwrap().clone();
        if let Some(handle) = handle {
            let answer = handle.shut_down().map(|_| ());
            let _ = answer_tx.lock().unwrap().send(answer);
        }
    }));
    let handle = spawn(config, || {
        Ok::<_, String>((SharedSim::new(sim(&Profile::a2a3(), 9, &[])), SimRunner))
    })
    .expect("the lane starts");
    *slot.lock().unwrap() = Some(handle.clone());
    let run = handle.submit(RunRequest::new()).expect("accepted");
    handle.wait(run, GENEROUS).expect("its outcome");
    // The callback sees the outcome after it is delivered: wait for its answer, not the
    // outcome, before the slot is emptied.
    let answer = answer_rx
        .recv_timeout(GENEROUS)
        .expect("the callback answered");
    slot.lock().unwrap().take();
    // The callback's shutdown request stands: this one joins the threads.
    let report = handle.shut_down().expect("from the test thread").report;
    assert_eq!(
        report.state,
        LaneState::Closed {
            device_lost: false,
            left: StreamsLeft::NONE,
        }
    );
    assert_eq!(answer, Err(ServiceError::OwnThread));
}
