//! The synchronisation primitives the [`mailbox`](crate::mailbox) protocol is written
//! against. The library uses std's; the loom model test compiles the same `mailbox.rs`
//! against a facade of the same names over loom's, so the checked code is the shipped code.

use std::time::Instant;

pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks `mutex`, tolerating poison: a panic on the lane thread is reported through the
/// mailbox's lost cause, so the state behind a poisoned lock stays readable for every
/// later caller (never a second panic, never a hang).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Blocks on `condvar` until notified (or spuriously woken).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Blocks on `condvar` until notified, spuriously woken or `deadline`; returns whether the
/// deadline has passed.
pub(crate) fn wait_until<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Instant,
) -> (MutexGuard<'a, T>, bool) {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return (guard, true);
    }
    let (guard, _) =
        condvar.wait_timeout(guard, left).unwrap_or_else(std::sync::PoisonError::into_inner);
    (guard, Instant::now() >= deadline)
}
