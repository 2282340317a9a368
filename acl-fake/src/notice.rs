//! Device fault notices (device-truth §4): the process's one exception callback slot, and
//! the fake "driver" threads that deliver each raised notice late, on a thread of their own.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;

/// The `aclrtExceptionInfo` the fake allocates per notice, alive only while the callback
/// runs.
#[repr(C)]
pub(crate) struct Info {
    pub(crate) device_id: u32,
    pub(crate) stream_id: u32,
    /// 0 for every error class (device-truth §4).
    pub(crate) task_id: u32,
    /// 0 \[I\]: the fake has no device thread to name.
    pub(crate) thread_id: u32,
    pub(crate) error_code: u32,
}

/// The callback slot, the notices in flight and what became of the others.
struct Notices {
    callback: AclrtExceptionInfoCallback,
    /// Bumped by `runlanefake_reset`: a notice raised before it is cancelled.
    epoch: u64,
    threads: Vec<JoinHandle<()>>,
    delivered: u64,
    dropped: u64,
}

static NOTICES: Mutex<Notices> =
    Mutex::new(Notices { callback: None, epoch: 0, threads: Vec::new(), delivered: 0, dropped: 0 });
static CHANGED: Condvar = Condvar::new();

fn notices() -> MutexGuard<'static, Notices> {
    NOTICES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `aclrtSetExceptionInfoCallback`: the one slot, last registration wins, `None` clears it.
pub(crate) fn set_callback(callback: AclrtExceptionInfoCallback) {
    notices().callback = callback;
}

/// Raises a notice delivered after `delay` on a thread of its own: 500000 if no thread could
/// be started.
pub(crate) fn raise(info: Info, delay: Duration) -> Result<(), AclError> {
    let mut n = notices();
    let epoch = n.epoch;
    let deadline = Instant::now().checked_add(delay);
    let thread = std::thread::Builder::new()
        .name("fake-acl-driver-notice".to_owned())
        .spawn(move || deliver(info, epoch, deadline))
        .map_err(|_| ACL_ERROR_INTERNAL_ERROR)?;
    n.threads.retain(|t| !t.is_finished());
    n.threads.push(thread);
    Ok(())
}

/// Waits out the delay (unless cancelled), then hands the notice to the callback registered
/// at that moment, or drops it when there is none.
fn deliver(mut info: Info, epoch: u64, deadline: Option<Instant>) {
    let mut n = notices();
    loop {
        if n.epoch != epoch {
            return;
        }
        let left = match deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        if left.is_zero() {
            break;
        }
        n = CHANGED.wait_timeout(n, left).unwrap_or_else(std::sync::PoisonError::into_inner).0;
    }
    let Some(callback) = n.callback else {
        n.dropped += 1;
        return;
    };
    n.delivered += 1;
    // The callback runs without the lock: it may register another callback.
    drop(n);
    let info: *mut Info = &mut info;
    // SAFETY: `info` lives until this call returns, as a real notice does; the callback's
    // contract is the C one (it reads it with the getters and does not keep it).
    unsafe { callback(info.cast()) };
}

/// (delivered, dropped) since the last `runlanefake_reset`.
pub(crate) fn counts() -> (u64, u64) {
    let n = notices();
    (n.delivered, n.dropped)
}

/// `runlanefake_reset`'s part: the slot cleared, every notice still waiting out its delay
/// cancelled, and every delivery already under way finished before this returns (the driver
/// threads are joined), so no callback runs after it.
pub(crate) fn reset() {
    let mut n = notices();
    n.epoch += 1;
    n.callback = None;
    n.delivered = 0;
    n.dropped = 0;
    let threads = std::mem::take(&mut n.threads);
    drop(n);
    CHANGED.notify_all();
    let me = std::thread::current().id();
    for thread in threads {
        // A reset made from inside a callback cannot wait for its own delivery.
        if thread.thread().id() != me {
            let _ = thread.join();
        }
    }
}

/// A getter's read of `info`: [`EXCEPTION_INFO_INVALID`] for NULL.
///
/// # Safety
///
/// `info` is NULL or a notice's info, alive (inside its callback).
pub(crate) unsafe fn read(info: *const AclrtExceptionInfo, field: fn(&Info) -> u32) -> u32 {
    if info.is_null() {
        return EXCEPTION_INFO_INVALID;
    }
    // SAFETY: non-NULL, and a live `Info` by the caller's contract.
    field(unsafe { &*info.cast::<Info>() })
}
