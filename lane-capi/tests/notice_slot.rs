//! L-19's "installed only when asked", through the C ABI on the fake libascendcl: a lane
//! with `fault_notice_monitor` off registers no exception-info callback, neither at open nor
//! when it registers again after a force reset, so a callback the embedding (or HCCL)
//! registered keeps the process's one slot and receives the notices.
//!
//! A binary of its own: the monitor is process-wide and outlives every lane, so once any lane
//! of the process asked for it, every force reset registers it again (notices.rs's tests do).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{Kernels, Via, control};
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome};

const OP_TIMEOUT_MS: u64 = 200;
static RUN_1_FAULTS: Kernels =
    Kernels::faulty(Duration::from_millis(3), &[(1, ENGINE_AICPU, Outcome::Exception)]);
const AICORE_EXCEPTION: i32 = 507_015;

/// Notices the embedding's own handler received.
static EMBEDDING_NOTICES: AtomicU64 = AtomicU64::new(0);

/// The embedding's own exception-info callback: it only counts.
unsafe extern "C" fn embedding_handler(_info: *mut core::ffi::c_void) {
    EMBEDDING_NOTICES.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn with_the_monitor_off_the_lane_registers_no_callback_and_the_embeddings_keeps_the_slot() {
    let control = control();
    let _fake = control.session().expect("reset the fake");
    EMBEDDING_NOTICES.store(0, Ordering::SeqCst);
    common::register_exception_callback(embedding_handler);
    // The monitor is off (the default): installed only when asked.
    let config = common::fake_config(Via::Acl, 0, &RUN_1_FAULTS, OP_TIMEOUT_MS);
    assert!(!config.fault_notice_monitor, "off by default");
    let lane = common::create(&config);
    // Run 1 poisons the lane: a recovery (force reset, open again), where an installed
    // monitor would register again.
    common::poison_with_run_1_and_recover(lane, 0);
    // A notice naming the lane's live stream reaches the embedding's handler, not the lane.
    let ids = control.live_stream_ids(0).expect("stream ids");
    assert_eq!(ids.len(), 2, "the lane's pair: {ids:?}");
    let stream = ids[0];
    let raised = control.raise_notice(0, stream, AICORE_EXCEPTION, Duration::from_millis(2));
    raised.expect("raised");
    let counts = || control.notice_counts().expect("counts");
    common::wait_until("never delivered", || counts() != (0, 0));
    assert_eq!(counts(), (1, 0), "delivered to a registered callback");
    let kept = "the embedding's callback kept the slot through the lane's open and its recovery";
    assert_eq!(EMBEDDING_NOTICES.load(Ordering::SeqCst), 1, "{kept}");
    // The lane never heard of it.
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 4);
    common::assert_ok_in_order(0, &outcomes);
    let resets = common::force_resets(0);
    assert_eq!(resets, 1, "no recovery for a notice the lane did not receive");
    assert!(!common::close(lane).noticed);
    common::destroy(lane);
}
