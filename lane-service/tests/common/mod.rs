//! Test backends: the simulator, and lane-driver's `TestDevice` with a runner that notes what
//! it did.

#![allow(dead_code, unreachable_pub)]

pub mod host;

use backend_sim::costs::Costs;
use backend_sim::device::RunTimes;
use backend_sim::{FaultRule, SimDevice};
use lane_core::status_latch::ReturnCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, Outcome, Profile, RunId, RunRequest, SlotId, Verdict};
use lane_driver::testkit::{Call, Stall, TestDevice, Then};
use lane_driver::{PrepareError, RunArgs, Runner};
use lane_service::{LaneHandle, ServiceConfig, spawn};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

/// A simulated device for `profile` with `faults` installed.
pub fn sim(profile: &Profile, seed: u64, faults: &[FaultRule]) -> SimDevice {
    let mut device = SimDevice::new(
        Costs::default(),
        profile.header(),
        seed,
        RunTimes { device_ns: 100_000, jitter_ppm: 200_000 },
    );
    for rule in faults {
        device.install(rule.clone());
    }
    device
}

/// Whether `outcome` is an `Ok` run's.
pub fn is_ok(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok)
}

/// Asserts `outcome` is an `Ok` run's.
pub fn assert_ok(outcome: &Outcome) {
    assert!(is_ok(outcome), "{outcome:?}");
}

/// Submits one run and asserts its outcome, waited for up to `timeout`, `Ok`.
pub fn run_ok(handle: &LaneHandle, timeout: Duration) -> RunId {
    let run = handle.submit(RunRequest::new()).expect("accepted");
    assert_ok(&handle.wait(run, timeout).expect("its outcome"));
    run
}

/// a2a3 with these host completion, device op and drain timeouts (ms).
pub fn timeouts(completion_ms: u64, op_ms: u64, drain_ms: u64) -> Profile {
    Profile::custom(lane_core::ProfileSpec {
        completion_timeout_ns: completion_ms * 1_000_000,
        device_op_timeout_ns: op_ms * 1_000_000,
        drain_timeout_ns: drain_ms * 1_000_000,
        ..Profile::a2a3().spec()
    })
    .expect("a profile")
}

/// When the runner did something for each run.
pub type Times = Arc<Mutex<Vec<(RunId, Instant)>>>;

/// The threads the runner's callbacks ran on.
pub type Threads = Arc<Mutex<Vec<(&'static str, ThreadId)>>>;

/// `TestDevice` on the real clock whose next event wait stalls `lasts`, then does `then`;
/// the receiver is told when it starts.
pub fn stalled(lasts: Duration, then: Then) -> (TestDevice, Receiver<Instant>) {
    let (started, rx) = mpsc::channel();
    let device = TestDevice::real();
    let mut stall = Stall::new(Call::SynchronizeEvent, lasts, then);
    stall.started = Some(started);
    device.script().stalls.push(stall);
    (device, rx)
}

/// A lane of `config` on `device` and `runner`.
pub fn lane_on(config: ServiceConfig, device: TestDevice, runner: Noting) -> LaneHandle {
    spawn(config, move || Ok::<_, String>((device, runner))).expect("the lane starts")
}

/// The runner on `TestDevice` (a run completes at its AICPU launch): it notes when each run
/// was prepared and launched and, when `threads` is set, the thread of every callback;
/// prepares and finalises on the thread named `slow_on` take 20 ms.
#[derive(Clone, Default)]
pub struct Noting {
    pub prepared: Times,
    pub launched: Times,
    pub threads: Option<Threads>,
    pub slow_on: Option<&'static str>,
}

impl Noting {
    fn note(&self, what: &'static str) {
        if let Some(threads) = &self.threads {
            threads.lock().unwrap().push((what, thread::current().id()));
        }
        if matches!(what, "prepare" | "finalise")
            && self.slow_on.is_some()
            && self.slow_on == thread::current().name()
        {
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Runner<TestDevice> for Noting {
    fn prepare_run(
        &mut self,
        _: &mut TestDevice,
        run: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), PrepareError> {
        self.note("prepare");
        self.prepared.lock().unwrap().push((run, Instant::now()));
        Ok(())
    }
    fn launch_aicore(
        &mut self,
        _: &mut TestDevice,
        _: StreamHandle,
        _: &RunArgs,
    ) -> Result<(), ReturnCode> {
        self.note("launch_aicore");
        Ok(())
    }
    fn launch_aicpu(
        &mut self,
        device: &mut TestDevice,
        _: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        self.note("launch_aicpu");
        self.launched.lock().unwrap().push((args.run, Instant::now()));
        device.complete(args);
        Ok(())
    }
    fn finalise_run(
        &mut self,
        _: &mut TestDevice,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), FinaliseFailure> {
        self.note("finalise");
        Ok(())
    }
    fn upload_code(&mut self, _: &mut TestDevice, _: CodeRef) -> Result<(), ReturnCode> {
        self.note("upload");
        Ok(())
    }
}
