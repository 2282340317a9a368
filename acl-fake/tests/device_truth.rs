//! The fake behaves as a real Ascend device does (reference/device-truth.md), through its C
//! symbols: completion is not the verdict (§1), continue-on-failure, the stream synchronize
//! and the thread's last error, a run's launch with its record region (§2, §3; what the
//! record says is device-model's, tested there), the small codes (§6), and each switch where
//! the hardware is not known (a stream's number after a force reset, §4, among them).

mod common;

use core::ffi::c_void;
use std::time::Duration;

use ascend_cl_sys::Acl;
use ascend_cl_sys::types::*;
use common::*;
use run_lane_fake_ascendcl::{
    Control, DeviceControl, ENGINE_AICORE, ENGINE_AICPU, EnqueueAfterFault, OpTimeoutCodeOn,
    Outcome, RunKernel, SWITCH_LEGACY_EVENT_FAULTS, SWITCH_RESET_RESTARTS_STREAM_NUMBERING,
    Semantics,
};
use status_latch::{
    HeaderLayout, RECORD_BYTES, Record, RecordSource, RuntimeCode, Status, decode_record,
};

/// A status header of `layout` with `code` latched by the orchestrator.
fn latched_header(layout: HeaderLayout, code: RuntimeCode) -> Vec<u8> {
    let status = Status { orch: Some(code), ..Status::clean(layout) };
    let mut bytes = status_latch::encode(layout, &status);
    if layout == HeaderLayout::TensormapAndRingbuffer {
        // Something recognisable in the error tail past the latch words.
        bytes[844..848].copy_from_slice(&[0xAB; 4]);
    }
    bytes
}

/// A zeroed 280-byte record region (device memory holds garbage; the lane zeroes it once).
fn record_region(acl: &Acl) -> *mut c_void {
    let region = malloc(acl, RECORD_BYTES);
    assert_eq!(to_device(acl, region, &[0; RECORD_BYTES]), ACL_SUCCESS);
    region
}

fn read_record(acl: &Acl, region: *mut c_void) -> Vec<u8> {
    from_device(acl, region, RECORD_BYTES).expect("record")
}

/// One run's streams and events, launched in the lane's order (device-truth §3):
/// AICore: kernel -> record core_done; AICPU: kernel -> wait core_done -> record boundary.
struct Pair {
    core: AclrtStream,
    cpu: AclrtStream,
    core_done: AclrtEvent,
    boundary: AclrtEvent,
}

impl Pair {
    fn new(acl: &Acl) -> Self {
        Self {
            core: create_stream(acl),
            cpu: create_stream(acl),
            core_done: create_event(acl),
            boundary: create_event(acl),
        }
    }

    /// Launches one run: `core` and `cpu` describe the two kernels (their streams, handshake
    /// and epoch are filled in here).
    fn launch(
        &self,
        acl: &Acl,
        control: &Control,
        [mut core, mut cpu]: [RunKernel<'_>; 2],
        handshake: *mut c_void,
        epoch: u64,
    ) {
        (core.stream, core.engine) = (self.core, ENGINE_AICORE);
        (cpu.stream, cpu.engine) = (self.cpu, ENGINE_AICPU);
        for kernel in [&mut core, &mut cpu] {
            (kernel.handshake, kernel.epoch) = (handshake, epoch);
        }
        control.launch_run(&core).expect("AICore launch");
        record(acl, self.core_done, self.core);
        control.launch_run(&cpu).expect("AICPU launch");
        assert_eq!(stream_wait(acl, self.cpu, self.core_done), ACL_SUCCESS);
        record(acl, self.boundary, self.cpu);
    }

    fn destroy(self, acl: &Acl) {
        destroy_all(acl, &[self.core, self.cpu], &[self.core_done, self.boundary], &[]);
    }
}

/// A stand-in handshake address: only a key, never dereferenced.
fn handshake(n: usize) -> *mut c_void {
    (0x1000 * n) as *mut c_void
}

/// device-truth §1's table, from the event wait to the last error, for a run whose kernel on
/// `stream` left `code`, with `events` recorded after it.
fn assert_completion_is_not_the_verdict(
    acl: &Acl,
    control: &Control,
    events: &[AclrtEvent],
    stream: AclrtStream,
    code: AclError,
) {
    let complete = Ok(ACL_EVENT_RECORDED_STATUS_COMPLETE);
    for &event in events {
        assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "the event wait is 0");
        assert_eq!(query(acl, event), complete, "the query says complete");
    }
    let (peek, get) = (|| control.peek_at_last_error(), || control.get_last_error());
    assert_eq!(peek(), ACL_SUCCESS, "peek is 0 before a sync");
    let zero = sync_stream(acl, stream, 0);
    assert_eq!(zero, ACL_ERROR_RT_PARAM_INVALID, "a zero timeout is refused");
    assert_eq!(get(), ACL_ERROR_RT_PARAM_INVALID);
    assert_eq!(peek(), ACL_SUCCESS, "get cleared it");
    assert_eq!(sync_stream(acl, stream, LONG_MS), code, "the sync materializes it");
    assert_eq!(peek(), code, "peek after the sync");
    assert_eq!(peek(), code, "peek does not clear");
    assert_eq!(get(), code);
    assert_eq!(peek(), ACL_SUCCESS, "get clears");
}

