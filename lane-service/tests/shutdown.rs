//! `LaneHandle::shut_down` and the teardown at the end (S-7, L-15): the shutdown joins every
//! thread of the lane whatever other clones exist, and returns the final close report; a
//! stream whose teardown destroys failed is destroyed once more before the lane thread ends,
//! and named in the report if it still survives. On the simulator with its stream-destroy
//! fault rule.

mod common;

use backend_sim::{FaultRule, SharedSim, SimRunner};
use common::{Noting, assert_ok, sim};
use lane_core::status_latch::AclCode;
use lane_core::{LaneState, Outcome, Profile, RunRequest, StreamsLeft};
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
    assert_ok(&outcome);
    handle.shut_down().expect("not on the lane's own thread").report
}

/// Closed cleanly, with no stream left.
const CLOSED: LaneState = LaneState::Closed { device_lost: false, left: StreamsLeft::NONE };

/// The final report names each stream that survived every destroy, with its last code, and
/// a second `shut_down` returns the same report. The AICPU stream is the first destroy of the
/// teardown (call 1), its retry the third (call 2 is the AICore stream's), and the shutdown's
/// last retry the fourth: with calls 1 and 3 failing, only that last retry can have
/// destroyed it.
#[test]
fn the_final_report_names_each_stream_left_after_the_shutdowns_last_destroy() {
    let aicpu_left = StreamsLeft { aicpu: AclCode::from_raw(507_901), aicore: None };
    for (case, fault, left) in [
        ("clean", None, StreamsLeft::NONE),
        ("every destroy fails", Some("stream-destroy=507901@call:1,3,4"), aicpu_left),
        ("destroyed at last", Some("stream-destroy=507901@call:1,3"), StreamsLeft::NONE),
    ] {
        let handle = lane(fault);
        let report = one_run_then_shut_down(&handle);
        assert_eq!(report.state, LaneState::Closed { device_lost: false, left }, "{case}");
        assert_eq!(report.streams_left, left, "{case}");
        assert!(report.poison.is_none() && !report.device_lost, "{case}");
        if left.aicpu.is_some() {
            let text = report.streams_left.to_string();
            assert!(text.starts_with("close left the AICPU stream"), "{text}");
        }
        let second = handle.shut_down().expect("again").report;
        assert_eq!(report, second, "{case}: a second shut_down");
    }
}

#[test]
fn shut_down_joins_the_lane_with_other_clones_alive_and_they_see_a_lost_lane() {
    let device = TestDevice::real();
    let watch = device.watch();
    let handle = common::lane_on(ServiceConfig::new(Profile::a2a3()), device, Noting::default());
    let clone = handle.clone();
    let run = clone.submit(RunRequest::new()).expect("accepted");
    let report = handle.shut_down().expect("from the test thread").report;
    assert_eq!(report.state, CLOSED);
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
    let answer = answer_rx.recv_timeout(GENEROUS).expect("the callback answered");
    slot.lock().unwrap().take();
    // The callback's shutdown request stands: this one joins the threads.
    let report = handle.shut_down().expect("from the test thread").report;
    assert_eq!(report.state, CLOSED);
    assert_eq!(answer, Err(ServiceError::OwnThread));
}
