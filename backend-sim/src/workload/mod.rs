//! A workload and the runner that drives it through the lane on the simulated device
//! ([`drive`] says how). This file holds the workload, its configuration and the entry
//! points; the runner's steps are in `steps` (split for length).

use std::collections::BTreeMap;

use lane_core::status_latch;
use lane_core::status_latch::{HeaderLayout, Status};
use lane_core::stream_pair::Role;
use lane_core::{CodeRef, CopyPath, Outcome, Profile, ProfileSpec, RunId, RunRequest, Verdict};
use lane_driver::{Device, Driver, Observer, Runner};

use crate::costs::{Cost, Costs};
use crate::device::{DeviceFailure, PublishedRecord, RunTimes, SimDevice, SimRunner};
use crate::error::{Failure, InputError, SimError};
use crate::faults::{FaultRule, describe, rate_to_ppm, swarm};
use crate::observer::SimObserver;
use crate::stats::{RunStat, Summary, fmt_us, summarise};
use crate::trace::Trace;
use crate::workers::{HostTracks, OffLaneRunner, SimTracks, WorkerLoop};

mod steps;

/// Most runs one workload may hold (the outcome list and trace grow with it).
pub const MAX_RUNS: u32 = 1_000_000;
/// Fresh runs the liveness phase requires to succeed.
pub const LIVENESS_RUNS: u32 = 4;

/// A chip profile by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ProfileName {
    /// Ascend 910B/910C: two slots, launch depth two.
    A2a3,
    /// Ascend 950: two slots, launch depth two (on the record verdict channel).
    A5,
    /// a2a3 at launch depth one (`Profile::depth_one`): the successor is prepared early and
    /// launched only once its predecessor retired.
    DepthOne,
}

impl ProfileName {
    /// Parses `a2a3`, `a5` or `depth-one`.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        [Self::A2a3, Self::A5, Self::DepthOne]
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| InputError::UnknownProfile { got: text.to_owned() })
    }

    /// The name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::A2a3 => "a2a3",
            Self::A5 => "a5",
            Self::DepthOne => "depth-one",
        }
    }

    /// The lane profile, at its native launch depth or at `depth`.
    pub fn profile(self, depth: Option<u8>) -> Result<Profile, InputError> {
        let base = match self {
            Self::A2a3 => Profile::a2a3(),
            Self::A5 => Profile::a5(),
            Self::DepthOne => Profile::depth_one(),
        };
        let Some(depth) = depth.filter(|d| *d != base.launch_depth().get()) else {
            return Ok(base);
        };
        // Profile names are static; the variants the CLI can ask for are these.
        let name = match (self, depth) {
            (Self::A2a3, 1) => "a2a3 at depth 1",
            (Self::A5, 1) => "a5 at depth 1",
            (Self::DepthOne, 2) => "depth-one at depth 2",
            _ => "custom depth",
        };
        Profile::custom(ProfileSpec { name, launch_depth: depth, ..base.spec() })
            .map_err(|e| InputError::Profile(format!("--depth {depth} for {}: {e}", self.name())))
    }
}

/// Positions in a workload's run sequence (the k-th run submitted, from 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Points {
    /// Every n-th run.
    pub every: Option<u32>,
    /// These runs.
    pub at: Vec<u32>,
}

