//! Every input that ever made a fuzz body report a finding or panic, rebuilt literally, with
//! its root cause. The raw files live in `fuzz/regressions/<target>/` (replayed byte for
//! byte by `tests/replay.rs`); the byte encoding follows `arbitrary`'s derive, which may change
//! between versions, so each one is also spelled out here as operations a reader can follow.
//!
//! To add one: `cargo fuzz fmt -s none <target> <file>` in `fuzz/` prints the input's operations;
//! copy them into a test named for what it proves, and record the finding in
//! docs/fuzzing.md.

use lane_fuzz::lane_sequences::{self, LeasePick, Op, ProfileInput, Reply};

/// Root cause (a bug in the `lane_sequences` body, found by the smoke run while the body was
/// written; the lane was right): a publication's `UploadCode` comes out of the same call that
/// finalises the run before it, and that run's outcome is delivered by that call too. The
/// body checked each effect as it was polled, before reading the call's outcomes, so it saw an
/// upload while an earlier item still looked undelivered and reported "publication 2 uploads
/// before item 1 has its outcome". The body now checks a call's effects after its outcomes.
/// Raw file: `fuzz/regressions/lane_sequences/smoke-upload-polled-with-the-unblocking-outcome`.
#[test]
fn an_upload_polled_with_the_outcome_that_unblocks_it_is_not_early() {
    let input = lane_sequences::Input {
        // Two slots, launch depth one.
        profile: ProfileInput {
            slots: 1,
            depth: 0,
            concurrent_prepare: false,
            host_build_graph: false,
            attempts: 0,
            window: 0,
            runtime_recovery: false,
            finalise_first: false,
        },
        // The final drain answers run 1 to the end; its `Finalised` both delivers its
        // outcome and starts publication 2's upload.
        ops: vec![
            Op::Submit { tag: None, diagnostics: false, lease: LeasePick::None },
            Op::Publish(56),
        ],
    };
    assert_eq!(lane_sequences::run(&input).map(|_| ()), Ok(()));
}

/// Root cause (a bug in the lane, found by `lane_sequences` on 2026-12-05): a close made while
/// a fault notice held the lane suspect changed the lane to `Suspect(then Close)` with no
/// action, so a reservation taken before the notice stayed reserved until the recovery began,
/// and `release` still accepted it after the close. An open lane's close gives every
/// reservation back (no submit can use one once closed), and the body holds the lane to that.
/// The suspect lane's close now releases the reservations at once (`ReleaseReservations`,
/// one row of docs/state-machines/lane.md).
/// Raw file: `fuzz/regressions/lane_sequences/close-while-suspect-keeps-a-reservation`.
#[test]
fn a_close_while_suspect_gives_back_the_reservations_it_can_no_longer_use() {
    let input = lane_sequences::Input {
        // Every slot, launch depth all of them, concurrent prepare, 3 recovery attempts.
        profile: ProfileInput {
            slots: 255,
            depth: 255,
            concurrent_prepare: true,
            host_build_graph: false,
            attempts: 2,
            window: 0,
            runtime_recovery: false,
            finalise_first: false,
        },
        ops: vec![
            // Run 1 is submitted, and an effect outstanding for it is answered with a failure.
            Op::Submit { tag: None, diagnostics: false, lease: LeasePick::None },
            Op::Answer { effect: 147, reply: Reply::Failure { code: 0, step: 147 } },
            // A reservation, then a notice: the lane is suspect.
            Op::Reserve,
            Op::Notice(0),
            // The close waits for the recovery; the reservation is given back now.
            Op::Close,
            Op::Release(LeasePick::Former(0)),
        ],
    };
    assert_eq!(lane_sequences::run(&input).map(|_| ()), Ok(()));
}
