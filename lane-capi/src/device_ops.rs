//! The device the runtime supplies (SPEC L-22): a [`RunLaneDeviceOps`] table as the lane's
//! `Device`, for `RUN_LANE_BACKEND_DEVICE_OPS`.
//!
//! [`DeviceOps::new`] validates the C table once, at `run_lane_create`: a missing required
//! entry is refused there, by name. [`TableDevice`] then makes each `lane_driver::Device`
//! call through one entry, [`TableWaiter`] the completion waiter's calls (on the waiter's own
//! thread), and [`TableBinding`] binds host workers and reads a failed callback's text.
//!
//! **Handles.** The table's `void *` values are the lane's handles. Every value an entry
//! returned is recorded, with the allocation's size for memory, in the table of its device
//! (devices whose tables share `user` and the device id are one device; the C ABI allows one
//! lane per device id anyway, L-25), until it is
//! destroyed, freed or killed by a force reset through any of them. Every call that hands one
//! to an entry looks it up first: a value the table did not issue, or no longer holds, is
//! refused with a code and a message, and no entry is called (`lane_driver::Device`'s
//! "Handles" contract). The stream value is what the runner's launch callbacks receive.
//!
//! **Threads.** A thread binds (`bind`) before its first entry and again after every force
//! reset of its device, tracked per thread as backend-acl tracks `aclrtSetDevice`. The device's
//! entries are called by the thread running the lane's steps; the waiter's by the completion
//! waiter, at the same time (the header's `RunLaneDeviceOps` doc is the contract).
//!
//! Which entries are required is [`REQUIRED_ENTRIES`]; `reset_device_force` is required unless
//! the runtime owns recovery ([`reset_entry_required`]).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
use std::time::Instant;

use backend_acl::StreamIds;
use core::ffi::{c_char, c_void};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, HostPtr, LaunchContext, PinnedCopies,
};

use crate::error::Error;
use crate::types::{RunLaneDeviceOps, RunLaneStatus};

/// An entry taking only `user` (`bind`, `reset_device_force`, `probe`).
type CallEntry = unsafe extern "C" fn(*mut c_void) -> i32;
/// An entry that makes a handle (`create_stream`, `create_event`).
type CreateEntry = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> i32;
/// An entry that takes one handle (the destroys, `free`, `free_host`).
type ReleaseEntry = unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32;
/// An entry that allocates (`malloc`, `malloc_host`).
type AllocEntry = unsafe extern "C" fn(*mut c_void, usize, *mut *mut c_void) -> i32;
/// An entry that orders an event and a stream (`record_event`, `stream_wait_event`).
type PairEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> i32;
/// A bounded wait on a handle (`synchronize_event`, `synchronize_stream`).
type WaitEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, i32) -> i32;
/// A synchronous copy (`memcpy_to_device`, `memcpy_from_device`).
type CopyEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize) -> i32;
/// A copy enqueued on a stream (`memcpy_to_device_async`, `memcpy_from_device_async`).
type CopyAsyncEntry =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void, usize, *mut c_void) -> i32;

/// The code of a create that returned success and a handle the lane cannot hold (NULL, or
/// one it holds live already): `ACL_ERROR_INTERNAL_ERROR`, as backend-acl answers a NULL
/// handle from a library. An unknown code to the classification: the device is poisoned and
/// recovered, since a table that breaks its contract is not trusted.
const INTERNAL_ERROR: AclCode = AclCode::Unknown(500_000);

/// The required entries of [`RunLaneDeviceOps`], by field name, with the ACL call each stands
/// for and what the lane needs it for; `reset_device_force` is checked apart
/// ([`reset_entry_required`]).
pub const REQUIRED_ENTRIES: [(&str, &str); 13] = [
    (
        "create_stream",
        "aclrtCreateStreamWithConfig: the lane's stream pair and recovery's probe",
    ),
    (
        "destroy_stream",
        "aclrtDestroyStream: the pair's teardown and the probe's stream",
    ),
    (
        "destroy_stream_force",
        "aclrtDestroyStreamForce: replacing a stale or errored stream of the pair",
    ),
    (
        "create_event",
        "aclrtCreateEventExWithFlag: each slot's completion events",
    ),
    ("destroy_event", "aclrtDestroyEvent: each slot's teardown"),
    (
        "record_event",
        "aclrtRecordEvent: each run's fences and its boundary",
    ),
    (
        "stream_wait_event",
        "aclrtStreamWaitEvent: the order inside a run and between runs",
    ),
    (
        "synchronize_event",
        "aclrtSynchronizeEventWithTimeout: each run's completion",
    ),
    (
        "synchronize_stream",
        "aclrtSynchronizeStreamWithTimeout: the device verdict of a run its record does not decide",
    ),
    ("malloc", "aclrtMalloc: each slot's device buffers"),
    ("free", "aclrtFree: each slot's teardown"),
    (
        "memcpy_to_device",
        "aclrtMemcpy host to device: each run's arm of its slot",
    ),
    (
        "memcpy_from_device",
        "aclrtMemcpy device to host: each run's result record and status header",
    ),
];

