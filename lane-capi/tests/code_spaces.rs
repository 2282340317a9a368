//! Code spaces through the C ABI (SPEC §5.2, §5.3, L-9): a runner callback that returns one of
//! the runtime's latch codes negated (-1..-999) reports that latched failure, named and
//! classified by the one table, and the lane's own sentinels lie outside that band
//! (`RUN_LANE_PREPARE_INCOMPATIBLE` -1002, `RUN_LANE_FINALISE_VALIDATION_FAILED` -1101). Each
//! test runs on the fake libascendcl through both backends (`on_each_backend!`) and on the
//! simulator backend.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use common::{Kernels, Via};
use core::ffi::c_void;
use lane_core::status_latch::{Class, Failure, Latch, LatchSource, RuntimeCode, classify};
use run_lane::*;

static KERNELS: Kernels = Kernels::healthy(Duration::from_millis(2));

/// What the runner's `prepare` and `finalise` return for run 1 (0 for every other run), and
/// how often each was called for each run: the callbacks read and write these, and the
/// tests of this binary take the fake in turn (`common::serial`), so one test at a time.
static PREPARE_RETURNS: AtomicI32 = AtomicI32::new(0);
static FINALISE_RETURNS: AtomicI32 = AtomicI32::new(0);
/// Run 2's `prepare` returns `RUN_LANE_PREPARE_INCOMPATIBLE` this many times first.
static INCOMPATIBLE_TIMES: AtomicI32 = AtomicI32::new(0);
/// `(run, callback)` for every `prepare` and `finalise` call, in call order.
static CALLS: Mutex<Vec<(u64, &'static str)>> = Mutex::new(Vec::new());

fn calls_of(run: u64, callback: &str) -> usize {
    CALLS.lock().unwrap().iter().filter(|(r, c)| *r == run && *c == callback).count()
}

unsafe extern "C" fn prepare(_: *mut c_void, info: *const RunLaneRunInfo) -> i32 {
    // SAFETY: the library passes a valid run for the call.
    let run = unsafe { &*info }.run;
    CALLS.lock().unwrap().push((run, "prepare"));
    match run {
        1 => PREPARE_RETURNS.load(Ordering::SeqCst),
        2 if INCOMPATIBLE_TIMES.fetch_sub(1, Ordering::SeqCst) > 0 => RUN_LANE_PREPARE_INCOMPATIBLE,
        _ => 0,
    }
}

unsafe extern "C" fn finalise(_: *mut c_void, info: *const RunLaneRunInfo, _: bool) -> i32 {
    // SAFETY: the library passes a valid run for the call.
    let run = unsafe { &*info }.run;
    CALLS.lock().unwrap().push((run, "finalise"));
    if run == 1 { FINALISE_RETURNS.load(Ordering::SeqCst) } else { 0 }
}

/// Where a test's lanes run.
#[derive(Clone, Copy, Debug)]
enum On {
    /// The fake libascendcl, through the ACL backend or a runtime's device table, on device 0.
    Fake(Via),
    /// The simulator backend.
    Sim,
}

/// A lane whose run 1's `prepare` returns `prepare_returns` and whose `finalise` returns
/// `finalise_returns`, with the counters cleared.
fn lane(on: On, prepare_returns: i32, finalise_returns: i32) -> *mut RunLane {
    PREPARE_RETURNS.store(prepare_returns, Ordering::SeqCst);
    FINALISE_RETURNS.store(finalise_returns, Ordering::SeqCst);
    CALLS.lock().unwrap().clear();
    let mut config = match on {
        On::Fake(via) => common::fake_config(via, 0, &KERNELS, 5_000),
        On::Sim => {
            let mut config = common::sim_config();
            config.check_invariants = true;
            config
        }
    };
    config.runner.prepare = Some(prepare);
    config.runner.finalise = Some(finalise);
    common::create(&config)
}

/// The C class of what the one table says for `code` latched in the header.
fn table_class(code: RuntimeCode) -> RunLaneClass {
    let latched = Failure::Latched(Latch { source: LatchSource::Orch, code });
    match classify(&latched).class {
        Class::RunOnly => RunLaneClass::RunOnly,
        Class::Poison => RunLaneClass::Poison,
    }
}

/// The fake's force resets of device 0 (none on the simulator).
fn force_resets(on: On) -> u64 {
    match on {
        On::Fake(_) => common::force_resets(0),
        On::Sim => 0,
    }
}

/// Runs `body` on the fake with a fresh session (the binary's tests take it in turn).
fn on_the_fake(via: Via, body: fn(On)) {
    let _fake = common::fresh();
    body(On::Fake(via));
}

/// Runs `body` on the simulator (still in turn: the callbacks' counters are shared).
fn on_the_simulator(body: fn(On)) {
    let _serial = common::serial();
    body(On::Sim);
}

/// Runs each body `fn $name(on: On)` on the fake through each backend and on the simulator: a
/// module `$name` with the `#[test]`s `acl`, `device_ops` and `simulator`.
macro_rules! on_the_fake_and_the_simulator {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use super::{Via, on_the_fake, on_the_simulator};

                #[test]
                fn acl() {
                    on_the_fake(Via::Acl, super::$name);
                }

                #[test]
                fn device_ops() {
                    on_the_fake(Via::DeviceOps, super::$name);
                }

                #[test]
                fn simulator() {
                    on_the_simulator(super::$name);
                }
            }
        )+
    };
}

