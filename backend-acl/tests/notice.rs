//! The library's own fault notice monitor on the fake (SPEC L-19, device-truth §4): how
//! installing it goes when the library lacks a symbol it needs or refuses the registration
//! (the device opens either way and says why), and that it is registered again after a force
//! reset, so a notice still reaches the lanes when the reset took the registration down.
//! Which stream ids a notice may name (decision 0025): a destroyed stream's id for
//! `LATE_NOTICE_BOUND_NS`, a live stream's unless a stream killed by the last reset had its
//! number less than that ago; so a late notice for a stream the reset killed makes no second
//! recovery, whether the device restarts its stream numbering at a reset or not.
//!
//! A binary of its own: the monitor is process-wide (once installed, every force reset of
//! the process registers it again), so its tests must not share a process with tests that
//! count on the callback slot being left alone.

mod common;

use std::time::{Duration, Instant};

use backend_acl::{AclConfig, AclDevice, LATE_NOTICE_BOUND_NS, Library, NoticeMonitor};
use lane_core::status_latch::AclCode;
use lane_core::{FaultNotice, LaneState, RunRequest};
use lane_driver::{Device, NoticeRead, RawNotice, Report};
use run_lane_fake_ascendcl::{ENGINE_AICORE, Outcome as Kernel, Semantics};

use common::kernels::{FakeDriver, driver, failed, verdict};

const AICORE_EXCEPTION: i32 = 507_015;

/// A config for device 0 with the monitor asked for, on the fake with `hidden` hidden.
fn monitored(fake: &common::Fake, hidden: &[&str]) -> AclConfig {
    AclConfig {
        library: Library::PathHiding {
            path: fake.path.clone(),
            hidden: hidden.iter().map(|s| (*s).to_owned()).collect(),
        },
        notice_monitor: true,
        ..fake.config()
    }
}

