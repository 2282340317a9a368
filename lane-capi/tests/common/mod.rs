//! What the many-lane tests share: the fake's control surface, a config for a lane on one of
//! its devices (through the ACL backend or through a runtime's device table over the fake,
//! `Via`; `on_each_backend!` runs a test body through both), launch callbacks that queue fake
//! kernels on the streams the lane gives them
//! (the AICPU kernel writes the slot's timing buffer, as a runtime's scheduler does), the
//! documented submit loop and the C calls the tests make; [`usage`] reads the process's threads
//! (by name), open descriptors and resident memory from `/proc/self`, [`symbols`] reaches the
//! fake's own exports.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

pub(crate) mod symbols;
pub(crate) mod table;
pub(crate) mod usage;

// Not every test binary uses them.
#[allow(unused_imports)]
pub(crate) use {symbols::*, usage::*};

use std::ffi::CString;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use core::ffi::c_void;
use lane_core::status_latch::{self, HeaderLayout, RuntimeCode, Status};
use run_lane::*;
use run_lane_fake_ascendcl::{
    Control, ENGINE_AICPU, Outcome, RunKernel, Semantics, Session, cdylib_path,
};

/// The longest any one wait of these tests may take: past it the test fails instead of
/// hanging (a healthy run takes milliseconds; a hung one ends at its lane's op timeout).
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// The fake's control surface, shared with the launch callbacks.
pub(crate) fn control() -> &'static Control {
    static CONTROL: OnceLock<Control> = OnceLock::new();
    CONTROL.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        Control::open(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The fake's path as a C string, alive for the whole test binary (configs point at it).
pub(crate) fn fake_path() -> &'static CString {
    static PATH: OnceLock<CString> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        CString::new(path.to_str().expect("a UTF-8 path")).expect("no NUL")
    })
}

/// A lane's kernels, reached through the runner's `user`: each run is one AICore and one
/// AICPU kernel of `kernel` on the lane's streams, linked by the slot's handshake and the
/// run's epoch; the AICPU kernel publishes the run's result record when both end on their
/// normal path (acl-fake's run model, as a runtime's device code does). `faults` names a
/// run, an engine and how that engine's kernel ends instead (a latch writes SCOPE_DEADLOCK
/// into the tensormap_and_ringbuffer header).
pub(crate) struct Kernels {
    pub(crate) kernel: Duration,
    pub(crate) faults: &'static [(u64, u32, Outcome)],
}

impl Kernels {
    /// Healthy kernels of `kernel`.
    pub(crate) const fn healthy(kernel: Duration) -> Self {
        Self::faulty(kernel, &[])
    }

    /// Kernels of `kernel` whose `faults` end as they say.
    pub(crate) const fn faulty(kernel: Duration, faults: &'static [(u64, u32, Outcome)]) -> Self {
        Self { kernel, faults }
    }
}

fn kernels<'a>(user: *mut c_void) -> &'a Kernels {
    // SAFETY: every lane of these tests passes a `Kernels` that outlives it.
    unsafe { &*user.cast::<Kernels>() }
}

/// The header a latched AICPU kernel writes in `layout`: SCOPE_DEADLOCK on the orchestrator.
fn latched_header(layout: HeaderLayout) -> Vec<u8> {
    let mut status = Status::clean(layout);
    status.orch = Some(RuntimeCode::ScopeDeadlock);
    status_latch::encode(layout, &status)
}

/// The kernel of `engine` for the run, as [`fake_config`]'s launch callbacks queue it.
pub(crate) fn launch(
    user: *mut c_void,
    stream: *mut c_void,
    engine: u32,
    args: &RunLaneRunArgs,
) -> i32 {
    launch_lasting(user, stream, engine, args, kernels(user).kernel)
}

/// [`launch`]'s kernel queued on the fake, lasting `duration` instead of the `Kernels`' one
/// (for a test that gives one run a length of its own).
pub(crate) fn launch_lasting(
    user: *mut c_void,
    stream: *mut c_void,
    engine: u32,
    args: &RunLaneRunArgs,
    duration: Duration,
) -> i32 {
    launch_kernel(kernels(user), stream, engine, args, duration)
}

/// [`launch_lasting`] for a runner whose `user` holds its `Kernels` elsewhere.
pub(crate) fn launch_kernel(
    kernels: &Kernels,
    stream: *mut c_void,
    engine: u32,
    args: &RunLaneRunArgs,
    duration: Duration,
) -> i32 {
    let layout = HeaderLayout::TensormapAndRingbuffer;
    launch_kernel_in(layout, kernels, stream, engine, args, duration)
}

