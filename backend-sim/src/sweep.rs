//! The before/after sweep: depth one against queued depth two over a range of device
//! times, beside the throughput model of measured-figures.md §5(c).
//!
//! Each point runs the same workload twice in one simulation session, at launch depth one
//! (the host-synchronised lane, "before") and queued at depth two ("after"), with the same
//! seed and costs. Figures are taken in steady state: the first runs of each arm pay the
//! one-time costs (stream creation, the first AICore launch's binary load, slot buffers),
//! so they are skipped (see [`SweepConfig::warmup_runs`]).
//!
//! # The model (§5(c))
//!
//! - depth-one period `T1 = D + R`, and never below `H` (see [`Model::depth_one_period_ns`]);
//! - queued period `T2 = max(D + g, H)`;
//! - speedup `T1 / T2`.
//!
//! `D`, `R`, `g` and `H` are derived from the simulator's cost table by [`Model::from_costs`];
//! its doc comment states each sum and why.

use std::fmt::Write as _;

use serde::Serialize;

use crate::costs::{Cost, Costs};
use crate::error::{InputError, SimError};
use crate::stats::RunStat;
use crate::workload::{ProfileName, Report, SimConfig, Workload, run};

/// The default device times per run (us): from launch-bound runs to runs long enough that
/// the host round trip is lost in them.
pub const DEFAULT_POINTS_US: [u64; 8] = [20, 50, 100, 250, 500, 1000, 2000, 5000];
/// Default runs per arm and point: enough that the steady window dwarfs the warm-up.
pub const DEFAULT_RUNS: u32 = 1_000;

/// The throughput model of measured-figures.md §5(c), with its four quantities derived
/// from a cost table. All times in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Model {
    /// Device time a run adds before its work: `D` = workload device time + this.
    pub preamble_ns: u64,
    /// `R`, the depth-one round trip: device idle from run N's end to run N+1's start.
    pub r_ns: u64,
    /// `g`, the queued gap: device idle between two runs already queued back to back.
    pub g_ns: u64,
    /// `H`, host time per run on the lane's one thread once the host is the bottleneck.
    pub h_ns: u64,
}

impl Model {
    /// Derives the model from the simulator's costs, following exactly what the driver does
    /// per run (lane-driver, `Driver::launch` and `Driver::read_status`: one arm copy
    /// before a launch, one status read after completion) and how the simulated device
    /// schedules tasks (`SimDevice`: a task starts after its predecessor plus a task switch,
    /// and a launched kernel after the start latency).
    ///
    /// - `D = workload device time + RunPreamble`: §5 counts the per-run preamble (A8) as
    ///   device time.
    /// - `g = 2·TaskSwitch + EventTask`: after run N's kernels end, each stream runs N's
    ///   completion-event task and then N+1's kernel, each behind a task switch.
    /// - `R = TaskSwitch + EventTask + HostWakeup + EventQuery + ReadD2h + WriteH2d +
    ///   2·KernelLaunch + KernelStartLatency`: at depth one, run N's AICPU event passes
    ///   (task switch, event task), the blocked host wakes, finds the AICore event passed
    ///   too (a non-blocking query), reads N's status (one D2H: timing and header), arms
    ///   N+1's slot (one H2D), launches both kernels, and N+1 starts after the start latency.
    ///   N+1 was prepared while N ran (the a2a3 profile prepares concurrently, A23), and N's
    ///   finalise runs after N+1's launch, so neither is on this path.
    /// - `H = Prepare + WriteH2d + 2·KernelLaunch + 2·EventRecord + 2·EventQuery + ReadD2h +
    ///   Finalise`: everything the lane's one thread does per run (§5's `H`: prepare, two
    ///   launches, two event records, the wait bookkeeping, the status D2H, finalise). When
    ///   the host is the bottleneck both completion events have passed by the time it waits,
    ///   so each wait costs a query, not a wake-up.
    pub fn from_costs(costs: &Costs) -> Self {
        let c = |cost| costs.get(cost);
        Self {
            preamble_ns: c(Cost::RunPreamble),
            g_ns: 2 * c(Cost::TaskSwitch) + c(Cost::EventTask),
            r_ns: c(Cost::TaskSwitch)
                + c(Cost::EventTask)
                + c(Cost::HostWakeup)
                + c(Cost::EventQuery)
                + c(Cost::ReadD2h)
                + c(Cost::WriteH2d)
                + 2 * c(Cost::KernelLaunch)
                + c(Cost::KernelStartLatency),
            h_ns: c(Cost::Prepare)
                + c(Cost::WriteH2d)
                + 2 * c(Cost::KernelLaunch)
                + 2 * c(Cost::EventRecord)
                + 2 * c(Cost::EventQuery)
                + c(Cost::ReadD2h)
                + c(Cost::Finalise),
        }
    }