/// Whether a table without `reset_device_force` is refused. A lane that recovers in place
/// (drain, force reset, probe) needs the entry; a lane whose runtime owns recovery
/// (`RUN_LANE_RECOVERY_RUNTIME`, L-24) never resets, so the entry may be NULL there.
#[must_use]
pub const fn reset_entry_required(runtime_owns_recovery: bool) -> bool {
    !runtime_owns_recovery
}

/// `query_event`'s signature.
type QueryEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut bool) -> i32;
/// `stream_id`'s signature.
type StreamIdEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i32) -> i32;
/// `synchronize_device`'s signature.
type DrainEntry = unsafe extern "C" fn(*mut c_void, i32) -> i32;
/// `event_timestamp`'s signature.
type TimestampEntry = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut u64) -> i32;
/// `recent_error_message`'s signature.
type TextEntry = unsafe extern "C" fn(*mut c_void) -> *const c_char;

/// The copies on the streams: all four entries or none.
#[derive(Clone, Copy, Debug)]
struct PinnedEntries {
    malloc_host: AllocEntry,
    free_host: ReleaseEntry,
    to_device_async: CopyAsyncEntry,
    from_device_async: CopyAsyncEntry,
}

/// The table with its required entries present (no `Option` left to unwrap at a call).
#[derive(Clone, Copy, Debug)]
struct Entries {
    user: *mut c_void,
    bind: Option<CallEntry>,
    create_stream: CreateEntry,
    destroy_stream: ReleaseEntry,
    destroy_stream_force: ReleaseEntry,
    stream_id: Option<StreamIdEntry>,
    create_event: CreateEntry,
    destroy_event: ReleaseEntry,
    record_event: PairEntry,
    stream_wait_event: PairEntry,
    query_event: Option<QueryEntry>,
    synchronize_event: WaitEntry,
    synchronize_stream: WaitEntry,
    malloc: AllocEntry,
    free: ReleaseEntry,
    memcpy_to_device: CopyEntry,
    memcpy_from_device: CopyEntry,
    pinned: Option<PinnedEntries>,
    synchronize_device: Option<DrainEntry>,
    reset_device_force: Option<CallEntry>,
    probe: Option<CallEntry>,
    recent_error_message: Option<TextEntry>,
    event_timestamp: Option<TimestampEntry>,
}

/// A runtime's [`RunLaneDeviceOps`], validated: every required entry present, the pinned
/// entries all or none. Copied from the caller's table at `run_lane_create`.
#[derive(Clone, Copy, Debug)]
pub struct DeviceOps(Entries);

// SAFETY: the header's contract for `RunLaneDeviceOps`: its entries and `user` may be used from
// any of the lane's threads (the steps' thread and the completion waiter at once, host workers
// for `bind`) for the lane's life; moving and sharing the copy between them is what the caller
// agreed to.
unsafe impl Send for DeviceOps {}

// SAFETY: as for `Send`: every call through a shared copy follows the same contract.
unsafe impl Sync for DeviceOps {}

