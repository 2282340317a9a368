//! The [`Device`] and [`PinnedCopies`] impls: the stream, event, memory, copy and recovery
//! calls, each one call on the model with its host cost, its trace record, and the
//! simulator's checks (a dead handle, a destroy with queued work, a free under a task that
//! still uses the buffer, each a broken invariant).

use device_model::faults::Site;
use device_model::{CallError, CopySpec, Dead, EventState, HostMemory, Place, RecordRun, SlotRead};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{RunId, Timestamp};
use lane_driver::{
    Device, DevicePtr, EventHandle, HostPtr, LaunchContext, LaunchStage, PinnedCopies,
};

use super::{DeviceFailure, HostTime, Named, SimDevice, TaskTrace};
use crate::costs::Cost;
use crate::faults::Injected;
use crate::trace::Record;

/// `aclrtMalloc` rounds up to 32 bytes and adds 32 bytes of padding (ascend-cl.md §2.5).
const MALLOC_ALIGN: u64 = 32;

/// Nanoseconds in `timeout_ms` (`None`: -1, forever).
fn timeout_ns(timeout_ms: i32) -> Option<u64> {
    u64::try_from(timeout_ms).ok().map(|ms| ms.saturating_mul(1_000_000))
}

impl SimDevice {
    /// A model call's error: a dead handle is a broken invariant (and 107017), a code the
    /// call's return.
    fn refused(&mut self, call: &str, error: CallError) -> AclCode {
        match error {
            CallError::Code(code) => code,
            CallError::Dead(Dead::Stream(h)) => self.dead_handle(call, "stream", h),
            CallError::Dead(Dead::Event(h)) => self.dead_handle(call, "event", h),
            CallError::Dead(Dead::Memory(h)) => self.dead_handle(call, "buffer", h),
        }
    }

