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
    /// The device id is not one the library sees. The message names the valid ids: "id 0"
    /// for one device, "ids 0 to N-1" for N.
    #[error(
        "device id {device_id} is out of range: {} visible ({})\nhint: pass {}; ids are logical, remapped by ASCEND_RT_VISIBLE_DEVICES",
        devices(*count), valid_ids(*count), pass_ids(*count)
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
    /// Another lane of this process set a different device op timeout (SPEC L-21): the value is
    /// process-wide, so every lane of a process uses one.
    #[error(
        "this lane asks for a device op timeout of {asked_us} us, but {in_force_us} us is in force in this process (aclrtSetOpExecuteTimeOutV2 is process-wide)\nhint: give every lane of the process the same device op timeout, or close the lanes using {in_force_us} us first; the embedding runtime must not set it behind the lanes"
    )]
    OpTimeoutInForce {
        /// What this lane asked for (µs).
        asked_us: u64,
        /// What is in force (µs).
        in_force_us: u64,
    },
    /// `aclrtSetOpExecuteTimeOutV2` failed.
    #[error(
        "{0}\nhint: the op timeout needs CANN 8.0 or later; check the value against aclrtGetOpTimeOutInterval x 254"
    )]
    SetOpTimeout(#[source] CallError),
}

/// "1 device" or "N devices".
fn devices(count: u32) -> String {
    if count == 1 { "1 device".to_owned() } else { format!("{count} devices") }
}

/// The ids a count of devices allows, as a reader counts them: "id 0", "ids 0 to N-1".
fn valid_ids(count: u32) -> String {
    match count {
        0 => "no id is valid".to_owned(),
        1 => "id 0".to_owned(),
        _ => format!("ids 0 to {}", count - 1),
    }
}

/// What to pass instead: "id 0", "an id from 0 to N-1".
fn pass_ids(count: u32) -> String {
    match count {
        0 => "an id once a device is visible".to_owned(),
        1 => "id 0".to_owned(),
        _ => format!("an id from 0 to {}", count - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(device_id: i32, count: u32) -> String {
        AclError::BadDeviceId { device_id, count }.to_string()
    }

    #[test]
    fn one_visible_device_names_id_0() {
        let text = bad(1, 1);
        assert!(
            text.starts_with("device id 1 is out of range: 1 device visible (id 0)\n"),
            "{text}"
        );
        assert!(text.contains("hint: pass id 0;"), "{text}");
        assert!(!text.contains(".."), "{text}");
    }

    #[test]
    fn many_visible_devices_name_the_first_and_last_id() {
        let text = bad(16, 16);
        assert!(
            text.starts_with("device id 16 is out of range: 16 devices visible (ids 0 to 15)\n"),
            "{text}"
        );
        assert!(text.contains("hint: pass an id from 0 to 15;"), "{text}");
        let two = bad(-1, 2);
        assert!(two.contains("(ids 0 to 1)"), "{two}");
    }
}
