//! Swarm: many seeds, each with a fault mix derived from the seed. Safety: the lane's and
//! the device's invariants hold after every step while faults fire. Liveness: once the
//! faults are healed the lane drains, every accepted item has exactly one outcome, and fresh
//! runs succeed unless the lane ended lost.

use backend_sim::workload::{Points, ProfileName};
use backend_sim::{SimConfig, Workload, run};

/// Seeds per profile shape; sized to take about 20 s in the debug test profile on a
/// 2-core machine (measured; see the crate's report).
const SEEDS: u64 = 850;

fn swarm_config(seed: u64) -> SimConfig {
    // Four shapes: a2a3 queued, a2a3 at depth one, a5, and a2a3 lifted (copies on the
    // streams, prepare and finalise on two host workers, four slots, a prepare window of
    // two); publications and diagnostics vary.
    let (profile, depth) = match seed % 4 {
        0 | 3 => (ProfileName::A2a3, None),
        1 => (ProfileName::A2a3, Some(1)),
        _ => (ProfileName::A5, None),
    };
    let lifted = seed % 4 == 3;
    SimConfig {
        profile,
        depth,
        slots: lifted.then_some(4),
        prepare_window: lifted.then_some(2),
        copies: lifted.then_some(lane_core::CopyPath::OnStream),
        workers: if lifted { 2 } else { 0 },
        seed,
        workload: Workload {
            runs: 60,
            device_ns: 50_000 + (seed % 5) * 50_000,
            jitter_ppm: 200_000,
            publish_after: Points {
                every: Some(5 + u32::try_from(seed % 4).unwrap_or(0)),
                at: Vec::new(),
            },
            diagnostics: Points {
                every: Some(7 + u32::try_from(seed % 3).unwrap_or(0)),
                at: Vec::new(),
            },
            // Every fifth seed closes half-way with runs in flight (then close must still
            // complete with one outcome per accepted item).
            close_after: (seed % 5 == 3).then_some(30),
        },
        swarm: true,
        liveness: true,
        ..SimConfig::default()
    }
}

/// `LANE_SIM_SWARM_SEEDS=N` (and `LANE_SIM_SWARM_FROM=S`) sweep other seeds, e.g. nightly:
/// `LANE_SIM_SWARM_SEEDS=100000 cargo test --release -p backend-sim --test swarm`.
fn seeds() -> std::ops::Range<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let from = var("LANE_SIM_SWARM_FROM").unwrap_or(0);
    from..from + var("LANE_SIM_SWARM_SEEDS").unwrap_or(SEEDS * 4)
}

#[test]
fn swarm_seeds_keep_every_invariant_and_drain_after_healing() {
    let mut injected = 0;
    let mut lost = 0;
    let mut resets = 0;
    let seeds = seeds();
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let config = swarm_config(seed);
        match run(&config, &mut |_, _| {}) {
            Ok(report) => {
                injected += report.faults_injected;
                resets += report.resets;
                lost += u64::from(report.end == backend_sim::LaneEnd::Lost);
            }
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    eprintln!("swarm: {count} seeds, {injected} faults fired, {resets} resets, {lost} lost");
    // The swarm must actually exercise faults and recovery, or it proves nothing.
    assert!(injected > count, "only {injected} faults fired");
    assert!(resets > 0, "no seed reached a device reset");
    assert!(lost < count / 2, "{lost} of {count} seeds ended lost");
}