#[test]
fn after_a_fatal_status_run_events_complete_and_only_the_stream_synchronize_reports_507018() {
    let (_guard, acl, control) = session();
    let pair = Pair::new(acl);
    let region = record_region(acl);
    let layout = HeaderLayout::TensormapAndRingbuffer;
    let header = latched_header(layout, RuntimeCode::ScopeDeadlock);
    let header_at = malloc(acl, header.len());
    let mut cpu = RunKernel::default();
    (cpu.outcome, cpu.header, cpu.header_bytes, cpu.record) =
        (Outcome::Latch, header_at, &header, region);
    pair.launch(acl, control, [RunKernel::default(), cpu], handshake(1), 7);
    let events = [pair.core_done, pair.boundary];
    let fatal = ACL_ERROR_RT_AICPU_EXCEPTION;
    assert_completion_is_not_the_verdict(acl, control, &events, pair.cpu, fatal);
    assert_eq!(sync_stream(acl, pair.core, LONG_MS), ACL_SUCCESS);
    assert_eq!(from_device(acl, header_at, header.len()), Ok(header.clone()));
    let error = Record::Error {
        code: RuntimeCode::ScopeDeadlock,
        source: RecordSource::Header,
        payload_len: 64,
    };
    let record = decode_record(&read_record(acl, region), 7);
    assert_eq!(record, error, "the record, not the event, says the run failed");
    destroy_all(acl, &[], &[], &[region, header_at]);
    pair.destroy(acl);
    assert_balanced(control);
}

#[test]
fn after_an_exception_or_an_op_timeout_kill_events_complete_and_the_stream_synchronize_reports_the_code()
 {
    let (_guard, acl, control) = session();
    set_op_timeout_ms(acl, 20);
    let (core, cpu) = (ENGINE_AICORE, ENGINE_AICPU);
    for (outcome, engine, code) in [
        (Outcome::Exception, core, ACL_ERROR_RT_AICORE_EXCEPTION),
        (Outcome::Exception, cpu, ACL_ERROR_RT_AICPU_EXCEPTION),
        (Outcome::Hang, core, ACL_ERROR_RT_AICORE_TIMEOUT),
        (Outcome::Hang, cpu, ACL_ERROR_RT_AICPU_TIMEOUT),
    ] {
        let (stream, event) = stream_and_event(acl);
        launch_ending(control, stream, engine, outcome).expect("launch");
        record(acl, event, stream);
        assert_completion_is_not_the_verdict(acl, control, &[event], stream, code);
        destroy_all(acl, &[stream], &[event], &[]);
    }
    // A kernel longer than the op timeout is killed too.
    for (engine, code) in [(core, ACL_ERROR_RT_AICORE_TIMEOUT), (cpu, ACL_ERROR_RT_AICPU_TIMEOUT)] {
        let stream = create_stream(acl);
        launch(control, stream, engine, 60_000).expect("launch");
        assert_eq!(sync_stream(acl, stream, LONG_MS), code);
        assert_eq!(destroy_stream_force(acl, stream), ACL_SUCCESS);
    }
    assert_balanced(control);
}

