//! Real threads, real waits: depth one against queued depth two on the fake libascendcl.
//!
//! Each arm runs the same back-to-back workload through backend-acl on the fake with the
//! [`FakeRunner`]. Each run's own timing buffer gives the inter-run device gap; the lane
//! thread's clock, less the time blocked in the device's waits, the lane's own host time per
//! run. The fake's kernels are worker threads, so the gap at depth one is a real host round
//! trip, and at depth two the stream's own hand-over.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backend_sim::workload::{DriveOptions, Harness, ProfileName, drive};
use backend_sim::{Failure, RunTimes, Workload};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    CopyPath, FaultNotice, Outcome, Profile, ProfileSpec, RunRequest, SubmitError, Timestamp,
    Verdict,
};
use lane_driver::{Device, DevicePtr, Driver, EventHandle, HostWorker, Observer, Runner};
use lane_service::{LaneHandle, ServiceConfig, ServiceError, spawn_with_workers};

use crate::error::ConformanceError;
use crate::fake::{FakeSession, FakeTimeouts};
use crate::fake_runner::FakeRunner;
use crate::tally::Tally;

/// One arm's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// Launch depth.
    pub depth: u8,
    /// Device time of each run.
    pub device_ns: u64,
    /// Runs submitted.
    pub runs: u32,
    /// Runs that ended `Ok`.
    pub ok: u32,
    /// Runs the figures skip (the first few: stream creation, first launches).
    pub skipped: u32,
    /// Launches made while an earlier run had not completed (lane-step order); `None` where
    /// the arm cannot observe lane steps (through lane-service).
    pub queued_launches: Option<u64>,
    /// Inter-run device gaps over the measured runs (ns), sorted.
    pub gaps_ns: Vec<u64>,
    /// Device busy time (end - start) of each measured run (ns).
    pub busy_ns: Vec<u64>,
    /// Device end of the first and the last measured run (ns, the fake's clock).
    pub ends_ns: (u64, u64),
    /// Wall time of the workload on the lane thread.
    pub wall: Duration,
    /// Of it, time blocked in the device's waits; `None` where the lane thread is not the
    /// bench's (through lane-service, it also sleeps waiting for workers).
    pub blocked: Option<Duration>,
}

impl Arm {
    /// Mean inter-run device gap (ns).
    pub fn mean_gap_ns(&self) -> f64 {
        mean(&self.gaps_ns)
    }

    /// A percentile of the gaps (0..=100), nearest rank.
    pub fn gap_percentile_ns(&self, pct: u32) -> u64 {
        if self.gaps_ns.is_empty() {
            return 0;
        }
        let last = self.gaps_ns.len() - 1;
        let rank = (last * pct.min(100) as usize).div_ceil(100);
        self.gaps_ns.get(rank).copied().unwrap_or(0)
    }

    /// The lane's own host time per run: wall minus blocked, over the runs (`None` where
    /// blocked time is not known).
    pub fn host_per_run(&self) -> Option<Duration> {
        self.blocked.map(|blocked| self.wall.saturating_sub(blocked) / self.runs.max(1))
    }

    /// Runs per second from the spacing of the measured runs' device ends.
    pub fn runs_per_s(&self) -> f64 {
        let span = self.ends_ns.1.saturating_sub(self.ends_ns.0) as f64 / 1e9;
        let spaced = self.busy_ns.len().saturating_sub(1) as f64;
        if span > 0.0 { spaced / span } else { 0.0 }
    }

    /// Mean device busy time per measured run (ns): the kernels' own span, which a loaded
    /// machine stretches past the asked-for device time (the worker wakes late).
    pub fn mean_busy_ns(&self) -> f64 {
        mean(&self.busy_ns)
    }
}

/// The mean of `values` (0 for none).
fn mean(values: &[u64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|v| *v as f64).sum::<f64>() / values.len() as f64
}

