//! Fuzz target `dispatch_orders`. The body is `lane_fuzz::dispatch_orders::run`,
//! so `cargo test` replays and smoke-runs exactly what this target runs.
#![no_main]

use lane_fuzz::dispatch_orders::{Input, run};

libfuzzer_sys::fuzz_target!(|input: Input| {
    if let Err(finding) = run(&input) {
        panic!("{finding}");
    }
});
