//! The conformance suite: one scenario file, one set of expectations, every backend.
//!
//! A [`Backend`] runs a [`Scenario`] and reports the [`Observed`] figures its expectations
//! compare; [`check`] compares them. [`Sim`] is the simulator in virtual time; [`AclOnFake`]
//! is backend-acl's `AclDevice` on the fake libascendcl in real time, driven by the same
//! workload runner with the [`FakeRunner`], the scenario's fault rules (one vocabulary) and
//! scaled timeouts ([`FakeTimeouts`]). The suite asserts outcomes and lane-step orderings,
//! never timings.

use std::sync::Arc;

use backend_sim::scenario::{self, BackendName, Observed, Scenario};
use backend_sim::workload::{DriveOptions, Harness, drive};
use backend_sim::{Failure, LaneEnd, RunTimes};
use lane_core::status_latch::HeaderLayout;
use lane_core::{CopyPath, Profile};
use lane_driver::{Device, Driver, Observer, Runner};
use run_lane_fake_ascendcl::{Control, FakeCounters};

use crate::error::ConformanceError;
use crate::fake::{FakeSession, FakeTimeouts};
use crate::fake_runner::{FakeRunner, Healer};
use crate::tally::Tally;

/// A backend the suite runs scenarios on.
pub trait Backend {
    /// Which one (scenario files name it in `backends`).
    fn name(&self) -> BackendName;

    /// Runs the scenario; its figures, and any failure of the backend's own checks (a
    /// leak on the fake), one readable block each.
    ///
    /// # Errors
    ///
    /// [`ConformanceError`] when the scenario could not run at all.
    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError>;
}

/// Runs `scenario` on `backend` and compares it with the expectations: one readable block
/// per mismatch (empty: it passed).
///
/// # Errors
///
/// [`ConformanceError`] when the scenario could not run.
pub fn check(
    backend: &mut dyn Backend,
    scenario: &Scenario,
) -> Result<Vec<String>, ConformanceError> {
    let (observed, mut own) = backend.run(scenario)?;
    let mut mismatches = scenario.compare(&observed);
    mismatches.append(&mut own);
    Ok(mismatches)
}

/// The scenario files, `scenarios/*.toml` at the workspace root, loaded, in file name order.
///
/// # Errors
///
/// The directory or a file that could not be read or parsed, named.
pub fn scenarios() -> Result<Vec<Scenario>, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files.iter().map(|p| scenario::load(p).map_err(|e| e.to_string())).collect()
}

/// Runs every scenario file `backend` can express ([`Scenario::runs_on`] its name) and checks
/// each: how many ran, and every failure rendered (empty: all passed).
///
/// # Panics
///
/// If the scenario files cannot be loaded ([`scenarios`]).
pub fn failures_on(backend: &mut dyn Backend) -> (usize, String) {
    let mut ran = 0;
    let mut failures = String::new();
    for scenario in scenarios().unwrap_or_else(|e| panic!("{e}")) {
        if !scenario.runs_on(backend.name()) {
            continue;
        }
        ran += 1;
        match check(backend, &scenario) {
            Ok(mismatches) if mismatches.is_empty() => {}
            Ok(mismatches) => failures += &scenario.render(Some(backend.name()), &mismatches),
            Err(e) => failures += &format!("{} [{}]: {e}\n", scenario.path, backend.name().name()),
        }
    }
    (ran, failures)
}