/// [`launch_kernel`] of a runtime whose status header is in `layout` (a latch writes it there).
pub(crate) fn launch_kernel_in(
    layout: HeaderLayout,
    kernels: &Kernels,
    stream: *mut c_void,
    engine: u32,
    args: &RunLaneRunArgs,
    duration: Duration,
) -> i32 {
    let outcome = kernels
        .faults
        .iter()
        .find(|(run, e, _)| *run == args.info.run && *e == engine)
        .map_or(Outcome::Ok, |(_, _, outcome)| *outcome);
    let aicpu = engine == ENGINE_AICPU;
    let latched = aicpu && outcome == Outcome::Latch;
    let null = std::ptr::null_mut();
    let header_bytes = latched.then(|| latched_header(layout));
    let kernel = RunKernel {
        stream,
        engine,
        duration,
        outcome,
        timing: if aicpu { args.timing } else { null },
        header: if latched { args.status_header } else { null },
        header_bytes: header_bytes.as_deref().unwrap_or_default(),
        handshake: args.handshake,
        record: if aicpu { args.record } else { null },
        epoch: args.epoch,
    };
    match control().launch_run(&kernel) {
        Ok(()) => 0,
        Err(run_lane_fake_ascendcl::ControlError::Call { code, .. }) => code,
        Err(_) => 507_899,
    }
}

/// Defines the launch callbacks `$aicore` and `$aicpu`, each calling
/// `$launch(user, stream, engine, &args)` with its engine.
#[allow(unused_macros)]
macro_rules! launch_callbacks {
    ($aicore:ident, $aicpu:ident, $launch:expr) => {
        $crate::common::launch_callbacks!(@one $aicore, $launch, ENGINE_AICORE);
        $crate::common::launch_callbacks!(@one $aicpu, $launch, ENGINE_AICPU);
    };
    (@one $name:ident, $launch:expr, $engine:ident) => {
        unsafe extern "C" fn $name(
            user: *mut core::ffi::c_void,
            stream: *mut core::ffi::c_void,
            args: *const run_lane::RunLaneRunArgs,
        ) -> i32 {
            // SAFETY: the library passes valid args for the call.
            let args = unsafe { &*args };
            $launch(user, stream, run_lane_fake_ascendcl::$engine, args)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use launch_callbacks;

launch_callbacks!(launch_aicore, launch_aicpu, launch);

/// A NUL-terminated string buffer of an outcome or a report, as text.
pub(crate) fn text(buffer: &[core::ffi::c_char]) -> String {
    // SAFETY: the library NUL-terminates every string buffer.
    unsafe { std::ffi::CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned()
}

/// The defaults, filled by the library.
pub(crate) fn default_config() -> RunLaneConfig {
    let mut config = run_lane::sized::init::<RunLaneConfig>();
    // SAFETY: a valid place for a config.
    let filled = unsafe { run_lane_config_default(config.as_mut_ptr()) };
    assert_eq!(filled, RunLaneStatus::Ok);
    // SAFETY: filled by run_lane_config_default.
    unsafe { config.assume_init() }
}

/// The defaults on the simulator backend.
pub(crate) fn sim_config() -> RunLaneConfig {
    let mut config = default_config();
    config.backend = RunLaneBackend::Sim as u32;
    config
}

/// How a fake-backed test's lanes reach the fake libascendcl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// `RUN_LANE_BACKEND_ACL`: the lane opens the fake as its libascendcl.
    Acl,
    /// `RUN_LANE_BACKEND_DEVICE_OPS`: a runtime's table of device operations forwards each
    /// entry to the fake ([`table`]), and the runtime, not the lane, sets the op timeout.
    DeviceOps,
}

/// Runs each fake-backed test body `fn $name(via: Via)` through each backend: a module `$name`
/// with the `#[test]`s `acl` and `device_ops` (so `cargo test NAME` runs both), the body
/// written once.
#[allow(unused_macros)]
macro_rules! on_each_backend {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[test]
                fn acl() {
                    super::$name($crate::common::Via::Acl);
                }

                #[test]
                fn device_ops() {
                    super::$name($crate::common::Via::DeviceOps);
                }
            }
        )+
    };
}
#[allow(unused_imports)]
pub(crate) use on_each_backend;

