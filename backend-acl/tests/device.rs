//! Every `Device` method of `AclDevice` against the fake libascendcl: success, failure with
//! the code and the library's message, healthy vs forced stream destroy, the recovery calls,
//! and thread binding.

mod common;

use std::time::{Duration, Instant};

use ascend_cl_sys::types::{ACL_ERROR_RT_CONTEXT_NULL, ACL_SUCCESS, AclrtStream};
use backend_acl::AclDevice;
use lane_core::status_latch::AclCode;
use lane_driver::Device;
use run_lane_fake_ascendcl::Outcome;

use common::Handles;

/// A code no call returns on its own, so a failure is the injected one.
const CODE: i32 = 507_899;

fn code() -> AclCode {
    AclCode::from_raw(CODE).unwrap()
}

#[test]
fn every_method_succeeds_on_a_healthy_device_and_leaves_nothing_behind() {
    let (fake, mut d) = common::opened();
    let stream = d.create_stream().unwrap();
    let event = d.create_event().unwrap();
    let ptr = d.malloc(64).unwrap();
    d.memcpy_to_device(ptr.at(8), &[1, 2, 3, 4]).unwrap();
    let mut back = [0_u8; 6];
    d.memcpy_from_device(&mut back, ptr.at(7)).unwrap();
    assert_eq!(back, [0, 1, 2, 3, 4, 0], "the copy lands where it was sent");
    d.record_event(event, stream).unwrap();
    d.synchronize_event(event, 30_000).unwrap();
    d.synchronize_device(30_000).unwrap();
    d.destroy_event(event).unwrap();
    d.destroy_stream(stream).unwrap();
    d.free(ptr).unwrap();
    assert_eq!(d.recent_error_message(), None, "nothing failed");
    let c = fake.counters();
    assert_eq!((c.streams_created, c.events_created, c.mallocs), (1, 1, 1));
    fake.assert_balanced();
}

/// One `Device` call, made on a device with the handles it needs.
type Call = fn(&mut AclDevice, &Handles) -> Result<(), AclCode>;

#[test]
fn each_failing_call_returns_its_code_and_keeps_the_librarys_message_once() {
    let calls: [(&str, Call); 14] = [
        ("aclrtSetDevice", |d, _| d.set_device()),
        ("aclrtSynchronizeDeviceWithTimeout", |d, _| d.synchronize_device(1_000)),
        ("aclrtResetDeviceForce", |d, _| d.reset_device_force()),
        ("aclrtCreateStreamWithConfig", |d, _| d.create_stream().map(|_| ())),
        ("aclrtDestroyStream", |d, r| d.destroy_stream(r.stream)),
        ("aclrtDestroyStreamForce", |d, r| d.destroy_stream_force(r.stream)),
        ("aclrtCreateEventExWithFlag", |d, _| d.create_event().map(|_| ())),
        ("aclrtRecordEvent", |d, r| d.record_event(r.event, r.stream)),
        ("aclrtSynchronizeEventWithTimeout", |d, r| d.synchronize_event(r.event, 1_000)),
        ("aclrtDestroyEvent", |d, r| d.destroy_event(r.event)),
        ("aclrtMalloc", |d, _| d.malloc(64).map(|_| ())),
        ("aclrtFree", |d, r| d.free(r.ptr)),
        ("aclrtMemcpy", |d, r| d.memcpy_to_device(r.ptr, &[1])),
        ("aclrtMemcpy", |d, r| d.memcpy_from_device(&mut [0], r.ptr)),
    ];
    for (symbol, call) in calls {
        let (fake, mut d) = common::opened();
        let resources = Handles::live(&mut d);
        fake.control.fail_call(symbol, CODE, 0, 1).unwrap();
        assert_eq!(call(&mut d, &resources), Err(code()), "{symbol}");
        let message = d.recent_error_message();
        assert!(
            message.as_deref().is_some_and(|m| m.contains(symbol) && m.contains("507899")),
            "{symbol}: {message:?}"
        );
        assert_eq!(d.recent_error_message(), None, "{symbol}: taken once");
        // The same call succeeds once the fault is spent, and clears nothing it should not.
        if symbol != "aclrtResetDeviceForce" {
            assert_eq!(call(&mut d, &resources), Ok(()), "{symbol} after the fault");
        }
    }
}

