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
//!
//! This file holds the table's validation ([`DeviceOps`]); its submodules hold the handle
//! tables, the threads' binding, [`TableDevice`], its pinned copies and [`TableWaiter`].

use core::ffi::{c_char, c_void};
use lane_core::status_latch::AclCode;

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
    ("create_stream", "aclrtCreateStreamWithConfig: the lane's stream pair and recovery's probe"),
    ("destroy_stream", "aclrtDestroyStream: the pair's teardown and the probe's stream"),
    (
        "destroy_stream_force",
        "aclrtDestroyStreamForce: replacing a stale or errored stream of the pair",
    ),
    ("create_event", "aclrtCreateEventExWithFlag: each slot's completion events"),
    ("destroy_event", "aclrtDestroyEvent: each slot's teardown"),
    ("record_event", "aclrtRecordEvent: each run's fences and its boundary"),
    ("stream_wait_event", "aclrtStreamWaitEvent: the order inside a run and between runs"),
    ("synchronize_event", "aclrtSynchronizeEventWithTimeout: each run's completion"),
    (
        "synchronize_stream",
        "aclrtSynchronizeStreamWithTimeout: the device verdict of a run its record does not decide",
    ),
    ("malloc", "aclrtMalloc: each slot's device buffers"),
    ("free", "aclrtFree: each slot's teardown"),
    ("memcpy_to_device", "aclrtMemcpy host to device: each run's arm of its slot"),
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
            let list: Vec<String> =
                missing.iter().map(|(name, why)| format!("device_ops.{name} ({why})")).collect();
            let (are, them) =
                if missing.len() == 1 { ("one is", "it") } else { ("some are", "them") };
            return Err(invalid(format!(
                "RUN_LANE_BACKEND_DEVICE_OPS needs every required entry of RunLaneDeviceOps, and \
                 {are} NULL: {}; set {them}",
                list.join(", "),
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
                 Required",
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

impl PartialEq for DeviceOps {
    /// Two tables compare by their `user` (the functions are the runtime's, not the lane's to
    /// compare).
    fn eq(&self, other: &Self) -> bool {
        self.user() == other.user()
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
            Ok(Some(PinnedEntries { malloc_host, free_host, to_device_async, from_device_async }))
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

fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(RunLaneStatus::InvalidConfig, message)
}

mod binding;
mod device;
mod handles;
mod pinned;
mod waiter;

pub use binding::TableBinding;
pub use device::TableDevice;
pub use waiter::TableWaiter;

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::FaultNotice;
    use lane_driver::Device;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};

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
        let notice = FaultNotice { device: 3, stream_id: 0, code: AclCode::RtAicoreException };
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
        assert_eq!(d.create_stream(), Err(INTERNAL_ERROR), "the same stream again");
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
        let open = |id| TableDevice::open(DeviceOps::new(&table, false).expect("ok"), id);
        let (mut one, mut two) = (open(5).expect("opened"), open(5).expect("opened"));
        let mut other = open(6).expect("opened");
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