impl DeviceOps {
    /// Validates `table`: every entry of [`REQUIRED_ENTRIES`], `reset_device_force` unless
    /// `runtime_owns_recovery` ([`reset_entry_required`]), and the four pinned-copy entries
    /// together or not at all.
    ///
    /// # Errors
    ///
    /// `INVALID_CONFIG`, naming each missing entry, what the lane uses it for, and what to do.
    pub fn new(table: &RunLaneDeviceOps, runtime_owns_recovery: bool) -> Result<Self, Error> {
        let mut missing: Vec<(&str, &str)> = REQUIRED_ENTRIES
            .iter()
            .copied()
            .filter(|(name, _)| !required_entry_set(table, name))
            .collect();
        if table.reset_device_force.is_none() && reset_entry_required(runtime_owns_recovery) {
            missing.push((
                "reset_device_force",
                "aclrtResetDeviceForce: the lane recovers a poisoned device in place with a force \
                 reset; it is required unless the runtime owns recovery \
                 (recovery = RUN_LANE_RECOVERY_RUNTIME)",
            ));
        }
        if !missing.is_empty() {
            let list: Vec<String> = missing
                .iter()
                .map(|(name, why)| format!("device_ops.{name} ({why})"))
                .collect();
            return Err(invalid(format!(
                "RUN_LANE_BACKEND_DEVICE_OPS needs every required entry of RunLaneDeviceOps, and \
                 {} NULL: {}; set {}",
                if missing.len() == 1 {
                    "one is"
                } else {
                    "some are"
                },
                list.join(", "),
                if missing.len() == 1 { "it" } else { "them" }
            )));
        }
        let pinned = pinned_entries(table)?;
        let entries = (|| {
            Some(Entries {
                user: table.user,
                bind: table.bind,
                create_stream: table.create_stream?,
                destroy_stream: table.destroy_stream?,
                destroy_stream_force: table.destroy_stream_force?,
                stream_id: table.stream_id,
                create_event: table.create_event?,
                destroy_event: table.destroy_event?,
                record_event: table.record_event?,
                stream_wait_event: table.stream_wait_event?,
                query_event: table.query_event,
                synchronize_event: table.synchronize_event?,
                synchronize_stream: table.synchronize_stream?,
                malloc: table.malloc?,
                free: table.free?,
                memcpy_to_device: table.memcpy_to_device?,
                memcpy_from_device: table.memcpy_from_device?,
                pinned,
                synchronize_device: table.synchronize_device,
                reset_device_force: table.reset_device_force,
                probe: table.probe,
                recent_error_message: table.recent_error_message,
                event_timestamp: table.event_timestamp,
            })
        })();
        // Every required entry was checked above; a miss here is a gap between the two lists.
        entries.map(Self).ok_or_else(|| {
            invalid(
                "a required entry of RunLaneDeviceOps is NULL; set every entry the header marks \
                 Required"
                    .to_owned(),
            )
        })
    }

    /// Whether the table has the copies on the streams (`malloc_host` and its three partners).
    #[must_use]
    pub const fn has_pinned_copies(&self) -> bool {
        self.0.pinned.is_some()
    }

    /// The table's `user` pointer.
    #[must_use]
    pub const fn user(&self) -> *mut c_void {
        self.0.user
    }
}

/// Whether `table`'s required entry `name` (one of [`REQUIRED_ENTRIES`]) is set.
fn required_entry_set(table: &RunLaneDeviceOps, name: &str) -> bool {
    match name {
        "create_stream" => table.create_stream.is_some(),
        "destroy_stream" => table.destroy_stream.is_some(),
        "destroy_stream_force" => table.destroy_stream_force.is_some(),
        "create_event" => table.create_event.is_some(),
        "destroy_event" => table.destroy_event.is_some(),
        "record_event" => table.record_event.is_some(),
        "stream_wait_event" => table.stream_wait_event.is_some(),
        "synchronize_event" => table.synchronize_event.is_some(),
        "synchronize_stream" => table.synchronize_stream.is_some(),
        "malloc" => table.malloc.is_some(),
        "free" => table.free.is_some(),
        "memcpy_to_device" => table.memcpy_to_device.is_some(),
        "memcpy_from_device" => table.memcpy_from_device.is_some(),
        _ => false,
    }
}

/// The four pinned-copy entries, when all are set; none is fine; some is refused.
fn pinned_entries(table: &RunLaneDeviceOps) -> Result<Option<PinnedEntries>, Error> {
    match (
        table.malloc_host,
        table.free_host,
        table.memcpy_to_device_async,
        table.memcpy_from_device_async,
    ) {
        (Some(malloc_host), Some(free_host), Some(to_device_async), Some(from_device_async)) => {
            Ok(Some(PinnedEntries {
                malloc_host,
                free_host,
                to_device_async,
                from_device_async,
            }))
        }
        (None, None, None, None) => Ok(None),
        (malloc_host, free_host, to_device, from_device) => {
            let unset: Vec<&str> = [
                ("malloc_host", malloc_host.is_none()),
                ("free_host", free_host.is_none()),
                ("memcpy_to_device_async", to_device.is_none()),
                ("memcpy_from_device_async", from_device.is_none()),
            ]
            .iter()
            .filter(|(_, unset)| *unset)
            .map(|(name, _)| *name)
            .collect();
            Err(invalid(format!(
                "device_ops has some of the pinned-copy entries but not {}: malloc_host, \
                 free_host, memcpy_to_device_async and memcpy_from_device_async come together \
                 (the copies on the streams need all four); set all four or none",
                unset.join(", ")
            )))
        }
    }
}