impl Points {
    /// Whether the k-th run is selected.
    pub fn contains(&self, k: u32) -> bool {
        self.every.is_some_and(|n| n > 0 && k % n == 0) || self.at.contains(&k)
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Runs to submit.
    pub runs: u32,
    /// Device time of each run, after its preamble.
    pub device_ns: u64,
    /// Per-run jitter of the device time, in parts per million of it.
    pub jitter_ppm: u32,
    /// Publish new AICore code right after submitting these runs.
    pub publish_after: Points,
    /// Submit these runs with diagnostics (they run alone).
    pub diagnostics: Points,
    /// Close right after submitting this many runs (the rest are never submitted);
    /// `None`: close after the last.
    pub close_after: Option<u32>,
}

impl Default for Workload {
    /// The built-in workload: 200 back-to-back runs of 250 us (+-10%), the device time of
    /// simpler's vector_example on a2a3 (measured-figures.md A12). Shorter runs make the
    /// lane host-bound under the calibrated costs (~150 us of host work per run), so the
    /// queue would never fill.
    fn default() -> Self {
        Self {
            runs: 200,
            device_ns: 250_000,
            jitter_ppm: 100_000,
            publish_after: Points::default(),
            diagnostics: Points::default(),
            close_after: None,
        }
    }
}

impl Workload {
    /// Checks the workload can run; the error names the fix.
    pub fn validate(&self, profile: &Profile) -> Result<(), InputError> {
        if self.runs == 0 {
            return Err(InputError::Workload(
                "0 runs; give at least one run (--runs 1 or more)".to_owned(),
            ));
        }
        if self.runs > MAX_RUNS {
            return Err(InputError::Workload(format!(
                "{} runs is more than {MAX_RUNS}; split it into several workloads",
                self.runs
            )));
        }
        if self.device_ns == 0 {
            return Err(InputError::Workload(
                "a run's device time is 0; give a positive time (--device-us 100)".to_owned(),
            ));
        }
        let limit = profile.completion_timeout_ns() / 2;
        if self.device_ns > limit {
            return Err(InputError::Workload(format!(
                "a run's device time of {} us is more than half the {} us completion timeout, so \
                 runs would time out; give at most {} us (use a hang fault to test timeouts)",
                fmt_us(self.device_ns),
                fmt_us(profile.completion_timeout_ns()),
                fmt_us(limit)
            )));
        }
        if self.jitter_ppm > 1_000_000 {
            return Err(InputError::Workload(
                "jitter above 100% would make device times negative; give 0..=100".to_owned(),
            ));
        }
        if self.close_after == Some(0) {
            return Err(InputError::Workload(
                "close after 0 runs submits nothing; give close_after >= 1 or leave it out"
                    .to_owned(),
            ));
        }
        if self.publish_after.every == Some(0) || self.diagnostics.every == Some(0) {
            return Err(InputError::Workload(
                "'every 0 runs' selects nothing; give 1 or more, or leave it out".to_owned(),
            ));
        }
        Ok(())
    }

    /// Device time jitter from a percentage.
    pub fn jitter_from_pct(pct: f64) -> Result<u32, InputError> {
        rate_to_ppm(pct / 100.0).ok_or_else(|| {
            InputError::Workload(format!("jitter {pct}% is outside 0..=100; give a percentage"))
        })
    }
}

/// Where a configuration came from, for the reproduction line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The command line (the line is rebuilt from the options).
    Cli,
    /// A scenario file.
    Scenario(String),
}

/// Everything one simulation needs; the same config gives the same trace, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// The chip profile.
    pub profile: ProfileName,
    /// A launch depth other than the profile's own.
    pub depth: Option<u8>,
    /// A slot count other than the profile's own.
    pub slots: Option<u8>,
    /// A prepare window other than the profile's own (runs prepared at once).
    pub prepare_window: Option<u8>,
    /// A copy path other than the profile's own.
    pub copies: Option<CopyPath>,
    /// The runtime's status header layout, when not the profile's own
    /// (tensormap_and_ringbuffer): the simulated kernels latch in it and the lane reads it.
    pub header: Option<HeaderLayout>,
    /// Virtual host workers running the runner's prepare and finalise off the lane thread
    /// ([`crate::workers`]), as many at once as the prepare window; 0: none.
    pub workers: u8,
    /// The seed every random choice derives from.
    pub seed: u64,
    /// What to run.
    pub workload: Workload,
    /// Fault rules, in install order.
    pub faults: Vec<FaultRule>,
    /// Add the fault mix derived from the seed.
    pub swarm: bool,
    /// Cost overrides (ns).
    pub costs: Vec<(Cost, u64)>,
    /// After the workload: heal faults, drain, and require fresh runs to succeed.
    pub liveness: bool,
    /// Record a trace.
    pub trace: bool,
    /// Where the config came from.
    pub origin: Origin,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            profile: ProfileName::A2a3,
            depth: None,
            slots: None,
            prepare_window: None,
            copies: None,
            header: None,
            workers: 0,
            seed: 1,
            workload: Workload::default(),
            faults: Vec::new(),
            swarm: false,
            costs: Vec::new(),
            liveness: false,
            trace: false,
            origin: Origin::Cli,
        }
    }
}

