//! Fuzz target `sim_swarm`. The body is `lane_fuzz::sim_swarm::run`,
//! so `cargo test` replays and smoke-runs exactly what this target runs.
#![no_main]

use lane_fuzz::sim_swarm::{Input, run};

libfuzzer_sys::fuzz_target!(|input: Input| {
    if let Err(finding) = run(&input) {
        panic!("{finding}");
    }
});