    /// `D` for a workload device time: the run's device wall, preamble included.
    pub const fn device_ns(&self, workload_device_ns: u64) -> u64 {
        workload_device_ns + self.preamble_ns
    }

    /// Depth-one period: `T1 = D + R` (§5(c)), or `H` when that is longer. §5(c)'s
    /// refinement: run N+1's prepare overlaps run N (A23), so a depth-one lane whose host
    /// work per run exceeds `D + R` is host-bound like the queued one, not slower.
    pub fn depth_one_period_ns(&self, workload_device_ns: u64) -> u64 {
        (self.device_ns(workload_device_ns) + self.r_ns).max(self.h_ns)
    }

    /// Queued period: `T2 = max(D + g, H)` (§5(c)).
    pub fn queued_period_ns(&self, workload_device_ns: u64) -> u64 {
        (self.device_ns(workload_device_ns) + self.g_ns).max(self.h_ns)
    }

    /// The queued period when each run's device time is drawn uniformly from
    /// `workload ± jitter` (as [`RunTimes`](crate::RunTimes) draws it): `E[max(D_i + g, H)]`.
    /// The model's `max(E[D] + g, H)` is its lower bound (Jensen); they differ only where
    /// some runs are device-bound and others host-bound, i.e. where `D + g` is within the
    /// jitter of `H`: a host-bound run leaves the device idle, and the two-deep queue cannot
    /// bank that idle time for the next, longer run.
    pub fn queued_period_with_jitter_ns(&self, workload_device_ns: u64, jitter_ppm: u32) -> f64 {
        let span = (workload_device_ns as f64) * f64::from(jitter_ppm) / 1e6;
        let centre = (self.device_ns(workload_device_ns) + self.g_ns) as f64;
        let (lo, hi, h) = (centre - span, centre + span, self.h_ns as f64);
        if span <= 0.0 || h <= lo {
            centre.max(h)
        } else if h >= hi {
            h
        } else {
            // Runs below H take H; runs above take their own time.
            ((h - lo) * h + (hi * hi - h * h) / 2.0) / (hi - lo)
        }
    }
}

/// What to sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepConfig {
    /// Device time per run (workload, after the preamble) at each point, in us.
    pub points_us: Vec<u64>,
    /// Runs per arm and point.
    pub runs: u32,
    /// Per-run jitter of the device time, in parts per million (the model assumes none).
    pub jitter_ppm: u32,
    /// Seed of the simulation (jitter only: the sweep injects no faults).
    pub seed: u64,
    /// Cost overrides (ns); the model is derived from the same table.
    pub costs: Vec<(Cost, u64)>,
}

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            points_us: DEFAULT_POINTS_US.to_vec(),
            runs: DEFAULT_RUNS,
            jitter_ppm: 0,
            seed: 1,
            costs: Vec::new(),
        }
    }
}

impl SweepConfig {
    /// The costs, defaults plus overrides.
    pub fn cost_table(&self) -> Costs {
        let mut costs = Costs::default();
        for (cost, ns) in &self.costs {
            costs.set(*cost, *ns);
        }
        costs
    }

    /// Runs skipped at the start of each arm: a tenth of them, at least two (the first
    /// creates the streams and loads the AICore binary, the second fills the queue).
    pub const fn warmup_runs(&self) -> u32 {
        let tenth = self.runs / 10;
        if tenth > 2 { tenth } else { 2 }
    }

    /// Checks the sweep can run; the error names the fix.
    pub fn validate(&self) -> Result<(), InputError> {
        if self.points_us.is_empty() || self.points_us.contains(&0) {
            return Err(InputError::Workload(
                "a sweep needs device times above 0 us; give e.g. --points 20,250,5000".to_owned(),
            ));
        }
        if self.runs < self.warmup_runs() + 2 {
            return Err(InputError::Workload(format!(
                "{} runs leave no steady window after the {} warm-up runs; give --runs 4 or more",
                self.runs,
                self.warmup_runs()
            )));
        }
        Ok(())
    }
}