#[test]
fn a_kernel_a_copy_a_wait_and_a_record_queued_behind_a_faulted_kernel_still_run() {
    let (_guard, acl, control) = session();
    let (stream, event) = stream_and_event(acl);
    let other = create_stream(acl);
    let [timing, dev, pinned] = [malloc(acl, 16), malloc(acl, 4), malloc_host(acl, 4)];
    // SAFETY: 4 bytes from aclrtMallocHost, written before the copy is queued.
    unsafe { pinned.cast::<[u8; 4]>().write([6, 7, 8, 9]) };
    launch_ending(control, stream, ENGINE_AICORE, Outcome::Exception).expect("faulted kernel");
    let mut behind = RunKernel::new(stream, ENGINE_AICORE);
    (behind.timing, behind.duration) = (timing, Duration::from_millis(1));
    control.launch_run(&behind).expect("the kernel behind it");
    let h2d = ACL_MEMCPY_HOST_TO_DEVICE;
    assert_eq!(copy_async(acl, [dev, pinned], 4, h2d, stream), ACL_SUCCESS);
    record(acl, event, other);
    assert_eq!(stream_wait(acl, stream, event), ACL_SUCCESS);
    record_and_wait(acl, event, stream);
    let (start, end) = timing_of(acl, timing);
    assert!(start != 0 && end != 0, "the kernel behind the fault ran: {start} {end}");
    assert_eq!(from_device(acl, dev, 4), Ok(vec![6, 7, 8, 9]), "the copy ran");
    assert_eq!(
        sync_stream(acl, stream, LONG_MS),
        ACL_ERROR_RT_AICORE_EXCEPTION,
        "the first fault stays"
    );
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, other), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    destroy_all(acl, &[], &[], &[timing, dev]);
    assert_balanced(control);
}

