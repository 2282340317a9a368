//! The recovery hazards and the fault notice channel (SPEC L-19, L-20, L-21; device-truth
//! §4, §5): a force reset needs a set device, a reset under a wait is counted and wakes the
//! waiter with the fake's distinctive code, addresses are never reused, and fault notices
//! arrive late on the driver's thread through the process's one callback slot.
//!
//! Like the other test files, every test holds the session and starts from a reset fake.

mod common;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;
use common::*;
use run_lane_fake_ascendcl::RESET_UNDER_WAIT;

#[test]
fn a_second_force_reset_without_a_set_device_returns_507007_and_a_set_device_rearms_it() {
    let (_guard, acl, control) = session();
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(force_reset(acl, 0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    bind(acl, 0);
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(control.counters().expect("counters").force_resets, 2);
}

#[test]
fn a_force_reset_from_a_thread_that_never_set_the_device_returns_507007_and_resets_nothing() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let code = std::thread::spawn(|| force_reset(&fake().acl, 0)).join().expect("thread");
    assert_eq!(code, ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    assert_eq!(control.counters().expect("counters").force_resets, 0);
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS, "still alive");
    // Set once since the last reset is enough, even when another device is current now.
    bind(acl, 2);
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn a_force_reset_under_a_stream_or_device_synchronize_is_counted_and_the_waiter_gets_the_distinctive_code()
 {
    let (_guard, acl, control) = session_expecting_resets_under_wait();
    let total_before = control.resets_under_wait();
    for device_wide in [false, true] {
        bind(acl, 0);
        let stream = create_stream(acl);
        launch_hang(control, stream);
        let raw = stream as usize;
        let (bound, is_bound) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let acl = &fake().acl;
            bind(acl, 0);
            let _ = bound.send(());
            if device_wide {
                sync_device(acl, LONG_MS)
            } else {
                sync_stream(acl, raw as AclrtStream, LONG_MS)
            }
        });
        // No counter says a stream or device waiter is inside: it is bound and about to call,
        // a hung kernel keeps it there, and a short pause lets it get in.
        is_bound.recv().expect("the waiter bound");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
        assert_eq!(waiter.join().expect("waiter"), RESET_UNDER_WAIT);
    }
    assert_eq!(control.counters().expect("counters").resets_under_wait, 2);
    assert_eq!(control.resets_under_wait(), total_before + 2);
    control.reset().expect("reset");
    assert_eq!(
        control.resets_under_wait(),
        total_before + 2,
        "the process total survives the whole-fake reset"
    );
    assert_eq!(control.counters().expect("counters").resets_under_wait, 0);
}

#[test]
fn a_force_reset_with_no_thread_inside_a_wait_is_not_counted() {
    let (_guard, acl, control) = session();
    let total_before = control.resets_under_wait();
    let (stream, event) = stream_and_event(acl);
    launch(control, stream, run_lane_fake_ascendcl::ENGINE_AICORE, 0).expect("launch");
    record_and_wait(acl, event, stream);
    assert_eq!(sync_stream(acl, stream, LONG_MS), ACL_SUCCESS);
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(control.counters().expect("counters").resets_under_wait, 0);
    assert_eq!(control.resets_under_wait(), total_before);
}

#[test]
fn device_and_pinned_host_addresses_are_never_handed_out_again_after_a_free_or_a_reset() {
    let (_guard, acl, control) = session();
    let mut device = BTreeSet::new();
    let mut host = BTreeSet::new();
    for round in 0..3 {
        for _ in 0..8 {
            let d = malloc(acl, 64);
            let h = malloc_host(acl, 64);
            assert!(device.insert(d as usize), "device address reused in round {round}");
            assert!(host.insert(h as usize), "host address reused in round {round}");
            assert_eq!((free(acl, d), free_host(acl, h)), (ACL_SUCCESS, ACL_SUCCESS));
        }
        let d = malloc(acl, 64);
        let h = malloc_host(acl, 64);
        assert!(device.insert(d as usize) && host.insert(h as usize));
        reset_and_bind(acl, 0);
        assert_eq!(free(acl, d), ACL_ERROR_RT_PARAM_INVALID, "dead after the reset");
    }
    assert_all_balanced(control);
}

