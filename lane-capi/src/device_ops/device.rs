//! [`TableDevice`]: the lane's `lane_driver::Device` over the runtime's table, one entry per call.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use backend_acl::StreamIds;
use core::ffi::c_void;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, HostPtr, LaunchContext, PinnedCopies,
};

use super::binding::TableBinding;
use super::handles::{Domain, Issued, Refused, inside, pointer, value};
use super::waiter::TableWaiter;
use super::{DeviceOps, Entries, INTERNAL_ERROR, PinnedEntries};

/// The lane's `Device` over the runtime's table (`RUN_LANE_BACKEND_DEVICE_OPS`): one entry per
/// call, each handle looked up before it reaches the table, the calling thread bound first.
#[derive(Debug)]
pub struct TableDevice {
    table: TableBinding,
    /// The logical device id fault notices name (`RunLaneConfig::device_id`).
    device_id: i32,
    /// The lane's clock starts here.
    epoch: Instant,
    /// The runtime's text about the last failed call, or why a handle was refused.
    pub(super) message: Option<String>,
    /// Pinned host allocations since the last reset: base -> size. The lane reads and writes
    /// only inside one; a reset forgets them.
    pub(super) pinned: BTreeMap<u64, usize>,
    /// The ids (`stream_id`) of the live streams and of those that died recently (L-19).
    stream_ids: StreamIds,
}

impl TableDevice {
    /// The device `ops` drive as logical device `device_id`, bound on the calling thread (the
    /// lane thread) as a check that the table works.
    ///
    /// # Errors
    ///
    /// `bind`'s code, with the runtime's text about it.
    pub fn open(ops: DeviceOps, device_id: i32) -> Result<Self, (AclCode, Option<String>)> {
        let mut device = Self {
            table: TableBinding { ops, domain: Domain::of(ops.0.user, device_id) },
            device_id,
            epoch: Instant::now(),
            message: None,
            pinned: BTreeMap::new(),
            stream_ids: StreamIds::default(),
        };
        device.set_device().map_err(|code| (code, device.message.take()))?;
        Ok(device)
    }

    /// What the lane's other threads bind with and read text through.
    #[must_use]
    pub fn binding(&self) -> TableBinding {
        self.table.clone()
    }

    fn entries(&self) -> Entries {
        self.table.ops.0
    }