/// What the bench runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchConfig {
    /// Runs per arm.
    pub runs: u32,
    /// Device times, three arms each.
    pub device_ns: Vec<u64>,
    /// Runs skipped at the start of each arm.
    pub skip: u32,
}

impl Default for BenchConfig {
    /// 300 runs per arm at 100 us, 250 us and 1 ms, the first 20 skipped.
    fn default() -> Self {
        Self { runs: 300, device_ns: vec![100_000, 250_000, 1_000_000], skip: 20 }
    }
}

/// The three arms at one device time.
#[derive(Clone, Debug, PartialEq)]
pub struct Arms {
    /// Depth one, on the single-thread driver.
    pub depth_one: Arm,
    /// Queued at depth two, as today (single-thread driver, synchronous copies).
    pub queued: Arm,
    /// Queued, copies on the streams, runner work on host workers ([`lifted_arm`]).
    pub lifted: Arm,
}

impl Arms {
    /// The arms in table order.
    pub fn all(&self) -> [(&'static str, &Arm); 3] {
        [
            ("depth one", &self.depth_one),
            ("queued", &self.queued),
            ("queued + on-stream copies + workers", &self.lifted),
        ]
    }
}

/// Runs the three arms for every device time: depth one, queued, then lifted.
///
/// # Errors
///
/// [`ConformanceError`] when an arm cannot run.
pub fn run(config: &BenchConfig) -> Result<Vec<Arms>, ConformanceError> {
    config
        .device_ns
        .iter()
        .map(|&device_ns| {
            Ok(Arms {
                depth_one: arm(1, device_ns, config.runs, config.skip)?,
                queued: arm(2, device_ns, config.runs, config.skip)?,
                lifted: lifted_arm(device_ns, config.runs, config.skip)?,
            })
        })
        .collect()
}

/// A device that measures the time its waits block (everything else is the lane thread's
/// own host work).
#[derive(Debug)]
struct Metered<D> {
    inner: D,
    blocked: Duration,
}

impl<D: Device> Metered<D> {
    fn timed<T>(&mut self, call: impl FnOnce(&mut D) -> T) -> T {
        let start = Instant::now();
        let result = call(&mut self.inner);
        self.blocked += start.elapsed();
        result
    }
}

impl<D: Device> Device for Metered<D> {
    backend_sim::forward_calls! {|s| s.inner;
        fn now(&mut self) -> Timestamp;
        fn set_device(&mut self) -> Result<(), AclCode>;
        fn reset_device_force(&mut self) -> Result<(), AclCode>;
        fn create_stream(&mut self) -> Result<StreamHandle, AclCode>;
        fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode>;
        fn create_event(&mut self) -> Result<EventHandle, AclCode>;
        fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode>;
        fn stream_wait_event(&mut self, stream: StreamHandle, event: EventHandle) -> Result<(), AclCode>;
        fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode>;
        fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode>;
        fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode>;
        fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode>;
        fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;
        fn launch_context(&mut self, context: Option<lane_driver::LaunchContext>);
        fn recent_error_message(&mut self) -> Option<String>;
    }
    /// The measured device's matching (decision 0025), so a notice reaches the lane.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        self.inner.notice_concerns(notice)
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.timed(|d| d.synchronize_device(timeout_ms))
    }
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        // Healthy teardown waits for the stream's queued work.
        self.timed(|d| d.destroy_stream(stream))
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.timed(|d| d.synchronize_event(event, timeout_ms))
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.timed(|d| d.synchronize_stream(stream, timeout_ms))
    }
}

/// No checks of its own and no faults to heal.
struct Plain;

impl<D: Device, R: Runner<D>, O: Observer> Harness<D, R, O> for Plain {
    fn failure(&self, _driver: &Driver<D, R, O>) -> Option<Failure> {
        None
    }
    fn heal(&mut self, _driver: &mut Driver<D, R, O>) {}
}

