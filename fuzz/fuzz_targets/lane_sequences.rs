//! Fuzz target `lane_sequences`. The body is `lane_fuzz::lane_sequences::run`,
//! so `cargo test` replays and smoke-runs exactly what this target runs.
#![no_main]

use lane_fuzz::lane_sequences::{Input, run};

libfuzzer_sys::fuzz_target!(|input: Input| {
    if let Err(finding) = run(&input) {
        panic!("{finding}");
    }
});