/// Faults no shipped scenario uses, each a scenario's text without its name: the runner's own
/// failures, every stream create failing, an upload failure, an AICPU exception, a latch on
/// every run. Every backend over the fake must end each item as the simulator does.
pub const RARER_FAULTS: [&str; 9] = [
    "[workload]\nruns = 4\n[[fault]]\nkind = \"prepare\"\ncode = 107000\nruns = [2]\n",
    "[workload]\nruns = 4\n[[fault]]\nkind = \"copy-back\"\ncode = 107000\nruns = [2]\n\
     [[fault]]\nkind = \"validation\"\nruns = [3]\n",
    "[workload]\nruns = 4\n[[fault]]\nkind = \"prepare-incompatible\"\nruns = [2]\n",
    "[workload]\nruns = 4\npublish_after = [2]\n[[fault]]\nkind = \"upload\"\ncode = 107000\ncalls = [1]\n",
    "[workload]\nruns = 4\n[[fault]]\nkind = \"exception\"\ncode = \"ACL_ERROR_RT_AICPU_EXCEPTION\"\nruns = [2]\n",
    "[workload]\nruns = 3\n[[fault]]\nkind = \"stream-create\"\ncode = 207008\nalways = true\n",
    "[workload]\nruns = 3\n[[fault]]\nkind = \"latch\"\ncode = \"HEAP_RING_DEADLOCK\"\nalways = true\n",
    "[workload]\nruns = 4\n[[fault]]\nkind = \"exception\"\ncode = \"ACL_ERROR_RT_AICORE_EXCEPTION\"\nruns = [2]\n",
    "[workload]\nruns = 4\n[[fault]]\nkind = \"latch\"\ncode = \"SCOPE_DEADLOCK\"\nruns = [1]\n",
];

/// What [`RARER_FAULTS`] compare besides the outcome lines: how the lane ended, the items not
/// accepted, resets, queued launches, AICore streams created.
pub type Figures = (LaneEnd, u32, u64, u64, u64);

/// [`Figures`] of an observed run.
#[must_use]
pub fn figures(observed: &Observed) -> Figures {
    (
        observed.end,
        observed.not_accepted,
        observed.resets,
        observed.queued_launches,
        observed.aicore_streams_created,
    )
}

/// Runs each of [`RARER_FAULTS`] on the simulator and on `backend` (over the fake): a
/// readable block per case whose outcome lines or [`Figures`] differ, whose backend failed
/// its own checks, or whose fault changed nothing on the simulator (proving nothing).
///
/// # Panics
///
/// If a case does not parse or a backend cannot run it.
pub fn rarer_faults_against_the_simulator(backend: &mut dyn Backend) -> Vec<String> {
    let mut failures = Vec::new();
    for (i, case) in RARER_FAULTS.iter().enumerate() {
        let text = format!("name = \"case {i}\"\n{case}");
        let scenario = scenario::parse(&format!("case-{i}.toml"), &text)
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
        let (sim, _) = Sim.run(&scenario).unwrap_or_else(|e| panic!("case {i}: {e}"));
        let (other, own) = backend.run(&scenario).unwrap_or_else(|e| panic!("case {i}: {e}"));
        if !own.is_empty() {
            failures.push(format!("case {i}: {own:?}\n{case}"));
        }
        if sim.outcome_lines() != other.outcome_lines() || figures(&sim) != figures(&other) {
            failures.push(format!(
                "case {i}:\n{case}\nsimulator: {:?} {:?}\n{}: {:?} {:?}",
                sim.outcome_lines(),
                figures(&sim),
                backend.name().name(),
                other.outcome_lines(),
                figures(&other)
            ));
        }
        // The fault fired: without it the same workload ends differently.
        let (workload, _) = case.split_once("[[fault]]").unwrap_or((case, ""));
        let clean = scenario::parse("clean.toml", &format!("name = \"clean\"\n{workload}"))
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
        let (clean, _) = Sim.run(&clean).unwrap_or_else(|e| panic!("case {i}: {e}"));
        if clean.outcome_lines() == sim.outcome_lines() && figures(&clean) == figures(&sim) {
            failures.push(format!("case {i} changed nothing:\n{case}"));
        }
    }
    failures
}

/// A closed lane leaves nothing alive on the fake: every stream, event and allocation it
/// made was destroyed, freed or reclaimed by a reset. A lost lane keeps what no reset could
/// reclaim. `Some` describes the leak.
pub fn leaks(end: LaneEnd, counters: &FakeCounters) -> Option<String> {
    (end == LaneEnd::Closed && !counters.balanced())
        .then(|| format!("leak: the closed lane left resources on the fake:\n{counters:#?}"))
}

