//! `sim_swarm`: a seed and option bytes into the simulator.
//!
//! The input picks the chip profile and launch depth, the workload's shape (runs, device
//! time, jitter, publications, diagnostics runs, an early close) and the seed; the
//! simulator derives a whole fault mix from the seed (swarm mode), runs the workload
//! through the real driver and lane, and checks the lane's and the device's invariants after
//! every step, among them that no run is reported `Ok` without an ok result record its
//! kernels published (the simulator's harness checks every outcome). With `liveness` the faults are then healed and fresh runs must succeed unless
//! the lane ended lost. A [`Finding`] is whatever the simulator reports as a failure (an
//! invariant, a deadlock, a stuck lane, a lost or duplicated outcome), with its
//! reproduction line.

use arbitrary::Arbitrary;
use backend_sim::workload::{Points, ProfileName};
use backend_sim::{LaneEnd, SimConfig, SimError, Workload, run as simulate};

use crate::{Finding, Reached, decode};

/// The target's name.
pub const NAME: &str = "sim_swarm";

behaviours! {
    /// The behaviours a `sim_swarm` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    A2a3Queued => "a2a3 queued two deep",
    DepthOne => "launch depth one",
    A5 => "a5 profile",
    FaultFired => "a fault fired",
    Reset => "the device was reset",
    Lost => "the lane ended lost",
    QueuedLaunch => "a launch queued behind a running run",
    Published => "a publication replaced the AICore stream",
    ClosedEarly => "closed with runs in flight",
    Liveness => "healed and drained",
    Lifted => "copies on the streams and runner work on host workers",
}

/// Most runs one input submits: enough for a poison, a recovery and a publication to meet,
/// few enough that a fuzzer runs thousands of inputs a second.
pub const MAX_RUNS: u32 = 24;

/// A `sim_swarm` input: the seed and the options, each mapped into a valid range.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The seed of every random choice, including the fault mix.
    pub seed: u64,
    /// `% 4`: a2a3 queued, depth one (the `depth-one` profile: a2a3 at launch depth one),
    /// a5 (queued two deep on the record channel), a2a3 lifted (copies on the streams,
    /// prepare and finalise on two host workers, four slots, a prepare window of two).
    pub shape: u8,
    /// Runs, `1 + runs % MAX_RUNS`.
    pub runs: u8,
    /// Device time per run, `1 + device_us % 2000` microseconds.
    pub device_us: u16,
    /// Jitter, `jitter_pct % 51` percent.
    pub jitter_pct: u8,
    /// Publish after every n-th run, `n = publish_every % 8` (0: never).
    pub publish_every: u8,
    /// Every n-th run with diagnostics, `n = diagnostics_every % 8` (0: never).
    pub diagnostics_every: u8,
    /// Close after `close_after % (runs + 1)` runs when non-zero, with runs in flight.
    pub close_after: u8,
    /// Heal the faults afterwards and require fresh runs to succeed.
    pub liveness: bool,
}

impl Input {
    /// The simulation this input describes.
    #[must_use]
    pub fn config(&self) -> SimConfig {
        let (profile, depth) = match self.shape % 4 {
            0 | 3 => (ProfileName::A2a3, None),
            1 => (ProfileName::DepthOne, None),
            _ => (ProfileName::A5, None),
        };
        let lifted = self.shape % 4 == 3;
        let runs = 1 + u32::from(self.runs) % MAX_RUNS;
        let every =
            |n: u8| Points { every: (n % 8 != 0).then_some(u32::from(n % 8)), at: Vec::new() };
        let close_after = u32::from(self.close_after) % (runs + 1);
        SimConfig {
            profile,
            depth,
            slots: lifted.then_some(4),
            prepare_window: lifted.then_some(2),
            copies: lifted.then_some(lane_core::CopyPath::OnStream),
            workers: if lifted { 2 } else { 0 },
            seed: self.seed,
            workload: Workload {
                runs,
                device_ns: (1 + u64::from(self.device_us) % 2000) * 1_000,
                jitter_ppm: u32::from(self.jitter_pct % 51) * 10_000,
                publish_after: every(self.publish_every),
                diagnostics: every(self.diagnostics_every),
                close_after: (close_after != 0).then_some(close_after),
            },
            swarm: true,
            liveness: self.liveness,
            ..SimConfig::default()
        }
    }
}

/// Runs the simulation; any failure the simulator reports is a finding.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let config = input.config();
    let report = simulate(&config, &mut |_, _| {}).map_err(|e| {
        let message = match e {
            // The input maps into valid options by construction: a refusal is a bug here.
            SimError::Input(bad) => format!("the body built an invalid configuration: {bad}"),
            failed => failed.to_string(),
        };
        Finding::new(NAME, None, message)
    })?;
    let mut reached = Reached::default();
    let mut hit = |b: B| reached.insert(b.bit());
    hit(match (config.profile, config.depth) {
        (ProfileName::A2a3, None) => B::A2a3Queued,
        (ProfileName::A2a3, Some(_)) | (ProfileName::DepthOne, _) => B::DepthOne,
        (ProfileName::A5, _) => B::A5,
    });
    if config.workers > 0 {
        hit(B::Lifted);
    }
    if report.faults_injected > 0 {
        hit(B::FaultFired);
    }
    if report.resets > 0 {
        hit(B::Reset);
    }
    if report.end == LaneEnd::Lost {
        hit(B::Lost);
    }
    if report.queued_launches > 0 {
        hit(B::QueuedLaunch);
    }
    if report.aicore_streams_created > 1 && config.workload.publish_after.every.is_some() {
        hit(B::Published);
    }
    if config.workload.close_after.is_some() {
        hit(B::ClosedEarly);
    }
    if config.liveness {
        hit(B::Liveness);
    }
    Ok(reached)
}

/// Builds an [`Input`] from raw bytes (as libFuzzer's typed target does) and runs it.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    decode::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}
