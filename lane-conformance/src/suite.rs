//! The conformance suite: one scenario file, one set of expectations, every backend.
//!
//! A [`Backend`] runs a [`Scenario`] and reports the [`Observed`] figures its expectations
//! compare; [`check`] compares them. [`Sim`] is the simulator in virtual time; [`AclOnFake`]
//! is backend-acl's `AclDevice` on the fake libascendcl in real time, driven by the same
//! workload runner (`backend_sim::workload::drive`) with the [`FakeRunner`], the scenario's
//! fault rules installed on the fake as they are on the simulator (one vocabulary, no
//! translation) and its timeouts scaled ([`FakeTimeouts`]).
//! Kernels run the scenario's device times (hundreds of microseconds) for real; the suite
//! asserts outcomes and lane-step orderings, never timings.

use std::sync::Arc;

use backend_sim::scenario::{BackendName, Observed, Scenario};
use backend_sim::workload::{DriveOptions, Harness, drive};
use backend_sim::{Failure, LaneEnd, RunTimes};
use lane_core::CopyPath;
use lane_core::status_latch::HeaderLayout;
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
        let report = backend_sim::run(&scenario.config, &mut |_, _| {})?;
        Ok((Observed::of(&report), Vec::new()))
    }
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
        let config = backend_sim::SimConfig {
            copies: Some(self.0),
            ..scenario.config.clone()
        };
        let report = backend_sim::run(&config, &mut |_, _| {})?;
        Ok((Observed::of(&report), Vec::new()))
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
        let config = backend_sim::SimConfig {
            header: Some(self.0),
            ..scenario.config.clone()
        };
        let report = backend_sim::run(&config, &mut |_, _| {})?;
        Ok((Observed::of(&report), Vec::new()))
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
    /// The suite's timeouts: a 4 s host wait (a scenario's runs take hundreds of
    /// microseconds), a 1 s op timeout and a 1 s drain, so a scenario whose run never ends
    /// (`stuck`) waits out its host deadline in seconds, not tens.
    pub const TIMEOUTS: FakeTimeouts = FakeTimeouts {
        completion_ns: 4_000_000_000,
        device_op_ns: 1_000_000_000,
        drain_ns: 1_000_000_000,
    };
}

impl Default for AclOnFake {
    fn default() -> Self {
        Self {
            timeouts: Self::TIMEOUTS,
            copies: None,
            header: None,
            device_id: 0,
        }
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
        let config = &backend_sim::SimConfig {
            copies: self.copies.or(scenario.config.copies),
            header: self.header.or(scenario.config.header),
            ..scenario.config.clone()
        };
        let profile = self.timeouts.scale(config.lane_profile()?)?;
        let session = FakeSession::start()?;
        let control = session.control();
        let device_id = self.device_id;
        let device = session.open_on(device_id, profile)?;
        let w = &config.workload;
        let runner = FakeRunner::new(
            Arc::clone(control),
            profile.header(),
            config.seed,
            RunTimes {
                device_ns: w.device_ns,
                jitter_ppm: w.jitter_ppm,
            },
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
        let options = DriveOptions {
            liveness: config.liveness,
            repro: format!(
                "cargo test -p lane-conformance --test conformance -- --nocapture  # {}",
                scenario.path
            ),
        };
        let driven = drive(driver, w, &options, &mut harness, &mut |_, _| {})?;
        let (device, _, tally) = driven.driver.into_parts();
        // Everything the lane made is given back by close; the device holds nothing else.
        drop(device);
        let lanes = control.device(device_id);
        lanes.clear_faults().map_err(ConformanceError::control)?;
        let counters = lanes.counters().map_err(ConformanceError::control)?;
        let total = control
            .total_counters()
            .map_err(ConformanceError::control)?;
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