/// The simulator, virtual time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sim;

impl Backend for Sim {
    fn name(&self) -> BackendName {
        BackendName::Sim
    }

    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError> {
        on_sim(&scenario.config)
    }
}

/// `config` on the simulator: its figures, and no failure of its own.
fn on_sim(config: &backend_sim::SimConfig) -> Result<(Observed, Vec<String>), ConformanceError> {
    let report = backend_sim::run(config, &mut |_, _| {})?;
    Ok((Observed::of(&report), Vec::new()))
}

/// The simulator with every scenario's copy path replaced: the same expectations must hold
/// whichever way a launch arms its slot and a status read reads it back.
#[derive(Clone, Copy, Debug)]
pub struct SimWithCopies(pub CopyPath);

impl Backend for SimWithCopies {
    fn name(&self) -> BackendName {
        BackendName::Sim
    }

    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError> {
        on_sim(&backend_sim::SimConfig { copies: Some(self.0), ..scenario.config.clone() })
    }
}

/// The simulator with every scenario's status header layout replaced (SPEC §5.1): the same
/// expectations must hold whichever runtime's layout the kernels latch in and the lane reads.
#[derive(Clone, Copy, Debug)]
pub struct SimWithHeader(pub HeaderLayout);

impl Backend for SimWithHeader {
    fn name(&self) -> BackendName {
        BackendName::Sim
    }

    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError> {
        on_sim(&backend_sim::SimConfig { header: Some(self.0), ..scenario.config.clone() })
    }
}

/// backend-acl on the fake libascendcl, real time.
#[derive(Clone, Copy, Debug)]
pub struct AclOnFake {
    /// The timeouts every profile is scaled to ([`AclOnFake::TIMEOUTS`] by default).
    pub timeouts: FakeTimeouts,
    /// Replaces every scenario's copy path (`None`: the scenario's own).
    pub copies: Option<CopyPath>,
    /// Replaces every scenario's header layout (`None`: the scenario's own): the fake's
    /// kernels latch in it and the lane reads it.
    pub header: Option<HeaderLayout>,
    /// The fake's device the lane runs on (0 by default): its faults are armed there, and no
    /// other device may see a call.
    pub device_id: i32,
}

impl AclOnFake {
    /// The suite's timeouts: a 4 s host wait, a 1 s op timeout and a 1 s drain, so a `stuck`
    /// scenario waits out its host deadline in seconds, not tens.
    pub const TIMEOUTS: FakeTimeouts = FakeTimeouts {
        completion_ns: 4_000_000_000,
        device_op_ns: 1_000_000_000,
        drain_ns: 1_000_000_000,
    };
}

impl Default for AclOnFake {
    fn default() -> Self {
        Self { timeouts: Self::TIMEOUTS, copies: None, header: None, device_id: 0 }
    }
}

/// The fake's [`Harness`]: no checks of its own during the run (the leak check follows it),
/// and healing clears the fake's rules and turns the runner's off.
struct FakeHarness {
    control: Arc<Control>,
    device_id: i32,
    healer: Healer,
    heal_failed: Option<String>,
}

impl<D: Device, R: Runner<D>, O: Observer> Harness<D, R, O> for FakeHarness {
    fn failure(&self, _driver: &Driver<D, R, O>) -> Option<Failure> {
        self.heal_failed
            .as_ref()
            .map(|e| Failure::Liveness(format!("the fake's faults could not be cleared: {e}")))
    }

    fn heal(&mut self, _driver: &mut Driver<D, R, O>) {
        self.healer.heal();
        if let Err(e) = self.control.device(self.device_id).clear_faults() {
            self.heal_failed = Some(e.to_string());
        }
    }
}

impl Backend for AclOnFake {
    fn name(&self) -> BackendName {
        BackendName::Acl
    }

    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError> {
        let repro = "cargo test -p lane-conformance --test conformance -- --nocapture";
        on_fake(scenario, *self, repro, |session, device_id, profile| {
            session.open_on(device_id, profile)
        })
    }
}

