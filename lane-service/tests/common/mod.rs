//! Test backends: the simulator, and a wrapper around it whose completion waiter's first wait
//! really blocks (or panics) on the waiter's thread.

#![allow(dead_code, unreachable_pub)]

pub mod host;

use backend_sim::costs::Costs;
use backend_sim::device::RunTimes;
use backend_sim::{FaultRule, SharedSim, SimDevice, SimRunner};
use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, Profile, RunId, SlotId, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, PrepareError, RunArgs, Runner,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A simulated device for `profile` with `faults` installed.
pub fn sim(profile: &Profile, seed: u64, faults: &[FaultRule]) -> SimDevice {
    let mut device = SimDevice::new(
        Costs::default(),
        profile.header(),
        seed,
        RunTimes {
            device_ns: 100_000,
            jitter_ppm: 200_000,
        },
    );
    for rule in faults {
        device.install(rule.clone());
    }
    device
}

/// What the completion waiter's first `synchronize_event` does before answering.
pub enum Stall {
    /// Nothing special.
    None,
    /// Says when it starts, then blocks for real this long (ignoring its timeout: a hung
    /// driver call).
    Block(Duration, Sender<Instant>),
    /// Says when it starts, sleeps this long, then panics.
    Panic(Duration, Sender<Instant>),
    /// Says when it starts; the awaited run completes only this long after, in real time.
    /// Until then every wait sleeps its own timeout and returns 507047 (a long run on a
    /// device that honours the wait's bound).
    Slow(Duration, Sender<Instant>),
    /// A slow run in progress: it completes at this instant.
    Until(Instant),
}

/// The simulator (shared with the service's completion waiter), whose waiter stalls in its
/// first wait, and a flag set when dropped.
pub struct Stalling {
    pub inner: SharedSim,
    /// Taken by the completion waiter (once).
    pub stall: Arc<Mutex<Stall>>,
    pub dropped: Arc<AtomicBool>,
    /// When the runner prepared each run.
    pub prepared: Arc<Mutex<Vec<(RunId, Instant)>>>,
    /// When the runner launched each run (its AICPU kernel, the launch's last).
    pub launched: Arc<Mutex<Vec<(RunId, Instant)>>>,
    /// What `recent_error_message` answers (the executor and the waiter ask only after a
    /// failed call).
    pub message: Option<&'static str>,
    /// The name of the thread each force reset was made on (`None`: an unnamed thread).
    pub resets: Arc<Mutex<Vec<Option<String>>>>,
    /// Set while a force reset is being made.
    pub resetting: Arc<AtomicBool>,
    /// How long each force reset takes (it sleeps that long with `resetting` set).
    pub reset_takes: Duration,
}

impl Stalling {
    pub fn new(inner: SimDevice, stall: Stall) -> Self {
        Self {
            inner: SharedSim::new(inner),
            stall: Arc::new(Mutex::new(stall)),
            dropped: Arc::new(AtomicBool::new(false)),
            prepared: Arc::new(Mutex::new(Vec::new())),
            launched: Arc::new(Mutex::new(Vec::new())),
            message: None,
            resets: Arc::new(Mutex::new(Vec::new())),
            resetting: Arc::new(AtomicBool::new(false)),
            reset_takes: Duration::ZERO,
        }
    }
}

impl Drop for Stalling {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

impl Device for Stalling {
    fn now(&mut self) -> Timestamp {
        self.inner.now()
    }
    fn launch_context(&mut self, context: Option<lane_driver::LaunchContext>) {
        self.inner.launch_context(context);
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.message.map(str::to_owned)
    }
    fn set_device(&mut self) -> Result<(), AclCode> {
        self.inner.set_device()
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.inner.synchronize_device(timeout_ms)
    }
    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        let name = thread::current().name().map(str::to_owned);
        self.resets.lock().unwrap().push(name);
        self.resetting.store(true, Ordering::SeqCst);
        thread::sleep(self.reset_takes);
        let reset = self.inner.reset_device_force();
        self.resetting.store(false, Ordering::SeqCst);
        reset
    }
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        self.inner.create_stream()
    }
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.inner.destroy_stream(stream)
    }
    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.inner.destroy_stream_force(stream)
    }
    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        self.inner.create_event()
    }
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        self.inner.record_event(event, stream)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.inner.synchronize_event(event, timeout_ms)
    }
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        self.inner.query_event(event)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.inner.synchronize_stream(stream, timeout_ms)
    }
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.inner.stream_wait_event(stream, event)
    }
    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.inner.destroy_event(event)
    }
    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.inner.malloc(size)
    }
    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.inner.free(ptr)
    }
    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.inner.memcpy_to_device(dst, src)
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.inner.memcpy_from_device(dst, src)
    }
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(StallingWaiter {
            inner: self.inner.completion_waiter()?,
            stall: Arc::clone(&self.stall),
            message: self.message,
        }))
    }
}

/// The completion waiter of [`Stalling`]: its first wait stalls as the device says.
pub struct StallingWaiter {
    inner: Box<dyn CompletionWaiter + Send>,
    stall: Arc<Mutex<Stall>>,
    message: Option<&'static str>,
}

impl CompletionWaiter for StallingWaiter {
    fn now(&mut self) -> Timestamp {
        self.inner.now()
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.message.map(str::to_owned)
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.inner.synchronize_device(timeout_ms)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.inner.synchronize_stream(stream, timeout_ms)
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.inner.memcpy_from_device(dst, src)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        let stall = std::mem::replace(&mut *self.stall.lock().unwrap(), Stall::None);
        match stall {
            Stall::None => {}
            Stall::Block(time, started) => {
                let _ = started.send(Instant::now());
                thread::sleep(time);
            }
            Stall::Panic(time, started) => {
                let _ = started.send(Instant::now());
                thread::sleep(time);
                panic!("the device exploded in synchronize_event");
            }
            Stall::Slow(time, started) => {
                let now = Instant::now();
                let _ = started.send(now);
                *self.stall.lock().unwrap() = Stall::Until(now + time);
                return self.synchronize_event(event, timeout_ms);
            }
            Stall::Until(end) => {
                let left = end.saturating_duration_since(Instant::now());
                let bound = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
                if left > bound {
                    *self.stall.lock().unwrap() = Stall::Until(end);
                    thread::sleep(bound);
                    return Err(AclCode::RtEventSyncTimeout);
                }
                thread::sleep(left);
            }
        }
        self.inner.synchronize_event(event, timeout_ms)
    }
}

/// The simulator's runner, on the stalling device.
pub struct StallingRunner;

impl Runner<Stalling> for StallingRunner {
    fn prepare_run(
        &mut self,
        device: &mut Stalling,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        device.prepared.lock().unwrap().push((run, Instant::now()));
        SimRunner.prepare_run(&mut device.inner, run, slot, diagnostics)
    }
    fn launch_aicore(
        &mut self,
        device: &mut Stalling,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        SimRunner.launch_aicore(&mut device.inner, stream, args)
    }
    fn launch_aicpu(
        &mut self,
        device: &mut Stalling,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        device
            .launched
            .lock()
            .unwrap()
            .push((args.run, Instant::now()));
        SimRunner.launch_aicpu(&mut device.inner, stream, args)
    }
    fn finalise_run(
        &mut self,
        device: &mut Stalling,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        SimRunner.finalise_run(&mut device.inner, run, slot, copy_back)
    }
    fn upload_code(&mut self, device: &mut Stalling, code: CodeRef) -> Result<(), ReturnCode> {
        SimRunner.upload_code(&mut device.inner, code)
    }
}
