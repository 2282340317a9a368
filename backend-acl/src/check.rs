//! The device check (`cargo xtask device-check`): the probe and the device-side calls a lane
//! makes that need no kernel of ours, each reported as passed, failed or not checked (and
//! why). It runs against any library the loader accepts, the fake included.

use core::fmt;
use std::path::{Path, PathBuf};

use ascend_cl_sys::{Acl, AttemptFailure, LoadError, Source};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::Device;

use crate::device::{AclConfig, AclDevice, Library};
use crate::error::AclError;

mod overlap;

pub use overlap::OverlapArm;

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// The library (the default search, or a path such as the fake's).
    pub library: Library,
    /// The device id.
    pub device_id: i32,
    /// The size of each device-to-device copy the event-wait overrun step queues to outlast
    /// its timeouts (two buffers of it are allocated). [`DEFAULT_OVERRUN_COPY_BYTES`] on a
    /// device; the fake's tests use a small one, since its device memory is the host's.
    pub overrun_copy_bytes: usize,
    /// The overlap step's runs per launch depth ([`DEFAULT_OVERLAP_RUNS`]).
    pub overlap_runs: usize,
    /// The size of the device-to-device copy that stands in for each run's AICore kernel in
    /// the overlap step ([`DEFAULT_OVERLAP_COPY_BYTES`]; two buffers of it are allocated).
    pub overlap_copy_bytes: usize,
}

/// The overlap step's runs per launch depth on a device.
pub const DEFAULT_OVERLAP_RUNS: usize = 200;

/// The overlap step's stand-in kernel on a device: a 32 MiB copy, tens of µs of device
/// memory bandwidth, well above a launch's host round trip only where the lane queues.
pub const DEFAULT_OVERLAP_COPY_BYTES: usize = 32 << 20;

/// The event-wait overrun step's copy size on a device: 256 MiB, about 0.3 ms of device
/// memory bandwidth on a2a3, so a few dozen outlast the step's timeouts.
pub const DEFAULT_OVERRUN_COPY_BYTES: usize = 256 << 20;

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            library: Library::default(),
            device_id: 0,
            overrun_copy_bytes: DEFAULT_OVERRUN_COPY_BYTES,
            overlap_runs: DEFAULT_OVERLAP_RUNS,
            overlap_copy_bytes: DEFAULT_OVERLAP_COPY_BYTES,
        }
    }
}

/// How one check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It did what ACL documents.
    Passed,
    /// It did not; the detail says what happened.
    Failed,
    /// It could not be checked here; the detail says why.
    NotChecked,
}

/// One check and what it found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// What was checked.
    pub name: &'static str,
    /// How it ended.
    pub verdict: Verdict,
    /// What it found, or why it failed or was not checked.
    pub detail: String,
}

/// The whole check: the library used and each step, or the one reason nothing could be
/// checked (no library, no device).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    /// The library that was loaded, if one was.
    pub library: Option<PathBuf>,
    /// Each check, in order.
    pub steps: Vec<Step>,
    /// Why nothing could be checked (one line), when that is the case.
    pub unavailable: Option<String>,
    /// The overlap step's arms, depth one then depth two, each run's device timing (empty
    /// when the step did not run to its end).
    pub overlap: Vec<OverlapArm>,
}

impl CheckReport {
    /// Whether the device was there and no check failed.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.unavailable.is_none() && self.steps.iter().all(|s| s.verdict != Verdict::Failed)
    }

    fn count(&self, verdict: Verdict) -> usize {
        self.steps.iter().filter(|s| s.verdict == verdict).count()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(reason) = &self.unavailable {
            return writeln!(f, "device-check: {reason}");
        }
        if let Some(path) = &self.library {
            writeln!(f, "device-check: library {}", path.display())?;
        }
        for step in &self.steps {
            let tag = match step.verdict {
                Verdict::Passed => "ok  ",
                Verdict::Failed => "FAIL",
                Verdict::NotChecked => "skip",
            };
            writeln!(f, "  {tag}  {}: {}", step.name, step.detail)?;
        }
        writeln!(
            f,
            "device-check: {} passed, {} failed, {} not checked",
            self.count(Verdict::Passed),
            self.count(Verdict::Failed),
            self.count(Verdict::NotChecked)
        )
    }
}

