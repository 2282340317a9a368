//! The simulated device in a lane service: [`SharedSim`], one [`SimDevice`] shared by the
//! lane thread and the service's completion waiter thread.
//!
//! lane-service makes every blocking wait of a lane on a completion waiter thread of its own
//! (`Device::completion_waiter`), so the lane thread never blocks in one (SPEC L-16). On the
//! simulator both threads call the one device model, so it sits behind a mutex: each call
//! takes it for its duration, and the device's virtual host clock is the one clock both read
//! (a waiter's wait moves it to the run's completion, as a blocking wait on the lane thread
//! did). The single-thread `Driver` keeps using [`SimDevice`] itself, deterministically; a
//! service on the simulator is as deterministic as the real-time order of its commands.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, HostPtr, LaunchContext, PinnedCopies,
    PrepareError, RunArgs, Runner,
};

use crate::device::{SimDevice, SimRunner};
use crate::workers::OffLaneRunner;

/// A [`SimDevice`] shared by a lane service's lane thread and completion waiter: the
/// `Device` to give `lane_service::spawn` on the simulator. Every call locks the device for
/// its duration; [`SharedSim::lock`] reaches it between calls (to install a fault, read its
/// counters).
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
    fn now(&mut self) -> Timestamp {
        self.lock().now()
    }
    fn set_device(&mut self) -> Result<(), AclCode> {
        self.lock().set_device()
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.lock().synchronize_device(timeout_ms)
    }
    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        self.lock().reset_device_force()
    }
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        self.lock().create_stream()
    }
    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.lock().destroy_stream(stream)
    }
    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.lock().destroy_stream_force(stream)
    }
    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        self.lock().create_event()
    }
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        self.lock().record_event(event, stream)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.lock().synchronize_event(event, timeout_ms)
    }
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        self.lock().query_event(event)
    }
    fn event_timestamps(&self) -> bool {
        self.lock().event_timestamps()
    }
    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        self.lock().event_timestamp(event)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.lock().synchronize_stream(stream, timeout_ms)
    }
    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.lock().destroy_event(event)
    }
    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.lock().malloc(size)
    }
    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.lock().free(ptr)
    }
    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.lock().memcpy_to_device(dst, src)
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.lock().memcpy_from_device(dst, src)
    }
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.lock().stream_wait_event(stream, event)
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.lock().recent_error_message()
    }

    /// The same device, from the waiter's thread: nothing to bind (the simulator has no
    /// per-thread context).
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(SimWaiter(self.clone())))
    }

    fn launch_context(&mut self, context: Option<LaunchContext>) {
        self.lock().launch_context(context);
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for SharedSim {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        self.lock().malloc_host(size)
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        self.lock().free_host(ptr)
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.lock().memcpy_to_device_async(dst, src, len, stream)
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.lock().memcpy_from_device_async(dst, src, len, stream)
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        self.lock().write_host(dst, src)
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        self.lock().read_host(dst, src)
    }
}

/// The completion waiter on a [`SharedSim`]: its waits are the device model's own.
#[derive(Debug)]
struct SimWaiter(SharedSim);

/// Its calls may land between a run's AICore and AICPU launches on the lane thread (the
/// launch pair is two calls, each taking the lock); the device orphans a kernel only when
/// its launch context ends, so they need nothing special.
impl CompletionWaiter for SimWaiter {
    fn now(&mut self) -> Timestamp {
        self.0.now()
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_event(event, timeout_ms)
    }
    /// The device's own look, under the lock (a caller's `poll` on a lane it drives).
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        self.0.query_event(event)
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_stream(stream, timeout_ms)
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.0.memcpy_from_device(dst, src)
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.0.synchronize_device(timeout_ms)
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.0.recent_error_message()
    }
}

/// Implements `Runner<SharedSim>` for a `Runner<SimDevice>` by locking the device for each
/// call.
macro_rules! on_shared {
    ($runner:ty) => {
        impl Runner<SharedSim> for $runner {
            fn prepare_run(
                &mut self,
                device: &mut SharedSim,
                run: RunId,
                slot: SlotId,
                diagnostics: bool,
            ) -> Result<(), PrepareError> {
                <Self as Runner<SimDevice>>::prepare_run(
                    self,
                    &mut device.lock(),
                    run,
                    slot,
                    diagnostics,
                )
            }
            fn launch_aicore(
                &mut self,
                device: &mut SharedSim,
                stream: StreamHandle,
                args: &RunArgs,
            ) -> Result<(), ReturnCode> {
                <Self as Runner<SimDevice>>::launch_aicore(self, &mut device.lock(), stream, args)
            }
            fn launch_aicpu(
                &mut self,
                device: &mut SharedSim,
                stream: StreamHandle,
                args: &RunArgs,
            ) -> Result<(), ReturnCode> {
                <Self as Runner<SimDevice>>::launch_aicpu(self, &mut device.lock(), stream, args)
            }
            fn finalise_run(
                &mut self,
                device: &mut SharedSim,
                run: RunId,
                slot: SlotId,
                copy_back: bool,
            ) -> Result<(), FinaliseFailure> {
                <Self as Runner<SimDevice>>::finalise_run(
                    self,
                    &mut device.lock(),
                    run,
                    slot,
                    copy_back,
                )
            }
            fn upload_code(
                &mut self,
                device: &mut SharedSim,
                code: CodeRef,
            ) -> Result<(), ReturnCode> {
                <Self as Runner<SimDevice>>::upload_code(self, &mut device.lock(), code)
            }
            fn concurrency(&self) -> lane_driver::Concurrency {
                <Self as Runner<SimDevice>>::concurrency(self)
            }
        }
    };
}

on_shared!(SimRunner);
on_shared!(OffLaneRunner);
