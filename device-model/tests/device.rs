//! The device model, call by call, with time passed in: each device fact device-truth.md
//! states, under each semantic switch that changes it. Both backends drive this model
//! (backend-sim in virtual time, acl-fake in real time), so a fact proven here holds on both;
//! their own tests prove the costs, traces, threads and C ABI around it.

use device_model::faults::FaultRule;
use device_model::{
    CopySpec, Device, Engine, EventState, HostMemory, KernelSpec, NoHostMemory, OpTimeoutCodeOn,
    Outcome, Place, RecordRun, RunKey, STREAM_ABORT, Semantics, SlotRead, StreamNext, Timing,
};
use status_latch::{
    AclCode, HeaderLayout, RECORD_BYTES, Record, RecordSource, RuntimeCode, Status, decode_record,
    encode,
};

const MS: u64 = 1_000_000;
const LAYOUT: HeaderLayout = HeaderLayout::TensormapAndRingbuffer;
const ABORT: AclCode = AclCode::Unknown(STREAM_ABORT);

/// A device with `semantics`, no costs, a 1 s op timeout.
fn device(semantics: Semantics) -> Device {
    let mut d = Device::new(semantics, Timing::default(), 1);
    d.set_op_timeout(Some(1_000 * MS));
    d
}

/// Advances `d` to `now` with no host memory.
fn at(d: &mut Device, now: u64) {
    d.advance(now, &mut NoHostMemory);
}

fn sticky(d: &Device, stream: u64, now: u64) -> Option<AclCode> {
    d.stream_sticky(stream, now).expect("a live stream")
}

/// Calls every test makes, asserting they succeed.
trait Queue {
    /// Queues `spec` on `stream` at `now`.
    fn queue(&mut self, stream: u64, spec: KernelSpec, now: u64);
    /// Records `event` on `stream` at `now`, for no run.
    fn mark(&mut self, event: u64, stream: u64, now: u64);
}

impl Queue for Device {
    fn queue(&mut self, stream: u64, spec: KernelSpec, now: u64) {
        self.launch(stream, spec, now).unwrap();
    }

    fn mark(&mut self, event: u64, stream: u64, now: u64) {
        self.record_event(event, stream, RecordRun::Known(None), 0, now).unwrap();
    }
}

/// A kernel of `ms` on `engine` ending `outcome`.
fn kernel(engine: Engine, ms: u64, outcome: Outcome) -> KernelSpec {
    KernelSpec { outcome, ..KernelSpec::new(engine, ms * MS) }
}

/// One run's slot: timing, header and record regions, and its two streams and events.
struct Run {
    key: RunKey,
    id: u64,
    timing: u64,
    header: u64,
    record: u64,
}

fn slot(d: &mut Device, base: u64, id: u64) -> Run {
    d.allocate(base, 64 + 896 + RECORD_BYTES);
    Run {
        key: RunKey { handshake: base, epoch: 100 + id },
        id,
        timing: base,
        header: base + 64,
        record: base + 64 + 896,
    }
}

impl Run {
    /// The run's kernel on `engine`: the scheduler writes timing, header and record.
    fn kernel(&self, engine: Engine, ms: u64) -> KernelSpec {
        let scheduler = engine == Engine::Aicpu;
        KernelSpec {
            timing: scheduler.then_some(self.timing),
            header: scheduler.then_some(self.header),
            header_bytes: if scheduler {
                encode(LAYOUT, &Status::clean(LAYOUT))
            } else {
                Vec::new()
            },
            run: Some(self.key),
            record: scheduler.then_some(self.record),
            epoch: self.key.epoch,
            run_id: Some(self.id),
            ..KernelSpec::new(engine, ms * MS)
        }
    }

    fn record(&self, d: &Device) -> Record {
        decode_record(d.bytes(self.record, RECORD_BYTES).expect("allocated"), self.key.epoch)
    }

    fn timing(&self, d: &Device) -> (u64, u64) {
        let word = |at: u64| u64::from_le_bytes(d.bytes(at, 8).unwrap().try_into().unwrap());
        (word(self.timing), word(self.timing + 8))
    }
}

