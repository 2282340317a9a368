//! The device model, driven call by call through the `Device` and `Runner` traits (no lane): stream
//! FIFO timing, the handshake, deadlock detection, event semantics, sticky errors and the stream
//! synchronize that materializes them, the kernels' writes and result records, costs, and the
//! device invariants.

use backend_sim::costs::{Cost, Costs};
use backend_sim::{
    DeviceFailure, FaultRule, PublishedRecord, RunTimes, SharedSim, SimDevice, SimRunner,
};
use lane_core::status_latch::{
    self, AclCode, HeaderLayout, RECORD_BYTES, Record, RecordSource, RuntimeCode, decode_record,
};
use lane_core::stream_pair::StreamHandle;
use lane_core::{RunId, SlotId};
use lane_driver::{Device, EventHandle, LaunchContext, LaunchStage, RunArgs, Runner};

const LAYOUT: HeaderLayout = HeaderLayout::TensormapAndRingbuffer;
const DEVICE_NS: u64 = 100_000;

fn device() -> SimDevice {
    SimDevice::new(Costs::default(), LAYOUT, 1, RunTimes { device_ns: DEVICE_NS, jitter_ppm: 0 })
}

fn cost(c: Cost) -> u64 {
    Costs::default().get(c)
}

/// One slot's buffers and events, `[boundary, core_done]`.
struct Slot {
    args: RunArgs,
    events: [EventHandle; 2],
}

fn slot(d: &mut SimDevice, run: u64, slot: u8) -> Slot {
    let status_header = d.malloc(1024).unwrap();
    let timing = d.malloc(16).unwrap();
    let handshake = d.malloc(64).unwrap();
    let record = d.malloc(RECORD_BYTES).unwrap();
    Slot {
        args: RunArgs {
            run: RunId(run),
            slot: SlotId(slot),
            status_header,
            timing,
            handshake,
            record,
            // Any process-unique non-zero number; the run id is one here.
            epoch: run,
            queued: false,
        },
        events: [d.create_event().unwrap(), d.create_event().unwrap()],
    }
}

/// The run's result record, decoded for its epoch.
fn record(d: &mut SimDevice, s: &Slot) -> Record {
    let mut bytes = [0u8; RECORD_BYTES];
    d.memcpy_from_device(&mut bytes, s.args.record).unwrap();
    decode_record(&bytes, s.args.epoch)
}

fn pair(d: &mut SimDevice) -> (StreamHandle, StreamHandle) {
    (d.create_stream().unwrap(), d.create_stream().unwrap())
}

/// A fresh stream pair (AICPU, AICore) and the slots of runs 1 and 2.
fn pair_and_two_slots(d: &mut SimDevice) -> (StreamHandle, StreamHandle, Slot, Slot) {
    let (aicpu, aicore) = pair(d);
    (aicpu, aicore, slot(d, 1, 0), slot(d, 2, 1))
}

/// A device with the fault rule `fault` (none if empty) installed, and run 1 launched on slot 0
/// of a fresh stream pair: the device, the pair (AICPU, AICore) and the slot.
fn launched(mut d: SimDevice, fault: &str) -> (SimDevice, StreamHandle, StreamHandle, Slot) {
    if !fault.is_empty() {
        d.install(FaultRule::parse(fault).unwrap());
    }
    let (aicpu, aicore) = pair(&mut d);
    let s = slot(&mut d, 1, 0);
    launch(&mut d, &s, aicpu, aicore);
    (d, aicpu, aicore, s)
}

/// The launch context of `run`'s `stage`.
fn stage(run: u64, stage: LaunchStage) -> Option<LaunchContext> {
    Some(LaunchContext { run: RunId(run), stage })
}

/// The device broke an invariant whose message says `what`.
fn assert_invariant(d: &SimDevice, what: &str) {
    match d.failure() {
        Some(DeviceFailure::Invariant(w)) => assert!(w.contains(what), "{w}"),
        other => panic!("expected an invariant failure ({what}), got {other:?}"),
    }
}

/// The launch order of L-5 with nothing ahead: AICore kernel, `core_done` on the AICore
/// stream, AICPU kernel, the AICPU stream's wait on `core_done`, the boundary; each stage
/// told to the device as the executor does.
fn launch(d: &mut SimDevice, s: &Slot, aicpu: StreamHandle, aicore: StreamHandle) {
    d.launch_context(stage(s.args.run.0, LaunchStage::Arm));
    SimRunner.launch_aicore(d, aicore, &s.args).unwrap();
    d.launch_context(stage(s.args.run.0, LaunchStage::Kernels));
    d.record_event(s.events[1], aicore).unwrap();
    SimRunner.launch_aicpu(d, aicpu, &s.args).unwrap();
    d.stream_wait_event(aicpu, s.events[1]).unwrap();
    d.record_event(s.events[0], aicpu).unwrap();
    d.launch_context(None);
}