/// An a2a3 lane on the fake's device `device_id` running `kernels`, reached `via` the ACL
/// backend or a runtime's device table: host wait 10 s, device op timeout `op_timeout_ms` (a
/// hung kernel ends there with 507014; through a table the runtime sets it now, as on attach),
/// the lane's invariants checked after every step (a broken one loses the lane, failing the
/// test).
pub(crate) fn fake_config(
    via: Via,
    device_id: i32,
    kernels: &Kernels,
    op_timeout_ms: u64,
) -> RunLaneConfig {
    let mut config = default_config();
    match via {
        Via::Acl => {
            config.backend = RunLaneBackend::Acl as u32;
            config.acl_library_path = fake_path().as_ptr();
        }
        Via::DeviceOps => {
            config.backend = RunLaneBackend::DeviceOps as u32;
            config.device_ops = table::static_table(device_id);
            table::set_op_timeout(op_timeout_ms);
        }
    }
    config.profile = RunLaneProfile::A2a3 as u32;
    config.device_id = device_id;
    config.completion_timeout_ms = 10_000;
    config.device_op_timeout_ms = op_timeout_ms;
    config.check_invariants = true;
    config.runner.user = std::ptr::from_ref(kernels).cast_mut().cast();
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config
}

/// The fake is one per process: a test binary's fake-backed tests take it in turn.
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fake to this test alone, reset ([`serial`], then a fresh [`Control::session`]).
pub(crate) struct Fresh {
    /// Dropped first: its check runs while the fake is still this test's.
    pub(crate) session: Session<'static>,
    _serial: std::sync::MutexGuard<'static, ()>,
}

/// [`Fresh`]: the fake to this test alone, reset.
pub(crate) fn fresh() -> Fresh {
    let serial = serial();
    Fresh { session: control().session().expect("reset the fake"), _serial: serial }
}

/// The fake reset, with the hardware switch `semantics` (if any) set: a session for one case
/// of a test that holds [`serial`].
pub(crate) fn session_with(semantics: Option<Semantics>) -> Session<'static> {
    let session = control().session().expect("reset the fake");
    if let Some(semantics) = semantics {
        control().set_semantics(semantics).expect("a known switch");
    }
    session
}

/// `run_lane_create` of [`fake_config`], which must succeed.
pub(crate) fn fake_lane(
    via: Via,
    device_id: i32,
    kernels: &Kernels,
    op_timeout_ms: u64,
) -> *mut RunLane {
    create(&fake_config(via, device_id, kernels, op_timeout_ms))
}

/// `run_lane_create`, which must succeed.
pub(crate) fn create(config: &RunLaneConfig) -> *mut RunLane {
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config (its path and user outlive the lane) and a writable handle.
    let status = unsafe { run_lane_create(std::ptr::from_ref(config), &raw mut lane) };
    assert_eq!(status, RunLaneStatus::Ok, "create: {}", last_error());
    lane
}

/// `run_lane_create`: the handle, or the refusal and its message (no handle written).
pub(crate) fn try_create(config: &RunLaneConfig) -> Result<*mut RunLane, (RunLaneStatus, String)> {
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config (its path, table and user outlive the lane) and a writable handle.
    match unsafe { run_lane_create(std::ptr::from_ref(config), &raw mut lane) } {
        RunLaneStatus::Ok => Ok(lane),
        refused => {
            assert!(lane.is_null(), "a refused create writes no handle");
            Err((refused, last_error()))
        }
    }
}

/// `run_lane_create` of `config`, which must be refused: the status and its message (a lane
/// made is destroyed and fails the test).
pub(crate) fn refusal(config: &RunLaneConfig) -> (RunLaneStatus, String) {
    try_create(config).map(destroy).expect_err("the create was refused")
}

/// `run_lane_destroy`, which must succeed.
pub(crate) fn destroy(lane: *mut RunLane) {
    // SAFETY: a live handle, destroyed once.
    let status = unsafe { run_lane_destroy(lane) };
    assert_eq!(status, RunLaneStatus::Ok, "destroy: {}", last_error());
}

/// `run_lane_destroy_with_report`, which must succeed: the report.
pub(crate) fn destroy_with_report(lane: *mut RunLane) -> RunLaneCloseReport {
    let mut report = run_lane::sized::init::<RunLaneCloseReport>();
    // SAFETY: a live handle, destroyed once, and a writable report.
    let status = unsafe { run_lane_destroy_with_report(lane, report.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok, "destroy: {}", last_error());
    // SAFETY: filled by the OK destroy.
    unsafe { report.assume_init() }
}

/// The calling thread's last error message.
pub(crate) fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string valid until this thread's next call.
    unsafe { std::ffi::CStr::from_ptr(run_lane_last_error()) }.to_string_lossy().into_owned()
}