impl SimConfig {
    /// The lane profile this config runs: the named profile at `depth`, with the slot count,
    /// prepare window, copy path and header layout overridden where the config says.
    pub fn lane_profile(&self) -> Result<Profile, InputError> {
        let base = self.profile.profile(self.depth)?;
        if self.slots.is_none()
            && self.prepare_window.is_none()
            && self.copies.is_none()
            && self.header.is_none()
        {
            return Ok(base);
        }
        let spec = base.spec();
        let spec = ProfileSpec {
            name: "custom",
            slots: self.slots.unwrap_or(spec.slots),
            prepare_window: self.prepare_window.unwrap_or(spec.prepare_window),
            copies: self.copies.unwrap_or(spec.copies),
            header: self.header.unwrap_or(spec.header),
            ..spec
        };
        Profile::custom(spec).map_err(|e| {
            InputError::Profile(format!(
                "--slots {} --prepare-window {} for {}: {e}",
                spec.slots,
                spec.prepare_window,
                self.profile.name()
            ))
        })
    }

    /// Every fault rule installed: the explicit ones, then the swarm mix.
    pub fn all_faults(&self) -> Vec<FaultRule> {
        let mut rules = self.faults.clone();
        if self.swarm {
            rules.extend(swarm(self.seed));
        }
        rules
    }

    /// The costs, defaults plus overrides.
    pub fn cost_table(&self) -> Costs {
        Costs::with_overrides(&self.costs)
    }

    /// The one command that reproduces this simulation.
    pub fn repro(&self) -> String {
        match &self.origin {
            Origin::Scenario(path) => format!("cargo run --release -- check {path}"),
            Origin::Cli => {
                let w = &self.workload;
                let mut line = format!(
                    "cargo run --release -- --seed {} --profile {}",
                    self.seed,
                    self.profile.name()
                );
                if let Some(depth) = self.depth {
                    line += &format!(" --depth {depth}");
                }
                if let Some(slots) = self.slots {
                    line += &format!(" --slots {slots}");
                }
                if let Some(window) = self.prepare_window {
                    line += &format!(" --prepare-window {window}");
                }
                if let Some(copies) = self.copies {
                    line += &format!(" --copies {}", copies_name(copies));
                }
                if self.workers > 0 {
                    line += &format!(" --workers {}", self.workers);
                }
                line += &format!(
                    " --runs {} --device-us {} --jitter-pct {}",
                    w.runs,
                    fmt_us(w.device_ns),
                    fmt_pct(w.jitter_ppm)
                );
                for (flag, points) in
                    [("publish", &w.publish_after), ("diagnostics", &w.diagnostics)]
                {
                    if let Some(n) = points.every {
                        line += &format!(" --{flag}-every {n}");
                    }
                    if !points.at.is_empty() {
                        let at: Vec<String> = points.at.iter().map(u32::to_string).collect();
                        line += &format!(" --{flag}-after {}", at.join(","));
                    }
                }
                if let Some(k) = w.close_after {
                    line += &format!(" --close-after {k}");
                }
                for (cost, ns) in &self.costs {
                    line += &format!(" --cost {}={}", cost.name(), fmt_us(*ns));
                }
                for rule in &self.faults {
                    line += &format!(" --fault {rule}");
                }
                if self.swarm {
                    line += " --swarm";
                }
                if self.liveness {
                    line += " --liveness";
                }
                line
            }
        }
    }
}

/// A copy path as `--copies` takes it.
pub const fn copies_name(copies: CopyPath) -> &'static str {
    match copies {
        CopyPath::Sync => "sync",
        CopyPath::OnStream => "on-stream",
    }
}

/// A percentage from parts per million, without trailing zeros.
fn fmt_pct(ppm: u32) -> String {
    let s = format!("{}.{:04}", ppm / 10_000, ppm % 10_000);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').map_or_else(|| s.to_owned(), str::to_owned)
}

/// How the lane ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneEnd {
    /// Closed normally (after any number of recoveries).
    Closed,
    /// Recovery failed: the lane was lost before it was closed.
    Lost,
}

impl LaneEnd {
    /// `closed` or `lost`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Lost => "lost",
        }
    }
}

