//! The driver against a recording device and runner: every ACL-shaped call is logged, so each test
//! reads as "lane effects in → device calls out" (L-5 launch order, L-6 per-run waits,
//! L-7 slot events, L-8 status read, §5.3 recovery, event-record tracking).

use lane_core::status_latch::{
    AclCode, Class, DeviceVerdict, Evidence, Failure, HeaderLayout, RECORD_BYTES, Record,
    RecordRead, RecordSource, RecordWrite, ReturnCode, RuntimeCode, Status, VerdictChannel,
    encode_into, encode_record,
};
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    Cause, CodeRef, Effect, Event, FinaliseFailure, Generation, LaneState, LaunchStep, Lease,
    Outcome, Overlap, Profile, RunId, RunOutcome, RunRequest, SlotId, Timestamp, TimingSource,
    Verdict,
};
use lane_driver::testkit::{Call, Fail, TestDevice};
use lane_driver::{
    AicoreLaunch, Answer, Command, CompletionWaiter, Device, DevicePtr, DeviceWait, Driver,
    DriverError, EventHandle, Executor, HEADER_OFFSET, HostWorker, LaneSteps, LaunchContext,
    LaunchStage, NoObserver, Observation, Observer, PrepareError, READBACK_BYTES, RECORD_OFFSET,
    Release, Report, RunArgs, Runner, SLOT_BYTES, TIMING_OFFSET, Turn, WAITER_GRACE_NS, Wait,
    run_device_wait, wait_failed,
};

fn code(raw: i32) -> AclCode {
    AclCode::from_raw(raw).unwrap()
}

/// The runner half: its kernels write the run's status header and timing buffer through the
/// device's memory. It also records what issue 45's launch control hears.
#[derive(Default)]
struct Kernels {
    /// Runs whose header latches this code when they run.
    latch: Vec<(u64, RuntimeCode)>,
    /// Runs whose kernels publish no result record.
    silent: Vec<u64>,
    /// The code the runner's prepare fails with (it leaves no device text of its own).
    fail_prepare: Option<i32>,
    /// What each AICore launch received.
    launched: Vec<RunArgs>,
    /// Runs whose AICore launch is declined (once each).
    decline: Vec<u64>,
    /// Each AICore launch asked for: its run, and whether it was queued.
    asked_queued: Vec<(u64, bool)>,
    /// The runs `on_launched` heard of.
    on_launched: Vec<u64>,
    /// What `finalise_verdict` heard.
    finalised: Vec<(u64, Verdict)>,
}