/// [`launch`] behind a predecessor: the AICore stream first waits on its boundary.
fn launch_after(
    d: &mut SimDevice,
    s: &Slot,
    predecessor: &Slot,
    aicpu: StreamHandle,
    aicore: StreamHandle,
) {
    d.stream_wait_event(aicore, predecessor.events[0]).unwrap();
    launch(d, s, aicpu, aicore);
}

/// The completion wait: the run's boundary only.
fn wait(d: &mut SimDevice, s: &Slot) -> Result<(), AclCode> {
    d.synchronize_event(s.events[0], 50_000)
}

/// A stream synchronize with a 1 s timeout.
fn sync(d: &mut SimDevice, stream: StreamHandle) -> Result<(), AclCode> {
    d.synchronize_stream(stream, 1_000)
}

/// Nothing queued on `stream` from now on ever runs: an event recorded on it never passes.
fn assert_nothing_more_runs_on(d: &mut SimDevice, stream: StreamHandle, why: &str) {
    let probe = d.create_event().unwrap();
    d.record_event(probe, stream).unwrap();
    let waited = d.synchronize_event(probe, 10);
    assert_eq!(waited, Err(AclCode::RtEventSyncTimeout), "{why}");
}

fn timing(d: &mut SimDevice, s: &Slot) -> (u64, u64) {
    let mut buf = [0u8; 16];
    d.memcpy_from_device(&mut buf, s.args.timing).unwrap();
    let (a, b) = buf.split_at(8);
    (u64::from_le_bytes(a.try_into().unwrap()), u64::from_le_bytes(b.try_into().unwrap()))
}

#[test]
fn a_run_queued_behind_another_on_the_same_pair_starts_when_it_ends() {
    let mut d = device();
    let (aicpu, aicore, s1, s2) = pair_and_two_slots(&mut d);
    launch(&mut d, &s1, aicpu, aicore);
    launch_after(&mut d, &s2, &s1, aicpu, aicore);
    assert_eq!(d.queued_launches(), 1, "run 2 found run 1 on the device");
    wait(&mut d, &s1).unwrap();
    wait(&mut d, &s2).unwrap();
    let (start1, end1) = timing(&mut d, &s1);
    let (start2, end2) = timing(&mut d, &s2);
    assert_eq!(end1 - start1, cost(Cost::RunPreamble) + DEVICE_NS);
    assert_eq!(end2 - start2, cost(Cost::RunPreamble) + DEVICE_NS);
    // Behind run 1's kernels: its core_done, the AICPU stream's wait on it, its boundary
    // (run 2's AICore kernel waits on it), with a task switch before each task.
    let gap = 3 * cost(Cost::TaskSwitch) + 2 * cost(Cost::EventTask);
    assert_eq!(start2, end1 + gap, "run 2 starts as soon as run 1's boundary has passed");
}

#[test]
fn a_run_starts_only_when_both_of_its_kernels_have_started() {
    let mut d = device();
    let (aicpu, aicore) = pair(&mut d);
    let other_aicpu = d.create_stream().unwrap();
    let (s1, s2) = (slot(&mut d, 1, 0), slot(&mut d, 2, 1));
    launch(&mut d, &s1, aicpu, aicore);
    // Run 2's scheduler is on an idle stream and starts at once, but its AICore workers
    // queue behind run 1: the handshake holds the run until they report.
    launch(&mut d, &s2, other_aicpu, aicore);
    wait(&mut d, &s1).unwrap();
    wait(&mut d, &s2).unwrap();
    let (_, end1) = timing(&mut d, &s1);
    let (start2, _) = timing(&mut d, &s2);
    assert!(
        start2 > end1,
        "run 2 started at {start2} before its AICore kernel could (run 1 ends at {end1})"
    );
}

