//! A runner callback that fails leaves the device's text about it (`aclGetRecentErrMsg`, kept
//! per thread) at the end of the outcome's failure line, on a host worker exactly as on the
//! lane thread: on the fake libascendcl, a `prepare` and a `finalise` that make a failing call
//! of the fake (its text names the call) and return its code.

use std::ffi::CStr;
use std::sync::OnceLock;
use std::time::Duration;

use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{Control, ENGINE_AICORE, ENGINE_AICPU, Outcome, cdylib_path};

/// The fake's control surface, shared with the callbacks.
fn control() -> &'static Control {
    static CONTROL: OnceLock<Control> = OnceLock::new();
    CONTROL.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        Control::open(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A call of the fake that fails on the calling thread (a launch on no stream), leaving its
/// text for `aclGetRecentErrMsg` there; its code.
fn failing_call() -> i32 {
    match control().launch(
        std::ptr::null_mut(),
        ENGINE_AICORE,
        Duration::ZERO,
        Outcome::Ok,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        &[],
    ) {
        Ok(()) => panic!("a launch on a NULL stream succeeded"),
        Err(run_lane_fake_ascendcl::ControlError::Call { code, .. }) => code,
        Err(other) => panic!("{other}"),
    }
}

unsafe extern "C" fn prepare(_user: *mut c_void, run: *const RunLaneRunInfo) -> i32 {
    // SAFETY: the library passes a valid run for the call.
    if unsafe { (*run).tag } == 1 {
        failing_call()
    } else {
        0
    }
}

unsafe extern "C" fn finalise(
    _user: *mut c_void,
    run: *const RunLaneRunInfo,
    copy_back: bool,
) -> i32 {
    // SAFETY: the library passes a valid run for the call.
    if unsafe { (*run).tag } == 2 && copy_back {
        failing_call()
    } else {
        0
    }
}

fn launch(stream: *mut c_void, engine: u32, timing: *mut c_void) -> i32 {
    match control().launch(
        stream,
        engine,
        Duration::from_micros(100),
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
    launch(stream, ENGINE_AICPU, unsafe { (*args).timing })
}

fn text(buffer: &[core::ffi::c_char]) -> String {
    // SAFETY: the library NUL-terminates every string buffer.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The failure lines of runs tagged 1 (prepare fails), 2 (finalise fails) and 3 (succeeds)
/// on a lane with `workers` host workers.
fn lines(path: &std::ffi::CStr, workers: u32) -> Vec<(RunLaneVerdict, RunLaneStage, String)> {
    let mut config = std::mem::MaybeUninit::<RunLaneConfig>::uninit();
    // SAFETY: a valid place for a config.
    let filled = unsafe { run_lane_config_default(config.as_mut_ptr()) };
    assert_eq!(filled, RunLaneStatus::Ok);
    // SAFETY: filled by run_lane_config_default.
    let mut config = unsafe { config.assume_init() };
    config.acl_library_path = path.as_ptr();
    config.completion_timeout_ms = 10_000;
    config.device_op_timeout_ms = 5_000;
    config.workers = workers;
    config.runner.prepare = Some(prepare);
    config.runner.finalise = Some(finalise);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.runner.concurrency = RunLaneConcurrency {
        off_lane_thread: true,
        prepares_at_once: 1,
    };
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config (its path outlives the lane) and a writable handle.
    let created = unsafe { run_lane_create(&raw const config, &raw mut lane) };
    assert_eq!(created, RunLaneStatus::Ok);
    let mut out = Vec::new();
    for tag in 1..=3 {
        let request = RunLaneSubmit {
            has_tag: true,
            tag,
            diagnostics: false,
            copy_back: true,
        };
        let mut run = 0;
        // SAFETY: a live handle, a readable request, a writable id.
        let submitted = unsafe { run_lane_submit(lane, &raw const request, &raw mut run) };
        assert_eq!(submitted, RunLaneStatus::Ok);
        let mut outcome = std::mem::MaybeUninit::<RunLaneOutcome>::uninit();
        // SAFETY: a live handle and a writable outcome.
        let waited = unsafe { run_lane_wait(lane, run, 30_000, outcome.as_mut_ptr()) };
        assert_eq!(waited, RunLaneStatus::Ok);
        // SAFETY: filled by the OK wait.
        let outcome = unsafe { outcome.assume_init() };
        out.push((outcome.verdict, outcome.stage, text(&outcome.failure_line)));
    }
    // SAFETY: a live handle, destroyed once.
    assert_eq!(unsafe { run_lane_destroy(lane) }, RunLaneStatus::Ok);
    out
}

#[test]
fn a_failed_prepare_or_finalise_ends_its_line_with_the_device_text_on_a_worker_as_on_the_lane_thread()
 {
    control().reset().expect("reset the fake");
    let path = std::ffi::CString::new(
        cdylib_path()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_str()
            .expect("a UTF-8 path"),
    )
    .expect("no NUL");
    for workers in [0, 2] {
        let lines = lines(&path, workers);
        let (verdict, stage, line) = &lines[0];
        assert_eq!(
            (*verdict, *stage),
            (RunLaneVerdict::Failed, RunLaneStage::Prepare),
            "workers {workers}: {line}"
        );
        assert!(
            line.contains("; device: fake libascendcl: runlanefake_launch returned"),
            "workers {workers}: {line}"
        );
        let (verdict, stage, line) = &lines[1];
        assert_eq!(
            (*verdict, *stage),
            (RunLaneVerdict::Failed, RunLaneStage::CopyBack),
            "workers {workers}: {line}"
        );
        assert!(
            line.contains("; device: fake libascendcl: runlanefake_launch returned"),
            "workers {workers}: {line}"
        );
        assert_eq!(lines[2].0, RunLaneVerdict::Ok, "workers {workers}");
        assert_eq!(lines[2].2, "", "workers {workers}");
    }
}