impl Runner<TestDevice> for Kernels {
    fn try_launch_aicore(
        &mut self,
        d: &mut TestDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<AicoreLaunch, ReturnCode> {
        self.asked_queued.push((args.run.0, args.queued));
        if let Some(at) = self.decline.iter().position(|r| *r == args.run.0) {
            self.decline.remove(at);
            return Ok(AicoreLaunch::Declined);
        }
        self.launch_aicore(d, stream, args).map(|()| AicoreLaunch::Launched)
    }
    fn launch_aicore(
        &mut self,
        d: &mut TestDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.script().note(|| format!("launch_aicore r{} on s{}", args.run.0, stream.0));
        self.launched.push(*args);
        Ok(())
    }
    fn launch_aicpu(
        &mut self,
        d: &mut TestDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.script().note(|| format!("launch_aicpu r{} on s{}", args.run.0, stream.0));
        // The "kernels" write the run's status header and timing buffer.
        let mut status = Status::clean(HeaderLayout::TensormapAndRingbuffer);
        if let Some((_, code)) = self.latch.iter().find(|(r, _)| *r == args.run.0) {
            status.orch = Some(*code);
        }
        let mut script = d.script();
        let header = script.mem(args.status_header);
        encode_into(HeaderLayout::TensormapAndRingbuffer, &status, header).unwrap();
        // The runtime's device side publishes its record last: ok, or the latched code.
        if !self.silent.contains(&args.run.0) {
            let record = match status.orch {
                None => encode_record(args.epoch, &RecordWrite::Ok),
                Some(code) => encode_record(
                    args.epoch,
                    &RecordWrite::Error {
                        code: code.value(),
                        source: RecordSource::Header,
                        payload: &[],
                    },
                ),
            };
            script.mem(args.record)[..RECORD_BYTES].copy_from_slice(&record);
        }
        let end = args.run.0 * 1_000_000;
        let timing = script.mem(args.timing);
        timing[..8].copy_from_slice(&(end - 100_000).to_le_bytes());
        timing[8..16].copy_from_slice(&end.to_le_bytes());
        Ok(())
    }
    fn on_launched(&mut self, _: &mut TestDevice, args: &RunArgs) {
        self.on_launched.push(args.run.0);
    }
    fn prepare_run(
        &mut self,
        d: &mut TestDevice,
        run: RunId,
        slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        d.script().note(|| format!("prepare r{} s{}", run.0, slot.0));
        match self.fail_prepare {
            Some(raw) => Err(PrepareError::Failed(code(raw))),
            None => Ok(()),
        }
    }
    fn finalise_run(
        &mut self,
        d: &mut TestDevice,
        run: RunId,
        _slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        let copy_back = if copy_back { " copy-back" } else { "" };
        d.script().note(|| format!("finalise r{}{copy_back}", run.0));
        Ok(())
    }
    fn finalise_verdict(
        &mut self,
        d: &mut TestDevice,
        run: RunId,
        slot: SlotId,
        verdict: Verdict,
    ) -> Result<(), FinaliseFailure> {
        self.finalised.push((run.0, verdict));
        self.finalise_run(d, run, slot, verdict.is_ok())
    }
    fn upload_code(&mut self, d: &mut TestDevice, code: CodeRef) -> Result<(), ReturnCode> {
        d.script().note(|| format!("upload c{}", code.0));
        Ok(())
    }
}

type TestDriver<O = NoObserver> = Driver<TestDevice, Kernels, O>;

fn driver() -> TestDriver {
    Driver::new(Profile::a2a3(), TestDevice::default(), Kernels::default())
}

fn depth_one() -> TestDriver {
    Driver::new(Profile::depth_one(), TestDevice::default(), Kernels::default())
}

/// Submits `runs` runs, each accepted.
fn submit<O: Observer>(d: &mut TestDriver<O>, runs: usize) {
    for _ in 0..runs {
        d.submit(RunRequest::new()).unwrap().unwrap();
    }
}

fn fail<O: Observer>(d: &mut TestDriver<O>, fail: Fail) {
    d.device().script().fail.push(fail);
}

fn calls<O: Observer>(d: &mut TestDriver<O>) -> Vec<String> {
    std::mem::take(&mut d.device().script().calls)
}

fn outcomes<O: Observer>(d: &mut TestDriver<O>) -> Vec<Outcome> {
    std::iter::from_fn(|| d.poll_outcome()).collect()
}

fn reports<O: Observer>(d: &mut TestDriver<O>) -> Vec<Report> {
    std::iter::from_fn(|| d.poll_report()).collect()
}

/// Where `call` stands in `log`.
fn at(log: &[String], call: &str) -> usize {
    log.iter().position(|c| c == call).unwrap_or_else(|| panic!("no `{call}`: {log:?}"))
}

/// Where the first call starting with `prefix` stands in `log`.
fn first(log: &[String], prefix: &str) -> usize {
    log.iter()
        .position(|c| c.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}…`: {log:?}"))
}

/// How many calls in `log` start with `prefix`.
fn count(log: &[String], prefix: &str) -> usize {
    log.iter().filter(|c| c.starts_with(prefix)).count()
}

fn run_outcome(outcome: &Outcome) -> &RunOutcome {
    match outcome {
        Outcome::Run(r) => r,
        Outcome::Publication(p) => panic!("{p:?}"),
    }
}

/// The cause of a run's `Failed` verdict.
fn failed(outcome: Option<&Outcome>) -> Cause {
    match outcome.map(|o| run_outcome(o).verdict) {
        Some(Verdict::Failed { cause }) => cause,
        other => panic!("{other:?}"),
    }
}

/// The one outcome the driver has.
fn only(outcomes: &[Outcome]) -> Option<&Outcome> {
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    outcomes.first()
}

#[test]
fn a_launch_arms_the_slot_then_fences_aicore_before_aicpu_behind_one_boundary() {
    let mut d = driver();
    submit(&mut d, 1);
    assert_eq!(
        calls(&mut d),
        [
            "prepare r1 s0",
            "create_stream -> s1",
            "create_stream -> s2",
            "create_event -> e3",
            "create_event -> e4",
            "malloc 1384 -> p5",
            // The record's `published` word zeroed once, when the region is allocated.
            "memcpy_to_device p5+1104 280B",
            // The arm clears handshake, timing and header: no latch outlives its run.
            "memcpy_to_device p5 1104B",
            "launch_aicore r1 on s2",
            "record_event e4 on s2",
            "launch_aicpu r1 on s1",
            "stream_wait_event s1 e4",
            "record_event e3 on s1",
        ]
    );
}

#[test]
fn a_successors_aicore_kernel_waits_on_its_predecessors_boundary() {
    let mut d = driver();
    submit(&mut d, 1);
    calls(&mut d);
    submit(&mut d, 1);
    let log = calls(&mut d);
    assert!(at(&log, "stream_wait_event s2 e3") < at(&log, "launch_aicore r2 on s2"), "{log:?}");
    let epochs: Vec<u64> = d.runner().launched.iter().map(|a| a.epoch).collect();
    assert!(epochs[0] != 0 && epochs[1] > epochs[0], "{epochs:?}");
}

#[test]
fn a_successor_launched_once_its_predecessors_boundary_passed_makes_no_wait_on_it() {
    // At launch depth one a run is launched only after its predecessor's completion wait
    // returned success: that boundary has passed, so a wait on it would be a device call for
    // nothing (the hand-written depth-one loop makes none).
    let mut d = depth_one();
    submit(&mut d, 2);
    calls(&mut d);
    assert_eq!(d.turn().unwrap(), Turn::Progress);
    let log = calls(&mut d);
    assert!(
        at(&log, "memcpy_from_device p5+64 1320B") < at(&log, "launch_aicore r2 on s2"),
        "run 2 launched once run 1's record and status were read: {log:?}"
    );
    assert_eq!(count(&log, "stream_wait_event s2"), 0, "{log:?}");
    // And every later run alike (run 3 launched once run 2 completed).
    submit(&mut d, 1);
    assert_eq!(d.turn().unwrap(), Turn::Progress);
    let log = calls(&mut d);
    at(&log, "launch_aicore r3 on s2");
    assert_eq!(count(&log, "stream_wait_event s2"), 0, "{log:?}");
}

/// Decision 0024: a run prepared while its predecessor runs arms its slot at its prepare, so
/// at depth one nothing is copied to the device between the predecessor's completion and the
/// run's launch; nothing writes the slot between its arm and its launch.
#[test]
fn a_run_prepared_while_its_predecessor_runs_is_armed_at_prepare_not_on_the_depth_one_path() {
    let mut d = depth_one();
    submit(&mut d, 2);
    d.turn().unwrap();
    // Run 3 takes slot 0 once run 1 is finalised, and prepares while run 2 runs.
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    let (prepare, launch) = (at(&log, "prepare r3 s0"), at(&log, "launch_aicore r3 on s2"));
    assert_eq!(log[prepare + 1], "memcpy_to_device p5 1104B", "{log:?}");
    // Run 2's completion: its boundary's wait, then its one read; then run 3 launches.
    let completion = at(&log, "synchronize_event e6");
    assert!(prepare < completion && completion < launch, "{log:?}");
    assert_eq!(
        &log[completion..launch],
        ["synchronize_event e6", "memcpy_from_device p8+64 1320B"],
        "no copy to the device between run 2's completion and run 3's launch"
    );
    assert_eq!(count(&log[prepare + 2..launch], "memcpy_to_device p5"), 0, "{log:?}");
    let reports = reports(&mut d);
    assert_eq!(reports.len(), 3, "{reports:?}");
    assert!(reports.iter().all(|r| r.outcome.to_string().ends_with(": ok")), "{reports:?}");
}

/// Decision 0024: an arm made at prepare that failed is reported by the run's launch as the
/// launch's own failed arm would be: the same stage, code and device text, and no kernel
/// launched. The next run on the slot arms at its own prepare.
#[test]
fn an_arm_made_at_prepare_that_failed_fails_the_runs_launch_as_its_own_arm_would() {
    // Copies to the device: each slot's record zeroing and first arm, made by the launch
    // (1 to 4: a slot's first prepare finds no resources), then run 3's arm at its prepare
    // (5).
    let mut d = driver();
    fail(&mut d, Fail::nth(Call::MemcpyToDevice, 5, 107_000).message("copy 5 failed"));
    submit(&mut d, 2);
    d.run_until_idle().unwrap();
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    assert_eq!(count(&log, "launch_aicore r3"), 0, "{log:?}");
    let prepare = at(&log, "prepare r3 s0");
    assert!(
        log[prepare + 1] == "memcpy_to_device p5 1104B -> 107000"
            && count(&log[prepare + 2..], "memcpy_to_device") == 0,
        "the failed copy is the prepare's; the launch makes none: {log:?}"
    );
    // Made outside any launch: the launch's own arm is made under its `Arm` stage.
    let stage = d
        .device()
        .script()
        .contexts
        .iter()
        .rfind(|(at, _)| *at <= prepare + 1)
        .and_then(|(_, context)| *context);
    assert_eq!(stage, None, "{log:?}");
    let reports = reports(&mut d);
    assert_eq!(reports.len(), 3, "{reports:?}");
    let failed = reports[2].to_string();

    // The same code failing a launch's own arm: run 1's, copy 2.
    let mut own = driver();
    fail(&mut own, Fail::nth(Call::MemcpyToDevice, 2, 107_000).message("copy 2 failed"));
    submit(&mut own, 1);
    own.run_until_idle().unwrap();
    let expected = own.poll_report().unwrap().to_string();
    assert!(
        expected.starts_with("run 1 failed at AICore launch (not started): ACL 107000"),
        "{expected}"
    );
    assert_eq!(failed.replace("run 3", "run 1").replace("copy 5", "copy 2"), expected);

    // The lane goes on: run 4, next on slot 0, arms at its prepare and launches.
    calls(&mut d);
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    assert_eq!(
        log[..3],
        ["prepare r4 s0", "memcpy_to_device p5 1104B", "launch_aicore r4 on s2"],
        "{log:?}"
    );
    assert!(d.poll_report().unwrap().to_string().ends_with(": ok"), "{log:?}");
}

#[test]
fn each_slot_keeps_handshake_timing_and_header_in_its_own_allocation_at_the_documented_offsets() {
    let mut d = driver();
    submit(&mut d, 2);
    let r = d.device().script();
    let regions: Vec<[String; 4]> = d
        .runner()
        .launched
        .iter()
        .map(|a| [a.handshake, a.timing, a.status_header, a.record].map(|p| r.name(p)))
        .collect();
    assert_eq!(
        regions,
        [["p5", "p5+64", "p5+80", "p5+1104"], ["p8", "p8+64", "p8+80", "p8+1104"]],
        "slot 0 then slot 1"
    );
    assert_eq!((TIMING_OFFSET, HEADER_OFFSET, RECORD_OFFSET, SLOT_BYTES), (64, 80, 1104, 1384));
}

#[test]
fn completion_waits_on_the_boundary_then_reads_timing_header_and_record_in_one_copy_before_the_verdict()
 {
    // One D2H from the timing buffer through the record's end: the record decides the
    // verdict, and the status read answers from the same bytes with no copy of its own.
    let mut d = driver();
    submit(&mut d, 1);
    calls(&mut d);
    assert_eq!(d.turn().unwrap(), Turn::Progress);
    assert_eq!(
        calls(&mut d),
        ["synchronize_event e3", "memcpy_from_device p5+64 1320B", "finalise r1 copy-back",]
    );
    let r = *run_outcome(only(&outcomes(&mut d)).unwrap());
    assert_eq!(r.verdict, Verdict::Ok);
    assert_eq!(r.timing.map(|t| (t.start_ns, t.end_ns)), Some((900_000, 1_000_000)));
}

#[test]
fn a_run_that_publishes_nothing_is_synchronized_and_a_device_code_poisons_it_without_a_status_read()
{
    let mut d = driver();
    d.runner_mut().silent.push(1);
    d.device().script().fail_next(Call::SynchronizeStream, 507_018);
    submit(&mut d, 1);
    calls(&mut d);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    assert_eq!(
        log[..3],
        [
            "synchronize_event e3",
            "memcpy_from_device p5+64 1320B",
            "synchronize_stream s1 -> 507018"
        ],
        "{log:?}"
    );
    assert_eq!(count(&log, "memcpy_from_device"), 1, "{log:?}");
    let cause = failed(only(&outcomes(&mut d)));
    assert_eq!(cause.code(), Some(507_018));
    assert_eq!(cause.class(), Class::Poison);
}

/// L-5, L-8: a fence call that fails after a kernel was accepted leaves the run unfenced.
/// Its wait is the device verdict alone (no event waited on, no record read), nothing launches
/// behind it, and it poisons with the device's code, or with the call's code on clean streams.
#[test]
fn an_unfenced_run_is_decided_by_the_device_verdict_alone_and_holds_back_its_successor() {
    // Run 1's fence is core_done then boundary: record call 2 is its boundary.
    for (device, want) in [(None, 107_000), (Some(507_015), 507_015)] {
        let mut d = driver();
        fail(&mut d, Fail::nth(Call::RecordEvent, 2, 107_000));
        if let Some(raw) = device {
            d.device().script().fail_next(Call::SynchronizeStream, raw);
        }
        submit(&mut d, 2);
        calls(&mut d);
        d.run_until_idle().unwrap();
        let log = calls(&mut d);
        let first_sync = first(&log, "synchronize_stream");
        assert!(
            !log[..first_sync]
                .iter()
                .any(|c| c.starts_with("synchronize_event") || c.contains("280B")),
            "an unfenced run waits on no event and reads no record: {log:?}"
        );
        assert_eq!(
            d.runner_mut().launched.len(),
            1,
            "nothing launched behind an unfenced run: {log:?}"
        );
        let cause = failed(outcomes(&mut d).first());
        assert_eq!(cause.code(), Some(want), "{cause:?}");
        assert_eq!(cause.class(), Class::Poison);
    }
}

#[test]
fn a_run_that_publishes_nothing_on_clean_streams_fails_run_only_with_no_result_record() {
    let mut d = driver();
    d.runner_mut().silent.push(1);
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    at(&log, "synchronize_stream s1");
    at(&log, "synchronize_stream s2");
    assert_eq!(failed(only(&outcomes(&mut d))).failure, Failure::NoRecord);
}

#[test]
fn the_second_run_in_a_slot_reuses_its_events_and_buffers_and_queues_behind_the_first() {
    let mut d = driver();
    submit(&mut d, 2);
    d.run_until_idle().unwrap();
    submit(&mut d, 1);
    let log = calls(&mut d);
    assert_eq!(
        count(&log, "create_"),
        2 + 2 * 2,
        "two streams, then two events per slot, once each: {log:?}"
    );
    let third = &log[first(&log, "prepare r3")..];
    assert_eq!(count(third, "create_") + count(third, "malloc"), 0, "{third:?}");
    d.run_until_idle().unwrap();
    assert!(
        outcomes(&mut d).iter().all(|o| matches!(o, Outcome::Run(r) if r.verdict == Verdict::Ok))
    );
}

#[test]
fn the_status_latch_written_by_the_kernels_reaches_the_verdict() {
    let mut d = driver();
    d.runner_mut().latch.push((1, RuntimeCode::InvalidArgs));
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    assert!(calls(&mut d).contains(&"finalise r1".to_owned()), "no copy-back for a failed run");
    failed(only(&outcomes(&mut d)));
}

#[test]
fn a_failed_wait_drains_force_resets_and_probes_forgetting_handles_without_destroying_them() {
    let mut d = driver();
    fail(&mut d, Fail::every(Call::SynchronizeEvent, 507_046));
    submit(&mut d, 1);
    calls(&mut d);
    fail(&mut d, Fail::every(Call::SynchronizeEvent, 507_046));
    d.turn().unwrap();
    d.device().script().fail.clear();
    let log = calls(&mut d);
    assert_eq!(log[0], "synchronize_event e3 -> 507046");
    assert_eq!(
        log[1..],
        [
            "synchronize_device 10000ms",
            "reset_device_force",
            "set_device",
            "create_stream -> s6",
            "destroy_stream s6",
            "malloc 64 -> p7",
            "free p7",
            "own_probe",
        ]
    );
    assert_eq!(count(&log, "destroy_event"), 0, "dead handles are never destroyed");
    assert_eq!(d.lane().state(), LaneState::Open);
    // The next run gets fresh streams, events and buffers.
    submit(&mut d, 1);
    let log = calls(&mut d);
    assert_eq!((count(&log, "create_stream"), count(&log, "create_event")), (2, 2));
}

/// L-22: a device the runtime supplies checks its own state after the lane's probe calls; its
/// failure fails that attempt like theirs, and the next attempt resets and probes again.
#[test]
fn a_failed_own_probe_fails_its_recovery_attempt_after_the_lanes_probe_calls() {
    let mut d = driver();
    fail(&mut d, Fail::every(Call::SynchronizeEvent, 507_015));
    fail(&mut d, Fail::nth(Call::OwnProbe, 1, 507_899));
    submit(&mut d, 1);
    d.turn().unwrap();
    d.device().script().fail.clear();
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    let reset = at(&log, "reset_device_force");
    assert_eq!(
        log[reset..reset + 7],
        [
            "reset_device_force",
            "set_device",
            "create_stream -> s6",
            "destroy_stream s6",
            "malloc 64 -> p7",
            "free p7",
            "own_probe -> 507899",
        ],
        "the device's own probe comes after the lane's calls: {log:?}"
    );
    assert_eq!(
        count(&log, "reset_device_force"),
        2,
        "the failed probe failed attempt 1; attempt 2 recovered: {log:?}"
    );
    assert_eq!(log.last().map(String::as_str), Some("own_probe"));
    assert_eq!(d.lane().state(), LaneState::Open);
}

#[test]
fn a_failed_probe_every_attempt_leaves_the_lane_lost_and_the_driver_idle() {
    let mut d = driver();
    fail(&mut d, Fail::every(Call::SynchronizeEvent, 507_015));
    fail(&mut d, Fail::from(Call::CreateStream, 3, 507_899));
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    assert_eq!(d.lane().state(), LaneState::Lost);
    assert_eq!(count(&calls(&mut d), "reset_device_force"), 3);
    assert!(d.submit(RunRequest::new()).unwrap().is_err());
}

#[test]
fn close_destroys_the_streams_then_releases_each_slots_events_and_buffers() {
    let mut d = driver();
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    calls(&mut d);
    d.close().unwrap();
    d.run_until_idle().unwrap();
    assert_eq!(
        calls(&mut d),
        [
            "destroy_stream s1",
            "destroy_stream s2",
            "destroy_event e3",
            "destroy_event e4",
            "free p5",
        ]
    );
    assert!(d.lane().state().is_closed());
}

#[test]
fn a_publication_uploads_between_runs_and_the_next_launch_gets_a_fresh_aicore_stream() {
    let mut d = driver();
    submit(&mut d, 1);
    d.publish(CodeRef(7)).unwrap().unwrap();
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    let (finalise1, upload) = (first(&log, "finalise r1"), at(&log, "upload c7"));
    let (destroy, launch3) = (at(&log, "destroy_stream s2"), first(&log, "launch_aicore r3"));
    assert!(finalise1 < upload && upload < destroy && destroy < launch3, "{log:?}");
    assert_eq!(
        count(&log, "destroy_stream_force"),
        0,
        "a publication's replacement is a healthy destroy: {log:?}"
    );
    assert_eq!(outcomes(&mut d).len(), 3);
}

#[test]
fn a_failed_calls_device_text_reaches_its_runs_outcome_and_the_runs_its_poison_takes_down() {
    let mut d = driver();
    fail(
        &mut d,
        Fail::every(Call::SynchronizeEvent, 507_015)
            .message("EZ9999: AICore exception\n  at task 3"),
    );
    submit(&mut d, 2);
    d.turn().unwrap();
    d.device().script().fail.clear();
    d.run_until_idle().unwrap();
    let reports = reports(&mut d);
    assert_eq!(reports.len(), 2, "{reports:?}");
    let text = Some("EZ9999: AICore exception\n  at task 3".to_owned());
    failed(Some(&reports[0].outcome));
    assert_eq!(reports[0].device_message, text);
    assert!(
        matches!(reports[1].outcome, Outcome::Run(r) if matches!(r.verdict, Verdict::Poisoned { origin: RunId(1), .. }))
    );
    assert_eq!(reports[1].device_message, text, "the origin's text");
    let line = reports[0].to_string();
    assert!(line.starts_with(&reports[0].outcome.to_string()), "{line}");
    assert!(line.ends_with("; device: EZ9999: AICore exception at task 3"), "{line}");
}

#[test]
fn an_outcome_whose_calls_all_succeeded_carries_no_device_text() {
    let mut d = driver();
    // A text left by nothing that failed is never read.
    d.device().script().message = Some("stale".to_owned());
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let report = d.poll_report().unwrap();
    assert!(report.outcome.to_string().ends_with(": ok"));
    assert_eq!(report.device_message, None);
    assert_eq!(report.to_string(), report.outcome.to_string());
}

#[test]
fn the_driver_reports_no_rejected_event_over_many_runs() {
    let mut d = driver();
    let mut accepted = 0;
    while accepted < 200 {
        if d.submit(RunRequest::new()).unwrap().is_ok() {
            accepted += 1;
        } else {
            d.turn().unwrap();
        }
    }
    d.run_until_idle().unwrap();
    assert_eq!(d.lane().rejected_events(), 0);
    assert_eq!(outcomes(&mut d).len(), 200);
}

/// Keeps what an observer is told, as text.
#[derive(Default)]
struct Seen(Vec<String>);

impl Observer for Seen {
    fn observe(&mut self, step: &Observation<'_>) {
        match *step {
            Observation::Command { command, accepted, .. } => {
                self.0.push(format!("{command:?} {accepted:?}"))
            }
            Observation::ReleaseFailed { release, code, .. } => {
                self.0.push(format!("{release:?} failed {}", code.raw()));
            }
            _ => {}
        }
    }
}

#[test]
fn the_observer_sees_each_command_by_its_enum_and_the_id_it_returned() {
    let mut d = driver().with_observer(Seen::default());
    submit(&mut d, 1);
    d.publish(CodeRef(7)).unwrap().unwrap();
    d.run_until_idle().unwrap();
    d.close().unwrap();
    d.run_until_idle().unwrap();
    assert_eq!(d.observer().0, ["Submit Some(1)", "Publish Some(2)", "Close None"]);
    assert_eq!(Command::Publish.name(), "publish");
}

#[test]
fn a_failed_release_after_close_is_reported_to_the_observer_and_stops_nothing() {
    let mut d = driver().with_observer(Seen::default());
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    fail(&mut d, Fail::every(Call::Free, 507_899));
    d.close().unwrap();
    d.run_until_idle().unwrap();
    assert!(d.lane().state().is_closed());
    assert_eq!(
        d.observer().0.last().map(String::as_str),
        Some(format!("{:?} failed 507899", Release::Free).as_str())
    );
}

#[test]
fn a_completion_wait_is_bounded_by_the_deadline_the_lane_reports() {
    let mut d = driver();
    submit(&mut d, 1);
    let now = Device::now(d.device_mut());
    let deadline = d.lane().poll_deadline().expect("the run is awaited");
    let expected = i32::try_from(deadline.since(now).div_ceil(1_000_000)).unwrap();
    d.turn().unwrap();
    assert_eq!(
        d.device().script().wait_timeouts.first().copied(),
        Some(expected),
        "the first wait gets the time left to the lane's deadline"
    );
}

#[test]
fn a_decode_failure_keeps_the_typed_decode_error_as_its_source() {
    use lane_core::status_latch::DecodeError;
    use std::error::Error as _;
    let cause =
        DecodeError::TooShort { layout: HeaderLayout::TensormapAndRingbuffer, needed: 896, got: 0 };
    let error = DriverError::Decode { run: RunId(1), source: cause };
    let source = error.source().expect("a source");
    assert_eq!(source.downcast_ref::<DecodeError>(), Some(&cause));
}

/// The two parts of the driver as a multi-threaded caller runs them: one submitted run,
/// its effects executed, left awaiting.
fn awaiting_executor() -> (LaneSteps, Executor<TestDevice, Kernels>) {
    let mut steps = LaneSteps::new(Profile::a2a3());
    let mut executor = Executor::new(TestDevice::default(), Kernels::default());
    let now = executor.now();
    steps.submit(now, RunRequest::new()).unwrap().unwrap();
    while let Some(effect) = steps.next_effect(executor.now()) {
        if let Some(answer) = executor.execute(effect, steps.observer_mut()).unwrap() {
            steps.feed(executor.now(), answer).unwrap();
        }
    }
    executor.device().script().calls.clear();
    assert!(executor.is_awaiting());
    (steps, executor)
}

#[test]
fn a_completion_wait_hands_out_the_awaited_runs_boundary_record_epoch_and_pair_with_its_deadline_once()
 {
    let (steps, mut executor) = awaiting_executor();
    let deadline = steps.deadline().expect("the run's deadline");
    let launched = executor.runner().launched[0];
    let wait = executor.completion_wait(Some(deadline)).unwrap().expect("a wait");
    let DeviceWait::Completion {
        run,
        boundary,
        record,
        readback,
        epoch,
        streams,
        channel,
        deadline: bound,
        ..
    } = wait
    else {
        panic!("expected a completion wait, got {wait:?}");
    };
    assert_eq!(run, RunId(1));
    assert_eq!(boundary, EventHandle(3), "the slot's first event");
    assert_eq!((record, epoch), (launched.record, launched.epoch));
    assert_eq!(
        readback,
        Some(launched.timing),
        "synchronous copies: the status is read with the record, from the timing buffer"
    );
    assert_ne!(epoch, 0);
    assert_eq!(streams, [StreamHandle(1), StreamHandle(2)], "AICPU first");
    assert_eq!(channel, VerdictChannel::Record);
    assert_eq!(bound, deadline);
    assert!(!executor.is_awaiting(), "the answer is the waiter's now");
    assert_eq!(executor.completion_wait(Some(deadline)).unwrap(), None);
    assert!(executor.device().script().calls.is_empty(), "handing a wait out makes no device call");
}

#[test]
fn a_completion_wait_without_a_deadline_forgets_the_awaited_run() {
    let (_, mut executor) = awaiting_executor();
    assert_eq!(executor.completion_wait(None).unwrap(), None);
    assert!(!executor.is_awaiting());
}

#[test]
fn a_drain_is_a_device_wait_and_abandons_the_await() {
    let (_, mut executor) = awaiting_executor();
    let drain = Effect::DrainDevice { attempt: 1, timeout_ns: 2_500_000 };
    assert_eq!(
        executor.device_wait(&drain),
        Some(DeviceWait::Drain { attempt: 1, timeout_ns: 2_500_000 })
    );
    assert!(!executor.is_awaiting());
    assert_eq!(executor.device_wait(&Effect::ForceReset { attempt: 1 }), None);
}

/// A completion waiter on a thread of its own, scripted: what its bind and each wait return,
/// and what it was asked.
#[derive(Default)]
struct Scripted {
    now: u64,
    bind: Option<i32>,
    waits: std::collections::VecDeque<Option<i32>>,
    /// How long each wait takes (ns of its clock).
    takes: u64,
    calls: Vec<String>,
    /// What the record region holds (zeros: never published).
    record: Option<[u8; RECORD_BYTES]>,
    /// The record read's code, if it fails.
    read_fails: Option<i32>,
    /// What each stream synchronize returns, first first (`None`: 0).
    stream_syncs: std::collections::VecDeque<Option<i32>>,
}

impl CompletionWaiter for Scripted {
    fn bind(&mut self) -> Result<(), AclCode> {
        self.calls.push("bind".into());
        self.bind.map_or(Ok(()), |raw| Err(code(raw)))
    }
    fn now(&mut self) -> Timestamp {
        Timestamp(self.now)
    }
    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.calls.push(format!("synchronize_event e{} {timeout_ms} ms", event.0));
        self.now += self.takes;
        self.waits.pop_front().flatten().map_or(Ok(()), |raw| Err(code(raw)))
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        self.calls.push(format!("synchronize_device {timeout_ms} ms"));
        Err(code(507_046))
    }
    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.calls.push(format!("synchronize_stream s{} {timeout_ms} ms", stream.0));
        self.now += self.takes;
        self.stream_syncs.pop_front().flatten().map_or(Ok(()), |raw| Err(code(raw)))
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        self.calls.push(format!("memcpy_from_device p{} {}B", src.0, dst.len()));
        if let Some(raw) = self.read_fails {
            return Err(code(raw));
        }
        // A copy longer than the record reads the status bytes in front of it: 0xAB here.
        let record = self.record.unwrap_or([0; RECORD_BYTES]);
        let (status, tail) = dst.split_at_mut(dst.len().saturating_sub(RECORD_BYTES));
        status.fill(0xAB);
        tail.copy_from_slice(&record[..tail.len()]);
        Ok(())
    }
}

/// The epoch of [`completion`]'s run.
const EPOCH: u64 = 77;

/// [`completion`]'s device verdict bound, from the boundary's completion.
const SYNC_BOUND_NS: u64 = 8_000_000;

/// A deadline far off.
const FAR: u64 = 5_000_000_000;

fn evidence(answer: &Wait) -> Evidence {
    match answer {
        Wait::Answered(Answer { event: Event::Completed { evidence, .. }, .. }) => *evidence,
        other => panic!("expected Completed, got {other:?}"),
    }
}

/// What `waiter` found for [`completion`] with a far deadline.
fn waited(waiter: &mut Scripted) -> Wait {
    run_device_wait(waiter, &completion(FAR))
}

fn completion(deadline_ns: u64) -> DeviceWait {
    DeviceWait::Completion {
        run: RunId(4),
        lease: lease(1, 1),
        boundary: EventHandle(10),
        record: DevicePtr(0x500),
        readback: None,
        epoch: EPOCH,
        streams: [StreamHandle(1), StreamHandle(2)],
        channel: VerdictChannel::Record,
        deadline: Timestamp(deadline_ns),
        sync_bound_ns: SYNC_BOUND_NS,
        unfenced: None,
    }
}

/// [`completion`] with the status read asked for with the record, from `readback`.
fn completion_with_readback(deadline_ns: u64, readback: DevicePtr) -> DeviceWait {
    let mut wait = completion(deadline_ns);
    if let DeviceWait::Completion { readback: at, .. } = &mut wait {
        *at = Some(readback);
    }
    wait
}

/// A record published for [`completion`]'s epoch.
fn published_ok() -> Option<[u8; RECORD_BYTES]> {
    Some(encode_record(EPOCH, &RecordWrite::Ok))
}

#[test]
fn a_waiter_waits_on_the_boundary_then_reads_the_record_and_a_published_ok_record_needs_no_synchronize()
 {
    let mut waiter = Scripted { takes: 2_000_000, record: published_ok(), ..Scripted::default() };
    let answer = run_device_wait(&mut waiter, &completion(10_500_000));
    assert_eq!(evidence(&answer), Evidence::PUBLISHED_OK);
    assert_eq!(
        waiter.calls,
        ["bind", "synchronize_event e10 11 ms", "memcpy_from_device p1280 280B"],
        "one event wait bounded by the deadline (rounded up), one record read, no stream synchronize"
    );
    assert!(!wait_failed(&answer));
}

#[test]
fn a_waiter_asked_for_the_status_reads_it_with_the_record_in_one_copy_and_answers_with_its_bytes() {
    let mut waiter = Scripted { takes: 2_000_000, record: published_ok(), ..Scripted::default() };
    // The timing buffer sits READBACK_BYTES before the record (the slot layout).
    let at = DevicePtr(0x500 - READBACK_BYTES as u64);
    let answer = run_device_wait(&mut waiter, &completion_with_readback(10_500_000, at));
    assert_eq!(
        waiter.calls,
        ["bind", "synchronize_event e10 11 ms", &format!("memcpy_from_device p{} 1320B", at.0),],
        "one copy from the timing buffer through the record's end"
    );
    let Wait::Completed { answer, readback } = answer else {
        panic!("expected Completed with the status bytes, got {answer:?}");
    };
    assert_eq!(
        evidence(&Wait::Answered(answer)),
        Evidence::PUBLISHED_OK,
        "the record is decoded from the copy's tail"
    );
    assert_eq!(readback.lease, lease(1, 1), "the bytes answer this run only");
    assert!(readback.bytes.iter().all(|&b| b == 0xAB), "the status bytes are the copy's head");
}

#[test]
fn a_failed_copy_of_record_and_status_fails_the_record_read_and_keeps_no_status_bytes() {
    let mut waiter =
        Scripted { record: published_ok(), read_fails: Some(507_899), ..Scripted::default() };
    let at = DevicePtr(0x500 - READBACK_BYTES as u64);
    let answer = run_device_wait(&mut waiter, &completion_with_readback(FAR, at));
    assert!(
        matches!(answer, Wait::Answered(_)),
        "no status bytes: the status read makes its own copy"
    );
    assert_eq!(evidence(&answer).record, RecordRead::Failed(code(507_899)));
}

#[test]
fn a_readback_that_does_not_end_at_the_record_is_not_read_and_the_record_is_read_alone() {
    let mut waiter = Scripted { record: published_ok(), ..Scripted::default() };
    let answer = run_device_wait(&mut waiter, &completion_with_readback(FAR, DevicePtr(0x100)));
    assert!(matches!(answer, Wait::Answered(_)), "{answer:?}");
    assert_eq!(waiter.calls[2], "memcpy_from_device p1280 280B");
}

#[test]
fn a_status_read_answers_from_the_bytes_kept_for_its_run_and_copies_for_itself_otherwise() {
    let (_, mut executor) = awaiting_executor();
    let launched = executor.runner().launched[0];
    let Some(DeviceWait::Completion { run, lease, .. }) =
        executor.completion_wait(Some(Timestamp(u64::MAX))).unwrap()
    else {
        panic!("a completion wait");
    };
    // What the kernels left in the slot, with a timing buffer the device does not hold, so an
    // answer from the kept bytes is told from one from a copy.
    let mut bytes = [0; READBACK_BYTES];
    bytes.copy_from_slice(&executor.device().script().mem(launched.timing)[..READBACK_BYTES]);
    bytes[..8].copy_from_slice(&5u64.to_le_bytes());
    bytes[8..16].copy_from_slice(&6u64.to_le_bytes());
    let read = Effect::ReadStatus { run, lease, layout: HeaderLayout::TensormapAndRingbuffer };
    let timing_of = |answer: Option<Answer>| match answer.map(|a| a.event) {
        Some(Event::StatusRead { timing, .. }) => (timing.start_ns, timing.end_ns),
        other => panic!("expected StatusRead, got {other:?}"),
    };
    executor.keep_readback(lane_driver::Readback { lease, bytes });
    executor.device().script().calls.clear();
    let kept = executor.execute(read, &mut NoObserver).unwrap();
    assert_eq!(timing_of(kept), (5, 6), "the kept bytes answer");
    assert!(
        executor.device().script().calls.is_empty(),
        "no device call: {:?}",
        executor.device().script().calls
    );
    // Kept for another run of the slot (a later generation): never this run's answer.
    let later =
        Lease { generation: Generation(lease.generation.0.checked_add(1).unwrap()), ..lease };
    executor.keep_readback(lane_driver::Readback { lease: later, bytes });
    let copied = executor.execute(read, &mut NoObserver).unwrap();
    assert_eq!(timing_of(copied), (900_000, 1_000_000), "the device's bytes");
    assert_eq!(
        executor.device().script().calls,
        [format!("memcpy_from_device p5+64 {}B", 16 + 896)]
    );
}

#[test]
fn a_record_of_another_epoch_is_never_published_and_the_waiter_synchronizes_aicpu_then_aicore() {
    let mut waiter = Scripted {
        takes: 2_000_000,
        record: Some(encode_record(EPOCH - 1, &RecordWrite::Ok)),
        stream_syncs: [None, Some(507_014)].into(),
        ..Scripted::default()
    };
    let answer = run_device_wait(&mut waiter, &completion(10_500_000));
    let got = evidence(&answer);
    assert_eq!(got.record, RecordRead::Read(Record::NeverPublished { stamp: EPOCH - 1 }));
    assert_eq!(
        got.device,
        Some(DeviceVerdict::Returned { aicpu: None, aicore: Some(code(507_014)) }),
        "what each stream returned, for the lane to attribute"
    );
    assert_eq!(
        waiter.calls[3..],
        ["synchronize_stream s1 8 ms", "synchronize_stream s2 6 ms"],
        "AICPU first, each bounded by what is left of the bound from the boundary's completion"
    );
    assert!(wait_failed(&answer), "a device code's text is worth reading");
}

#[test]
fn a_record_error_decides_without_a_synchronize_and_a_failed_read_synchronizes() {
    let mut waiter = Scripted {
        record: Some(encode_record(
            EPOCH,
            &RecordWrite::Error { code: 1, source: RecordSource::Header, payload: &[] },
        )),
        ..Scripted::default()
    };
    assert_eq!(evidence(&waited(&mut waiter)).device, None);
    assert_eq!(count(&waiter.calls, "synchronize_stream"), 0);
    let mut failing = Scripted { read_fails: Some(507_899), ..Scripted::default() };
    let answer = waited(&mut failing);
    assert_eq!(evidence(&answer).device, Some(DeviceVerdict::Clean));
    assert!(wait_failed(&answer));
}

#[test]
fn the_stream_sync_channel_reads_no_record_and_synchronizes_every_run() {
    let mut waiter = Scripted::default();
    let mut wait = completion(FAR);
    if let DeviceWait::Completion { channel, .. } = &mut wait {
        *channel = VerdictChannel::StreamSync;
    }
    let answer = run_device_wait(&mut waiter, &wait);
    assert_eq!(evidence(&answer), Evidence::SYNCHRONIZED_CLEAN);
    assert_eq!(count(&waiter.calls, "memcpy"), 0);
}

#[test]
fn a_device_verdict_past_its_bound_is_the_synchronize_timeout() {
    // The boundary completes at 9 ms: the bound ends at 17 ms, which the AICPU synchronize
    // (9 ms) passes, so the AICore one is not made and reads as the timeout.
    let mut waiter = Scripted { takes: 9_000_000, ..Scripted::default() };
    let answer = run_device_wait(&mut waiter, &completion(10_000_000));
    assert_eq!(
        evidence(&answer).device,
        Some(DeviceVerdict::Returned { aicpu: None, aicore: Some(code(507_046)) })
    );
}

#[test]
fn the_device_verdict_is_bounded_from_the_boundarys_completion_not_by_what_is_left_of_the_deadline()
{
    // L-8a: the boundary completes at 9 ms of a 10 ms deadline; the synchronize, which also
    // waits for the run queued behind, still gets its whole bound.
    let mut waiter = Scripted { takes: 9_000_000, ..Scripted::default() };
    let mut wait = completion(10_000_000);
    if let DeviceWait::Completion { sync_bound_ns, .. } = &mut wait {
        *sync_bound_ns = 30_000_000;
    }
    let answer = run_device_wait(&mut waiter, &wait);
    assert_eq!(
        waiter.calls[3..],
        ["synchronize_stream s1 30 ms", "synchronize_stream s2 21 ms"],
        "30 ms from the boundary's completion at 9 ms, past the 10 ms deadline"
    );
    assert_eq!(evidence(&answer).device, Some(DeviceVerdict::Clean));
}

#[test]
fn an_aicpu_code_does_not_stop_the_aicore_synchronize_and_an_aicpu_timeout_does() {
    // An AICPU code may be another run's sticky status (L-8a): the AICore stream is asked too.
    for (aicpu, aicore, syncs) in [(507_018, Some(507_015), 2), (507_046, None, 1)] {
        let mut waiter =
            Scripted { stream_syncs: [Some(aicpu), aicore].into(), ..Scripted::default() };
        let answer = waited(&mut waiter);
        assert_eq!(
            count(&waiter.calls, "synchronize_stream"),
            syncs,
            "a timeout spends the bound: {:?}",
            waiter.calls
        );
        assert_eq!(
            evidence(&answer).device,
            Some(DeviceVerdict::Returned { aicpu: Some(code(aicpu)), aicore: aicore.map(code) })
        );
    }
}

#[test]
fn a_waiters_failed_call_or_timeout_is_the_runs_failed_wait_with_its_code() {
    for code in [507_015, 507_047] {
        let mut waiter = Scripted { waits: [Some(code)].into(), ..Scripted::default() };
        let answer = waited(&mut waiter);
        assert!(
            matches!(answer, Wait::Answered(Answer { event: Event::CompletionFailed { run: RunId(4), code: got, .. }, .. }) if got.raw() == code),
            "{answer:?}"
        );
        assert!(wait_failed(&answer));
    }
}

#[test]
fn a_waiter_that_cannot_bind_fails_the_wait_with_the_binds_code_and_waits_on_nothing() {
    let mut waiter = Scripted { bind: Some(107_002), ..Scripted::default() };
    let answer = waited(&mut waiter);
    assert!(
        matches!(answer, Wait::Answered(Answer { event: Event::CompletionFailed { code, .. }, .. }) if code.raw() == 107_002),
        "{answer:?}"
    );
    assert_eq!(waiter.calls, ["bind"]);
}

#[test]
fn a_waiter_past_the_deadline_answers_expired_without_a_call() {
    let mut waiter = Scripted { now: 7_000, ..Scripted::default() };
    assert_eq!(run_device_wait(&mut waiter, &completion(7_000)), Wait::Expired(Timestamp(7_000)));
    assert_eq!(waiter.calls, ["bind"]);
}

#[test]
fn a_waiters_drain_is_answered_whatever_it_returns_and_skipped_when_unbound() {
    let drain = DeviceWait::Drain { attempt: 2, timeout_ns: 1_500_000 };
    for (bind, calls) in
        [(None, &["bind", "synchronize_device 2 ms"][..]), (Some(107_002), &["bind"])]
    {
        let mut waiter = Scripted { bind, ..Scripted::default() };
        assert_eq!(
            run_device_wait(&mut waiter, &drain),
            Wait::Answered(Event::DeviceDrained { attempt: 2 }.into())
        );
        assert_eq!(waiter.calls, calls);
    }
}

#[test]
fn the_lane_threads_bound_on_a_wait_is_its_own_bound_plus_the_grace_and_then_it_answers_itself() {
    let wait = completion(9_000);
    assert_eq!(
        wait.bound(Timestamp(1)),
        Timestamp(9_000 + SYNC_BOUND_NS + WAITER_GRACE_NS),
        "the deadline, then the device verdict's bound from a boundary completed at it"
    );

    assert_eq!(wait.answer_at_bound(Timestamp(10)), Wait::Expired(Timestamp(10)));
    let drain = DeviceWait::Drain { attempt: 1, timeout_ns: 500 };
    assert_eq!(drain.bound(Timestamp(100)), Timestamp(600 + WAITER_GRACE_NS));
    assert_eq!(
        drain.answer_at_bound(Timestamp(10)),
        Wait::Answered(Event::DeviceDrained { attempt: 1 }.into())
    );
}

#[test]
fn the_single_thread_wait_times_out_as_a_failed_wait_with_the_remainder_as_its_bound() {
    let (steps, mut executor) = awaiting_executor();
    executor.device().script().fail_next(Call::SynchronizeEvent, 507_047);
    let wait = executor.wait(steps.deadline()).unwrap();
    assert!(
        matches!(wait, Wait::Answered(Answer { event: Event::CompletionFailed { code, .. }, .. }) if code.raw() == 507_047),
        "{wait:?}"
    );
    assert!(!executor.is_awaiting());
    let remaining = executor.device().script().wait_timeouts[0];
    assert!(remaining > 0 && remaining < i32::MAX, "{remaining}");
}

#[test]
fn a_text_left_by_an_unreported_failure_is_never_pinned_on_a_later_one() {
    let mut d = driver();
    // A drain or a release failed earlier and left its text; nothing reported it.
    d.device().script().message = Some("stale: left by a failed release".to_owned());
    d.runner_mut().fail_prepare = Some(100_000);
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let report = d.poll_report().unwrap();
    failed(Some(&report.outcome));
    assert_eq!(report.device_message, None, "{report}");
}

/// The lane's other threads for [`threaded`]: the jobs and the wait the dispatch machine
/// handed out, made when it sleeps.
#[derive(Default)]
struct Threads {
    jobs: Vec<Effect>,
    wait: Option<(u64, DeviceWait)>,
}

/// A host worker whose prepare of run `fails` fails with a code and leaves a device text, as
/// ACL would on the worker's thread; every other job succeeds.
#[derive(Default)]
struct TextWorker {
    fails: Option<u64>,
    text: Option<String>,
}

impl HostWorker for TextWorker {
    fn prepare_run(&mut self, run: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        if self.fails == Some(run.0) {
            self.text = Some(format!("EZ1001: prepare of run {} on a worker", run.0));
            return Err(PrepareError::Failed(code(100_000)));
        }
        Ok(())
    }
    fn finalise_run(&mut self, _: RunId, _: SlotId, _: bool) -> Result<(), FinaliseFailure> {
        Ok(())
    }
    fn recent_error_message(&mut self) -> Option<String> {
        self.text.take()
    }
}

/// `runs` runs through the dispatch machine with host workers and a completion waiter, as
/// lane-service drives it: jobs run on `worker` ([`run_host_work`]), waits on the device
/// ([`run_device_wait`]), each answered when the machine sleeps. `answer` may answer an
/// effect the machine gives this thread instead of the executor. The reports, in order.
fn threaded(
    runs: usize,
    worker: &mut TextWorker,
    mut answer: impl FnMut(&Effect) -> Option<Answer>,
) -> Vec<Report> {
    use lane_driver::dispatch::{Dispatch, Here, Next, Setting, WorkerAnswer};
    let mut steps = LaneSteps::new(Profile::a2a3());
    let mut executor = Executor::new(TestDevice::default(), Kernels::default());
    let mut dispatch = Dispatch::new(Setting::WORKERS, None);
    let mut threads = Threads::default();
    let mut left = runs;
    loop {
        let now = executor.now();
        // Submitted as soon as a slot is free.
        if left > 0 && steps.submit(now, RunRequest::new()).unwrap().is_ok() {
            left -= 1;
        }
        match dispatch.poll(now, Here::Own, &mut steps, &mut executor).unwrap() {
            Next::Execute(effect) => {
                let answered = match answer(&effect) {
                    Some(given) => Some(given),
                    None => executor.execute(effect, steps.observer_mut()).unwrap(),
                };
                if let Some(answered) = answered {
                    steps.feed(executor.now(), answered).unwrap();
                }
            }
            Next::ToWorker(job) => threads.jobs.push(job),
            Next::ToWaiter { ticket, wait } => threads.wait = Some((ticket, wait)),
            Next::Sleep(_) => {
                let jobs = std::mem::take(&mut threads.jobs);
                // The waiter takes what is offered (the machine withdraws by no longer
                // offering it).
                let offered = threads.wait.take().filter(|(ticket, _)| {
                    dispatch.offered().is_some_and(|(now_offered, _)| now_offered == *ticket)
                });
                if jobs.is_empty() && offered.is_none() && left == 0 {
                    break;
                }
                for job in jobs {
                    let answered = lane_driver::run_host_work(worker, job).expect("host work");
                    dispatch.handle_answer(WorkerAnswer::Answered(answered));
                }
                if let Some((ticket, wait)) = offered {
                    dispatch.handle_wait_started(ticket, executor.now()).unwrap();
                    let device = &mut lane_driver::OnDevice(executor.device_mut());
                    dispatch.handle_waited(ticket, run_device_wait(device, &wait));
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(steps.settled(), Ok(Turn::Idle));
    std::iter::from_fn(|| steps.poll_report()).collect()
}

/// Asserts `report` is an ok run's, with no device text.
fn ok_without_text(report: &Report) {
    assert!(matches!(report.outcome, Outcome::Run(r) if r.verdict == Verdict::Ok), "{report}");
    assert_eq!(report.device_message, None, "a success reads no text");
}

#[test]
fn a_workers_failed_prepare_carries_its_text_to_its_runs_outcome_behind_an_earlier_run() {
    let mut worker = TextWorker { fails: Some(2), text: None };
    let reports = threaded(3, &mut worker, |_| None);
    assert_eq!(reports.len(), 3, "{reports:?}");
    ok_without_text(&reports[0]);
    let line = reports[1].to_string();
    assert!(line.starts_with("run 2 failed at prepare"), "{line}");
    assert!(line.ends_with("; device: EZ1001: prepare of run 2 on a worker"), "{line}");
    ok_without_text(&reports[2]);
}

#[test]
fn a_failed_stream_creates_text_reaches_the_run_waiting_to_launch_and_no_other() {
    let mut failed = false;
    let reports = threaded(2, &mut TextWorker::default(), |effect| match *effect {
        Effect::CreateStream { role } if !failed => {
            failed = true;
            Some(Answer {
                event: Event::StreamCreateFailed { role, code: code(207_008) },
                text: Some("EZ9001: no stream resource".to_owned()),
            })
        }
        _ => None,
    });
    assert_eq!(reports.len(), 2, "{reports:?}");
    let cause = run_outcome(&reports[0].outcome).verdict.cause().copied();
    assert_eq!(
        cause.and_then(|c| c.stage()),
        Some(lane_core::status_latch::Stage::StreamCreate),
        "{}",
        reports[0]
    );
    assert_eq!(reports[0].device_message.as_deref(), Some("EZ9001: no stream resource"));
    ok_without_text(&reports[1]);
}

#[test]
fn copies_on_the_streams_on_a_device_without_pinned_copies_fail_the_first_arm_with_207000() {
    let spec =
        lane_core::ProfileSpec { copies: lane_core::CopyPath::OnStream, ..Profile::a2a3().spec() };
    let profile = Profile::custom(spec).unwrap();
    let mut d: TestDriver = Driver::new(profile, TestDevice::default(), Kernels::default());
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    // The slot's resources are made as far as the first pinned call, which the executor
    // answers with 207000 without a call (the recorder has no `PinnedCopies`), then given back.
    assert_eq!(
        calls(&mut d),
        [
            "prepare r1 s0",
            "create_stream -> s1",
            "create_stream -> s2",
            "create_event -> e3",
            "create_event -> e4",
            "create_event -> e5",
            "malloc 1384 -> p6",
            "memcpy_to_device p6+1104 280B",
            "destroy_event e3",
            "destroy_event e4",
            "destroy_event e5",
            "free p6",
            "finalise r1",
        ]
    );
    let report = d.poll_report().unwrap().to_string();
    assert!(
        report.starts_with("run 1 failed at AICore launch (not started): ACL 207000"),
        "{report}"
    );
    assert!(
        report.ends_with(
            "hint: use the profile's synchronous copies (CopyPath::Sync), then run again"
        ),
        "{report}"
    );
}

#[test]
fn the_device_is_told_each_stage_of_a_launch_before_its_calls_and_its_end_after_them() {
    let mut d = driver();
    submit(&mut d, 1);
    let log = calls(&mut d);
    let stage = |stage| Some(LaunchContext { run: RunId(1), stage });
    assert_eq!(
        d.device().script().contexts,
        [
            // Before the slot's resources and its arm.
            (at(&log, "create_event -> e3"), stage(LaunchStage::Arm)),
            // Right after the accepted AICore kernel: `core_done` is the run's record.
            (at(&log, "launch_aicore r1 on s2") + 1, stage(LaunchStage::Kernels)),
            // After the boundary, the launch's last call.
            (at(&log, "record_event e3 on s1") + 1, None),
        ]
    );
}

fn lease(slot: u8, generation: u64) -> Lease {
    Lease {
        slot: SlotId(slot),
        generation: Generation(std::num::NonZeroU64::new(generation).unwrap()),
    }
}

/// A launch as [`executor_with_launches`] makes it: the run, its slot, and the predecessors
/// it names as `(slot, generation)`, newest first.
type LaunchOf = (u64, u8, &'static [(u8, u64)]);

/// The executor with both streams made (s1 AICPU, s2 AICore) and `runs` launched as the lane
/// would ask, in order; each launch's answer.
fn executor_with_launches(
    device: TestDevice,
    kernels: Kernels,
    runs: &[LaunchOf],
) -> (Executor<TestDevice, Kernels>, Vec<Event>) {
    use lane_core::stream_pair::Role;
    let mut executor = Executor::new(device, kernels);
    for role in [Role::Aicpu, Role::Aicore] {
        executor.execute(Effect::CreateStream { role }, &mut NoObserver).unwrap();
    }
    let answers = runs
        .iter()
        .map(|&(run, slot, after)| {
            let launch = Effect::LaunchRun {
                run: RunId(run),
                lease: lease(slot, run),
                aicpu: StreamHandle(1),
                aicore: StreamHandle(2),
                after: after.iter().map(|&(s, g)| lease(s, g)).collect(),
                epoch: None,
            };
            executor.execute(launch, &mut NoObserver).unwrap().unwrap().event
        })
        .collect();
    (executor, answers)
}

/// L-5 at depth three: the predecessor a launch waits on is the newest whose boundary was
/// recorded, known only when the launch executes. Run 3 was queued behind run 2 and run 1;
/// run 2's launch then failed at its arm (nothing of it reached a stream), so run 3's AICore
/// kernel waits on run 1's boundary, not on run 2's never-recorded one (which would pass at
/// once and let run 3 start beside run 1's AICPU kernel).
#[test]
fn a_launch_waits_on_the_newest_predecessor_whose_boundary_was_recorded() {
    // memcpy_to_device calls: run 1's record zeroing and arm (1, 2), run 2's (3, 4).
    let device = TestDevice::default();
    device.script().fail.push(Fail::nth(Call::MemcpyToDevice, 4, 107_000));
    let (executor, answers) = executor_with_launches(
        device,
        Kernels::default(),
        &[(1, 0, &[]), (2, 1, &[(0, 1)]), (3, 2, &[(1, 2), (0, 1)])],
    );
    assert!(
        matches!(
            answers[..],
            [
                Event::Launched { .. },
                Event::LaunchFailed { step: LaunchStep::Arm, .. },
                Event::Launched { .. }
            ]
        ),
        "{answers:?}"
    );
    let log = &executor.device().script().calls;
    // Run 1's slot made events e3 (boundary) and e4.
    assert!(
        at(log, "stream_wait_event s2 e3") < at(log, "launch_aicore r3 on s2"),
        "run 3 waits on run 1's boundary: {log:?}"
    );
    assert_eq!(
        count(log, "stream_wait_event s2"),
        1,
        "run 2's arm failed before its wait; run 3 waits once, on run 1: {log:?}"
    );
}

/// L-5: a failure between the AICore kernel and the AICPU kernel (the AICore kernel's own
/// event included) orphans the AICore kernel: `Partial`, poison at once with the failed
/// call's own code, no AICPU kernel and no wait.
#[test]
fn a_failed_core_done_record_poisons_at_once_with_its_own_code_and_launches_no_aicpu_kernel() {
    let mut d = driver();
    // Run 1's first record is its core_done.
    fail(&mut d, Fail::nth(Call::RecordEvent, 1, 107_000));
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    assert_eq!(count(&log, "launch_aicpu r1"), 0, "{log:?}");
    assert_eq!(count(&log, "synchronize_event"), 0, "no wait for an orphaned kernel: {log:?}");
    first(&log, "reset_device_force");
    let cause = failed(outcomes(&mut d).first());
    assert_eq!(cause.code(), Some(107_000), "{cause:?}");
    assert_eq!(cause.class(), Class::Poison);
    assert!(matches!(
        cause.failure,
        Failure::Launch { progress: lane_core::status_latch::LaunchProgress::Partial, .. }
    ));
}

/// L-8a: the records of the runs a synchronize covered are read from each run's own slot and
/// decoded for its own epoch; a lease that is not its slot's last launch is not read.
#[test]
fn covered_records_are_read_for_each_runs_own_lease_and_epoch() {
    let kernels = Kernels { silent: vec![2], ..Kernels::default() };
    let (mut executor, _) =
        executor_with_launches(TestDevice::default(), kernels, &[(1, 0, &[]), (2, 1, &[(0, 1)])]);
    executor.device().script().calls.clear();
    let read = Effect::ReadRecords {
        run: RunId(9),
        lease: lease(3, 9),
        behind: [(RunId(1), lease(0, 1)), (RunId(2), lease(1, 2)), (RunId(5), lease(1, 5))]
            .into_iter()
            .collect(),
    };
    let answer = executor.execute(read, &mut NoObserver).unwrap().unwrap();
    let Event::RecordsRead { run, records, .. } = answer.event else {
        panic!("{answer:?}");
    };
    assert_eq!(run, RunId(9));
    let got: Vec<_> = records.iter().map(|r| (r.run, r.record)).collect();
    assert!(
        matches!(
            got.as_slice(),
            [
                (1, RecordRead::Read(Record::Ok)),
                (2, RecordRead::Read(Record::NeverPublished { .. })),
                (5, RecordRead::NotRead),
            ]
        ),
        "{got:?}"
    );
    assert_eq!(
        executor.device().script().calls.len(),
        2,
        "one copy per launched lease: {:?}",
        executor.device().script().calls
    );
}

#[test]
fn a_declined_queued_launch_is_launched_again_alone_and_the_runner_hears_each_launch_and_verdict() {
    let mut d = driver();
    d.runner_mut().decline.push(2);
    let first = d.submit(RunRequest::new()).unwrap().unwrap();
    let second = d.submit(RunRequest::new()).unwrap().unwrap();
    d.run_until_idle().unwrap();
    let runner = d.runner_mut();
    // Run 2's launch, queued behind run 1, was declined; asked again once run 1 retired, it
    // was no longer queued.
    assert_eq!(runner.asked_queued, [(1, false), (2, true), (2, false)]);
    assert_eq!(runner.on_launched, [1, 2], "on_launched once per launched run");
    assert_eq!(runner.finalised, [(1, Verdict::Ok), (2, Verdict::Ok)]);
    let declines: Vec<(RunId, u32)> =
        outcomes(&mut d).iter().map(|o| (run_outcome(o).run, run_outcome(o).declines)).collect();
    assert_eq!(declines, [(first, 0), (second, 1)]);
}

#[test]
fn a_declined_launch_with_nothing_ahead_fails_its_run_with_the_reason_in_the_report() {
    let mut d = driver();
    d.runner_mut().decline.push(1);
    let run = d.submit(RunRequest::new()).unwrap().unwrap();
    d.run_until_idle().unwrap();
    let report = d.poll_report().expect("its outcome");
    assert_eq!(report.outcome.seq(), run.0);
    let text = report.device_message.expect("the reason");
    assert!(text.contains("declined a launch with no run ahead"), "{text}");
    assert!(d.runner_mut().on_launched.is_empty(), "nothing launched");
    assert!(matches!(d.runner_mut().finalised[..], [(1, Verdict::Failed { .. })]));
}

/// Two runs submitted back to back at depth two, run to idle: each run's outcome, the query
/// script's answers given to run 2's look at run 1's boundary.
fn queued_pair(queries: &[Result<bool, i32>]) -> (Vec<Outcome>, Vec<String>) {
    let mut d = driver();
    for (n, answer) in queries.iter().enumerate() {
        match *answer {
            Ok(fired) => d.device().script().queries.push_back(fired),
            Err(code) => fail(&mut d, Fail::nth(Call::QueryEvent, n + 1, code)),
        }
    }
    submit(&mut d, 2);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    (outcomes(&mut d), log)
}

/// A queued run proves its overlap when its predecessor's boundary was unfired as its launch
/// returned; one that had fired is not proven, and a failed look counts neither way and fails
/// nothing.
#[test]
fn a_queued_runs_overlap_is_what_its_look_at_its_predecessors_boundary_found() {
    for (query, overlap, look) in [
        (Ok(false), Overlap::Proven, "query_event e3 -> unfired"),
        (Ok(true), Overlap::NotProven, "query_event e3"),
        (Err(507_899), Overlap::Unknown, "query_event e3 -> 507899"),
    ] {
        let (outcomes, log) = queued_pair(&[query]);
        let [first, second] = outcomes.as_slice() else { panic!("{query:?}: {outcomes:?}") };
        assert_eq!(run_outcome(first).overlap(), Overlap::NotQueued, "{query:?}");
        assert_eq!(run_outcome(second).overlap(), overlap, "{query:?}");
        assert!(run_outcome(second).verdict.is_ok(), "{query:?}: {second:?}");
        // The look is made right after run 2's AICPU kernel was accepted, at run 1's boundary.
        assert_eq!(log[at(&log, "launch_aicpu r2 on s1") + 1], look, "{log:?}");
        assert_eq!(count(&log, "query_event"), 1, "{query:?}");
    }
}

#[test]
fn at_depth_one_no_run_is_queued_and_no_boundary_is_queried() {
    let mut d = depth_one();
    // Two submitted back to back (run 2 launches once run 1 completed), then a third.
    submit(&mut d, 2);
    d.run_until_idle().unwrap();
    submit(&mut d, 1);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    assert_eq!(count(&log, "query_event"), 0, "{log:?}");
    let outcomes = outcomes(&mut d);
    assert_eq!(outcomes.len(), 3);
    for outcome in &outcomes {
        assert_eq!(run_outcome(outcome).overlap(), Overlap::NotQueued);
    }
}

#[test]
fn without_event_timestamps_a_runs_device_start_and_end_come_from_its_timing_buffer() {
    let (outcomes, log) = queued_pair(&[]);
    let timing = run_outcome(&outcomes[1]).timing.unwrap();
    assert_eq!(timing.source, TimingSource::TimingBuffer);
    assert_eq!((timing.start_ns, timing.end_ns), (1_900_000, 2_000_000));
    assert_eq!(count(&log, "event_timestamp"), 0);
}

#[test]
fn event_timestamps_give_a_runs_device_start_before_its_aicore_kernel_and_end_at_its_boundary() {
    let mut d = driver();
    d.device().script().timestamps = true;
    submit(&mut d, 2);
    d.run_until_idle().unwrap();
    let log = calls(&mut d);
    // One more event per slot; recorded on the AICore stream behind the wait on run 1's
    // boundary, right before run 2's AICore kernel.
    assert_eq!(count(&log, "create_event"), 2 * 3);
    let launch = at(&log, "launch_aicore r2 on s2");
    assert!(log[launch - 1].starts_with("record_event") && log[launch - 1].ends_with("on s2"));
    assert!(log[launch - 2].starts_with("stream_wait_event s2"), "{log:?}");
    let recorded = d.device().script().recorded_at.clone();
    let outcomes = outcomes(&mut d);
    for outcome in &outcomes {
        let r = run_outcome(outcome);
        let timing = r.timing.unwrap();
        assert_eq!(timing.source, TimingSource::EventTimestamps, "{r:?}");
        assert!(timing.start_ns < timing.end_ns, "{timing:?}");
        assert!(recorded.values().any(|&at| at == timing.end_ns));
    }
    let (first, second) =
        (run_outcome(&outcomes[0]).timing.unwrap(), run_outcome(&outcomes[1]).timing.unwrap());
    assert!(first.end_ns < second.end_ns);
}