#[test]
fn a_successful_call_after_a_failure_leaves_no_stale_message() {
    let (fake, mut d) = common::opened();
    fake.control.fail_call("aclrtMalloc", CODE, 0, 1).unwrap();
    assert!(d.malloc(64).is_err());
    let ptr = d.malloc(64).unwrap();
    assert_eq!(d.recent_error_message(), None, "the last call succeeded");
    d.free(ptr).unwrap();
}

#[test]
fn a_runners_own_failed_call_keeps_its_message_through_check() {
    let (fake, mut d) = common::opened();
    fake.control.fail_call("runlanefake_launch", CODE, 0, 1).unwrap();
    let stream = d.create_stream().unwrap();
    let launched = common::launch_aicore(fake.control, stream, Duration::ZERO, Outcome::Ok);
    let Err(run_lane_fake_ascendcl::ControlError::Call { code: raw, .. }) = launched else {
        panic!("{launched:?}")
    };
    assert_eq!(d.check(raw), Err(code()));
    assert!(d.recent_error_message().is_some_and(|m| m.contains("runlanefake_launch")));
    assert_eq!(d.check(ACL_SUCCESS), Ok(()));
    assert_eq!(d.recent_error_message(), None, "a success keeps no text");
    d.destroy_stream(stream).unwrap();
}

#[test]
fn a_healthy_destroy_waits_for_queued_work_and_a_forced_one_does_not() {
    let (fake, mut d) = common::opened();
    let work = Duration::from_millis(200);
    let stream = d.create_stream().unwrap();
    common::launch_aicore(fake.control, stream, work, Outcome::Ok).unwrap();
    let start = Instant::now();
    d.destroy_stream(stream).unwrap();
    assert!(start.elapsed() >= work, "aclrtDestroyStream waited for the kernel");
    // A hung kernel (it would run to the 45 s op timeout): the forced destroy returns at
    // once, the test does not wait it out.
    let stuck = d.create_stream().unwrap();
    common::launch_aicore(fake.control, stuck, Duration::ZERO, Outcome::Hang).unwrap();
    d.destroy_stream_force(stuck).unwrap();
    let c = fake.counters();
    assert_eq!(c.streams_destroyed, 2);
    fake.assert_balanced();
}

#[test]
fn recovery_drains_force_resets_and_the_next_call_rebinds_while_old_handles_are_dead() {
    let (fake, mut d) = common::opened();
    let old = d.create_stream().unwrap();
    let _event = d.create_event().unwrap();
    let _ptr = d.malloc(64).unwrap();
    d.synchronize_device(1_000).unwrap();
    d.reset_device_force().unwrap();
    // The fake unbinds every thread at a reset; the device binds again before its next call.
    let fresh = d.create_stream().unwrap();
    assert_ne!(fresh, old);
    assert!(d.destroy_stream(old).is_err(), "a handle from before the reset is dead");
    d.destroy_stream(fresh).unwrap();
    let c = fake.counters();
    assert_eq!(c.force_resets, 1);
    assert_eq!((c.streams_reclaimed, c.events_reclaimed, c.allocations_reclaimed), (1, 1, 1));
    fake.assert_balanced();
}

#[test]
fn the_symbol_table_has_no_plain_reset_so_none_can_follow_a_force_reset() {
    assert!(ascend_cl_sys::SYMBOLS.contains(&"aclrtResetDeviceForce"));
    assert!(!ascend_cl_sys::SYMBOLS.contains(&"aclrtResetDevice"));
}

