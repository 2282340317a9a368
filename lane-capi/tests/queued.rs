//! L-18 through the C ABI, on the fake libascendcl: a run submitted 10 ms into its 50 ms
//! predecessor is launched onto the pair before the predecessor completes (the fake counts
//! the AICPU launch behind an unfinished kernel as a queued launch). The lane thread acts on
//! the submit at once, because the completion waiter, not it, sits in the predecessor's wait.

use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{Control, ENGINE_AICORE, ENGINE_AICPU, Outcome, cdylib_path};

const KERNEL: Duration = Duration::from_millis(50);
const INTO_PREDECESSOR: Duration = Duration::from_millis(10);

/// The fake's control surface, shared with the launch callbacks.
fn control() -> &'static Control {
    static CONTROL: OnceLock<Control> = OnceLock::new();
    CONTROL.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        Control::open(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A kernel of [`KERNEL`] on `engine`; the AICPU one writes the run's timing buffer.
fn launch(stream: *mut c_void, engine: u32, timing: *mut c_void) -> i32 {
    match control().launch(
        stream,
        engine,
        KERNEL,
        Outcome::Ok,
        timing,
        std::ptr::null_mut(),
        &[],
    ) {
        Ok(()) => 0,
        Err(_) => 507_899,
    }
}

unsafe extern "C" fn launch_aicore(
    _user: *mut c_void,
    stream: *mut c_void,
    _args: *const RunLaneRunArgs,
) -> i32 {
    launch(stream, ENGINE_AICORE, std::ptr::null_mut())
}

unsafe extern "C" fn launch_aicpu(
    _user: *mut c_void,
    stream: *mut c_void,
    args: *const RunLaneRunArgs,
) -> i32 {
    // SAFETY: the library passes valid args for the call.
    let timing = unsafe { (*args).timing };
    launch(stream, ENGINE_AICPU, timing)
}

fn wait(lane: *mut RunLane, id: u64) -> RunLaneOutcome {
    let mut outcome = std::mem::MaybeUninit::<RunLaneOutcome>::uninit();
    // SAFETY: a live handle and a writable outcome.
    let status = unsafe { run_lane_wait(lane, id, 30_000, outcome.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok);
    // SAFETY: filled by the OK wait.
    unsafe { outcome.assume_init() }
}

fn submit(lane: *mut RunLane) -> u64 {
    let request = RunLaneSubmit {
        has_tag: false,
        tag: 0,
        diagnostics: false,
        copy_back: false,
    };
    let mut run = 0;
    // SAFETY: a live handle, a readable request and a writable id.
    let status = unsafe { run_lane_submit(lane, &raw const request, &raw mut run) };
    assert_eq!(status, RunLaneStatus::Ok);
    run
}

#[test]
fn a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_it_completes() {
    let control = control();
    control.reset().expect("reset the fake");
    let path = std::ffi::CString::new(
        cdylib_path()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_str()
            .expect("a UTF-8 path"),
    )
    .expect("no NUL");
    let mut config = std::mem::MaybeUninit::<RunLaneConfig>::uninit();
    // SAFETY: a valid place for a config.
    let filled = unsafe { run_lane_config_default(config.as_mut_ptr()) };
    assert_eq!(filled, RunLaneStatus::Ok);
    // SAFETY: filled by run_lane_config_default.
    let mut config = unsafe { config.assume_init() };
    config.backend = RunLaneBackend::Acl as u32;
    config.profile = RunLaneProfile::A2a3 as u32;
    config.acl_library_path = path.as_ptr();
    config.completion_timeout_ms = 10_000;
    config.device_op_timeout_ms = 5_000;
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config (its path outlives the lane) and a writable handle.
    let created = unsafe { run_lane_create(&raw const config, &raw mut lane) };
    assert_eq!(created, RunLaneStatus::Ok);

    let launches = || control.counters().expect("the fake's counters").launches;
    let first = submit(lane);
    let start = Instant::now();
    while launches() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "run 1 never launched"
        );
        thread::yield_now();
    }
    // Run 1's kernels are on the device: 10 ms into them, submit its successor.
    thread::sleep(INTO_PREDECESSOR);
    let second = submit(lane);
    let first = wait(lane, first);
    let queued = control.counters().expect("counters").queued_launches;
    let second = wait(lane, second);
    for outcome in [first, second] {
        assert_eq!(outcome.verdict, RunLaneVerdict::Ok, "run {}", outcome.id);
        assert!(outcome.has_timing);
    }
    assert_eq!(queued, 1, "run 2 was launched while run 1 executed");
    assert!(
        second.device_start_ns >= first.device_end_ns,
        "queued behind it on the pair, not beside it"
    );
    // SAFETY: a live handle, destroyed once.
    assert_eq!(unsafe { run_lane_destroy(lane) }, RunLaneStatus::Ok);
}
