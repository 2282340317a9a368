//! Size-prefixed structs (ABI 13) through the C functions: a size below ABI 13's is refused
//! naming the struct and both sizes, a longer struct is read when its unknown tail is zero,
//! an output is written only up to the caller's size; no zero of an outcome reads as success;
//! and the destroy's report counts the outcomes never taken.

mod common;

use common::{create, destroy, last_error};
use run_lane::sized::{Sized13, init};
use run_lane::*;

/// A simulator lane with no callbacks.
fn sim_lane() -> *mut RunLane {
    create(&common::sim_config())
}

fn submit(lane: *mut RunLane) -> u64 {
    common::submit(lane).unwrap_or_else(|status| panic!("{status:?}: {}", last_error()))
}

#[test]
fn a_size_below_abi_13_is_refused_naming_the_struct_and_both_sizes_and_takes_nothing() {
    let lane = sim_lane();
    let short = RunLaneSubmit { size: 8, ..RunLaneSubmit::default() };
    let mut run = 0;
    // SAFETY: a request whose size says 8 bytes (all readable).
    let status = unsafe { run_lane_submit(lane, &raw const short, &raw mut run) };
    assert_eq!(status, RunLaneStatus::AbiMismatch);
    let message = last_error();
    let names = message.contains("RunLaneSubmit.size is 8");
    assert!(names && message.contains(&RunLaneSubmit::V13.to_string()), "{message}");
    let run = submit(lane);
    // A poll into an outcome whose size is refused takes nothing: the wait still gets it.
    let mut outcome = init::<RunLaneOutcome>();
    // SAFETY: writing the size field of our own struct.
    unsafe { (*outcome.as_mut_ptr()).size = 16 };
    std::thread::sleep(std::time::Duration::from_millis(20));
    // SAFETY: a valid out pointer.
    let status = unsafe { run_lane_poll(lane, outcome.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::AbiMismatch, "{}", last_error());
    let mut outcome = init::<RunLaneOutcome>();
    // SAFETY: a sized outcome.
    let status = unsafe { run_lane_wait(lane, run, 10_000, outcome.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Ok, "{}", last_error());
    destroy(lane);
}

/// A submit as a newer client would pass it: this library's struct, then more bytes.
#[repr(C)]
struct LongerSubmit {
    submit: RunLaneSubmit,
    tail: [u8; 16],
}

#[test]
fn a_longer_struct_is_accepted_when_its_unknown_tail_is_zero_and_refused_otherwise() {
    let lane = sim_lane();
    let mut longer = LongerSubmit {
        submit: RunLaneSubmit {
            size: size_of::<LongerSubmit>() as u32,
            ..RunLaneSubmit::default()
        },
        tail: [0; 16],
    };
    let mut run = 0;
    // SAFETY: `size` bytes readable.
    let status = unsafe { run_lane_submit(lane, &raw const longer.submit, &raw mut run) };
    assert_eq!(status, RunLaneStatus::Ok, "a zero tail: {}", last_error());
    longer.tail[3] = 1;
    // SAFETY: as above.
    let status = unsafe { run_lane_submit(lane, &raw const longer.submit, &raw mut run) };
    assert_eq!(status, RunLaneStatus::AbiMismatch);
    let message = last_error();
    assert!(message.contains(&format!("byte {}", size_of::<RunLaneSubmit>() + 3)), "{message}");
    destroy(lane);
}

/// An outcome as a newer client would pass it: this library's struct, then fields it does
/// not know (canaries here).
#[repr(C)]
struct LongerOutcome {
    outcome: RunLaneOutcome,
    tail: [u8; 32],
}

#[test]
fn an_output_is_written_up_to_the_callers_size_and_a_longer_tail_is_zeroed() {
    let lane = sim_lane();
    let run = submit(lane);
    let mut longer = LongerOutcome {
        // SAFETY: zero bytes are a valid outcome.
        outcome: unsafe { init::<RunLaneOutcome>().assume_init() },
        tail: [0xA5; 32],
    };
    longer.outcome.size = (size_of::<RunLaneOutcome>() + 16) as u32;
    // SAFETY: `size` bytes writable.
    let status = unsafe { run_lane_wait(lane, run, 10_000, &raw mut longer.outcome) };
    assert_eq!(status, RunLaneStatus::Ok, "{}", last_error());
    assert_eq!(longer.outcome.verdict, RunLaneVerdict::Ok);
    assert_eq!(longer.outcome.size as usize, size_of::<RunLaneOutcome>() + 16);
    assert_eq!(longer.tail[..16], [0; 16], "the unknown fields read as unset");
    assert_eq!(longer.tail[16..], [0xA5; 16], "nothing past the caller's size");
    destroy(lane);
}

#[test]
fn a_zeroed_outcome_and_an_outcome_after_empty_do_not_read_as_ok() {
    // SAFETY: zero bytes are a valid outcome.
    let zeroed: RunLaneOutcome = unsafe { std::mem::zeroed() };
    assert_eq!(zeroed.verdict, RunLaneVerdict::None);
    assert_ne!(zeroed.verdict, RunLaneVerdict::Ok);
    let lane = sim_lane();
    let mut outcome = init::<RunLaneOutcome>();
    // SAFETY: setting a field of our own struct.
    unsafe { (*outcome.as_mut_ptr()).verdict = RunLaneVerdict::Ok };
    // SAFETY: a sized outcome.
    let status = unsafe { run_lane_poll(lane, outcome.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::Empty);
    // SAFETY: written on EMPTY.
    let outcome = unsafe { outcome.assume_init() };
    assert_eq!((outcome.verdict, outcome.id), (RunLaneVerdict::None, 0));
    destroy(lane);
}

#[test]
fn destroy_with_report_counts_and_names_the_outcomes_never_taken() {
    let lane = sim_lane();
    let taken = submit(lane);
    common::wait(lane, taken);
    let left: Vec<u64> = (0..2).map(|_| submit(lane)).collect();
    let report = common::destroy_with_report(lane);
    assert_eq!(report.untaken, 2);
    assert_eq!(report.untaken_ids[..2], left[..]);
    assert_eq!(report.untaken_ids[2..], [0; RUN_LANE_UNTAKEN_IDS - 2]);
}

#[test]
fn a_close_report_counts_nothing_untaken_while_outcomes_may_still_be_taken() {
    let lane = sim_lane();
    submit(lane);
    assert_eq!(common::close(lane).untaken, 0);
    destroy(lane);
}

#[test]
fn a_destroy_whose_report_size_is_refused_leaves_the_lane_to_destroy_again() {
    let lane = sim_lane();
    let mut report = init::<RunLaneCloseReport>();
    // SAFETY: writing the size field of our own struct.
    unsafe { (*report.as_mut_ptr()).size = 3 };
    // SAFETY: a report whose size says 3 bytes.
    let status = unsafe { run_lane_destroy_with_report(lane, report.as_mut_ptr()) };
    assert_eq!(status, RunLaneStatus::AbiMismatch);
    let message = last_error();
    assert!(message.contains("RunLaneCloseReport"), "{message}");
    destroy(lane); // still live
}

#[test]
fn a_size_that_ends_inside_a_field_is_refused_naming_the_struct() {
    let ours = size_of::<RunLaneDeviceOps>();
    let grew = RunLaneDeviceOps::V13 + 4 < ours;
    assert!(grew, "RunLaneDeviceOps grew past ABI 13 by more than 4 bytes");
    // Every byte set: a table read with this size would hold half a pointer past ABI 13's end.
    // SAFETY: every bit pattern of these bytes is only inspected by the size check, which
    // refuses before any field is used.
    let mut ops: RunLaneDeviceOps = unsafe { std::mem::zeroed() };
    // SAFETY: writes within `ops`.
    unsafe { std::ptr::write_bytes((&raw mut ops).cast::<u8>(), 0xAB, ours) };
    let torn = RunLaneDeviceOps::V13 + 4;
    ops.size = torn as u32;
    let mut config = common::default_config();
    config.backend = RunLaneBackend::DeviceOps as u32;
    config.device_ops = &raw const ops;
    let mut lane = std::ptr::null_mut();
    // SAFETY: a valid config whose table is `ours` readable bytes; an out pointer.
    let status = unsafe { run_lane_create(&raw const config, &raw mut lane) };
    assert_eq!(status, RunLaneStatus::AbiMismatch, "{}", last_error());
    assert!(lane.is_null());
    let message = last_error();
    let names = message.contains(&format!("RunLaneDeviceOps.size is {torn}"));
    assert!(names && message.contains("ends inside a field"), "{message}");
}

#[test]
fn a_longer_size_that_is_not_a_multiple_of_the_alignment_is_refused() {
    let lane = sim_lane();
    let longer = LongerSubmit {
        submit: RunLaneSubmit {
            size: (size_of::<RunLaneSubmit>() + 3) as u32,
            ..RunLaneSubmit::default()
        },
        tail: [0; 16],
    };
    let mut run = 0;
    // SAFETY: `size` bytes readable.
    let status = unsafe { run_lane_submit(lane, &raw const longer.submit, &raw mut run) };
    assert_eq!(status, RunLaneStatus::AbiMismatch);
    let message = last_error();
    let names = message.contains("RunLaneSubmit.size is");
    assert!(names && message.contains("not a multiple"), "{message}");
    destroy(lane);
}
