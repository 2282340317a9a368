//! The sweep: three arms over a range of device times, each beside its throughput model
//! (measured-figures.md §5(c), extended for host workers).
//!
//! Each point runs the same workload three times in one simulation session, with the same
//! seed and costs: (1) at launch depth one (the host-synchronised lane, "before"), (2) queued
//! at depth two as today (every host step on the lane thread), and (3) queued with the copies
//! on the streams and the runner's prepare and finalise on virtual host workers
//! ([`Offload`]). Figures are taken in steady state: the first runs of each arm pay the
//! one-time costs, so they are skipped ([`SweepConfig::warmup_runs`]).
//!
//! The model's periods are `T1 = max(D + R, H1)`, `T2 = max(D + g, H)` and
//! `T3 = max(D + g3, L, W, C, V)` ([`Model`]); [`Model::from_costs`] derives each term from
//! the simulator's cost table and states each sum and why.

use std::fmt::Write as _;

use serde::Serialize;

use crate::costs::{Cost, Costs};
use crate::error::{InputError, SimError};
use crate::stats::RunStat;
use crate::workload::{ProfileName, Report, SimConfig, Workload, run};
use lane_core::CopyPath;

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
    /// `H1`, the same at launch depth one (no wait on the predecessor's boundary).
    pub h1_ns: u64,
    /// `g3`, the queued gap of the offloaded arm (with the copies' stream tasks).
    pub g3_ns: u64,
    /// `L`, the offloaded arm's host time per run on the lane thread.
    pub l_ns: u64,
    /// `V`, the completion waiter's host time per run in the offloaded arm.
    pub v_ns: u64,
    /// `P`, the runner's prepare (on a worker in the offloaded arm).
    pub prepare_ns: u64,
    /// `F`, the runner's finalise (on a worker in the offloaded arm).
    pub finalise_ns: u64,
    /// A sleeping thread's wake-up (`host_wakeup`).
    pub wakeup_ns: u64,
    /// `W`, the workers' term ([`Model::workers_period_ns`], for this shape).
    pub w_ns: u64,
    /// The lane thread's launch calls per run: part of `L` and of `C`.
    pub launch_ns: u64,
    /// `C`, the prepare chain ([`Model::prepare_chain_ns`], for this shape).
    pub c_ns: u64,
    /// Host workers of the offloaded arm.
    pub workers: u8,
    /// Prepare window of the offloaded arm (prepares at once).
    pub prepare_window: u8,
}

