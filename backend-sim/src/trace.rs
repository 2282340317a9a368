//! What happened, in order: host calls, lane steps, device tasks. Rendered as a text trace
//! (one line per event, fixed columns, sorted by virtual time) and as Chrome trace-event
//! JSON (Perfetto: one track for the lane thread, one per virtual host worker, one per
//! stream).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::Role;
use serde_json::{Value, json};

use crate::faults::Latched;
use crate::stats::fmt_us;

/// Which kernel of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The AICore workers.
    Aicore,
    /// The AICPU scheduler.
    Aicpu,
}

impl Side {
    const fn name(self) -> &'static str {
        match self {
            Self::Aicore => "aicore",
            Self::Aicpu => "aicpu",
        }
    }
}

/// How a run's kernels ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Clean exit, clean latch.
    Clean,
    /// Clean exit with a runtime code latched.
    Latched(Latched),
    /// A device exception.
    Exception(AclCode),
    /// Exited with clean streams without publishing a result record (a `silent` run, or an
    /// AICPU scheduler whose hung workers the op timeout killed).
    Silent,
    /// A hang that the device op timeout ended, with this kernel's engine's timeout code
    /// (507014 AICore, 507017 AICPU).
    OpTimeout(AclCode),
    /// Stuck: never ends (the device op timeout did not fire).
    Hang,
    /// Queued behind a task that never ends.
    Blocked,
    /// An AICore kernel whose AICPU partner was never launched: spins forever.
    Orphaned,
}

impl Ending {
    fn describe(self) -> String {
        match self {
            Self::Clean => "clean".to_owned(),
            Self::Latched(latched) => {
                format!("latched {} {}", latched.code.value(), latched.code.name())
            }
            Self::Exception(code) => format!("exception {} {}", code.raw(), code.name()),
            Self::Silent => "exited without publishing a result record".to_owned(),
            Self::OpTimeout(code) => {
                format!("hung until the device op timeout ({} {})", code.raw(), code.name())
            }
            Self::Hang => "hang: never ends".to_owned(),
            Self::Blocked => "blocked behind a task that never ends".to_owned(),
            Self::Orphaned => "orphaned: its AICPU scheduler was never launched".to_owned(),
        }
    }
}

/// One kernel on a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelRecord {
    /// The run.
    pub run: u64,
    /// Which kernel.
    pub side: Side,
    /// The stream handle.
    pub stream: u64,
    /// When the host enqueued it.
    pub enqueued_ns: u64,
    /// When it started (`None`: never).
    pub start_ns: Option<u64>,
    /// When it ended (`None`: never).
    pub end_ns: Option<u64>,
    /// How.
    pub ending: Ending,
    /// When a force reset killed it, if it never ended.
    pub killed_ns: Option<u64>,
}

/// One trace record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A backend call on a host thread: the lane thread, or a virtual host worker
    /// ([`crate::workers`]) on that worker's clock.
    Call {
        /// The virtual host worker that made it (from 0); `None`: the lane thread.
        track: Option<u8>,
        /// Host time at entry.
        start_ns: u64,
        /// Host time at return.
        end_ns: u64,
        /// The call.
        name: &'static str,
        /// The run it was made for, if any.
        run: Option<u64>,
        /// Arguments and results worth reading.
        detail: String,
        /// The code it returned, if it failed.
        error: Option<String>,
    },
    /// A lane command, effect, event or outcome (as the driver reported it).
    Lane {
        /// Host time.
        at_ns: u64,
        /// What.
        text: String,
    },
    /// A kernel.
    Kernel(KernelRecord),
    /// An event-record task on a stream.
    EventTask {
        /// The stream.
        stream: u64,
        /// The event.
        event: u64,
        /// The run whose launch recorded it.
        run: Option<u64>,
        /// When the host recorded it.
        recorded_ns: u64,
        /// When the stream passes it (`None`: never).
        complete_ns: Option<u64>,
    },
    /// An async copy task on a stream (copies on the streams: the arm before a run's
    /// kernels, the readback after them).
    CopyTask {
        /// The stream.
        stream: u64,
        /// What it copies: `arm h2d` or `readback d2h`.
        what: &'static str,
        /// Bytes.
        len: usize,
        /// The run whose launch enqueued it.
        run: Option<u64>,
        /// When the host enqueued it.
        enqueued_ns: u64,
        /// When it starts and ends on the stream (`None`: never, behind a task that never
        /// ends).
        span: Option<(u64, u64)>,
    },
    /// Something the simulator did or found (a reset, a failure).
    Note {
        /// When.
        at_ns: u64,
        /// What.
        text: String,
    },
}