/// lane-service's completion waiter calls a `SharedSim` from its own thread, so its wait for
/// run 1 can land between run 2's two launches on the lane thread. Run 2's launch has not
/// ended (its context is still its `Kernels` stage), so its AICore kernel stays pending for
/// its AICPU partner and the run completes.
#[test]
fn a_completion_waiters_wait_between_a_runs_two_launches_leaves_its_aicore_kernel_pending() {
    let mut shared = SharedSim::new(device());
    let mut waiter = shared.completion_waiter().unwrap();
    let (aicpu, aicore, s1, s2) = {
        let mut d = shared.lock();
        let (aicpu, aicore) = pair(&mut d);
        let (s1, s2) = (slot(&mut d, 1, 0), slot(&mut d, 2, 1));
        launch(&mut d, &s1, aicpu, aicore);
        (aicpu, aicore, s1, s2)
    };
    shared.launch_context(stage(2, LaunchStage::Arm));
    SimRunner.launch_aicore(&mut shared, aicore, &s2.args).unwrap();
    shared.launch_context(stage(2, LaunchStage::Kernels));
    shared.record_event(s2.events[1], aicore).unwrap();
    waiter.synchronize_event(s1.events[0], 50_000).unwrap();
    let mut bytes = [0u8; RECORD_BYTES];
    waiter.memcpy_from_device(&mut bytes, s1.args.record).unwrap();
    assert_eq!(decode_record(&bytes, s1.args.epoch), Record::Ok);
    SimRunner.launch_aicpu(&mut shared, aicpu, &s2.args).unwrap();
    let mut d = shared.lock();
    d.stream_wait_event(aicpu, s2.events[1]).unwrap();
    d.record_event(s2.events[0], aicpu).unwrap();
    d.launch_context(None);
    assert_eq!(wait(&mut d, &s2), Ok(()));
    let (start2, end2) = timing(&mut d, &s2);
    assert_eq!(end2 - start2, cost(Cost::RunPreamble) + DEVICE_NS);
    assert_eq!(d.failure(), None);
}

/// A launch that ends (its context goes to `None`) after the AICore kernel and before the
/// AICPU one orphans the AICore kernel: nothing behind it, its `core_done` included, ever
/// runs.
#[test]
fn a_launch_that_ends_between_a_runs_two_launches_orphans_its_aicore_kernel() {
    let mut d = device();
    let (_, aicore) = pair(&mut d);
    let s = slot(&mut d, 1, 0);
    d.launch_context(stage(1, LaunchStage::Arm));
    SimRunner.launch_aicore(&mut d, aicore, &s.args).unwrap();
    d.launch_context(stage(1, LaunchStage::Kernels));
    d.record_event(s.events[1], aicore).unwrap();
    d.launch_context(None);
    assert_eq!(
        d.synchronize_event(s.events[1], 10),
        Err(AclCode::RtEventSyncTimeout),
        "core_done never completes behind the orphaned kernel"
    );
    assert_eq!(d.failure(), None);
}

/// Another launch's arm ends the pending kernel's launch just as `None` does.
#[test]
fn the_next_launchs_arm_orphans_an_aicore_kernel_still_waiting_for_its_partner() {
    let mut d = device();
    let (aicpu, aicore) = pair(&mut d);
    let other_aicore = d.create_stream().unwrap();
    let (s1, s2) = (slot(&mut d, 1, 0), slot(&mut d, 2, 1));
    d.launch_context(stage(1, LaunchStage::Arm));
    SimRunner.launch_aicore(&mut d, aicore, &s1.args).unwrap();
    launch(&mut d, &s2, aicpu, other_aicore);
    assert_eq!(wait(&mut d, &s2), Ok(()), "run 2 runs beside the orphan");
    assert_nothing_more_runs_on(&mut d, aicore, "run 1's AICore kernel never ends");
    assert_eq!(d.failure(), None);
}

/// The executor never launches two AICore kernels within one launch; the device says so
/// loudly rather than dropping the first.
#[test]
fn a_second_aicore_kernel_within_one_launch_breaks_a_device_invariant() {
    let mut d = device();
    let (_, aicore) = pair(&mut d);
    let other_aicore = d.create_stream().unwrap();
    let (s1, s2) = (slot(&mut d, 1, 0), slot(&mut d, 2, 1));
    SimRunner.launch_aicore(&mut d, aicore, &s1.args).unwrap();
    SimRunner.launch_aicore(&mut d, other_aicore, &s2.args).unwrap();
    assert_invariant(&d, "still waited for its AICPU partner");
}