impl Model {
    /// Derives the model from the simulator's costs, following exactly what the driver does
    /// per run (lane-driver, `Executor::launch` and `Executor::read_status`) and how the
    /// simulated device schedules tasks (a task starts after its predecessor plus a task
    /// switch, a launched kernel after the start latency).
    ///
    /// Arms 1 and 2 (synchronous copies, everything on the lane thread):
    ///
    /// - `D = workload device time + RunPreamble`: §5 counts the preamble (A8) as device time.
    /// - `g = 3·TaskSwitch + 2·EventTask`: after run N's kernels end (L-5), N's `core_done`
    ///   task, N's boundary task (behind the AICPU stream's wait on `core_done`) and N+1's
    ///   AICore kernel (behind its wait on that boundary) each start behind a task switch.
    /// - `R = 2·TaskSwitch + 2·EventTask + HostWakeup + ReadD2h + 2·KernelLaunch +
    ///   EventRecord + KernelStartLatency`: at depth one, N's `core_done` and boundary pass,
    ///   the blocked host wakes, reads N's timing, status and record (one D2H, decision 0023),
    ///   launches the AICore kernel (no wait on N's boundary, which has passed), records its
    ///   `core_done` and launches the AICPU kernel, which starts after the start latency.
    ///   N+1's prepare and arm (A23, decision 0024) ran while N did, and N's finalise runs
    ///   after N+1's launch: none is on this path.
    /// - `H = Prepare + WriteH2d + 2·KernelLaunch + 2·EventRecord + 2·StreamWait +
    ///   2·EventQuery + ReadD2h + Finalise`: all the lane's one thread does per run (§5's
    ///   `H`). Where the host is the bottleneck the boundary has passed when it waits, so the
    ///   wait costs a query; the other query is the proof of overlap (a look at the
    ///   predecessor's boundary). `H1 = H − StreamWait − EventQuery` at depth one, which
    ///   neither waits on nor looks at the predecessor's boundary.
    ///
    /// Arm 3 (copies on the streams, prepare and finalise on host workers, [`Offload`]):
    ///
    /// - `g3 = 4·TaskSwitch + 2·EventTask + CopyTask`: on the AICore stream, after run N's
    ///   kernel ends, N's completion event, N+1's arm copy, N+1's "armed" record and N+1's
    ///   kernel each start behind a task switch; the AICPU stream's readback copy and event
    ///   take less, and its wait on "armed" starts N+1's AICPU kernel with its AICore one.
    /// - `L = 2·CopyEnqueue + 3·EventRecord + 3·StreamWait + 2·KernelLaunch + EventQuery +
    ///   3·HostWakeup`: the lane thread's calls per run (the two enqueues, the "armed",
    ///   `core_done` and boundary records, three stream waits, the two launches, the proof of
    ///   overlap) and a wake-up for each of the run's three answers (prepare, completion,
    ///   finalise). It makes no wait, and its status read (`read_host`) and hand-offs cost no
    ///   modelled host time.
    /// - `V = 2·HostWakeup + ReadD2h`: the completion waiter wakes for the run's wait, wakes
    ///   again when its boundary passes, and reads its result record.
    /// - `W = max((P + F + 2·HostWakeup) / workers, (P + HostWakeup) / min(workers,
    ///   window))` ([`Model::workers_period_ns`]): each run costs a prepare and a finalise
    ///   on some worker, each after a wake-up, and at most `min(workers, window)` prepares
    ///   run at once.
    /// - `C = (2·HostWakeup + Prepare + 2·CopyEnqueue + 3·EventRecord + 3·StreamWait +
    ///   2·KernelLaunch + EventQuery) / window` ([`Model::prepare_chain_ns`]): where the
    ///   host bounds the lane every launch waits on its prepare, and a prepare is
    ///   handed out only when a run launches (frees a window place; with `slots >= depth +
    ///   window` its slot is free by then). So from run k's launch, run k + window's prepare
    ///   costs a worker's wake-up and `Prepare`, then the lane thread's wake-up and launch
    ///   calls; `window` such chains run side by side. The simulated lane misses it by about
    ///   10% (20 us): run N's finalise is handed out with the launch that lets run N + 3's
    ///   prepare in and takes the free worker first, as in lane-service. With fewer slots a
    ///   prepare also waits for a finalise (not modelled).
    ///
    /// The offloaded arm's shape is [`Offload::default`]; [`Model::with_offload`] takes another.
    pub fn from_costs(costs: &Costs) -> Self {
        let c = |cost| costs.get(cost);
        let offload = Offload::default();
        // A queued launch looks at its predecessor's boundary once its kernels were accepted
        // (its proof of overlap): one `EventQuery` more on every queued path.
        let launch = 2 * c(Cost::CopyEnqueue)
            + 3 * c(Cost::EventRecord)
            + 3 * c(Cost::StreamWait)
            + 2 * c(Cost::KernelLaunch)
            + c(Cost::EventQuery);
        let host_per_run = c(Cost::Prepare)
            + c(Cost::WriteH2d)
            + 2 * c(Cost::KernelLaunch)
            + 2 * c(Cost::EventRecord)
            + 2 * c(Cost::StreamWait)
            + 2 * c(Cost::EventQuery)
            + c(Cost::ReadD2h)
            + c(Cost::Finalise);
        let model = Self {
            g3_ns: 4 * c(Cost::TaskSwitch) + 2 * c(Cost::EventTask) + c(Cost::CopyTask),
            l_ns: launch + 3 * c(Cost::HostWakeup),
            v_ns: 2 * c(Cost::HostWakeup) + c(Cost::ReadD2h),
            launch_ns: launch,
            c_ns: 0,
            prepare_ns: c(Cost::Prepare),
            finalise_ns: c(Cost::Finalise),
            wakeup_ns: c(Cost::HostWakeup),
            w_ns: 0,
            workers: offload.workers,
            prepare_window: offload.prepare_window,
            preamble_ns: c(Cost::RunPreamble),
            g_ns: 3 * c(Cost::TaskSwitch) + 2 * c(Cost::EventTask),
            r_ns: 2 * c(Cost::TaskSwitch)
                + 2 * c(Cost::EventTask)
                + c(Cost::HostWakeup)
                + c(Cost::ReadD2h)
                + 2 * c(Cost::KernelLaunch)
                + c(Cost::EventRecord)
                + c(Cost::KernelStartLatency),
            h_ns: host_per_run,
            h1_ns: host_per_run - c(Cost::StreamWait) - c(Cost::EventQuery),
        };
        model.with_offload(&offload)
    }