/// The peer's `LatchedFlowControlDeadlockIsTerminalRatherThanRetried`: a host_build_graph
/// prepare that latched FLOW_CONTROL_DEADLOCK returns -3. The run fails with that code, once:
/// prepared once (never retried as incompatible, as when the lane's sentinel was -3),
/// finalised once, run-only; the run behind it is `OK`, and nothing is poisoned or reset.
fn a_latched_deadlock_from_prepare_is_terminal_prepared_once_and_poisons_nothing(on: On) {
    let lane = lane(on, -3, 0);
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2");
    let one = common::wait(lane, r1);
    let two = common::wait(lane, r2);
    let report = common::close(lane);
    common::destroy(lane);
    let line = common::line(&one);
    assert_eq!(one.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(one.failure_class, RunLaneClass::RunOnly, "{line}");
    assert_eq!(one.stage, RunLaneStage::Prepare, "{line}");
    assert!(one.has_code);
    assert_eq!(one.code, 3, "the latch code, as the header would hold it");
    assert_eq!(common::text(&one.code_name), "FLOW_CONTROL_DEADLOCK");
    let says = line.contains("at prepare: runtime latch code returned runtime_status=-3");
    assert!(says, "{line}");
    assert_eq!(calls_of(1, "prepare"), 1, "prepared once, never retried");
    assert_eq!(calls_of(1, "finalise"), 1, "finalised once");
    common::assert_ok("run 2", &two);
    assert!(!report.poisoned, "nothing poisoned");
    assert_eq!(force_resets(on), 0, "no recovery");
}

/// `finalise` returning -1 is the runtime's SCOPE_DEADLOCK (its generic failure), not a
/// copy-back validation failure (the lane's sentinel was -1 before ABI 12); the sentinel,
/// now -1101, still is one.
fn finalise_returning_minus_one_is_the_runtimes_failure_not_a_copy_back_validation(on: On) {
    let lane = lane(on, 0, -1);
    let r1 = common::submit(lane).expect("run 1");
    let one = common::wait(lane, r1);
    let report = common::close(lane);
    common::destroy(lane);
    let line = common::line(&one);
    assert_eq!(one.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(common::text(&one.code_name), "SCOPE_DEADLOCK", "{line}");
    assert_ne!(common::text(&one.code_name), "COPY_BACK_VALIDATION");
    assert_eq!((one.has_code, one.code), (true, 1));
    assert_eq!(one.stage, RunLaneStage::CopyBack);
    assert_eq!(one.failure_class, table_class(RuntimeCode::ScopeDeadlock), "{line}");
    assert!(line.contains("runtime_status=-1 SCOPE_DEADLOCK"), "{line}");
    assert!(!line.contains("validation"), "{line}");
    assert!(!report.poisoned);

    let lane = self::lane(on, 0, RUN_LANE_FINALISE_VALIDATION_FAILED);
    let r1 = common::submit(lane).expect("run 1");
    let one = common::wait(lane, r1);
    common::destroy(lane);
    assert_eq!(common::text(&one.code_name), "COPY_BACK_VALIDATION");
    assert_eq!(one.failure_class, RunLaneClass::RunOnly);
    assert!(!one.has_code);
}

/// -4 from `prepare` is DEP_POOL_OVERFLOW, classified as the table classifies the same code
/// latched in the header, with that code's hint; before ABI 12 it read "ACL -4 UNKNOWN".
fn a_minus_four_from_prepare_is_dep_pool_overflow_classified_as_the_table_says(on: On) {
    let lane = lane(on, -4, 0);
    let r1 = common::submit(lane).expect("run 1");
    let one = common::wait(lane, r1);
    common::destroy(lane);
    let line = common::line(&one);
    assert_eq!(common::text(&one.code_name), "DEP_POOL_OVERFLOW", "{line}");
    assert_eq!((one.has_code, one.code), (true, 4));
    assert_eq!(one.failure_class, table_class(RuntimeCode::DepPoolOverflow), "{line}");
    assert_eq!(common::text(&one.hint), RuntimeCode::DepPoolOverflow.hint());
    assert!(!line.contains("ACL"), "never an ACL code: {line}");
}

/// -12, in the band but in no table, is an unknown runtime latch code (named `UNKNOWN` beside
/// `runtime_status=-12`, never an ACL code), classified as the table classifies an unknown
/// latch code: poison, so the device is recovered and the lane reopens.
fn a_code_of_the_band_the_table_does_not_know_is_an_unknown_runtime_code(on: On) {
    let lane = lane(on, -12, 0);
    let r1 = common::submit(lane).expect("run 1");
    let one = common::wait(lane, r1);
    let line = common::line(&one);
    assert_eq!(common::text(&one.code_name), "UNKNOWN", "{line}");
    assert_eq!((one.has_code, one.code), (true, 12));
    assert_eq!(one.failure_class, table_class(RuntimeCode::Unknown(12)), "{line}");
    let says = "at prepare: runtime latch code returned runtime_status=-12 UNKNOWN";
    assert!(line.contains(says), "{line}");
    assert!(!line.contains("ACL"), "never an ACL code: {line}");
    common::assert_ok("reopened", &common::wait(lane, common::submit_when_open(lane)));
    common::destroy(lane);
}

/// `RUN_LANE_PREPARE_INCOMPATIBLE` at its new value still means "not while the predecessor
/// runs": run 2 is prepared again once run 1 has its outcome, and succeeds.
fn the_incompatible_sentinel_outside_the_band_is_prepared_again_and_succeeds(on: On) {
    INCOMPATIBLE_TIMES.store(1, Ordering::SeqCst);
    let lane = lane(on, 0, 0);
    let r1 = common::submit(lane).expect("run 1");
    let r2 = common::submit(lane).expect("run 2");
    let one = common::wait(lane, r1);
    let two = common::wait(lane, r2);
    common::destroy(lane);
    INCOMPATIBLE_TIMES.store(0, Ordering::SeqCst);
    common::assert_all_ok("prepared again", &[one, two]);
    assert_eq!(calls_of(2, "prepare"), 2, "refused once, then prepared");
    assert_eq!(calls_of(2, "finalise"), 1);
}

on_the_fake_and_the_simulator!(
    a_latched_deadlock_from_prepare_is_terminal_prepared_once_and_poisons_nothing,
    finalise_returning_minus_one_is_the_runtimes_failure_not_a_copy_back_validation,
    a_minus_four_from_prepare_is_dep_pool_overflow_classified_as_the_table_says,
    a_code_of_the_band_the_table_does_not_know_is_an_unknown_runtime_code,
    the_incompatible_sentinel_outside_the_band_is_prepared_again_and_succeeds,
);

#[test]
fn the_lanes_sentinels_lie_outside_the_runtimes_band() {
    for sentinel in [RUN_LANE_PREPARE_INCOMPATIBLE, RUN_LANE_FINALISE_VALIDATION_FAILED] {
        let in_band = lane_core::status_latch::RUNTIME_STATUS_BAND.contains(&sentinel);
        assert!(!in_band, "{sentinel} is a negated latch code");
    }
    assert_eq!(RUN_LANE_PREPARE_INCOMPATIBLE, -1002, "the peer's own value");
}
