//! Fuzz target `result_record_decode`. The body is `lane_fuzz::result_record_decode::run`,
//! so `cargo test` replays and smoke-runs exactly what this target runs.
#![no_main]

use lane_fuzz::result_record_decode::{Input, run};

libfuzzer_sys::fuzz_target!(|input: Input| {
    if let Err(finding) = run(&input) {
        panic!("{finding}");
    }
});