/// What one simulation produced.
#[derive(Clone, Debug)]
pub struct Report {
    /// The profile run.
    pub profile: Profile,
    /// Every outcome, in submission order.
    pub outcomes: Vec<Outcome>,
    /// Per-run figures.
    pub runs: Vec<RunStat>,
    /// Workload figures.
    pub summary: Summary,
    /// How the lane ended.
    pub end: LaneEnd,
    /// Runs and publications the lane refused (closed or lost) and never accepted.
    pub not_accepted: u32,
    /// AICore streams the lane created.
    pub aicore_streams_created: u64,
    /// Launches queued behind an earlier run still on the device.
    pub queued_launches: u64,
    /// Force resets that succeeded.
    pub resets: u64,
    /// The fault rules installed.
    pub faults: Vec<FaultRule>,
    /// How many faults fired.
    pub faults_injected: u64,
    /// The trace (empty unless asked for).
    pub trace: Trace,
    /// Stream roles by handle, for rendering the trace.
    pub stream_roles: BTreeMap<u64, Role>,
    /// Every status header the driver read that latched a code, by run, in read order.
    pub latches: Vec<(RunId, Status)>,
}

impl Report {
    /// The text trace.
    pub fn text_trace(&self) -> String {
        self.trace.render_text(&self.stream_roles)
    }
}

/// What the workload runner needs from a backend beyond the [`Driver`]: the backend's own
/// checks after every driver call, and healing its faults for the liveness phase.
pub trait Harness<D: Device, R: Runner<D>, O: Observer> {
    /// Something the backend itself found wrong, checked after every driver call (`None`:
    /// nothing).
    fn failure(&self, driver: &Driver<D, R, O>) -> Option<Failure>;
    /// Something the backend knows is wrong with an outcome the lane just delivered, checked
    /// for every outcome (`None`: nothing; the default checks nothing).
    fn outcome_failure(
        &mut self,
        _driver: &mut Driver<D, R, O>,
        _outcome: &Outcome,
    ) -> Option<Failure> {
        None
    }
    /// Removes every installed fault (the device's state stays until the lane recovers it).
    fn heal(&mut self, driver: &mut Driver<D, R, O>);
    /// The backend's virtual host worker tracks, if it models them ([`crate::workers`]);
    /// with some, [`drive`] runs the runner's prepare and finalise on them when the runner
    /// allows it. By default none: everything on the lane thread.
    fn host_tracks(&mut self) -> Option<&mut dyn HostTracks<D>> {
        None
    }
}

/// The simulator's [`Harness`]: the device model's failures, its fault rules healed, and its
/// virtual host workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimHarness {
    tracks: SimTracks,
}

impl SimHarness {
    /// A harness with `workers` virtual host workers (0: none).
    pub const fn new(workers: u8) -> Self {
        Self { tracks: SimTracks::new(workers) }
    }
}

impl<R: Runner<SimDevice>> Harness<SimDevice, R, SimObserver> for SimHarness {
    fn failure(&self, driver: &Driver<SimDevice, R, SimObserver>) -> Option<Failure> {
        driver.device().failure().cloned().map(Failure::Device)
    }

    /// No path reports `Ok` without a published ok record (L-8), and no verdict names a run
    /// its own record does not convict (L-8a): every run outcome takes the device's note of
    /// the run's record; an `Ok` verdict without an ok one, a record error without an error
    /// one, a "no result record" for a run that published one, or a sticky code charged to a
    /// run that published no error record, is a device invariant broken.
    fn outcome_failure(
        &mut self,
        driver: &mut Driver<SimDevice, R, SimObserver>,
        outcome: &Outcome,
    ) -> Option<Failure> {
        let Outcome::Run(run) = outcome else {
            return None;
        };
        let device = driver.device_mut();
        let published = device.take_published(run.run);
        let broken = match run.verdict {
            Verdict::Ok if published != Some(PublishedRecord::Ok) => Some(
                "was reported Ok but its kernels published no ok result record for its epoch \
                 (no path may report Ok without one, L-8)"
                    .to_owned(),
            ),
            Verdict::Failed { cause } => match cause.failure {
                status_latch::Failure::Record { .. }
                    if published != Some(PublishedRecord::Error) =>
                {
                    Some("failed on an error record its kernels never published (L-8)".to_owned())
                }
                status_latch::Failure::NoRecord
                | status_latch::Failure::NoRecordBesideCode { .. }
                    if published.is_some() =>
                {
                    Some(format!(
                        "failed with no result record, but its kernels published one ({published:?})"
                    ))
                }
                status_latch::Failure::NoRecordBesideCode { left_by, .. }
                    if !device.published_an_error(RunId(left_by)) =>
                {
                    Some(format!(
                        "was told run {left_by} left the synchronize's code, but run {left_by} \
                         published no error record (L-8a)"
                    ))
                }
                _ => None,
            },
            _ => None,
        };
        broken.map(|what| {
            Failure::Device(DeviceFailure::Invariant(format!("run {} {what}", run.run.0)))
        })
    }

