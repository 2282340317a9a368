//! Status codes with a thread-local last-error message, and the boundary guard that keeps
//! panics on the Rust side.
//!
//! The message follows the calling thread's latest `run_lane_*` call that returns a status:
//! a failure sets it, a success (`OK`, or `EMPTY` from `run_lane_poll`) clears it to "", so
//! `run_lane_last_error()` never shows a failure older than the thread's latest call.
//!
//! Neither allocates in steady state: `FULL` is the documented loop's flow control, met once
//! a run, so its message is static text, and each thread's message is written into a buffer
//! it keeps (it grows only for a message longer than any before on that thread).

use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use core::ffi::c_char;

use crate::types::RunLaneStatus;

/// A failed call: the status to return and the message for `run_lane_last_error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What the function returns.
    pub status: RunLaneStatus,
    /// Why, in one line: static text where the failure is routine (`FULL`), so reporting it
    /// allocates nothing.
    pub message: Cow<'static, str>,
}

impl Error {
    /// A failure with `status` and `message`.
    pub fn new(status: RunLaneStatus, message: impl Into<Cow<'static, str>>) -> Self {
        Self { status, message: message.into() }
    }

    /// A NULL `what` argument.
    pub fn null(what: &str) -> Self {
        Self::new(
            RunLaneStatus::NullArgument,
            format!("{what} is NULL; pass a pointer to a valid {what}"),
        )
    }
}

/// [`Error::null`] when `ptr` is NULL.
pub fn non_null<T>(ptr: *const T, what: &str) -> Result<(), Error> {
    if ptr.is_null() { Err(Error::null(what)) } else { Ok(()) }
}

thread_local! {
    /// The calling thread's last error as NUL-terminated bytes; empty when its latest call
    /// succeeded (or it made none). Cleared and rewritten in place, so its capacity is kept.
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Records `message` as this thread's last error, on one line (its lines, trimmed, joined
/// with "; ", or a space after a line ending in ':'; an interior NUL is replaced, so the
/// message is never lost).
pub fn set_last_error(message: &str) {
    LAST_ERROR.with(|last| {
        let mut line = last.borrow_mut();
        line.clear();
        for part in message.lines().map(str::trim).filter(|part| !part.is_empty()) {
            if !line.is_empty() {
                // A line ending in ':' introduces the next ("candidates:"), others are
                // clauses.
                let joint: &[u8] = if line.ends_with(b":") { b" " } else { b"; " };
                line.extend_from_slice(joint);
            }
            line.extend(part.bytes().map(|byte| if byte == 0 { b' ' } else { byte }));
        }
        line.push(0);
    });
}

/// Clears this thread's last error: `run_lane_last_error()` is "" until the next failure.
pub fn clear_last_error() {
    LAST_ERROR.with(|last| last.borrow_mut().clear());
}

/// This thread's last error message ("" after a success): valid until the next `run_lane_*`
/// call on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|last| {
        let line = last.borrow();
        if line.is_empty() { c"".as_ptr() } else { line.as_ptr().cast() }
    })
}

/// Runs `body` at the C boundary: its error becomes the status and the thread's last error,
/// a success (`Ok` of any status: `OK`, or `EMPTY` from a poll) clears the thread's last
/// error, and a panic is caught and becomes [`RunLaneStatus::Panic`] (none crosses into C).
pub fn guard(body: impl FnOnce() -> Result<RunLaneStatus, Error>) -> RunLaneStatus {
    // Unwind safety: after a panic the library only reports it; every shared structure is
    // behind a mutex that is read through `PoisonError::into_inner`.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => {
            clear_last_error();
            status
        }
        Ok(Err(error)) => {
            set_last_error(&error.message);
            error.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic with no message".to_owned());
            set_last_error(&format!(
                "internal error (a panic was caught at the C boundary): {what}"
            ));
            RunLaneStatus::Panic
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: the pointer is this thread's live CString.
        unsafe { CStr::from_ptr(last_error_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_the_panic_status_with_its_message() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, RunLaneStatus::Panic);
        assert!(last().contains("boom"), "{}", last());
    }

    #[test]
    fn an_error_sets_the_status_and_the_last_error() {
        let status = guard(|| Err(Error::new(RunLaneStatus::Full, "no room")));
        assert_eq!(status, RunLaneStatus::Full);
        assert_eq!(last(), "no room");
    }

    #[test]
    fn a_success_after_a_failure_clears_the_last_error() {
        guard(|| Err(Error::new(RunLaneStatus::Full, "no room")));
        assert_eq!(last(), "no room");
        assert_eq!(guard(|| Ok(RunLaneStatus::Empty)), RunLaneStatus::Empty);
        assert_eq!(last(), "", "EMPTY is a success");
        guard(|| Err(Error::new(RunLaneStatus::Closed, "closed")));
        assert_eq!(guard(|| Ok(RunLaneStatus::Ok)), RunLaneStatus::Ok);
        assert_eq!(last(), "");
    }

    #[test]
    fn a_thread_that_never_failed_reads_an_empty_message() {
        let empty = std::thread::spawn(last).join().unwrap();
        assert_eq!(empty, "");
    }

    #[test]
    fn a_message_with_a_nul_is_kept() {
        set_last_error("a\0b");
        assert_eq!(last(), "a b");
    }

    #[test]
    fn a_message_on_several_lines_becomes_one_line() {
        set_last_error("not loaded:\n  - /opt/x: missing\r\nhint: check npu-smi\n");
        assert_eq!(last(), "not loaded: - /opt/x: missing; hint: check npu-smi");
    }
}
