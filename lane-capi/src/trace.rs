//! A lane's real-time trace (`run_lane_trace_start` / `run_lane_trace_stop`): what the C ABI
//! path saw, on the host's monotonic clock, written as Chrome trace-event JSON (Perfetto opens
//! it). Tracks: the caller (each submit, each outcome taken), the runner callbacks (prepare,
//! the two launches, finalise, each a slice on the thread that ran it), and one async slice
//! per run from its submit to its outcome, whose end carries the verdict, the proof of
//! overlap and the device start and end.
//!
//! Nothing is recorded, locked or allocated while no lane of the process traces (one atomic
//! load per hook). The simulator has its own trace of virtual time (backend-sim's `trace`);
//! this one has no dependency beyond the standard library, so the C library links nothing
//! more for it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::types::{
    RunLaneItem, RunLaneOutcome, RunLaneOverlap, RunLaneTimingSource, RunLaneVerdict,
};

/// How many lanes trace now: the hooks' fast path.
static TRACING: AtomicUsize = AtomicUsize::new(0);
/// Each tracing lane's log, by the lane's serial.
static TRACES: Mutex<BTreeMap<u64, TraceLog>> = Mutex::new(BTreeMap::new());

/// The caller's track (submits, outcomes taken).
const CALLER_TID: u64 = 1;
/// The runner callbacks' track.
const CALLBACKS_TID: u64 = 2;
/// The runs' async track.
const RUNS_TID: u64 = 3;

/// One lane's trace while it records.
#[derive(Debug)]
struct TraceLog {
    path: PathBuf,
    origin: Instant,
    /// The trace events, each one JSON object.
    events: Vec<String>,
}

impl TraceLog {
    fn now_us(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1e6
    }
}

