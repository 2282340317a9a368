//! L-24: the runtime may own recovery. With `Recovery::Runtime` a poison (or a matched fault
//! notice) gives every item its verdict, tells the runner once (`Hook(OnPoison)`), and then
//! the lane asks nothing of the device (no drain, reset, probe or destroy) until the runtime
//! reports its reset (`Lane::device_reset`), which reopens it on fresh streams. In place, the
//! runner is told before the reset and after it.

mod common;

use common::{Fault, Harness};
use lane_core::status_latch::RuntimeCode;
use lane_core::{
    DeviceResetError, LaneState, Profile, ProfileSpec, PublishError, Recovery, RunId, RunRequest,
    SubmitError, Verdict,
};

fn runtime_recovery() -> Harness {
    Harness::new(
        Profile::custom(ProfileSpec { recovery: Recovery::Runtime, ..Profile::a2a3().spec() })
            .expect("a2a3 with the runtime's recovery"),
    )
}

/// Whether `line` is an effect that touches the device.
fn device_call(line: &str) -> bool {
    !line.starts_with("Hook") && !line.starts_with("AdoptReset")
}

#[test]
fn a_poison_tells_the_runner_once_and_asks_nothing_of_the_device_until_the_runtimes_reset() {
    let mut h = runtime_recovery();
    h.fault(Fault::Latch(1, RuntimeCode::SchedulerTimeout));
    let r1 = h.run();
    let r2 = h.run();
    h.take();
    h.complete(r1);
    let log = h.take();
    assert_eq!(
        log,
        ["ReadStatus run 1", "Hook OnPoison origin run 1 (SCHEDULER_TIMEOUT)"],
        "no drain, reset or probe"
    );
    assert_eq!(h.state(), LaneState::Unusable);
    // Every item has its verdict before the hand-over is any use to the runtime.
    assert!(matches!(h.verdict(r1), Some(Verdict::Failed { .. })));
    assert!(matches!(
        h.verdict(r2),
        Some(Verdict::Poisoned { origin, .. }) if origin == r1
    ));
    let refused = h.lane.submit(h.now, RunRequest::new()).unwrap_err();
    assert!(matches!(refused, SubmitError::Unusable { origin, .. } if origin == r1), "{refused:?}");
    assert!(refused.to_string().contains("device_reset"), "{refused}");
    assert!(matches!(
        h.lane.publish(h.now, lane_core::CodeRef(1)),
        Err(PublishError::Unusable { .. })
    ));
    // Time passing, or a late answer, asks nothing of the device either.
    h.tick(60_000_000_000);
    h.lane.handle_timeout(h.now);
    h.pump();
    assert!(h.take().is_empty());

    h.lane.device_reset(h.now).expect("awaited");
    h.pump();
    assert_eq!(h.take(), ["AdoptReset"]);
    assert_eq!(h.state(), LaneState::Open);
    let r3 = h.run();
    let log = h.take();
    assert!(log.iter().any(|l| l.starts_with("CreateStream")), "fresh streams: {log:?}");
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
}

#[test]
fn the_hand_over_waits_for_runner_work_out_and_each_outcome_for_its_own_callback() {
    let mut h = runtime_recovery();
    let r1 = h.run();
    h.take();
    // Run 2's prepare is taken, as by a host worker, and not answered yet.
    h.lane.submit(h.now, RunRequest::new()).unwrap();
    let prepare = h.lane.poll_effect().expect("run 2's prepare");
    assert!(matches!(prepare, lane_core::Effect::PrepareRun { run: RunId(2), .. }), "{prepare}");
    h.fail_completion(r1, 507_015);
    assert!(
        h.take().iter().all(|l| !l.starts_with("Hook")),
        "no hand-over while the prepare is out"
    );
    assert!(h.verdict(RunId(2)).is_none(), "L-26: run 2's outcome waits for its prepare to return");
    let lane_core::Effect::PrepareRun { run, lease, .. } = prepare else { unreachable!() };
    h.feed(lane_core::Event::Prepared { run, lease }).unwrap();
    h.pump();
    assert!(matches!(
        h.verdict(RunId(2)),
        Some(Verdict::Poisoned { origin, .. }) if origin == r1
    ));
    assert_eq!(h.take(), ["Hook OnPoison origin run 1 (ACL_ERROR_RT_AICORE_EXCEPTION)"]);
    assert_eq!(h.state(), LaneState::Unusable);
}

#[test]
fn a_fault_notice_hands_the_device_over_once_the_launched_runs_have_their_verdicts() {
    let mut h = runtime_recovery();
    let r1 = h.run();
    h.take();
    let notice = lane_core::FaultNotice {
        device: 0,
        stream_id: 3,
        code: lane_core::status_latch::AclCode::RtAicoreException,
    };
    assert!(h.notice(notice));
    assert!(h.take().is_empty(), "the launched run finishes first");
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok), "a notice decides no run");
    let log = h.take();
    assert_eq!(
        log.last().map(String::as_str),
        Some("Hook OnPoison (ACL_ERROR_RT_AICORE_EXCEPTION)"),
        "no origin run: the notice is the cause"
    );
    assert!(
        log.iter().all(|l| !l.starts_with("DrainDevice") && !l.starts_with("ForceReset")),
        "{log:?}"
    );
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new()),
        Err(SubmitError::UnusableAfterNotice { notice })
    );
    h.lane.device_reset(h.now).unwrap();
    h.pump();
    assert_eq!(h.take(), ["AdoptReset"]);
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_close_while_unusable_ends_the_lane_without_a_device_call_and_a_late_reset_is_refused() {
    let mut h = runtime_recovery();
    let r1 = h.run();
    h.take();
    h.fail_completion(r1, 507_015);
    h.take();
    assert_eq!(h.state(), LaneState::Unusable);
    let report = h.close();
    assert!(matches!(report.state, LaneState::Closed { .. }));
    assert_eq!(report.poison.map(|p| p.origin), Some(r1));
    let log = h.take();
    assert!(
        log.iter().all(|l| !device_call(l)),
        "no destroy of a stream the runtime will reset: {log:?}"
    );
    let before = h.lane.fingerprint();
    assert!(matches!(h.lane.device_reset(h.now), Err(DeviceResetError::NotAwaited { .. })));
    assert_eq!(h.lane.fingerprint(), before, "a refused report changes nothing");
}

#[test]
fn a_poison_during_a_close_still_hands_the_device_over_and_closes() {
    let mut h = runtime_recovery();
    let r1 = h.run();
    h.take();
    h.close();
    h.take();
    h.fail_completion(r1, 507_015);
    let log = h.take();
    assert_eq!(log, ["Hook OnPoison origin run 1 (ACL_ERROR_RT_AICORE_EXCEPTION)"]);
    assert!(matches!(h.state(), LaneState::Closed { .. }));
}

#[test]
fn a_reset_report_the_lane_does_not_await_is_refused_and_changes_nothing() {
    for mut h in [runtime_recovery(), Harness::a2a3()] {
        let r1 = h.run();
        h.take();
        let before = h.lane.fingerprint();
        let refused = h.lane.device_reset(h.now).unwrap_err();
        assert!(refused.to_string().contains("awaits no reset"), "{refused}");
        assert_eq!(h.lane.fingerprint(), before);
        h.complete(r1);
        assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    }
}
