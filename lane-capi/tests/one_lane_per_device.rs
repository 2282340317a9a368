//! One device, one reset (SPEC L-25, decision 0028) through the C ABI on the fake
//! libascendcl: a second lane on a device id is refused at create, naming the first, so the
//! first lane's recovery is the device's only reset (none under a wait) and it reopens; once
//! the first is destroyed the device id takes a new lane; through the ACL backend and through
//! a runtime's device table alike, and across them (an ACL lane holds its id against a table
//! lane). Simulated lanes have devices of their own and are never refused.
//!
//! Its own test binary: the fake's state is process-wide; the tests take `common::serial()`.

mod common;

use std::time::Duration;

use common::*;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, Outcome};

/// Each run's kernels.
const KERNEL: Duration = Duration::from_millis(2);

/// Run 1's AICore kernel raises an AICore exception: a poison, and the device's one reset.
static POISONED: Kernels = Kernels::faulty(KERNEL, &[(1, ENGINE_AICORE, Outcome::Exception)]);

static HEALTHY: Kernels = Kernels::healthy(KERNEL);

fn a_second_lane_on_a_device_id_is_refused_naming_the_first_and_the_first_resets_it_alone(
    via: Via,
) {
    // Each backend's run counts the fake's resets from zero.
    let _fake = fresh();
    let device = 12;
    let first = create(&fake_config(via, device, &POISONED, 5_000));
    // A second lane on the same device id.
    let (status, message) = refusal(&fake_config(via, device, &HEALTHY, 5_000));
    assert_eq!(status, RunLaneStatus::BackendUnavailable);
    let names = message.contains(&format!("device {device} already has a lane"));
    assert!(names, "{message}");
    assert!(message.contains("destroy that lane first"), "{message}");
    // Another device id is free.
    let other = create(&fake_config(via, device + 1, &HEALTHY, 5_000));
    // The first lane's poison is the device's one reset, made under no wait, and it reopens.
    let resets_under_wait = control().resets_under_wait();
    poison_with_run_1_and_recover(first, device);
    assert_eq!(force_resets(device), 1);
    assert_eq!(control().resets_under_wait(), resets_under_wait);
    assert_eq!(force_resets(device + 1), 0, "the other device untouched");
    destroy(first);
    let again = create(&fake_config(via, device, &HEALTHY, 5_000));
    let run = submit(again).expect("accepted");
    assert_eq!(wait(again, run).verdict, RunLaneVerdict::Ok);
    destroy(again);
    destroy(other);
}
on_each_backend!(
    a_second_lane_on_a_device_id_is_refused_naming_the_first_and_the_first_resets_it_alone
);

#[test]
fn simulated_lanes_have_devices_of_their_own_and_are_never_refused() {
    let config = sim_config();
    let lanes: Vec<_> = (0..3).map(|_| create(&config)).collect();
    for lane in lanes {
        destroy(lane);
    }
}

#[test]
fn a_device_id_an_acl_lane_holds_is_refused_to_a_device_table_lane_too() {
    let _serial = serial();
    let device = 14;
    let acl = create(&fake_config(Via::Acl, device, &HEALTHY, 5_000));
    // A table lane on the ACL lane's device id.
    let (status, message) = refusal(&fake_config(Via::DeviceOps, device, &HEALTHY, 5_000));
    assert_eq!(status, RunLaneStatus::BackendUnavailable);
    let names = message.contains(&format!("device {device} already has a lane"));
    assert!(names, "{message}");
    destroy(acl);
    destroy(create(&fake_config(Via::DeviceOps, device, &HEALTHY, 5_000)));
}