/// Launches `run`'s two kernels of `ms` on `(core, cpu)` at `now`: [`launch_specs`].
fn launch(d: &mut Device, run: &Run, streams: (u64, u64), ms: u64, now: u64) {
    let specs = [Engine::Aicore, Engine::Aicpu].map(|engine| run.kernel(engine, ms));
    launch_specs(d, specs, streams, now);
}

/// Launches a run's kernels `[aicore, aicpu]` on `(core, cpu)` at `now`, L-5's order, with
/// `core_done` (event 901) and the boundary (event 900).
fn launch_specs(
    d: &mut Device,
    [aicore, aicpu]: [KernelSpec; 2],
    (core, cpu): (u64, u64),
    now: u64,
) {
    for event in [900, 901] {
        if !d.has_event(event) {
            d.create_event(event, true, now).unwrap();
        }
    }
    let last = RecordRun::LastKernel;
    d.queue(core, aicore, now);
    d.record_event(901, core, last, 0, now).unwrap();
    d.queue(cpu, aicpu, now);
    d.stream_wait_event(cpu, 901, 0, now).unwrap();
    d.record_event(900, cpu, last, 0, now).unwrap();
}

fn pair(d: &mut Device) -> (u64, u64) {
    d.create_stream(1, 0).unwrap();
    d.create_stream(2, 0).unwrap();
    (1, 2)
}

#[test]
fn a_task_starts_after_its_predecessor_ends_plus_a_task_switch_and_a_wait_adds_none() {
    let timing = Timing {
        task_switch: 1_000,
        kernel_start_latency: 5_000,
        event_task: 2_000,
        copy_task: 3_000,
        copy_ns_per_kib: 0,
    };
    let mut d = Device::new(Semantics::DEVICE, timing, 1);
    d.create_stream(1, 0).unwrap();
    d.create_event(9, true, 0).unwrap();
    // Enqueued at 0: starts after its start latency; the next one after it ends plus a switch.
    d.queue(1, KernelSpec::new(Engine::Aicpu, 100_000), 0);
    d.mark(9, 1, 10_000);
    assert_eq!(d.stream_next(1), StreamNext::At(5_000));
    let passed = d.run_until(None, &mut NoHostMemory, |d| d.event_passed(9).is_some());
    // 5 us latency + 100 us kernel, a 1 us switch, a 2 us record.
    assert_eq!(passed, Some(108_000));
    assert_eq!(d.event_passed(9), Some(Some(108_000)));
}

#[test]
fn completion_is_not_the_verdict_only_the_stream_keeps_the_code_and_its_next_task_still_runs() {
    // device-truth §1: an exception, an op-timeout kill and a fatal-status latch each complete
    // the events behind them; the code is sticky on the stream, read only by a synchronize;
    // the next task still runs (continue-on-failure), and a new stream starts clean.
    let (core, cpu, exception) = (Engine::Aicore, Engine::Aicpu, Outcome::Exception(None));
    for (engine, outcome, code) in [
        (core, exception, AclCode::RtAicoreException),
        (cpu, exception, AclCode::RtAicpuException),
        (core, Outcome::Hang, AclCode::RtAicoreTimeout),
        (cpu, Outcome::Hang, AclCode::RtAicpuTimeout),
        (cpu, Outcome::Latch, AclCode::RtAicpuException),
    ] {
        let mut d = device(Semantics::DEVICE);
        d.create_stream(1, 0).unwrap();
        d.create_event(9, true, 0).unwrap();
        d.queue(1, kernel(engine, 1, outcome), 0);
        d.mark(9, 1, 0);
        d.queue(1, kernel(engine, 1, Outcome::Ok), 0);
        at(&mut d, 2_000 * MS);
        assert_eq!(d.event_state(9), Some(EventState::Complete), "{outcome:?}");
        assert_eq!(d.stream_busy(1), Some(false), "the next kernel ran");
        assert_eq!(sticky(&d, 1, 2_000 * MS), Some(code), "{outcome:?}");
        let drained = d.device_code(2_000 * MS);
        assert_eq!(drained, Err(code), "the drain reads it too");
        d.create_stream(2, 0).unwrap();
        assert_eq!(sticky(&d, 2, 2_000 * MS), None);
        // Until the stream is destroyed or the device force-reset.
        d.destroy_stream(1, 2_000 * MS).unwrap();
        assert_eq!(d.device_code(2_000 * MS), Ok(()));
    }
}

