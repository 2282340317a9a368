//! Recovery: the bind (`set_device`, the probe's fault site), the drain
//! (`synchronize_device`) and the force reset. Only a force reset that succeeds clears the
//! device's sticky error, and it drops every stream, event, buffer and pending write with it.

use lane_core::status_latch::AclCode;

use super::{Named, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};
use crate::trace::Record;

impl SimDevice {
    /// `aclrtSetDevice`: the bind (the `probe` fault site).
    pub(super) fn set_device_call(&mut self) -> Result<(), AclCode> {
        self.call(
            "set_device",
            Cost::SetDevice,
            Named::Run(None),
            |d, _| {
                // The `probe` fault site: the recovery probe's bind, and a host worker's (whose job
                // then goes back to the lane thread).
                match d.faults.decide(Site::Probe, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => Ok(()),
                }
            },
            |_| String::new(),
        )
    }

    /// `aclrtSynchronizeDeviceWithTimeout`: the drain. Waits for every stream's tasks to end,
    /// then returns the device's sticky error; 507046 if they do not end in time.
    pub(super) fn synchronize_device_call(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.call(
            "synchronize_device",
            Cost::SynchronizeDevice,
            Named::Run(None),
            |d, _| {
                let drained_at = d
                    .streams
                    .values()
                    .map(|s| s.tail)
                    .try_fold(0_u64, |acc, t| t.map(|t| acc.max(t)));
                let timeout_ns = u64::try_from(timeout_ms)
                    .unwrap_or(0)
                    .saturating_mul(1_000_000);
                match drained_at {
                    Some(t) if t.saturating_sub(d.host_ns) <= timeout_ns => {
                        let wait = t.saturating_sub(d.host_ns);
                        if wait > 0 {
                            d.block_ns(wait, None);
                            d.spend(Cost::HostWakeup);
                        }
                        d.sticky_now()
                    }
                    _ => {
                        d.block_ns(timeout_ns, None);
                        Err(AclCode::RtStreamSyncTimeout)
                    }
                }
            },
            |_| format!("timeout {timeout_ms} ms"),
        )
    }

    /// `aclrtResetDeviceForce`: unless its fault site fails it, drops every stream, event,
    /// buffer (pinned ones too), pending write and copy, and live run, kills the running
    /// kernels and clears the sticky error.
    pub(super) fn reset_device_force_call(&mut self) -> Result<(), AclCode> {
        self.call(
            "reset_device_force",
            Cost::ResetDevice,
            Named::Run(None),
            |d, _| {
                let result = match d.faults.decide(Site::Reset, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => Ok(()),
                };
                if result.is_ok() {
                    let (streams, events, buffers) =
                        (d.streams.len(), d.events.len(), d.memory.len());
                    d.streams.clear();
                    d.events.clear();
                    d.memory.clear();
                    d.pending_writes.clear();
                    d.pending_copies.clear();
                    // Pinned memory belongs to the context a force reset tears down.
                    d.host_memory.clear();
                    d.sticky = None;
                    d.binary_loaded = false;
                    d.live_runs.clear();
                    d.run_ends.clear();
                    d.run_streams.clear();
                    d.resets += 1;
                    let at = d.host_ns;
                    d.journal.kill_open_kernels(at);
                    d.journal.push(|| Record::Note {
                        at_ns: at,
                        text: format!(
                            "device reset: {streams} streams, {events} events and {buffers} buffers dropped; running kernels killed"
                        ),
                    });
                }
                result
            },
            |_| String::new(),
        )
    }
}
