//! Live handles. A `RunLane *` is an opaque token, never dereferenced: its value is a
//! number drawn once from a counter and never reused, looked up here on every call. So a
//! NULL, destroyed, double-destroyed or foreign handle is an error, not undefined behaviour,
//! and a stale handle can never name a newer lane.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Error;
use crate::types::RunLaneStatus;

/// The opaque lane handle of the C API (`typedef struct RunLane RunLane;`). Never
/// constructed: a `RunLane *` is a registry token.
#[derive(Debug)]
pub struct RunLane {
    _private: [u8; 0],
}

/// Handles of live lanes. Generic over what a lane is, so it is tested on its own.
#[derive(Debug)]
pub struct Registry<T> {
    next: AtomicUsize,
    live: Mutex<BTreeMap<usize, Arc<T>>>,
}

/// Tokens start far from small integers and step by an odd stride, so a pointer cast from
/// a small number, an index or a zeroed struct is never live.
const FIRST_TOKEN: usize = 0x5a5a_0001;
/// The stride between tokens.
const TOKEN_STRIDE: usize = 0x1_0001;

impl<T> Registry<T> {
    /// An empty registry.
    pub const fn new() -> Self {
        Self {
            next: AtomicUsize::new(FIRST_TOKEN),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// Registers `value` and returns its new handle.
    pub fn insert(&self, value: T) -> *mut RunLane {
        let token = self.next.fetch_add(TOKEN_STRIDE, Ordering::Relaxed);
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token, Arc::new(value));
        std::ptr::without_provenance_mut(token)
    }

    /// The live value behind `handle`. The `Arc` keeps it alive for the call even if another
    /// thread destroys the handle meanwhile.
    pub fn get(&self, handle: *const RunLane) -> Result<Arc<T>, Error> {
        if handle.is_null() {
            return Err(Error::new(
                RunLaneStatus::InvalidHandle,
                "the lane handle is NULL; pass the handle run_lane_create wrote",
            ));
        }
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&handle.addr())
            .cloned()
            .ok_or_else(|| Self::not_live(handle))
    }

    /// Unregisters `handle` and returns its value (the last `Arc` once in-flight calls end).
    pub fn remove(&self, handle: *const RunLane) -> Result<Arc<T>, Error> {
        if handle.is_null() {
            return Err(Error::new(
                RunLaneStatus::InvalidHandle,
                "the lane handle is NULL; pass the handle run_lane_create wrote",
            ));
        }
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&handle.addr())
            .ok_or_else(|| Self::not_live(handle))
    }

    fn not_live(handle: *const RunLane) -> Error {
        Error::new(
            RunLaneStatus::InvalidHandle,
            format!(
                "{handle:p} is not a live lane handle (destroyed, or never returned by run_lane_create); pass a handle run_lane_create wrote and not destroyed yet"
            ),
        )
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_handle_finds_its_value() {
        let registry = Registry::new();
        let handle = registry.insert(7);
        assert_eq!(*registry.get(handle).unwrap(), 7);
    }

    #[test]
    fn null_foreign_and_destroyed_handles_are_errors() {
        let registry = Registry::new();
        let handle = registry.insert(7);
        let foreign: *const RunLane = std::ptr::without_provenance(0x1000);
        assert_eq!(
            registry.get(std::ptr::null()).unwrap_err().status,
            RunLaneStatus::InvalidHandle
        );
        assert_eq!(
            registry.get(foreign).unwrap_err().status,
            RunLaneStatus::InvalidHandle
        );
        registry.remove(handle).unwrap();
        assert_eq!(
            registry.get(handle).unwrap_err().status,
            RunLaneStatus::InvalidHandle
        );
        assert_eq!(
            registry.remove(handle).unwrap_err().status,
            RunLaneStatus::InvalidHandle
        );
    }

    #[test]
    fn a_handle_is_never_reused() {
        let registry = Registry::new();
        let first = registry.insert(1);
        registry.remove(first).unwrap();
        let second = registry.insert(2);
        assert_ne!(first, second);
        assert!(registry.get(first).is_err());
    }
}
