//! The process's one notice ring and the embedding's entry into it (L-19).
//!
//! The driver has one fault-notice callback slot per process. Whoever holds it (the
//! library's own monitor in backend-acl, or the embedding's handler, which forwards through
//! [`report_device_fault`]) writes each notice here; every lane reads from its own cursor and
//! acts only on a notice its device says names one of its streams
//! ([`Device::notice_concerns`](crate::Device::notice_concerns)).

use std::sync::OnceLock;

use crate::notice_ring::{NoticeRing, RawNotice};

/// The ring: in a static, so it outlives every lane (a late callback can arrive after the
/// last lane is gone).
static NOTICES: OnceLock<NoticeRing> = OnceLock::new();

/// The process's notice ring, made at first use.
pub fn notices() -> &'static NoticeRing {
    NOTICES.get_or_init(NoticeRing::new)
}

/// The ring if it was made already: what a driver callback uses, since it must not be the
/// one to make it (install the callback after calling [`notices`]).
pub fn notices_if_made() -> Option<&'static NoticeRing> {
    NOTICES.get()
}

/// Forwards a device fault notice from the embedding's own handler (the Rust twin of the C
/// entry `run_lane_report_device_fault`): lock-free and allocation-free, so a driver
/// callback may call it. Each lane on `device` whose streams include `stream_id` becomes
/// suspect at its next step; every other lane ignores it.
pub fn report_device_fault(device: u32, stream_id: u32, code: i32) {
    notices().push(RawNotice { device, stream_id, code });
}