    fn heal(&mut self, driver: &mut Driver<SimDevice, R, SimObserver>) {
        driver.device_mut().heal();
    }

    fn host_tracks(&mut self) -> Option<&mut dyn HostTracks<SimDevice>> {
        Some(&mut self.tracks)
    }
}

/// How [`drive`] runs a workload.
#[derive(Clone, Debug)]
pub struct DriveOptions {
    /// After the workload: heal faults, drain, and require fresh runs to succeed.
    pub liveness: bool,
    /// The command that reproduces the run, for every failure.
    pub repro: String,
}

/// What [`drive`] produced: every outcome, how the lane ended, and the driver (for the
/// backend's own figures).
#[derive(Debug)]
pub struct Driven<D: Device, R: Runner<D>, O: Observer> {
    /// The driver, after close.
    pub driver: Driver<D, R, O>,
    /// Every outcome, in submission order.
    pub outcomes: Vec<Outcome>,
    /// How the lane ended.
    pub end: LaneEnd,
    /// Runs and publications the lane refused (closed or lost) and never accepted.
    pub not_accepted: u32,
    /// The device clock (`Device::now`) when the last run outcome arrived.
    pub last_run_outcome_ns: u64,
}

struct Drive<'a, D: Device, R: Runner<D>, O: Observer, H: Harness<D, R, O>> {
    driver: Driver<D, R, O>,
    harness: &'a mut H,
    /// The lane thread's loop with virtual host workers, when the harness has some and the
    /// runner allows it; `None`: the plain driver loop.
    workers: Option<WorkerLoop>,
    repro: String,
    outcomes: Vec<Outcome>,
    accepted: Vec<u64>,
    last_run_outcome_ns: u64,
    turns: u64,
    turn_budget: u64,
    was_lost: bool,
    on_progress: &'a mut dyn FnMut(u32, u32),
}

/// Runs one simulation. `on_progress(done, total)` is called after each submitted run.
pub fn run(config: &SimConfig, on_progress: &mut dyn FnMut(u32, u32)) -> Result<Report, SimError> {
    let profile = config.lane_profile()?;
    let w = &config.workload;
    w.validate(&profile)?;
    let faults = config.all_faults();
    let items = u64::from(w.runs) * 2 + u64::from(LIVENESS_RUNS);
    let mut device = SimDevice::new(
        config.cost_table(),
        profile.header(),
        config.seed,
        RunTimes { device_ns: w.device_ns, jitter_ppm: w.jitter_ppm },
    )
    .with_trace(config.trace)
    .with_op_timeout(profile.device_op_timeout_ns())
    .with_call_budget(10_000 + 500 * items);
    for rule in &faults {
        device.install(rule.clone());
    }
    let options = DriveOptions { liveness: config.liveness, repro: config.repro() };
    let (device, outcomes, end, not_accepted, last_run_outcome_ns) = if config.workers > 0 {
        // The runner allows as many prepares at once as the profile's window.
        let runner = OffLaneRunner::new(profile.prepare_window());
        sim_drive(profile, device, runner, config.workers, w, &options, on_progress)?
    } else {
        sim_drive(profile, device, SimRunner, 0, w, &options, on_progress)?
    };
    let journal = device.journal();
    let (runs, summary) =
        summarise(&outcomes, &journal.host_use(), &journal.worker_use(), last_run_outcome_ns);
    Ok(Report {
        profile,
        outcomes,
        runs,
        summary,
        end,
        not_accepted,
        aicore_streams_created: journal.aicore_streams_created(),
        queued_launches: device.queued_launches(),
        resets: device.resets(),
        faults,
        faults_injected: device.faults_injected(),
        stream_roles: journal.stream_roles(),
        latches: journal.latches(),
        trace: journal.trace(),
    })
}