/// Runs every check. Never panics: whatever the library or the device does ends in the
/// report.
#[must_use]
pub fn run(options: &CheckOptions) -> CheckReport {
    let config = AclConfig {
        library: options.library.clone(),
        device_id: options.device_id,
        profile: None,
        // This process is the only ACL user: it initialises (100002 counts as success).
        init: true,
        notice_monitor: false,
        prefer_loaded: false,
    };
    let mut report =
        CheckReport { library: None, steps: Vec::new(), unavailable: None, overlap: Vec::new() };
    let (mut device, profile) = match AclDevice::open(config) {
        Ok(opened) => opened,
        Err(error) => {
            report.unavailable = Some(unavailable(&error));
            return report;
        }
    };
    report.library = Some(device.acl().path().to_path_buf());
    let steps = &mut report.steps;
    steps.push(found(
        "probe",
        Verdict::Passed,
        format!(
            "{} device(s) visible, device {}, SoC {}, profile {}",
            device.device_count(),
            device.device_id(),
            device.soc_name().unwrap_or("(none)"),
            profile.name()
        ),
    ));
    steps.push(found(
        "op timeout",
        Verdict::Passed,
        format!(
            "aclrtSetOpExecuteTimeOutV2: {} us, below the host wait of {} ms",
            device.op_timeout_us(),
            profile.completion_timeout_ns() / 1_000_000
        ),
    ));
    steps.push(step("streams", check_streams(&mut device)));
    steps.push(check_stream_ids(&mut device));
    steps.push(step("events", check_events(&mut device)));
    steps.push(step("stream synchronize", check_stream_sync(&mut device)));
    steps.push(check_wait_overrun(&mut device, options.overrun_copy_bytes));
    steps.push(step("copies", check_copies(&mut device)));
    let (back, verdict, detail, arms) = overlap::check_overlap(
        device,
        profile,
        options.overlap_runs.max(2),
        options.overlap_copy_bytes,
    );
    let mut device = back;
    report.overlap = arms;
    let steps = &mut report.steps;
    steps.push(found("overlap", verdict, detail));
    steps.push(step("force reset then probe", check_recovery(&mut device)));
    steps.push(check_devlib(device.acl().path()));
    steps.push(found(
        "kernels",
        Verdict::NotChecked,
        "launch order, completion of real kernels, the op timeout firing (507014/507017) and \
         the status latch need the embedding runtime's kernels (its Runner); see \
         docs/hardware.md",
    ));
    steps.push(found("verdict channel", Verdict::NotChecked, FATAL_STATUS_CHECKLIST));
    if let Err(code) = device.finalize() {
        steps.push(found("finalize", Verdict::Failed, format!("aclFinalize: {code}")));
    }
    report
}

/// The one line for a device that could not be opened.
fn unavailable(error: &AclError) -> String {
    match error {
        AclError::Load(LoadError::NotLoaded { attempts })
            if attempts.iter().all(|a| {
                // Nothing at any path, and the loader's own search found nothing either (a
                // library that exists but fails to open is reported in full below).
                matches!(
                    (&a.candidate.source, &a.failure),
                    (_, AttemptFailure::NotFound) | (Source::Bare, AttemptFailure::Open(_))
                )
            }) =>
        {
            format!(
                "no CANN install found (no usable libascendcl.so among {} candidates); nothing checked: install CANN and `source <cann>/set_env.sh`, or pass --lib PATH",
                attempts.len()
            )
        }
        other => {
            format!("nothing checked: {}", other.to_string().replace('\n', " ").replace("  ", " "))
        }
    }
}

/// A check's result as a step: the detail of a pass, or the failing call and what the
/// library said.
fn step(name: &'static str, result: Result<String, String>) -> Step {
    match result {
        Ok(detail) => found(name, Verdict::Passed, detail),
        Err(detail) => found(name, Verdict::Failed, detail),
    }
}

/// A step with its verdict and detail.
fn found(name: &'static str, verdict: Verdict, detail: impl Into<String>) -> Step {
    Step { name, verdict, detail: detail.into() }
}

/// Two streams, or the failing create (the first destroyed again).
fn two_streams(d: &mut AclDevice) -> Result<(StreamHandle, StreamHandle), String> {
    let first = d.create_stream().map_err(|c| failed(d, "create stream", c))?;
    match d.create_stream() {
        Ok(second) => Ok((first, second)),
        Err(code) => {
            let _ = d.destroy_stream(first);
            Err(failed(d, "create second stream", code))
        }
    }
}

