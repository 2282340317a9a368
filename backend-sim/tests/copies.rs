//! Copies on the streams (`CopyPath::OnStream`) against the synchronous copies: the host time
//! they save the lane thread, faults that fail a copy's enqueue failing the run as the
//! synchronous copy making the same transfer does, and a passed completion event proving the
//! readback landed.

use backend_sim::costs::{Cost, Costs};
use backend_sim::workload::ProfileName;
use backend_sim::{FaultRule, RunTimes, SimConfig, SimDevice, SimRunner, Workload, run};
use lane_core::status_latch::{self, AclCode, HeaderLayout};
use lane_core::{CopyPath, Event, RunId, RunRequest, SlotId};
use lane_driver::{
    Device, Driver, LaunchContext, LaunchStage, Observation, Observer, PinnedCopies, RunArgs,
    Runner,
};

const LAYOUT: HeaderLayout = HeaderLayout::TensormapAndRingbuffer;

fn config(copies: CopyPath, faults: &[&str]) -> SimConfig {
    SimConfig {
        profile: ProfileName::A2a3,
        copies: Some(copies),
        workload: Workload { runs: 6, device_ns: 250_000, jitter_ppm: 0, ..Workload::default() },
        faults: faults
            .iter()
            .map(|f| FaultRule::parse(f).unwrap_or_else(|e| panic!("{f}: {e}")))
            .collect(),
        ..SimConfig::default()
    }
}