/// One arm's steady-state figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Arm {
    /// The launch depth.
    pub depth: u8,
    /// Runs per second in steady state.
    pub runs_per_s: f64,
    /// Mean time between consecutive runs' device ends in steady state.
    pub period_ns: f64,
    /// Busy device time over the steady window.
    pub utilisation: f64,
    /// Mean device idle between consecutive runs in the steady window.
    pub mean_gap_ns: f64,
    /// Mean host time in calls per run in the steady window.
    pub host_busy_per_run_ns: f64,
    /// Runs in the steady window.
    pub steady_runs: usize,
}

/// One device time, both arms and the model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The workload's device time per run (after the preamble), in ns.
    pub workload_device_ns: u64,
    /// The model's `D` (preamble included), in ns.
    pub d_ns: u64,
    /// Depth one ("before").
    pub depth_one: Arm,
    /// Queued depth two ("after").
    pub queued: Arm,
    /// Queued over depth-one runs/s.
    pub ratio: f64,
    /// The model's depth-one period, in ns.
    pub model_depth_one_period_ns: u64,
    /// The model's queued period, in ns.
    pub model_queued_period_ns: u64,
    /// The model's depth-one runs/s.
    pub model_depth_one_runs_per_s: f64,
    /// The model's queued runs/s (the ideal).
    pub model_queued_runs_per_s: f64,
    /// The model's speedup, `T1 / T2`.
    pub model_ratio: f64,
    /// Queued runs/s over the model's queued runs/s.
    pub queued_of_model: f64,
    /// The queued runs/s the model expects with the sweep's per-run jitter
    /// ([`Model::queued_period_with_jitter_ns`]; equal to the model's without jitter).
    pub model_queued_jitter_runs_per_s: f64,
    /// Whether the queued lane is host-bound in the model (`H > D + g`).
    pub host_bound: bool,
}

/// A whole sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// The model used.
    pub model: Model,
    /// Runs per arm and point.
    pub runs: u32,
    /// Runs skipped per arm before the steady window.
    pub warmup_runs: u32,
    /// Device-time jitter, in percent.
    pub jitter_pct: f64,
    /// The seed.
    pub seed: u64,
    /// One entry per device time, in the order asked.
    pub points: Vec<Point>,
}

/// Runs the sweep. `on_point(done, total)` is called after each point.
pub fn sweep(
    config: &SweepConfig,
    on_point: &mut dyn FnMut(usize, usize),
) -> Result<Sweep, SimError> {
    config.validate()?;
    let model = Model::from_costs(&config.cost_table());
    let warmup = usize::try_from(config.warmup_runs()).unwrap_or(usize::MAX);
    let mut points = Vec::new();
    for (i, &us) in config.points_us.iter().enumerate() {
        let workload_device_ns = us.saturating_mul(1_000);
        let arm = |depth: u8| -> Result<Arm, SimError> {
            let sim = SimConfig {
                profile: ProfileName::A2a3,
                depth: Some(depth),
                seed: config.seed,
                workload: Workload {
                    runs: config.runs,
                    device_ns: workload_device_ns,
                    jitter_ppm: config.jitter_ppm,
                    ..Workload::default()
                },
                costs: config.costs.clone(),
                ..SimConfig::default()
            };
            let report = run(&sim, &mut |_, _| {})?;
            steady(&report, depth, warmup)
        };
        let depth_one = arm(1)?;
        let queued = arm(2)?;
        let t1 = model.depth_one_period_ns(workload_device_ns);
        let t2 = model.queued_period_ns(workload_device_ns);
        let per_s = |period_ns: u64| 1e9 / period_ns as f64;
        points.push(Point {
            workload_device_ns,
            d_ns: model.device_ns(workload_device_ns),
            depth_one,
            queued,
            ratio: queued.runs_per_s / depth_one.runs_per_s,
            model_depth_one_period_ns: t1,
            model_queued_period_ns: t2,
            model_depth_one_runs_per_s: per_s(t1),
            model_queued_runs_per_s: per_s(t2),
            model_ratio: t1 as f64 / t2 as f64,
            queued_of_model: queued.runs_per_s / per_s(t2),
            model_queued_jitter_runs_per_s: 1e9
                / model.queued_period_with_jitter_ns(workload_device_ns, config.jitter_ppm),
            host_bound: model.h_ns > model.device_ns(workload_device_ns) + model.g_ns,
        });
        on_point(i + 1, config.points_us.len());
    }
    Ok(Sweep {
        model,
        runs: config.runs,
        warmup_runs: config.warmup_runs(),
        jitter_pct: f64::from(config.jitter_ppm) / 10_000.0,
        seed: config.seed,
        points,
    })
}