fn invalid(message: String) -> Error {
    Error::new(RunLaneStatus::InvalidConfig, message)
}

/// The live handles of one device, each kind by its value (memory with its size).
#[derive(Debug, Default)]
struct Issued {
    streams: BTreeSet<u64>,
    events: BTreeSet<u64>,
    /// Allocation base -> size.
    allocations: BTreeMap<u64, usize>,
}

/// One device as the runtime's tables drive it: the lanes whose tables share `user` and whose
/// configs share the device id. A force reset through any of them kills every handle any of
/// them holds and unbinds every thread, as a reset does on ACL, so the issued handles and the
/// reset count are the device's, not one lane's.
#[derive(Debug)]
struct Domain {
    /// Process-unique, never 0: the thread-local binding names its device by it.
    serial: u64,
    /// Force resets made through this device's tables.
    resets: AtomicU64,
    /// Live handles; a lookup takes the read side (never held across an entry).
    issued: RwLock<Issued>,
}

impl Domain {
    /// The device of `user` and `device_id`: the one live already, or a new one. Kept only
    /// while a lane holds it, so a runtime that makes a `user` per lane leaves nothing behind.
    fn of(user: *mut c_void, device_id: i32) -> Arc<Self> {
        static DEVICES: Mutex<BTreeMap<(usize, i32), Weak<Domain>>> = Mutex::new(BTreeMap::new());
        static SERIALS: AtomicU64 = AtomicU64::new(0);
        let key = (user.addr(), device_id);
        let mut devices = DEVICES.lock().unwrap_or_else(PoisonError::into_inner);
        devices.retain(|_, device| device.strong_count() > 0);
        if let Some(device) = devices.get(&key).and_then(Weak::upgrade) {
            return device;
        }
        let device = Arc::new(Self {
            serial: SERIALS.fetch_add(1, Ordering::Relaxed) + 1,
            resets: AtomicU64::new(0),
            issued: RwLock::new(Issued::default()),
        });
        devices.insert(key, Arc::downgrade(&device));
        device
    }

    fn issued(&self) -> RwLockReadGuard<'_, Issued> {
        self.issued.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn issued_mut(&self) -> RwLockWriteGuard<'_, Issued> {
        self.issued.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn stream(&self, stream: StreamHandle) -> Result<*mut c_void, Refused> {
        if self.issued().streams.contains(&stream.0) {
            Ok(pointer(stream.0))
        } else {
            Err(refused(AclCode::RtInvalidHandle, "stream", stream.0))
        }
    }

    fn event(&self, event: EventHandle) -> Result<*mut c_void, Refused> {
        if self.issued().events.contains(&event.0) {
            Ok(pointer(event.0))
        } else {
            Err(refused(AclCode::RtInvalidHandle, "event", event.0))
        }
    }

    /// `ptr` when `[ptr, ptr + len)` lies inside one live allocation.
    fn range(&self, ptr: DevicePtr, len: usize) -> Result<*mut c_void, Refused> {
        if inside(&self.issued().allocations, ptr.0, len) {
            Ok(pointer(ptr.0))
        } else {
            Err(refused(AclCode::RtParamInvalid, "device range at", ptr.0))
        }
    }

    /// `ptr` when a live allocation starts there (what `free` takes).
    fn allocation(&self, ptr: DevicePtr) -> Result<*mut c_void, Refused> {
        if self.issued().allocations.contains_key(&ptr.0) {
            Ok(pointer(ptr.0))
        } else {
            Err(refused(AclCode::RtParamInvalid, "allocation", ptr.0))
        }
    }
}

/// Whether `[ptr, ptr + len)` lies inside one allocation of `allocations` (base -> size).
fn inside(allocations: &BTreeMap<u64, usize>, ptr: u64, len: usize) -> bool {
    allocations
        .range(..=ptr)
        .next_back()
        .is_some_and(|(&base, &size)| {
            usize::try_from(ptr - base)
                .ok()
                .and_then(|offset| offset.checked_add(len))
                .is_some_and(|end| end <= size)
        })
}

/// A handle value as the pointer the table gave (its provenance was exposed when it came in).
fn pointer(value: u64) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(usize::try_from(value).unwrap_or(usize::MAX))
}