#[test]
fn a_call_from_a_second_thread_binds_that_thread_first() {
    let (fake, mut d) = common::opened();
    let acl_unbound = std::thread::scope(|s| {
        // A thread that never bound gets 107002 from a raw call: binding is needed.
        s.spawn(|| {
            let mut stream: AclrtStream = std::ptr::null_mut();
            // SAFETY: `stream` is a writable handle slot.
            unsafe { d.acl().aclrtCreateStreamWithConfig(&mut stream, 0, 0) }
        })
        .join()
        .unwrap()
    });
    assert_eq!(acl_unbound, ACL_ERROR_RT_CONTEXT_NULL);
    let (d, stream) = std::thread::spawn(move || {
        let stream = d.create_stream();
        (d, stream)
    })
    .join()
    .unwrap();
    let mut d = d;
    let stream = stream.expect("the device bound the new thread before creating");
    // Back on this thread (bound at open, but the device moved): it binds again.
    d.destroy_stream(stream).unwrap();
    fake.assert_balanced();
}

#[test]
fn a_failed_bind_on_a_new_thread_is_the_calls_failure() {
    let (fake, d) = common::opened();
    fake.control.fail_call("aclrtSetDevice", CODE, 0, 1).unwrap();
    let result = std::thread::spawn(move || {
        let mut d = d;
        let first = d.create_stream().map(|_| ());
        let message = d.recent_error_message();
        let second = d.create_stream();
        if let Ok(stream) = second {
            d.destroy_stream(stream).unwrap();
        }
        (first, message, second.is_ok())
    })
    .join()
    .unwrap();
    assert_eq!(result.0, Err(code()));
    assert!(result.1.is_some_and(|m| m.contains("aclrtSetDevice")));
    assert!(result.2, "the next call binds and succeeds");
    fake.assert_balanced();
}

#[test]
fn an_event_query_says_not_ready_behind_a_running_kernel_and_ready_once_it_ends_without_waiting() {
    let (fake, mut d) = common::opened();
    let stream = d.create_stream().unwrap();
    let event = d.create_event().unwrap();
    assert_eq!(d.query_event(event), Ok(true), "a never-recorded event reads complete, as on ACL");
    common::launch_aicore(fake.control, stream, Duration::from_millis(300), Outcome::Ok).unwrap();
    d.record_event(event, stream).unwrap();
    // Not ready: a query that waited would have answered complete.
    assert_eq!(d.query_event(event), Ok(false), "the kernel still runs");
    d.synchronize_event(event, 30_000).unwrap();
    assert_eq!(d.query_event(event), Ok(true), "the kernel ended");
    let mut waiter = d.completion_waiter().unwrap();
    assert_eq!(waiter.query_event(event), Ok(true), "the waiter's query agrees");
    d.destroy_event(event).unwrap();
    assert_eq!(
        d.query_event(event),
        Err(AclCode::RtInvalidHandle),
        "a destroyed event is refused before it reaches the library"
    );
    d.destroy_stream(stream).unwrap();
    fake.assert_balanced();
}

#[test]
fn a_reset_the_runtime_made_is_adopted_its_handles_refused_and_the_next_call_binds_again() {
    // L-24: the runtime resets the device through its own calls; `adopt_reset` is the lane
    // told so, with no device call of its own.
    let (fake, mut d) = common::opened();
    let stream = d.create_stream().unwrap();
    let event = d.create_event().unwrap();
    let resets = fake.counters().force_resets;
    // SAFETY: plain value; the runtime's own reset of the lane's device.
    let code_back = unsafe { d.acl().aclrtResetDeviceForce(0) };
    assert_eq!(code_back, ACL_SUCCESS);
    d.adopt_reset();
    assert_eq!(fake.counters().force_resets, resets + 1, "adopting made no reset");
    // The reset unbound this thread: the next call binds first, and says so when it fails.
    fake.control.fail_call("aclrtSetDevice", CODE, 0, 1).unwrap();
    assert_eq!(d.create_stream().map(|_| ()), Err(code()));
    // Bound again, its handles from before the reset are refused.
    assert_eq!(d.destroy_stream(stream), Err(AclCode::RtInvalidHandle));
    assert_eq!(d.destroy_event(event), Err(AclCode::RtInvalidHandle));
    let fresh = d.create_stream().expect("bound again");
    d.destroy_stream(fresh).unwrap();
}