#[test]
fn the_sticky_code_stays_until_the_stream_is_destroyed_or_the_device_force_reset() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let exception = ACL_ERROR_RT_AICORE_EXCEPTION;
    control.fault_kernel(Outcome::Exception, ENGINE_AICORE, 0, 1, &[]).expect("rule");
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    for _ in 0..2 {
        assert_eq!(sync_stream(acl, stream, LONG_MS), exception);
    }
    launch(control, stream, ENGINE_AICORE, 0).expect("a clean kernel behind it");
    assert_eq!(sync_stream(acl, stream, LONG_MS), exception, "a clean task does not clear it");
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_eq!(
        sync_stream(acl, stream, LONG_MS),
        ACL_ERROR_RT_INVALID_HANDLE,
        "the handle died with its code"
    );
    let fresh = create_stream(acl);
    assert_eq!(sync_stream(acl, fresh, LONG_MS), ACL_SUCCESS, "a new stream is clean");
    launch_ending(control, fresh, ENGINE_AICORE, Outcome::Exception).expect("launch");
    assert_eq!(sync_stream(acl, fresh, LONG_MS), exception);
    reset_and_bind(acl, 0);
    let after = create_stream(acl);
    assert_eq!(sync_stream(acl, after, LONG_MS), ACL_SUCCESS);
    assert_eq!(destroy_stream(acl, after), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn the_stream_synchronize_waits_for_every_task_times_out_with_507046_and_works_from_any_bound_thread()
 {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let timing = malloc(acl, 16);
    let mut kernel = RunKernel::new(stream, ENGINE_AICPU);
    (kernel.timing, kernel.duration) = (timing, Duration::from_millis(20));
    control.launch_run(&kernel).expect("launch");
    assert_eq!(sync_stream(acl, stream, LONG_MS), ACL_SUCCESS);
    assert_ne!(timing_of(acl, timing).1, 0, "the kernel ended before the synchronize returned");
    launch_hang(control, stream);
    assert_eq!(sync_stream(acl, stream, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    assert_eq!(control.get_last_error(), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    assert_eq!(destroy_stream_force(acl, stream), ACL_SUCCESS);
    // Another thread bound to the device synchronizes; the last error is that thread's.
    let faulted = create_stream(acl);
    launch_ending(control, faulted, ENGINE_AICPU, Outcome::Exception).expect("launch");
    let raw = faulted as usize;
    let (code, peeked) = std::thread::scope(|s| {
        s.spawn(|| {
            bind(acl, 0);
            let code = sync_stream(acl, raw as AclrtStream, LONG_MS);
            (code, control.peek_at_last_error())
        })
        .join()
        .expect("thread")
    });
    assert_eq!((code, peeked), (ACL_ERROR_RT_AICPU_EXCEPTION, code));
    assert_eq!(control.peek_at_last_error(), ACL_SUCCESS, "this thread never synchronized it");
    assert_eq!(
        control.last_error_at(1, false),
        ACL_ERROR_RT_PARAM_INVALID,
        "only the thread level exists"
    );
    // A whole-fake reset clears every thread's last error.
    assert_eq!(sync_stream(acl, faulted, LONG_MS), ACL_ERROR_RT_AICPU_EXCEPTION);
    destroy_all(acl, &[faulted], &[], &[timing]);
    assert_balanced(control);
    control.reset().expect("reset");
    assert_eq!(control.peek_at_last_error(), ACL_SUCCESS);
}

#[test]
fn null_handles_and_out_pointers_get_100000() {
    let (_guard, acl, control) = session();
    let (null_stream, null_event) = (std::ptr::null_mut(), std::ptr::null_mut());
    let null_out: *mut c_void = std::ptr::null_mut();
    let (stream, event) = stream_and_event(acl);
    let [dev, pinned] = [malloc(acl, 4), malloc_host(acl, 4)];
    // SAFETY: NULL handles and out-pointers are refused before any use; the buffers are live.
    let codes = unsafe {
        [
            acl.aclrtRecordEvent(event, null_stream),
            acl.aclrtRecordEvent(null_event, stream),
            acl.aclrtQueryEventStatus(null_event, &mut 0),
            acl.aclrtQueryEventStatus(event, null_out.cast()),
            acl.aclrtSynchronizeEventWithTimeout(null_event, LONG_MS),
            acl.aclrtStreamWaitEvent(null_stream, event),
            acl.aclrtStreamWaitEvent(stream, null_event),
            acl.aclrtDestroyEvent(null_event),
            acl.aclrtDestroyStream(null_stream),
            acl.aclrtDestroyStreamForce(null_stream),
            acl.aclrtMemcpyAsync(dev, 4, pinned, 4, ACL_MEMCPY_HOST_TO_DEVICE, null_stream),
            acl.aclrtSynchronizeStreamWithTimeout(null_stream, LONG_MS),
            acl.aclrtSetOpExecuteTimeOutV2(1_000, null_out.cast()),
            acl.aclrtCreateStreamWithConfig(null_out.cast(), 0, 0),
            acl.aclrtCreateEventExWithFlag(null_out.cast(), ACL_EVENT_SYNC),
            acl.aclrtMalloc(null_out.cast(), 8, 0),
            acl.aclrtMallocHost(null_out.cast(), 8),
            acl.aclrtFreeHost(null_out),
        ]
    };
    for (i, code) in codes.into_iter().enumerate() {
        assert_eq!(code, ACL_ERROR_INVALID_PARAM, "call {i}");
    }
    let err = launch(control, null_stream, ENGINE_AICORE, 0).expect_err("NULL stream");
    assert!(err.to_string().contains("100000"), "{err}");
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    destroy_both(acl, stream, event);
    assert_eq!(free(acl, dev), ACL_SUCCESS);
    assert_balanced(control);
}

#[test]
fn enqueue_after_fault_refused_fails_every_enqueue_on_a_sticky_stream_with_507899() {
    let (_guard, acl, control) = session();
    control
        .set_semantics(Semantics::EnqueueAfterFault(EnqueueAfterFault::Refused))
        .expect("switch");
    let (stream, event) = stream_and_event(acl);
    let healthy = create_stream(acl);
    let [dev, pinned] = [malloc(acl, 4), malloc_host(acl, 4)];
    launch_ending(control, stream, ENGINE_AICORE, Outcome::Exception)
        .expect("accepted: no code is sticky yet");
    assert_eq!(sync_stream(acl, stream, LONG_MS), ACL_ERROR_RT_AICORE_EXCEPTION);
    let err = launch(control, stream, ENGINE_AICORE, 0).expect_err("refused");
    assert!(err.to_string().contains("507899"), "{err}");
    let refused = ACL_ERROR_RT_DRV_INTERNAL_ERROR;
    assert_eq!(try_record(acl, event, stream), refused);
    assert_eq!(stream_wait(acl, stream, event), refused);
    assert_eq!(copy_async(acl, [dev, pinned], 4, ACL_MEMCPY_HOST_TO_DEVICE, stream), refused);
    launch(control, healthy, ENGINE_AICORE, 0).expect("a clean stream accepts");
    record(acl, event, healthy);
    assert_eq!(free_host(acl, pinned), ACL_SUCCESS);
    destroy_all(acl, &[stream, healthy], &[event], &[dev]);
    assert_balanced(control);
}

/// Launches a run whose AICore kernel hangs to the op timeout; returns the codes of the two
/// streams' synchronizes (AICore, AICPU).
fn op_timeout_codes(acl: &Acl, control: &Control, place: OpTimeoutCodeOn) -> (AclError, AclError) {
    control.set_semantics(Semantics::OpTimeoutCodeOn(place)).expect("switch");
    let pair = Pair::new(acl);
    let hung = RunKernel::new(std::ptr::null_mut(), ENGINE_AICORE);
    let hung = RunKernel { outcome: Outcome::Hang, ..hung };
    pair.launch(acl, control, [hung, RunKernel::default()], handshake(3), 9);
    assert_eq!(sync(acl, pair.boundary, LONG_MS), ACL_SUCCESS);
    let codes = (sync_stream(acl, pair.core, LONG_MS), sync_stream(acl, pair.cpu, LONG_MS));
    pair.destroy(acl);
    codes
}

#[test]
fn op_timeout_code_on_places_a_killed_kernels_code_on_its_own_its_partners_or_both_streams() {
    let (_guard, acl, control) = session();
    // Long enough that the AICPU kernel is launched before the AICore one is killed.
    set_op_timeout_ms(acl, 300);
    let kill = ACL_ERROR_RT_AICORE_TIMEOUT;
    assert_eq!(op_timeout_codes(acl, control, OpTimeoutCodeOn::OwnStream), (kill, ACL_SUCCESS));
    assert_eq!(op_timeout_codes(acl, control, OpTimeoutCodeOn::PartnerStream), (ACL_SUCCESS, kill));
    assert_eq!(op_timeout_codes(acl, control, OpTimeoutCodeOn::BothStreams), (kill, kill));
    // A kernel alone has no partner: its own stream, whatever the switch.
    let alone = create_stream(acl);
    launch_hang(control, alone);
    assert_eq!(sync_stream(acl, alone, LONG_MS), kill);
    assert_eq!(destroy_stream(acl, alone), ACL_SUCCESS);
    assert_balanced(control);
}

/// Launches an AICore kernel that a kernel rule of `on` faults, on a new stream of the
/// current device, and records an event behind it: the stream and the event.
fn faulted_behind_a_rule(
    acl: &Acl,
    control: &Control,
    on: &DeviceControl<'_>,
) -> (AclrtStream, AclrtEvent) {
    let (stream, event) = stream_and_event(acl);
    on.fault_kernel(Outcome::Exception, ENGINE_AICORE, 0, 1, &[]).expect("rule");
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    record(acl, event, stream);
    (stream, event)
}

#[test]
fn legacy_event_faults_restores_the_old_fault_propagation_only_when_asked() {
    let (_guard, acl, control) = session();
    control.set_semantics(Semantics::LegacyEventFaults(true)).expect("switch");
    let (stream, event) = stream_and_event(acl);
    let timing = malloc(acl, 16);
    control.fault_kernel(Outcome::Exception, ENGINE_AICORE, 0, 1, &[]).expect("rule");
    launch(control, stream, ENGINE_AICORE, 0).expect("launch");
    let mut kernel = RunKernel::new(stream, ENGINE_AICORE);
    kernel.timing = timing;
    control.launch_run(&kernel).expect("launch");
    record(acl, event, stream);
    let fault = ACL_ERROR_RT_AICORE_EXCEPTION;
    assert_eq!(sync(acl, event, LONG_MS), fault);
    assert_eq!(query(acl, event), Err(fault));
    assert_eq!(sync_stream(acl, stream, LONG_MS), fault);
    assert_eq!(timing_of(acl, timing), (0, 0), "nothing ran after the fault");
    destroy_all(acl, &[stream], &[event], &[timing]);
    assert_balanced(control);
}

#[test]
fn switches_are_checked_per_device_and_restored_by_the_whole_fake_reset() {
    let (_guard, acl, control) = session();
    let legacy = Semantics::LegacyEventFaults(true);
    control.device(0).set_semantics(legacy).expect("switch");
    // Only device 0 has it: device 1 keeps the default.
    bind(acl, 1);
    let (stream, event) = faulted_behind_a_rule(acl, control, &control.device(1));
    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "device 1: real semantics");
    destroy_both(acl, stream, event);
    assert!(control.device(64).set_semantics(legacy).is_err());
    // Unknown switches and values are refused (the typed call cannot make them).
    assert!(control.set_semantics_raw(SWITCH_LEGACY_EVENT_FAULTS, 2).is_err());
    assert!(control.set_semantics_raw(99, 0).is_err());
    assert_eq!(legacy.raw(), (SWITCH_LEGACY_EVENT_FAULTS, 1));
    // The reset restores device 0's default.
    control.reset().expect("reset");
    bind(acl, 0);
    let (stream, event) = faulted_behind_a_rule(acl, control, &control.device(0));
    assert_eq!(sync(acl, event, LONG_MS), ACL_SUCCESS, "reset: real semantics again");
    destroy_both(acl, stream, event);
    assert_all_balanced(control);
}

#[test]
fn a_bad_record_address_a_zero_epoch_or_a_second_kernel_of_one_engine_fails_the_launch() {
    let (_guard, acl, control) = session();
    let stream = create_stream(acl);
    let small = malloc(acl, 16);
    let region = record_region(acl);
    let code = |kernel: RunKernel<'_>| launch_code(control.launch_run(&kernel));
    // An AICPU kernel with `record` and `epoch` (and `handshake`: in a run).
    let cpu = |record, epoch, handshake| {
        let mut kernel = RunKernel::new(stream, ENGINE_AICPU);
        (kernel.record, kernel.epoch, kernel.handshake) = (record, epoch, handshake);
        kernel
    };
    let (invalid, alone) = (ACL_ERROR_RT_PARAM_INVALID, std::ptr::null_mut());
    assert_eq!(code(cpu(small, 1, alone)), invalid, "16 bytes cannot hold 280");
    assert_eq!(code(cpu(0x40_usize as *mut c_void, 1, alone)), invalid);
    assert_eq!(code(cpu(region, 0, alone)), invalid, "no run has epoch 0");
    let in_run = cpu(region, 5, handshake(8));
    assert_eq!(code(in_run), ACL_SUCCESS);
    assert_eq!(code(in_run), invalid, "one AICPU kernel per run");
    let core = RunKernel { engine: ENGINE_AICORE, ..in_run };
    assert_eq!(code(core), ACL_SUCCESS);
    assert_eq!(sync_stream(acl, stream, LONG_MS), ACL_SUCCESS);
    assert_eq!(decode_record(&read_record(acl, region), 5), Record::Ok);
    assert_eq!(control.counters().expect("counters").launches, 2);
    destroy_all(acl, &[], &[], &[small, region]);
    assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    assert_balanced(control);
}

/// The number `aclrtStreamGetId` gives a live stream.
fn stream_number(acl: &Acl, stream: AclrtStream) -> i32 {
    let mut number = -1;
    // SAFETY: `number` is a writable int32_t; the stream is live.
    let code = unsafe { acl.aclrtStreamGetId(stream, &mut number) }.expect("the fake has it");
    assert_eq!(code, ACL_SUCCESS);
    number
}

/// Two new streams on the calling thread's device and their numbers.
fn two_numbered(acl: &Acl) -> ([AclrtStream; 2], [i32; 2]) {
    let streams = [create_stream(acl), create_stream(acl)];
    (streams, streams.map(|s| stream_number(acl, s)))
}

/// Destroys each of `streams`.
fn destroy_streams(acl: &Acl, streams: impl IntoIterator<Item = AclrtStream>) {
    for stream in streams {
        assert_eq!(destroy_stream(acl, stream), ACL_SUCCESS);
    }
}

/// Device-truth §4 does not say whether a stream's number is reused, so the fake offers both:
/// by default a force reset keeps counting; with `RESET_RESTARTS_STREAM_NUMBERING` on a
/// device, each good reset of it starts again at 1, so the streams made after one reset get
/// the numbers of the streams the next reset kills. A failed reset restarts nothing, another
/// device keeps counting, and the whole fake's reset restores the default.
#[test]
fn reset_restarts_stream_numbering_reuses_the_numbers_a_good_reset_killed_only_where_switched() {
    let (_guard, acl, control) = session();
    // Switched on device 0 (after two streams): every good reset restarts at 1.
    two_numbered(acl);
    control
        .device(0)
        .set_semantics(Semantics::ResetRestartsStreamNumbering(true))
        .expect("the switch");
    let (_, counting) = two_numbered(acl);
    assert!(counting.iter().all(|n| *n > 2), "no restart before a reset");
    reset_and_bind(acl, 0);
    let (_, first) = two_numbered(acl);
    assert_eq!(first, [1, 2], "restarted at the reset");
    reset_and_bind(acl, 0);
    let (streams, second) = two_numbered(acl);
    assert_eq!(second, first, "the killed streams' numbers name the new ones");
    // A failed reset restarts nothing and kills nothing.
    control.device(0).fail_call("aclrtResetDeviceForce", CODE_FAULT, 0, 1).expect("the rule");
    assert_eq!(force_reset(acl, 0), CODE_FAULT);
    let (more, next) = two_numbered(acl);
    assert_eq!(next, [3, 4], "still counting after a failed reset");
    destroy_streams(acl, streams.into_iter().chain(more));
    // Device 1 keeps the default.
    bind(acl, 1);
    let (streams, one_before) = two_numbered(acl);
    destroy_streams(acl, streams);
    reset_and_bind(acl, 1);
    let (streams, one_after) = two_numbered(acl);
    assert!(one_after.iter().all(|n| !one_before.contains(n)));
    destroy_streams(acl, streams);
    assert_eq!(
        Semantics::ResetRestartsStreamNumbering(true).raw(),
        (SWITCH_RESET_RESTARTS_STREAM_NUMBERING, 1)
    );
    assert!(control.set_semantics_raw(SWITCH_RESET_RESTARTS_STREAM_NUMBERING, 2).is_err());
    // The whole fake's reset restores the default on device 0.
    control.reset().expect("reset");
    bind(acl, 0);
    let (_, fresh) = two_numbered(acl);
    reset_and_bind(acl, 0);
    let (streams, kept) = two_numbered(acl);
    assert!(kept.iter().all(|n| !fresh.contains(n)), "{fresh:?} then {kept:?}");
    destroy_streams(acl, streams);
    assert_all_balanced(control);
}