    fn clock(&self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// An entry's code as a result; on a failure the runtime's text about it, read now on this
    /// thread.
    fn check(&mut self, code: i32) -> Result<(), AclCode> {
        let failure = AclCode::from_raw(code);
        self.message = failure.and_then(|_| self.table.recent_error_message());
        failure.map_or(Ok(()), Err)
    }

    /// Binds the calling thread if it is not bound since the last reset.
    fn bind_thread(&mut self) -> Result<(), AclCode> {
        let bound = self.table.bind_if_needed();
        if bound.is_err() {
            self.message = self.table.recent_error_message();
        }
        bound
    }

    /// An entry on a bound thread.
    pub(super) fn bound_call(&mut self, call: impl FnOnce(&Entries) -> i32) -> Result<(), AclCode> {
        self.bind_thread()?;
        let code = call(&self.entries());
        self.check(code)
    }

    /// An entry on a bound thread whose handles `lookup` resolves first: a handle the device
    /// does not hold live is refused with its code and text, and no entry is called.
    fn bound_call_with<T>(
        &mut self,
        lookup: impl FnOnce(&Domain) -> Result<T, Refused>,
        call: impl FnOnce(&Entries, T) -> i32,
    ) -> Result<(), AclCode> {
        self.bind_thread()?;
        let raw = match lookup(&self.table.domain) {
            Ok(raw) => raw,
            Err(refused) => {
                self.message = Some(refused.message);
                return Err(refused.code);
            }
        };
        let code = call(&self.entries(), raw);
        self.check(code)
    }

    /// A create's handle, checked: never NULL, never one of `kind` the device holds live.
    fn new_handle(
        &mut self,
        entry: &str,
        handle: *mut c_void,
        live: impl FnOnce(&Issued) -> bool,
    ) -> Result<u64, AclCode> {
        if handle.is_null() {
            self.message = Some(format!(
                "the runtime's device table's {entry} returned 0 and a NULL handle; return a \
                 handle with 0, or a non-zero code"
            ));
            return Err(INTERNAL_ERROR);
        }
        let handle = value(handle);
        if live(&self.table.domain.issued()) {
            self.message = Some(format!(
                "the runtime's device table's {entry} returned {handle:#x}, which the lane \
                 already holds live; return a distinct handle for each create (the pair's two \
                 streams must differ)"
            ));
            return Err(INTERNAL_ERROR);
        }
        Ok(handle)
    }

    /// Takes a new stream's id while it is live (the number outlives the handle); without
    /// `stream_id`, or on a failed call, the stream has none.
    fn take_stream_id(&mut self, stream: StreamHandle) {
        let Some(stream_id) = self.entries().stream_id else {
            return;
        };
        let mut id: i32 = -1;
        // SAFETY: the table's entry with its `user`, a stream it just created, and a writable
        // int32_t.
        let code = unsafe { stream_id(self.entries().user, pointer(stream.0), &raw mut id) };
        if let (0, Ok(id)) = (code, u32::try_from(id)) {
            let now = self.clock();
            self.stream_ids.created(stream, id, now);
        }
    }

    /// `[ptr, ptr + len)` as a host pointer when it lies inside one pinned allocation made
    /// since the last reset; otherwise 100000, with a message, and nothing touched.
    pub(super) fn pinned_range(&mut self, ptr: HostPtr, len: usize) -> Result<*mut u8, AclCode> {
        if inside(&self.pinned, ptr.0, len) {
            return Ok(pointer(ptr.0).cast());
        }
        self.message = Some(format!(
            "host range {:#x}+{len} is not inside pinned memory from the table's malloc_host",
            ptr.0
        ));
        Err(AclCode::InvalidParam)
    }

    /// After a force reset, the table's or the runtime's own: every thread binds again, and
    /// every handle of the device (the other lanes' on it too) and every pinned allocation is
    /// forgotten, never destroyed; the streams' ids died with them (decision 0025).
    fn forget_the_reset_device(&mut self) {
        let domain = &self.table.domain;
        domain.resets.fetch_add(1, Ordering::AcqRel);
        *domain.issued_mut() = Issued::default();
        self.pinned.clear();
        let now = self.clock();
        self.stream_ids.reset(now);
    }

    /// The pinned entries, or 207000 for a table without them.
    pub(super) fn pinned_entries(&mut self) -> Result<PinnedEntries, AclCode> {
        self.entries().pinned.ok_or_else(|| {
            self.message = Some(
                "the runtime's device table has no pinned-copy entries (malloc_host and its \
                 three partners)"
                    .to_owned(),
            );
            AclCode::RtFeatureNotSupport
        })
    }

    /// An async copy between a device range and a checked pinned range on `stream`.
    pub(super) fn memcpy_async(
        &mut self,
        (host, device): (HostPtr, DevicePtr),
        len: usize,
        to_device: bool,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        let entries = self.pinned_entries()?;
        let host = self.pinned_range(host, len)?.cast::<c_void>();
        let lookup = |domain: &Domain| Ok((domain.range(device, len)?, domain.stream(stream)?));
        self.bound_call_with(lookup, |e, (device, stream)| {
            let (entry, dst, src) = if to_device {
                (entries.to_device_async, device, host.cast_const())
            } else {
                (entries.from_device_async, host, device.cast_const())
            };
            // SAFETY: the table's entry with its `user`; the host side lies inside a live pinned
            // allocation (checked), which the lane frees only after an event proved the copy
            // finished; the device range and the stream are live (looked up).
            unsafe { entry(e.user, dst, src, len, stream) }
        })
    }
}

impl Device for TableDevice {
    fn now(&mut self) -> Timestamp {
        self.clock()
    }

