//! The lane inside a runtime shaped like the real embedding (SPEC L-22, L-23, L-24):
//! `examples/embedded_runtime.cpp`, built once with `cc` against `include/run_lane.h` and the
//! `librun_lane.a` of this test run, under AddressSanitizer, and run once per case.
//!
//! Its runtime owns its device through its own thin device layer, given to the lane as a
//! `RunLaneDeviceOps` table; lends the lane its own stream pair; sets a thread_local trace
//! context on its one driving thread that every callback and table entry checks; drives the
//! lane (`RUN_LANE_DRIVE_CALLER`) with submit, wait and poll; and owns recovery
//! (`RUN_LANE_RECOVERY_RUNTIME`). Two cases run it over the fake libascendcl (real threads
//! and time; the AICore exception and the runtime's own reset); the rest over a stub device
//! whose kernels complete when the case says so, so the order of events is the case's and no
//! time passes. Each case fails with its own `FAILED <case>: ...` lines; see the program's top
//! comment.

mod cpp;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The program, built once for this test binary into `target/<profile>/embedded-runtime/`
/// (overwritten by the next run, so nothing is left behind in the temporary folder).
fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let out = cpp::profile_dir().join("embedded-runtime");
        std::fs::create_dir_all(&out).expect("the program's folder");
        cpp::build_program_into("embedded_runtime", &out)
    })
}

/// Where a case's runtime gets its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    /// Its device layer over the fake libascendcl, whose path the program is given.
    Fake,
    /// The stub device whose completions the case decides.
    Stub,
}

/// Runs the program's case `name` on its device and fails the test unless the program exits
/// 0 having passed that case's every check (`case NAME: ok`), and, on the fake, having found
/// no force reset made under a device wait (SPEC L-20).
fn run_case(name: &str, on: On) {
    let mut command = Command::new(program());
    command.arg(name).env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1");
    if on == On::Fake {
        let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        command.arg(fake);
    }
    let output = command.output().expect("the program runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "case {name} failed ({}):\n{stdout}\n{stderr}", output.status);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!("case {name}").as_str(),
            format!("case {name}: ok").as_str(),
            "embedded runtime: ok"
        ],
        "{stderr}"
    );
    if on == On::Fake {
        let line = format!("embedded runtime: {name}: resets_under_wait 0");
        assert!(stderr.lines().any(|l| l == line), "{stderr}");
    }
}

/// Each `fn TEST = CASE on DEVICE;` is a `#[test]` that runs the program's case on that device.
macro_rules! cases {
    ($($(#[$doc:meta])* fn $test:ident = $case:literal on $on:ident;)+) => {
        $(
            $(#[$doc])*
            #[test]
            fn $test() {
                run_case($case, On::$on);
            }
        )+
    };
}

cases! {
    /// L-22, L-23: the runtime's own layer makes every device call, the lane's pair is the
    /// runtime's own two streams (given back to its destroy entry, and alive until the runtime
    /// destroys them), every callback and entry runs on the runtime's thread inside one of its
    /// calls (its trace context set), and a run submitted while its predecessor runs is launched
    /// inside that submit, before the predecessor's outcome (L-18); six runs OK in order.
    fn the_runtime_runs_the_lane_on_its_own_streams_and_device_layer_with_the_caller_driving =
        "on_its_own_streams_the_caller_driving" on Fake;

    /// L-24: an AICore exception fails its run (poison, 507015) and its queued successor
    /// (poisoned, by it); `on_poison` comes once, after both verdicts; from then on the lane calls
    /// no table entry (a submit is `UNUSABLE`, a poll finds nothing) until the runtime has reset
    /// the device through its own layer, bound its thread again, made its stream pair again and
    /// called `run_lane_device_reset`; the next run is OK on the new streams.
    fn after_an_aicore_exception_no_entry_is_called_until_the_runtimes_reset_then_it_reopens =
        "after_an_aicore_exception_the_runtime_recovers_its_device" on Fake;

    /// L-3, L-18: at depth two, run 2 is prepared and launched inside its own submit while run 1
    /// has not completed; neither is finalised before the stub completes it; each is OK, with no
    /// stream synchronize (the ok record decides, L-8).
    fn a_successor_is_prepared_and_queued_while_the_first_run_is_still_running =
        "a_successor_is_prepared_and_queued_while_the_first_runs" on Stub;

    /// L-3: at launch depth one, run 2 is prepared inside its submit while run 1 runs, and
    /// launched only once the stub completed run 1.
    fn at_depth_one_a_successor_is_prepared_while_the_first_runs_and_launched_after_it_completed =
        "at_depth_one_a_successor_is_prepared_while_the_first_runs_and_launched_after_it" on Stub;

    /// L-1: with two slots, a third submit is refused with `FULL` (nothing of it prepared) while
    /// both runs are live, and accepted, and launched behind the second, once the oldest has its
    /// outcome.
    fn capacity_two_refuses_a_third_submit_with_full_until_the_oldest_has_its_outcome =
        "capacity_two_refuses_a_third_submit_until_the_oldest_has_its_outcome" on Stub;

    /// SPEC §5.3: a prepare that fails and an AICore launch that fails with a bad argument
    /// (107000) each fail their own run, run-only, at their stage; the runs around them are OK,
    /// every prepared run is finalised once, and nothing is poisoned.
    fn a_prepare_failure_and_a_launch_failure_each_fail_only_their_own_run_without_poisoning =
        "a_prepare_failure_and_a_launch_failure_each_fail_only_their_run" on Stub;

    /// L-23: a `run_lane_wait` whose timeout passes before the run completes looks at the device,
    /// returns `TIMED_OUT` and leaves the run live (no outcome, no finalise); once the stub
    /// completes it, a later wait gets its OK outcome.
    fn an_expired_wait_leaves_the_run_live_and_a_later_wait_gets_its_outcome =
        "an_expired_wait_leaves_the_run_live" on Stub;

    /// L-14, L-15: close stops admission at once (`CLOSED`), lets the launched run finish OK,
    /// cancels the run held behind it (prepared, never launched, finalised once without
    /// copy-back), and the lane ends with no stream left and everything freed.
    fn close_finishes_the_launched_run_cancels_the_held_one_and_refuses_new_submits =
        "close_finishes_the_launched_run_cancels_the_held_one_and_refuses_new_submits" on Stub;
}