/// Starts recording lane `serial`'s trace, to be written to `path` at [`stop`]. The file is
/// created now, so a path that cannot be written is refused here.
///
/// # Errors
///
/// The lane traces already, or the file cannot be created.
pub(crate) fn start(serial: u64, path: PathBuf) -> Result<(), String> {
    let mut traces = TRACES.lock().unwrap_or_else(PoisonError::into_inner);
    if traces.contains_key(&serial) {
        return Err("the lane is tracing already: stop its trace first".to_owned());
    }
    File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut log = TraceLog {
        path,
        origin: Instant::now(),
        events: Vec::new(),
    };
    for (tid, name) in [
        (CALLER_TID, "caller"),
        (CALLBACKS_TID, "runner callbacks"),
        (RUNS_TID, "runs"),
    ] {
        log.events.push(format!(
            r#"{{"ph":"M","name":"thread_name","pid":{serial},"tid":{tid},"args":{{"name":"{name}"}}}}"#
        ));
    }
    log.events.push(format!(
        r#"{{"ph":"M","name":"process_name","pid":{serial},"tid":0,"args":{{"name":"run lane {serial}"}}}}"#
    ));
    traces.insert(serial, log);
    TRACING.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Stops lane `serial`'s trace and writes it; returns how many events it holds.
///
/// # Errors
///
/// The lane does not trace, or the file cannot be written.
pub(crate) fn stop(serial: u64) -> Result<usize, String> {
    let log = TRACES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&serial)
        .ok_or_else(|| "the lane is not tracing: start its trace first".to_owned())?;
    TRACING.fetch_sub(1, Ordering::Relaxed);
    let mut text = String::from("{\"traceEvents\":[\n");
    text.push_str(&log.events.join(",\n"));
    text.push_str("\n],\"displayTimeUnit\":\"ns\"}\n");
    File::create(&log.path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", log.path.display()))?;
    Ok(log.events.len())
}

/// Stops lane `serial`'s trace, if it records one, and writes it (a lane destroyed while
/// tracing); a failure to write is dropped.
pub(crate) fn stop_quietly(serial: u64) {
    if TRACING.load(Ordering::Relaxed) > 0 {
        let _ = stop(serial);
    }
}

/// Runs `f` on lane `serial`'s log, if it traces.
fn with_log(serial: u64, f: impl FnOnce(&mut TraceLog)) {
    if TRACING.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Some(log) = TRACES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_mut(&serial)
    {
        f(log);
    }
}

/// Run `run` was accepted: an instant on the caller's track, and the start of its slice.
pub(crate) fn submitted(serial: u64, run: u64) {
    with_log(serial, |log| {
        let ts = log.now_us();
        log.events.push(format!(
            r#"{{"ph":"i","s":"t","name":"submit r{run}","cat":"submit","pid":{serial},"tid":{CALLER_TID},"ts":{ts:.3},"args":{{"run":{run}}}}}"#
        ));
        log.events.push(format!(
            r#"{{"ph":"b","name":"run {run}","cat":"run","id":{run},"pid":{serial},"tid":{RUNS_TID},"ts":{ts:.3}}}"#
        ));
    });
}

/// A runner callback about to run: a slice from now to the guard's drop, on the callbacks'
/// track. `None` (nothing to record) when no lane traces.
#[must_use]
pub(crate) fn callback(serial: u64, what: &'static str, run: u64) -> Option<Callback> {
    (TRACING.load(Ordering::Relaxed) > 0).then(|| Callback {
        serial,
        what,
        run,
        start: Instant::now(),
    })
}

/// A runner callback in progress ([`callback`]): recorded when dropped.
#[derive(Debug)]
pub(crate) struct Callback {
    serial: u64,
    what: &'static str,
    run: u64,
    start: Instant,
}

impl Drop for Callback {
    fn drop(&mut self) {
        let (what, run, serial, start) = (self.what, self.run, self.serial, self.start);
        with_log(serial, |log| {
            let ts = start.saturating_duration_since(log.origin).as_secs_f64() * 1e6;
            let dur = start.elapsed().as_secs_f64() * 1e6;
            log.events.push(format!(
                r#"{{"ph":"X","name":"{what} r{run}","cat":"{what}","pid":{serial},"tid":{CALLBACKS_TID},"ts":{ts:.3},"dur":{dur:.3},"args":{{"run":{run}}}}}"#
            ));
        });
    }
}

/// An outcome taken by the caller: an instant on the caller's track and, for a run, the end
/// of its slice, with what the outcome says.
pub(crate) fn outcome(serial: u64, out: &RunLaneOutcome) {
    with_log(serial, |log| {
        let ts = log.now_us();
        let id = out.id;
        let verdict = match out.verdict {
            RunLaneVerdict::Ok => "ok",
            RunLaneVerdict::Failed => "failed",
            RunLaneVerdict::Poisoned => "poisoned",
            RunLaneVerdict::Cancelled => "cancelled",
            RunLaneVerdict::None => "none",
        };
        if out.item == RunLaneItem::Publication {
            log.events.push(format!(
                r#"{{"ph":"i","s":"t","name":"outcome p{id} {verdict}","cat":"outcome","pid":{serial},"tid":{CALLER_TID},"ts":{ts:.3}}}"#
            ));
            return;
        }
        let overlap = match out.overlap {
            RunLaneOverlap::Unknown => "unknown",
            RunLaneOverlap::NotQueued => "not queued",
            RunLaneOverlap::Proven => "proven",
            RunLaneOverlap::NotProven => "not proven",
        };
        let mut args = format!(r#""run":{id},"verdict":"{verdict}","overlap":"{overlap}""#);
        if out.has_timing {
            let source = match out.timing_source {
                RunLaneTimingSource::TimingBuffer => "timing buffer",
                RunLaneTimingSource::EventTimestamps => "event timestamps",
            };
            let _ = write!(
                args,
                r#","device_start_ns":{},"device_end_ns":{},"timing_source":"{source}""#,
                out.device_start_ns, out.device_end_ns
            );
        }
        log.events.push(format!(
            r#"{{"ph":"i","s":"t","name":"outcome r{id} {verdict}","cat":"outcome","pid":{serial},"tid":{CALLER_TID},"ts":{ts:.3},"args":{{{args}}}}}"#
        ));
        log.events.push(format!(
            r#"{{"ph":"e","name":"run {id}","cat":"run","id":{id},"pid":{serial},"tid":{RUNS_TID},"ts":{ts:.3},"args":{{{args}}}}}"#
        ));
    });
}