#[test]
fn a_force_reset_kills_every_stream_event_and_allocation_and_starts_a_generation() {
    let mut d = device(Semantics::DEVICE);
    d.create_stream(1, 0).unwrap();
    d.create_event(9, true, 0).unwrap();
    d.allocate(0x1000, 64);
    d.queue(1, kernel(Engine::Aicore, 1, Outcome::Exception(None)), 0);
    at(&mut d, 5 * MS);
    let reclaimed = d.force_reset(5 * MS).unwrap();
    assert_eq!((reclaimed.streams, reclaimed.events, reclaimed.allocations), (1, 1, 1));
    assert_eq!(d.generation(), 1);
    assert!(!d.has_stream(1) && !d.has_event(9) && d.bytes(0x1000, 1).is_none());
    d.create_stream(2, 5 * MS).unwrap();
    assert_eq!(d.device_code(5 * MS), Ok(()));
}

#[test]
fn an_event_captures_only_the_work_before_its_record_and_a_never_recorded_one_is_complete() {
    let mut d = device(Semantics::DEVICE);
    d.create_stream(1, 0).unwrap();
    d.create_event(9, true, 0).unwrap();
    assert_eq!(d.event_state(9), Some(EventState::Complete));
    d.queue(1, kernel(Engine::Aicore, 2, Outcome::Ok), 0);
    d.mark(9, 1, 0);
    d.queue(1, kernel(Engine::Aicore, 10, Outcome::Ok), 0);
    at(&mut d, MS);
    assert_eq!(d.event_state(9), Some(EventState::NotReady));
    at(&mut d, 3 * MS);
    assert_eq!(d.event_state(9), Some(EventState::Complete));
    assert_eq!(d.stream_busy(1), Some(true), "the later kernel still runs");
}

#[test]
fn a_stream_waits_for_the_capture_it_took_and_an_aborted_capture_is_sticky_on_the_waiter() {
    let mut d = device(Semantics::DEVICE);
    let (a, b) = pair(&mut d);
    d.create_event(9, true, 0).unwrap();
    d.queue(a, kernel(Engine::Aicore, 5, Outcome::Ok), 0);
    d.mark(9, a, 0);
    d.stream_wait_event(b, 9, 0, 0).unwrap();
    d.queue(b, kernel(Engine::Aicpu, 1, Outcome::Ok), 0);
    // A later record moves the event, not the wait already queued.
    d.mark(9, b, 0);
    at(&mut d, 4 * MS);
    assert_eq!(d.stream_busy(b), Some(true), "held behind a's kernel");
    at(&mut d, 7 * MS);
    assert_eq!(d.stream_busy(b), Some(false));
    // A wait on work whose stream dies unfinished: 107023, sticky on the waiter.
    d.create_event(8, true, 0).unwrap();
    d.queue(a, kernel(Engine::Aicore, 0, Outcome::Stuck), 7 * MS);
    d.mark(8, a, 7 * MS);
    d.stream_wait_event(b, 8, 0, 7 * MS).unwrap();
    at(&mut d, 8 * MS);
    assert_eq!(d.stream_next(b), StreamNext::Blocked);
    d.destroy_stream(a, 8 * MS).unwrap();
    at(&mut d, 8 * MS);
    assert_eq!(sticky(&d, b, 8 * MS), Some(ABORT));
    assert_eq!(d.event_state(8), Some(EventState::Failed(ABORT)));
    // A wait needs ACL_EVENT_SYNC.
    d.create_event(7, false, 0).unwrap();
    assert!(d.stream_wait_event(b, 7, 0, 8 * MS).is_err());
}