/// `Err` text for a failed call: its name, code and the library's message.
fn failed(device: &mut AclDevice, call: &str, code: AclCode) -> String {
    match device.recent_error_message() {
        Some(message) => format!("{call}: {code}: {message}"),
        None => format!("{call}: {code}"),
    }
}

fn check_streams(d: &mut AclDevice) -> Result<String, String> {
    let (aicpu, aicore) = two_streams(d)?;
    if aicpu == aicore {
        let _ = d.destroy_stream(aicpu);
        return Err("two creates returned the same stream handle".to_owned());
    }
    let first = d.destroy_stream(aicpu);
    let second = d.destroy_stream_force(aicore);
    first.map_err(|c| failed(d, "aclrtDestroyStream", c))?;
    second.map_err(|c| failed(d, "aclrtDestroyStreamForce", c))?;
    Ok("two distinct streams created; destroyed with aclrtDestroyStream and aclrtDestroyStreamForce".to_owned())
}

/// L-19: each new stream gets its own id from `aclrtStreamGetId`, the number a fault notice
/// names; and whether the library has the notice callback and its getters. Without them the
/// lane runs, but no notice reaches it: the step is not checked rather than failed.
fn check_stream_ids(d: &mut AclDevice) -> Step {
    let missing: Vec<&str> = d
        .acl()
        .missing_optional()
        .iter()
        .copied()
        .filter(|s| s.contains("ExceptionInfo") || *s == "aclrtStreamGetId")
        .collect();
    if !missing.is_empty() {
        return found(
            "stream ids",
            Verdict::NotChecked,
            format!(
                "the library lacks {}: lanes run without device fault notices (docs/hardware.md)",
                missing.join(", ")
            ),
        );
    }
    let result = (|| {
        let (first, second) = two_streams(d)?;
        let ids: Vec<u32> = d.stream_ids().collect();
        let _ = d.destroy_stream(first);
        let _ = d.destroy_stream(second);
        match ids.as_slice() {
            [.., a, b] if a != b => Ok(format!(
                "aclrtStreamGetId gave two streams ids {a} and {b}; the fault notice callback and \
                 its getters are present"
            )),
            [.., a, b] => Err(format!("aclrtStreamGetId gave two streams one id ({a} = {b})")),
            _ => Err("aclrtStreamGetId gave no id for a new stream".to_owned()),
        }
    })();
    step("stream ids", result)
}

fn check_events(d: &mut AclDevice) -> Result<String, String> {
    let stream = d.create_stream().map_err(|c| failed(d, "create stream", c))?;
    let result = (|| {
        let event = d.create_event().map_err(|c| failed(d, "create event", c))?;
        let result = (|| {
            // Never recorded: waits as success at once (ascend-cl.md §2.4).
            d.synchronize_event(event, 1_000)
                .map_err(|c| failed(d, "synchronize a never-recorded event", c))?;
            d.record_event(event, stream).map_err(|c| failed(d, "record", c))?;
            d.synchronize_event(event, 5_000)
                .map_err(|c| failed(d, "synchronize with a 5000 ms timeout", c))?;
            // Re-recording reuses the event (the lane re-records per run).
            d.record_event(event, stream).map_err(|c| failed(d, "record again", c))?;
            d.synchronize_event(event, 5_000)
                .map_err(|c| failed(d, "synchronize after the second record", c))
        })();
        let destroyed = d.destroy_event(event);
        result?;
        destroyed.map_err(|c| failed(d, "destroy event", c))
    })();
    let destroyed = d.destroy_stream(stream);
    result?;
    destroyed.map_err(|c| failed(d, "destroy stream", c))?;
    Ok("created, recorded on an empty stream, synchronised with a timeout, re-recorded, destroyed"
        .to_owned())
}

/// What a runtime must confirm on this device with a kernel of its own that returns a fatal
/// status (device-truth §1), since the lane's verdict rests on it (L-8).
const FATAL_STATUS_CHECKLIST: &str = "with a fatal-status AICPU kernel of the runtime's own, \
    confirm: (1) aclrtSynchronizeEventWithTimeout on an event recorded after it returns 0; \
    (2) aclrtPeekAtLastError returns 0 before any stream synchronize; \
    (3) aclrtSynchronizeStreamWithTimeout(stream, T > 0) returns the fault (507018 on a2a3); \
    (4) a kernel queued behind it still runs; (5) its result record is published with the run's \
    epoch and verdict error, or not at all; see docs/hardware.md";