/// Every outcome line of the workload, and how many faults fired.
fn outcomes(copies: CopyPath, faults: &[&str]) -> (Vec<String>, u64) {
    let report = run(&config(copies, faults), &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    let lines = report.outcomes.iter().map(ToString::to_string).collect();
    (lines, report.faults_injected)
}

/// A simulated device whose runs take 100 us, without jitter.
fn sim_device() -> SimDevice {
    let times = RunTimes { device_ns: 100_000, jitter_ppm: 0 };
    SimDevice::new(Costs::default(), LAYOUT, 1, times)
}

fn cost(c: Cost) -> u64 {
    Costs::default().get(c)
}

#[test]
fn copies_on_the_streams_save_the_lane_thread_the_arm_copy_minus_the_enqueues() {
    let busy = |copies| {
        let report = run(&config(copies, &[]), &mut |_, _| {}).unwrap();
        report.runs.iter().map(|r| r.host.busy_ns).collect::<Vec<_>>()
    };
    let (sync, on_stream) = (busy(CopyPath::Sync), busy(CopyPath::OnStream));
    // Per run: the synchronous arm goes; the two enqueues, the "armed" record and the AICPU
    // stream's wait come. The record's read stays a synchronous copy on both paths, and with
    // synchronous copies the status rides on it, so no status read is saved.
    let saved = cost(Cost::WriteH2d)
        - 2 * cost(Cost::CopyEnqueue)
        - cost(Cost::EventRecord)
        - cost(Cost::StreamWait);
    assert!(saved > 0);
    // Runs 1 and 2 also make their slot's resources (one more event, the pinned buffer).
    for (i, (s, o)) in sync.iter().zip(&on_stream).enumerate().skip(2) {
        assert_eq!(s - o, saved, "run {}: sync {s} ns, on-stream {o} ns", i + 1);
    }
}

#[test]
fn a_failed_arm_copy_enqueue_fails_the_run_exactly_as_the_sync_arm_does() {
    let faults = ["arm=107000@call:3"];
    let (sync, fired) = outcomes(CopyPath::Sync, &faults);
    assert_eq!(fired, 1);
    let (on_stream, fired) = outcomes(CopyPath::OnStream, &faults);
    assert_eq!(fired, 1);
    assert_eq!(on_stream, sync);
    assert!(
        sync.get(2).is_some_and(|l| l.starts_with("run 3 failed") && l.contains("107000")),
        "{sync:?}"
    );
    assert!(sync.iter().filter(|l| l.ends_with(": ok")).count() >= 4, "{sync:?}");
}

#[test]
fn a_failed_readback_copy_enqueue_fails_the_run_as_the_sync_copy_that_reads_its_status_does() {
    // Synchronous copies read the status in the record's copy, so a status-read fault fails
    // that copy: the run fails at its record read. On the streams the readback is a copy of
    // its own, and the run fails at its status read. Otherwise the outcomes are the same: the
    // same code and class, run 4 taken down with run 3, the others ok.
    for faults in [["status-read=507899@run:3"], ["status-read=107000@run:3"]] {
        let (sync, fired) = outcomes(CopyPath::Sync, &faults);
        assert_eq!(fired, 1);
        let (on_stream, fired) = outcomes(CopyPath::OnStream, &faults);
        assert_eq!(fired, 1);
        assert!(sync.get(2).is_some_and(|l| l.contains("failed at record read")), "{sync:?}");
        assert!(
            on_stream.get(2).is_some_and(|l| l.contains("failed at status read")),
            "{on_stream:?}"
        );
        let as_record_read: Vec<String> = on_stream
            .iter()
            .map(|l| {
                l.replace("at status read", "at record read")
                    .replace("rule=status-read-failed", "rule=record-read-failed")
            })
            .collect();
        assert_eq!(as_record_read, sync, "{faults:?}");
    }
}

/// Collects the events the driver fed the lane.
#[derive(Default)]
struct Events(Vec<Event>);

impl Observer for Events {
    fn observe(&mut self, step: &Observation<'_>) {
        if let Observation::Event { event, .. } = step {
            self.0.push(**event);
        }
    }
}

#[test]
fn a_failed_readback_enqueue_is_answered_at_the_status_read_as_status_read_failed_with_its_code() {
    let profile = config(CopyPath::OnStream, &[]).lane_profile().unwrap();
    let mut device = sim_device();
    device.install(FaultRule::parse("status-read=507899@run:1").unwrap());
    let mut driver = Driver::new(profile, device, SimRunner).with_observer(Events::default());
    driver.submit(RunRequest::default()).unwrap().unwrap();
    driver.close().unwrap();
    driver.run_until_idle().unwrap();
    let (_, _, Events(events)) = driver.into_parts();
    let launched =
        events.iter().position(|e| matches!(e, Event::Launched { run, .. } if *run == RunId(1)));
    let failed = events.iter().position(|e| {
        matches!(e, Event::StatusReadFailed { run, code, .. }
            if *run == RunId(1) && *code == AclCode::from_raw(507_899).unwrap())
    });
    assert!(launched.is_some(), "the run launched: {events:?}");
    assert!(failed > launched, "StatusReadFailed after the launch: {events:?}");
}

#[test]
fn a_passed_boundary_proves_the_readback_holds_the_runs_header() {
    let mut d = sim_device();
    let (aicpu, aicore) = (d.create_stream().unwrap(), d.create_stream().unwrap());
    let buffer = d.malloc(lane_driver::SLOT_BYTES).unwrap();
    let host = d.malloc_host(1200).unwrap();
    let [boundary, core_done, armed] = [(); 3].map(|()| d.create_event().unwrap());
    let args = RunArgs {
        run: RunId(1),
        slot: SlotId(0),
        handshake: buffer,
        timing: buffer.at(64),
        status_header: buffer.at(80),
        record: buffer.at(lane_driver::RECORD_OFFSET),
        epoch: 1,
        queued: false,
    };
    let readback = host.at(80);
    let len = 16 + LAYOUT.size();
    d.write_host(host, &[0; 80]).unwrap();
    d.write_host(readback, &vec![0xFF; len]).unwrap();
    // The launch order of copies on the streams (L-5), each stage told as the executor does.
    let stage = |stage| Some(LaunchContext { run: args.run, stage });
    d.launch_context(stage(LaunchStage::Arm));
    d.memcpy_to_device_async(buffer, host, 80, aicore).unwrap();
    d.record_event(armed, aicore).unwrap();
    d.stream_wait_event(aicpu, armed).unwrap();
    SimRunner.launch_aicore(&mut d, aicore, &args).unwrap();
    d.launch_context(stage(LaunchStage::Kernels));
    d.record_event(core_done, aicore).unwrap();
    SimRunner.launch_aicpu(&mut d, aicpu, &args).unwrap();
    d.stream_wait_event(aicpu, core_done).unwrap();
    d.memcpy_from_device_async(readback, args.timing, len, aicpu).unwrap();
    d.record_event(boundary, aicpu).unwrap();
    d.launch_context(None);
    // Before the boundary passes, nothing landed: the bytes move when the copy task runs.
    let mut bytes = vec![0; len];
    d.read_host(&mut bytes, readback).unwrap();
    assert!(bytes.iter().all(|b| *b == 0xFF));
    d.synchronize_event(boundary, 1_000).unwrap();
    d.read_host(&mut bytes, readback).unwrap();
    let (timing, header) = bytes.split_at(16);
    let start = u64::from_le_bytes(timing[..8].try_into().unwrap());
    let end = u64::from_le_bytes(timing[8..].try_into().unwrap());
    assert!(start > 0 && end > start, "timing {start}..{end}");
    let status = status_latch::decode(LAYOUT, header).unwrap();
    assert!(status.orch.is_none() && status.sched.is_none(), "{status:?}");
    assert!(d.failure().is_none(), "{:?}", d.failure());
}

/// The copies on the streams are device tasks: the Perfetto trace shows each run's arm copy
/// on its AICore stream's track and its readback on its AICPU stream's, as slices of
/// `copy_task` between the kernels, and the text trace names them on the stream.
#[test]
fn copy_tasks_show_on_the_stream_tracks_of_the_trace() {
    let traced = |copies| {
        let config = SimConfig { trace: true, ..config(copies, &[]) };
        run(&config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"))
    };
    let report = traced(CopyPath::OnStream);
    let doc: serde_json::Value = serde_json::from_str(&backend_sim::trace::chrome_json(&[(
        "copies",
        &report.trace,
        &report.stream_roles,
    )]))
    .expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("events");
    let copies = |name: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["name"] == name).collect()
    };
    let (arms, readbacks) = (copies("arm h2d copy"), copies("readback d2h copy"));
    assert_eq!((arms.len(), readbacks.len()), (6, 6));
    let role_of = |e: &serde_json::Value| {
        let tid = e["tid"].as_u64().unwrap_or(0);
        report.stream_roles.get(&tid).copied()
    };
    for (arm, readback) in arms.iter().zip(&readbacks) {
        assert_eq!(arm["pid"], 2, "a device track: {arm}");
        assert_eq!(arm["ph"], "X");
        assert_eq!(arm["dur"].as_f64(), Some(cost(Cost::CopyTask) as f64 / 1_000.0));
        assert_eq!(role_of(arm), Some(lane_core::stream_pair::Role::Aicore));
        assert_eq!(role_of(readback), Some(lane_core::stream_pair::Role::Aicpu));
        assert_eq!(arm["args"]["run"], readback["args"]["run"]);
    }
    let text = report.text_trace();
    assert!(text.contains("copy readback d2h 1040 B (run 1) runs until"), "{text}");
    // The synchronous path has no copy tasks.
    assert!(!traced(CopyPath::Sync).text_trace().contains("copy arm"));
}