#[test]
fn a_run_publishes_its_record_before_its_boundary_passes_ok_error_or_nothing() {
    // device-truth §2: ok for a clean run, an error with the latched code from the header
    // (source: the header, payload: its error tail), nothing for an exception, a hang, a
    // silent exit or a faulted AICore sibling; each stamped with its run's epoch.
    let latch = Status { orch: Some(RuntimeCode::ScopeDeadlock), ..Status::clean(LAYOUT) };
    let none = Record::NeverPublished { stamp: 0 };
    let error = Record::Error {
        code: RuntimeCode::ScopeDeadlock,
        source: RecordSource::Header,
        payload_len: 64,
    };
    let cases = [
        (Outcome::Ok, Outcome::Ok, Record::Ok),
        (Outcome::Ok, Outcome::Latch, error),
        (Outcome::Ok, Outcome::Silent, none),
        (Outcome::Ok, Outcome::Exception(None), none),
        (Outcome::Exception(None), Outcome::Ok, none),
    ];
    for (core, cpu, expected) in cases {
        let mut d = device(Semantics::DEVICE);
        let streams = pair(&mut d);
        let run = slot(&mut d, 0x10_0000, 1);
        let mut specs = [Engine::Aicore, Engine::Aicpu].map(|engine| run.kernel(engine, 1));
        (specs[0].outcome, specs[1].outcome) = (core, cpu);
        if cpu == Outcome::Latch {
            specs[1].header_bytes = encode(LAYOUT, &latch);
        }
        launch_specs(&mut d, specs, streams, 0);
        let passed = d.run_until(None, &mut NoHostMemory, |d| {
            d.event_state(900) == Some(EventState::Complete)
        });
        assert!(passed.is_some());
        assert_eq!(run.record(&d), expected, "{core:?} {cpu:?}");
    }
}

#[test]
fn the_handshake_starts_a_runs_work_when_both_kernels_started_and_ends_them_together() {
    let mut d = device(Semantics::SIMULATOR);
    let (core, cpu) = pair(&mut d);
    let other = 3;
    d.create_stream(other, 0).unwrap();
    // Something 4 ms long ahead of the scheduler only.
    d.queue(cpu, kernel(Engine::Aicpu, 4, Outcome::Ok), 0);
    let run = slot(&mut d, 0x10_0000, 1);
    launch(&mut d, &run, (core, cpu), 2, 0);
    at(&mut d, 10 * MS);
    // The workers spun until the scheduler started at 4 ms; both worked 2 ms from there.
    assert_eq!(run.timing(&d), (4 * MS, 6 * MS));
    assert_eq!(run.record(&d), Record::Ok);
    // Without the handshake each kernel runs alone: the AICore kernel's work starts at once.
    let mut d = device(Semantics::DEVICE);
    let (core, cpu) = pair(&mut d);
    d.queue(cpu, kernel(Engine::Aicpu, 4, Outcome::Ok), 0);
    let run = slot(&mut d, 0x10_0000, 1);
    launch(&mut d, &run, (core, cpu), 2, 0);
    at(&mut d, MS);
    assert_eq!(d.stream_busy(core), Some(true));
    at(&mut d, 3 * MS);
    assert_eq!(d.stream_busy(core), Some(false), "the workers ended alone");
    // A kernel whose partner never starts spins until the op timeout kills it.
    let mut d = device(Semantics::SIMULATOR);
    d.create_stream(other, 0).unwrap();
    let run = slot(&mut d, 0x10_0000, 1);
    d.queue(other, run.kernel(Engine::Aicore, 1), 0);
    at(&mut d, 999 * MS);
    assert_eq!(d.stream_busy(other), Some(true));
    at(&mut d, 1_000 * MS);
    assert_eq!(sticky(&d, other, 1_000 * MS), Some(AclCode::RtAicoreTimeout));
}

