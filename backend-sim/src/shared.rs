//! The simulated device in a lane service: [`SharedSim`], one [`SimDevice`] shared by the
//! lane thread and the service's completion waiter thread.
//!
//! lane-service makes every blocking wait of a lane on a completion waiter thread of its own
//! (SPEC L-16). On the simulator both threads call the one device model behind a mutex, and
//! its virtual host clock is the one clock both read. A service on the simulator is as
//! deterministic as the real-time order of its commands.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId, Timestamp};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DevicePtr, EventHandle, HostPtr, LaunchContext,
    PinnedCopies, PrepareError, RunArgs, Runner,
};

use crate::device::{SimDevice, SimRunner};
use crate::workers::OffLaneRunner;

/// A [`SimDevice`] shared by a lane service's lane thread and completion waiter (the
/// `Device` to give `lane_service::spawn`), locked for each call.
#[derive(Clone, Debug)]
pub struct SharedSim(Arc<Mutex<SimDevice>>);

impl SharedSim {
    /// Shares `device`.
    #[must_use]
    pub fn new(device: SimDevice) -> Self {
        Self(Arc::new(Mutex::new(device)))
    }

    /// The device, locked (a panic under the lock is the lane's loss, reported by the
    /// service; the device stays readable).
    pub fn lock(&self) -> MutexGuard<'_, SimDevice> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Device for SharedSim {
    forward_calls! {|s| s.lock();
        fn now(&mut self) -> Timestamp;
        fn set_device(&mut self) -> Result<(), AclCode>;
        fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
        fn reset_device_force(&mut self) -> Result<(), AclCode>;
        fn create_stream(&mut self) -> Result<StreamHandle, AclCode>;
        fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode>;
        fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode>;
        fn create_event(&mut self) -> Result<EventHandle, AclCode>;
        fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode>;
        fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode>;
        fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode>;
        fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode>;
        fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode>;
        fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode>;
        fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode>;
        fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;
        fn stream_wait_event(&mut self, stream: StreamHandle, event: EventHandle) -> Result<(), AclCode>;
        fn recent_error_message(&mut self) -> Option<String>;
        fn launch_context(&mut self, context: Option<LaunchContext>);
    }

    fn event_timestamps(&self) -> bool {
        self.lock().event_timestamps()
    }

    /// The same device, from the waiter's thread: nothing to bind (the simulator has no
    /// per-thread context).
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(SimWaiter(self.clone())))
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for SharedSim {
    forward_calls! {|s| s.lock();
        fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode>;
        fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode>;
        fn memcpy_to_device_async(&mut self, dst: DevicePtr, src: HostPtr, len: usize, stream: StreamHandle) -> Result<(), AclCode>;
        fn memcpy_from_device_async(&mut self, dst: HostPtr, src: DevicePtr, len: usize, stream: StreamHandle) -> Result<(), AclCode>;
        fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode>;
        fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode>;
    }
}

/// The completion waiter on a [`SharedSim`]: its waits are the device model's own, each
/// under the lock.
#[derive(Debug)]
struct SimWaiter(SharedSim);

/// Its calls may land between a run's AICore and AICPU launches on the lane thread (the
/// launch pair is two calls, each taking the lock); the device orphans a kernel only when
/// its launch context ends, so they need nothing special.
impl CompletionWaiter for SimWaiter {
    forward_calls! {|s| s.0;
        fn now(&mut self) -> Timestamp;
        fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode>;
        fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode>;
        fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode>;
        fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode>;
        fn recent_error_message(&mut self) -> Option<String>;
    }
}

/// `Runner<SharedSim>` for each `Runner<SimDevice>`: the device locked for each call.
macro_rules! on_shared {
    ($($runner:ty),*) => {$(
        runner_via!($runner, SharedSim, |r, d| (r, &mut d.lock())
            fn concurrency(&self) -> Concurrency {
                <Self as Runner<SimDevice>>::concurrency(self)
            }
        );
    )*};
}

on_shared!(SimRunner, OffLaneRunner);