/// `run_lane_submit` of an untagged run: its id, or the refusal.
pub(crate) fn submit(lane: *mut RunLane) -> Result<u64, RunLaneStatus> {
    submit_request(lane, &RunLaneSubmit::default())
}

/// `run_lane_submit` of `request`: the run's id, or the refusal.
pub(crate) fn submit_request(
    lane: *mut RunLane,
    request: &RunLaneSubmit,
) -> Result<u64, RunLaneStatus> {
    let mut run = 0;
    // SAFETY: any handle value is checked; a readable request and a writable id.
    match unsafe { run_lane_submit(lane, request, &raw mut run) } {
        RunLaneStatus::Ok => Ok(run),
        refused => Err(refused),
    }
}

/// `run_lane_wait` for `id`, which must deliver within [`BOUND`].
pub(crate) fn wait(lane: *mut RunLane, id: u64) -> RunLaneOutcome {
    let bound = u32::try_from(BOUND.as_millis()).unwrap_or(u32::MAX);
    try_wait(lane, id, bound)
        .unwrap_or_else(|status| panic!("wait {id}: {status:?}: {}", last_error()))
}

/// `run_lane_wait` for `id` with `timeout_ms`: the outcome, or the status.
pub(crate) fn try_wait(
    lane: *mut RunLane,
    id: u64,
    timeout_ms: u32,
) -> Result<RunLaneOutcome, RunLaneStatus> {
    let mut outcome = run_lane::sized::init::<RunLaneOutcome>();
    // SAFETY: any handle value is checked; a writable outcome.
    match unsafe { run_lane_wait(lane, id, timeout_ms, outcome.as_mut_ptr()) } {
        // SAFETY: filled by the OK wait.
        RunLaneStatus::Ok => Ok(unsafe { outcome.assume_init() }),
        status => Err(status),
    }
}

/// `run_lane_poll`: the outcome, or the status.
pub(crate) fn poll(lane: *mut RunLane) -> Result<RunLaneOutcome, RunLaneStatus> {
    let mut outcome = run_lane::sized::init::<RunLaneOutcome>();
    // SAFETY: a live handle and a writable outcome.
    match unsafe { run_lane_poll(lane, outcome.as_mut_ptr()) } {
        // SAFETY: filled by the OK poll.
        RunLaneStatus::Ok => Ok(unsafe { outcome.assume_init() }),
        status => Err(status),
    }
}

/// The outcome is `Ok` (`what` and its line name it otherwise).
pub(crate) fn assert_ok(what: &str, outcome: &RunLaneOutcome) {
    let id = outcome.id;
    assert_eq!(outcome.verdict, RunLaneVerdict::Ok, "{what}: run {id}: {}", line(outcome));
}

/// The outcome's failure class is `class` (its line names it otherwise).
pub(crate) fn assert_class(outcome: &RunLaneOutcome, class: RunLaneClass) {
    assert_eq!(outcome.failure_class, class, "run {}: {}", outcome.id, line(outcome));
}

/// Every outcome is `Ok`.
pub(crate) fn assert_all_ok(what: &str, outcomes: &[RunLaneOutcome]) {
    outcomes.iter().for_each(|o| assert_ok(what, o));
}

/// Polls `done` until it holds, failing with `what` after [`BOUND`].
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let since = Instant::now();
    while !done() {
        assert!(since.elapsed() < BOUND, "{what}");
        thread::sleep(Duration::from_micros(100));
    }
}