impl Record {
    /// The record as made on `track`: a host call is tagged with the worker whose clock it
    /// ran on (`None`: the lane thread); every other record stays as it is.
    #[must_use]
    pub fn on_track(mut self, on: Option<u8>) -> Self {
        if let Self::Call { track, .. } = &mut self {
            *track = on;
        }
        self
    }
}

/// Chrome thread id of virtual host worker `w` in the host process (1 and 2 are the lane
/// thread's calls and steps).
const fn worker_tid(worker: u8) -> u64 {
    10 + worker as u64
}

/// The track of the completion waiter's device waits ([`crate::workers`]): lane-service's
/// waiter thread, which makes every blocking wait of a lane so the lane thread never does.
pub const WAITER_TRACK: u8 = u8::MAX;

/// A host track's name in the text trace: the lane thread's (`host`), a worker's, or the
/// completion waiter's.
fn track_actor(track: Option<u8>) -> String {
    match track {
        None => "host".to_owned(),
        Some(WAITER_TRACK) => "waiter".to_owned(),
        Some(worker) => format!("worker {worker}"),
    }
}

/// The records of one simulation (empty when tracing is off).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    enabled: bool,
    records: Vec<Record>,
}

impl Trace {
    /// A trace that records (`on`) or ignores everything.
    pub const fn new(on: bool) -> Self {
        Self { enabled: on, records: Vec::new() }
    }

    /// The records, in the order they were made.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Records what `make` builds (only called when tracing is on).
    pub fn push(&mut self, make: impl FnOnce() -> Record) {
        if self.enabled {
            self.records.push(make());
        }
    }

    /// Records what `make` builds and returns its index (`None` when tracing is off).
    pub(crate) fn push_indexed(&mut self, make: impl FnOnce() -> Record) -> Option<usize> {
        self.enabled.then(|| {
            self.records.push(make());
            self.records.len() - 1
        })
    }

    /// Changes the record at `index` (a device task's, as the device learns when it ran).
    pub(crate) fn patch(&mut self, index: usize, change: impl FnOnce(&mut Record)) {
        if let Some(record) = self.records.get_mut(index) {
            change(record);
        }
    }

    /// A force reset at `at` killed every kernel that had not ended.
    pub fn kill_open_kernels(&mut self, at: u64) {
        for record in &mut self.records {
            if let Record::Kernel(k) = record {
                if k.end_ns.is_none() && k.killed_ns.is_none() {
                    k.killed_ns = Some(at);
                }
            }
        }
    }