#[test]
fn a_runs_fate_from_its_run_rule_reaches_both_kernels_and_the_sticky_fallout_fails_checked_calls() {
    // The simulator's device: a hung AICore kernel is killed at the op timeout (507014 on
    // its stream), its scheduler, released then, publishes nothing; the kill makes the
    // device bad for every checked call until a force reset.
    let mut d = device(Semantics::SIMULATOR);
    d.install(FaultRule::parse("hang@run:2").unwrap());
    let (core, cpu) = pair(&mut d);
    let first = slot(&mut d, 0x10_0000, 1);
    let second = slot(&mut d, 0x20_0000, 2);
    launch(&mut d, &first, (core, cpu), 1, 0);
    at(&mut d, 5 * MS);
    assert_eq!(first.record(&d), Record::Ok);
    launch(&mut d, &second, (core, cpu), 1, 5 * MS);
    at(&mut d, 500 * MS);
    assert_eq!(d.event_state(900), Some(EventState::NotReady));
    at(&mut d, 1_006 * MS);
    assert_eq!(d.event_state(900), Some(EventState::Complete));
    assert_eq!(second.record(&d), Record::NeverPublished { stamp: 0 });
    assert_eq!(sticky(&d, core, 1_006 * MS), Some(AclCode::RtAicoreTimeout));
    assert_eq!(sticky(&d, cpu, 1_006 * MS), None);
    let bad = Err(AclCode::RtAicoreTimeout);
    assert_eq!(d.fault_now(1_006 * MS), bad);
    assert_eq!(d.create_stream(5, 1_006 * MS).map(|_| ()), bad);
    assert_eq!(d.check_malloc(64, 1_006 * MS), bad);
    d.force_reset(1_006 * MS).unwrap();
    assert_eq!(d.fault_now(1_006 * MS), Ok(()));
}

#[test]
fn a_later_enqueue_on_a_faulted_stream_is_refused_with_507899_only_where_switched() {
    for refuse in [false, true] {
        let mut d = device(Semantics { refuse_enqueue_after_fault: refuse, ..Semantics::DEVICE });
        d.create_stream(1, 0).unwrap();
        d.create_event(9, true, 0).unwrap();
        d.allocate(0x1000, 64);
        d.queue(1, kernel(Engine::Aicore, 0, Outcome::Exception(None)), 0);
        at(&mut d, MS);
        let launched = d.launch(1, kernel(Engine::Aicore, 0, Outcome::Ok), MS);
        let recorded = d.record_event(9, 1, RecordRun::Known(None), 0, MS);
        let waited = d.stream_wait_event(1, 9, 0, MS);
        let copy = CopySpec { src: Place::Device(0x1000), dst: Place::Device(0x1020), len: 8 };
        let copied = d.enqueue_copy(1, copy, &NoHostMemory, false, 0, MS);
        let refused = [launched.is_err(), recorded.is_err(), waited.is_err(), copied.is_err()];
        assert_eq!(refused, [refuse; 4]);
    }
}

#[test]
fn an_op_timeout_kill_leaves_its_code_on_its_own_its_partners_or_both_streams() {
    for (on, own, partner) in [
        (OpTimeoutCodeOn::OwnStream, true, false),
        (OpTimeoutCodeOn::PartnerStream, false, true),
        (OpTimeoutCodeOn::BothStreams, true, true),
    ] {
        let mut d = device(Semantics { op_timeout_code_on: on, ..Semantics::DEVICE });
        let (core, cpu) = pair(&mut d);
        let run = slot(&mut d, 0x10_0000, 1);
        let hung = KernelSpec { outcome: Outcome::Hang, ..run.kernel(Engine::Aicore, 1) };
        d.queue(core, hung, 0);
        d.queue(cpu, run.kernel(Engine::Aicpu, 1), 0);
        at(&mut d, 2_000 * MS);
        let code = Some(AclCode::RtAicoreTimeout);
        assert_eq!(sticky(&d, core, 2_000 * MS).is_some(), own, "{on:?}");
        assert_eq!(sticky(&d, cpu, 2_000 * MS) == code, partner, "{on:?}");
    }
    // No op timeout: a hang never ends.
    let mut d = device(Semantics::DEVICE);
    d.set_op_timeout(None);
    d.create_stream(1, 0).unwrap();
    d.queue(1, kernel(Engine::Aicore, 1, Outcome::Hang), 0);
    at(&mut d, u64::MAX / 2);
    assert_eq!(d.stream_next(1), StreamNext::Blocked);
}

