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
//!
//! A trace keeps at most [`MAX_EVENTS`] events: past them it records one "trace truncated"
//! instant and drops the rest, counting them (in the marker's args and the file's
//! `otherData`), so a lane tracing for days holds bounded memory.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::types::{
    RunLaneItem, RunLaneOutcome, RunLaneOverlap, RunLaneTimingSource, RunLaneVerdict,
};

/// How many lanes trace now: the hooks' fast path.
static TRACING: AtomicUsize = AtomicUsize::new(0);
/// Each tracing lane's log, and the lanes that may trace.
static TRACES: Mutex<Traces> = Mutex::new(Traces { logs: BTreeMap::new(), live: BTreeSet::new() });

/// The most events one trace keeps (the truncation marker included): about 200 bytes each,
/// so a trace holds at most about 200 MB however long it records.
pub(crate) const MAX_EVENTS: usize = 1_000_000;

/// What [`TRACES`] guards.
#[derive(Debug)]
struct Traces {
    /// Each tracing lane's log, by the lane's serial.
    logs: BTreeMap<u64, TraceLog>,
    /// The serials of the lanes created and not yet destroyed: only these may start a trace,
    /// so a start racing its lane's destroy cannot leave a log nobody writes.
    live: BTreeSet<u64>,
}

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
    /// The most events kept, the truncation marker included ([`MAX_EVENTS`]).
    cap: usize,
    /// When the trace was truncated (microseconds from `origin`): set, nothing more is kept.
    truncated_at: Option<f64>,
    /// The events dropped since the truncation.
    dropped: u64,
}

impl TraceLog {
    fn now_us(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1e6
    }

    /// Keeps `event`, unless the trace is full: then the first one dropped marks the
    /// truncation (written last, as the marker) and every one is counted.
    fn push(&mut self, event: String) {
        if self.truncated_at.is_none() && self.events.len() + 1 < self.cap {
            self.events.push(event);
            return;
        }
        if self.truncated_at.is_none() {
            self.truncated_at = Some(self.now_us());
        }
        self.dropped += 1;
    }

    /// Writes the trace to its path, streaming the events (no second copy); returns how many
    /// events it wrote.
    fn write(&self, serial: u64) -> std::io::Result<usize> {
        let mut out = BufWriter::new(File::create(&self.path)?);
        out.write_all(b"{\"traceEvents\":[\n")?;
        for (i, event) in self.events.iter().enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            out.write_all(event.as_bytes())?;
        }
        let (cap, dropped) = (self.cap, self.dropped);
        if let Some(ts) = self.truncated_at {
            if !self.events.is_empty() {
                out.write_all(b",\n")?;
            }
            write!(
                out,
                r#"{{"ph":"i","s":"p","name":"trace truncated","cat":"trace","pid":{serial},"tid":0,"ts":{ts:.3},"args":{{"max_events":{cap},"dropped_events":{dropped}}}}}"#
            )?;
        }
        writeln!(
            out,
            r#"
],"displayTimeUnit":"ns","otherData":{{"max_events":{cap},"dropped_events":{dropped}}}}}"#
        )?;
        out.flush()?;
        Ok(self.events.len() + usize::from(self.truncated_at.is_some()))
    }
}

/// Lane `serial` exists (called before its handle is returned): it may trace.
pub(crate) fn lane_created(serial: u64) {
    TRACES.lock().unwrap_or_else(PoisonError::into_inner).live.insert(serial);
}

/// Lane `serial` is destroyed: a trace it records is written (a failure to write is dropped),
/// and a start that found the lane before its destroy is refused from now on.
pub(crate) fn lane_destroyed(serial: u64) {
    let log = {
        let mut traces = TRACES.lock().unwrap_or_else(PoisonError::into_inner);
        traces.live.remove(&serial);
        traces.logs.remove(&serial)
    };
    if let Some(log) = log {
        TRACING.fetch_sub(1, Ordering::Relaxed);
        let _ = log.write(serial);
    }
}

/// Starts recording lane `serial`'s trace, to be written to `path` at [`stop`]. The file is
/// created now, so a path that cannot be written is refused here.
///
/// # Errors
///
/// The lane traces already, or the file cannot be created.
pub(crate) fn start(serial: u64, path: PathBuf) -> Result<(), String> {
    start_capped(serial, path, MAX_EVENTS)
}