    /// `aclrtDestroyStream` (`force` false: queued work is a violation) or
    /// `aclrtDestroyStreamForce` (`force` true: queued work is dropped with the stream).
    fn destroy_stream_call(&mut self, stream: StreamHandle, force: bool) -> Result<(), AclCode> {
        let name = if force { "destroy_stream_force" } else { "destroy_stream" };
        self.call(
            name,
            Cost::StreamDestroy,
            Named::Run(None),
            |d, start| {
                let queued = d.model.stream_busy(stream.0) == Some(true);
                d.model.destroy_stream(stream.0, start).map_err(|e| d.refused(name, e))?;
                if queued && !force {
                    d.violation(format!(
                        "stream h{} destroyed at {start} ns with queued work",
                        stream.0
                    ));
                }
                if queued && force {
                    d.journal.push(|| Record::Note {
                        at_ns: start,
                        text: format!(
                            "stream h{} force-destroyed: its queued work dropped",
                            stream.0
                        ),
                    });
                }
                Ok(())
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// `aclrtStreamQuery`: whether every task on the stream has finished. As on hardware it
    /// reports no error, not even a faulted stream's sticky code (device-truth §1: a query of a
    /// drained faulted stream returns 0); [`Device::synchronize_stream`] is the call that
    /// materializes it.
    ///
    /// [`Device::synchronize_stream`]: lane_driver::Device::synchronize_stream
    pub fn query_stream(&mut self, stream: StreamHandle) -> Result<bool, AclCode> {
        self.call(
            "query_stream",
            Cost::EventQuery,
            Named::Run(None),
            |d, _| match d.model.stream_busy(stream.0) {
                None => Err(d.dead_handle("query_stream", "stream", stream.0)),
                Some(busy) => Ok(!busy),
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// The trace record of an event-record task, completed when the stream passes it.
    pub(super) fn record_event_task(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
        run: Option<RunId>,
        recorded_ns: u64,
        tag: u64,
    ) {
        self.push_task(tag, |_| Record::EventTask {
            stream: stream.0,
            event: event.0,
            run: run.map(|r| r.0),
            recorded_ns,
            complete_ns: None,
        });
    }

    /// A drain the host started at `now` ended at `t`: the host blocked until then and woke
    /// (if it had to wait), and sees the device as it is.
    fn drained_at(&mut self, t: u64, now: u64) {
        if t > now {
            self.block_ns(t - now, None);
            self.spend(Cost::HostWakeup);
        }
        self.settle();
    }

    /// Blocks on an event's capture for at most `timeout_ms`.
    fn wait_for_event(
        &mut self,
        event: EventHandle,
        timeout_ms: i32,
        run: Option<RunId>,
    ) -> Result<(), AclCode> {
        let now = self.host_ns;
        let query = self.costs.get(Cost::EventQuery);
        match self.model.event_state(event.0) {
            Some(EventState::Failed(code)) => {
                self.spend_ns(query, run);
                return Err(code);
            }
            // Never recorded, or passed: success at once (ascend-cl.md §2.4).
            Some(EventState::Complete) => {
                self.spend_ns(query, run);
                return Ok(());
            }
            _ => {}
        }
        let limit = timeout_ns(timeout_ms);
        let id = event.0;
        let passed = self.run_until(limit.map(|l| now.saturating_add(l)), |m| {
            m.event_state(id) != Some(EventState::NotReady)
        });
        match (passed, limit) {
            (Some(t), _) => {
                self.block_ns(t.saturating_sub(now), run);
                self.spend_ns(self.costs.get(Cost::HostWakeup), run);
                match self.model.event_state(id) {
                    Some(EventState::Failed(code)) => Err(code),
                    _ => Ok(()),
                }
            }
            (None, Some(limit)) => {
                self.block_ns(limit, run);
                Err(AclCode::RtEventSyncTimeout)
            }
            (None, None) => {
                self.fail(DeviceFailure::Deadlock(format!(
                    "the host waits without a timeout on event e{} whose stream never passes it",
                    event.0
                )));
                Err(AclCode::RtEventSyncTimeout)
            }
        }
    }

    /// The address of an allocation of `size` bytes after the model's checks: the next one,
    /// aligned, with a guard gap so neighbouring allocations never touch.
    fn next_address(next: &mut u64, size: usize) -> u64 {
        let ptr = *next;
        let size = u64::try_from(size).unwrap_or(u64::MAX);
        *next = ptr.saturating_add(size.div_ceil(MALLOC_ALIGN) * MALLOC_ALIGN + MALLOC_ALIGN);
        ptr
    }

    /// `aclrtMemcpyAsync` from or to pinned memory: enqueues a copy task on `stream` (its
    /// bytes move when it runs) and records it in the trace.
    fn copy_call(
        &mut self,
        name: &'static str,
        stream: StreamHandle,
        copy: CopySpec,
        what: &'static str,
        detail: impl FnOnce() -> String,
    ) -> Result<(), AclCode> {
        self.call(
            name,
            Cost::CopyEnqueue,
            Named::Effect,
            |d, _| {
                let tag = d.new_tag();
                d.model
                    .enqueue_copy(stream.0, copy, &d.host_memory, false, tag, d.host_ns)
                    .map_err(|e| d.refused(name, e))?;
                d.tasks.insert(tag, TaskTrace::default());
                let enqueued_ns = d.host_ns;
                d.push_task(tag, |run| Record::CopyTask {
                    stream: stream.0,
                    what,
                    len: copy.len,
                    run: run.map(|r| r.0),
                    enqueued_ns,
                    span: None,
                });
                Ok(())
            },
            |_| detail(),
        )
    }
}

/// A pinned host buffer as a copy's end.
const fn pinned(addr: u64) -> Place {
    Place::Host { addr, pinned: true }
}

impl Device for SimDevice {
    fn now(&mut self) -> Timestamp {
        Timestamp(self.host_ns)
    }

    /// `aclrtSetDevice`: the bind (the `probe` fault site: the recovery probe's bind, and a
    /// host worker's, whose job then goes back to the lane thread).
    fn set_device(&mut self) -> Result<(), AclCode> {
        self.call(
            "set_device",
            Cost::SetDevice,
            Named::Run(None),
            |d, _| match d.model.decide(Site::Probe, None) {
                Some(Injected::Fail(code)) => Err(code),
                _ => Ok(()),
            },
            |_| String::new(),
        )
    }

    /// `aclrtSynchronizeDeviceWithTimeout`: the drain. Waits for every stream's tasks to end,
    /// then returns the device's sticky fault; 507046 if they do not end in time.
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.call(
            "synchronize_device",
            Cost::SynchronizeDevice,
            Named::Run(None),
            |d, _| {
                let limit = timeout_ns(timeout_ms).unwrap_or(0);
                let now = d.host_ns;
                let drained = if d.model.all_idle() {
                    Some(now)
                } else {
                    d.run_until(Some(now.saturating_add(limit)), device_model::Device::all_idle)
                };
                match drained {
                    Some(t) => {
                        d.drained_at(t, now);
                        d.model.device_code(d.host_ns)
                    }
                    None => {
                        d.block_ns(limit, None);
                        Err(AclCode::RtStreamSyncTimeout)
                    }
                }
            },
            |_| format!("timeout {timeout_ms} ms"),
        )
    }

    /// `aclrtResetDeviceForce`: unless its fault site fails it, drops every stream, event,
    /// buffer (pinned ones too), queued task and live run, kills the running kernels and
    /// clears the sticky fault.
    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        self.call(
            "reset_device_force",
            Cost::ResetDevice,
            Named::Run(None),
            |d, _| {
                let at = d.host_ns;
                let reclaimed = d.model.force_reset(at)?;
                d.absorb_notes();
                // Pinned memory belongs to the context a force reset tears down.
                d.host_memory.0.clear();
                d.binary_loaded = false;
                d.live_runs.clear();
                d.run_ends.clear();
                d.resets += 1;
                d.journal.kill_open_kernels(at);
                d.journal.push(|| Record::Note {
                    at_ns: at,
                    text: format!(
                        "device reset: {} streams, {} events and {} buffers dropped; running kernels killed",
                        reclaimed.streams, reclaimed.events, reclaimed.allocations
                    ),
                });
                Ok(())
            },
            |_| String::new(),
        )
    }

    /// `aclrtCreateStreamWithConfig`: a new stream, empty from now on.
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        self.call(
            "create_stream",
            Cost::StreamCreate,
            Named::Run(None),
            |d, _| {
                let handle = d.next_stream;
                d.model.create_stream(handle, d.host_ns)?;
                d.next_stream += 1;
                Ok(StreamHandle(handle))
            },
            |result| result.map(|h| format!("-> h{}", h.0)).unwrap_or_default(),
        )
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, false)
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.destroy_stream_call(stream, true)
    }

    /// `aclrtCreateEventExWithFlag`: a new event, never recorded.
    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        self.call(
            "create_event",
            Cost::EventCreate,
            Named::Run(None),
            |d, _| {
                let handle = d.next_event;
                d.model.create_event(handle, true, d.host_ns)?;
                d.next_event += 1;
                Ok(EventHandle(handle))
            },
            |result| result.map(|h| format!("-> e{}", h.0)).unwrap_or_default(),
        )
    }

    /// `aclrtRecordEvent`: the event captures the stream's tasks so far; a record in a run's
    /// `Kernels` stage is that run's.
    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        // The "armed" record belongs to the arm, before its run's kernels: no run, and no
        // record fault (those name the run's fence records, as on the synchronous path).
        let armed = self.launch.is_some_and(|c| c.stage == LaunchStage::Arm);
        let run = self.launch.filter(|c| c.stage == LaunchStage::Kernels).map(|c| c.run);
        self.call(
            "record_event",
            Cost::EventRecord,
            Named::Run(run),
            |d, start| {
                let tag = d.new_tag();
                let attribution =
                    if armed { RecordRun::Armed } else { RecordRun::Known(run.map(|r| r.0)) };
                d.model
                    .record_event(event.0, stream.0, attribution, tag, d.host_ns)
                    .map_err(|e| d.refused("record_event", e))?;
                d.tasks.insert(tag, TaskTrace::default());
                // A record on the stream of an AICore kernel waiting for its partner (only ever
                // in its launch: the launch's end orphans it) is that run's `core_done` (L-5):
                // recorded in the trace beside the run's kernels.
                if let Some(pending) = d.pending_core.as_mut().filter(|p| p.stream == stream) {
                    pending.core_done = Some((event, start, tag));
                    return Ok(());
                }
                d.record_event_task(stream, event, run, start, tag);
                Ok(())
            },
            |_| format!("e{} on h{}", event.0, stream.0),
        )
    }