/// Raises a notice due at once and returns the fake's (delivered, dropped) counts once it
/// was one or the other.
fn raise_and_settle(fake: &common::Fake, stream_id: i32) -> (u64, u64) {
    let before = fake.control.notice_counts().expect("counts");
    fake.control.raise_notice(0, stream_id, AICORE_EXCEPTION, Duration::ZERO).expect("raised");
    let since = std::time::Instant::now();
    loop {
        let now = fake.control.notice_counts().expect("counts");
        if now.0 + now.1 > before.0 + before.1 {
            return now;
        }
        assert!(since.elapsed() < Duration::from_secs(30), "never settled");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn without_one_getter_the_monitor_is_unavailable_naming_it_and_nothing_is_registered() {
    let fake = common::fake();
    let (mut device, _) = AclDevice::open(monitored(&fake, &["aclrtGetStreamIdFromExceptionInfo"]))
        .unwrap_or_else(|e| panic!("a missing optional symbol never refuses an open: {e}"));
    assert_eq!(
        device.notice_monitor(),
        &NoticeMonitor::Unavailable { symbol: "aclrtGetStreamIdFromExceptionInfo" }
    );
    let message = device.notice_monitor().to_string();
    assert!(message.contains("lacks aclrtGetStreamIdFromExceptionInfo"), "{message}");
    // Checked before registering: a handler that cannot read a notice never takes the slot.
    assert_eq!(raise_and_settle(&fake, 1), (0, 1), "dropped: no callback registered");
    // What the library has still works: the streams get their ids.
    let stream = device.create_stream().expect("a stream");
    assert_eq!(device.stream_ids().count(), 1);
    device.destroy_stream(stream).expect("destroyed");
}

#[test]
fn a_refused_registration_opens_with_the_monitor_refused_and_its_code() {
    let fake = common::fake();
    fake.control.fail_call("aclrtSetExceptionInfoCallback", 500_000, 0, 1).expect("the rule");
    let (device, _) = AclDevice::open(monitored(&fake, &[]))
        .unwrap_or_else(|e| panic!("a refused registration never refuses an open: {e}"));
    assert_eq!(device.notice_monitor(), &NoticeMonitor::Refused { code: 500_000 });
    let message = device.notice_monitor().to_string();
    assert!(message.contains("not installed") && message.contains("returned 500000"), "{message}");
    assert_eq!(raise_and_settle(&fake, 1), (0, 1), "nothing registered");
}

#[test]
fn with_the_monitor_installed_a_notice_after_a_reset_that_dropped_the_registration_reaches_the_ring()
 {
    let fake = common::fake();
    // The reset takes the registration down with the device's context (one of the two
    // behaviours device-truth §4 cannot tell apart).
    fake.control
        .device(0)
        .set_semantics(Semantics::ResetDropsExceptionCallback(true))
        .expect("the switch");
    let (mut device, _) = AclDevice::open(monitored(&fake, &[])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(device.notice_monitor(), &NoticeMonitor::Installed);
    device.reset_device_force().expect("the force reset");
    assert_eq!(fake.counters().force_resets, 1);
    let ring = lane_driver::notices();
    let mut cursor = ring.head();
    assert_eq!(raise_and_settle(&fake, 9), (1, 0), "delivered: registered again after the reset");
    assert_eq!(
        ring.read(&mut cursor),
        NoticeRead::Notice(RawNotice { device: 0, stream_id: 9, code: AICORE_EXCEPTION }),
        "the library's handler wrote it into the lanes' ring"
    );
}

/// A notice on device 0 naming `stream_id`.
fn notice(stream_id: u32) -> FaultNotice {
    FaultNotice {
        device: 0,
        stream_id,
        code: AclCode::from_raw(AICORE_EXCEPTION).unwrap_or(AclCode::Unknown(AICORE_EXCEPTION)),
    }
}

/// The ids (`aclrtStreamGetId`) of device 0's live streams, as the fake numbers them.
fn live_ids(fake: &common::Fake) -> Vec<u32> {
    fake.control
        .live_stream_ids(0)
        .expect("stream ids")
        .into_iter()
        .map(|id| u32::try_from(id).expect("a non-negative id"))
        .collect()
}

#[test]
fn a_destroyed_streams_id_matches_a_notice_until_the_late_notice_bound_then_never() {
    let (fake, mut device) = common::opened();
    let stream = device.create_stream().expect("a stream");
    let id = live_ids(&fake)[0];
    let other = device.create_stream().expect("another stream");
    assert!(device.notice_concerns(&notice(id)), "a live stream's id");
    // The destroy is made between these two readings of the device's clock.
    let before = device.now();
    device.destroy_stream(stream).expect("destroyed");
    let gone = device.now();
    assert!(
        device.notice_concerns(&notice(id)),
        "a late notice may name a stream already destroyed"
    );
    assert!(device.notice_concerns_at(&notice(id), before.after_ns(LATE_NOTICE_BOUND_NS - 1)));
    assert!(
        !device.notice_concerns_at(&notice(id), gone.after_ns(LATE_NOTICE_BOUND_NS)),
        "no notice is that late: the number may be someone else's now"
    );
    assert!(
        !device.stream_ids_at(gone.after_ns(LATE_NOTICE_BOUND_NS)).any(|i| i == id),
        "listed no more"
    );
    // A live stream's id matches however long it lives; another device's never.
    let live = live_ids(&fake)[0];
    assert!(device.notice_concerns_at(&notice(live), gone.after_ns(10 * LATE_NOTICE_BOUND_NS)));
    assert!(!device.notice_concerns(&FaultNotice { device: 1, ..notice(live) }));
    device.destroy_stream(other).expect("destroyed");
    fake.assert_balanced();
}

#[test]
fn an_id_from_before_a_force_reset_matches_nothing_for_the_bound_even_when_a_live_stream_took_it() {
    let fake = common::fake();
    fake.control
        .device(0)
        .set_semantics(Semantics::ResetRestartsStreamNumbering(true))
        .expect("the switch");
    let (mut device, _) = fake.open();
    let _killed = device.create_stream().expect("a stream");
    let old = live_ids(&fake)[0];
    let before = device.now();
    device.reset_device_force().expect("the force reset");
    let reset = device.now();
    assert!(
        !device.notice_concerns(&notice(old)),
        "the reset already recovered whatever it reports"
    );
    let stream = device.create_stream().expect("a stream after the reset");
    assert_eq!(live_ids(&fake), vec![old], "the device reused the number");
    assert!(
        !device.notice_concerns(&notice(old)),
        "a late notice for the killed stream, or a live one's: no second recovery"
    );
    assert!(!device.notice_concerns_at(&notice(old), before.after_ns(LATE_NOTICE_BOUND_NS - 1)));
    assert!(
        device.notice_concerns_at(&notice(old), reset.after_ns(LATE_NOTICE_BOUND_NS)),
        "past the bound, the number is the live stream's alone"
    );
    device.destroy_stream(stream).expect("destroyed");
    fake.assert_balanced();
}

/// Runs one run to its report.
fn one_run(d: &mut FakeDriver) -> Report {
    d.submit(RunRequest::new()).expect("driver").expect("admitted");
    d.run_until_idle().expect("driver");
    d.poll_report().expect("its report")
}

/// A lane on device 0 with the library's monitor: its first run's AICore kernel faults (one
/// recovery), and once it reopened on new streams, the driver's late notice for a stream
/// the reset killed arrives. It must make no second recovery. With `restart` the device
/// restarts its stream numbering at the reset, so the notice names a live stream's number
/// too. Returns the id the notice named.
fn a_late_notice_for_a_killed_stream_after_the_reopen(restart: bool) -> u32 {
    let fake = common::fake();
    if restart {
        fake.control
            .device(0)
            .set_semantics(Semantics::ResetRestartsStreamNumbering(true))
            .expect("the switch");
    }
    let mut d = driver(&fake, monitored(&fake, &[]), Vec::new());
    assert_eq!(d.device().notice_monitor(), &NoticeMonitor::Installed);
    fake.control.fault_kernel(Kernel::Exception, ENGINE_AICORE, 0, 1, &[]).expect("the rule");
    d.submit(RunRequest::new()).expect("driver").expect("admitted");
    let since = Instant::now();
    while fake.counters().launches < 2 {
        assert!(since.elapsed() < Duration::from_secs(30), "never launched");
        d.turn().expect("driver");
    }
    let old = live_ids(&fake);
    d.run_until_idle().expect("driver");
    let faulted = d.poll_report().expect("run 1's report");
    assert_eq!(failed(&faulted).code(), Some(AICORE_EXCEPTION), "{faulted}");
    assert_eq!(fake.counters().force_resets, 1, "one recovery");
    // Reopened: the next run makes the new pair.
    assert!(verdict(&one_run(&mut d)).is_ok());
    let new = live_ids(&fake);
    let named = if restart {
        *old.iter()
            .find(|id| new.contains(id))
            .unwrap_or_else(|| panic!("numbering restarted: {old:?} then {new:?}"))
    } else {
        assert!(new.iter().all(|id| !old.contains(id)), "never reused: {old:?} then {new:?}");
        old[0]
    };
    // The driver's notice for the faulted streams, late: after the reopen.
    let (delivered, _) = raise_and_settle(&fake, i32::try_from(named).expect("a small id"));
    assert_eq!(delivered, 1, "through the library's handler");
    d.run_until_idle().expect("driver");
    assert_eq!(d.lane().state(), LaneState::Open, "not suspect");
    for _ in 0..3 {
        assert!(verdict(&one_run(&mut d)).is_ok());
    }
    assert_eq!(fake.counters().force_resets, 1, "no second recovery");
    assert_eq!(d.lane().state(), LaneState::Open);
    let report = d.close().expect("driver");
    assert_eq!(report.notice, None, "no notice caused a recovery");
    d.run_until_idle().expect("driver");
    fake.assert_balanced();
    named
}

#[test]
fn with_stream_numbering_restarted_at_the_reset_a_late_notice_for_a_killed_stream_makes_no_second_recovery()
 {
    a_late_notice_for_a_killed_stream_after_the_reopen(true);
}

#[test]
fn with_stream_numbers_never_reused_a_late_notice_for_a_killed_stream_makes_no_second_recovery() {
    a_late_notice_for_a_killed_stream_after_the_reopen(false);
}

#[test]
fn a_notice_for_a_live_stream_still_makes_one_recovery() {
    let fake = common::fake();
    let mut d = driver(&fake, monitored(&fake, &[]), Vec::new());
    assert!(verdict(&one_run(&mut d)).is_ok());
    let live = live_ids(&fake);
    let (delivered, _) = raise_and_settle(&fake, i32::try_from(live[1]).expect("a small id"));
    assert_eq!(delivered, 1);
    d.run_until_idle().expect("driver");
    assert!(verdict(&one_run(&mut d)).is_ok(), "the lane recovered and reopened");
    assert_eq!(fake.counters().force_resets, 1, "the notice's recovery");
    let report = d.close().expect("driver");
    assert_eq!(report.notice.map(|n| n.stream_id), Some(live[1]));
    d.run_until_idle().expect("driver");
    fake.assert_balanced();
}