/// The embedding guide's loop: submit until `FULL`, then wait for the oldest run in flight,
/// and repeat while `more(submitted so far, outcomes so far)`; then wait for the runs still
/// in flight. `RECOVERING` (a poisoned lane resetting its device) and `SUSPECT` (a fault
/// notice named its stream) are "submit again shortly":
/// with runs in flight it waits for the oldest; with none it yields and tries again, for at
/// most [`BOUND`]. Returns every outcome, in the order taken (the oldest first).
pub(crate) fn documented_loop(
    lane: *mut RunLane,
    mut more: impl FnMut(u64, &[RunLaneOutcome]) -> bool,
) -> Vec<RunLaneOutcome> {
    let mut outcomes = Vec::new();
    let mut in_flight = std::collections::VecDeque::new();
    let mut submitted = 0_u64;
    let mut recovering_since: Option<Instant> = None;
    while more(submitted, &outcomes) {
        match submit(lane) {
            Ok(run) => {
                submitted += 1;
                in_flight.push_back(run);
                recovering_since = None;
            }
            Err(RunLaneStatus::Full) => {
                let oldest = in_flight.pop_front().expect("FULL with nothing in flight");
                outcomes.push(wait(lane, oldest));
            }
            // SUSPECT (a fault notice named the lane's stream) is the same: launched runs
            // finish, then the device is recovered.
            Err(RunLaneStatus::Recovering | RunLaneStatus::Suspect) => {
                match in_flight.pop_front() {
                    Some(oldest) => outcomes.push(wait(lane, oldest)),
                    None => {
                        let since = *recovering_since.get_or_insert_with(Instant::now);
                        assert!(
                            since.elapsed() < BOUND,
                            "the lane recovered for longer than {BOUND:?}"
                        );
                        thread::yield_now();
                    }
                }
            }
            Err(status) => panic!("submit refused with {status:?}: {}", last_error()),
        }
    }
    while let Some(oldest) = in_flight.pop_front() {
        outcomes.push(wait(lane, oldest));
    }
    outcomes
}

/// Every outcome `Ok` with its timing, in submission order (consecutive ids from the first),
/// each run on the device after its predecessor ended.
pub(crate) fn assert_ok_in_order(device: i32, outcomes: &[RunLaneOutcome]) {
    assert!(!outcomes.is_empty(), "device {device}: no outcomes");
    let first = outcomes[0].id;
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.id, first + i as u64, "device {device}: outcome {i} out of order");
        assert_eq!(
            outcome.verdict,
            RunLaneVerdict::Ok,
            "device {device}: run {} did not end OK: {}",
            outcome.id,
            line(outcome)
        );
        assert!(outcome.has_timing, "device {device}: run {}", outcome.id);
        assert!(outcome.device_start_ns <= outcome.device_end_ns);
        if i > 0 {
            assert!(
                outcome.device_start_ns >= outcomes[i - 1].device_end_ns,
                "device {device}: run {} started before its predecessor ended",
                outcome.id
            );
        }
    }
}

/// An outcome's failure line.
pub(crate) fn line(outcome: &RunLaneOutcome) -> String {
    text(&outcome.failure_line)
}

/// How many force resets the fake made of `device`.
pub(crate) fn force_resets(device: i32) -> u64 {
    control().device(device).counters().expect("counters").force_resets
}

/// Run 1 (whose kernels the lane's `Kernels` make fault) poisons the lane on `device`, and
/// the run submitted once it reopens is `Ok`: one recovery, its force reset made.
pub(crate) fn poison_with_run_1_and_recover(lane: *mut RunLane, device: i32) {
    let r1 = submit(lane).expect("run 1");
    let one = wait(lane, r1);
    assert_eq!(one.failure_class, RunLaneClass::Poison, "{}", line(&one));
    let r2 = submit_when_open(lane);
    assert_eq!(wait(lane, r2).verdict, RunLaneVerdict::Ok);
    assert_eq!(force_resets(device), 1, "the poison's recovery");
}

/// Submits until one is accepted, within [`BOUND`] (a suspect or recovering lane refuses for
/// a while): the accepted run's id.
pub(crate) fn submit_when_open(lane: *mut RunLane) -> u64 {
    let since = Instant::now();
    loop {
        match submit(lane) {
            Ok(run) => return run,
            Err(RunLaneStatus::Suspect | RunLaneStatus::Recovering | RunLaneStatus::Unusable) => {
                assert!(since.elapsed() < BOUND, "the lane never reopened");
                thread::sleep(Duration::from_millis(1));
            }
            Err(status) => panic!("submit: {status:?}: {}", last_error()),
        }
    }
}

/// Closes the lane (`run_lane_close`, which must succeed) and returns its report.
pub(crate) fn close(lane: *mut RunLane) -> RunLaneCloseReport {
    let mut report = run_lane::sized::init::<RunLaneCloseReport>();
    // SAFETY: a live handle and a writable report.
    let status = unsafe { run_lane_close(lane, report.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok, "close: {}", last_error());
    // SAFETY: filled by the OK close.
    unsafe { report.assume_init() }
}
