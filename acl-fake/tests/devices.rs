//! The fake's devices are isolated: sixteen by default, each with its own context generation,
//! thread bindings, streams, events, memory, fault rules and counters; the op timeout is
//! the process's, shared by every device. A handle of
//! one device is refused on another, a force reset of one leaves the others and the threads
//! bound to them alone, and a device's waits are woken by that device only.
//!
//! Like tests/fake.rs, every test holds the session (the fake is process-wide) and starts
//! from a reset fake. Nothing waits on a clock to synchronise: a waiter is known to be inside
//! its wait from the fake's `blocked_event_syncs` counter, and "still pending" comes from
//! kernels that hang until killed.

mod common;

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::thread::JoinHandle;

use ascend_cl_sys::Acl;
use ascend_cl_sys::types::*;
use common::*;
use run_lane_fake_ascendcl::{
    Control, DEFAULT_DEVICE_COUNT, ENGINE_AICORE, ENGINE_ANY, FakeCounters, MAX_DEVICES, Outcome,
    RESET_UNDER_WAIT,
};

/// A code no call returns on its own.
const OTHER_FAULT: AclError = 507_033;

/// A thread of its own, bound to one device at start, that runs the jobs it is sent in order:
/// a lane thread whose binding outlives the test's steps.
struct BoundThread {
    jobs: Option<mpsc::Sender<Box<dyn FnOnce() + Send>>>,
    thread: Option<JoinHandle<()>>,
}

impl BoundThread {
    fn on(device_id: i32) -> Self {
        let (jobs, queue) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let thread = std::thread::spawn(move || {
            bind(&fake().acl, device_id);
            for job in queue {
                job();
            }
        });
        Self { jobs: Some(jobs), thread: Some(thread) }
    }

    /// Runs `job` on the thread and returns its result.
    fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce(&'static Acl, &'static Control) -> R + Send + 'static,
    ) -> R {
        let (answer, result) = mpsc::channel();
        self.jobs
            .as_ref()
            .expect("running")
            .send(Box::new(move || {
                let fake = fake();
                let _ = answer.send(job(&fake.acl, &fake.control));
            }))
            .expect("the thread takes jobs");
        result.recv().expect("the job answered (it panicked if not)")
    }
}

impl Drop for BoundThread {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Handles cross threads as plain values.
fn stream_at(raw: usize) -> AclrtStream {
    raw as AclrtStream
}

fn event_at(raw: usize) -> AclrtEvent {
    raw as AclrtEvent
}

#[test]
fn sixteen_devices_are_served_by_default_ids_0_to_15_bind_and_16_is_refused() {
    let (_guard, acl, control) = session();
    assert_eq!(DEFAULT_DEVICE_COUNT, 16);
    assert_eq!(acl.device_count(), Ok(16));
    for id in 0..16 {
        bind(acl, id);
        let stream = create_stream(acl);
        assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS, "device {id}");
        let counters = control.device(id).counters().expect("counters");
        assert_eq!(counters.streams_created, 1, "device {id} counted its own stream");
    }
    for id in [16, 17, -1] {
        assert_eq!(set_device(acl, id), ACL_ERROR_RT_INVALID_DEVICEID, "set device {id}");
        assert_eq!(force_reset(acl, id), ACL_ERROR_RT_INVALID_DEVICEID, "reset {id}");
    }
    // The count moves up to the fake's capacity and no further.
    let max = i32::try_from(MAX_DEVICES).expect("small");
    control.set_device_count(MAX_DEVICES).expect("count");
    bind(acl, max - 1);
    assert!(control.set_device_count(MAX_DEVICES + 1).is_err());
    // The per-device control functions take any id the fake has, and no other.
    assert!(control.device(max - 1).counters().is_ok());
    assert!(control.device(max).counters().is_err());
    assert!(control.device(-1).clear_faults().is_err());
    assert_all_balanced(control);
}

