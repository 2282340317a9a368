//! L-20 through the C ABI on the fake libascendcl: between force reset attempts the lane
//! thread binds the device again (a second force reset with no `aclrtSetDevice` since the
//! last is refused with 507007, as on real ACL). (No reset under a wait: lane-conformance's
//! `queued` tests, through the service on the fake.)

mod common;

use std::time::Duration;

use common::{Kernels, Via, control};
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome};

static RUN_1_FAULTS: Kernels = Kernels {
    kernel: Duration::from_micros(500),
    faults: &[(1, ENGINE_AICPU, Outcome::Exception)],
};

fn a_recovery_whose_first_probe_cannot_bind_binds_again_before_its_second_reset(via: Via) {
    let _serial = common::serial();
    let control = control();
    let fake = control.session().expect("reset the fake");
    // The binds of device 0: the lane thread's open, the waiter's before its first wait,
    // then attempt 1's probe after its reset: that one fails, so attempt 1 fails and the
    // lane thread is unbound when attempt 2 resets.
    control
        .fail_call("aclrtSetDevice", 507_899, 2, 1)
        .expect("a rule");
    let lane = common::create(&common::fake_config(via, 0, &RUN_1_FAULTS, 200));
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 3);
    common::destroy(lane);
    let counters = control.counters().expect("counters");
    assert_eq!(
        outcomes[0].failure_class,
        RunLaneClass::Poison,
        "{}",
        common::line(&outcomes[0])
    );
    // Run 2 may have been queued behind run 1 (poisoned with it); run 3 runs after the
    // recovery's second attempt.
    assert!(
        matches!(
            outcomes[1].verdict,
            RunLaneVerdict::Ok | RunLaneVerdict::Poisoned
        ),
        "{}",
        common::line(&outcomes[1])
    );
    assert_eq!(
        outcomes[2].verdict,
        RunLaneVerdict::Ok,
        "{}",
        common::line(&outcomes[2])
    );
    assert_eq!(
        counters.force_resets, 2,
        "attempt 1's reset and attempt 2's: {counters:#?}"
    );
    drop(fake);
}
common::on_each_backend!(
    a_recovery_whose_first_probe_cannot_bind_binds_again_before_its_second_reset
);
