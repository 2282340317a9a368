//! Two lanes in one process, each on its own device of the fake: every `AclDevice` binds its
//! lane thread (and its host workers) to its own device id, so each has its own streams and
//! events, a force reset of one leaves the other bound and working, a fault rule of one never
//! fires on the other, and a handle of one is refused on a thread bound to the other.

mod common;

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use ascend_cl_sys::types::{ACL_ERROR_RT_CONTEXT_NULL, ACL_SUCCESS, AclrtStream};
use backend_acl::{AclConfig, AclDevice};
use lane_core::status_latch::AclCode;
use lane_driver::Device;
use run_lane_fake_ascendcl::Outcome;

/// A code no call returns on its own, so a failure is the injected one.
const CODE: i32 = 507_899;

fn code(raw: i32) -> AclCode {
    AclCode::from_raw(raw).expect("a failure code")
}

type Job = Box<dyn FnOnce(&mut AclDevice) + Send>;

/// A lane thread: opens its `AclDevice` on a thread of its own (so the open binds that
/// thread, as a lane service's thread is bound) and runs the jobs it is sent on it, in order.
struct LaneThread {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl LaneThread {
    fn open(config: AclConfig) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::spawn(move || {
            let (mut device, _) = AclDevice::open(config).unwrap_or_else(|e| panic!("{e}"));
            for job in queue {
                job(&mut device);
            }
        });
        let lane = Self { jobs: Some(jobs), thread: Some(thread) };
        // Returns once the open (which binds the thread) is made, so a test's next step
        // (a failing bind, say) never races it.
        lane.run(|_| ());
        lane
    }

    /// Runs `job` with the lane's device on the lane thread and returns its result.
    fn run<R: Send + 'static>(&self, job: impl FnOnce(&mut AclDevice) -> R + Send + 'static) -> R {
        let (answer, result) = mpsc::channel();
        self.jobs
            .as_ref()
            .expect("running")
            .send(Box::new(move |device: &mut AclDevice| {
                let _ = answer.send(job(device));
            }))
            .expect("the lane thread takes jobs");
        result.recv().expect("the job answered (the lane thread panicked if not)")
    }
}