/// The device verdict's call (L-8): a zero timeout is refused, a positive one on an idle or
/// drained stream returns 0, and a never-recorded event waits as success (so the lane tracks
/// its own records).
fn check_stream_sync(d: &mut AclDevice) -> Result<String, String> {
    let stream = d.create_stream().map_err(|c| failed(d, "create stream", c))?;
    let result = (|| {
        match d.synchronize_stream(stream, 0) {
            Err(code) if code.raw() == 107_000 => {}
            Err(code) => {
                return Err(format!(
                    "aclrtSynchronizeStreamWithTimeout(stream, 0) returned {code}, not 107000"
                ));
            }
            Ok(()) => {
                return Err(
                    "aclrtSynchronizeStreamWithTimeout(stream, 0) was accepted; a zero timeout \
                     must be refused (107000)"
                        .to_owned(),
                );
            }
        }
        let _ = d.recent_error_message();
        d.synchronize_stream(stream, 5_000)
            .map_err(|c| failed(d, "synchronize an idle stream with a 5000 ms timeout", c))?;
        let event = d.create_event().map_err(|c| failed(d, "create event", c))?;
        let waited = d.synchronize_event(event, 1_000);
        let destroyed = d.destroy_event(event);
        waited.map_err(|c| failed(d, "synchronize a never-recorded event", c))?;
        destroyed.map_err(|c| failed(d, "destroy event", c))
    })();
    let destroyed = d.destroy_stream(stream);
    result?;
    destroyed.map_err(|c| failed(d, "destroy stream", c))?;
    Ok("a zero timeout is refused with 107000; an idle stream synchronizes with 0; a \
         never-recorded event waits as success"
        .to_owned())
}

/// The event wait's timeouts the overrun step measures, in ms.
const OVERRUN_TIMEOUTS_MS: [i32; 2] = [1, 10];

/// How far past its timeout an event wait returns (device-truth §5: the runtime waits in
/// slices of up to 5 s and looks at its timeout between them), against the waiter's grace
/// (`lane_driver::WAITER_GRACE_NS`), which must cover it: an event recorded behind
/// device-to-device copies that outlast each timeout, waited on with that timeout. Passed when
/// every overrun is within one slice; failed when one passes the grace; not checked when the
/// copies ended before a timeout (too little work to measure).
fn check_wait_overrun(d: &mut AclDevice, bytes: usize) -> Step {
    let name = "event wait overrun";
    let result = measure_overrun(d, bytes.max(1));
    let (verdict, detail) = match result {
        Err(detail) => (Verdict::Failed, detail),
        Ok(measured) => {
            let slice = lane_driver::EVENT_WAIT_SLICE_NS;
            let grace = lane_driver::WAITER_GRACE_NS;
            let lines: Vec<String> = measured.iter().map(Overrun::to_string).collect();
            let worst = measured.iter().filter_map(|m| m.overrun_ns).max();
            // The grace is above a slice: an overrun past either fails.
            let verdict = match worst {
                None => Verdict::NotChecked,
                Some(ns) if ns > slice => Verdict::Failed,
                Some(_) => Verdict::Passed,
            };
            (
                verdict,
                format!(
                    "{}; the waiter's grace is {} ms (one {} ms slice and a second){}",
                    lines.join("; "),
                    grace / 1_000_000,
                    slice / 1_000_000,
                    if worst.is_none() {
                        "; the copies ended before every timeout: rerun with a larger \
                         --overrun-mib"
                    } else {
                        ""
                    }
                ),
            )
        }
    };
    found(name, verdict, detail)
}

/// One timeout's measurement: how long the wait took and what it returned.
struct Overrun {
    timeout_ms: i32,
    took_ns: u64,
    /// Whether it returned its timeout (507047), rather than the work's completion.
    timed_out: bool,
    /// How far past the timeout it returned: `None` when the work ended within it (nothing
    /// measured). A wait that returned success after its timeout counts too: it was overdue
    /// when the work ended.
    overrun_ns: Option<u64>,
}

impl fmt::Display for Overrun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let took = self.took_ns as f64 / 1e6;
        let returned = if self.timed_out { "507047" } else { "0" };
        match self.overrun_ns {
            Some(over) => write!(
                f,
                "{} ms timeout: {returned} after {took:.3} ms ({:.3} ms past it)",
                self.timeout_ms,
                over as f64 / 1e6
            ),
            None => write!(
                f,
                "{} ms timeout: the work ended first, after {took:.3} ms",
                self.timeout_ms
            ),
        }
    }
}

