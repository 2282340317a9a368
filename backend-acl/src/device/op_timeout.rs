//! The device op timeout in force in the process (L-21), shared by every open device.

use ascend_cl_sys::Acl;

use crate::error::AclError;

/// The device op timeout in force in this process (L-21): `aclrtSetOpExecuteTimeOutV2` is
/// process-wide on real ACL (device-truth §5), so every lane of a process uses one value. The
/// first device opened sets it; the others count themselves as users of it.
#[derive(Debug)]
struct OpTimeoutInForce {
    /// What was asked (µs).
    asked_us: u64,
    /// What the device accepted (µs, after its rounding).
    actual_us: u64,
    /// Open devices using it.
    users: usize,
}

static OP_TIMEOUT: std::sync::Mutex<Option<OpTimeoutInForce>> = std::sync::Mutex::new(None);

/// The device op timeout in force in this process (µs, as asked), if a device is open (L-21):
/// a lane asking for another value is refused until every device using it is closed.
#[must_use]
pub fn op_timeout_in_force_us() -> Option<u64> {
    OP_TIMEOUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .map(|current| current.asked_us)
}

/// One open device's use of the process's op timeout; the last one given back lets the
/// next device set another value.
#[derive(Debug)]
pub(super) struct OpTimeoutLease;

impl OpTimeoutLease {
    /// Uses the op timeout in force if it is `timeout_us`, or sets it when none is: the
    /// lease and the value the device accepted (µs).
    pub(super) fn take(acl: &Acl, timeout_us: u64) -> Result<(Self, u64), AclError> {
        let mut in_force = OP_TIMEOUT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(current) = in_force.as_mut() {
            if current.asked_us != timeout_us {
                return Err(AclError::OpTimeoutInForce {
                    asked_us: timeout_us,
                    in_force_us: current.asked_us,
                });
            }
            current.users += 1;
            return Ok((Self, current.actual_us));
        }
        let mut actual_us = 0_u64;
        // SAFETY: `actual_us` is a writable u64.
        let code = unsafe { acl.aclrtSetOpExecuteTimeOutV2(timeout_us, &mut actual_us) };
        acl.check("aclrtSetOpExecuteTimeOutV2", code).map_err(AclError::SetOpTimeout)?;
        // The device rounds up to its interval: the rounded value must still be below the
        // host wait (checked by the caller).
        let actual_us = if actual_us == 0 { timeout_us } else { actual_us };
        *in_force = Some(OpTimeoutInForce { asked_us: timeout_us, actual_us, users: 1 });
        Ok((Self, actual_us))
    }
}

impl Drop for OpTimeoutLease {
    fn drop(&mut self) {
        let mut in_force = OP_TIMEOUT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(current) = in_force.as_mut() {
            current.users = current.users.saturating_sub(1);
            if current.users == 0 {
                *in_force = None;
            }
        }
    }
}
