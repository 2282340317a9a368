//! Fuzz target `stream_pair_orderings`. The body is `lane_fuzz::stream_pair_orderings::run`,
//! so `cargo test` replays and smoke-runs exactly what this target runs.
#![no_main]

use lane_fuzz::stream_pair_orderings::{Input, run};

libfuzzer_sys::fuzz_target!(|input: Input| {
    if let Err(finding) = run(&input) {
        panic!("{finding}");
    }
});