    /// `bind` on the calling thread, whether or not it is bound (recovery binds between reset
    /// attempts, L-20); nothing without the entry.
    fn set_device(&mut self) -> Result<(), AclCode> {
        let bound = self.table.bind();
        self.message = bound.map_or_else(|_| self.table.recent_error_message(), |()| None);
        bound
    }

    /// Nothing to drain without `synchronize_device` (its result proves nothing either way).
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        let Some(drain) = self.entries().synchronize_device else {
            return Ok(());
        };
        // SAFETY: the table's entry with its `user` and a plain value.
        self.bound_call(|e| unsafe { drain(e.user, timeout_ms) })
    }

    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        let Some(reset) = self.entries().reset_device_force else {
            self.message = Some(
                "the runtime's device table has no reset_device_force: the runtime recovers its \
                 device itself (RUN_LANE_RECOVERY_RUNTIME)"
                    .to_owned(),
            );
            return Err(AclCode::RtFeatureNotSupport);
        };
        // No bind first, as on ACL: a poisoned device may refuse the bind, and the reset names
        // its device through `user`.
        // SAFETY: the table's entry with its `user`; no other entry of this lane is in flight
        // (L-20: recovery waits for the waiter's call to return).
        let code = unsafe { reset(self.entries().user) };
        // Whatever it returned, every handle of the device is dead and every thread must bind
        // again: forgotten, never destroyed or touched.
        self.forget_the_reset_device();
        self.check(code)
    }

    /// The runtime reset the device itself (it owns recovery, L-24): every handle and every
    /// thread's binding is forgotten as after the table's own reset, with no entry called.
    fn adopt_reset(&mut self) {
        self.forget_the_reset_device();
    }

    fn own_probe(&mut self) -> Result<(), AclCode> {
        let Some(probe) = self.entries().probe else {
            return Ok(());
        };
        // SAFETY: the table's entry with its `user`.
        self.bound_call(|e| unsafe { probe(e.user) })
    }

    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        let mut stream: *mut c_void = core::ptr::null_mut();
        // SAFETY: the table's entry with its `user` and a writable handle slot.
        self.bound_call(|e| unsafe { (e.create_stream)(e.user, &raw mut stream) })?;
        let value = self.new_handle("create_stream", stream, |issued| {
            issued.streams.contains(&value(stream))
        })?;
        self.table.domain.issued_mut().streams.insert(value);
        let handle = StreamHandle(value);
        self.take_stream_id(handle);
        Ok(handle)
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.stream(stream),
            // SAFETY: the table's entry with its `user` and a stream it holds live (looked up).
            |e, s| unsafe { (e.destroy_stream)(e.user, s) },
        )?;
        self.table.domain.issued_mut().streams.remove(&stream.0);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.stream(stream),
            // SAFETY: the table's entry with its `user` and a stream it holds live (looked up).
            |e, s| unsafe { (e.destroy_stream_force)(e.user, s) },
        )?;
        self.table.domain.issued_mut().streams.remove(&stream.0);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        let mut event: *mut c_void = core::ptr::null_mut();
        // SAFETY: the table's entry with its `user` and a writable handle slot.
        self.bound_call(|e| unsafe { (e.create_event)(e.user, &raw mut event) })?;
        let value =
            self.new_handle("create_event", event, |issued| issued.events.contains(&value(event)))?;
        self.table.domain.issued_mut().events.insert(value);
        Ok(EventHandle(value))
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        let lookup = |domain: &Domain| Ok((domain.event(event)?, domain.stream(stream)?));
        // SAFETY: the table's entry with its `user`, an event and a stream it holds live.
        self.bound_call_with(lookup, |e, (ev, s)| unsafe { (e.record_event)(e.user, ev, s) })
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.event(event),
            // SAFETY: the table's entry with its `user` and an event it holds live.
            |e, ev| unsafe { (e.synchronize_event)(e.user, ev, timeout_ms) },
        )
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let Some(query) = self.entries().query_event else {
            return Err(AclCode::RtFeatureNotSupport);
        };
        let mut complete = false;
        self.bound_call_with(
            |domain| domain.event(event),
            // SAFETY: the table's entry with its `user`, an event it holds live and a writable
            // bool.
            |e, ev| unsafe { query(e.user, ev, &raw mut complete) },
        )?;
        Ok(complete)
    }

    /// `true` when the table has an `event_timestamp` entry.
    fn event_timestamps(&self) -> bool {
        self.entries().event_timestamp.is_some()
    }

    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let Some(timestamp) = self.entries().event_timestamp else {
            return Err(AclCode::RtFeatureNotSupport);
        };
        let mut ns = 0_u64;
        self.bound_call_with(
            |domain| domain.event(event),
            // SAFETY: the table's entry with its `user`, an event it holds live and a writable
            // u64.
            |e, ev| unsafe { timestamp(e.user, ev, &raw mut ns) },
        )?;
        Ok(ns)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.stream(stream),
            // SAFETY: the table's entry with its `user` and a stream it holds live.
            |e, s| unsafe { (e.synchronize_stream)(e.user, s, timeout_ms) },
        )
    }

    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.event(event),
            // SAFETY: the table's entry with its `user` and an event it holds live.
            |e, ev| unsafe { (e.destroy_event)(e.user, ev) },
        )?;
        self.table.domain.issued_mut().events.remove(&event.0);
        Ok(())
    }

    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: the table's entry with its `user`, a plain size and a writable pointer slot.
        self.bound_call(|e| unsafe { (e.malloc)(e.user, size, &raw mut ptr) })?;
        let base =
            self.new_handle("malloc", ptr, |issued| {
                // Overlapping a live allocation: the two could not be told apart.
                let base = value(ptr);
                let end = base.saturating_add(size as u64);
                issued.allocations.range(..end).next_back().is_some_and(|(&other, &other_size)| {
                    other.saturating_add(other_size as u64) > base
                })
            })?;
        self.table.domain.issued_mut().allocations.insert(base, size);
        Ok(DevicePtr(base))
    }

    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.allocation(ptr),
            // SAFETY: the table's entry with its `user` and the start of a live allocation.
            |e, p| unsafe { (e.free)(e.user, p) },
        )?;
        self.table.domain.issued_mut().allocations.remove(&ptr.0);
        Ok(())
    }

    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.bound_call_with(
            |domain| domain.range(dst, src.len()),
            // SAFETY: the table's entry with its `user`; `src` is readable for its length and
            // `[dst, dst + len)` lies inside a live allocation (looked up).
            |e, dst| unsafe { (e.memcpy_to_device)(e.user, dst, src.as_ptr().cast(), src.len()) },
        )
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        self.bound_call_with(
            |domain| domain.range(src, len),
            // SAFETY: the table's entry with its `user`; `dst` is writable for its length and
            // `[src, src + len)` lies inside a live allocation (looked up).
            |e, src| unsafe {
                (e.memcpy_from_device)(e.user, dst.as_mut_ptr().cast(), src.cast_const(), len)
            },
        )
    }

    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        let lookup = |domain: &Domain| Ok((domain.stream(stream)?, domain.event(event)?));
        // SAFETY: the table's entry with its `user`, a stream and an event it holds live.
        self.bound_call_with(lookup, |e, (s, ev)| unsafe { (e.stream_wait_event)(e.user, s, ev) })
    }

    /// The runtime's device attributes nothing to runs: ignored.
    fn launch_context(&mut self, _context: Option<LaunchContext>) {}

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        self.entries().pinned.is_some().then_some(self as &mut dyn PinnedCopies)
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take()
    }

    /// A waiter sharing this device's table, handles and clock; it binds its own thread.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(TableWaiter { table: self.table.clone(), epoch: self.epoch, refused: None }))
    }

    /// A notice concerns the device when it names the config's device id and a stream id
    /// `stream_id` gave (live, or dead less than the late-notice bound ago; backend-acl's rule,
    /// decision 0025). Without `stream_id` no notice does.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        u32::try_from(self.device_id).is_ok_and(|device| device == notice.device)
            && self.stream_ids.concerns(notice.stream_id, self.clock())
    }
}