/// A pointer the table gave as a handle value, its provenance exposed (pinned memory is read
/// and written through it again).
fn value(ptr: *mut c_void) -> u64 {
    ptr.expose_provenance() as u64
}

/// Why a handle was refused: its code and the text the device keeps for it.
#[derive(Debug)]
struct Refused {
    code: AclCode,
    message: String,
}

fn refused(code: AclCode, what: &str, value: u64) -> Refused {
    Refused {
        code,
        message: format!(
            "{what} {value:#x} is not one the runtime's device table returned and the lane still \
             holds (never returned, destroyed, or from before a force reset); refused before any \
             entry was called"
        ),
    }
}

thread_local! {
    /// The device ([`Domain::serial`]) this thread bound last through a table's `bind`, and
    /// that device's reset count then: one current device per thread, as ACL keeps. A force
    /// reset leaves it stale (its count is behind), so the next entry binds again.
    static BOUND: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// The runtime's table and its device, shared by the lane's device, its completion waiter and
/// its host workers: binds the calling thread, reads the runtime's text about a failed call.
#[derive(Clone, Debug)]
pub struct TableBinding {
    ops: DeviceOps,
    domain: Arc<Domain>,
}

impl TableBinding {
    fn entries(&self) -> &Entries {
        &self.ops.0
    }

    /// `bind` on the calling thread (nothing without the entry), noted with the device's reset
    /// count before the call, so a reset made meanwhile leaves the binding stale.
    ///
    /// # Errors
    ///
    /// `bind`'s code.
    pub fn bind(&self) -> Result<(), AclCode> {
        let Some(bind) = self.entries().bind else {
            return Ok(());
        };
        let resets = self.resets();
        // SAFETY: the table's `bind` with its `user`, on one of the lane's threads (the header's
        // contract for RunLaneDeviceOps).
        let code = unsafe { bind(self.entries().user) };
        AclCode::check(code)?;
        BOUND.with(|bound| bound.set(Some((self.domain.serial, resets))));
        Ok(())
    }

    /// [`TableBinding::bind`] unless the calling thread is bound to this device since its last
    /// force reset (one thread-local read).
    ///
    /// # Errors
    ///
    /// `bind`'s code.
    pub fn bind_if_needed(&self) -> Result<(), AclCode> {
        if self.entries().bind.is_none()
            || BOUND.with(Cell::get) == Some((self.domain.serial, self.resets()))
        {
            return Ok(());
        }
        self.bind()
    }

    /// How many force resets this device has had through its tables: a thread bound at a
    /// lower count binds again.
    #[must_use]
    pub fn resets(&self) -> u64 {
        self.domain.resets.load(Ordering::Acquire)
    }

    /// The runtime's text about the last failed entry or callback on this thread
    /// (`recent_error_message`), copied; `None` without the entry, for NULL or for "".
    #[must_use]
    pub fn recent_error_message(&self) -> Option<String> {
        let text = self.entries().recent_error_message?;
        // SAFETY: the table's entry with its `user`, on the thread whose failure it describes.
        let line = unsafe { text(self.entries().user) };
        if line.is_null() {
            return None;
        }
        // SAFETY: non-NULL, NUL-terminated and valid until this thread's next entry (the
        // header's contract), which cannot come before this copy returns.
        let line = unsafe { CStr::from_ptr(line) }.to_string_lossy();
        (!line.is_empty()).then(|| line.into_owned())
    }
}

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
    message: Option<String>,
    /// Pinned host allocations since the last reset: base -> size. The lane reads and writes
    /// only inside one; a reset forgets them.
    pinned: BTreeMap<u64, usize>,
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
            table: TableBinding {
                ops,
                domain: Domain::of(ops.0.user, device_id),
            },
            device_id,
            epoch: Instant::now(),
            message: None,
            pinned: BTreeMap::new(),
            stream_ids: StreamIds::default(),
        };
        match device.set_device() {
            Ok(()) => Ok(device),
            Err(code) => Err((code, device.message.take())),
        }
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
        match AclCode::from_raw(code) {
            None => {
                self.message = None;
                Ok(())
            }
            Some(failure) => {
                self.message = self.table.recent_error_message();
                Err(failure)
            }
        }
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
    fn bound_call(&mut self, call: impl FnOnce(&Entries) -> i32) -> Result<(), AclCode> {
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
    fn pinned_range(&mut self, ptr: HostPtr, len: usize) -> Result<*mut u8, AclCode> {
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
    fn pinned_entries(&mut self) -> Result<PinnedEntries, AclCode> {
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
    fn memcpy_async(
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
        match bound {
            Ok(()) => self.message = None,
            Err(_) => self.message = self.table.recent_error_message(),
        }
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
        let value = self.new_handle("create_event", event, |issued| {
            issued.events.contains(&value(event))
        })?;
        self.table.domain.issued_mut().events.insert(value);
        Ok(EventHandle(value))
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        let lookup = |domain: &Domain| Ok((domain.event(event)?, domain.stream(stream)?));
        // SAFETY: the table's entry with its `user`, an event and a stream it holds live.
        self.bound_call_with(lookup, |e, (ev, s)| unsafe {
            (e.record_event)(e.user, ev, s)
        })
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
        let base = self.new_handle("malloc", ptr, |issued| {
            // Overlapping a live allocation: the two could not be told apart.
            let base = value(ptr);
            let end = base.saturating_add(size as u64);
            issued
                .allocations
                .range(..end)
                .next_back()
                .is_some_and(|(&other, &other_size)| other.saturating_add(other_size as u64) > base)
        })?;
        self.table
            .domain
            .issued_mut()
            .allocations
            .insert(base, size);
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
        self.bound_call_with(lookup, |e, (s, ev)| unsafe {
            (e.stream_wait_event)(e.user, s, ev)
        })
    }

    /// The runtime's device attributes nothing to runs: ignored.
    fn launch_context(&mut self, _context: Option<LaunchContext>) {}

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        if self.entries().pinned.is_some() {
            Some(self)
        } else {
            None
        }
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take()
    }

    /// A waiter sharing this device's table, handles and clock; it binds its own thread.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(TableWaiter {
            table: self.table.clone(),
            epoch: self.epoch,
            refused: None,
        }))
    }

    /// A notice concerns the device when it names the config's device id and a stream id
    /// `stream_id` gave (live, or dead less than the late-notice bound ago; backend-acl's rule,
    /// decision 0025). Without `stream_id` no notice does.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        u32::try_from(self.device_id).is_ok_and(|device| device == notice.device)
            && self.stream_ids.concerns(notice.stream_id, self.clock())
    }
}