#[test]
fn a_latch_exits_clean_with_its_record_where_switched_and_legacy_restores_the_old_propagation() {
    let mut d = device(Semantics { latch_faults_stream: false, ..Semantics::DEVICE });
    d.create_stream(1, 0).unwrap();
    d.queue(1, kernel(Engine::Aicpu, 1, Outcome::Latch), 0);
    at(&mut d, 2 * MS);
    assert_eq!(sticky(&d, 1, 2 * MS), None);
    // Legacy: a wait's event returns the fault, and nothing after the fault runs.
    let mut d = device(Semantics { legacy_event_faults: true, ..Semantics::DEVICE });
    d.create_stream(1, 0).unwrap();
    d.create_event(9, true, 0).unwrap();
    d.queue(1, kernel(Engine::Aicore, 1, Outcome::Exception(None)), 0);
    d.queue(1, kernel(Engine::Aicore, 1, Outcome::Ok), 0);
    d.mark(9, 1, 0);
    at(&mut d, 10 * MS);
    let fault = AclCode::RtAicoreException;
    assert_eq!(d.event_state(9), Some(EventState::Failed(fault)));
    assert_eq!(d.stream_next(1), StreamNext::Idle, "halted");
    assert!(d.stream_reached(1, d.stream_submitted(1).unwrap()));
}

#[test]
fn stream_numbers_are_never_reused_unless_a_reset_restarts_them_where_switched() {
    for restart in [false, true] {
        let mut d =
            device(Semantics { reset_restarts_stream_numbering: restart, ..Semantics::DEVICE });
        assert_eq!(d.create_stream(1, 0), Ok(1));
        assert_eq!(d.create_stream(2, 0), Ok(2));
        d.destroy_stream(2, 0).unwrap();
        assert_eq!(d.create_stream(3, 0), Ok(3), "a destroy restarts nothing");
        d.force_reset(0).unwrap();
        assert_eq!(d.create_stream(4, 0), Ok(if restart { 1 } else { 4 }));
    }
}

#[test]
fn fault_sites_name_their_run_a_status_or_record_read_by_its_slot_and_an_armed_record_none() {
    let mut d = device(Semantics::SIMULATOR);
    for spec in
        ["record-read=507899@run:1", "status-read=107000@run:2", "event-record=507899@run:2"]
    {
        d.install(FaultRule::parse(spec).unwrap());
    }
    let (core, cpu) = pair(&mut d);
    let first = slot(&mut d, 0x10_0000, 1);
    launch(&mut d, &first, (core, cpu), 1, 0);
    at(&mut d, 5 * MS);
    let mut record = [0; RECORD_BYTES];
    assert!(d.read(&mut record, first.record, 5 * MS).is_err(), "run 1's record read");
    let mut header = [0; 896];
    assert!(d.read(&mut header, first.header, 5 * MS).is_ok(), "not run 2's");
    assert_eq!(d.slot_read(first.header, 896, SlotRead::Header), Some(Some(1)));
    // An arm (a host-to-device copy) then its "armed" record: no run, no record fault.
    let second = slot(&mut d, 0x20_0000, 2);
    d.queue(core, second.kernel(Engine::Aicore, 1), 5 * MS);
    let arm = CopySpec {
        src: Place::Host { addr: 0, pinned: false },
        dst: Place::Device(second.timing),
        len: 8,
    };
    struct Anything;
    impl HostMemory for Anything {
        fn read(&mut self, _: u64, len: usize, _: bool) -> Result<Vec<u8>, AclCode> {
            Ok(vec![7; len])
        }
        fn write(&mut self, _: u64, _: &[u8], _: bool) -> Result<(), AclCode> {
            Ok(())
        }
        fn holds(&self, _: u64, _: usize, _: bool) -> bool {
            true
        }
    }
    d.enqueue_copy(core, arm, &Anything, false, 0, 5 * MS).unwrap();
    assert!(d.record_event(901, core, RecordRun::LastKernel, 0, 5 * MS).is_ok());
    assert_eq!(d.event_run(901), None);
    assert!(d.record_event(901, core, RecordRun::LastKernel, 0, 5 * MS).is_err());
    assert_eq!(d.event_run(901), None, "a failed record moves nothing");
}

