//! The library's own fault notice monitor on the fake (SPEC L-19, device-truth §4): how
//! installing it goes when the library lacks a symbol it needs or refuses the registration
//! (the device opens either way and says why), and that it is registered again after a force
//! reset, so a notice still reaches the lanes when the reset took the registration down.
//!
//! A binary of its own: the monitor is process-wide (once installed, every force reset of
//! the process registers it again), so its tests must not share a process with tests that
//! count on the callback slot being left alone.

mod common;

use std::time::Duration;

use backend_acl::{AclConfig, AclDevice, Library, NoticeMonitor};
use lane_driver::{Device, NoticeRead, RawNotice};
use run_lane_fake_ascendcl::Semantics;

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
    fake.control
        .raise_notice(0, stream_id, AICORE_EXCEPTION, Duration::ZERO)
        .expect("raised");
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
        &NoticeMonitor::Unavailable {
            symbol: "aclrtGetStreamIdFromExceptionInfo"
        }
    );
    let message = device.notice_monitor().to_string();
    assert!(
        message.contains("lacks aclrtGetStreamIdFromExceptionInfo"),
        "{message}"
    );
    // Checked before registering: a handler that cannot read a notice never takes the slot.
    assert_eq!(
        raise_and_settle(&fake, 1),
        (0, 1),
        "dropped: no callback registered"
    );
    // What the library has still works: the streams get their ids.
    let stream = device.create_stream().expect("a stream");
    assert_eq!(device.stream_ids().count(), 1);
    device.destroy_stream(stream).expect("destroyed");
}

#[test]
fn a_refused_registration_opens_with_the_monitor_refused_and_its_code() {
    let fake = common::fake();
    fake.control
        .fail_call("aclrtSetExceptionInfoCallback", 500_000, 0, 1)
        .expect("the rule");
    let (device, _) = AclDevice::open(monitored(&fake, &[]))
        .unwrap_or_else(|e| panic!("a refused registration never refuses an open: {e}"));
    assert_eq!(
        device.notice_monitor(),
        &NoticeMonitor::Refused { code: 500_000 }
    );
    let message = device.notice_monitor().to_string();
    assert!(
        message.contains("not installed") && message.contains("returned 500000"),
        "{message}"
    );
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
    assert_eq!(
        raise_and_settle(&fake, 9),
        (1, 0),
        "delivered: registered again after the reset"
    );
    assert_eq!(
        ring.read(&mut cursor),
        NoticeRead::Notice(RawNotice {
            device: 0,
            stream_id: 9,
            code: AICORE_EXCEPTION,
        }),
        "the library's handler wrote it into the lanes' ring"
    );
}
