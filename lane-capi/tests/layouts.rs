//! Both status header layouts through the C ABI (SPEC §5.1, L-8): `RunLaneConfig::
//! header_layout` names the runtime's, and the lane reads each run's latch at that layout's
//! offsets. On the fake libascendcl, through the ACL backend and a runtime's device table
//! (`on_each_backend!`): run 2's AICPU kernel latches SCOPE_DEADLOCK into its slot's status
//! header, encoded in the runtime's layout (tensormap_and_ringbuffer's 896 bytes, the orch
//! code at 784; host_build_graph's 256 bytes, at 208).

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::{Via, control};
use core::ffi::c_void;
use lane_core::status_latch::{self, HeaderLayout, RuntimeCode, Status};
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, Outcome, RunKernel, Semantics};

/// Long enough that a successor queues behind its predecessor on a loaded machine.
const KERNEL: Duration = Duration::from_millis(20);
/// The run whose AICPU kernel latches.
const LATCHED_RUN: u64 = 2;

/// The layout the runtime of the current test writes its header in (one test at a time:
/// `common::serial`).
static RUNTIME_LAYOUT: Mutex<HeaderLayout> = Mutex::new(HeaderLayout::TensormapAndRingbuffer);

/// A header in `layout` with SCOPE_DEADLOCK latched by the orchestrator.
fn latched(layout: HeaderLayout) -> Vec<u8> {
    let mut status = Status::clean(layout);
    status.orch = Some(RuntimeCode::ScopeDeadlock);
    status_latch::encode(layout, &status)
}

/// A run's kernel on the fake: [`LATCHED_RUN`]'s AICPU kernel writes a latched header in
/// the runtime's layout (and so publishes an error record, source header, as the runtime's
/// device side does); every other kernel ends well.
fn launch(stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let aicpu = engine == ENGINE_AICPU;
    let latch = aicpu && args.info.run == LATCHED_RUN;
    let header = latched(*RUNTIME_LAYOUT.lock().unwrap());
    let kernel = RunKernel {
        stream,
        engine,
        duration: KERNEL,
        outcome: if latch { Outcome::Latch } else { Outcome::Ok },
        timing: if aicpu {
            args.timing
        } else {
            std::ptr::null_mut()
        },
        header: if latch {
            args.status_header
        } else {
            std::ptr::null_mut()
        },
        header_bytes: if latch { &header } else { &[] },
        handshake: args.handshake,
        record: if aicpu {
            args.record
        } else {
            std::ptr::null_mut()
        },
        epoch: args.epoch,
    };
    match control().launch_run(&kernel) {
        Ok(()) => 0,
        Err(run_lane_fake_ascendcl::ControlError::Call { code, .. }) => code,
        Err(_) => 507_899,
    }
}

unsafe extern "C" fn launch_aicore(
    _: *mut c_void,
    stream: *mut c_void,
    args: *const RunLaneRunArgs,
) -> i32 {
    // SAFETY: the library passes valid args for the call.
    launch(stream, ENGINE_AICORE, unsafe { &*args })
}

unsafe extern "C" fn launch_aicpu(
    _: *mut c_void,
    stream: *mut c_void,
    args: *const RunLaneRunArgs,
) -> i32 {
    // SAFETY: the library passes valid args for the call.
    launch(stream, ENGINE_AICPU, unsafe { &*args })
}

static UNUSED: common::Kernels = common::Kernels::healthy(KERNEL);

/// A lane on the fake's device 0 reached `via`, reading headers in `lane_layout`, whose
/// runtime writes them in `runtime_layout`.
fn lane(via: Via, lane_layout: RunLaneHeaderLayout, runtime_layout: HeaderLayout) -> RunLaneConfig {
    *RUNTIME_LAYOUT.lock().unwrap() = runtime_layout;
    let mut config = common::fake_config(via, 0, &UNUSED, 5_000);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.header_layout = lane_layout as u32;
    config
}

/// Both layouts, as the C ABI names them and as status-latch does.
const LAYOUTS: [(RunLaneHeaderLayout, HeaderLayout); 2] = [
    (
        RunLaneHeaderLayout::TensormapAndRingbuffer,
        HeaderLayout::TensormapAndRingbuffer,
    ),
    (
        RunLaneHeaderLayout::HostBuildGraph,
        HeaderLayout::HostBuildGraph,
    ),
];

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
            assert_eq!(
                outcome.failure_class,
                RunLaneClass::RunOnly,
                "{what}: {line}"
            );
            assert_eq!(
                common::text(&outcome.code_name),
                "SCOPE_DEADLOCK",
                "{what}: {line}"
            );
            assert_eq!((outcome.has_code, outcome.code), (true, 1), "{what}");
        } else {
            assert_eq!(
                outcome.verdict,
                RunLaneVerdict::Ok,
                "{what}: run {}: {line}",
                outcome.id
            );
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
    for (c_layout, layout) in LAYOUTS {
        let _fake = control.session().expect("reset the fake");
        control
            .set_semantics(Semantics::LatchFaultsStream(false))
            .expect("a known switch");
        let mut config = lane(via, c_layout, layout);
        config.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
        let outcomes = four(&config);
        let what = format!("{layout:?} on the stream-synchronize channel");
        assert_only_the_latched_run_failed(&what, &outcomes);
        let line = common::line(&outcomes[1]);
        assert!(
            line.contains(": runtime latch ")
                && line.contains("orch_error_code=1")
                && line.contains("runtime_status=-1 SCOPE_DEADLOCK"),
            "{what}: the header's latch: {line}"
        );
        assert_eq!(
            control.counters().expect("counters").stream_syncs,
            8,
            "{what}: every run synchronized, both streams"
        );
    }
    // The control: the runtime's host_build_graph header read at the default layout's
    // offsets holds no latch there.
    let _fake = control.session().expect("reset the fake");
    control
        .set_semantics(Semantics::LatchFaultsStream(false))
        .expect("a known switch");
    let mut config = lane(
        via,
        RunLaneHeaderLayout::TensormapAndRingbuffer,
        HeaderLayout::HostBuildGraph,
    );
    config.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
    let outcomes = four(&config);
    assert_eq!(
        outcomes[1].verdict,
        RunLaneVerdict::Ok,
        "a host_build_graph latch is invisible at tensormap_and_ringbuffer's offsets: \
         header_layout is what makes the lane see it"
    );
}
common::on_each_backend!(
    each_layouts_latched_header_fails_its_run_when_the_config_names_that_layout
);

/// On the record channel (the default), with the device's semantics (a latch leaves 507018
/// sticky on the AICPU stream): both layouts queue at depth two, and run 2's latch, published
/// in its record from the header in the runtime's layout, fails only run 2.
fn both_layouts_queue_and_a_latched_run_fails_only_itself_on_the_record_channel(via: Via) {
    let _serial = common::serial();
    let control = control();
    for (c_layout, layout) in LAYOUTS {
        let _fake = control.session().expect("reset the fake");
        let outcomes = four(&lane(via, c_layout, layout));
        let what = format!("{layout:?} on the record channel");
        assert_only_the_latched_run_failed(&what, &outcomes);
        let line = common::line(&outcomes[1]);
        assert!(
            line.contains("result record error from the status header"),
            "{what}: {line}"
        );
        assert!(
            control.counters().expect("counters").queued_launches > 0,
            "{what}: runs queued on the pair"
        );
    }
}
common::on_each_backend!(
    both_layouts_queue_and_a_latched_run_fails_only_itself_on_the_record_channel
);