#[test]
fn a_thread_has_one_current_device_and_binding_another_switches_it() {
    let (_guard, acl, control) = session();
    let on_0 = create_stream(acl);
    bind(acl, 1);
    let on_1 = create_stream(acl);
    assert_eq!(
        destroy_stream(acl, on_0),
        ACL_ERROR_RT_STREAM_CONTEXT,
        "the thread now acts on device 1"
    );
    let live = |id: i32| control.device(id).counters().expect("counters").live_streams;
    assert_eq!((live(0), live(1)), (1, 1));
    bind(acl, 0);
    assert_eq!(destroy_stream(acl, on_0), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, on_1), ACL_ERROR_RT_STREAM_CONTEXT);
    bind(acl, 1);
    assert_eq!(destroy_stream(acl, on_1), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn handles_are_unique_across_devices_and_a_reset_never_reuses_one() {
    let (_guard, acl, control) = session();
    let mut seen = BTreeSet::new();
    let mut live = Vec::new();
    for id in 0..16 {
        bind(acl, id);
        let (stream, event) = stream_and_event(acl);
        assert!(seen.insert(stream as usize) && seen.insert(event as usize));
        live.push((id, stream, event));
    }
    let (_, old_stream, old_event) = live[3];
    reset_and_bind(acl, 3);
    let fresh = create_stream(acl);
    assert!(seen.insert(fresh as usize), "a new handle after the reset");
    assert_eq!(destroy_stream(acl, old_stream), ACL_ERROR_RT_INVALID_HANDLE);
    assert_eq!(destroy_event(acl, old_event), ACL_ERROR_RT_INVALID_HANDLE);
    assert_eq!(destroy_stream(acl, fresh), ACL_SUCCESS);
    for (id, stream, event) in live.into_iter().filter(|(id, ..)| *id != 3) {
        bind(acl, id);
        destroy_both(acl, stream, event);
    }
    assert_all_balanced(control);
}

#[test]
fn a_handle_of_another_device_is_refused_with_the_closest_acl_code_and_stays_usable_on_its_own() {
    let (_guard, acl, control) = session();
    let (s0, e0) = stream_and_event(acl);
    let [p0, h0] = [malloc(acl, 16), malloc_host(acl, 16)];
    bind(acl, 1);
    let (s1, e1) = stream_and_event(acl);
    let p1 = malloc(acl, 16);
    // A stream of device 0: "stream not in the current context".
    let context = ACL_ERROR_RT_STREAM_CONTEXT;
    assert_eq!(try_record(acl, e1, s0), context);
    assert_eq!(destroy_stream(acl, s0), context);
    assert_eq!(destroy_stream_force(acl, s0), context);
    assert_eq!(stream_wait(acl, s0, e1), context);
    assert_eq!(launch_code(launch(control, s0, ENGINE_AICORE, 0)), context);
    // Device memory of this device and a stream of another: refused first.
    assert_eq!(copy_async(acl, [p1, p1], 16, ACL_MEMCPY_DEVICE_TO_DEVICE, s0), context);
    // An event of device 0 is no handle of this context.
    let invalid = ACL_ERROR_RT_INVALID_HANDLE;
    assert_eq!(try_record(acl, e0, s1), invalid);
    assert_eq!(query(acl, e0), Err(invalid));
    assert_eq!(sync(acl, e0, LONG_MS), invalid);
    assert_eq!(stream_wait(acl, s1, e0), invalid);
    assert_eq!(destroy_event(acl, e0), invalid);
    // Memory of device 0 is not in this device's table: a bad address.
    assert_eq!(to_device(acl, p0, &[1; 16]), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(from_device(acl, p0, 16), Err(ACL_ERROR_RT_PARAM_INVALID));
    assert_eq!(free(acl, p0), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(free_host(acl, h0), ACL_ERROR_RT_PARAM_INVALID);
    // A value that was never a handle stays 107017, whichever device it seems to name.
    assert_eq!(destroy_stream(acl, 0x1010 as AclrtStream), invalid);
    // Nothing was touched: everything of device 0 works there.
    bind(acl, 0);
    assert_eq!(to_device(acl, p0, &[7; 16]), ACL_SUCCESS);
    record_and_wait(acl, e0, s0);
    assert_eq!(from_device(acl, p0, 16), Ok(vec![7; 16]));
    destroy_both(acl, s0, e0);
    assert_eq!(free(acl, p0), ACL_SUCCESS);
    assert_eq!(free_host(acl, h0), ACL_SUCCESS);
    bind(acl, 1);
    destroy_both(acl, s1, e1);
    assert_eq!(free(acl, p1), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn a_force_reset_of_one_device_leaves_every_other_device_and_its_threads_untouched() {
    let (_guard, _, control) = session();
    let lane_0 = BoundThread::on(0);
    let lane_1 = BoundThread::on(1);
    let (s0, e0, p0) = lane_0.run(|acl, _| {
        let (stream, event) = stream_and_event(acl);
        (stream as usize, event as usize, malloc(acl, 8) as usize)
    });
    let (s1, e1, p1) = lane_1.run(|acl, control| {
        let (stream, event) = stream_and_event(acl);
        launch_hang(control, stream);
        record(acl, event, stream);
        (stream as usize, event as usize, malloc(acl, 8) as usize)
    });
    // Reset from a third thread: it sets device 1 itself first (a force reset needs the
    // caller to have set the device since its last reset, device-truth §5).
    let reset = std::thread::spawn(|| {
        bind(&fake().acl, 1);
        force_reset(&fake().acl, 1)
    })
    .join()
    .expect("reset thread");
    assert_eq!(reset, ACL_SUCCESS);
    // Device 0's lane thread is still bound and its handles live: no new aclrtSetDevice.
    lane_0.run(move |acl, control| {
        let buffers = [std::ptr::null_mut(), p0 as *mut _];
        launch_writing(control, stream_at(s0), ENGINE_AICORE, 0, buffers, &[5; 8])
            .expect("launch on device 0");
        record_and_wait(acl, event_at(e0), stream_at(s0));
        assert_eq!(from_device(acl, p0 as *const _, 8), Ok(vec![5; 8]));
        destroy_both(acl, stream_at(s0), event_at(e0));
        assert_eq!(free(acl, p0 as *mut _), ACL_SUCCESS);
    });
    // Device 1's lane thread must bind again, and its old handles are dead.
    lane_1.run(move |acl, _| {
        assert_eq!(try_create_stream(acl), ACL_ERROR_RT_CONTEXT_NULL);
        assert_eq!(destroy_stream_force(acl, stream_at(s1)), ACL_ERROR_RT_CONTEXT_NULL);
        bind(acl, 1);
        assert_eq!(destroy_stream_force(acl, stream_at(s1)), ACL_ERROR_RT_INVALID_HANDLE);
        assert_eq!(destroy_event(acl, event_at(e1)), ACL_ERROR_RT_INVALID_HANDLE);
        assert_eq!(free(acl, p1 as *mut _), ACL_ERROR_RT_PARAM_INVALID);
        let fresh = create_stream(acl);
        assert_eq!(destroy_stream(acl, fresh), ACL_SUCCESS);
    });
    let c0 = control.device(0).counters().expect("counters");
    let c1 = control.device(1).counters().expect("counters");
    assert_eq!((c0.force_resets, c0.streams_reclaimed, c0.events_reclaimed), (0, 0, 0));
    let reclaimed = (c1.streams_reclaimed, c1.events_reclaimed, c1.allocations_reclaimed);
    assert_eq!((c1.force_resets, reclaimed), (1, (1, 1, 1)));
    assert_all_balanced(control);
}

#[test]
fn a_force_reset_under_a_wait_is_counted_and_wakes_only_its_own_devices_waiter_with_the_use_after_free_code()
 {
    let (_guard, acl, control) = session_expecting_resets_under_wait();
    let (s0, e0) = stream_and_event(acl);
    launch_hang(control, s0);
    record(acl, e0, s0);
    bind(acl, 1);
    let (s1, e1) = stream_and_event(acl);
    launch_hang(control, s1);
    record(acl, e1, s1);
    let (e0, e1) = (e0 as usize, e1 as usize);
    std::thread::scope(|scope| {
        let waiter = |device_id: i32, event: usize| {
            scope.spawn(move || {
                bind(acl, device_id);
                sync(acl, event_at(event), LONG_MS)
            })
        };
        let waiter_0 = waiter(0, e0);
        let waiter_1 = waiter(1, e1);
        wait_until("both waiters inside their waits", || {
            blocked_event_syncs(control, 0) == 1 && blocked_event_syncs(control, 1) == 1
        });
        let total_before = control.resets_under_wait();
        assert_eq!(force_reset(acl, 1), ACL_SUCCESS);
        assert_eq!(
            waiter_1.join().expect("waiter 1"),
            RESET_UNDER_WAIT,
            "on real ACL this waiter reads the deleted device: the fake's distinctive code"
        );
        assert_eq!(control.resets_under_wait(), total_before + 1);
        let under_wait =
            |id: i32| control.device(id).counters().expect("counters").resets_under_wait;
        assert_eq!((under_wait(1), under_wait(0)), (1, 0));
        assert_eq!(blocked_event_syncs(control, 0), 1, "device 0's waiter still waits");
        // Device 0's waiter ends with its own stream's fate.
        bind(acl, 0);
        assert_eq!(destroy_stream_force(acl, s0), ACL_SUCCESS);
        assert_eq!(waiter_0.join().expect("waiter 0"), ACL_ERROR_RT_STREAM_ABORT);
    });
    assert_eq!(destroy_event(acl, event_at(e0)), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn a_second_thread_waits_on_an_event_while_the_first_launches_and_records_others_on_that_device() {
    let (_guard, acl, control) = session();
    bind(acl, 2);
    let (held, awaited) = stream_and_event(acl);
    let (busy, other) = stream_and_event(acl);
    launch_hang(control, held);
    record(acl, awaited, held);
    let awaited_raw = awaited as usize;
    std::thread::scope(|scope| {
        let waiter = scope.spawn(move || {
            bind(acl, 2);
            sync(acl, event_at(awaited_raw), LONG_MS)
        });
        wait_until("the waiter inside its wait", || blocked_event_syncs(control, 2) == 1);
        for _ in 0..3 {
            launch(control, busy, ENGINE_AICORE, 1).expect("launch");
            record_and_wait(acl, other, busy);
        }
        assert_eq!(query(acl, awaited), Ok(ACL_EVENT_RECORDED_STATUS_NOT_READY));
        assert_eq!(blocked_event_syncs(control, 2), 1, "still waiting");
        assert_eq!(destroy_stream_force(acl, held), ACL_SUCCESS);
        assert_eq!(waiter.join().expect("waiter"), ACL_ERROR_RT_STREAM_ABORT);
        assert_eq!(sync(acl, awaited, LONG_MS), ACL_ERROR_RT_STREAM_ABORT, "a later wait too");
    });
    destroy_both(acl, busy, awaited);
    assert_eq!(destroy_event(acl, other), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn synchronize_device_drains_only_the_calling_threads_device() {
    let (_guard, acl, control) = session();
    bind(acl, 1);
    let hung = create_stream(acl);
    launch_hang(control, hung);
    bind(acl, 0);
    let faulted = create_stream(acl);
    control.fault_kernel(Outcome::Exception, ENGINE_ANY, 0, 1, &[]).expect("rule");
    launch(control, faulted, ENGINE_AICORE, 0).expect("launch");
    assert_eq!(
        sync_device(acl, LONG_MS),
        ACL_ERROR_RT_AICORE_EXCEPTION,
        "device 0 drains (device 1's hang is not waited for) and reports its own fault"
    );
    bind(acl, 2);
    assert_eq!(sync_device(acl, LONG_MS), ACL_SUCCESS, "device 2 is idle");
    bind(acl, 1);
    assert_eq!(sync_device(acl, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    assert_eq!(destroy_stream_force(acl, hung), ACL_SUCCESS);
    assert_eq!(sync_device(acl, LONG_MS), ACL_SUCCESS, "device 0's fault is not device 1's");
    bind(acl, 0);
    assert_eq!(destroy_stream_force(acl, faulted), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn fault_rules_of_one_device_never_fire_on_another() {
    let (_guard, acl, control) = session();
    let one = control.device(1);
    one.fail_call("aclrtSetDevice", OTHER_FAULT, 0, 1).expect("rule");
    one.fail_call("aclrtCreateStreamWithConfig", CODE_FAULT, 0, 1).expect("rule");
    one.fault_kernel(Outcome::Exception, ENGINE_ANY, 0, 1, &[]).expect("rule");
    one.fault_copy(CODE_FAULT, 0, 1).expect("rule");
    let h2d = |[dev, pinned]: [_; 2], stream| {
        copy_async(acl, [dev, pinned], 8, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    };
    // Device 0: every call of the rules' kinds succeeds.
    bind(acl, 0);
    let (stream, event) = stream_and_event(acl);
    let buffers = [malloc(acl, 8), malloc_host(acl, 8)];
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    assert_eq!(h2d(buffers, stream), ACL_SUCCESS);
    record(acl, event, stream);
    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "no rule fired here");
    // The legacy functions are device 0's, and clearing device 0 leaves device 1's rules.
    control.fail_call("aclrtMalloc", OTHER_FAULT, 0, 1).expect("rule");
    control.clear_faults().expect("clear device 0");
    let more = malloc(acl, 8);
    // Device 1: each rule fires once, on its own device.
    assert_eq!(set_device(acl, 1), OTHER_FAULT);
    bind(acl, 1);
    assert_eq!(try_create_stream(acl), CODE_FAULT);
    let (on_1, event_1) = stream_and_event(acl);
    launch(control, on_1, ENGINE_AICORE, 0).expect("launch");
    record_and_wait(acl, event_1, on_1);
    assert_eq!(sync_stream(acl, on_1, LONG_MS), ACL_ERROR_RT_AICORE_EXCEPTION);
    let fresh = create_stream(acl);
    let buffers_1 = [malloc(acl, 8), malloc_host(acl, 8)];
    assert_eq!(h2d(buffers_1, fresh), ACL_SUCCESS);
    record_and_wait(acl, event_1, fresh);
    assert_eq!(sync_stream(acl, fresh, LONG_MS), CODE_FAULT, "the copy rule fired");
    // A rule cleared on device 1 is gone there.
    one.fail_call("aclrtMalloc", OTHER_FAULT, 0, 1).expect("rule");
    one.clear_faults().expect("clear device 1");
    let dev_1b = malloc(acl, 8);
    destroy_all(acl, &[on_1, fresh], &[event_1], &[buffers_1[0], dev_1b]);
    assert_eq!(free_host(acl, buffers_1[1]), ACL_SUCCESS);
    bind(acl, 0);
    destroy_both(acl, stream, event);
    destroy_all(acl, &[], &[], &[buffers[0], more]);
    assert_eq!(free_host(acl, buffers[1]), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn counters_are_kept_per_device_and_the_legacy_counters_are_device_0s() {
    let (_guard, acl, control) = session();
    let on_0 = malloc(acl, 8);
    bind(acl, 5);
    let on_5 = [malloc(acl, 8), malloc(acl, 8)];
    let stream = create_stream(acl);
    assert_eq!(force_reset(acl, 5), ACL_SUCCESS);
    let c0 = control.device(0).counters().expect("counters");
    let c5 = control.device(5).counters().expect("counters");
    assert_eq!(control.counters().expect("counters"), c0);
    assert_eq!((c0.mallocs, c0.live_allocations, c0.force_resets), (1, 1, 0));
    let streams = (c5.streams_created, c5.streams_reclaimed);
    let allocations = (c5.mallocs, c5.allocations_reclaimed);
    assert_eq!((allocations, streams, c5.force_resets), ((2, 2), (1, 1), 1));
    assert!(c5.balanced() && !c0.balanced());
    let total = control.total_counters().expect("counters");
    assert_eq!((total.mallocs, total.live_allocations), (3, 1));
    assert!(!total.balanced(), "device 0 still holds its allocation");
    bind(acl, 5);
    for ptr in on_5 {
        assert_eq!(free(acl, ptr), ACL_ERROR_RT_PARAM_INVALID, "reclaimed");
    }
    assert_eq!(destroy_stream(acl, stream), ACL_ERROR_RT_INVALID_HANDLE);
    bind(acl, 0);
    assert_eq!(free(acl, on_0), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn one_op_timeout_serves_every_device_and_any_thread_sets_it_bound_or_not() {
    let (_guard, acl, control) = session();
    // Set on device 1's thread: device 0's kernels use it too (device-truth §5: one value
    // per process).
    bind(acl, 1);
    set_op_timeout_ms(acl, 20);
    bind(acl, 0);
    let on_0 = create_stream(acl);
    launch_hang(control, on_0);
    assert_eq!(
        sync_stream(acl, on_0, LONG_MS),
        ACL_ERROR_RT_AICORE_TIMEOUT,
        "device 0's hang ended at the 20 ms set from device 1"
    );
    assert_eq!(destroy_stream_force(acl, on_0), ACL_SUCCESS);
    // An unbound thread sets it too [I], and every device sees the new value.
    let unbound = std::thread::spawn(|| {
        let mut actual = 0;
        // SAFETY: `actual` is writable.
        let code = unsafe { fake().acl.aclrtSetOpExecuteTimeOutV2(0, &mut actual) };
        (code, actual)
    })
    .join()
    .expect("thread");
    assert_eq!(unbound, (ACL_SUCCESS, u64::MAX), "0 is the maximum");
    bind(acl, 1);
    let (on_1, pending) = stream_and_event(acl);
    launch_hang(control, on_1);
    record(acl, pending, on_1);
    assert_eq!(
        sync(acl, pending, 200),
        ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
        "the unbound thread's 0 (never) replaced the 20 ms on device 1 too"
    );
    destroy_all(acl, &[on_1], &[pending], &[]);
    // A force reset keeps it; the whole-fake reset restores the 1091 s default.
    set_op_timeout_ms(acl, 20);
    reset_and_bind(acl, 1);
    let after = create_stream(acl);
    launch_hang(control, after);
    assert_eq!(sync_stream(acl, after, LONG_MS), ACL_ERROR_RT_AICORE_TIMEOUT);
    assert_eq!(destroy_stream_force(acl, after), ACL_SUCCESS);
    assert_all_balanced(control);
}

#[test]
fn the_whole_fake_reset_unbinds_every_device_and_serves_sixteen_again() {
    let (_guard, acl, control) = session();
    control.set_device_count(4).expect("count");
    bind(acl, 3);
    let _stream = create_stream(acl);
    let three = control.device(3);
    three.fail_call("aclrtMalloc", CODE_FAULT, 0, 1).expect("rule");
    control.reset().expect("reset");
    assert_eq!(acl.device_count(), Ok(16));
    assert_eq!(
        try_create_stream(acl),
        ACL_ERROR_RT_CONTEXT_NULL,
        "the binding to device 3 is gone"
    );
    assert_eq!(three.counters().expect("counters"), FakeCounters::ZERO);
    bind(acl, 3);
    let ptr = malloc(acl, 8);
    assert_eq!(free(acl, ptr), ACL_SUCCESS, "the rule was dropped too");
    assert_all_balanced(control);
}

#[test]
fn sixteen_threads_each_on_its_own_device_work_at_once_and_resets_of_half_leave_the_rest_alone() {
    let (_guard, acl, control) = session();
    let resets_done = std::sync::Barrier::new(16);
    std::thread::scope(|scope| {
        for id in 0..16 {
            let resets_done = &resets_done;
            scope.spawn(move || {
                bind(acl, id);
                let (stream, event) = stream_and_event(acl);
                let header = malloc(acl, 4);
                let round = || {
                    let bytes = id.to_le_bytes();
                    let buffers = [std::ptr::null_mut(), header];
                    launch_writing(control, stream, ENGINE_AICORE, 0, buffers, &bytes)
                        .expect("launch");
                    record(acl, event, stream);
                    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "device {id}");
                    assert_eq!(from_device(acl, header, 4), Ok(bytes.to_vec()));
                };
                let odd = id % 2 == 1;
                // A failure before the barrier still reaches it (else the others wait there
                // for good), and is raised after it.
                let before = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    for _ in 0..3 {
                        round();
                    }
                    if odd {
                        assert_eq!(force_reset(acl, id), ACL_SUCCESS);
                    }
                }));
                // Every odd device has been reset before any thread goes on.
                resets_done.wait();
                if let Err(panic) = before {
                    std::panic::resume_unwind(panic);
                }
                if odd {
                    assert_eq!(
                        destroy_stream(acl, stream),
                        ACL_ERROR_RT_CONTEXT_NULL,
                        "device {id}"
                    );
                    bind(acl, id);
                    assert_eq!(destroy_event(acl, event), ACL_ERROR_RT_INVALID_HANDLE);
                } else {
                    round();
                    destroy_both(acl, stream, event);
                    assert_eq!(free(acl, header), ACL_SUCCESS);
                }
            });
        }
    });
    for id in 0..16 {
        let c = control.device(id).counters().expect("counters");
        let even_ran = if id % 2 == 0 { 4 } else { 3 };
        assert_eq!((c.launches, c.force_resets), (even_ran, u64::from(id % 2 == 1)), "device {id}");
    }
    assert_all_balanced(control);
}