    /// `D` for a workload device time: the run's device wall, preamble included.
    pub const fn device_ns(&self, workload_device_ns: u64) -> u64 {
        workload_device_ns + self.preamble_ns
    }

    /// Depth-one period: `T1 = D + R` (§5(c)), or `H1` when that is longer. §5(c)'s
    /// refinement: run N+1's prepare overlaps run N (A23), so a depth-one lane whose host
    /// work per run exceeds `D + R` is host-bound like the queued one, not slower.
    pub fn depth_one_period_ns(&self, workload_device_ns: u64) -> u64 {
        (self.device_ns(workload_device_ns) + self.r_ns).max(self.h1_ns)
    }

    /// Queued period: `T2 = max(D + g, H)` (§5(c)).
    pub fn queued_period_ns(&self, workload_device_ns: u64) -> u64 {
        (self.device_ns(workload_device_ns) + self.g_ns).max(self.h_ns)
    }

    /// The same model for an offloaded arm of another shape.
    #[must_use]
    pub const fn with_offload(mut self, offload: &Offload) -> Self {
        self.workers = offload.workers;
        self.prepare_window = offload.prepare_window;
        self.w_ns = self.workers_period_ns();
        self.c_ns = self.prepare_chain_ns();
        self
    }

    /// `C`, the prepare chain, rounded up (its sum and why: [`Model::from_costs`]).
    pub const fn prepare_chain_ns(&self) -> u64 {
        let window = at_least_one(self.prepare_window);
        (2 * self.wakeup_ns + self.prepare_ns + self.launch_ns).div_ceil(window)
    }

    /// `W`, the workers' host time per run over how many run in parallel, rounded up: all
    /// `workers` share `P + F` and a wake-up per job, but only `min(workers, window)` share
    /// the prepares ([`Model::from_costs`]).
    pub const fn workers_period_ns(&self) -> u64 {
        let (workers, window) = (at_least_one(self.workers), at_least_one(self.prepare_window));
        let at_once = if window < workers { window } else { workers };
        let all = (self.prepare_ns + self.finalise_ns + 2 * self.wakeup_ns).div_ceil(workers);
        let prepares = (self.prepare_ns + self.wakeup_ns).div_ceil(at_once);
        if all > prepares { all } else { prepares }
    }

