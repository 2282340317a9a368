//! Live handles. A `RunLane *` is an opaque token, never dereferenced: its value is a
//! number drawn once from a counter and never reused, looked up here on every call. So a
//! NULL, destroyed, double-destroyed or foreign handle is an error, not undefined behaviour,
//! and a stale handle can never name a newer lane.
//!
//! Every C ABI call looks its handle up, so lookups share a read lock: with sixteen lanes
//! driven from sixteen threads, no lane's call waits for another's lookup. Only create and
//! destroy take the write lock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

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
    live: RwLock<BTreeMap<usize, Arc<T>>>,
}

/// Tokens start far from small integers and step by an odd stride, so a pointer cast from
/// a small number, an index or a zeroed struct is never live.
const FIRST_TOKEN: usize = 0x5a5a_0001;
/// The stride between tokens.
const TOKEN_STRIDE: usize = 0x1_0001;

impl<T> Registry<T> {
    /// An empty registry.
    pub const fn new() -> Self {
        Self { next: AtomicUsize::new(FIRST_TOKEN), live: RwLock::new(BTreeMap::new()) }
    }

    /// Registers `value` and returns its new handle.
    pub fn insert(&self, value: T) -> *mut RunLane {
        let token = self.next.fetch_add(TOKEN_STRIDE, Ordering::Relaxed);
        self.live.write().unwrap_or_else(PoisonError::into_inner).insert(token, Arc::new(value));
        std::ptr::without_provenance_mut(token)
    }

    /// The live value behind `handle`. The `Arc` keeps it alive for the call even if another
    /// thread destroys the handle meanwhile.
    pub fn get(&self, handle: *const RunLane) -> Result<Arc<T>, Error> {
        let token = Self::token(handle)?;
        self.live
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&token)
            .cloned()
            .ok_or_else(|| Self::not_live(handle))
    }

    /// Unregisters `handle` and returns its value (the last `Arc` once in-flight calls end).
    pub fn remove(&self, handle: *const RunLane) -> Result<Arc<T>, Error> {
        let token = Self::token(handle)?;
        self.live
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token)
            .ok_or_else(|| Self::not_live(handle))
    }

    /// `handle`'s token; NULL is refused.
    fn token(handle: *const RunLane) -> Result<usize, Error> {
        if handle.is_null() {
            return Err(Error::new(
                RunLaneStatus::InvalidHandle,
                "the lane handle is NULL; pass the handle run_lane_create wrote",
            ));
        }
        Ok(handle.addr())
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
        assert_eq!(registry.get(foreign).unwrap_err().status, RunLaneStatus::InvalidHandle);
        registry.remove(handle).unwrap();
        assert_eq!(registry.get(handle).unwrap_err().status, RunLaneStatus::InvalidHandle);
        assert_eq!(registry.remove(handle).unwrap_err().status, RunLaneStatus::InvalidHandle);
    }

    /// Bounded stress: threads register, look up and unregister their own handles while
    /// others look up handles being destroyed. A lookup finds its own value or reports the
    /// handle not live; it never finds another's value.
    #[test]
    fn concurrent_lookups_and_destroys_find_their_own_value_or_none() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 200;
        let registry = Registry::new();
        let shared = std::sync::Mutex::new(Vec::<(usize, usize)>::new());
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let (registry, shared) = (&registry, &shared);
                scope.spawn(move || {
                    for round in 0..ROUNDS {
                        let value = thread * ROUNDS + round;
                        let handle = registry.insert(value);
                        shared.lock().unwrap().push((handle.addr(), value));
                        assert_eq!(*registry.get(handle).unwrap(), value);
                        // A recent handle, often another thread's, perhaps destroyed meanwhile.
                        let other = {
                            let made = shared.lock().unwrap();
                            made.len().checked_sub(1 + round % 4).map(|i| made[i])
                        };
                        if let Some((addr, expected)) = other {
                            let handle: *const RunLane = std::ptr::without_provenance(addr);
                            match registry.get(handle) {
                                Ok(found) => assert_eq!(*found, expected),
                                Err(error) => {
                                    assert_eq!(error.status, RunLaneStatus::InvalidHandle);
                                }
                            }
                        }
                        assert_eq!(*registry.remove(handle).unwrap(), value);
                        assert!(registry.get(handle).is_err());
                    }
                });
            }
        });
        assert!(registry.live.read().unwrap().is_empty());
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
