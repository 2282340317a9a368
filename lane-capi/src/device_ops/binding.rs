//! Binding threads to the table's device (`bind`, again after a force reset) and its error text.

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use lane_core::status_latch::AclCode;

use super::handles::Domain;
use super::{DeviceOps, Entries};

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
    pub(super) ops: DeviceOps,
    pub(super) domain: Arc<Domain>,
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
