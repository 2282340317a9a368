//! [`TableWaiter`]: the completion waiter's calls through the table, on the waiter's own thread.

use std::time::Instant;

use lane_core::Timestamp;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{CompletionWaiter, DevicePtr, EventHandle};

use super::Entries;
use super::binding::TableBinding;
use super::handles::{Domain, Refused};

/// The completion waiter over the runtime's table: its waits on a thread of its own, bound
/// through `bind` before its first wait and again after every force reset, each handle looked
/// up in the device's table first.
#[derive(Debug)]
pub struct TableWaiter {
    pub(super) table: TableBinding,
    /// The device's clock epoch, so [`CompletionWaiter::now`] reads the same clock.
    pub(super) epoch: Instant,
    /// Why this waiter's last call refused its handle, if it did: its text, taken before the
    /// runtime's.
    pub(super) refused: Option<String>,
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
        self.refused.take().or_else(|| self.table.recent_error_message())
    }
}