/// Runs `scenario` as [`AclOnFake`] does, on any device over the fake (lane-capi's runtime
/// device table meets the same expectations this way): the lane's device is what `open`
/// makes (given the session, the fake's device id and the scaled profile) on the calling
/// thread, the lane's. The fake is reset first; the scenario's rules go on that device once
/// it is open (the open's calls are not the lane's); the leak check and the check that no
/// other device of the fake saw a call follow the run. `repro` is the command that runs the
/// suite again. A device that programs no op timeout sets the fake's in its `open`.
///
/// # Errors
///
/// [`ConformanceError`] when the fake, the device or the workload could not run.
pub fn on_fake<D: Device>(
    scenario: &Scenario,
    setup: AclOnFake,
    repro: &str,
    open: impl FnOnce(&FakeSession, i32, Profile) -> Result<D, ConformanceError>,
) -> Result<(Observed, Vec<String>), ConformanceError> {
    let config = &backend_sim::SimConfig {
        copies: setup.copies.or(scenario.config.copies),
        header: setup.header.or(scenario.config.header),
        ..scenario.config.clone()
    };
    let profile = setup.timeouts.scale(config.lane_profile()?)?;
    let session = FakeSession::start()?;
    let control = session.control();
    let device_id = setup.device_id;
    let device = open(&session, device_id, profile)?;
    let w = &config.workload;
    let runner = FakeRunner::new(
        Arc::clone(control),
        profile.header(),
        config.seed,
        RunTimes { device_ns: w.device_ns, jitter_ppm: w.jitter_ppm },
    )
    .on_device(device_id)
    // After open: the scenario's call counts are the lane's calls, not the probe's.
    .with_faults(&config.all_faults())
    .map_err(ConformanceError::control)?;
    let mut harness = FakeHarness {
        control: Arc::clone(control),
        device_id,
        healer: runner.healer(),
        heal_failed: None,
    };
    let driver = Driver::new(profile, device, runner).with_observer(Tally::default());
    let options =
        DriveOptions { liveness: config.liveness, repro: format!("{repro}  # {}", scenario.path) };
    let driven = drive(driver, w, &options, &mut harness, &mut |_, _| {})?;
    let (device, _, tally) = driven.driver.into_parts();
    // Everything the lane made is given back by close; the device holds nothing else.
    drop(device);
    let lanes = control.device(device_id);
    lanes.clear_faults().map_err(ConformanceError::control)?;
    let counters = lanes.counters().map_err(ConformanceError::control)?;
    let total = control.total_counters().map_err(ConformanceError::control)?;
    let mut own: Vec<String> = leaks(driven.end, &counters).into_iter().collect();
    if total != counters {
        own.push(format!(
            "the lane on device {device_id} reached other devices of the fake: all devices \
             {total:#?}\nits own {counters:#?}"
        ));
    }
    let observed = Observed {
        end: driven.end,
        outcomes: driven.outcomes,
        not_accepted: driven.not_accepted,
        aicore_streams_created: tally.aicore_streams_created,
        queued_launches: tally.queued_launches,
        resets: tally.resets,
        latches: tally.latches,
    };
    Ok((observed, own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_lane_with_a_live_stream_is_a_leak_but_a_lost_one_is_not() {
        let live = FakeCounters {
            streams_created: 2,
            streams_destroyed: 1,
            live_streams: 1,
            ..FakeCounters::ZERO
        };
        let leak = leaks(LaneEnd::Closed, &live).expect("a live stream after close");
        assert!(leak.contains("live_streams: 1"), "{leak}");
        assert_eq!(leaks(LaneEnd::Lost, &live), None);
        let clean = FakeCounters {
            streams_created: 2,
            streams_destroyed: 1,
            streams_reclaimed: 1,
            ..FakeCounters::ZERO
        };
        assert_eq!(leaks(LaneEnd::Closed, &clean), None);
    }
}