#[test]
fn stream_ids_are_small_unique_per_device_and_a_dead_stream_is_107017() {
    let (_guard, acl, control) = session();
    let id_of = |stream: AclrtStream| {
        let mut id = -1;
        // SAFETY: `id` is writable.
        let code = unsafe { acl.aclrtStreamGetId(stream, &mut id) }.expect("the fake has it");
        (code, id)
    };
    let a = create_stream(acl);
    let b = create_stream(acl);
    let (ca, ia) = id_of(a);
    let (cb, ib) = id_of(b);
    assert_eq!((ca, cb), (ACL_SUCCESS, ACL_SUCCESS));
    assert!(ia != ib && (0..1024).contains(&ia) && (0..1024).contains(&ib));
    assert_eq!(id_of(a), (ACL_SUCCESS, ia), "stable");
    assert_eq!(
        // SAFETY: a NULL out-pointer, refused unwritten.
        unsafe { acl.aclrtStreamGetId(a, std::ptr::null_mut()) },
        Ok(ACL_ERROR_INVALID_PARAM)
    );
    assert_eq!(id_of(std::ptr::null_mut()).0, ACL_ERROR_INVALID_PARAM);
    assert_eq!(destroy_stream(acl, b), ACL_SUCCESS);
    assert_eq!(id_of(b).0, ACL_ERROR_RT_INVALID_HANDLE);
    reset_and_bind(acl, 0);
    assert_eq!(id_of(a).0, ACL_ERROR_RT_INVALID_HANDLE, "killed by the reset");
    let fresh = create_stream(acl);
    let (_, fresh_id) = id_of(fresh);
    assert!(
        fresh_id != ia && fresh_id != ib,
        "a number taken before the reset names no later stream"
    );
    assert_eq!(destroy_stream(acl, fresh), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn the_fake_exports_every_optional_symbol() {
    let (_guard, acl, _) = session();
    assert!(acl.missing_optional().is_empty(), "{:?}", acl.missing_optional());
    assert!(acl.has_optional("aclrtSetExceptionInfoCallback"));
}

/// What the test callbacks saw: (which callback, device, stream, task, thread, code, when).
type Seen = (u32, u32, u32, u32, u32, u32, Instant);
static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
static CALLS: AtomicU64 = AtomicU64::new(0);

/// One `aclrtGet*FromExceptionInfo` method of [`ascend_cl_sys::Acl`].
type Getter = unsafe fn(
    &ascend_cl_sys::Acl,
    *const AclrtExceptionInfo,
) -> Result<u32, ascend_cl_sys::Unavailable>;

fn record_notice(which: u32, info: *mut AclrtExceptionInfo) {
    let acl = &fake().acl;
    let get = |f: Getter| {
        // SAFETY: `info` is the notice's, alive during the callback.
        unsafe { f(acl, info) }.unwrap_or(u32::MAX - 1)
    };
    let entry = (
        which,
        get(ascend_cl_sys::Acl::aclrtGetDeviceIdFromExceptionInfo),
        get(ascend_cl_sys::Acl::aclrtGetStreamIdFromExceptionInfo),
        get(ascend_cl_sys::Acl::aclrtGetTaskIdFromExceptionInfo),
        get(ascend_cl_sys::Acl::aclrtGetThreadIdFromExceptionInfo),
        get(ascend_cl_sys::Acl::aclrtGetErrorCodeFromExceptionInfo),
        Instant::now(),
    );
    SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(entry);
    CALLS.fetch_add(1, Ordering::AcqRel);
}

unsafe extern "C" fn first_callback(info: *mut AclrtExceptionInfo) {
    record_notice(1, info);
}

unsafe extern "C" fn second_callback(info: *mut AclrtExceptionInfo) {
    record_notice(2, info);
}

fn register(callback: AclrtExceptionInfoCallback) {
    let acl = &fake().acl;
    // SAFETY: a callback that outlives every notice (a plain function).
    let code = unsafe { acl.aclrtSetExceptionInfoCallback(callback) }.expect("the fake has it");
    assert_eq!(code, ACL_SUCCESS);
}

fn take_seen() -> Vec<Seen> {
    std::mem::take(&mut *SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// Forgets what earlier tests' callbacks saw, then registers `callback`.
fn register_afresh(callback: AclrtExceptionInfoCallback) {
    take_seen();
    CALLS.store(0, Ordering::Release);
    register(callback);
}

fn wait_for_calls(n: u64) {
    wait_until("the notices delivered", || CALLS.load(Ordering::Acquire) >= n);
}

#[test]
fn a_registered_callback_gets_the_device_stream_and_code_after_the_delay_on_another_thread() {
    let (_guard, _, control) = session();
    register_afresh(Some(first_callback));
    let raised = Instant::now();
    let delay = Duration::from_millis(150);
    control.raise_notice(5, 42, ACL_ERROR_RT_AICPU_EXCEPTION, delay).expect("raise");
    wait_for_calls(1);
    let seen = take_seen();
    assert_eq!(seen.len(), 1);
    let (which, device, stream, task, thread, code, at) = seen[0];
    assert_eq!(
        (which, device, stream, task, thread, code),
        (1, 5, 42, 0, 0, ACL_ERROR_RT_AICPU_EXCEPTION as u32),
        "task id 0, as on a2a3"
    );
    assert!(at.duration_since(raised) >= delay, "arrived early");
    assert_eq!(control.notice_counts().expect("counts"), (1, 0));
}

#[test]
fn the_last_registration_wins_and_null_unregisters_so_the_notice_is_dropped() {
    let (_guard, _, control) = session();
    register_afresh(Some(first_callback));
    register(Some(second_callback));
    control.raise_notice(0, 7, ACL_ERROR_RT_AICORE_EXCEPTION, Duration::ZERO).expect("raise");
    wait_for_calls(1);
    assert_eq!(take_seen()[0].0, 2, "the second registration took the slot");
    register(None);
    control.raise_notice(0, 7, ACL_ERROR_RT_AICORE_EXCEPTION, Duration::ZERO).expect("raise");
    wait_until("the notice dropped", || control.notices_dropped().expect("counts") == 1);
    assert!(take_seen().is_empty());
    assert_eq!(control.notice_counts().expect("counts"), (1, 1));
    assert!(
        control
            .raise_notice(64, 0, 1, Duration::ZERO)
            .is_err_and(|e| e.to_string().contains("107001"))
    );
}

#[test]
fn the_whole_fake_reset_cancels_notices_still_waiting_and_unregisters_the_callback() {
    let (_guard, _, control) = session();
    register_afresh(Some(first_callback));
    control
        .raise_notice(0, 1, ACL_ERROR_RT_AICPU_EXCEPTION, Duration::from_millis(200))
        .expect("raise");
    control.reset().expect("reset");
    std::thread::sleep(Duration::from_millis(400));
    assert!(take_seen().is_empty(), "cancelled, not delivered late");
    assert_eq!(control.notice_counts().expect("counts"), (0, 0));
    control.raise_notice(0, 1, ACL_ERROR_RT_AICPU_EXCEPTION, Duration::ZERO).expect("raise");
    wait_until("the notice dropped", || control.notices_dropped().expect("counts") == 1);
}

#[test]
fn the_getters_return_0xffffffff_for_a_null_info() {
    let (_guard, acl, _) = session();
    let null = std::ptr::null();
    // SAFETY: NULL is allowed: each getter returns 0xFFFFFFFF.
    let values = unsafe {
        [
            acl.aclrtGetDeviceIdFromExceptionInfo(null),
            acl.aclrtGetStreamIdFromExceptionInfo(null),
            acl.aclrtGetTaskIdFromExceptionInfo(null),
            acl.aclrtGetThreadIdFromExceptionInfo(null),
            acl.aclrtGetErrorCodeFromExceptionInfo(null),
        ]
    };
    assert_eq!(values, [Ok(EXCEPTION_INFO_INVALID); 5]);
}

/// The shared L-20 check covers this crate's own tests: a session that did not say it makes
/// a force reset under a wait fails its test when dropped after one.
#[test]
#[should_panic(expected = "force reset(s) were made while a thread was inside a device wait")]
fn the_session_fails_a_test_that_made_an_unexpected_force_reset_under_a_wait() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    launch_hang(control, stream);
    record(acl, event, stream);
    let raw = event as usize;
    let waiter = std::thread::spawn(move || {
        let acl = &fake().acl;
        bind(acl, 0);
        sync(acl, raw as AclrtEvent, LONG_MS)
    });
    wait_until("the waiter inside its wait", || blocked_event_syncs(control, 0) == 1);
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(waiter.join().expect("waiter"), RESET_UNDER_WAIT);
}

/// Raises a notice due at once and waits until it was delivered or dropped: the counts then.
fn notice_fate(control: &run_lane_fake_ascendcl::Control, before: (u64, u64)) -> (u64, u64) {
    control.raise_notice(0, 3, ACL_ERROR_RT_AICORE_EXCEPTION, Duration::ZERO).expect("raise");
    let mut now = before;
    wait_until("the notice delivered or dropped", || {
        now = control.notice_counts().expect("counts");
        now.0 + now.1 > before.0 + before.1
    });
    now
}

#[test]
fn by_default_a_force_reset_keeps_the_registered_exception_callback() {
    let (_guard, acl, control) = session();
    register_afresh(Some(first_callback));
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(notice_fate(control, (0, 0)), (1, 0), "delivered: the slot survived");
    wait_for_calls(1);
}

#[test]
fn with_reset_drops_exception_callback_only_a_good_force_reset_of_a_switched_device_empties_the_slot()
 {
    let (_guard, acl, control) = session();
    control
        .device(0)
        .set_semantics(run_lane_fake_ascendcl::Semantics::ResetDropsExceptionCallback(true))
        .expect("the switch");
    register_afresh(Some(first_callback));
    // A reset of another device, whose switch is off, keeps it.
    bind(acl, 1);
    assert_eq!(force_reset(acl, 1), ACL_SUCCESS);
    let counts = notice_fate(control, (0, 0));
    assert_eq!(counts, (1, 0), "device 1's reset kept the slot");
    // A refused reset (507007: no set device since the last one) drops nothing.
    assert_eq!(force_reset(acl, 1), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    bind(acl, 0);
    control
        .device(0)
        .fail_call("aclrtResetDeviceForce", ACL_ERROR_RT_DRV_INTERNAL_ERROR, 0, 1)
        .expect("the rule");
    assert_eq!(force_reset(acl, 0), ACL_ERROR_RT_DRV_INTERNAL_ERROR);
    let counts = notice_fate(control, counts);
    assert_eq!(counts, (2, 0), "a failed reset of device 0 kept the slot");
    // A good reset of device 0 empties it: the next notice is dropped.
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    let counts = notice_fate(control, counts);
    assert_eq!(counts, (2, 1), "device 0's reset dropped the callback");
    // Registering again takes the slot back.
    register(Some(first_callback));
    assert_eq!(notice_fate(control, counts), (3, 1));
    wait_for_calls(3);
    // `runlanefake_reset` restores the default: a reset keeps the slot again.
    control.reset().expect("reset");
    bind(acl, 0);
    register(Some(first_callback));
    assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
    assert_eq!(notice_fate(control, (0, 0)), (1, 0));
}

#[test]
fn a_search_hiding_the_optional_symbols_loads_the_fake_with_them_missing_and_unavailable() {
    let (_guard, _, control) = session();
    let hidden = ascend_cl_sys::OPTIONAL_SYMBOLS;
    let acl = ascend_cl_sys::Search::with_env(|_| None)
        .explicit(&fake().path)
        .hiding(hidden.iter().copied())
        .open()
        .unwrap_or_else(|e| panic!("a missing optional symbol never refuses a load: {e}"));
    assert_eq!(acl.missing_optional(), hidden);
    assert!(hidden.iter().all(|symbol| !acl.has_optional(symbol)));
    // SAFETY: a plain function; the fake is never called (the symbol is hidden).
    let refused = unsafe { acl.aclrtSetExceptionInfoCallback(Some(first_callback)) };
    assert_eq!(
        refused,
        Err(ascend_cl_sys::Unavailable { symbol: "aclrtSetExceptionInfoCallback" })
    );
    // Nothing was registered: the fake's slot is still empty.
    assert_eq!(notice_fate(control, (0, 0)), (0, 1));
    // The required table still works through the same load.
    bind(&acl, 0);
    let stream = create_stream(&acl);
    let mut id = -1;
    // SAFETY: a live stream and a writable id.
    let read = unsafe { acl.aclrtStreamGetId(stream, &mut id) };
    assert_eq!(read, Err(ascend_cl_sys::Unavailable { symbol: "aclrtStreamGetId" }));
    assert_eq!(id, -1, "not written");
    assert_eq!(destroy_stream(&acl, stream), ACL_SUCCESS);
    // The one loaded without hiding still has them all.
    assert!(fake().acl.missing_optional().is_empty());
}

#[test]
fn a_search_hiding_required_symbols_refuses_the_load_naming_each_and_the_cann_that_has_it() {
    let (_guard, _, _) = session();
    let error = ascend_cl_sys::Search::with_env(|_| None)
        .explicit(&fake().path)
        .hiding(["aclrtSetOpExecuteTimeOutV2", "aclrtSynchronizeDeviceWithTimeout"])
        .open()
        .expect_err("a missing required symbol refuses the load");
    let text = error.to_string();
    for symbol in [
        "`aclrtSynchronizeDeviceWithTimeout`: needs CANN 8.0.0",
        "`aclrtSetOpExecuteTimeOutV2`: needs CANN 8.0.0",
        "2 required symbols missing",
        "its CANN is too old",
    ] {
        assert!(text.contains(symbol), "{symbol}: {text}");
    }
}