/// What [`sim_drive`] hands back: the device and [`Driven`]'s figures.
type SimDriven = (SimDevice, Vec<Outcome>, LaneEnd, u32, u64);

/// [`drive`] on the simulated device with `runner` and `workers` virtual host workers.
fn sim_drive<R: Runner<SimDevice>>(
    profile: Profile,
    device: SimDevice,
    runner: R,
    workers: u8,
    w: &Workload,
    options: &DriveOptions,
    on_progress: &mut dyn FnMut(u32, u32),
) -> Result<SimDriven, SimError> {
    let observer = SimObserver::new(device.journal());
    let driver = Driver::new(profile, device, runner).with_observer(observer);
    let driven = drive(driver, w, options, &mut SimHarness::new(workers), on_progress)?;
    let (device, _, _) = driven.driver.into_parts();
    Ok((device, driven.outcomes, driven.end, driven.not_accepted, driven.last_run_outcome_ns))
}

/// Runs `workload` through `driver` on any backend: keeps the lane full (submit until
/// `Full`, then turn), publishes and closes where the workload says, stops submitting once
/// the lane is lost, checks `harness` after every driver call, and requires every accepted
/// item to get exactly one outcome, in order. With `options.liveness` it heals the faults
/// after the workload and requires fresh runs to succeed (unless the lane ended lost).
/// `on_progress(done, total)` is called after each submitted run.
pub fn drive<D: Device, R: Runner<D>, O: Observer, H: Harness<D, R, O>>(
    driver: Driver<D, R, O>,
    w: &Workload,
    options: &DriveOptions,
    harness: &mut H,
    on_progress: &mut dyn FnMut(u32, u32),
) -> Result<Driven<D, R, O>, SimError> {
    let items = u64::from(w.runs) * 2 + u64::from(LIVENESS_RUNS);
    let workers = harness
        .host_tracks()
        .and_then(|tracks| WorkerLoop::new(tracks.workers(), driver.runner().concurrency()));
    let mut runner = Drive {
        driver,
        harness,
        workers,
        repro: options.repro.clone(),
        outcomes: Vec::new(),
        accepted: Vec::new(),
        last_run_outcome_ns: 0,
        turns: 0,
        turn_budget: 10_000 + 100 * items,
        was_lost: false,
        on_progress,
    };
    let mut not_accepted = 0;
    for k in 1..=w.runs {
        if w.close_after.is_some_and(|c| k > c) {
            break;
        }
        let mut request = RunRequest::new();
        if w.diagnostics.contains(k) {
            request = request.with_diagnostics();
        }
        if runner.submit(request)?.is_none() {
            not_accepted += w.runs - k + 1;
            break;
        }
        if w.publish_after.contains(k) && !runner.publish(CodeRef(u64::from(k)))? {
            not_accepted += 1;
        }
        (runner.on_progress)(k, w.runs);
    }
    if w.close_after.is_none() {
        // Every run gets to finish: close only once the lane is idle.
        runner.drain()?;
        if options.liveness {
            runner.liveness()?;
        }
    }
    runner.close()?;
    runner.check_accounting()?;
    if options.liveness && !runner.driver.lane().state().is_closed() {
        return Err(runner.failed(Failure::Liveness(format!(
            "after close and drain the lane is {:?}, not Closed",
            runner.driver.lane().state()
        ))));
    }
    Ok(Driven {
        driver: runner.driver,
        outcomes: runner.outcomes,
        end: if runner.was_lost { LaneEnd::Lost } else { LaneEnd::Closed },
        not_accepted,
        last_run_outcome_ns: runner.last_run_outcome_ns,
    })
}

/// The fault rules a config installs, described for printing (swarm mode prints them
/// before running).
pub fn describe_faults(config: &SimConfig) -> String {
    describe(&config.all_faults())
}