/// [`start`], keeping at most `cap` events (at least 5: the 4 metadata events and the
/// truncation marker).
fn start_capped(serial: u64, path: PathBuf, cap: usize) -> Result<(), String> {
    let mut traces = TRACES.lock().unwrap_or_else(PoisonError::into_inner);
    if !traces.live.contains(&serial) {
        return Err("the lane is destroyed".to_owned());
    }
    if traces.logs.contains_key(&serial) {
        return Err("the lane is tracing already: stop its trace first".to_owned());
    }
    File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut log = TraceLog {
        path,
        origin: Instant::now(),
        events: Vec::new(),
        cap: cap.max(5),
        truncated_at: None,
        dropped: 0,
    };
    for (tid, name) in
        [(CALLER_TID, "caller"), (CALLBACKS_TID, "runner callbacks"), (RUNS_TID, "runs")]
    {
        log.push(format!(
            r#"{{"ph":"M","name":"thread_name","pid":{serial},"tid":{tid},"args":{{"name":"{name}"}}}}"#
        ));
    }
    log.push(format!(
        r#"{{"ph":"M","name":"process_name","pid":{serial},"tid":0,"args":{{"name":"run lane {serial}"}}}}"#
    ));
    traces.logs.insert(serial, log);
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
        .logs
        .remove(&serial)
        .ok_or_else(|| "the lane is not tracing: start its trace first".to_owned())?;
    TRACING.fetch_sub(1, Ordering::Relaxed);
    log.write(serial).map_err(|e| format!("cannot write {}: {e}", log.path.display()))
}

/// Runs `f` on lane `serial`'s log, if it traces.
fn with_log(serial: u64, f: impl FnOnce(&mut TraceLog)) {
    if TRACING.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Some(log) = TRACES.lock().unwrap_or_else(PoisonError::into_inner).logs.get_mut(&serial) {
        f(log);
    }
}

/// Run `run` was accepted: an instant on the caller's track, and the start of its slice.
pub(crate) fn submitted(serial: u64, run: u64) {
    with_log(serial, |log| {
        let ts = log.now_us();
        log.push(format!(
            r#"{{"ph":"i","s":"t","name":"submit r{run}","cat":"submit","pid":{serial},"tid":{CALLER_TID},"ts":{ts:.3},"args":{{"run":{run}}}}}"#
        ));
        log.push(format!(
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
            log.push(format!(
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
            log.push(format!(
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
        log.push(format!(
            r#"{{"ph":"i","s":"t","name":"outcome r{id} {verdict}","cat":"outcome","pid":{serial},"tid":{CALLER_TID},"ts":{ts:.3},"args":{{{args}}}}}"#
        ));
        log.push(format!(
            r#"{{"ph":"e","name":"run {id}","cat":"run","id":{id},"pid":{serial},"tid":{RUNS_TID},"ts":{ts:.3},"args":{{{args}}}}}"#
        ));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A serial no lane of this process has (lanes count from 1), distinct per test.
    fn serial(n: u64) -> u64 {
        u64::MAX - n
    }

    fn temp_path(serial: u64) -> PathBuf {
        std::env::temp_dir().join(format!("run-lane-trace-{}-{serial}.json", std::process::id()))
    }

    #[test]
    fn a_full_trace_ends_with_one_truncation_marker_and_holds_at_most_the_cap() {
        let serial = serial(1);
        let path = temp_path(serial);
        lane_created(serial);
        start_capped(serial, path.clone(), 10).unwrap();
        for run in 0..100 {
            submitted(serial, run);
        }
        let written = stop(serial).unwrap();
        lane_destroyed(serial);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let trace: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let events = trace["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), written);
        assert!(events.len() <= 10, "{} events", events.len());
        let last = events.last().unwrap();
        assert_eq!(last["name"], "trace truncated", "{last}");
        // 4 metadata events and 200 pushed: 9 kept, the marker tenth, the rest dropped.
        assert_eq!(last["args"]["dropped_events"], 4 + 200 - 9);
        assert_eq!(trace["otherData"]["dropped_events"], 4 + 200 - 9);
        assert_eq!(events.iter().filter(|e| e["name"] == "trace truncated").count(), 1);
    }

    #[test]
    fn a_trace_under_the_cap_is_written_whole_without_a_marker() {
        let serial = serial(2);
        let path = temp_path(serial);
        lane_created(serial);
        start(serial, path.clone()).unwrap();
        submitted(serial, 1);
        assert_eq!(stop(serial).unwrap(), 6);
        lane_destroyed(serial);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let trace: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(trace["traceEvents"].as_array().unwrap().len(), 6);
        assert_eq!(trace["otherData"]["dropped_events"], 0);
    }

    #[test]
    fn a_start_after_its_lanes_destroy_is_refused_and_leaves_no_log() {
        // Thread A's start found the lane in LANES; thread B's destroy removed it and ran
        // `lane_destroyed`; then A's `start` runs.
        let serial = serial(3);
        let path = temp_path(serial);
        lane_created(serial);
        lane_destroyed(serial);
        let error = start(serial, path.clone()).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(error.contains("destroyed"), "{error}");
        assert!(
            !TRACES.lock().unwrap_or_else(PoisonError::into_inner).logs.contains_key(&serial),
            "an orphaned log keeps every lane's hooks on the global lock"
        );
    }
}
