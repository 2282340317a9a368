//! A runner on lane-driver's `TestDevice` (its runs complete at once) whose host work may run
//! on host workers that sleep a seeded random short time: the service's threads without a
//! simulator (whose runner work is bound to its device), for the worker tests. Nothing here
//! allocates per run.

use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, Profile, ProfileSpec, RunId, SlotId};
use lane_driver::testkit::TestDevice;
use lane_driver::{Concurrency, HostWorker, PrepareError, RunArgs, Runner};
use lane_service::{LaneHandle, ServiceConfig, spawn_with_workers};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

/// What the runner's host work records: where it ran.
#[derive(Default)]
pub struct Seen {
    /// Prepares and finalises run on the lane thread.
    pub on_lane: AtomicU64,
    /// Prepares and finalises run on a host worker.
    pub on_worker: AtomicU64,
    /// A worker was dropped (its thread ended).
    pub worker_dropped: AtomicBool,
    /// Binds a worker failed (each hands its job back to the lane thread).
    pub binds_failed: AtomicU64,
}

/// The runner on the lane thread: its AICPU kernel completes the run on [`TestDevice`]; host work, when it is
/// not on a worker, runs here.
pub struct HostRunner {
    pub concurrency: Concurrency,
    pub seen: Arc<Seen>,
}

impl HostRunner {
    /// Host work allowed off the lane thread ([`OFF_LANE`]).
    pub fn off_lane(seen: Arc<Seen>) -> Self {
        Self { concurrency: OFF_LANE, seen }
    }
}

/// Three slots, two launched at once, two prepares at once.
pub fn profile() -> Profile {
    Profile::custom(ProfileSpec {
        slots: 3,
        launch_depth: 2,
        prepare_window: 2,
        ..Profile::default_spec()
    })
    .expect("a valid profile")
}

/// A lane of `config` on `device` and `runner`, each host worker made by `worker(index)`.
pub fn lane_with_workers<W: HostWorker + 'static>(
    config: ServiceConfig,
    device: TestDevice,
    runner: HostRunner,
    worker: impl Fn(usize) -> W + Send + Sync + 'static,
) -> LaneHandle {
    spawn_with_workers(
        config,
        move || Ok::<_, String>((device, runner)),
        move |index| Ok::<Box<dyn HostWorker>, String>(Box::new(worker(index))),
    )
    .expect("the lane starts")
}

impl Runner<TestDevice> for HostRunner {
    fn prepare_run(
        &mut self,
        _device: &mut TestDevice,
        _run: RunId,
        _slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        self.seen.on_lane.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn launch_aicore(
        &mut self,
        _device: &mut TestDevice,
        _stream: StreamHandle,
        _args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        Ok(())
    }
    fn launch_aicpu(
        &mut self,
        device: &mut TestDevice,
        _stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        device.complete(args);
        Ok(())
    }
    fn finalise_run(
        &mut self,
        _device: &mut TestDevice,
        _run: RunId,
        _slot: SlotId,
        _copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.seen.on_lane.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn upload_code(&mut self, _device: &mut TestDevice, _code: CodeRef) -> Result<(), ReturnCode> {
        Ok(())
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
}

/// Runner work off the lane thread on a seeded random schedule: each call sleeps
/// `0..max_sleep` (xorshift, no allocation), so answers come back in random order. A run
/// whose id is `panic_on` panics its prepare. With `fail_bind_every` n > 0, every n-th bind
/// fails (as `aclrtSetDevice` after a force reset may).
pub struct Sleepy {
    pub state: u64,
    pub max_sleep: Duration,
    pub seen: Arc<Seen>,
    pub panic_on: Option<u64>,
    pub fail_bind_every: u64,
    pub binds: u64,
}

impl Sleepy {
    pub fn new(seed: u64, max_sleep: Duration, seen: Arc<Seen>) -> Self {
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            max_sleep,
            seen,
            panic_on: None,
            fail_bind_every: 0,
            binds: 0,
        }
    }

    fn nap(&mut self) {
        self.seen.on_worker.fetch_add(1, Ordering::SeqCst);
        let max = u64::try_from(self.max_sleep.as_nanos()).unwrap_or(u64::MAX);
        if max == 0 {
            return;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        thread::sleep(Duration::from_nanos(self.state % max));
    }
}

impl Drop for Sleepy {
    fn drop(&mut self) {
        self.seen.worker_dropped.store(true, Ordering::SeqCst);
    }
}

impl HostWorker for Sleepy {
    fn bind(&mut self) -> Result<(), AclCode> {
        self.binds += 1;
        if self.fail_bind_every > 0 && self.binds % self.fail_bind_every == 0 {
            self.seen.binds_failed.fetch_add(1, Ordering::SeqCst);
            return Err(AclCode::RtInvalidDeviceId);
        }
        Ok(())
    }
    fn prepare_run(&mut self, run: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        assert_ne!(Some(run.0), self.panic_on, "the worker panics on run {}", run.0);
        self.nap();
        Ok(())
    }
    fn finalise_run(&mut self, _: RunId, _: SlotId, _: bool) -> Result<(), FinaliseFailure> {
        self.nap();
        Ok(())
    }
}

/// Runner work allowed off the lane thread, two prepares at once.
pub const OFF_LANE: Concurrency = Concurrency { off_lane_thread: true, prepares_at_once: 2 };