#[test]
fn both_kernels_of_a_run_on_one_stream_is_a_deadlock_reported_loudly() {
    let mut d = device();
    let stream = d.create_stream().unwrap();
    let s = slot(&mut d, 1, 0);
    SimRunner.launch_aicore(&mut d, stream, &s.args).unwrap();
    SimRunner.launch_aicpu(&mut d, stream, &s.args).unwrap();
    match d.failure() {
        Some(DeviceFailure::Deadlock(what)) => {
            assert!(what.contains("run 1 has both kernels on stream"), "{what}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn a_never_recorded_event_waits_as_success_at_once() {
    let mut d = device();
    let event = d.create_event().unwrap();
    let before = d.host_ns();
    assert_eq!(d.synchronize_event(event, 1_000), Ok(()));
    assert_eq!(d.host_ns() - before, cost(Cost::EventQuery), "no blocking");
}

#[test]
fn an_event_completes_when_its_stream_passes_it() {
    let (mut d, aicpu, _, s) = launched(device(), "");
    assert_eq!(d.query_stream(aicpu), Ok(false), "the run is still on the stream");
    let before = d.host_ns();
    d.synchronize_event(s.events[0], 1_000).unwrap();
    let blocked = d.host_ns() - before;
    assert!(blocked >= DEVICE_NS, "the wait blocked for the run ({blocked} ns)");
    let before = d.host_ns();
    d.synchronize_event(s.events[1], 1_000).unwrap();
    assert_eq!(
        d.host_ns() - before,
        cost(Cost::EventQuery),
        "core_done is behind the boundary already: no blocking"
    );
}

#[test]
fn an_event_query_answers_not_ready_before_the_boundary_and_complete_from_it_on_in_virtual_time() {
    // A never-recorded event, then a run launched: its slot, and the event.
    let launched = |d: &mut SimDevice| {
        let (aicpu, aicore) = pair(d);
        let s = slot(d, 1, 0);
        let never = d.create_event().unwrap();
        assert_eq!(d.query_event(never), Ok(true), "never recorded: complete, as on ACL");
        launch(d, &s, aicpu, aicore);
        (s, never)
    };
    // When the boundary passes: the same calls on a twin device, then a blocking wait, which
    // returns a host wake-up after it.
    let boundary_ns = {
        let mut twin = device();
        let (s, _) = launched(&mut twin);
        wait(&mut twin, &s).unwrap();
        twin.host_ns() - cost(Cost::HostWakeup)
    };
    let mut d = device();
    let (s, never) = launched(&mut d);
    // Look until it is complete: every look costs a query and never blocks, and answers the
    // device as the look found it.
    let mut looks = Vec::new();
    loop {
        let at = d.host_ns();
        let complete = d.query_event(s.events[0]).expect("a live event");
        assert_eq!(d.host_ns() - at, cost(Cost::EventQuery), "a look never blocks");
        looks.push((at, complete));
        if complete {
            break;
        }
        assert!(looks.len() < 1_000_000, "never complete");
    }
    assert!(looks.len() > 1, "the first look came before the run ended: {looks:?}");
    for &(at, complete) in &looks {
        assert_eq!(complete, at >= boundary_ns, "a look at {at} ns, boundary {boundary_ns} ns");
    }
    let (_, end) = timing(&mut d, &s);
    assert!(end <= boundary_ns, "the boundary passes after the kernels end");
    // The completion waiter's look is the same device's; a destroyed event is a dead handle.
    let shared = SharedSim::new(d);
    let mut waiter = shared.clone().completion_waiter().expect("a waiter");
    assert_eq!(waiter.query_event(s.events[0]), Ok(true));
    shared.lock().destroy_event(never).unwrap();
    assert_eq!(waiter.query_event(never), Err(AclCode::RtInvalidHandle));
    assert!(shared.lock().failure().is_some(), "a dead handle breaks a device invariant");
}

#[test]
fn a_hung_run_makes_the_bounded_wait_time_out_with_507047() {
    let (mut d, _, _, s) = launched(device(), "hang@run:1");
    let before = d.host_ns();
    assert_eq!(d.synchronize_event(s.events[0], 100), Err(AclCode::RtEventSyncTimeout));
    assert_eq!(d.host_ns() - before, 100_000_000, "the host waited the whole timeout");
    // The device drain cannot finish either; a reset kills the hung kernels.
    assert_eq!(d.synchronize_device(10), Err(AclCode::RtStreamSyncTimeout));
    d.reset_device_force().unwrap();
    assert_eq!(d.synchronize_device(10), Ok(()));
}

#[test]
fn an_unbounded_wait_on_a_stuck_run_is_a_deadlock_not_a_hang_of_the_simulator() {
    let (mut d, _, _, s) = launched(device(), "stuck");
    assert!(d.synchronize_event(s.events[0], -1).is_err());
    assert!(matches!(d.failure(), Some(DeviceFailure::Deadlock(_))));
}

#[test]
fn a_hung_kernel_ends_at_the_op_timeout_its_event_passes_and_only_the_stream_synchronize_says_507014_or_507017()
 {
    const OP_TIMEOUT_NS: u64 = 1_000_000_000;
    // A hung AICore kernel faults its own stream; a hung scheduler faults its own with 507017
    // and the AICore stream, whose workers spun waiting for it, with 507014.
    for (fault, aicpu_code) in
        [("hang@run:1", Ok(())), ("hang-aicpu@run:1", Err(AclCode::RtAicpuTimeout))]
    {
        let (mut d, aicpu, aicore, s) = launched(device().with_op_timeout(OP_TIMEOUT_NS), fault);
        let before = d.host_ns();
        // A host wait longer than the op timeout ends with the kernels, not at its own limit,
        // and returns 0: the kernel exited (device-truth §1).
        assert_eq!(d.synchronize_event(s.events[0], 2_000), Ok(()), "{fault}");
        let waited = d.host_ns() - before;
        assert!(
            (OP_TIMEOUT_NS..2 * OP_TIMEOUT_NS).contains(&waited),
            "{fault}: waited {waited} ns: the kernels end at the op timeout"
        );
        // A stream query reports nothing; the synchronize materializes each engine's code,
        // sticky until destroy or reset.
        assert_eq!(d.query_stream(aicore), Ok(true), "{fault}");
        assert_eq!(sync(&mut d, aicpu), aicpu_code, "{fault}");
        for _ in 0..2 {
            let code = sync(&mut d, aicore);
            assert_eq!(code, Err(AclCode::RtAicoreTimeout), "{fault}");
        }
        d.reset_device_force().unwrap();
        assert!(d.create_stream().is_ok());
    }
}

#[test]
fn a_device_exception_is_sticky_for_checked_calls_but_not_for_the_event_wait_or_a_query() {
    let mut d = device();
    d.install(FaultRule::parse("exception=507015@run:1").unwrap());
    let (aicpu, aicore, s1, s2) = pair_and_two_slots(&mut d);
    launch(&mut d, &s1, aicpu, aicore);
    // The event wait succeeds: it does not carry the device fault back (as on hardware).
    assert_eq!(wait(&mut d, &s1), Ok(()));
    let fault = Err(AclCode::RtAicoreException);
    let query = d.query_stream(aicore);
    assert_eq!(query, Ok(true), "a stream query reports nothing");
    // The AICore exception faults the AICore stream; the synchronize materializes it.
    assert_eq!(sync(&mut d, aicpu), Ok(()));
    assert_eq!(sync(&mut d, aicore), fault);
    let header = d.memcpy_from_device(&mut [0u8; 896], s1.args.status_header);
    assert_eq!(header, fault);
    assert_eq!(d.create_stream().map(|_| ()), fault);
    assert_eq!(SimRunner.launch_aicore(&mut d, aicore, &s2.args), fault.map_err(Into::into));
    assert_eq!(d.malloc(64).map(|_| ()), fault);
    // A force reset clears it; the old handles are dead.
    d.reset_device_force().unwrap();
    assert!(d.create_stream().is_ok());
    assert!(d.failure().is_none());
}

#[test]
fn a_run_queued_behind_a_faulted_run_still_runs_continue_on_failure_and_the_code_stays_sticky() {
    let mut d = device();
    d.install(FaultRule::parse("exception=507018@run:1").unwrap());
    let (aicpu, aicore, s1, s2) = pair_and_two_slots(&mut d);
    launch(&mut d, &s1, aicpu, aicore);
    launch_after(&mut d, &s2, &s1, aicpu, aicore);
    wait(&mut d, &s1).unwrap();
    let before = d.host_ns();
    assert_eq!(wait(&mut d, &s2), Ok(()));
    let waited = d.host_ns() - before;
    assert!(waited >= DEVICE_NS, "run 2 ran its {DEVICE_NS} ns behind the fault (waited {waited})");
    assert_eq!(
        sync(&mut d, aicpu),
        Err(AclCode::RtAicpuException),
        "the AICPU stream keeps run 1's code"
    );
    d.reset_device_force().unwrap();
}

/// device-truth §1, as acl-fake does by default: an AICPU kernel whose runtime latched a
/// fatal status exits (its events complete, its error record is published) and leaves
/// 507018 sticky on the AICPU stream alone. Only a synchronize of that stream reads it, every
/// time, until the stream is destroyed or the device force-reset; the device stays good, so
/// the next run is launched and runs on the same streams.
#[test]
fn a_latch_leaves_507018_sticky_on_the_aicpu_stream_alone_until_it_is_destroyed_or_reset() {
    let mut d = device();
    d.install(FaultRule::parse("latch=SCOPE_DEADLOCK@run:1").unwrap());
    let (aicpu, aicore, s1, s2) = pair_and_two_slots(&mut d);
    launch(&mut d, &s1, aicpu, aicore);
    let waited = wait(&mut d, &s1);
    assert_eq!(waited, Ok(()), "the event wait reports completion");
    let query = d.query_stream(aicpu);
    assert_eq!(query, Ok(true), "a stream query reports nothing");
    assert!(matches!(record(&mut d, &s1), Record::Error { .. }));
    let fatal = Err(AclCode::RtAicpuException);
    assert_eq!(sync(&mut d, aicpu), fatal);
    assert_eq!(sync(&mut d, aicore), Ok(()), "AICore is clean");
    assert_eq!(sync(&mut d, aicpu), fatal, "read again: sticky");
    // Not a device fault: checked calls work and the next run runs, publishing its own ok
    // record, while the AICPU stream keeps run 1's code.
    assert!(d.malloc(64).is_ok());
    launch_after(&mut d, &s2, &s1, aicpu, aicore);
    assert_eq!(wait(&mut d, &s2), Ok(()));
    assert_eq!(record(&mut d, &s2), Record::Ok);
    assert_eq!(sync(&mut d, aicpu), fatal, "run 2 did not clear it");
    // A new stream starts clean; a force reset clears the device.
    let fresh = d.create_stream().unwrap();
    assert_eq!(sync(&mut d, fresh), Ok(()));
    d.reset_device_force().unwrap();
    let (aicpu, _) = pair(&mut d);
    assert_eq!(sync(&mut d, aicpu), Ok(()));
    assert!(d.failure().is_none());
}

#[test]
fn a_clean_run_publishes_an_ok_record_stamped_with_its_epoch_before_its_boundary_passes() {
    let (mut d, _, _, s) = launched(device(), "");
    assert_eq!(record(&mut d, &s), Record::NeverPublished { stamp: 0 });
    wait(&mut d, &s).unwrap();
    assert_eq!(record(&mut d, &s), Record::Ok);
    assert_eq!(d.take_published(s.args.run), Some(PublishedRecord::Ok));
    assert_eq!(d.take_published(s.args.run), None, "taken once");
}

#[test]
fn a_latched_run_publishes_an_error_record_with_the_code_from_the_header_and_its_error_tail() {
    let (mut d, _, _, s) = launched(device(), "latch=SCOPE_DEADLOCK@run:1");
    wait(&mut d, &s).unwrap();
    assert_eq!(
        record(&mut d, &s),
        Record::Error {
            code: RuntimeCode::ScopeDeadlock,
            source: RecordSource::Header,
            payload_len: 64,
        }
    );
    assert_eq!(d.take_published(s.args.run), Some(PublishedRecord::Error));
    assert!(d.published_an_error(s.args.run), "kept for a later run's verdict");
}

#[test]
fn faulted_hung_and_silent_runs_publish_no_record() {
    for fault in ["exception=507018", "hang", "hang-aicpu", "silent"] {
        let (mut d, _, _, s) =
            launched(device().with_op_timeout(1_000_000), &format!("{fault}@run:1"));
        wait(&mut d, &s).unwrap();
        // The kernels ended (the boundary passed) without stamping an ok record (a faulted
        // device also refuses the record's read: the device verdict decides those).
        assert_eq!(d.take_published(s.args.run), None, "{fault}");
    }
    // A silent run's streams stay clean: the synchronize says 0.
    let (mut d, aicpu, aicore, s) = launched(device(), "silent@run:1");
    wait(&mut d, &s).unwrap();
    assert_eq!(record(&mut d, &s), Record::NeverPublished { stamp: 0 });
    assert_eq!(sync(&mut d, aicpu), Ok(()));
    assert_eq!(sync(&mut d, aicore), Ok(()));
}

#[test]
fn a_stream_synchronize_refuses_a_zero_timeout_and_times_out_with_507046() {
    let (mut d, aicpu, _, _) = launched(device(), "stuck@run:1");
    assert_eq!(d.synchronize_stream(aicpu, 0), Err(AclCode::RtParamInvalid));
    let before = d.host_ns();
    assert_eq!(d.synchronize_stream(aicpu, 10), Err(AclCode::RtStreamSyncTimeout));
    assert_eq!(d.host_ns() - before, cost(Cost::SynchronizeDevice) + 10_000_000);
}

#[test]
fn a_stream_synchronize_waits_for_the_streams_tasks_in_virtual_time() {
    let (mut d, aicpu, _, _) = launched(device(), "");
    let before = d.host_ns();
    assert_eq!(sync(&mut d, aicpu), Ok(()));
    assert!(d.host_ns() - before >= DEVICE_NS, "it waited for the run");
    assert_eq!(d.query_stream(aicpu), Ok(true));
}

#[test]
fn the_kernels_write_the_status_header_and_timing_the_lane_decodes() {
    // A latch by two scheduler threads names both in the bitmap and keeps the first writer.
    let (mut d, _, _, s) = launched(device(), "latch=SCHEDULER_TIMEOUT@run:1/threads:3,1");
    let mut header = [0u8; 896];
    // Before the run ends the host sees the header as it was (all zero).
    d.memcpy_from_device(&mut header, s.args.status_header).unwrap();
    assert_eq!(status_latch::decode(LAYOUT, &header).unwrap().latched(), None);
    wait(&mut d, &s).unwrap();
    d.memcpy_from_device(&mut header, s.args.status_header).unwrap();
    let status = status_latch::decode(LAYOUT, &header).unwrap();
    assert_eq!(status.sched, Some(RuntimeCode::SchedulerTimeout));
    assert_eq!(status.orch, None);
    assert_eq!(status.sched_thread, 3, "the first writer's thread");
    assert_eq!(status.sched_bitmap, 0b1010, "threads 1 and 3");
    let (start, end) = timing(&mut d, &s);
    assert!(start > 0 && end > start);
}

#[test]
fn every_call_advances_the_host_clock_by_its_cost() {
    let mut d = device();
    let t0 = d.host_ns();
    let stream = d.create_stream().unwrap();
    assert_eq!(d.host_ns() - t0, cost(Cost::StreamCreate));
    let ptr = d.malloc(16).unwrap();
    let mut buf = [0u8; 16];
    let t1 = d.host_ns();
    d.memcpy_from_device(&mut buf, ptr).unwrap();
    assert_eq!(d.host_ns() - t1, cost(Cost::ReadD2h));
    let t2 = d.host_ns();
    d.destroy_stream(stream).unwrap();
    assert_eq!(d.host_ns() - t2, cost(Cost::StreamDestroy));
}

#[test]
fn the_first_aicore_launch_after_an_upload_pays_the_binary_load_again() {
    let mut d = device();
    let (aicpu, aicore, s1, s2) = pair_and_two_slots(&mut d);
    let t = d.host_ns();
    launch(&mut d, &s1, aicpu, aicore);
    let first = d.host_ns() - t;
    wait(&mut d, &s1).unwrap();
    SimRunner.upload_code(&mut d, lane_core::CodeRef(1)).unwrap();
    let t = d.host_ns();
    SimRunner.launch_aicore(&mut d, aicore, &s2.args).unwrap();
    assert_eq!(d.host_ns() - t, cost(Cost::KernelLaunch) + cost(Cost::FirstAicoreLaunch));
    assert!(first > cost(Cost::FirstAicoreLaunch));
}

#[test]
fn destroying_a_stream_with_queued_work_breaks_a_device_invariant() {
    let (mut d, _, aicore, _) = launched(device(), "");
    d.destroy_stream(aicore).unwrap();
    assert_invariant(&d, "with queued work");
}

#[test]
fn force_destroying_a_stream_drops_its_queued_work_without_breaking_an_invariant() {
    let (mut d, _, aicore, s) = launched(device(), "");
    d.destroy_stream_force(aicore).unwrap();
    assert_eq!(d.failure(), None);
    d.synchronize_device(1_000).ok();
    let (start, end) = timing(&mut d, &s);
    assert_eq!((start, end), (0, 0), "the dropped run never wrote its timing buffer");
    assert!(
        d.destroy_stream(aicore).is_err(),
        "the stream is gone: a second destroy is a dead handle"
    );
}

#[test]
fn a_launch_into_a_live_runs_slot_buffers_breaks_a_device_invariant() {
    let mut d = device();
    let (aicpu, aicore) = pair(&mut d);
    let s1 = slot(&mut d, 1, 0);
    launch(&mut d, &s1, aicpu, aicore);
    // Run 2 reuses run 1's timing buffer while run 1 is still live (L-13).
    let mut s2 = slot(&mut d, 2, 1);
    s2.args.timing = s1.args.timing;
    SimRunner.launch_aicore(&mut d, aicore, &s2.args).unwrap();
    assert_invariant(&d, "share the slot buffer");
}

#[test]
fn a_partial_launch_leaves_the_aicore_kernel_spinning_forever() {
    let mut d = device();
    d.install(FaultRule::parse("aicpu-launch=507018@run:1").unwrap());
    let (aicpu, aicore) = pair(&mut d);
    let s = slot(&mut d, 1, 0);
    d.launch_context(stage(1, LaunchStage::Arm));
    SimRunner.launch_aicore(&mut d, aicore, &s.args).unwrap();
    d.launch_context(stage(1, LaunchStage::Kernels));
    assert_eq!(
        SimRunner.launch_aicpu(&mut d, aicpu, &s.args),
        Err(AclCode::RtAicpuException.into())
    );
    d.launch_context(None);
    assert_nothing_more_runs_on(&mut d, aicore, "behind the orphaned AICore kernel");
}

#[test]
fn using_a_handle_after_a_reset_breaks_a_device_invariant() {
    let mut d = device();
    let stream = d.create_stream().unwrap();
    d.reset_device_force().unwrap();
    assert_eq!(d.destroy_stream(stream), Err(AclCode::RtInvalidHandle));
    assert_invariant(&d, "not live");
}

#[test]
fn device_time_jitter_is_a_pure_function_of_seed_and_run() {
    let times = RunTimes { device_ns: 100_000, jitter_ppm: 100_000 };
    let a: Vec<u64> = (1..50).map(|r| times.of(7, RunId(r))).collect();
    let b: Vec<u64> = (1..50).map(|r| times.of(7, RunId(r))).collect();
    assert_eq!(a, b);
    assert!(a.iter().all(|t| (90_000..=110_000).contains(t)));
    assert!(a.windows(2).any(|w| w[0] != w[1]), "jitter varies per run");
    assert_ne!(a, (1..50).map(|r| times.of(8, RunId(r))).collect::<Vec<_>>());
}

#[test]
fn slot_buffers_inside_one_allocation_are_written_and_read_at_their_offsets() {
    // The driver's layout: one allocation per slot, handshake at 0, timing at 64, header at
    // 80. The kernels write through interior pointers; one copy reads timing and header.
    let mut d = device();
    d.install(FaultRule::parse("latch=100@run:1").unwrap());
    let (aicpu, aicore) = pair(&mut d);
    let base = d.malloc(lane_driver::SLOT_BYTES).unwrap();
    let s = Slot {
        args: RunArgs {
            run: RunId(1),
            slot: SlotId(0),
            status_header: base.at(80),
            timing: base.at(64),
            handshake: base,
            record: base.at(lane_driver::RECORD_OFFSET),
            epoch: 1,
            queued: false,
        },
        events: [d.create_event().unwrap(), d.create_event().unwrap()],
    };
    d.memcpy_to_device(base, &[0xff; 80]).unwrap();
    launch(&mut d, &s, aicpu, aicore);
    wait(&mut d, &s).unwrap();
    let mut readback = [0u8; 16 + 896];
    d.memcpy_from_device(&mut readback, base.at(64)).unwrap();
    let (timing, header) = readback.split_at(16);
    let start = u64::from_le_bytes(timing[..8].try_into().unwrap());
    let end = u64::from_le_bytes(timing[8..].try_into().unwrap());
    assert!(start > 0 && end > start, "{start}..{end}");
    let status = status_latch::decode(LAYOUT, header).unwrap();
    assert_eq!(status.sched, Some(RuntimeCode::SchedulerTimeout));
    // A copy running past the allocation's end is refused, not clipped.
    assert_eq!(
        d.memcpy_from_device(&mut [0u8; 64], base.at(lane_driver::SLOT_BYTES - 32)),
        Err(AclCode::RtParamInvalid)
    );
    assert_eq!(d.failure(), None);
}