    /// Offloaded period: `T3 = max(D + g3, L, W, C, V)`, the slowest of the device, the lane
    /// thread's calls, the workers, the prepare chain and the completion waiter.
    pub fn offloaded_period_ns(&self, workload_device_ns: u64) -> u64 {
        (self.device_ns(workload_device_ns) + self.g3_ns)
            .max(self.l_ns)
            .max(self.w_ns)
            .max(self.c_ns)
            .max(self.v_ns)
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

/// `n`, or 1 for 0 (a shape of no workers or no window still runs one at a time).
const fn at_least_one(n: u8) -> u64 {
    if n == 0 { 1 } else { n as u64 }
}

/// The offloaded arm's lane shape: copies on the streams, the runner's prepare and finalise
/// on host workers, and enough slots and prepare window that the workers stay busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Offload {
    /// Slots of the a2a3 profile (a run holds its slot from prepare to finalise, so with the
    /// lane thread no longer the bottleneck more runs are in flight than two slots hold).
    pub slots: u8,
    /// Runs prepared at once.
    pub prepare_window: u8,
    /// Virtual host workers.
    pub workers: u8,
}

impl Default for Offload {
    /// Four slots, a prepare window of two, two workers: the fake-bench's third arm, so the
    /// simulator and the real threads measure one shape. Four is depth two plus the window,
    /// so a prepare never waits for a slot (with three: 1.87x depth one at 20 us against
    /// 2.49x); a wider window buys nothing, the device or `C` already bounding every point.
    fn default() -> Self {
        Self { slots: 4, prepare_window: 2, workers: 2 }
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
    /// The offloaded arm's shape.
    pub offload: Offload,
}

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            points_us: DEFAULT_POINTS_US.to_vec(),
            runs: DEFAULT_RUNS,
            jitter_ppm: 0,
            seed: 1,
            costs: Vec::new(),
            offload: Offload::default(),
        }
    }
}

impl SweepConfig {
    /// The costs, defaults plus overrides.
    pub fn cost_table(&self) -> Costs {
        Costs::with_overrides(&self.costs)
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
    /// Mean host time in calls per run on the lane thread in the steady window.
    pub host_busy_per_run_ns: f64,
    /// Mean host time in calls per run on host workers in the steady window (0 without).
    pub worker_busy_per_run_ns: f64,
    /// Runs in the steady window.
    pub steady_runs: usize,
}

/// One device time, the three arms and the model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The workload's device time per run (after the preamble), in ns.
    pub workload_device_ns: u64,
    /// The model's `D` (preamble included), in ns.
    pub d_ns: u64,
    /// Depth one ("before").
    pub depth_one: Arm,
    /// Queued depth two as today ("after").
    pub queued: Arm,
    /// Queued depth two with the copies on the streams and runner work on host workers.
    pub offloaded: Arm,
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
    /// The model's offloaded period `T3`, in ns.
    pub model_offloaded_period_ns: u64,
    /// The model's offloaded runs/s.
    pub model_offloaded_runs_per_s: f64,
    /// Offloaded runs/s over the model's.
    pub offloaded_of_model: f64,
    /// Offloaded over depth-one runs/s.
    pub offloaded_ratio: f64,
    /// Offloaded over queued runs/s.
    pub offloaded_over_queued: f64,
    /// What bounds the offloaded arm in the model: `device`, `prepare chain`, `lane
    /// thread` or `workers`.
    pub offloaded_bound: &'static str,
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
    /// The offloaded arm's shape.
    pub offload: Offload,
    /// One entry per device time, in the order asked.
    pub points: Vec<Point>,
}

