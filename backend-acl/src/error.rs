//! [`AclError`]: why [`AclDevice::open`](crate::AclDevice::open) refused, each with a hint.

use ascend_cl_sys::{CallError, LoadError};
use thiserror::Error;

/// Why a device could not be opened. Every variant says what to do about it; none is a
/// panic. Codes returned by the lane's calls after open are not errors of this type: they go
/// to the lane as [`AclCode`](lane_core::status_latch::AclCode)s and end in a run's verdict.
#[derive(Debug, Error)]
pub enum AclError {
    /// No usable `libascendcl.so`: missing, a stub under `devlib/`, or lacking a symbol.
    /// The load error lists every candidate tried and carries its own hint.
    #[error("{0}")]
    Load(#[from] LoadError),
    /// `aclInit` failed (with a code other than 100002, which counts as success).
    #[error(
        "{0}\nhint: the embedding runtime normally initialises ACL; open with `init: false` if it already did, or check the ACL config and the device log"
    )]
    Init(#[source] CallError),
    /// `aclrtGetDeviceCount` failed.
    #[error(
        "{0}\nhint: the NPU driver is not answering: check `npu-smi info` and that the driver's lib64 is on LD_LIBRARY_PATH"
    )]
    DeviceCount(#[source] CallError),
    /// The library sees no device.
    #[error(
        "no Ascend device visible (aclrtGetDeviceCount returned 0)\nhint: check `npu-smi info`, the driver install, and ASCEND_RT_VISIBLE_DEVICES"
    )]
    NoDevice,
    /// The device id is not one the library sees.
    #[error(
        "device id {device_id} is out of range: {count} device(s) visible (ids 0..{count})\nhint: pass an id below {count}; ids are logical, remapped by ASCEND_RT_VISIBLE_DEVICES"
    )]
    BadDeviceId {
        /// The id asked for.
        device_id: i32,
        /// How many devices the library sees.
        count: u32,
    },
    /// `aclrtSetDevice` failed at open.
    #[error(
        "{source}\nhint: device {device_id} may be in use by another process or in a bad state; check `npu-smi info` and the device log"
    )]
    SetDevice {
        /// The id.
        device_id: i32,
        /// The failed call.
        #[source]
        source: CallError,
    },
    /// `aclrtGetSocName` named no SoC this crate knows (or returned NULL), and no profile
    /// was given.
    #[error(
        "unknown SoC {}: no profile for it\nhint: pass a profile explicitly (AclConfig::profile); known: Ascend910B* and Ascend910_93* (a2a3), Ascend950* (a5)",
        name.as_deref().map_or_else(|| "(aclrtGetSocName returned NULL)".to_owned(), |n| format!("`{n}`"))
    )]
    UnknownSoc {
        /// What `aclrtGetSocName` returned (`None` for NULL).
        name: Option<String>,
    },
    /// The device op timeout is not below the host completion wait (SPEC L-6): a hung kernel
    /// would outlive the host's wait, and the host would see a bare 507047 instead of the
    /// device's own code.
    #[error(
        "device op timeout {device_ns} ns is not below the host completion timeout {host_ns} ns\nhint: lower Profile::device_op_timeout_ns (the device rounds it up to its interval) or raise the completion timeout"
    )]
    OpTimeout {
        /// The device op timeout (as the device rounded it, when it answered).
        device_ns: u64,
        /// The host completion timeout.
        host_ns: u64,
    },
    /// `aclrtSetOpExecuteTimeOutV2` failed.
    #[error(
        "{0}\nhint: the op timeout needs CANN 8.0 or later; check the value against aclrtGetOpTimeOutInterval x 254"
    )]
    SetOpTimeout(#[source] CallError),
}
