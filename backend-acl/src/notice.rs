//! The library's own device fault notice monitor (L-19): the handler the driver calls on its
//! callback thread, installed only when the embedding asks.
//!
//! The process has one callback slot and the last registration wins silently (device-truth
//! §4), so installing is opt-in; an embedding that keeps the slot forwards its notices
//! through `lane_driver::report_device_fault` instead. The handler writes the notice into the
//! process's ring and returns: no lock, no allocation, no log. Its storage is static, so a
//! late callback after the last lane is gone is harmless.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use ascend_cl_sys::{Acl, AclrtExceptionInfo, EXCEPTION_INFO_INVALID, Unavailable};
use lane_driver::RawNotice;

/// The library whose getters the handler calls: the first one the monitor was installed
/// through, kept loaded for the process's life.
static MONITOR_ACL: OnceLock<Arc<Acl>> = OnceLock::new();
/// Whether the monitor is installed (then a force reset registers it again: whether a
/// registration survives a reset is not known, device-truth §4).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// How installing the monitor went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoticeMonitor {
    /// Not asked for: the embedding forwards notices itself (or none reach the lanes).
    NotAsked,
    /// Registered with `aclrtSetExceptionInfoCallback`.
    Installed,
    /// The library lacks a symbol the monitor needs: the lane runs, and no notice reaches it
    /// through the library's own handler.
    Unavailable {
        /// The missing symbol.
        symbol: &'static str,
    },
    /// `aclrtSetExceptionInfoCallback` returned this code.
    Refused {
        /// The code.
        code: i32,
    },
}

impl std::fmt::Display for NoticeMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAsked => f.write_str(
                "the fault notice monitor was not asked for: forward notices with run_lane_report_device_fault",
            ),
            Self::Installed => f.write_str("the fault notice monitor is installed"),
            Self::Unavailable { symbol } => write!(
                f,
                "the fault notice monitor is not installed: the library lacks {symbol} (an older CANN); \
                 lanes run without device fault notices unless the embedding forwards them"
            ),
            Self::Refused { code } => write!(
                f,
                "the fault notice monitor is not installed: aclrtSetExceptionInfoCallback returned {code}; \
                 lanes run without device fault notices unless the embedding forwards them"
            ),
        }
    }
}

/// Installs the monitor through `acl` (idempotent: a second install registers again, as
/// the last registration wins). The ring is made first, so the handler never makes it.
pub(crate) fn install(acl: &Arc<Acl>) -> NoticeMonitor {
    for symbol in [
        "aclrtSetExceptionInfoCallback",
        "aclrtGetDeviceIdFromExceptionInfo",
        "aclrtGetStreamIdFromExceptionInfo",
        "aclrtGetErrorCodeFromExceptionInfo",
    ] {
        if !acl.has_optional(symbol) {
            return NoticeMonitor::Unavailable { symbol };
        }
    }
    let _ = lane_driver::notices();
    let _ = MONITOR_ACL.set(Arc::clone(acl));
    match register(acl) {
        Ok(0) => {
            INSTALLED.store(true, Ordering::Release);
            NoticeMonitor::Installed
        }
        Ok(code) => NoticeMonitor::Refused { code },
        Err(Unavailable { symbol }) => NoticeMonitor::Unavailable { symbol },
    }
}

/// Registers the handler again after a force reset, if the monitor is installed.
pub(crate) fn register_again(acl: &Acl) {
    if INSTALLED.load(Ordering::Acquire) {
        // A failed registration leaves the slot as it was; nothing else to do here.
        let _ = register(acl);
    }
}

fn register(acl: &Acl) -> Result<i32, Unavailable> {
    // SAFETY: `on_notice` has the callback's C prototype and lives for the whole process.
    unsafe { acl.aclrtSetExceptionInfoCallback(Some(on_notice)) }
}

/// The driver's callback: reads the notice and records it.
unsafe extern "C" fn on_notice(info: *mut AclrtExceptionInfo) {
    // No panic crosses the C boundary (nothing here panics; the catch is the guarantee).
    let _ = std::panic::catch_unwind(|| {
        let (Some(acl), Some(ring)) = (MONITOR_ACL.get(), lane_driver::notices_if_made()) else {
            return;
        };
        let info = info.cast_const();
        // SAFETY: `info` is the driver's record for this call (NULL answers 0xFFFFFFFF); the
        // getters only read it.
        let read = unsafe {
            (
                acl.aclrtGetDeviceIdFromExceptionInfo(info),
                acl.aclrtGetStreamIdFromExceptionInfo(info),
                acl.aclrtGetErrorCodeFromExceptionInfo(info),
            )
        };
        let (Ok(device), Ok(stream_id), Ok(code)) = read else {
            return;
        };
        if device == EXCEPTION_INFO_INVALID {
            return;
        }
        ring.push(RawNotice { device, stream_id, code: i32::from_ne_bytes(code.to_ne_bytes()) });
    });
}