/// Runs the sweep. `on_point(done, total)` is called after each point.
pub fn sweep(
    config: &SweepConfig,
    on_point: &mut dyn FnMut(usize, usize),
) -> Result<Sweep, SimError> {
    config.validate()?;
    let model = Model::from_costs(&config.cost_table()).with_offload(&config.offload);
    let warmup = usize::try_from(config.warmup_runs()).unwrap_or(usize::MAX);
    let mut points = Vec::new();
    for (i, &us) in config.points_us.iter().enumerate() {
        let workload_device_ns = us.saturating_mul(1_000);
        let base = SimConfig {
            profile: ProfileName::A2a3,
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
        let arm = |label: &str, sim: SimConfig| -> Result<Arm, SimError> {
            let depth = sim.depth.unwrap_or(2);
            let report = run(&sim, &mut |_, _| {})?;
            steady(&report, depth, label, warmup)
        };
        // Arms 1 and 2 are today's lane: synchronous copies, one prepare at a time, no
        // workers.
        let today =
            SimConfig { prepare_window: Some(1), copies: Some(CopyPath::Sync), ..base.clone() };
        let depth_one = arm("depth-one", SimConfig { depth: Some(1), ..today.clone() })?;
        let queued = arm("queued", SimConfig { depth: Some(2), ..today })?;
        let offloaded = arm(
            "offloaded",
            SimConfig {
                depth: Some(2),
                slots: Some(config.offload.slots),
                prepare_window: Some(config.offload.prepare_window),
                copies: Some(CopyPath::OnStream),
                workers: config.offload.workers,
                ..base
            },
        )?;
        let t1 = model.depth_one_period_ns(workload_device_ns);
        let t2 = model.queued_period_ns(workload_device_ns);
        let t3 = model.offloaded_period_ns(workload_device_ns);
        let per_s = |period_ns: u64| 1e9 / period_ns as f64;
        let device = model.device_ns(workload_device_ns) + model.g3_ns;
        let host = model.l_ns.max(model.w_ns).max(model.c_ns).max(model.v_ns);
        let offloaded_bound = if device >= host {
            "device"
        } else if model.c_ns == host {
            "prepare chain"
        } else if model.l_ns == host {
            "lane thread"
        } else if model.w_ns == host {
            "workers"
        } else {
            "completion waiter"
        };
        points.push(Point {
            workload_device_ns,
            d_ns: model.device_ns(workload_device_ns),
            depth_one,
            queued,
            offloaded,
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
            model_offloaded_period_ns: t3,
            model_offloaded_runs_per_s: per_s(t3),
            offloaded_of_model: offloaded.runs_per_s / per_s(t3),
            offloaded_ratio: offloaded.runs_per_s / depth_one.runs_per_s,
            offloaded_over_queued: offloaded.runs_per_s / queued.runs_per_s,
            offloaded_bound,
        });
        on_point(i + 1, config.points_us.len());
    }
    Ok(Sweep {
        model,
        runs: config.runs,
        warmup_runs: config.warmup_runs(),
        jitter_pct: f64::from(config.jitter_ppm) / 10_000.0,
        seed: config.seed,
        offload: config.offload,
        points,
    })
}

/// Steady-state figures of one arm: every run after the warm-up must be `Ok` and timed.
fn steady(report: &Report, depth: u8, label: &str, warmup: usize) -> Result<Arm, SimError> {
    let runs: &[RunStat] = report.runs.get(warmup..).unwrap_or_default();
    let timed: Vec<(u64, u64)> = runs.iter().filter_map(|r| r.start_ns.zip(r.end_ns)).collect();
    let (Some(&(first_start, first_end)), Some(&(_, last_end))) = (timed.first(), timed.last())
    else {
        return Err(not_steady(label, "no timed run after the warm-up"));
    };
    if timed.len() != runs.len() || report.summary.counts.ok != report.runs.len() as u64 {
        return Err(not_steady(
            label,
            &format!("not every run was ok and timed: {}", report.summary.counts),
        ));
    }
    let n = timed.len();
    let period_ns = (last_end - first_end) as f64 / (n - 1).max(1) as f64;
    let busy: u64 = timed.iter().map(|(s, e)| e - s).sum();
    let window = last_end - first_start;
    // Gaps between runs inside the window (the first steady run's gap precedes it).
    let gaps: Vec<u64> = runs.iter().skip(1).filter_map(|r| r.gap_before_ns).collect();
    let mean = |values: &[u64]| values.iter().sum::<u64>() as f64 / values.len().max(1) as f64;
    let host: Vec<u64> = runs.iter().map(|r| r.host.busy_ns).collect();
    let worker: Vec<u64> = runs.iter().map(|r| r.worker_ns).collect();
    Ok(Arm {
        depth,
        runs_per_s: if period_ns > 0.0 { 1e9 / period_ns } else { 0.0 },
        period_ns,
        utilisation: if window > 0 { busy as f64 / window as f64 } else { 0.0 },
        mean_gap_ns: mean(&gaps),
        host_busy_per_run_ns: mean(&host),
        worker_busy_per_run_ns: mean(&worker),
        steady_runs: n,
    })
}

fn not_steady(label: &str, why: &str) -> SimError {
    SimError::from(InputError::Workload(format!(
        "the {label} arm has no steady window ({why}); give more runs"
    )))
}

impl Sweep {
    /// The human-readable table: one row per device time, the three arms side by side.
    pub fn table(&self) -> String {
        let us = |ns: f64| ns / 1_000.0;
        let m = &self.model;
        let o = &self.offload;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "model (measured-figures.md §5(c), extended): D = device time + {:.1} us preamble, R = {:.1} us, g = {:.1} us, H = {:.1} us (H1 = {:.1} us at depth one)",
            us(m.preamble_ns as f64),
            us(m.r_ns as f64),
            us(m.g_ns as f64),
            us(m.h_ns as f64),
            us(m.h1_ns as f64)
        );
        let _ = writeln!(
            out,
            "  offloaded: g3 = {:.1} us, L = {:.1} us on the lane thread, V = {:.1} us on the completion waiter, W = {:.1} us (P + F = {:.1} us and a wake-up per job over {} workers, P over {} at once), C = {:.1} us (prepare chain)",
            us(m.g3_ns as f64),
            us(m.l_ns as f64),
            us(m.v_ns as f64),
            us(m.w_ns as f64),
            us((m.prepare_ns + m.finalise_ns) as f64),
            m.workers,
            m.workers.min(m.prepare_window),
            us(m.c_ns as f64),
        );
        let _ = writeln!(
            out,
            "  T1 = max(D + R, H1), T2 = max(D + g, H), T3 = max(D + g3, L, W, C, V); {} runs per arm, first {} skipped, jitter {}%, seed {}",
            self.runs, self.warmup_runs, self.jitter_pct, self.seed
        );
        // The columns of the rows below, headed.
        out.push_str("\ndevice_us    D_us | 1:runs/s 2:runs/s 3:runs/s |    3/1    3/2 | 1:util 2:util 3:util |   T1:r/s   T2:r/s   T3:r/s |    2/T2    3/T3 | 3 bound by\n");
        for p in &self.points {
            let _ = writeln!(
                out,
                "{:>9} {:>7.1} | {:>8.0} {:>8.0} {:>8.0} | {:>6.2} {:>6.2} | {:>5.1}% {:>5.1}% {:>5.1}% | {:>8.0} {:>8.0} {:>8.0} | {:>6.2}% {:>6.2}% | {}",
                p.workload_device_ns / 1_000,
                us(p.d_ns as f64),
                p.depth_one.runs_per_s,
                p.queued.runs_per_s,
                p.offloaded.runs_per_s,
                p.offloaded_ratio,
                p.offloaded_over_queued,
                p.depth_one.utilisation * 100.0,
                p.queued.utilisation * 100.0,
                p.offloaded.utilisation * 100.0,
                p.model_depth_one_runs_per_s,
                p.model_queued_runs_per_s,
                p.model_offloaded_runs_per_s,
                p.queued_of_model * 100.0,
                p.offloaded_of_model * 100.0,
                p.offloaded_bound
            );
        }
        let _ = writeln!(
            out,
            "\n1 = depth one, 2 = queued depth two as today, 3 = queued with copies on the streams and prepare/finalise on {} host workers \
             ({} slots, prepare window {}); 2/T2, 3/T3 = runs/s over the arm's model",
            o.workers, o.slots, o.prepare_window
        );
        let _ = writeln!(
            out,
            "note: arm 3 runs as lane-service does: the completion waiter makes every device wait and the lane \
             thread sleeps only for answers; where the host bounds arm 3 each launch waits on its prepare, which \
             starts when a run launches (C), and a run's finalise can take the free worker first (T3 is then a \
             lower bound)"
        );
        out
    }

    /// The sweep as pretty JSON (for `cargo xtask bench` and other tools).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}