/// One arm: `runs` back-to-back runs of `device_ns` at launch depth `depth` on a2a3.
///
/// # Errors
///
/// [`ConformanceError`] when the fake or the workload fails.
pub fn arm(depth: u8, device_ns: u64, runs: u32, skip: u32) -> Result<Arm, ConformanceError> {
    let profile = FakeTimeouts::default().scale(ProfileName::A2a3.profile(Some(depth))?)?;
    let session = FakeSession::start()?;
    let device = Metered { inner: session.open(profile)?, blocked: Duration::ZERO };
    let runner = fake_runner(&session, &profile, device_ns);
    let driver = Driver::new(profile, device, runner)
        .with_observer(Tally::default())
        // The production setting: invariant checks are the simulator's and the tests' price.
        .check_invariants(false);
    let workload = Workload { runs, device_ns, jitter_ppm: 0, ..Workload::default() };
    let options = DriveOptions {
        liveness: false,
        repro: format!("cargo run --release -p lane-conformance --bin fake-bench -- --runs {runs}"),
    };
    let start = Instant::now();
    let driven = drive(driver, &workload, &options, &mut Plain, &mut |_, _| {})?;
    let wall = start.elapsed();
    let (device, _, tally) = driven.driver.into_parts();
    Ok(figures(
        Shape { depth, device_ns, runs, skip },
        &driven.outcomes,
        Some(tally.queued_launches),
        wall,
        Some(device.blocked),
    ))
}

/// The bench's runner: runs of `device_ns` each, no jitter, seed 1.
fn fake_runner(session: &FakeSession, profile: &Profile, device_ns: u64) -> FakeRunner {
    let times = RunTimes { device_ns, jitter_ppm: 0 };
    FakeRunner::new(Arc::clone(session.control()), profile.header(), 1, times)
}

/// What an arm ran: its launch depth, device time, runs and skipped runs.
#[derive(Clone, Copy, Debug)]
struct Shape {
    depth: u8,
    device_ns: u64,
    runs: u32,
    skip: u32,
}

/// An arm's figures from its outcomes (each run's own timing buffer) and its clocks.
fn figures(
    shape: Shape,
    outcomes: &[Outcome],
    queued_launches: Option<u64>,
    wall: Duration,
    blocked: Option<Duration>,
) -> Arm {
    let timings: Vec<(u64, u64)> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Run(r) if r.verdict == Verdict::Ok => r.timing.map(|t| (t.start_ns, t.end_ns)),
            _ => None,
        })
        .collect();
    let ok = u32::try_from(timings.len()).unwrap_or(u32::MAX);
    let mut gaps_ns: Vec<u64> = timings
        .windows(2)
        .skip(shape.skip as usize)
        .map(|pair| pair[1].0.saturating_sub(pair[0].1))
        .collect();
    gaps_ns.sort_unstable();
    let measured = timings.get(shape.skip as usize..).unwrap_or_default();
    let busy_ns = measured.iter().map(|(s, e)| e.saturating_sub(*s)).collect();
    let ends_ns = (measured.first().map_or(0, |t| t.1), measured.last().map_or(0, |t| t.1));
    Arm {
        depth: shape.depth,
        device_ns: shape.device_ns,
        runs: shape.runs,
        ok,
        skipped: shape.skip,
        queued_launches,
        gaps_ns,
        busy_ns,
        ends_ns,
        wall,
        blocked,
    }
}

/// Host workers in the third arm: one prepares while the other finalises.
pub const LIFTED_WORKERS: usize = 2;

