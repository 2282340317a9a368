//! A runner callback that fails leaves the device's text about it (`aclGetRecentErrMsg`, kept
//! per thread) at the end of the outcome's failure line, on a host worker exactly as on the
//! lane thread: on the fake libascendcl, a `prepare` and a `finalise` that make a failing call
//! of the fake (its text names the call) and return its code.

mod common;

use std::time::Duration;

use common::{Kernels, Via, control, text};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, Outcome};

/// Each run: a pair of 100 us fake kernels.
static KERNELS: Kernels = Kernels::healthy(Duration::from_micros(100));

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
    if unsafe { (*run).tag } == 1 { failing_call() } else { 0 }
}

unsafe extern "C" fn finalise(
    _user: *mut c_void,
    run: *const RunLaneRunInfo,
    copy_back: bool,
) -> i32 {
    // SAFETY: the library passes a valid run for the call.
    if unsafe { (*run).tag } == 2 && copy_back { failing_call() } else { 0 }
}

/// The failure lines of runs tagged 1 (prepare fails), 2 (finalise fails) and 3 (succeeds)
/// on a lane with `workers` host workers.
fn lines(via: Via, workers: u32) -> Vec<(RunLaneVerdict, RunLaneStage, String)> {
    let mut config = common::fake_config(via, 0, &KERNELS, 5_000);
    config.workers = workers;
    config.runner.prepare = Some(prepare);
    config.runner.finalise = Some(finalise);
    config.runner.concurrency = RunLaneConcurrency { off_lane_thread: true, prepares_at_once: 1 };
    let lane = common::create(&config);
    let mut out = Vec::new();
    for tag in 1..=3 {
        let request = RunLaneSubmit {
            has_tag: true,
            tag,
            diagnostics: false,
            copy_back: true,
            ..RunLaneSubmit::default()
        };
        let run = common::submit_request(lane, &request).expect("accepted");
        let outcome = common::wait(lane, run);
        out.push((outcome.verdict, outcome.stage, text(&outcome.failure_line)));
    }
    common::destroy(lane);
    out
}

fn a_failed_prepare_or_finalise_ends_its_line_with_the_device_text_on_a_worker_as_on_the_lane_thread(
    via: Via,
) {
    let _fake = common::fresh();
    for workers in [0, 2] {
        let lines = lines(via, workers);
        for (at, stage) in [(0, RunLaneStage::Prepare), (1, RunLaneStage::CopyBack)] {
            let (verdict, got, line) = &lines[at];
            let what = format!("workers {workers}: {line}");
            assert_eq!((*verdict, *got), (RunLaneVerdict::Failed, stage), "{what}");
            let text = "; device: fake libascendcl: runlanefake_launch returned";
            assert!(line.contains(text), "{what}");
        }
        assert_eq!(lines[2].0, RunLaneVerdict::Ok, "workers {workers}");
        assert_eq!(lines[2].2, "", "workers {workers}");
    }
}
common::on_each_backend!(a_failed_prepare_or_finalise_ends_its_line_with_the_device_text_on_a_worker_as_on_the_lane_thread);
