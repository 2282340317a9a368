//! The handles this process's [`AclDevice`](crate::AclDevice)s issued and that are still
//! live: the one place a lane handle becomes a raw ACL pointer. Only a handle created on the
//! same device id, and neither destroyed nor killed by a force reset since, reaches ACL; any
//! other is refused with ACL's code for it and a message, nothing called.
//!
//! | handle | not issued, destroyed, or issued before a reset | live on another device id |
//! |---|---|---|
//! | stream | 107017 `ACL_ERROR_RT_INVALID_HANDLE` | 107003 `ACL_ERROR_RT_STREAM_CONTEXT` |
//! | event | 107017 `ACL_ERROR_RT_INVALID_HANDLE` | 107017 `ACL_ERROR_RT_INVALID_HANDLE` |
//! | device range | 107000 `ACL_ERROR_RT_PARAM_INVALID` | 107000 `ACL_ERROR_RT_PARAM_INVALID` |
//!
//! The table is process-wide because a force reset kills every handle on its device,
//! whichever lane made it. Pinned host memory keeps its own table (`AclDevice::pinned`).

use std::collections::BTreeMap;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use core::ffi::c_void;

use ascend_cl_sys::{AclrtEvent, AclrtStream};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, EventHandle};

/// The live handles of the process: each with the device id it was created on.
#[derive(Debug)]
struct Issued {
    /// `aclrtStream` address -> device id.
    streams: BTreeMap<u64, i32>,
    /// `aclrtEvent` address -> device id.
    events: BTreeMap<u64, i32>,
    /// Device allocation base -> (size, device id).
    allocations: BTreeMap<u64, (usize, i32)>,
}

/// Every call of every lane of the process looks a handle up here, so lookups share the lock
/// (sixteen lanes on sixteen threads do not queue behind one another); only a create, a
/// destroy and a force reset write.
static ISSUED: RwLock<Issued> = RwLock::new(Issued {
    streams: BTreeMap::new(),
    events: BTreeMap::new(),
    allocations: BTreeMap::new(),
});

/// The table, to look up (never held across an ACL call).
fn issued() -> RwLockReadGuard<'static, Issued> {
    ISSUED.read().unwrap_or_else(PoisonError::into_inner)
}

/// The table, to change (never held across an ACL call; a panic under it loses no entry's
/// meaning).
fn issued_mut() -> RwLockWriteGuard<'static, Issued> {
    ISSUED.write().unwrap_or_else(PoisonError::into_inner)
}

/// Why a handle was refused: its code and the message the device keeps for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The code ACL gives such a handle.
    pub(crate) code: AclCode,
    /// What was wrong with it.
    pub(crate) message: String,
}

fn refused(code: AclCode, what: &str, value: u64, why: &str) -> Refused {
    Refused { code, message: format!("{what} {value:#x} {why}; refused before any ACL call") }
}

const NOT_LIVE: &str = "is not one a device of this process created and still holds \
                        (never issued, destroyed, or issued before a force reset)";
const ELSEWHERE: &str = "was created on another device id";

/// Records a stream `device_id` just created.
pub(crate) fn issue_stream(device_id: i32, stream: AclrtStream) -> StreamHandle {
    let value = stream as usize as u64;
    issued_mut().streams.insert(value, device_id);
    StreamHandle(value)
}

/// Records an event `device_id` just created.
pub(crate) fn issue_event(device_id: i32, event: AclrtEvent) -> EventHandle {
    let value = event as usize as u64;
    issued_mut().events.insert(value, device_id);
    EventHandle(value)
}

/// Records a device allocation of `size` bytes `device_id` just made.
pub(crate) fn issue_allocation(device_id: i32, ptr: *mut c_void, size: usize) -> DevicePtr {
    let value = ptr as usize as u64;
    issued_mut().allocations.insert(value, (size, device_id));
    DevicePtr(value)
}

/// The `aclrtStream` behind `stream`, if it is live on `device_id`.
pub(crate) fn stream(device_id: i32, stream: StreamHandle) -> Result<AclrtStream, Refused> {
    match issued().streams.get(&stream.0) {
        Some(&owner) if owner == device_id => Ok(stream.0 as usize as AclrtStream),
        Some(_) => Err(refused(AclCode::RtStreamContext, "stream", stream.0, ELSEWHERE)),
        None => Err(refused(AclCode::RtInvalidHandle, "stream", stream.0, NOT_LIVE)),
    }
}

/// The `aclrtEvent` behind `event`, if it is live on `device_id`.
pub(crate) fn event(device_id: i32, event: EventHandle) -> Result<AclrtEvent, Refused> {
    match issued().events.get(&event.0) {
        Some(&owner) if owner == device_id => Ok(event.0 as usize as AclrtEvent),
        Some(_) => Err(refused(AclCode::RtInvalidHandle, "event", event.0, ELSEWHERE)),
        None => Err(refused(AclCode::RtInvalidHandle, "event", event.0, NOT_LIVE)),
    }
}

/// The device address `ptr` when `[ptr, ptr + len)` lies inside one allocation live on
/// `device_id`.
pub(crate) fn range(device_id: i32, ptr: DevicePtr, len: usize) -> Result<*mut c_void, Refused> {
    let table = issued();
    let Some((&base, &(size, owner))) = table.allocations.range(..=ptr.0).next_back() else {
        return Err(refused(AclCode::RtParamInvalid, "device range at", ptr.0, NOT_LIVE));
    };
    let inside = usize::try_from(ptr.0 - base)
        .ok()
        .and_then(|offset| offset.checked_add(len))
        .is_some_and(|end| end <= size);
    match (inside, owner == device_id) {
        (true, true) => Ok(ptr.0 as usize as *mut c_void),
        (true, false) => Err(refused(AclCode::RtParamInvalid, "device range at", ptr.0, ELSEWHERE)),
        (false, _) => Err(refused(AclCode::RtParamInvalid, "device range at", ptr.0, NOT_LIVE)),
    }
}

/// The allocation `ptr` starts, if it is live on `device_id` (what `aclrtFree` takes).
pub(crate) fn allocation(device_id: i32, ptr: DevicePtr) -> Result<*mut c_void, Refused> {
    match issued().allocations.get(&ptr.0) {
        Some(&(_, owner)) if owner == device_id => Ok(ptr.0 as usize as *mut c_void),
        Some(_) => Err(refused(AclCode::RtParamInvalid, "allocation", ptr.0, ELSEWHERE)),
        None => Err(refused(AclCode::RtParamInvalid, "allocation", ptr.0, NOT_LIVE)),
    }
}

/// `stream` was destroyed: it is refused from now on.
pub(crate) fn retire_stream(stream: StreamHandle) {
    issued_mut().streams.remove(&stream.0);
}

/// `event` was destroyed.
pub(crate) fn retire_event(event: EventHandle) {
    issued_mut().events.remove(&event.0);
}

/// The allocation at `ptr` was freed.
pub(crate) fn retire_allocation(ptr: DevicePtr) {
    issued_mut().allocations.remove(&ptr.0);
}

/// A force reset of `device_id` killed every handle on it, whoever made it.
pub(crate) fn retire_device(device_id: i32) {
    let mut table = issued_mut();
    table.streams.retain(|_, owner| *owner != device_id);
    table.events.retain(|_, owner| *owner != device_id);
    table.allocations.retain(|_, (_, owner)| *owner != device_id);
}
