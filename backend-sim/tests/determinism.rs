//! Determinism: the same seed and options give a byte-identical trace; and a short
//! fixed-seed trace, snapshot-tested, shows reviewers what a trace looks like.

use backend_sim::workload::{Points, ProfileName};
use backend_sim::{FaultRule, SimConfig, Workload, run};

fn traced(seed: u64, profile: ProfileName) -> SimConfig {
    SimConfig {
        profile,
        seed,
        workload: Workload {
            runs: 30,
            publish_after: Points { every: Some(9), at: Vec::new() },
            ..Workload::default()
        },
        swarm: true,
        liveness: true,
        trace: true,
        ..SimConfig::default()
    }
}

fn trace_of(config: &SimConfig) -> (String, String) {
    let report = run(config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    let json = backend_sim::trace::chrome_json(&[("arm", &report.trace, &report.stream_roles)]);
    (report.text_trace(), json)
}

#[test]
fn the_same_seed_and_options_give_a_byte_identical_trace() {
    for seed in [1, 2, 3, 42, 1234, u64::MAX] {
        for profile in [ProfileName::A2a3, ProfileName::A5] {
            let config = traced(seed, profile);
            let first = trace_of(&config);
            let second = trace_of(&config);
            assert!(first.0.lines().count() > 100, "seed {seed}: the trace is too short");
            assert!(first == second, "seed {seed} {profile:?}: the traces differ");
        }
    }
}

#[test]
fn different_seeds_give_different_traces() {
    let a = trace_of(&traced(1, ProfileName::A2a3)).0;
    let b = trace_of(&traced(2, ProfileName::A2a3)).0;
    assert_ne!(a, b, "the seed drives the fault mix and the device-time jitter");
}

#[test]
fn a_three_run_trace_reads_as_a_timeline() {
    let config = SimConfig {
        workload: Workload { runs: 3, jitter_ppm: 0, ..Workload::default() },
        faults: vec![FaultRule::parse("latch=SCOPE_DEADLOCK@run:2").unwrap()],
        trace: true,
        ..SimConfig::default()
    };
    let report = run(&config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!(report.text_trace());
}