fn measure_overrun(d: &mut AclDevice, bytes: usize) -> Result<Vec<Overrun>, String> {
    let src = d.malloc(bytes).map_err(|c| failed(d, "aclrtMalloc", c))?;
    let dst = match d.malloc(bytes) {
        Ok(dst) => dst,
        Err(code) => {
            let _ = d.free(src);
            return Err(failed(d, "aclrtMalloc", code));
        }
    };
    let made = d.create_stream().map_err(|c| ("create stream", c)).and_then(|stream| {
        match d.create_event() {
            Ok(event) => Ok((stream, event)),
            Err(code) => {
                let _ = d.destroy_stream(stream);
                Err(("create event", code))
            }
        }
    });
    let result = match made {
        Ok((stream, event)) => {
            let measured = overruns(d, src, dst, bytes, stream, event);
            let event_gone = d.destroy_event(event).map_err(|c| ("destroy event", c));
            let stream_gone = d.destroy_stream(stream).map_err(|c| ("destroy stream", c));
            measured.and_then(|measured| {
                event_gone
                    .and(stream_gone)
                    .map(|()| measured)
                    .map_err(|(call, code)| failed(d, call, code))
            })
        }
        Err((call, code)) => Err(failed(d, call, code)),
    };
    let freed = d.free(dst).and(d.free(src));
    let measured = result?;
    freed.map_err(|c| failed(d, "aclrtFree", c))?;
    Ok(measured)
}

/// Times one copy, then, for each timeout, queues enough copies to outlast it five times
/// over, records `event` behind them and waits on it with the timeout; the stream is drained
/// before the next.
fn overruns(
    d: &mut AclDevice,
    src: lane_driver::DevicePtr,
    dst: lane_driver::DevicePtr,
    bytes: usize,
    stream: StreamHandle,
    event: lane_driver::EventHandle,
) -> Result<Vec<Overrun>, String> {
    let drain = |d: &mut AclDevice| {
        d.synchronize_stream(stream, 60_000)
            .map_err(|c| failed(d, "synchronize the copies' stream", c))
    };
    // One copy, timed warm (the first touches every page).
    let mut one_ns = 1;
    for _ in 0..2 {
        let start = d.now();
        d.memcpy_device_async(dst, src, bytes, stream)
            .map_err(|c| failed(d, "aclrtMemcpyAsync device to device", c))?;
        drain(d)?;
        one_ns = d.now().since(start).max(1);
    }
    let mut measured = Vec::new();
    for timeout_ms in OVERRUN_TIMEOUTS_MS {
        let want_ns = 5 * u64::try_from(timeout_ms).unwrap_or(1) * 1_000_000;
        let copies = want_ns.div_ceil(one_ns).clamp(1, 512);
        for _ in 0..copies {
            d.memcpy_device_async(dst, src, bytes, stream)
                .map_err(|c| failed(d, "aclrtMemcpyAsync device to device", c))?;
        }
        d.record_event(event, stream).map_err(|c| failed(d, "record behind the copies", c))?;
        let start = d.now();
        let waited = d.synchronize_event(event, timeout_ms);
        let took_ns = d.now().since(start);
        let timed_out = match waited {
            Ok(()) => false,
            Err(AclCode::RtEventSyncTimeout) => true,
            Err(code) => {
                let _ = drain(d);
                return Err(failed(d, "synchronize the event behind the copies", code));
            }
        };
        let past = took_ns.checked_sub(u64::try_from(timeout_ms).unwrap_or(0) * 1_000_000);
        drain(d)?;
        measured.push(Overrun {
            timeout_ms,
            took_ns,
            timed_out,
            overrun_ns: past.filter(|_| timed_out).or(past.filter(|&p| p > 0)),
        });
    }
    Ok(measured)
}

