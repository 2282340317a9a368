//! Every input that ever made a fuzz body report a finding or panic, rebuilt literally, with
//! its root cause. The raw files live in `fuzz/regressions/<target>/` (replayed byte for
//! byte by `tests/replay.rs`); the byte encoding follows `arbitrary`'s derive, which may change
//! between versions, so each one is also spelled out here as operations a reader can follow.
//!
//! To add one: `cargo fuzz fmt -s none <target> <file>` in `fuzz/` prints the input's operations;
//! copy them into a test named for what it proves, and record the finding in
//! docs/fuzzing.md.

use lane_fuzz::lane_sequences::{self, LeasePick, Op, ProfileInput};

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
        },
        // The final drain answers run 1 to the end; its `Finalised` both delivers its
        // outcome and starts publication 2's upload.
        ops: vec![
            Op::Submit {
                tag: None,
                diagnostics: false,
                lease: LeasePick::None,
            },
            Op::Publish(56),
        ],
    };
    assert_eq!(lane_sequences::run(&input).map(|_| ()), Ok(()));
}