#[test]
fn kernel_call_and_copy_rules_count_their_calls_from_their_install() {
    let mut d = device(Semantics::DEVICE);
    d.create_stream(1, 0).unwrap();
    d.allocate(0x1000, 64);
    d.queue(1, kernel(Engine::Aicpu, 1, Outcome::Ok), 0);
    // The next AICPU kernel after one more ends in an exception; AICore ones don't count.
    d.install(FaultRule::parse("kernel-exception@call:2/engine:aicpu").unwrap());
    d.install(FaultRule::parse("call:aclrtMalloc=0@call:1").unwrap());
    d.install(FaultRule::parse("copy=507899@call:1").unwrap());
    for engine in [Engine::Aicpu, Engine::Aicore, Engine::Aicpu] {
        d.queue(1, kernel(engine, 1, Outcome::Ok), 0);
    }
    at(&mut d, 10 * MS);
    assert_eq!(sticky(&d, 1, 10 * MS), Some(AclCode::RtAicpuException));
    assert_eq!(d.decide_call("aclrtMalloc"), Some(0), "a call rule returns any value");
    assert_eq!(d.decide_call("aclrtMalloc"), None);
    d.create_stream(2, 0).unwrap();
    let copy = CopySpec { src: Place::Device(0x1000), dst: Place::Device(0x1020), len: 8 };
    d.enqueue_copy(2, copy, &NoHostMemory, true, 0, 10 * MS).unwrap();
    at(&mut d, 10 * MS);
    assert_eq!(d.task_result(2, 1), Some(Err(AclCode::RtDrvInternalError)));
}

/// Launches `run` with kernels ending `core` and `cpu` (the scheduler writing `header`, its
/// record at `run.record` stamped `epoch`) on a fresh pair; the record once both ended.
fn run_record(core: Outcome, cpu: Outcome, header: &[u8], epoch: u64, d: &mut Device) -> Vec<u8> {
    let now = 1_000 * MS * epoch;
    let (core_stream, cpu_stream) = (epoch * 10, epoch * 10 + 1);
    d.create_stream(core_stream, now).unwrap();
    d.create_stream(cpu_stream, now).unwrap();
    let key = RunKey { handshake: 0x10_0000, epoch };
    let aicore =
        KernelSpec { outcome: core, run: Some(key), ..KernelSpec::new(Engine::Aicore, MS) };
    let aicpu = KernelSpec {
        outcome: cpu,
        header: (!header.is_empty()).then_some(0x20_0000),
        header_bytes: header.to_vec(),
        run: Some(key),
        record: Some(0x10_0000),
        epoch,
        ..KernelSpec::new(Engine::Aicpu, MS)
    };
    d.queue(core_stream, aicore, now);
    d.queue(cpu_stream, aicpu, now);
    at(d, now + 900 * MS);
    d.bytes(0x10_0000, RECORD_BYTES).unwrap().to_vec()
}