    fn last_ns(&self) -> u64 {
        self.records
            .iter()
            .map(|r| match r {
                Record::Call { end_ns, .. } => *end_ns,
                Record::Lane { at_ns, .. } | Record::Note { at_ns, .. } => *at_ns,
                Record::Kernel(k) => k.end_ns.or(k.start_ns).unwrap_or(k.enqueued_ns),
                Record::EventTask { recorded_ns, complete_ns, .. } => {
                    complete_ns.unwrap_or(*recorded_ns)
                }
                Record::CopyTask { enqueued_ns, span, .. } => {
                    span.map_or(*enqueued_ns, |(_, end)| end)
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// The text trace: one line per event, sorted by virtual time (ties keep the order
    /// they happened in), columns `time_us  actor  what`.
    pub fn render_text(&self, roles: &BTreeMap<u64, Role>) -> String {
        let mut lines: Vec<(u64, String, String)> = Vec::new();
        let stream = |h: u64| stream_label(h, roles);
        for record in &self.records {
            match record {
                Record::Call { track, start_ns, end_ns, name, detail, error, .. } => {
                    let mut text = format!("{name:<19}{detail}");
                    if let Some(error) = error {
                        let _ = write!(text, " -> {error}");
                    }
                    let _ = write!(text, " [{} us]", fmt_us(end_ns - start_ns));
                    let actor = track_actor(*track);
                    lines.push((*start_ns, actor, text));
                }
                Record::Lane { at_ns, text } => {
                    lines.push((*at_ns, "lane".to_owned(), text.clone()));
                }
                Record::Note { at_ns, text } => {
                    lines.push((*at_ns, "sim".to_owned(), text.clone()));
                }
                Record::Kernel(k) => {
                    let (who, how) = (format!("run {} {}", k.run, k.side.name()), k.ending);
                    let mut line = |at, text| lines.push((at, stream(k.stream), text));
                    match k.start_ns {
                        Some(start) => line(
                            start,
                            format!("{who} starts (enqueued at {} us)", fmt_us(k.enqueued_ns)),
                        ),
                        None => line(
                            k.enqueued_ns,
                            format!("{who} enqueued; never starts ({})", how.describe()),
                        ),
                    }
                    match (k.start_ns, k.end_ns) {
                        (_, Some(end)) => line(end, format!("{who} ends: {}", how.describe())),
                        (Some(start), None) => {
                            line(start, format!("{who} never ends ({})", how.describe()))
                        }
                        (None, None) => {}
                    }
                    if let Some(killed) = k.killed_ns {
                        line(killed, format!("{who} killed by reset"));
                    }
                }
                Record::CopyTask { stream: s, what, len, run, enqueued_ns, span } => {
                    let of = run.map(|r| format!(" (run {r})")).unwrap_or_default();
                    let (at, text) = match span {
                        Some((start, end)) => (*start, format!("runs until {} us", fmt_us(*end))),
                        None => (*enqueued_ns, "enqueued; never starts".to_owned()),
                    };
                    lines.push((at, stream(*s), format!("copy {what} {len} B{of} {text}")));
                }
                Record::EventTask { stream: s, event, run, recorded_ns, complete_ns } => {
                    let of = run.map(|r| format!(" (run {r})")).unwrap_or_default();
                    let (at, text) = match complete_ns {
                        Some(t) => (*t, format!("event e{event} passed{of}")),
                        None => (
                            *recorded_ns,
                            format!("event e{event} recorded{of}; the stream never passes it"),
                        ),
                    };
                    lines.push((at, stream(*s), text));
                }
            }
        }
        lines.sort_by_key(|(t, _, _)| *t);
        let mut out = String::new();
        let _ = writeln!(out, "{:>13}  {:<10}  what", "time_us", "actor");
        for (t, actor, text) in lines {
            let _ = writeln!(out, "{:>13}  {actor:<10}  {text}", fmt_us(t));
        }
        out
    }

    /// Chrome trace events for this trace, as process `pid` (host) and `pid + 1` (device),
    /// labelled `label`.
    pub fn chrome_events(&self, roles: &BTreeMap<u64, Role>, pid: u64, label: &str) -> Vec<Value> {
        let host = pid;
        let device = pid + 1;
        let end_of_trace = self.last_ns();
        let us = |ns: u64| Value::from(ns as f64 / 1_000.0);
        let mut out = vec![
            json!({"name": "process_name", "ph": "M", "pid": host, "args": {"name": format!("{label}: host")}}),
            json!({"name": "process_sort_index", "ph": "M", "pid": host, "args": {"sort_index": host}}),
            json!({"name": "thread_name", "ph": "M", "pid": host, "tid": 1, "args": {"name": "lane thread (calls)"}}),
            json!({"name": "thread_name", "ph": "M", "pid": host, "tid": 2, "args": {"name": "lane steps"}}),
            json!({"name": "process_name", "ph": "M", "pid": device, "args": {"name": format!("{label}: device")}}),
            json!({"name": "process_sort_index", "ph": "M", "pid": device, "args": {"sort_index": device}}),
        ];
        let mut streams: Vec<u64> = Vec::new();
        let mut workers: Vec<u8> = Vec::new();
        for record in &self.records {
            match record {
                Record::Call { track, start_ns, end_ns, name, run, detail, error } => {
                    let tid = track.map_or(1, |w| {
                        workers.push(w);
                        worker_tid(w)
                    });
                    out.push(json!({
                        "name": name, "ph": "X", "pid": host, "tid": tid,
                        "ts": us(*start_ns), "dur": us(end_ns - start_ns),
                        "args": {"detail": detail, "run": run, "error": error},
                    }));
                }
                Record::Lane { at_ns, text } => out.push(json!({
                    "name": text, "ph": "i", "s": "t", "pid": host, "tid": 2, "ts": us(*at_ns),
                })),
                Record::Note { at_ns, text } => out.push(json!({
                    "name": text, "ph": "i", "s": "p", "pid": device, "tid": 0, "ts": us(*at_ns),
                })),
                Record::Kernel(k) => {
                    streams.push(k.stream);
                    let start = k.start_ns.unwrap_or(k.enqueued_ns);
                    let end = k.end_ns.or(k.killed_ns).unwrap_or(end_of_trace).max(start);
                    let suffix = if k.end_ns.is_none() { " (never ends)" } else { "" };
                    out.push(json!({
                        "name": format!("run {} {}{suffix}", k.run, k.side.name()),
                        "ph": "X", "pid": device, "tid": k.stream,
                        "ts": us(start), "dur": us(end - start),
                        "args": {"run": k.run, "enqueued_us": us(k.enqueued_ns), "ending": k.ending.describe()},
                    }));
                }
                Record::CopyTask { stream, what, len, run, enqueued_ns, span } => {
                    streams.push(*stream);
                    let (start, end, never) = span
                        .map_or((*enqueued_ns, end_of_trace, " (never starts)"), |(s, e)| {
                            (s, e, "")
                        });
                    out.push(json!({
                        "name": format!("{what} copy{never}"),
                        "ph": "X", "pid": device, "tid": stream,
                        "ts": us(start), "dur": us(end.max(start) - start),
                        "args": {"run": run, "bytes": len, "enqueued_us": us(*enqueued_ns)},
                    }));
                }
                Record::EventTask { stream, event, run, recorded_ns, complete_ns } => {
                    streams.push(*stream);
                    let at = complete_ns.unwrap_or(*recorded_ns);
                    out.push(json!({
                        "name": format!("event e{event}"), "ph": "i", "s": "t",
                        "pid": device, "tid": stream, "ts": us(at),
                        "args": {"run": run, "recorded_us": us(*recorded_ns), "passes": complete_ns.is_some()},
                    }));
                }
            }
        }
        workers.sort_unstable();
        workers.dedup();
        for worker in workers {
            let name = if worker == WAITER_TRACK {
                "completion waiter (device waits)".to_owned()
            } else {
                format!("host worker {worker} (runner prepare, finalise)")
            };
            out.push(json!({
                "name": "thread_name", "ph": "M", "pid": host, "tid": worker_tid(worker),
                "args": {"name": name},
            }));
        }
        streams.sort_unstable();
        streams.dedup();
        for stream in streams {
            out.push(json!({
                "name": "thread_name", "ph": "M", "pid": device, "tid": stream,
                "args": {"name": format!("stream {}", stream_label(stream, roles))},
            }));
            out.push(json!({
                "name": "thread_sort_index", "ph": "M", "pid": device, "tid": stream,
                "args": {"sort_index": stream},
            }));
        }
        out
    }
}

/// A Chrome trace-event JSON document (opens in Perfetto and chrome://tracing) holding each
/// `(label, trace, stream roles)` as its own host and device processes.
pub fn chrome_json(arms: &[(&str, &Trace, &BTreeMap<u64, Role>)]) -> String {
    let mut events = Vec::new();
    for (i, (label, trace, roles)) in arms.iter().enumerate() {
        let pid = 1 + 2 * u64::try_from(i).unwrap_or(0);
        events.extend(trace.chrome_events(roles, pid, label));
    }
    let doc = json!({"traceEvents": events, "displayTimeUnit": "ns"});
    let mut text = doc.to_string();
    text.push('\n');
    text
}

fn stream_label(handle: u64, roles: &BTreeMap<u64, Role>) -> String {
    match roles.get(&handle) {
        Some(Role::Aicpu) => format!("h{handle}/aicpu"),
        Some(Role::Aicore) => format!("h{handle}/aicore"),
        None => format!("h{handle}"),
    }
}