    /// `aclrtSynchronizeEventWithTimeout`: the host blocks until the event's capture completes;
    /// never the device's sticky error.
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        // The wait's host time is billed to the run whose launch recorded the event.
        let run = self.model.event_run(event.0).map(RunId);
        self.call(
            "synchronize_event",
            HostTime::ByOutcome,
            Named::Run(run),
            |d, _| {
                let query = d.costs.get(Cost::EventQuery);
                if !d.model.has_event(event.0) {
                    d.spend_ns(query, run);
                    return Err(d.dead_handle("synchronize_event", "event", event.0));
                }
                if timeout_ms == 0 || timeout_ms < -1 {
                    d.spend_ns(query, run);
                    return Err(AclCode::RtParamInvalid);
                }
                if let Some(Injected::Fail(code)) =
                    d.model.decide(Site::EventWait, run.map(|r| r.0))
                {
                    d.spend_ns(query, run);
                    return Err(code);
                }
                d.wait_for_event(event, timeout_ms, run)
            },
            |_| format!("e{} timeout {timeout_ms} ms", event.0),
        )
    }

    /// `aclrtQueryEventStatus`: whether the event's capture has completed (or was never
    /// recorded), without waiting; the code of one that never can, as the fake answers. It
    /// decides no `event-wait` rule: only a blocking wait does, on the fake as here.
    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        // The look's host time is billed to the run whose launch recorded the event.
        let run = self.model.event_run(event.0).map(RunId);
        self.call(
            "query_event",
            Cost::EventQuery,
            Named::Run(run),
            |d, _| match d.model.event_state(event.0) {
                None => Err(d.dead_handle("query_event", "event", event.0)),
                Some(EventState::Complete) => Ok(true),
                Some(EventState::NotReady) => Ok(false),
                Some(EventState::Failed(code)) => Err(code),
            },
            |result| match result {
                Ok(true) => format!("e{} -> complete", event.0),
                Ok(false) => format!("e{} -> not ready", event.0),
                Err(_) => format!("e{}", event.0),
            },
        )
    }

    fn event_timestamps(&self) -> bool {
        self.event_timestamps
    }

    /// `aclrtEventGetTimestamp`: the virtual time (ns) the event's record task passed; 107000
    /// for a live event whose capture has not completed, as on the fake.
    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let run = self.model.event_run(event.0).map(RunId);
        self.call(
            "event_timestamp",
            Cost::EventQuery,
            Named::Run(run),
            |d, _| match d.model.event_passed(event.0) {
                Some(Some(at)) => Ok(at),
                Some(None) | None if d.model.has_event(event.0) => Err(AclCode::RtParamInvalid),
                _ => Err(d.dead_handle("event_timestamp", "event", event.0)),
            },
            |result| match result {
                Ok(at) => format!("e{} -> {at} ns", event.0),
                Err(_) => format!("e{}", event.0),
            },
        )
    }

    /// `aclrtSynchronizeStreamWithTimeout`: waits for the stream's tasks to end, then returns
    /// its sticky code; 507046 if they do not end in time.
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.call(
            "synchronize_stream",
            HostTime::ByOutcome,
            Named::Effect,
            |d, _| {
                let Some(upto) = d.model.stream_submitted(stream.0) else {
                    d.spend(Cost::EventQuery);
                    return Err(d.dead_handle("synchronize_stream", "stream", stream.0));
                };
                // A zero timeout is refused (device-truth §1), as is any negative but -1
                // (forever).
                if timeout_ms == 0 || timeout_ms < -1 {
                    d.spend(Cost::EventQuery);
                    return Err(AclCode::RtParamInvalid);
                }
                d.spend(Cost::SynchronizeDevice);
                let now = d.host_ns;
                let limit = timeout_ns(timeout_ms);
                let id = stream.0;
                let drained = if d.model.stream_reached(id, upto) {
                    Some(now)
                } else {
                    d.run_until(limit.map(|l| now.saturating_add(l)), |m| {
                        m.stream_reached(id, upto)
                    })
                };
                match (drained, limit) {
                    (Some(t), _) => {
                        d.drained_at(t, now);
                        // The stream's sticky code, once its tasks have ended.
                        match d.model.stream_sticky(id, d.host_ns) {
                            Ok(None) => Ok(()),
                            Ok(Some(code)) => Err(code),
                            Err(e) => Err(d.refused("synchronize_stream", e)),
                        }
                    }
                    (None, Some(limit)) => {
                        d.block_ns(limit, None);
                        Err(AclCode::RtStreamSyncTimeout)
                    }
                    (None, None) => {
                        d.fail(DeviceFailure::Deadlock(format!(
                            "the host synchronizes stream h{} without a timeout and its tasks never end",
                            stream.0
                        )));
                        Err(AclCode::RtStreamSyncTimeout)
                    }
                }
            },
            |_| format!("h{} timeout {timeout_ms} ms", stream.0),
        )
    }

    /// `aclrtDestroyEvent`.
    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.call(
            "destroy_event",
            Cost::EventDestroy,
            Named::Run(None),
            |d, _| {
                if d.model.destroy_event(event.0) {
                    Ok(())
                } else {
                    Err(d.dead_handle("destroy_event", "event", event.0))
                }
            },
            |_| format!("e{}", event.0),
        )
    }

    /// `aclrtMalloc`: zeroed device memory.
    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        self.call(
            "malloc",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.model.check_malloc(size, d.host_ns)?;
                let ptr = Self::next_address(&mut d.next_ptr, size);
                d.model.allocate(ptr, size);
                Ok(DevicePtr(ptr))
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    /// `aclrtFree`: a buffer a queued kernel or copy still uses is a violation.
    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.call(
            "free",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                let in_use = d.model.free(ptr.0).map_err(|e| d.refused("free", e))?;
                if in_use {
                    d.violation(format!(
                        "{:#x} freed while a run's kernels will still write it",
                        ptr.0
                    ));
                }
                Ok(())
            },
            |_| format!("{:#x}", ptr.0),
        )
    }

    /// `aclrtMemcpy` host to device, synchronous: the arm (its fault site), or the record
    /// region's zeroing.
    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.call(
            "memcpy_h2d",
            Cost::WriteH2d,
            Named::Effect,
            |d, _| {
                d.model.write(dst.0, src, d.host_ns).map_err(|e| d.refused("memcpy_to_device", e))
            },
            |_| format!("{} B -> {:#x}", src.len(), dst.0),
        )
    }

    /// `aclrtMemcpy` device to host, synchronous: a live run's status read or record read
    /// (their fault sites).
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        self.call(
            "memcpy_d2h",
            Cost::ReadD2h,
            Named::Effect,
            |d, _| {
                // A read covering a live run's status header is that run's status read.
                if let Some(Some(run)) = d.model.slot_read(src.0, len, SlotRead::Header) {
                    d.check_timing_writer(RunId(run));
                }
                d.model.read(dst, src.0, d.host_ns).map_err(|e| d.refused("memcpy_from_device", e))
            },
            |_| format!("{len} B <- {:#x}", src.0),
        )
    }

    /// `aclrtStreamWaitEvent`: the stream's later tasks start once the event's capture has
    /// completed.
    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "stream_wait_event",
            Cost::StreamWait,
            Named::Effect,
            |d, start| {
                d.model
                    .stream_wait_event(stream.0, event.0, 0, start)
                    .map_err(|e| d.refused("stream_wait_event", e))
            },
            |_| format!("h{} waits e{}", stream.0, event.0),
        )
    }

    fn launch_context(&mut self, context: Option<LaunchContext>) {
        self.follow_launch_context(context);
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for SimDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        // Pinned memory is allocated like device memory, once per slot: a malloc fault fails
        // either allocation.
        self.call(
            "malloc_host",
            Cost::Malloc,
            Named::Run(None),
            |d, _| {
                d.model.check_malloc(size, d.host_ns)?;
                let ptr = Self::next_address(&mut d.next_host_ptr, size);
                d.host_memory.0.insert(HostPtr(ptr), vec![0; size]);
                Ok(HostPtr(ptr))
            },
            |result| match &result {
                Ok(p) => format!("{size} B -> host {:#x}", p.0),
                Err(_) => format!("{size} B"),
            },
        )
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        self.call(
            "free_host",
            Cost::Free,
            Named::Run(None),
            |d, _| {
                let Some(bytes) = d.host_memory.0.remove(&ptr) else {
                    return Err(d.dead_handle("free_host", "pinned buffer", ptr.0));
                };
                let end = ptr.0.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
                if d.model.host_in_use(&(ptr.0..end)) {
                    d.violation(format!(
                        "host {:#x} freed while a copy on a stream will still use it",
                        ptr.0
                    ));
                }
                Ok(())
            },
            |_| format!("host {:#x}", ptr.0),
        )
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        let copy = CopySpec { src: pinned(src.0), dst: Place::Device(dst.0), len };
        self.copy_call("memcpy_h2d_async", stream, copy, "arm h2d", || {
            format!("{len} B host {:#x} -> {:#x} on h{}", src.0, dst.0, stream.0)
        })
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        let copy = CopySpec { src: Place::Device(src.0), dst: pinned(dst.0), len };
        self.copy_call("memcpy_d2h_async", stream, copy, "readback d2h", || {
            format!("{len} B {:#x} -> host {:#x} on h{}", src.0, dst.0, stream.0)
        })
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        // Plain host memory: no call, no cost; settle first so the order with copy tasks holds.
        self.settle();
        self.host_memory.write(dst.0, src, true)
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        // The host sees a copy task's bytes once its clock has passed the task's end.
        self.settle();
        let bytes = self.host_memory.region(src, dst.len()).ok_or(AclCode::RtParamInvalid)?;
        dst.copy_from_slice(bytes);
        Ok(())
    }
}