#[test]
fn a_latch_publishes_its_code_in_either_layout_each_record_carries_its_epoch_and_no_record_reads_as_an_earlier_runs()
 {
    let mut d = device(Semantics::DEVICE);
    d.allocate(0x10_0000, RECORD_BYTES);
    d.allocate(0x20_0000, 896);
    for (layout, payload) in
        [(HeaderLayout::TensormapAndRingbuffer, 64), (HeaderLayout::HostBuildGraph, 0)]
    {
        let latched = encode(
            layout,
            &Status { orch: Some(RuntimeCode::ExplicitOrchFatal), ..Status::clean(layout) },
        );
        let bytes = run_record(Outcome::Ok, Outcome::Latch, &latched, 1 + payload, &mut d);
        assert_eq!(
            decode_record(&bytes, 1 + payload),
            Record::Error {
                code: RuntimeCode::ExplicitOrchFatal,
                source: RecordSource::Header,
                payload_len: u16::try_from(payload).unwrap(),
            },
            "{layout}"
        );
        if payload > 0 {
            assert_eq!(&bytes[24..24 + 64], &latched[784..848], "the error tail");
        }
    }
    // Ok, then a hang, a silent exit and an exception: the region keeps the last stamp.
    let ok = run_record(Outcome::Ok, Outcome::Ok, &[], 2, &mut d);
    assert_eq!(decode_record(&ok, 2), Record::Ok);
    for (core, cpu, epoch) in [
        (Outcome::Hang, Outcome::Ok, 3),
        (Outcome::Ok, Outcome::Silent, 4),
        (Outcome::Silent, Outcome::Ok, 5),
        (Outcome::Exception(None), Outcome::Latch, 6),
    ] {
        let bytes = run_record(core, cpu, &[], epoch, &mut d);
        assert_eq!(
            decode_record(&bytes, epoch),
            Record::NeverPublished { stamp: 2 },
            "{core:?} + {cpu:?}"
        );
    }
}

#[test]
fn the_record_lands_before_the_last_kernels_end_passes_and_a_kernel_alone_publishes_by_its_own_ending()
 {
    // Either kernel may end last: an event recorded behind it sees the record.
    for (core_ms, cpu_ms) in [(30, 0), (0, 30)] {
        let mut d = device(Semantics::DEVICE);
        let (core, cpu) = pair(&mut d);
        let run = slot(&mut d, 0x10_0000, 1);
        d.create_event(9, true, 0).unwrap();
        d.queue(core, run.kernel(Engine::Aicore, core_ms), 0);
        d.queue(cpu, run.kernel(Engine::Aicpu, cpu_ms), 0);
        let last = if core_ms > cpu_ms { core } else { cpu };
        d.mark(9, last, 0);
        let passed = d
            .run_until(None, &mut NoHostMemory, |d| d.event_state(9) == Some(EventState::Complete));
        assert!(passed.is_some());
        assert_eq!(run.record(&d), Record::Ok, "{core_ms} {cpu_ms}");
    }
    let mut d = device(Semantics::DEVICE);
    d.create_stream(1, 0).unwrap();
    d.allocate(0x10_0000, RECORD_BYTES);
    for (outcome, epoch, published) in [
        (Outcome::Ok, 31, true),
        (Outcome::Exception(None), 32, false),
        (Outcome::Silent, 33, false),
    ] {
        let alone = KernelSpec {
            outcome,
            record: Some(0x10_0000),
            epoch,
            ..KernelSpec::new(Engine::Aicpu, MS)
        };
        d.queue(1, alone, epoch * MS);
        at(&mut d, epoch * MS + 2 * MS);
        let record = decode_record(d.bytes(0x10_0000, RECORD_BYTES).unwrap(), epoch);
        assert_eq!(record == Record::Ok, published, "{outcome:?}");
    }
    // A latch that exits clean (the switch off) keeps its error record.
    let mut d = device(Semantics { latch_faults_stream: false, ..Semantics::DEVICE });
    d.allocate(0x10_0000, RECORD_BYTES);
    d.allocate(0x20_0000, 256);
    let latched = encode(
        HeaderLayout::HostBuildGraph,
        &Status {
            orch: Some(RuntimeCode::ScopeDeadlock),
            ..Status::clean(HeaderLayout::HostBuildGraph)
        },
    );
    let bytes = run_record(Outcome::Ok, Outcome::Latch, &latched, 7, &mut d);
    assert!(matches!(decode_record(&bytes, 7), Record::Error { .. }));
    assert_eq!(sticky(&d, 71, 8_000 * MS), None);
}