fn check_copies(d: &mut AclDevice) -> Result<String, String> {
    const BYTES: usize = 1024;
    let ptr = d.malloc(BYTES).map_err(|c| failed(d, "aclrtMalloc", c))?;
    let result = (|| {
        let sent: Vec<u8> = (0..BYTES).map(|i| (i * 7 + 3) as u8).collect();
        d.memcpy_to_device(ptr, &sent).map_err(|c| failed(d, "host to device", c))?;
        let mut back = vec![0_u8; BYTES];
        d.memcpy_from_device(&mut back, ptr).map_err(|c| failed(d, "device to host", c))?;
        if back == sent {
            Ok(format!("{BYTES} bytes host to device and back, identical"))
        } else {
            Err("the bytes read back differ from the bytes written".to_owned())
        }
    })();
    let freed = d.free(ptr);
    let detail = result?;
    freed.map_err(|c| failed(d, "aclrtFree", c))?;
    Ok(detail)
}

/// The recovery the lane runs after a poison: bounded drain, force reset, bind, probe.
fn check_recovery(d: &mut AclDevice) -> Result<String, String> {
    // The drain's code proves nothing (SPEC §5.3); it is reported, not judged.
    let drained = d.synchronize_device(5_000);
    let drain = match drained {
        Ok(()) => "drained".to_owned(),
        Err(code) => format!("drain returned {code} (ignored, as the lane does)"),
    };
    let _ = d.recent_error_message();
    d.reset_device_force().map_err(|c| failed(d, "aclrtResetDeviceForce", c))?;
    d.set_device().map_err(|c| failed(d, "aclrtSetDevice after the reset", c))?;
    let stream = d.create_stream().map_err(|c| failed(d, "probe: create stream", c))?;
    d.destroy_stream(stream).map_err(|c| failed(d, "probe: destroy stream", c))?;
    let ptr = d.malloc(64).map_err(|c| failed(d, "probe: malloc 64", c))?;
    d.free(ptr).map_err(|c| failed(d, "probe: free", c))?;
    Ok(format!(
        "{drain}; aclrtResetDeviceForce, aclrtSetDevice, then a stream and a 64-byte allocation made and released"
    ))
}

/// The loader refuses a library under `devlib/`: the install's own stub when there is one,
/// else a link to the loaded library from a temporary `devlib/` folder.
fn check_devlib(loaded: &Path) -> Step {
    let name = "devlib refusal";
    let stub = install_stub(loaded);
    let (path, cleanup) = match stub {
        Some(stub) => (stub, None),
        None => {
            let dir =
                std::env::temp_dir().join(format!("run-lane-device-check-{}", std::process::id()));
            let link = dir.join("devlib").join(ascend_cl_sys::LIBRARY_NAME);
            let made = std::fs::create_dir_all(link.parent().unwrap_or(&dir))
                .and_then(|()| std::os::unix::fs::symlink(loaded, &link));
            if let Err(e) = made {
                let _ = std::fs::remove_dir_all(&dir);
                return found(
                    name,
                    Verdict::NotChecked,
                    format!("no stub in the install, and no temporary devlib/ link: {e}"),
                );
            }
            (link, Some(dir))
        }
    };
    let result = Acl::open(&path);
    if let Some(dir) = cleanup {
        let _ = std::fs::remove_dir_all(dir);
    }
    match result {
        Err(LoadError::NotLoaded { attempts })
            if attempts.iter().any(|a| matches!(a.failure, AttemptFailure::StubLibrary { .. })) =>
        {
            found(name, Verdict::Passed, format!("{} refused as a stub", path.display()))
        }
        Err(other) => found(
            name,
            Verdict::Failed,
            format!(
                "{} failed to load, but not as a stub: {}",
                path.display(),
                other.to_string().replace('\n', " ")
            ),
        ),
        Ok(_) => {
            found(name, Verdict::Failed, format!("{} under devlib/ was loaded", path.display()))
        }
    }
}

/// CANN's stub `libascendcl.so` under the install that holds `loaded`, if there is one
/// (`<home>/devlib/...` or `<home>/<arch>-linux/devlib/...`, ascend-cl.md §1.1).
fn install_stub(loaded: &Path) -> Option<PathBuf> {
    let home = loaded.parent()?.parent()?;
    let arch = std::env::consts::ARCH;
    [
        home.join("devlib").join(ascend_cl_sys::LIBRARY_NAME),
        home.join(format!("devlib/linux/{arch}")).join(ascend_cl_sys::LIBRARY_NAME),
        home.join(format!("{arch}-linux/devlib")).join(ascend_cl_sys::LIBRARY_NAME),
        home.join(format!("{arch}-linux/devlib/linux/{arch}")).join(ascend_cl_sys::LIBRARY_NAME),
    ]
    .into_iter()
    .find(|p| p.is_file())
}