/// Steady-state figures of one arm: every run after the warm-up must be `Ok` and timed.
fn steady(report: &Report, depth: u8, warmup: usize) -> Result<Arm, SimError> {
    let runs: &[RunStat] = report.runs.get(warmup..).unwrap_or_default();
    let timed: Vec<(u64, u64)> = runs
        .iter()
        .filter_map(|r| r.start_ns.zip(r.end_ns))
        .collect();
    let (Some(&(first_start, first_end)), Some(&(_, last_end))) = (timed.first(), timed.last())
    else {
        return Err(not_steady(depth, "no timed run after the warm-up"));
    };
    if timed.len() != runs.len() || report.summary.counts.ok != report.runs.len() as u64 {
        return Err(not_steady(
            depth,
            &format!("not every run was ok and timed: {}", report.summary.counts),
        ));
    }
    let n = timed.len();
    let period_ns = (last_end - first_end) as f64 / (n - 1).max(1) as f64;
    let busy: u64 = timed.iter().map(|(s, e)| e - s).sum();
    let window = last_end - first_start;
    // Gaps between runs inside the window (the first steady run's gap precedes it).
    let gaps: Vec<u64> = runs
        .iter()
        .skip(1)
        .filter_map(|r| r.gap_before_ns)
        .collect();
    let mean = |values: &[u64]| values.iter().sum::<u64>() as f64 / values.len().max(1) as f64;
    let host: Vec<u64> = runs.iter().map(|r| r.host.busy_ns).collect();
    Ok(Arm {
        depth,
        runs_per_s: if period_ns > 0.0 {
            1e9 / period_ns
        } else {
            0.0
        },
        period_ns,
        utilisation: if window > 0 {
            busy as f64 / window as f64
        } else {
            0.0
        },
        mean_gap_ns: mean(&gaps),
        host_busy_per_run_ns: mean(&host),
        steady_runs: n,
    })
}

fn not_steady(depth: u8, why: &str) -> SimError {
    SimError::from(InputError::Workload(format!(
        "the depth-{depth} arm has no steady window ({why}); give more runs"
    )))
}

impl Sweep {
    /// The human-readable table: one row per device time.
    pub fn table(&self) -> String {
        let us = |ns: f64| ns / 1_000.0;
        let m = &self.model;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "model (measured-figures.md §5(c)): D = device time + {:.1} us preamble, R = {:.1} us, g = {:.1} us, H = {:.1} us",
            us(m.preamble_ns as f64),
            us(m.r_ns as f64),
            us(m.g_ns as f64),
            us(m.h_ns as f64)
        );
        let _ = writeln!(
            out,
            "  depth one T1 = max(D + R, H), queued T2 = max(D + g, H); {} runs per arm, first {} skipped, jitter {}%, seed {}",
            self.runs, self.warmup_runs, self.jitter_pct, self.seed
        );
        out.push('\n');
        let _ = writeln!(
            out,
            "{:>9} {:>9} | {:>9} {:>9} {:>7} | {:>6} {:>6} | {:>9} {:>9} | {:>9} {:>9} {:>7} | {:>8}",
            "device_us",
            "D_us",
            "1:runs/s",
            "2:runs/s",
            "ratio",
            "1:util",
            "2:util",
            "1:gap_us",
            "2:gap_us",
            "T1:runs/s",
            "T2:runs/s",
            "T1/T2",
            "2/T2"
        );
        for p in &self.points {
            let _ = writeln!(
                out,
                "{:>9} {:>9.1} | {:>9.0} {:>9.0} {:>7.3} | {:>5.1}% {:>5.1}% | {:>9.1} {:>9.1} | {:>9.0} {:>9.0} {:>7.3} | {:>7.2}%{}",
                p.workload_device_ns / 1_000,
                us(p.d_ns as f64),
                p.depth_one.runs_per_s,
                p.queued.runs_per_s,
                p.ratio,
                p.depth_one.utilisation * 100.0,
                p.queued.utilisation * 100.0,
                us(p.depth_one.mean_gap_ns),
                us(p.queued.mean_gap_ns),
                p.model_depth_one_runs_per_s,
                p.model_queued_runs_per_s,
                p.model_ratio,
                p.queued_of_model * 100.0,
                if p.host_bound { "  host-bound" } else { "" }
            );
        }
        out.push_str("\n1 = depth one (before), 2 = queued depth two (after); 2/T2 = queued runs/s over the model's ideal\n");
        out
    }

    /// The sweep as pretty JSON (for `cargo xtask bench` and other tools).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}
