//! L-18 through the C ABI, on the fake libascendcl: a run submitted 10 ms into its 50 ms
//! predecessor is launched onto the pair before the predecessor completes (the fake counts
//! the AICPU launch behind an unfinished kernel as a queued launch). The lane thread acts on
//! the submit at once, because the completion waiter, not it, sits in the predecessor's wait.

mod common;

use std::thread;
use std::time::Duration;

use common::{Kernels, Via, control, wait};
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICPU, Outcome};

/// Each run: a pair of 50 ms fake kernels.
static KERNELS: Kernels = Kernels::healthy(Duration::from_millis(50));
const INTO_PREDECESSOR: Duration = Duration::from_millis(10);
/// Each run: a pair of 20 ms fake kernels (long enough that a successor queues on a loaded machine).
static SHORT: Kernels = Kernels::healthy(Duration::from_millis(20));
/// The same, with run 5's AICPU kernel publishing no record (its streams stay clean).
static SHORT_RUN_5_SILENT: Kernels =
    Kernels::faulty(Duration::from_millis(20), &[(5, ENGINE_AICPU, Outcome::Silent)]);

/// L-6, L-8 through the C ABI: a successful run on the record channel makes no stream
/// synchronize, so a queued successor is never waited for; only a run whose record does
/// not decide it (here: run 5 publishes nothing) gets the device verdict, AICPU stream then
/// AICore stream, and still no other run does.
fn successful_runs_make_no_stream_synchronize_and_only_an_undecided_run_gets_one(via: Via) {
    let _serial = common::serial();
    let control = control();
    for (kernels, syncs) in [(&SHORT, 0), (&SHORT_RUN_5_SILENT, 2)] {
        let _fake = common::session_with(None);
        let lane = common::fake_lane(via, 0, kernels, 5_000);
        let outcomes = common::documented_loop(lane, |submitted, _| submitted < 12);
        let counters = control.counters().expect("the fake's counters");
        common::destroy(lane);
        assert_eq!(outcomes.len(), 12, "one outcome per run");
        for outcome in &outcomes {
            let failed = syncs > 0 && outcome.id == 5;
            let (no, ok) = (RunLaneVerdict::Failed, RunLaneVerdict::Ok);
            assert_eq!(outcome.verdict, if failed { no } else { ok }, "{}", common::line(outcome));
        }
        let stream_syncs = counters.stream_syncs;
        assert_eq!(stream_syncs, syncs, "stream synchronizes: {counters:?}");
        assert!(counters.queued_launches > 0, "runs queued: {counters:?}");
    }
}

/// Also the proof of overlap (run 2's outcome says `PROVEN`) and the C ABI's real-time trace
/// (one slice per run).
fn a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_it_completes(via: Via) {
    let _fake = common::fresh();
    let control = control();
    let lane = common::fake_lane(via, 0, &KERNELS, 5_000);

    // The lane's real-time trace, from the C ABI path.
    static TRACES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let trace = std::env::temp_dir().join(format!(
        "run-lane-queued-{}-{}.json",
        std::process::id(),
        TRACES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let trace_c = std::ffi::CString::new(trace.to_str().unwrap()).unwrap();
    // SAFETY: a live handle and a NUL-terminated path.
    let started = unsafe { run_lane_trace_start(lane, trace_c.as_ptr()) };
    assert_eq!(started, RunLaneStatus::Ok);

    let launches = || control.counters().expect("the fake's counters").launches;
    let first = common::submit(lane).expect("run 1 accepted");
    common::wait_until("run 1 never launched", || launches() >= 2);
    // Run 1's kernels are on the device: 10 ms into them, submit its successor.
    thread::sleep(INTO_PREDECESSOR);
    let second = common::submit(lane).expect("run 2 accepted");
    let first = wait(lane, first);
    let queued = control.counters().expect("counters").queued_launches;
    let second = wait(lane, second);
    for outcome in [first, second] {
        assert_eq!(outcome.verdict, RunLaneVerdict::Ok, "run {}", outcome.id);
        assert!(outcome.has_timing);
    }
    assert_eq!(queued, 1, "run 2 was launched while run 1 executed");
    let behind = second.device_start_ns >= first.device_end_ns;
    assert!(behind, "queued behind it on the pair, not beside it");
    // The proof of overlap: run 2's launch returned while run 1's boundary was unfired.
    assert_eq!(first.overlap, RunLaneOverlap::NotQueued);
    assert_eq!(second.overlap, RunLaneOverlap::Proven);
    // Both paths give event timestamps: the fake's `aclrtEventGetTimestamp`, through ACL or
    // the table's `event_timestamp`.
    for run in [&first, &second] {
        assert_eq!(run.timing_source, RunLaneTimingSource::EventTimestamps);
        assert!(run.device_start_ns <= run.device_end_ns);
    }
    // SAFETY: a live handle.
    assert_eq!(unsafe { run_lane_trace_stop(lane) }, RunLaneStatus::Ok);
    common::destroy(lane);
    a_trace_has_one_slice_per_run(&trace, &[first.id, second.id]);
    std::fs::remove_file(&trace).unwrap();
}

/// The trace at `path` parses as Chrome trace-event JSON with one run slice (a begin and an
/// end) per run of `runs`, the end saying its proof of overlap, and each run's callbacks.
fn a_trace_has_one_slice_per_run(path: &std::path::Path, runs: &[u64]) {
    let text = std::fs::read_to_string(path).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let of = |ph: &str, cat: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["ph"] == ph && e["cat"] == cat).collect()
    };
    let (begins, ends) = (of("b", "run"), of("e", "run"));
    assert_eq!(begins.len(), runs.len(), "{text}");
    assert_eq!(ends.len(), runs.len(), "{text}");
    for (&run, (b, e)) in runs.iter().zip(begins.iter().zip(&ends)) {
        assert_eq!((b["id"].as_u64(), e["id"].as_u64()), (Some(run), Some(run)));
        assert!(b["ts"].as_f64() <= e["ts"].as_f64());
        assert_eq!(e["args"]["verdict"], "ok", "{e}");
    }
    assert_eq!(ends[1]["args"]["overlap"], "proven");
    for what in ["launch_aicore", "launch_aicpu", "finalise"] {
        assert_eq!(of("X", what).len(), runs.len(), "{what}: {text}");
    }
}

common::on_each_backend!(
    successful_runs_make_no_stream_synchronize_and_only_an_undecided_run_gets_one,
    a_run_submitted_10_ms_into_its_50_ms_predecessor_is_launched_before_it_completes,
);
