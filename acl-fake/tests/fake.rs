//! The fake libascendcl, loaded through ascend-cl-sys's public loader by explicit path, as a
//! user's machine loads the real one. Every exported function runs here.
//!
//! The fake is process-wide state, so the tests serialise on a lock and reset it first
//! (`common::session`). These tests work on device 0; tests/devices.rs checks that the
//! devices are isolated. Real-time tests assert orderings and outcomes only: "not ready"
//! comes from kernels that hang until killed, never from a short duration racing the test
//! thread.

mod common;

use core::ffi::c_void;
use std::time::{Duration, Instant};

use ascend_cl_sys::types::*;
use ascend_cl_sys::{AttemptFailure, Search};
use common::*;
use run_lane_fake_ascendcl::{
    CDYLIB_FILE_NAME, DEFAULT_DEVICE_COUNT, ENGINE_AICORE, ENGINE_AICPU, Outcome, RESET_UNDER_WAIT,
    WORKER_TIMER_SLACK_NS,
};

#[test]
fn the_fake_loads_through_the_public_loader_under_its_own_name() {
    let (_guard, acl, _) = session();
    assert!(acl.path().ends_with(CDYLIB_FILE_NAME), "{}", acl.path().display());
    assert_ne!(CDYLIB_FILE_NAME, ascend_cl_sys::LIBRARY_NAME);
    // The env-var route finds the same library.
    let path = fake().path.clone();
    let via_env = Search::with_env(move |name| {
        (name == ascend_cl_sys::ENV_EXPLICIT).then(|| path.clone().into_os_string())
    })
    .open()
    .expect("loads from RUN_LANE_ACL_LIB");
    assert!(via_env.path().ends_with(CDYLIB_FILE_NAME));
}

#[test]
fn nothing_searches_for_the_fake_by_default() {
    let path = fake().path.clone();
    let dir = path.parent().expect("a folder").to_path_buf();
    let search = Search::with_env(move |name| {
        (name == "ASCEND_HOME_PATH").then(|| dir.clone().into_os_string())
    });
    assert!(search.candidates().iter().all(|c| c.path != path));
}

#[test]
fn a_real_library_reached_through_a_devlib_symlink_is_refused() {
    let home = std::env::temp_dir().join(format!("acl-fake-devlib-{}", std::process::id()));
    let devlib = home.join("devlib");
    std::fs::create_dir_all(&devlib).expect("devlib");
    std::fs::copy(&fake().path, devlib.join("libascendcl.so")).expect("copy");
    let lib64 = home.join("lib64");
    let _ = std::fs::remove_file(&lib64);
    std::os::unix::fs::symlink(&devlib, &lib64).expect("symlink");
    let env_home = home.clone();
    let err = Search::with_env(move |name| {
        (name == "ASCEND_HOME_PATH").then(|| env_home.clone().into_os_string())
    })
    .prefixes(vec![])
    .bare_dlopen(false)
    .open()
    .expect_err("stub refused");
    assert!(matches!(err.attempts()[0].failure, AttemptFailure::StubLibrary { .. }), "{err}");
    std::fs::remove_dir_all(&home).ok();
}

#[test]
fn init_is_idempotent_and_a_second_finalize_reports_repeat_finalize() {
    let (_guard, acl, _) = session();
    acl.init().expect("first init");
    acl.init().expect("a repeat (100002) counts as success");
    // SAFETY: no arguments.
    assert_eq!(unsafe { acl.aclFinalize() }, ACL_SUCCESS);
    // SAFETY: no arguments.
    assert_eq!(unsafe { acl.aclFinalize() }, ACL_ERROR_REPEAT_FINALIZE);
}