impl PinnedCopies for TableDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        let entries = self.pinned_entries()?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: the table's entry with its `user`, a plain size and a writable pointer slot.
        self.bound_call(|e| unsafe { (entries.malloc_host)(e.user, size, &raw mut ptr) })?;
        if ptr.is_null() {
            self.message = Some(
                "the runtime's device table's malloc_host returned 0 and NULL; return memory \
                 with 0, or a non-zero code"
                    .to_owned(),
            );
            return Err(INTERNAL_ERROR);
        }
        let address = value(ptr);
        self.pinned.insert(address, size);
        Ok(HostPtr(address))
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        let entries = self.pinned_entries()?;
        if !self.pinned.contains_key(&ptr.0) {
            self.message = Some(format!(
                "{:#x} is not pinned memory the table's malloc_host returned since the last reset",
                ptr.0
            ));
            return Err(AclCode::InvalidParam);
        }
        // SAFETY: the table's entry with its `user` and memory it returned since the last reset,
        // not freed yet.
        self.bound_call(|e| unsafe { (entries.free_host)(e.user, pointer(ptr.0)) })?;
        self.pinned.remove(&ptr.0);
        Ok(())
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async((src, dst), len, true, stream)
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async((dst, src), len, false, stream)
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        let dst = self.pinned_range(dst, src.len())?;
        // SAFETY: `dst` lies inside live pinned memory for `src.len()` bytes (checked), host
        // memory by the table's contract, which no Rust reference aliases; no copy into it is in
        // flight (the driver writes only before it enqueues the copies that use it).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        let src = self.pinned_range(src, dst.len())?;
        // SAFETY: `src` lies inside live pinned memory for `dst.len()` bytes (checked); the
        // driver reads only after an event proved the copy into it finished.
        unsafe { core::ptr::copy_nonoverlapping(src.cast_const(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}

/// The completion waiter over the runtime's table: its waits on a thread of its own, bound
/// through `bind` before its first wait and again after every force reset, each handle looked
/// up in the device's table first.
#[derive(Debug)]
pub struct TableWaiter {
    table: TableBinding,
    /// The device's clock epoch, so [`CompletionWaiter::now`] reads the same clock.
    epoch: Instant,
    /// Why this waiter's last call refused its handle, if it did: its text, taken before the
    /// runtime's.
    refused: Option<String>,
}

impl TableWaiter {
    /// `lookup` in the device's table: a handle it does not hold live is refused with its code,
    /// its text kept, and never reaches an entry.
    fn live<T>(
        &mut self,
        lookup: impl FnOnce(&Domain) -> Result<T, Refused>,
    ) -> Result<T, AclCode> {
        self.refused = None;
        lookup(&self.table.domain).map_err(|refused| {
            self.refused = Some(refused.message);
            refused.code
        })
    }

    fn entries(&self) -> Entries {
        self.table.ops.0
    }
}

impl CompletionWaiter for TableWaiter {
    fn bind(&mut self) -> Result<(), AclCode> {
        self.refused = None;
        self.table.bind_if_needed()
    }

    fn now(&mut self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        let event = self.live(|domain| domain.event(event))?;
        let e = self.entries();
        // SAFETY: the table's entry with its `user` and an event it holds live; the lane
        // destroys it only once no wait on it is out, and resets only once this wait returned.
        AclCode::check(unsafe { (e.synchronize_event)(e.user, event, timeout_ms) })
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let Some(query) = self.entries().query_event else {
            return Err(AclCode::RtFeatureNotSupport);
        };
        let event = self.live(|domain| domain.event(event))?;
        let mut complete = false;
        let user = self.entries().user;
        // SAFETY: as for the wait above; `complete` is a writable bool.
        AclCode::check(unsafe { query(user, event, &raw mut complete) })?;
        Ok(complete)
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        let stream = self.live(|domain| domain.stream(stream))?;
        let e = self.entries();
        // SAFETY: the table's entry with its `user` and a stream it holds live: the awaited
        // run's, which holds its place in the pair's FIFO until this wait's answer is fed, so
        // the lane destroys or replaces it only after the call returned.
        AclCode::check(unsafe { (e.synchronize_stream)(e.user, stream, timeout_ms) })
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        let src = self.live(|domain| domain.range(src, len))?;
        let e = self.entries();
        // SAFETY: the table's entry with its `user`; `dst` is writable for its length and
        // `[src, src + len)` lies inside a live allocation (looked up): the awaited run's slot,
        // which the lane frees only at close or forgets after a reset, never under a wait.
        AclCode::check(unsafe {
            (e.memcpy_from_device)(e.user, dst.as_mut_ptr().cast(), src.cast_const(), len)
        })
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.refused = None;
        let Some(drain) = self.entries().synchronize_device else {
            return Ok(());
        };
        // SAFETY: the table's entry with its `user` and a plain value.
        AclCode::check(unsafe { drain(self.entries().user, timeout_ms) })
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.refused
            .take()
            .or_else(|| self.table.recent_error_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// What the stub's next create hands out; 0 hands out NULL.
    static NEXT: AtomicUsize = AtomicUsize::new(0x1000);
    /// The tests here set [`NEXT`] in turn.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(PoisonError::into_inner)
    }

    unsafe extern "C" fn ok(_: *mut c_void) -> i32 {
        0
    }
    unsafe extern "C" fn create(_: *mut c_void, out: *mut *mut c_void) -> i32 {
        let next = NEXT.load(Ordering::SeqCst);
        // SAFETY: the lane passes a writable slot.
        unsafe { out.write(std::ptr::with_exposed_provenance_mut(next)) };
        0
    }
    unsafe extern "C" fn release(_: *mut c_void, _: *mut c_void) -> i32 {
        0
    }
    unsafe extern "C" fn pair(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 {
        0
    }
    unsafe extern "C" fn wait(_: *mut c_void, _: *mut c_void, _: i32) -> i32 {
        0
    }
    unsafe extern "C" fn alloc(_: *mut c_void, _: usize, out: *mut *mut c_void) -> i32 {
        // SAFETY: as in `create`.
        unsafe { create(std::ptr::null_mut(), out) }
    }
    unsafe extern "C" fn copy(_: *mut c_void, _: *mut c_void, _: *const c_void, _: usize) -> i32 {
        0
    }

    /// Every required entry and the reset, no optional one: a stub that succeeds.
    fn required_only(user: *mut c_void) -> RunLaneDeviceOps {
        RunLaneDeviceOps {
            size: size_of::<RunLaneDeviceOps>() as u32,
            user,
            bind: None,
            create_stream: Some(create),
            destroy_stream: Some(release),
            destroy_stream_force: Some(release),
            stream_id: None,
            create_event: Some(create),
            destroy_event: Some(release),
            record_event: Some(pair),
            stream_wait_event: Some(pair),
            query_event: None,
            synchronize_event: Some(wait),
            synchronize_stream: Some(wait),
            malloc: Some(alloc),
            free: Some(release),
            memcpy_to_device: Some(copy),
            memcpy_from_device: Some(copy),
            malloc_host: None,
            free_host: None,
            memcpy_to_device_async: None,
            memcpy_from_device_async: None,
            synchronize_device: None,
            reset_device_force: Some(ok),
            probe: None,
            recent_error_message: None,
            event_timestamp: None,
        }
    }

    #[test]
    fn a_table_of_the_required_entries_alone_runs_and_each_missing_optional_one_answers_as_documented()
     {
        let _turn = turn();
        let mut user = 0_u8;
        let ops = DeviceOps::new(&required_only((&raw mut user).cast()), false).expect("accepted");
        assert!(!ops.has_pinned_copies());
        let mut d = TableDevice::open(ops, 3).expect("no bind to fail");
        NEXT.store(0x1000, Ordering::SeqCst);
        let stream = d.create_stream().expect("a stream");
        NEXT.store(0x2000, Ordering::SeqCst);
        let event = d.create_event().expect("an event");
        assert_eq!(d.query_event(event), Err(AclCode::RtFeatureNotSupport));
        assert_eq!(d.synchronize_device(10), Ok(()), "nothing to drain");
        assert_eq!(d.own_probe(), Ok(()), "the lane's probe alone");
        assert!(d.pinned_copies().is_none(), "synchronous copies only");
        let notice = FaultNotice {
            device: 3,
            stream_id: 0,
            code: AclCode::RtAicoreException,
        };
        assert!(!d.notice_concerns(&notice), "no stream ids: no notice");
        let mut waiter = d.completion_waiter().expect("a waiter");
        assert_eq!(waiter.bind(), Ok(()), "nothing to bind");
        assert_eq!(waiter.query_event(event), Err(AclCode::RtFeatureNotSupport));
        assert_eq!(waiter.synchronize_device(10), Ok(()));
        d.destroy_event(event).expect("destroyed");
        d.destroy_stream(stream).expect("destroyed");
    }

    #[test]
    fn a_create_that_returns_null_or_a_handle_the_lane_holds_live_is_an_internal_error() {
        let _turn = turn();
        let mut user = 0_u8;
        let ops = DeviceOps::new(&required_only((&raw mut user).cast()), false).expect("accepted");
        let mut d = TableDevice::open(ops, 0).expect("opened");
        NEXT.store(0x3000, Ordering::SeqCst);
        let stream = d.create_stream().expect("a stream");
        assert_eq!(
            d.create_stream(),
            Err(INTERNAL_ERROR),
            "the same stream again"
        );
        let text = d.recent_error_message().expect("why");
        assert!(text.contains("distinct handle"), "{text}");
        NEXT.store(0, Ordering::SeqCst);
        assert_eq!(d.create_event(), Err(INTERNAL_ERROR), "NULL with success");
        let text = d.recent_error_message().expect("why");
        assert!(text.contains("NULL"), "{text}");
        // Overlapping a live allocation.
        NEXT.store(0x4000, Ordering::SeqCst);
        let memory = d.malloc(64).expect("memory");
        NEXT.store(0x4020, Ordering::SeqCst);
        assert_eq!(d.malloc(64), Err(INTERNAL_ERROR), "inside the first");
        d.free(memory).expect("freed");
        d.destroy_stream(stream).expect("destroyed");
    }

    #[test]
    fn lanes_whose_tables_share_user_and_device_id_are_one_device_and_a_reset_kills_both_ones_handles()
     {
        let _turn = turn();
        let mut user = 0_u8;
        let table = required_only((&raw mut user).cast());
        let mut one =
            TableDevice::open(DeviceOps::new(&table, false).expect("ok"), 5).expect("opened");
        let mut two =
            TableDevice::open(DeviceOps::new(&table, false).expect("ok"), 5).expect("opened");
        let mut other =
            TableDevice::open(DeviceOps::new(&table, false).expect("ok"), 6).expect("opened");
        NEXT.store(0x5000, Ordering::SeqCst);
        let stream = two.create_stream().expect("a stream");
        NEXT.store(0x6000, Ordering::SeqCst);
        let elsewhere = other.create_stream().expect("a stream on device 6");
        one.reset_device_force().expect("reset");
        assert_eq!(
            two.destroy_stream(stream),
            Err(AclCode::RtInvalidHandle),
            "killed by the other lane's reset of the same device"
        );
        assert_eq!(other.destroy_stream(elsewhere), Ok(()), "another device");
    }
}