/// The third arm ("lifted"): `runs` back-to-back runs of `device_ns` through lane-service on
/// real threads, in the simulator's arm 3 shape (`backend_sim::sweep::Offload::default`:
/// depth two, four slots, two prepares at once, copies on the streams, the runner's prepare
/// and finalise on [`LIFTED_WORKERS`] host workers). The service shows no blocked time
/// (`None`) and no lane steps: the queued launches are the fake's own count.
///
/// # Errors
///
/// [`ConformanceError`] when the fake, the service or a run fails.
pub fn lifted_arm(device_ns: u64, runs: u32, skip: u32) -> Result<Arm, ConformanceError> {
    let spec = ProfileSpec {
        slots: 4,
        prepare_window: 2,
        copies: CopyPath::OnStream,
        ..ProfileName::A2a3.profile(Some(2))?.spec()
    };
    let profile = FakeTimeouts::default().scale(Profile::custom(spec)?)?;
    let session = FakeSession::start()?;
    let device = session.open(profile)?;
    let queued_before =
        session.control().counters().map_err(ConformanceError::control)?.queued_launches;
    let runner = fake_runner(&session, &profile, device_ns).with_workers(2);
    let worker = runner.host_worker();
    let mut config = ServiceConfig::new(profile);
    // The production setting, as in the other arms.
    config.check_invariants = false;
    config.workers = LIFTED_WORKERS;
    let lane = spawn_with_workers(
        config,
        move || Ok::<_, String>((device, runner)),
        move |_| Ok::<Box<dyn HostWorker>, String>(Box::new(worker.clone())),
    )
    .map_err(|e| ConformanceError::Service(e.to_string()))?;
    let start = Instant::now();
    let outcomes = submit_all(&lane, runs)?;
    let wall = start.elapsed();
    drop(lane);
    let queued = session
        .control()
        .counters()
        .map_err(ConformanceError::control)?
        .queued_launches
        .saturating_sub(queued_before);
    Ok(figures(Shape { depth: 2, device_ns, runs, skip }, &outcomes, Some(queued), wall, None))
}

/// Keeps the lane full with `runs` runs and takes every outcome in order.
fn submit_all(lane: &LaneHandle, runs: u32) -> Result<Vec<Outcome>, ConformanceError> {
    let runs = usize::try_from(runs).unwrap_or(usize::MAX);
    let (mut submitted, mut outcomes) = (0, Vec::with_capacity(runs));
    let deadline = Instant::now() + Duration::from_secs(600);
    while outcomes.len() < runs {
        if Instant::now() > deadline {
            return Err(ConformanceError::Service(format!(
                "only {} of {runs} outcomes after 600 s",
                outcomes.len()
            )));
        }
        if submitted < runs {
            match lane.submit(RunRequest::new()) {
                Ok(_) => submitted += 1,
                Err(ServiceError::Submit(SubmitError::Full { .. })) => {}
                Err(e) => return Err(ConformanceError::Service(e.to_string())),
            }
        }
        match lane.poll_outcome() {
            Some(outcome) => outcomes.push(outcome),
            None if submitted == runs => std::thread::sleep(Duration::from_micros(20)),
            None => std::thread::yield_now(),
        }
    }
    Ok(outcomes)
}

/// The bench's figures as data for docs/data/fake-bench.json (`cargo xtask fake-bench`
/// writes the file and renders its table into docs/performance.md): the settings, then a row
/// per arm and device time. A figure the arm cannot measure is null.
pub fn to_json(config: &BenchConfig, arms: &[Arms]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = arms
        .iter()
        .flat_map(Arms::all)
        .map(|(name, arm)| {
            serde_json::json!({
                "device_us": arm.device_ns / 1_000,
                "arm": name,
                "runs_per_s": arm.runs_per_s(),
                "busy_us": arm.mean_busy_ns() / 1_000.0,
                "mean_gap_us": arm.mean_gap_ns() / 1_000.0,
                "median_gap_us": arm.gap_percentile_ns(50) as f64 / 1_000.0,
                "p99_gap_us": arm.gap_percentile_ns(99) as f64 / 1_000.0,
                "host_us": arm.host_per_run().map(|h| h.as_secs_f64() * 1e6),
                "queued_launches": arm.queued_launches,
            })
        })
        .collect();
    serde_json::json!({
        "settings": { "runs": config.runs, "skip": config.skip, "workers": LIFTED_WORKERS },
        "arms": rows,
    })
}