#[test]
fn probe_reports_the_chosen_soc_name_and_device_count() {
    let (_guard, acl, control) = session();
    assert_eq!(acl.soc_name().as_deref(), Some("Ascend910B1"));
    assert_eq!(acl.device_count(), Ok(DEFAULT_DEVICE_COUNT));
    control.set_soc_name(Some("Ascend950PR_9599")).expect("soc");
    control.set_device_count(2).expect("count");
    assert_eq!(acl.soc_name().as_deref(), Some("Ascend950PR_9599"));
    assert_eq!(acl.device_count(), Ok(2));
    bind(acl, 1);
    control.set_soc_name(None).expect("soc");
    assert_eq!(acl.soc_name(), None);
    control.set_device_count(0).expect("count");
    assert_eq!(acl.device_count(), Ok(0));
    assert_eq!(
        // SAFETY: NULL is rejected by the fake, not dereferenced.
        unsafe { acl.aclrtGetDeviceCount(std::ptr::null_mut()) },
        ACL_ERROR_INVALID_PARAM
    );
}

#[test]
fn a_thread_that_never_set_a_device_gets_context_null() {
    let (_guard, acl, _) = session();
    let unbound = std::thread::scope(|s| s.spawn(|| try_create_stream(acl)).join());
    assert_eq!(unbound.expect("thread"), ACL_ERROR_RT_CONTEXT_NULL);
}

#[test]
fn a_never_recorded_event_synchronises_and_queries_as_complete() {
    let (_guard, acl, control) = session();
    let event = create_event(acl);
    assert_eq!(sync(acl, event, 1), ACL_SUCCESS);
    assert_eq!(query(acl, event), Ok(ACL_EVENT_RECORDED_STATUS_COMPLETE));
    destroy_all(acl, &[], &[event], &[]);
    assert_balanced(control);
}

#[test]
fn timeouts_of_zero_or_below_minus_one_are_invalid() {
    let (_guard, acl, _) = session();
    let (stream, event) = stream_and_event(acl);
    for timeout in [0, -2] {
        assert_eq!(sync(acl, event, timeout), ACL_ERROR_RT_PARAM_INVALID);
        assert_eq!(sync_stream(acl, stream, timeout), ACL_ERROR_RT_PARAM_INVALID);
    }
    assert_eq!(sync_device(acl, 0), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(try_create_event(acl, 0), Err(ACL_ERROR_RT_PARAM_INVALID));
    destroy_both(acl, stream, event);
}

#[test]
fn an_event_captures_only_the_work_submitted_before_its_record() {
    let (_guard, acl, control) = session();
    let (stream, before) = stream_and_event(acl);
    let after = create_event(acl);
    launch(control, stream, ENGINE_AICORE, 1).expect("launch");
    record(acl, before, stream);
    launch_hang(control, stream);
    record(acl, after, stream);
    assert_eq!(sync(acl, before, LONG_MS), ACL_SUCCESS, "the hang came after the record");
    assert_eq!(sync(acl, after, 20), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
    // Re-recording re-captures: nothing new was submitted after the hang, so still pending.
    record(acl, before, stream);
    assert_eq!(query(acl, before), Ok(ACL_EVENT_RECORDED_STATUS_NOT_READY));
    destroy_all(acl, &[stream], &[before, after], &[]);
    assert_balanced(control);
}

#[test]
fn a_kernel_writes_its_timing_and_status_header_in_stream_order() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let [timing, header, second] = [malloc(acl, 16), malloc(acl, 8), malloc(acl, 16)];
    let bytes = [1, 2, 3, 4, 5, 6, 7, 8];
    launch_writing(control, stream, ENGINE_AICPU, 2, [timing, header], &bytes).expect("first");
    // Queued behind the first on the same stream: its start is not before the first's end.
    let null = std::ptr::null_mut();
    launch_writing(control, stream, ENGINE_AICORE, 2, [second, null], &[]).expect("second");
    record_and_wait(acl, event, stream);
    let (start, end) = timing_of(acl, timing);
    let (second_start, second_end) = timing_of(acl, second);
    assert!(start > 0 && end >= start + 2_000_000, "{start} {end}");
    assert!(second_start >= end && second_end >= second_start);
    assert_eq!(from_device(acl, header, 8), Ok(bytes.to_vec()));
    destroy_all(acl, &[], &[], &[timing, header, second]);
    destroy_both(acl, stream, event);
    let counters = control.counters().expect("counters");
    assert_eq!(counters.launches, 2);
    assert!(counters.balanced(), "{counters:?}");
}

#[test]
fn a_healthy_destroy_waits_for_queued_work() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let timing = malloc(acl, 16);
    let null = std::ptr::null_mut();
    launch_writing(control, stream, ENGINE_AICORE, 5, [timing, null], &[]).expect("launch");
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_ne!(timing_of(acl, timing).1, 0, "the kernel ended before the destroy returned");
    assert_eq!(free(acl, timing), ACL_SUCCESS);
    assert_eq!(
        destroy_stream(acl, stream),
        ACL_ERROR_RT_INVALID_HANDLE,
        "a destroyed handle is dead"
    );
    assert_balanced(control);
}