impl Drop for LaneThread {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens device `device_id` of the fake on a lane thread of its own.
fn lane(fake: &common::Fake, device_id: i32) -> LaneThread {
    LaneThread::open(fake.config_on(device_id))
}

/// A raw stream create on the calling thread, with no bind first: 0 only when the thread is
/// bound to a live context (the stream is destroyed again).
fn raw_create_stream(device: &AclDevice) -> i32 {
    let mut stream: AclrtStream = std::ptr::null_mut();
    // SAFETY: `stream` is a writable handle slot.
    let code = unsafe { device.acl().aclrtCreateStreamWithConfig(&mut stream, 0, 0) };
    if code == ACL_SUCCESS {
        assert_eq!(
            // SAFETY: the stream just created on this thread's device.
            unsafe { device.acl().aclrtDestroyStream(stream) },
            ACL_SUCCESS
        );
    }
    code
}

#[test]
fn two_devices_open_in_one_process_each_with_its_own_streams_and_events() {
    let fake = common::fake();
    let control = fake.control;
    let lanes = [lane(&fake, 0), lane(&fake, 1)];
    let mut handles = Vec::new();
    for (id, lane) in lanes.iter().enumerate() {
        let made = lane.run(move |d| {
            assert_eq!(d.device_id(), i32::try_from(id).unwrap());
            let streams = [d.create_stream().unwrap(), d.create_stream().unwrap()];
            let events = [d.create_event().unwrap(), d.create_event().unwrap()];
            for (stream, event) in streams.into_iter().zip(events) {
                common::launch_aicore(control, stream, Duration::ZERO, Outcome::Ok).unwrap();
                d.record_event(event, stream).unwrap();
                d.synchronize_event(event, 30_000).unwrap();
            }
            (streams, events)
        });
        handles.push(made);
    }
    let all: std::collections::BTreeSet<u64> = handles
        .iter()
        .flat_map(|(s, e)| s.iter().map(|h| h.0).chain(e.iter().map(|h| h.0)))
        .collect();
    assert_eq!(all.len(), 8, "no handle is shared between the devices");
    for id in [0, 1] {
        let c = control.device(id).counters().unwrap();
        assert_eq!(
            (c.streams_created, c.events_created, c.launches),
            (2, 2, 2),
            "device {id} holds only its own lane's work"
        );
    }
    for ((streams, events), lane) in handles.into_iter().zip(&lanes) {
        lane.run(move |d| {
            for stream in streams {
                d.destroy_stream(stream).unwrap();
            }
            for event in events {
                d.destroy_event(event).unwrap();
            }
        });
    }
    let total = control.total_counters().unwrap();
    assert!(total.balanced(), "{total:#?}");
}

#[test]
fn a_force_reset_of_device_1_leaves_device_0_bound_and_working_while_device_1_binds_again() {
    let fake = common::fake();
    let control = fake.control;
    let (lane_0, lane_1) = (lane(&fake, 0), lane(&fake, 1));
    let (s0, e0, binding_0) =
        lane_0.run(|d| (d.create_stream().unwrap(), d.create_event().unwrap(), d.worker_binding()));
    // Each device id's count is the process's (earlier tests' resets count too).
    let before = (binding_0.resets(), lane_1.run(|d| d.worker_binding().resets()));
    let (s1, binding_1) = lane_1.run(move |d| {
        let stream = d.create_stream().unwrap();
        let event = d.create_event().unwrap();
        let _ptr = d.malloc(64).unwrap();
        common::launch_aicore(control, stream, Duration::ZERO, Outcome::Hang).unwrap();
        d.record_event(event, stream).unwrap();
        d.reset_device_force().unwrap();
        (stream, d.worker_binding())
    });
    assert_eq!(
        (binding_0.resets(), binding_1.resets()),
        (before.0, before.1 + 1),
        "only device 1's count moved"
    );
    // Device 0's lane thread is still bound: a raw call needs no bind, and its handles work.
    lane_0.run(move |d| {
        assert_eq!(raw_create_stream(d), ACL_SUCCESS, "still bound to device 0");
        common::launch_aicore(control, s0, Duration::ZERO, Outcome::Ok).unwrap();
        d.record_event(e0, s0).unwrap();
        d.synchronize_event(e0, 30_000).unwrap();
        d.synchronize_device(30_000).unwrap();
        d.destroy_event(e0).unwrap();
        d.destroy_stream(s0).unwrap();
    });
    // Device 1's lane thread lost its context; the device binds again before its next call,
    // and the handles from before the reset are dead.
    lane_1.run(move |d| {
        assert_eq!(raw_create_stream(d), ACL_ERROR_RT_CONTEXT_NULL);
        assert_eq!(d.destroy_stream(s1), Err(AclCode::RtInvalidHandle));
        let fresh = d.create_stream().unwrap();
        d.destroy_stream(fresh).unwrap();
    });
    let (c0, c1) = (control.device(0).counters().unwrap(), control.device(1).counters().unwrap());
    assert_eq!((c0.force_resets, c0.streams_reclaimed), (0, 0));
    assert_eq!(
        (c1.force_resets, c1.streams_reclaimed, c1.events_reclaimed, c1.allocations_reclaimed),
        (1, 1, 1, 1)
    );
    assert!(control.total_counters().unwrap().balanced());
}

#[test]
fn a_fault_rule_installed_on_device_1_does_not_fire_on_device_0() {
    let fake = common::fake();
    let control = fake.control;
    let (lane_0, lane_1) = (lane(&fake, 0), lane(&fake, 1));
    let one = control.device(1);
    one.fail_call("aclrtCreateStreamWithConfig", CODE, 0, 1).unwrap();
    one.fault_kernel(Outcome::Exception, run_lane_fake_ascendcl::ENGINE_ANY, 0, 1, &[]).unwrap();
    let run_one = move |d: &mut AclDevice| {
        let stream = d.create_stream();
        let message = d.recent_error_message();
        let stream = match stream {
            Ok(stream) => stream,
            Err(_) => d.create_stream().unwrap(),
        };
        let event = d.create_event().unwrap();
        common::launch_aicore(control, stream, Duration::ZERO, Outcome::Ok).unwrap();
        d.record_event(event, stream).unwrap();
        // The event completes whatever the kernel did (device-truth §1); only the stream
        // synchronize materializes a fault.
        d.synchronize_event(event, 30_000).unwrap();
        let synced = d.synchronize_stream(stream, 30_000);
        d.destroy_event(event).unwrap();
        d.destroy_stream_force(stream).unwrap();
        (message, synced)
    };
    assert_eq!(
        lane_0.run(run_one),
        (None, Ok(())),
        "device 0 made the same calls with no rule firing"
    );
    let (message, synced) = lane_1.run(run_one);
    assert!(
        message.is_some_and(|m| m.contains("aclrtCreateStreamWithConfig")),
        "device 1's call rule fired"
    );
    assert_eq!(synced, Err(code(507_015)), "device 1's kernel rule fired");
    assert!(control.total_counters().unwrap().balanced());
}

#[test]
fn a_handle_of_device_0_used_on_a_thread_bound_to_device_1_is_refused() {
    let fake = common::fake();
    let (lane_0, lane_1) = (lane(&fake, 0), lane(&fake, 1));
    let (s0, e0, p0) = lane_0
        .run(|d| (d.create_stream().unwrap(), d.create_event().unwrap(), d.malloc(64).unwrap()));
    lane_1.run(move |d| {
        let s1 = d.create_stream().unwrap();
        let e1 = d.create_event().unwrap();
        assert_eq!(d.destroy_stream(s0), Err(AclCode::RtStreamContext));
        assert_eq!(d.destroy_stream_force(s0), Err(AclCode::RtStreamContext));
        assert_eq!(d.record_event(e1, s0), Err(AclCode::RtStreamContext));
        assert_eq!(d.stream_wait_event(s0, e1), Err(AclCode::RtStreamContext));
        assert_eq!(d.record_event(e0, s1), Err(AclCode::RtInvalidHandle));
        assert_eq!(d.synchronize_event(e0, 1_000), Err(AclCode::RtInvalidHandle));
        assert_eq!(d.destroy_event(e0), Err(AclCode::RtInvalidHandle));
        assert_eq!(d.memcpy_to_device(p0, &[1; 8]), Err(AclCode::RtParamInvalid));
        assert_eq!(d.free(p0), Err(AclCode::RtParamInvalid));
        d.destroy_event(e1).unwrap();
        d.destroy_stream(s1).unwrap();
    });
    // Refused, not harmed: device 0's lane still owns and uses them.
    lane_0.run(move |d| {
        d.memcpy_to_device(p0, &[1; 8]).unwrap();
        d.record_event(e0, s0).unwrap();
        d.synchronize_event(e0, 30_000).unwrap();
        d.destroy_event(e0).unwrap();
        d.destroy_stream(s0).unwrap();
        d.free(p0).unwrap();
    });
    assert!(fake.control.total_counters().unwrap().balanced());
}

#[test]
fn a_reset_of_device_1_under_a_workers_wait_is_counted_as_the_hazard_and_device_0_carries_on() {
    let fake = common::fake();
    let control = fake.control;
    let (lane_0, lane_1) = (lane(&fake, 0), lane(&fake, 1));
    let (awaited, binding) = lane_1.run(move |d| {
        let stream = d.create_stream().unwrap();
        let event = d.create_event().unwrap();
        common::launch_aicore(control, stream, Duration::ZERO, Outcome::Hang).unwrap();
        d.record_event(event, stream).unwrap();
        (event, d.worker_binding())
    });
    assert_eq!(binding.device_id(), 1);
    // A completion waiter: a second thread bound to the lane's device with its binding.
    let waiter = std::thread::spawn(move || {
        binding.bind().unwrap();
        // SAFETY: an event of the device this thread just bound.
        unsafe {
            binding.acl().aclrtSynchronizeEventWithTimeout(awaited.0 as usize as *mut _, 30_000)
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while control.device(1).counters().unwrap().blocked_event_syncs != 1 {
        assert!(std::time::Instant::now() < deadline, "the waiter never entered its wait");
        std::thread::yield_now();
    }
    // Both lane threads keep working meanwhile, each on its own device.
    for lane in [&lane_0, &lane_1] {
        lane.run(move |d| {
            let stream = d.create_stream().unwrap();
            let event = d.create_event().unwrap();
            common::launch_aicore(control, stream, Duration::ZERO, Outcome::Ok).unwrap();
            d.record_event(event, stream).unwrap();
            d.synchronize_event(event, 30_000).unwrap();
            d.destroy_event(event).unwrap();
            d.destroy_stream(stream).unwrap();
        });
    }
    lane_1.run(|d| d.reset_device_force().unwrap());
    // The hazard L-20 forbids, made on purpose: the fake ends the wait with its
    // reset-under-wait code and counts it (real ACL would read freed memory).
    assert_eq!(
        waiter.join().unwrap(),
        run_lane_fake_ascendcl::RESET_UNDER_WAIT,
        "the reset ended the waiter's wait"
    );
    assert_eq!(control.device(1).counters().unwrap().resets_under_wait, 1);
    fake.expect_resets_under_wait();
    assert_eq!(control.device(0).counters().unwrap().force_resets, 0);
    assert!(control.total_counters().unwrap().balanced());
}

#[test]
fn two_devices_driven_from_one_thread_each_bind_again_after_the_other_bound() {
    // ACL keeps one current device per thread: device 1's bind switches the thread away
    // from device 0, so device 0's next call must bind again (keyed by device, not only by
    // thread), or it would act on device 1's context.
    let (fake, mut zero) = common::opened();
    let (mut one, _) = AclDevice::open(fake.config_on(1)).unwrap_or_else(|e| panic!("{e}"));
    let on_zero = zero.create_stream().unwrap();
    let on_one = one.create_stream().unwrap();
    for id in [0, 1] {
        assert_eq!(
            fake.control.device(id).counters().unwrap().streams_created,
            1,
            "each device made its own stream"
        );
    }
    zero.destroy_stream(on_zero)
        .expect("device 0's stream, destroyed on device 0 after device 1 bound");
    one.destroy_stream(on_one).unwrap();
    assert!(control_balanced(&fake));
}

#[test]
fn a_force_reset_by_one_lane_makes_every_thread_bound_to_that_device_id_bind_again() {
    // A force reset unbinds every thread from its device, whichever lane made it: a second
    // lane on the same device id binds its thread again before its next call, instead of
    // calling on a dead context, and its handles from before the reset are refused.
    let fake = common::fake();
    let (first, second) = (lane(&fake, 0), lane(&fake, 0));
    let (stream, binding) = second.run(|d| (d.create_stream().unwrap(), d.worker_binding()));
    let before = binding.resets();
    first.run(|d| d.reset_device_force().unwrap());
    assert_eq!(binding.resets(), before + 1, "the device id's count is shared");
    // The next bind fails: a call that binds first reports it.
    fake.control.fail_call("aclrtSetDevice", CODE, 0, 1).unwrap();
    second.run(move |d| {
        assert_eq!(
            raw_create_stream(d),
            ACL_ERROR_RT_CONTEXT_NULL,
            "the reset unbound the second lane's thread"
        );
        assert_eq!(
            d.create_stream().map(|_| ()),
            Err(code(CODE)),
            "the second lane's device bound its thread again before the call"
        );
        assert_eq!(d.destroy_stream(stream), Err(AclCode::RtInvalidHandle));
        let fresh = d.create_stream().expect("bound now");
        d.destroy_stream(fresh).unwrap();
    });
    assert!(control_balanced(&fake));
}

#[test]
fn a_bound_thread_makes_no_bind_call_until_a_reset_of_its_device() {
    // The binding is kept per thread (the device keeps nothing per thread): calls on a bound
    // thread make no aclrtSetDevice, and the first call after a force reset makes one.
    let fake = common::fake();
    let lane_thread = lane(&fake, 0);
    // Threads that come and go on the same device id change nothing for it.
    for _ in 0..4 {
        let passing = lane(&fake, 0);
        passing.run(|d| {
            let stream = d.create_stream().unwrap();
            d.destroy_stream(stream).unwrap();
        });
    }
    // Any bind from now on fails: a call that made one would report it.
    fake.control.fail_call("aclrtSetDevice", CODE, 0, 1).unwrap();
    lane_thread.run(|d| {
        for _ in 0..4 {
            let stream = d.create_stream().expect("no bind on a bound thread");
            d.destroy_stream(stream).unwrap();
        }
        d.reset_device_force().unwrap();
        assert_eq!(
            d.create_stream().map(|_| ()),
            Err(code(CODE)),
            "the first call after the reset binds first"
        );
        let stream = d.create_stream().expect("bound again");
        d.destroy_stream(stream).unwrap();
    });
    assert!(control_balanced(&fake));
}

fn control_balanced(fake: &common::Fake) -> bool {
    fake.control.total_counters().unwrap().balanced()
}
