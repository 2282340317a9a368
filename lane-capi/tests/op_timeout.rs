//! L-21 through the C ABI on the fake libascendcl: the device op timeout is process-wide
//! (`aclrtSetOpExecuteTimeOutV2`), so a second lane, on another device, that asks for another
//! `device_op_timeout_ms` than the one in force is refused `INVALID_CONFIG` with a message
//! naming both values; one asking for the same value shares it, and once the lanes using a
//! value are destroyed another may be set.

mod common;

use std::time::Duration;

use common::{Kernels, Via};
use run_lane::*;

static HEALTHY: Kernels = Kernels::healthy(Duration::from_millis(1));

#[test]
fn a_second_lane_on_another_device_with_another_op_timeout_is_invalid_config_naming_both_values() {
    let _fake = common::fresh();
    let zero = common::fake_lane(Via::Acl, 0, &HEALTHY, 200);
    let run = common::submit(zero).expect("lane 0 run");
    assert_eq!(common::wait(zero, run).verdict, RunLaneVerdict::Ok);

    // A lane asking for 300 ms while 200 ms is in force.
    let (status, message) = common::refusal(&common::fake_config(Via::Acl, 1, &HEALTHY, 300));
    assert_eq!(status, RunLaneStatus::InvalidConfig, "{message}");
    let both = message.contains("300000") && message.contains("200000");
    assert!(both, "names both values (in us): {message}");
    assert!(message.contains("device_op_timeout_ms"), "{message}");

    // The refusal took nothing: lane 0 still runs, and a lane on device 1 asking for the
    // value in force shares it.
    let one = common::fake_lane(Via::Acl, 1, &HEALTHY, 200);
    for lane in [zero, one] {
        let run = common::submit(lane).expect("a run");
        assert_eq!(common::wait(lane, run).verdict, RunLaneVerdict::Ok);
    }
    common::destroy(zero);
    common::destroy(one);

    // With no lane left using 200 ms, another value may be set.
    let other = common::try_create(&common::fake_config(Via::Acl, 1, &HEALTHY, 300))
        .unwrap_or_else(|(status, message)| panic!("{status:?}: {message}"));
    common::destroy(other);
}