#[test]
fn copies_both_ways_are_bounds_checked_with_acl_codes() {
    let (_guard, acl, control) = session();
    let [dev, other] = [malloc(acl, 8), malloc(acl, 8)];
    let memcpy = |dst, dst_len, src: *const c_void, len, kind| {
        // SAFETY: live buffers of the given sizes, or ranges refused before any access.
        unsafe { acl.aclrtMemcpy(dst, dst_len, src, len, kind) }
    };
    assert_eq!(to_device(acl, dev, &[9; 8]), ACL_SUCCESS);
    assert_eq!(from_device(acl, dev, 8), Ok(vec![9; 8]));
    // Device to device, and host to host.
    assert_eq!(memcpy(other, 8, dev, 8, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    assert_eq!(from_device(acl, other, 8), Ok(vec![9; 8]));
    let (src, mut dst) = ([5_u8; 4], [0_u8; 4]);
    let host_to_host =
        memcpy(dst.as_mut_ptr().cast(), 4, src.as_ptr().cast(), 4, ACL_MEMCPY_HOST_TO_HOST);
    assert_eq!((host_to_host, dst), (ACL_SUCCESS, src));
    // Past the end, an interior offset past the end, an unknown address, a short destination,
    // NULL, an unknown kind: codes, not crashes.
    assert_eq!(to_device(acl, dev, &[0; 9]), ACL_ERROR_RT_PARAM_INVALID);
    let interior = dev.wrapping_byte_add(4);
    assert_eq!(to_device(acl, interior, &[0; 5]), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(to_device(acl, interior, &[7; 4]), ACL_SUCCESS);
    assert_eq!(from_device(acl, 0x10_usize as *const c_void, 1), Err(ACL_ERROR_RT_PARAM_INVALID));
    let mut small = [0_u8; 2];
    let short = memcpy(small.as_mut_ptr().cast(), 2, dev, 8, ACL_MEMCPY_DEVICE_TO_HOST);
    assert_eq!(short, ACL_ERROR_RT_PARAM_INVALID, "the count exceeds destMax");
    let null = memcpy(std::ptr::null_mut(), 8, dev, 8, ACL_MEMCPY_DEVICE_TO_HOST);
    assert_eq!(null, ACL_ERROR_INVALID_PARAM);
    assert_eq!(memcpy(other, 8, dev, 8, 42), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(free(acl, dev), ACL_SUCCESS);
    assert_eq!(from_device(acl, dev, 8), Err(ACL_ERROR_RT_PARAM_INVALID), "freed memory is gone");
    assert_eq!(free(acl, dev), ACL_ERROR_RT_PARAM_INVALID, "double free");
    assert_eq!(free(acl, std::ptr::null_mut()), ACL_ERROR_INVALID_PARAM);
    assert_eq!(free(acl, other), ACL_SUCCESS);
    let mut null_slot = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: a size of 0 is refused before the slot is written.
        unsafe { acl.aclrtMalloc(&mut null_slot, 0, ACL_MEM_MALLOC_HUGE_FIRST) },
        ACL_ERROR_INVALID_PARAM
    );
    assert_balanced(control);
}

#[test]
fn an_async_copy_into_pinned_host_memory_runs_after_the_kernel_before_it() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let header = malloc(acl, 4);
    let pinned = malloc_host(acl, 4);
    let null = std::ptr::null_mut();
    launch_writing(control, stream, ENGINE_AICORE, 2, [null, header], &[4, 3, 2, 1])
        .expect("launch");
    let d2h = ACL_MEMCPY_DEVICE_TO_HOST;
    assert_eq!(copy_async(acl, [pinned, header], 4, d2h, stream), ACL_SUCCESS);
    // A bad range is refused at submission.
    assert_eq!(copy_async(acl, [pinned, header], 8, d2h, stream), ACL_ERROR_RT_PARAM_INVALID);
    record_and_wait(acl, event, stream);
    // SAFETY: the copy completed (the event covers it); `pinned` holds 4 initialised bytes.
    let copied = unsafe { std::slice::from_raw_parts(pinned.cast::<u8>(), 4) }.to_vec();
    assert_eq!(copied, vec![4, 3, 2, 1]);
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    assert_eq!(free_host(acl, pinned), ACL_ERROR_RT_PARAM_INVALID, "already freed");
    assert_eq!(free(acl, header), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    assert_balanced(control);
}

#[test]
fn failed_creates_return_the_injected_code_and_a_recent_error_message() {
    let (_guard, acl, control) = session();
    for (call, code, skip) in [
        ("aclrtCreateStreamWithConfig", ACL_ERROR_RT_NO_STREAM_RESOURCE, 0),
        ("aclrtCreateEventExWithFlag", ACL_ERROR_RT_NO_EVENT_RESOURCE, 0),
        ("aclrtMalloc", ACL_ERROR_RT_MEMORY_ALLOCATION, 1),
    ] {
        control.fail_call(call, code, skip, 1).expect("rule");
    }
    assert_eq!(try_create_stream(acl), ACL_ERROR_RT_NO_STREAM_RESOURCE);
    let message = acl.recent_error_message().expect("a message after a failure");
    assert!(
        message.contains("aclrtCreateStreamWithConfig") && message.contains("207008"),
        "{message}"
    );
    assert_eq!(acl.recent_error_message(), None, "reading clears it");
    assert_eq!(try_create_event(acl, ACL_EVENT_SYNC), Err(ACL_ERROR_RT_NO_EVENT_RESOURCE));
    let first = malloc(acl, 8);
    let mut second = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: writable slot.
        unsafe { acl.aclrtMalloc(&mut second, 8, 0) },
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        "skip 1, then fail"
    );
    let err = acl.check("aclrtMalloc", ACL_ERROR_RT_MEMORY_ALLOCATION).expect_err("a failure");
    assert_eq!(err.code, ACL_ERROR_RT_MEMORY_ALLOCATION);
    assert!(err.to_string().contains("aclrtMalloc"), "{err}");
    // Rules are used up: the next calls succeed.
    let (stream, event) = stream_and_event(acl);
    assert_eq!(free(acl, first), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    assert_balanced(control);
}

#[test]
fn a_failed_launch_queues_nothing() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    control.fail_call("runlanefake_launch", ACL_ERROR_RT_DRV_INTERNAL_ERROR, 0, 1).expect("rule");
    let err = launch(control, stream, ENGINE_AICORE, 1).expect_err("injected");
    assert!(err.to_string().contains("507899"), "{err}");
    assert_eq!(control.counters().expect("counters").launches, 0);
    // Launch arguments are checked: unknown engine, unknown stream, unknown range.
    assert!(launch(control, stream, 7, 1).is_err());
    assert!(launch(control, 0x42_usize as AclrtStream, ENGINE_AICORE, 1).is_err());
    let unknown = [0x42_usize as *mut c_void, std::ptr::null_mut()];
    assert!(launch_writing(control, stream, ENGINE_AICORE, 0, unknown, &[]).is_err());
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn a_latch_rule_writes_the_given_status_header() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let header = malloc(acl, 4);
    control.fault_kernel(Outcome::Latch, ENGINE_AICPU, 1, 1, &[0xEE; 4]).expect("rule");
    for expected in [[1_u8; 4], [0xEE; 4], [1; 4]] {
        let buffers = [std::ptr::null_mut(), header];
        launch_writing(control, stream, ENGINE_AICPU, 0, buffers, &[1; 4]).expect("launch");
        record(acl, event, stream);
        assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "a latched code is no device fault");
        assert_eq!(from_device(acl, header, 4), Ok(expected.to_vec()));
    }
    // A rule for another engine leaves this one alone; clear_faults removes it.
    control.fault_kernel(Outcome::Exception, ENGINE_AICORE, 0, 1, &[]).expect("rule");
    control.clear_faults().expect("clear");
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    record_and_wait(acl, event, stream);
    assert_eq!(free(acl, header), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    assert_balanced(control);
}

#[test]
fn a_force_reset_kills_everything_on_its_device_and_unbinds_the_threads_bound_to_it() {
    let (_guard, acl, control) = session_expecting_resets_under_wait();
    let (stream, event) = stream_and_event(acl);
    let dev = malloc(acl, 8);
    launch_hang(control, stream);
    record(acl, event, stream);
    // A waiter on another thread, inside its wait when the reset comes: on real ACL a
    // use-after-free; the fake wakes it with its distinctive code and counts the reset.
    let waiter_code = std::thread::scope(|s| {
        let event_addr = event as usize;
        let waiter = s.spawn(move || {
            bind(acl, 0);
            sync(acl, event_addr as AclrtEvent, LONG_MS)
        });
        wait_until("the waiter inside its wait", || blocked_event_syncs(control, 0) == 1);
        control
            .fail_call("aclrtResetDeviceForce", ACL_ERROR_RT_DRV_INTERNAL_ERROR, 0, 1)
            .expect("rule");
        assert_eq!(force_reset(acl, 0), ACL_ERROR_RT_DRV_INTERNAL_ERROR, "a failed reset");
        assert_eq!(force_reset(acl, 0), ACL_SUCCESS);
        waiter.join().expect("waiter")
    });
    assert_eq!(waiter_code, RESET_UNDER_WAIT);
    assert_eq!(control.counters().expect("counters").resets_under_wait, 1);
    assert_eq!(try_create_stream(acl), ACL_ERROR_RT_CONTEXT_NULL, "every thread binds again");
    bind(acl, 0);
    assert_eq!(destroy_stream_force(acl, stream), ACL_ERROR_RT_INVALID_HANDLE);
    assert_eq!(destroy_event(acl, event), ACL_ERROR_RT_INVALID_HANDLE);
    assert_eq!(free(acl, dev), ACL_ERROR_RT_PARAM_INVALID);
    let c = control.counters().expect("counters");
    let reclaimed = (c.streams_reclaimed, c.events_reclaimed, c.allocations_reclaimed);
    assert_eq!((reclaimed, c.force_resets), ((1, 1, 1), 1));
    assert!(c.balanced(), "{c:?}");
    // The device works again after set device.
    let stream = create_stream(acl);
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn a_stream_wait_holds_later_tasks_and_an_aborted_capture_is_sticky_on_the_waiter() {
    let (_guard, acl, control) = session();
    let (a, on_a) = stream_and_event(acl);
    let (b, on_b) = stream_and_event(acl);
    launch_hang(control, a);
    record(acl, on_a, a);
    assert_eq!(stream_wait(acl, b, on_a), ACL_SUCCESS);
    record(acl, on_b, b);
    // Stream B holds nothing but the wait, yet its event is not ready: the wait blocks it.
    assert_eq!(query(acl, on_b), Ok(ACL_EVENT_RECORDED_STATUS_NOT_READY));
    // Re-recording the event on an idle stream does not move the wait already submitted.
    let idle = create_stream(acl);
    record(acl, on_a, idle);
    assert_eq!(query(acl, on_b), Ok(ACL_EVENT_RECORDED_STATUS_NOT_READY));
    // The captured work dies unfinished: the wait ends, its event completes, and the waiting
    // stream holds the abort.
    assert_eq!(destroy_stream_force(acl, a), ACL_SUCCESS);
    assert_eq!(sync(acl, on_b, LONG_MS), ACL_SUCCESS);
    assert_eq!(sync_stream(acl, b, LONG_MS), ACL_ERROR_RT_STREAM_ABORT);
    assert_eq!(control.counters().expect("counters").stream_waits, 1);
    destroy_all(acl, &[b, idle], &[on_a, on_b], &[]);
    assert_balanced(control);
}

#[test]
fn a_stream_wait_needs_a_sync_event_and_live_handles() {
    let (_guard, acl, control) = session();
    let (stream, sync_event) = stream_and_event(acl);
    let timeline = try_create_event(acl, ACL_EVENT_TIME_LINE).expect("event");
    assert_eq!(
        stream_wait(acl, stream, timeline),
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        "a wait on an event without ACL_EVENT_SYNC is 207000"
    );
    let (dead_stream, dead_event) = (0xdead_0000 as AclrtStream, 0xdead_0000 as AclrtEvent);
    assert_eq!(stream_wait(acl, dead_stream, sync_event), ACL_ERROR_RT_INVALID_HANDLE);
    assert_eq!(stream_wait(acl, stream, dead_event), ACL_ERROR_RT_INVALID_HANDLE);
    // A never-recorded event is complete: the wait passes at once.
    assert_eq!(stream_wait(acl, stream, sync_event), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS, "the wait finished");
    destroy_all(acl, &[], &[timeline, sync_event], &[]);
    assert_balanced(control);
}

#[test]
fn an_async_copy_with_pageable_memory_returns_after_the_copy_and_host_to_host_is_refused() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let header = malloc(acl, 4);
    let null = std::ptr::null_mut();
    launch_writing(control, stream, ENGINE_AICORE, 20, [null, header], &[4, 3, 2, 1])
        .expect("launch");
    let mut pageable = [0_u8; 4];
    // `pageable` outlives the call, which returns only after the copy ran.
    let into = pageable.as_mut_ptr().cast();
    assert_eq!(copy_async(acl, [into, header], 4, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
    assert_eq!(pageable, [4, 3, 2, 1], "ordered after the kernel, done on return");
    let source = [0_u8; 4];
    let host_to_host = [pageable.as_mut_ptr().cast(), source.as_ptr().cast_mut().cast()];
    assert_eq!(
        copy_async(acl, host_to_host, 4, ACL_MEMCPY_HOST_TO_HOST, stream),
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    );
    assert_eq!(control.counters().expect("counters").async_copies, 1);
    assert_eq!(free(acl, header), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn a_pinned_buffer_freed_before_its_copy_runs_fails_the_stream_instead_of_being_written() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let dev = malloc(acl, 8);
    let pinned = malloc_host(acl, 8);
    // Long enough that the free below comes first on any machine.
    launch(control, stream, ENGINE_AICORE, 300).expect("launch");
    // The fake re-checks `pinned` at task time.
    assert_eq!(copy_async(acl, [pinned, dev], 8, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
    record(acl, event, stream);
    // The copy still queued must not write it afterwards.
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS);
    assert_eq!(sync_stream(acl, stream, LONG_MS), ACL_ERROR_RT_PARAM_INVALID);
    destroy_all(acl, &[stream], &[event], &[dev]);
    assert_balanced(control);
}

#[test]
fn a_copy_rule_fails_the_copy_on_its_stream_and_bad_rules_are_refused() {
    let (_guard, acl, control) = session();
    assert!(control.fault_copy(0, 0, 1).is_err(), "code 0 is no fault");
    assert!(control.fault_copy(CODE_FAULT, 0, 0).is_err(), "count 0");
    let (stream, event) = stream_and_event(acl);
    let [dev, pinned] = [malloc(acl, 8), malloc_host(acl, 8)];
    let h2d = |stream| copy_async(acl, [dev, pinned], 8, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    control.fault_copy(CODE_FAULT, 1, 1).expect("rule");
    for _ in 0..2 {
        assert_eq!(h2d(stream), ACL_SUCCESS, "the enqueue succeeds");
    }
    record_and_wait(acl, event, stream);
    assert_eq!(sync_stream(acl, stream, LONG_MS), CODE_FAULT, "the second copy failed");
    control.fault_copy(CODE_FAULT, 0, 1).expect("rule");
    control.clear_faults().expect("clear");
    let fresh = create_stream(acl);
    assert_eq!(h2d(fresh), ACL_SUCCESS);
    record(acl, event, fresh);
    assert_eq!(sync_stream(acl, fresh, LONG_MS), ACL_SUCCESS, "cleared rules fail nothing");
    destroy_all(acl, &[stream, fresh], &[event], &[dev]);
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn a_force_reset_reclaims_pinned_host_memory() {
    let (_guard, acl, control) = session();
    let pinned = malloc_host(acl, 16);
    reset_and_bind(acl, 0);
    assert_eq!(free_host(acl, pinned), ACL_ERROR_RT_PARAM_INVALID, "stale");
    let c = control.counters().expect("counters");
    assert_eq!((c.host_frees, c.host_allocations_reclaimed), (0, 1));
    assert_balanced(control);
}

#[test]
fn an_aicpu_launch_behind_an_unfinished_kernel_counts_as_queued_and_one_on_a_drained_stream_does_not()
 {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let queued = || control.counters().expect("counters").queued_launches;
    let start = queued();
    // A hang keeps the stream's first kernel unfinished while the second is launched.
    launch_hang(control, stream);
    launch(control, stream, ENGINE_AICPU, 1).expect("launch");
    assert_eq!(queued(), start + 1, "launched behind an unfinished kernel");
    // An AICore launch is not counted: one count per run, on its AICPU kernel.
    launch(control, stream, ENGINE_AICORE, 1).expect("launch");
    assert_eq!(queued(), start + 1);
    assert_eq!(destroy_stream_force(acl, stream), ACL_SUCCESS);
    let stream = create_stream(acl);
    for _ in 0..2 {
        launch(control, stream, ENGINE_AICPU, 1).expect("launch");
        record_and_wait(acl, event, stream);
    }
    assert_eq!(queued(), start + 1, "the stream's kernels had all finished");
    destroy_both(acl, stream, event);
    assert_balanced(control);
}

/// The threads of this process now (Linux: `/proc/self/task`).
fn threads() -> std::collections::BTreeSet<u32> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// How often thread `tid` has gone to sleep and been woken since it started.
fn sleeps(tid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .expect("the worker is alive");
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("voluntary_ctxt_switches")
}

/// Whether thread `tid` is one of the fake's stream workers (named `fake-acl-<device>-stream-
/// <id>`; the kernel keeps the first 15 bytes).
fn is_stream_worker(tid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .is_ok_and(|name| name.starts_with("fake-acl-"))
}

/// A new stream and the worker thread the fake started for it. Threads the test harness
/// starts meanwhile (the next test's, while this one runs) are not the fake's: only stream
/// workers count. A new thread names itself once it runs, so its name is waited for.
fn stream_with_worker(acl: &ascend_cl_sys::Acl) -> (AclrtStream, u32) {
    let before = threads();
    let stream = create_stream(acl);
    let deadline = Instant::now() + Duration::from_secs(5);
    let started = loop {
        let started: Vec<u32> =
            threads().difference(&before).copied().filter(|&tid| is_stream_worker(tid)).collect();
        if !started.is_empty() || Instant::now() > deadline {
            break started;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(started.len(), 1, "one worker a stream: {started:?}");
    (stream, started[0])
}

#[test]
fn a_streams_worker_sleeps_through_the_work_of_other_streams_on_its_device() {
    // Each change on a device used to wake every stream's worker, idle or running a kernel:
    // a herd of host threads no device has, which on a small host delays the launches the
    // bench measures. Now a worker wakes for its own stream's tasks (and its removal) only.
    let (_guard, acl, control) = session();
    let (idle, idle_worker) = stream_with_worker(acl);
    let (hung, hung_worker) = stream_with_worker(acl);
    let (busy, _) = stream_with_worker(acl);
    launch_hang(control, hung);
    let event = create_event(acl);
    // (If the hung kernel's worker has not taken its kernel yet, that is one wake-up more.)
    let (idle_before, hung_before) = (sleeps(idle_worker), sleeps(hung_worker));
    const ROUNDS: u64 = 50;
    for _ in 0..ROUNDS {
        launch(control, busy, ENGINE_AICPU, 0).expect("launch");
        record_and_wait(acl, event, busy);
    }
    // A stray wake-up (a signal, the scheduler) may come; one per round is the herd.
    let (idle_woken, hung_woken) =
        (sleeps(idle_worker) - idle_before, sleeps(hung_worker) - hung_before);
    assert!(
        idle_woken < ROUNDS / 5 && hung_woken < ROUNDS / 5,
        "woken by {ROUNDS} rounds on another stream: the idle worker {idle_woken} times, the \
         hung kernel's {hung_woken}"
    );
    // Its own work and its removal still wake each.
    launch(control, idle, ENGINE_AICORE, 0).expect("launch");
    record_and_wait(acl, event, idle);
    assert_eq!(destroy_stream_force(acl, hung), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, idle), ACL_SUCCESS);
    destroy_both(acl, busy, event);
    assert_balanced(control);
}

/// Thread `tid`'s timer slack (ns), as Linux reports it.
fn timer_slack(tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns"))
        .expect("the worker is alive")
        .trim()
        .parse()
        .expect("a number of ns")
}

#[test]
fn a_streams_worker_runs_with_no_timer_slack_so_a_kernel_ends_when_its_time_is_up() {
    // With Linux's default slack (50 us) a kernel's timed wait ended up to 50 us late, by
    // as much as the timers it was merged with allowed: on the bench, two loops with the same
    // period showed device spans 25 us apart, and their gaps as much the other way.
    let (_guard, acl, control) = session();
    let (stream, worker) = stream_with_worker(acl);
    let event = create_event(acl);
    // Once a kernel of the stream has run, its worker has set its slack (before its first task).
    launch(control, stream, ENGINE_AICPU, 1).expect("launch");
    record_and_wait(acl, event, stream);
    assert_eq!(timer_slack(worker), WORKER_TIMER_SLACK_NS);
    assert!(
        timer_slack(std::process::id()) > WORKER_TIMER_SLACK_NS,
        "the process's main thread keeps the default: only the device's threads change"
    );
    destroy_both(acl, stream, event);
    assert_balanced(control);
}

#[test]
fn the_device_clock_is_the_one_a_kernels_timing_buffer_is_written_in() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let timing = malloc(acl, 16);
    let before = control.device_clock_ns().expect("clock");
    let null = std::ptr::null_mut();
    launch_writing(control, stream, ENGINE_AICPU, 1, [timing, null], &[]).expect("launch");
    record_and_wait(acl, event, stream);
    let after = control.device_clock_ns().expect("clock");
    let (start, end) = timing_of(acl, timing);
    assert!(
        before <= start && start + 1_000_000 <= end && end <= after,
        "the kernel ran from {start} to {end} ns, the clock read {before} before its launch and \
         {after} after its event"
    );
    assert_eq!(free(acl, timing), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    assert_balanced(control);
}
