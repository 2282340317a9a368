//! Both status header layouts through the C ABI (SPEC §5.1, L-8): `RunLaneConfig::
//! header_layout` names the runtime's, and the lane reads each run's latch at that layout's
//! offsets. On the fake libascendcl, through the ACL backend and a runtime's device table
//! (`on_each_backend!`): run 2's AICPU kernel latches SCOPE_DEADLOCK into its slot's status
//! header, encoded in the runtime's layout (tensormap_and_ringbuffer's 896 bytes, the orch
//! code at 784; host_build_graph's 256 bytes, at 208).

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::{Kernels, Via, control};
use core::ffi::c_void;
use lane_core::status_latch::HeaderLayout;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome, Semantics};

/// Long enough that a successor queues behind its predecessor on a loaded machine.
const KERNEL: Duration = Duration::from_millis(20);
/// The run whose AICPU kernel latches.
const LATCHED_RUN: u64 = 2;

/// The layout the runtime of the current test writes its header in (one test at a time:
/// `common::serial`).
static RUNTIME_LAYOUT: Mutex<HeaderLayout> = Mutex::new(HeaderLayout::TensormapAndRingbuffer);

/// [`LATCHED_RUN`]'s AICPU kernel latches SCOPE_DEADLOCK into its header (and so publishes an
/// error record, source header, as the runtime's device side does); every other kernel ends
/// well.
static LATCHES: Kernels = Kernels::faulty(KERNEL, &[(LATCHED_RUN, ENGINE_AICPU, Outcome::Latch)]);

/// A run's kernel on the fake, a latch written in the runtime's layout.
fn launch(_: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let layout = *RUNTIME_LAYOUT.lock().unwrap();
    common::launch_kernel_in(layout, &LATCHES, stream, engine, args, KERNEL)
}

common::launch_callbacks!(launch_aicore, launch_aicpu, launch);

/// A lane on the fake's device 0 reached `via`, reading headers in `lane_layout`, whose
/// runtime writes them in `runtime_layout`.
fn lane(via: Via, lane_layout: RunLaneHeaderLayout, runtime_layout: HeaderLayout) -> RunLaneConfig {
    *RUNTIME_LAYOUT.lock().unwrap() = runtime_layout;
    let mut config = common::fake_config(via, 0, &LATCHES, 5_000);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.header_layout = lane_layout as u32;
    config
}

/// Both layouts, as the C ABI names them and as status-latch does.
const LAYOUTS: [(RunLaneHeaderLayout, HeaderLayout); 2] = {
    use {HeaderLayout as Latch, RunLaneHeaderLayout as C};
    [
        (C::TensormapAndRingbuffer, Latch::TensormapAndRingbuffer),
        (C::HostBuildGraph, Latch::HostBuildGraph),
    ]
};

/// Four runs through the documented loop; the outcomes in run order.
fn four(config: &RunLaneConfig) -> Vec<RunLaneOutcome> {
    let lane = common::create(config);
    let mut outcomes = common::documented_loop(lane, |submitted, _| submitted < 4);
    common::destroy(lane);
    outcomes.sort_by_key(|o| o.id);
    outcomes
}

/// Run [`LATCHED_RUN`] failed run-only with SCOPE_DEADLOCK; every other run is `OK`.
fn assert_only_the_latched_run_failed(what: &str, outcomes: &[RunLaneOutcome]) {
    assert_eq!(outcomes.len(), 4, "{what}: one outcome per run");
    for outcome in outcomes {
        let line = common::line(outcome);
        if outcome.id == LATCHED_RUN {
            assert_eq!(outcome.verdict, RunLaneVerdict::Failed, "{what}: {line}");
            let class = outcome.failure_class;
            assert_eq!(class, RunLaneClass::RunOnly, "{what}: {line}");
            assert_eq!((outcome.has_code, outcome.code), (true, 1), "{what}");
            let name = common::text(&outcome.code_name);
            assert_eq!(name, "SCOPE_DEADLOCK", "{what}: {line}");
        } else {
            common::assert_ok(what, outcome);
        }
    }
}

/// A runtime without result records (the stream-synchronize channel), whose latch exits
/// clean: the status header is the only evidence of run 2's failure, so the lane must read it
/// at the runtime's offsets. Each layout's latch fails its run when the config names that
/// layout; host_build_graph's 256-byte header read as tensormap_and_ringbuffer's (the only
/// layout before ABI 12) shows nothing at 784, and the latched run would pass as `OK`.
fn each_layouts_latched_header_fails_its_run_when_the_config_names_that_layout(via: Via) {
    let _serial = common::serial();
    let control = control();
    let no_sticky_latch = Some(Semantics::LatchFaultsStream(false));
    for (c_layout, layout) in LAYOUTS {
        let _fake = common::session_with(no_sticky_latch);
        let mut config = lane(via, c_layout, layout);
        config.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
        let outcomes = four(&config);
        let what = format!("{layout:?} on the stream-synchronize channel");
        assert_only_the_latched_run_failed(&what, &outcomes);
        let line = common::line(&outcomes[1]);
        let says = [": runtime latch ", "orch_error_code=1", "runtime_status=-1 SCOPE_DEADLOCK"];
        let latch = says.iter().all(|s| line.contains(s));
        assert!(latch, "{what}: the header's latch: {line}");
        let syncs = control.counters().expect("counters").stream_syncs;
        assert_eq!(syncs, 8, "{what}: every run synchronized, both streams");
    }
    // The control: the runtime's host_build_graph header read at the default layout's
    // offsets holds no latch there.
    let _fake = common::session_with(no_sticky_latch);
    let default_layout = RunLaneHeaderLayout::TensormapAndRingbuffer;
    let mut config = lane(via, default_layout, HeaderLayout::HostBuildGraph);
    config.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
    let outcomes = four(&config);
    assert_eq!(
        outcomes[1].verdict,
        RunLaneVerdict::Ok,
        "a host_build_graph latch is invisible at tensormap_and_ringbuffer's offsets: \
         header_layout is what makes the lane see it"
    );
}

/// On the record channel (the default), with the device's semantics (a latch leaves 507018
/// sticky on the AICPU stream): both layouts queue at depth two, and run 2's latch, published
/// in its record from the header in the runtime's layout, fails only run 2.
fn both_layouts_queue_and_a_latched_run_fails_only_itself_on_the_record_channel(via: Via) {
    let _serial = common::serial();
    for (c_layout, layout) in LAYOUTS {
        let _fake = common::session_with(None);
        let outcomes = four(&lane(via, c_layout, layout));
        let what = format!("{layout:?} on the record channel");
        assert_only_the_latched_run_failed(&what, &outcomes);
        let line = common::line(&outcomes[1]);
        let from_header = line.contains("result record error from the status header");
        assert!(from_header, "{what}: {line}");
        let queued = control().counters().expect("counters").queued_launches;
        assert!(queued > 0, "{what}: runs queued on the pair");
    }
}

common::on_each_backend!(
    each_layouts_latched_header_fails_its_run_when_the_config_names_that_layout,
    both_layouts_queue_and_a_latched_run_fails_only_itself_on_the_record_channel,
);
