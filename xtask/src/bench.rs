//! `cargo xtask bench [--repeat N]`: runs the micro-benchmarks (divan, in the pure crates'
//! `benches/`) and the simulator's before/after sweep (`lane-sim sweep --json`), then writes
//! docs/performance.md (the tables, the machine, the date, how to reproduce) and
//! docs/performance-speedup.svg (queued over depth-one speedup against device time).
//!
//! Timings on a shared VM swing with the other work on it, and noise only ever adds time,
//! so each benchmark binary runs `--repeat` times and the table reports the lowest median
//! with the range of medians. Where valgrind is installed, each benchmark's instructions per
//! iteration are counted too (cachegrind): they do not swing.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::{cargo, project_root};

/// Repetitions of each benchmark binary when `--repeat` is not given.
const DEFAULT_REPEAT: u32 = 3;
/// The target of the micro-benchmarks in the issue: the cost of one device call.
const DEVICE_CALL_NS: f64 = 5_500.0;
/// Device times of the jitter sweep: around the point where host and device time cross.
const JITTER_POINTS: &str = "50,100,110,115,120,125,130,250,1000";
/// Per-run jitter of the second sweep, in percent.
const JITTER_PCT: &str = "10";
/// Two copies to arm a run and two to read back after completion (the layouts before the
/// slot's one allocation and before decision 0023) cost what one copy each costs at twice
/// the price: the sweep's `--cost` shows what the copies still cost.
const PREVIOUS_LAYOUT_COSTS: [&str; 4] = ["--cost", "read_d2h=19", "--cost", "write_h2d=19"];

/// One micro-benchmark: where it lives, its divan path, what it measures, its target.
struct MicroBench {
    package: &'static str,
    bench: &'static str,
    path: &'static str,
    measures: &'static str,
    target_ns: Option<f64>,
}

const MICRO: [MicroBench; 7] = [
    MicroBench {
        package: "stream-pair",
        bench: "stream_pair",
        path: "stream_pair::ready_submit_retire_cycle",
        measures: "stream pair: ready, submit, retire `Complete` (one run's use of the pair)",
        target_ns: Some(15.0),
    },
    MicroBench {
        package: "stream-pair",
        bench: "stream_pair",
        path: "stream_pair::queued_two_deep_cycle",
        measures: "the same cycle queued two deep (successor submitted before the retire)",
        target_ns: Some(15.0),
    },
    MicroBench {
        package: "status-latch",
        bench: "status_latch",
        path: "status_latch::decode_clean_tensormap_header",
        measures: "decode a clean 896-byte tensormap_and_ringbuffer header",
        target_ns: None,
    },
    MicroBench {
        package: "status-latch",
        bench: "status_latch",
        path: "status_latch::decode_and_classify_latched_header::tensormap_and_ringbuffer",
        measures: "decode a latched tensormap_and_ringbuffer header and classify the latch",
        target_ns: None,
    },
    MicroBench {
        package: "status-latch",
        bench: "status_latch",
        path: "status_latch::decode_and_classify_latched_header::host_build_graph",
        measures: "decode a latched host_build_graph header and classify the latch",
        target_ns: None,
    },
    MicroBench {
        package: "lane-core",
        bench: "lane",
        path: "lane::full_run_cycle::a2a3",
        measures: "one run through the lane, a2a3: submit, prepare, launch, complete, status, \
                   finalise, outcome (scripted backend)",
        target_ns: Some(250.0),
    },
    MicroBench {
        package: "lane-core",
        bench: "lane",
        path: "lane::full_run_cycle::depth-one",
        measures: "the same at launch depth one",
        target_ns: Some(250.0),
    },
];

/// `lane::full_run_cycle_with_invariant_checks` is reported too (the simulator's and the
/// fuzzers' price of checking), without a target.
const CHECKED_CYCLE: &str = "lane::full_run_cycle_with_invariant_checks";

/// `cargo xtask bench [--repeat N]`.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let repeat = match args {
        [] => DEFAULT_REPEAT,
        ["--repeat", n] => n
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("--repeat takes a count of 1 or more, not `{n}`"))?,
        other => {
            return Err(format!(
                "unknown bench arguments `{}`; use `cargo xtask bench [--repeat N]`",
                other.join(" ")
            ));
        }
    };
    let root = project_root();
    let machine = Machine::describe(&root);
    eprintln!("xtask bench: micro-benchmarks, {repeat} runs of each binary");
    let medians = micro_medians(&root, repeat)?;
    let instructions = instruction_counts(&root);
    eprintln!("xtask bench: the simulator sweeps");
    let lane_sim = build_lane_sim(&root)?;
    let sweep = lane_sim_sweep(&lane_sim, &[])?;
    let jitter = lane_sim_sweep(
        &lane_sim,
        &["--jitter-pct", JITTER_PCT, "--points", JITTER_POINTS],
    )?;
    let previous = lane_sim_sweep(&lane_sim, &PREVIOUS_LAYOUT_COSTS)?;
    let load_after = load_average();
    let doc = Doc {
        machine: &machine,
        load_after: &load_after,
        repeat,
        medians: &medians,
        instructions: &instructions,
        sweep: &sweep,
        jitter: &jitter,
        previous: &previous,
    };
    let mut markdown = doc.render()?;
    // The real-time companion sections are `cargo xtask fake-bench`'s: keep them.
    if let Ok(old) = fs::read_to_string(root.join("docs/performance.md")) {
        for section in crate::sections::kept(&old) {
            markdown = format!("{}\n\n{section}\n", markdown.trim_end());
        }
    }
    let svg = speedup_svg(&sweep, &jitter)?;
    write(&root.join("docs/performance.md"), &markdown)?;
    write(&root.join("docs/performance-speedup.svg"), &svg)?;
    println!("wrote docs/performance.md and docs/performance-speedup.svg");
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs a command to completion; its stdout, or an error naming it and its stderr's tail.
fn output(mut command: Command, what: &str) -> Result<String, String> {
    let out = command
        .output()
        .map_err(|e| format!("could not start {what}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        return Err(format!(
            "{what} failed ({}):\n{}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

// ----- the machine ----------------------------------------------------------------------

/// What the numbers were measured on.
struct Machine {
    cpu: String,
    cpus: usize,
    os: String,
    rustc: String,
    commit: String,
    date: String,
    load_before: String,
}

impl Machine {
    fn describe(root: &Path) -> Self {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown CPU".to_owned(), |(_, v)| v.trim().to_owned());
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        let os = fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(
            |_| std::env::consts::OS.to_owned(),
            |r| format!("Linux {}", r.trim()),
        );
        let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()))
            .arg("--version")
            .output()
            .map_or_else(
                |_| "rustc (version unknown)".to_owned(),
                |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
            );
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(root)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        };
        let commit = match (
            git(&["rev-parse", "--short", "HEAD"]),
            git(&["status", "--porcelain"]),
        ) {
            (Some(hash), Some(changes)) if !changes.is_empty() => {
                format!("{hash} with uncommitted changes")
            }
            (Some(hash), _) => hash,
            (None, _) => "unknown".to_owned(),
        };
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            cpu,
            cpus,
            os,
            rustc,
            commit,
            date: utc_date(secs),
            load_before: load_average(),
        }
    }
}

/// `/proc/loadavg`'s 1, 5 and 15 minute averages.
pub(crate) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// How an idle CPU waits for its next wake-up, where Linux says: the cpuidle driver, and for
/// a guest's `haltpoll` driver how long it polls before it halts. A real-time figure that
/// wakes a thread onto an idle CPU pays that CPU's wake-up: on a guest that halts at once,
/// the hypervisor's (tens of us), which no bare-metal runner host pays.
pub(crate) fn idle_states() -> Option<String> {
    let driver = fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver").ok()?;
    let driver = driver.trim();
    let poll = fs::read_to_string("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
        .ok()
        .filter(|_| driver == "haltpoll");
    Some(describe_idle(driver, poll.as_deref()))
}

/// [`idle_states`]' text for `driver` and, under `haltpoll`, its `guest_halt_poll_ns`.
fn describe_idle(driver: &str, poll_ns: Option<&str>) -> String {
    match poll_ns.map(str::trim) {
        Some("0") => format!("cpuidle {driver}: an idle CPU halts at once, with no guest polling"),
        Some(ns) => format!("cpuidle {driver}: an idle CPU polls up to {ns} ns before it halts"),
        None => format!("cpuidle {driver}"),
    }
}

/// `YYYY-MM-DD HH:MM UTC` from seconds since the Unix epoch (the civil-from-days algorithm
/// of Howard Hinnant's date library).
fn utc_date(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (hour, minute) = ((secs % 86_400) / 3_600, (secs % 3_600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

// ----- micro-benchmarks -----------------------------------------------------------------

/// Each benchmark's medians (ns), one per run of its binary.
type Medians = Vec<(String, Vec<f64>)>;

/// Runs each benchmark binary `repeat` times and collects every benchmark's median.
fn micro_medians(root: &Path, repeat: u32) -> Result<Medians, String> {
    let mut medians: Medians = Vec::new();
    let mut binaries: Vec<(&str, &str)> = MICRO.iter().map(|m| (m.package, m.bench)).collect();
    binaries.dedup();
    for round in 1..=repeat {
        for (package, bench) in &binaries {
            eprintln!("xtask bench: cargo bench -p {package} --bench {bench} ({round}/{repeat})");
            let mut command = cargo();
            command
                .args(["bench", "-p", package, "--bench", bench])
                .current_dir(root);
            let text = output(
                command,
                &format!("`cargo bench -p {package} --bench {bench}`"),
            )?;
            for (path, median) in parse_divan(&text) {
                match medians.iter_mut().find(|(p, _)| *p == path) {
                    Some((_, values)) => values.push(median),
                    None => medians.push((path, vec![median])),
                }
            }
        }
    }
    for m in &MICRO {
        if !medians.iter().any(|(p, _)| p == m.path) {
            return Err(format!(
                "`cargo bench -p {} --bench {}` printed no median for {}; was the benchmark renamed?",
                m.package, m.bench, m.path
            ));
        }
    }
    Ok(medians)
}

/// `(path, median ns)` for every benchmark in divan's table. A row's path is its tree path
/// from the table's root (`lane::full_run_cycle::a2a3`).
fn parse_divan(text: &str) -> Vec<(String, f64)> {
    let mut found = Vec::new();
    let mut path: Vec<String> = Vec::new();
    for line in text.lines() {
        let marker = line.find("├─ ").or_else(|| line.find("╰─ "));
        let Some(at) = marker else {
            // A table header: `<root>   fastest │ slowest │ median ...`.
            if line.contains("fastest") {
                path = line.split_whitespace().take(1).map(str::to_owned).collect();
            }
            continue;
        };
        if path.is_empty() {
            continue;
        }
        let depth = line[..at].chars().count() / 3 + 1;
        let rest = &line[at + "├─ ".len()..];
        let columns: Vec<&str> = rest.split('│').collect();
        let Some(name) = columns.first().and_then(|c| c.split_whitespace().next()) else {
            continue;
        };
        path.truncate(depth);
        path.push(name.to_owned());
        if let Some(median) = columns.get(2).and_then(|c| parse_duration_ns(c)) {
            found.push((path.join("::"), median));
        }
    }
    found
}

/// `12.3 ns`, `4.5 µs`, `6 ms`, `1.2 s`, `900 ps` in nanoseconds.
fn parse_duration_ns(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let value: f64 = parts.next()?.parse().ok()?;
    let scale = match parts.next()? {
        "ps" => 1e-3,
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(value * scale)
}

/// Instructions per iteration of each benchmark, from cachegrind (the difference between
/// two sample sizes, so divan's own work cancels out); `None` without valgrind.
fn instruction_counts(root: &Path) -> Option<Vec<(String, u64)>> {
    let valgrind_found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !valgrind_found {
        eprintln!("xtask bench: valgrind not found, no instruction counts");
        return None;
    }
    let mut counts = Vec::new();
    let paths = MICRO.iter().map(|m| (m.package, m.bench, m.path)).chain([(
        "lane-core",
        "lane",
        CHECKED_CYCLE,
    )]);
    for (package, bench, path) in paths {
        eprintln!("xtask bench: instructions of {path} (cachegrind)");
        let executable = bench_executable(root, package, bench).ok()?;
        let at = |iterations: u64| cachegrind_instructions(&executable, path, iterations);
        let (small, large) = (at(2_000)?, at(12_000)?);
        counts.push((path.to_owned(), large.saturating_sub(small) / 10_000));
    }
    Some(counts)
}

/// The compiled benchmark binary (`cargo bench --no-run`).
fn bench_executable(root: &Path, package: &str, bench: &str) -> Result<PathBuf, String> {
    let mut command = cargo();
    command
        .args(["bench", "-p", package, "--bench", bench, "--no-run"])
        .args(["--message-format", "json"])
        .current_dir(root);
    let text = output(command, &format!("`cargo bench -p {package} --no-run`"))?;
    executable_named(&text, bench)
}

/// The executable of the target named `name` in cargo's JSON messages.
fn executable_named(messages: &str, name: &str) -> Result<PathBuf, String> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo reported no executable for `{name}`"))
}

/// Instructions the benchmark binary executes running `path` for `iterations` (one sample).
fn cachegrind_instructions(executable: &Path, path: &str, iterations: u64) -> Option<u64> {
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(executable)
        .args(["--bench", "--exact", path, "--sample-count", "1"])
        .args(["--sample-size", &iterations.to_string()])
        .output()
        .ok()?;
    let report = String::from_utf8_lossy(&out.stderr);
    report
        .lines()
        .find(|l| l.contains("I   refs:") || l.contains("I refs:"))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().replace(',', "").parse().ok())
}

// ----- the sweep --------------------------------------------------------------------------

/// Builds the `lane-sim` command in release mode; its path.
fn build_lane_sim(root: &Path) -> Result<PathBuf, String> {
    let mut command = cargo();
    command
        .args([
            "build",
            "--release",
            "-p",
            "backend-sim",
            "--bin",
            "lane-sim",
        ])
        .args(["--message-format", "json"])
        .current_dir(root);
    let text = output(command, "`cargo build --release -p backend-sim`")?;
    executable_named(&text, "lane-sim")
}

/// `lane-sim sweep --json` with `extra` options, parsed.
fn lane_sim_sweep(lane_sim: &Path, extra: &[&str]) -> Result<Value, String> {
    let mut command = Command::new(lane_sim);
    command.args(["sweep", "--json"]).args(extra);
    let what = format!("`lane-sim sweep --json {}`", extra.join(" "));
    let text = output(command, &what)?;
    serde_json::from_str(&text).map_err(|e| format!("{what} printed no JSON: {e}"))
}

/// A number from the sweep's JSON, or an error naming the key.
fn num(value: &Value, key: &str) -> Result<f64, String> {
    value[key].as_f64().ok_or_else(|| {
        format!("the sweep's JSON has no number `{key}`: was `lane-sim sweep` changed?")
    })
}

fn points(sweep: &Value) -> Result<&Vec<Value>, String> {
    sweep["points"]
        .as_array()
        .ok_or_else(|| "the sweep's JSON has no `points`".to_owned())
}

// ----- docs/performance.md ----------------------------------------------------------------

struct Doc<'a> {
    machine: &'a Machine,
    load_after: &'a str,
    repeat: u32,
    medians: &'a Medians,
    instructions: &'a Option<Vec<(String, u64)>>,
    sweep: &'a Value,
    jitter: &'a Value,
    previous: &'a Value,
}

/// Nanoseconds for a table cell: three significant figures.
fn ns(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ns")
    } else if v >= 10.0 {
        format!("{v:.1} ns")
    } else {
        format!("{v:.2} ns")
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1_000.0)
}

fn pct(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

impl Doc<'_> {
    fn render(&self) -> Result<String, String> {
        let mut out = String::new();
        self.header(&mut out);
        self.micro(&mut out);
        self.sweep(&mut out)?;
        self.offloaded(&mut out)?;
        self.jitter(&mut out)?;
        self.layout(&mut out)?;
        Ok(out)
    }

    fn header(&self, out: &mut String) {
        let m = self.machine;
        out.push_str("# Performance\n\n");
        let _ = writeln!(
            out,
            "Generated by `cargo xtask bench` on {}. Do not edit by hand: run it again.\n",
            m.date
        );
        out.push_str(
            "Two measurements: micro-benchmarks of the pure crates' hot paths (wall-clock \
             time on this machine), and a before/after sweep of depth one against queued \
             depth two on the simulator (virtual time, deterministic, beside the throughput \
             model of `measured-figures.md` §5(c)). The sweep measures the lane's logic \
             against calibrated device costs; it is not a device measurement.\n\n",
        );
        out.push_str("## Machine\n\n");
        let _ = writeln!(out, "- CPU: {}, {} logical CPUs", m.cpu, m.cpus);
        let _ = writeln!(out, "- OS: {}", m.os);
        let _ = writeln!(out, "- Toolchain: {}", m.rustc);
        let _ = writeln!(out, "- Commit: {}", m.commit);
        let _ = writeln!(
            out,
            "- Load average (1, 5, 15 min) before: {}; after: {}. Other work on the machine \
             only adds time to the micro-benchmarks.\n",
            m.load_before, self.load_after
        );
        out.push_str("## How to reproduce\n\n```sh\n");
        out.push_str(
            "cargo xtask bench                                        # everything; writes this file and the SVG\n\
             cargo bench -p stream-pair -p status-latch -p lane-core  # the micro-benchmarks only\n\
             cargo run --release -- sweep                             # the sweep table (--json for machine use)\n\
             cargo run --release -- sweep --jitter-pct 10 --points 50,100,110,115,120,125,130,250,1000\n\
             cargo test -p lane-core --test allocations               # zero heap allocations per run\n",
        );
        out.push_str("```\n\n");
    }

    fn median_of(&self, path: &str) -> Option<&Vec<f64>> {
        self.medians
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, values)| values)
    }

    fn instructions_of(&self, path: &str) -> String {
        self.instructions
            .as_ref()
            .and_then(|counts| counts.iter().find(|(p, _)| p == path))
            .map_or_else(|| "-".to_owned(), |(_, n)| n.to_string())
    }

    fn micro(&self, out: &mut String) {
        out.push_str("## Micro-benchmarks\n\n");
        let _ = writeln!(
            out,
            "divan, fixed sample sizes (1,000 samples each). Each benchmark binary ran {} \
             times; **median** is the lowest of those runs' medians, the range shows all of \
             them. Instructions per iteration come from cachegrind ({}); unlike time they do \
             not depend on the load, so they are the figure to compare between commits.\n",
            self.repeat,
            if self.instructions.is_some() {
                "the difference of two sample sizes, so divan's own work cancels"
            } else {
                "valgrind was not installed, so none were counted"
            }
        );
        out.push_str(
            "| benchmark | measures | target | median | medians over runs | instructions/iter |\n\
             |---|---|---:|---:|---:|---:|\n",
        );
        let rows = MICRO
            .iter()
            .map(|m| (m.path, m.measures, m.target_ns))
            .chain([(
                CHECKED_CYCLE,
                "the a2a3 cycle with `check_invariants` after every event (the simulator's \
                 and fuzzers' price, and lane-service's default; the C ABI's is off)",
                None,
            )]);
        for (path, measures, target) in rows {
            let Some(values) = self.median_of(path) else {
                continue;
            };
            let best = values.iter().copied().fold(f64::INFINITY, f64::min);
            let worst = values.iter().copied().fold(0.0, f64::max);
            let target = target.map_or_else(
                || "reported".to_owned(),
                |t| {
                    format!(
                        "≤ {} {}",
                        ns(t),
                        if best <= t { "(met)" } else { "(**missed**)" }
                    )
                },
            );
            let _ = writeln!(
                out,
                "| `{path}` | {measures} | {target} | {} | {} – {} | {} |",
                ns(best),
                ns(values.iter().copied().fold(f64::INFINITY, f64::min)),
                ns(worst),
                self.instructions_of(path)
            );
        }
        out.push('\n');
        if let Some(cycle) = self.median_of("lane::full_run_cycle::a2a3") {
            let best = cycle.iter().copied().fold(f64::INFINITY, f64::min);
            let _ = writeln!(
                out,
                "One run through the lane costs {} of host time: {:.1}% of one ~5.5 us device \
                 call (A18), and {:.2}% of the ~{} us of calibrated host work a run needs in \
                 the simulator (`H` below: prepare, finalise and eight ACL calls). A run is \
                 one submit and five events, so each lane step costs about {}, {:.2}% of one \
                 device call.\n",
                ns(best),
                best / DEVICE_CALL_NS * 100.0,
                best / num(&self.sweep["model"], "h_ns").unwrap_or(f64::NAN) * 100.0,
                us(num(&self.sweep["model"], "h_ns").unwrap_or(f64::NAN)),
                ns(best / 6.0),
                best / 6.0 / DEVICE_CALL_NS * 100.0,
            );
        }
        out.push_str(
            "**Zero heap allocations per run** in steady state is a test, not a timing: \
             `lane-core/tests/allocations.rs` runs 10,000 runs queued two deep under a \
             counting global allocator and requires zero allocations. Every benchmark also \
             runs once under `cargo test` (`test = true` on each `[[bench]]`), so none can \
             rot.\n\n",
        );
    }

    fn sweep(&self, out: &mut String) -> Result<(), String> {
        let model = &self.sweep["model"];
        let (pre, r, g, h, h1) = (
            num(model, "preamble_ns")?,
            num(model, "r_ns")?,
            num(model, "g_ns")?,
            num(model, "h_ns")?,
            num(model, "h1_ns")?,
        );
        out.push_str("## Before/after sweep on the simulator\n\n");
        let _ = writeln!(
            out,
            "`lane-sim sweep`: for each device time per run, the same workload runs twice in \
             one invocation, at launch depth one (**before**: the host-synchronised lane) and \
             queued at depth two (**after**), with the calibrated default costs \
             (`lane-sim costs`), no jitter, {} runs per arm; the first {} of each arm are \
             skipped (stream creation, the first AICore launch's binary load), and figures are \
             taken over the rest: runs/s from the spacing of the runs' device ends, device \
             utilisation and the mean inter-run gap from each run's own timing buffer.\n",
            num(self.sweep, "runs")?,
            num(self.sweep, "warmup_runs")?
        );
        out.push_str("### The model\n\n");
        let _ = writeln!(
            out,
            "From `measured-figures.md` §5(c): depth-one period `T1 = D + R`, queued period \
             `T2 = max(D + g, H)`. With §5(c)'s refinement for the host-bound case: the next \
             run's prepare overlaps the running one (A23, and the a2a3 profile prepares \
             concurrently), so a depth-one lane whose host work per run exceeds `D + R` is \
             host-bound too: `T1 = max(D + R, H1)`. `D`, `R`, `g`, `H` and `H1` come from the \
             simulator's cost table (`backend-sim/src/costs.rs`; \
             `backend_sim::sweep::Model::from_costs` states each sum):\n"
        );
        let _ = writeln!(
            out,
            "- `D` = workload device time + `run_preamble` ({} us, A8): §5 counts the \
             preamble as device time.",
            us(pre)
        );
        let _ = writeln!(
            out,
            "- `g` = 3 × `task_switch` + 2 × `event_task` = **{} us**: after run N's kernels \
             end, the AICore stream runs N's `core_done` task, the AICPU stream (behind its \
             wait on it) N's boundary task, and N+1's AICore kernel (behind its wait on that \
             boundary) starts: three tasks, each behind a task switch.",
            us(g)
        );
        let _ = writeln!(
            out,
            "- `R` = 2 × `task_switch` + 2 × `event_task` + `host_wakeup` + `read_d2h` + \
             2 × `kernel_launch` + `event_record` + `kernel_start_latency` = **{} us**: N's \
             `core_done` and boundary pass, the blocked host wakes, reads N's timing, status \
             header and result record (one D2H, whose status bytes the status read answers \
             from: decision 0023), launches both kernels with N+1's `core_done` recorded \
             between them (no stream wait on N's boundary: its wait returned), and N+1 starts \
             after the start latency. N+1 was prepared while N ran, and its prepare armed its \
             slot (the H2D, decision 0024); N's finalise follows N+1's launch: none of them is \
             on this path.",
            us(r)
        );
        let _ = writeln!(
            out,
            "- `H` = `prepare` + `write_h2d` + 2 × `kernel_launch` + 2 × `event_record` + \
             2 × `stream_wait` + `event_query` + `read_d2h` + `finalise` = **{} us**: all \
             the lane thread's work per run (§5's `H`); once the host is the bottleneck the \
             boundary has passed when it waits, so the wait is a query. `H1` = `H` − \
             `stream_wait` = **{} us** at depth one, which makes no wait on its predecessor's \
             boundary: where the host bounds both arms, depth one is ahead by that call.\n",
            us(h),
            us(h1)
        );
        out.push_str("### Results\n\n");
        out.push_str(
            "| device time | D | depth one runs/s | queued runs/s | ratio | utilisation 1 → 2 \
             | mean gap 1 → 2 (us) | model T1 runs/s | model T2 runs/s | model ratio | queued / model |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let mut worst: Option<(f64, f64)> = None;
        for p in points(self.sweep)? {
            let (one, two) = (&p["depth_one"], &p["queued"]);
            let of_model = num(p, "queued_of_model")?;
            let device_us = num(p, "workload_device_ns")? / 1_000.0;
            if worst.is_none_or(|(w, _)| of_model < w) {
                worst = Some((of_model, device_us));
            }
            let _ = writeln!(
                out,
                "| {device_us} us{} | {} us | {:.0} | {:.0} | {:.3} | {} → {} | {} → {} | {:.0} | {:.0} | {:.3} | {:.2}% |",
                if p["host_bound"] == true {
                    " (host-bound)"
                } else {
                    ""
                },
                us(num(p, "d_ns")?),
                num(one, "runs_per_s")?,
                num(two, "runs_per_s")?,
                num(p, "ratio")?,
                pct(num(one, "utilisation")?),
                pct(num(two, "utilisation")?),
                us(num(one, "mean_gap_ns")?),
                us(num(two, "mean_gap_ns")?),
                num(p, "model_depth_one_runs_per_s")?,
                num(p, "model_queued_runs_per_s")?,
                num(p, "model_ratio")?,
                of_model * 100.0
            );
        }
        out.push('\n');
        if let Some((w, at)) = worst {
            let _ = writeln!(
                out,
                "**The queued lane reaches {:.2}% of the model's ideal throughput at worst \
                 ({at} us)**: the target is 99% at every point. The simulator's costs are the \
                 model's inputs, so what this checks is that the lane adds no serialisation \
                 the model does not count: a queued launch that waited for the predecessor's \
                 finalise, or an await that waited for the successor's launch, would show as \
                 a shortfall here.\n",
                w * 100.0
            );
        }
        let _ = writeln!(
            out,
            "Reading it: below about {} us of device time, the host's work per run exceeds \
             even the depth-one period (`H1 > D + R`): both arms are host-bound and queueing \
             buys nothing (§5(c): expect ≈0% and do not read it as a failed lane; depth one is \
             ahead there by the stream wait it does not make, `H − H1`). Up to about \
             {} us (`D + g = H`) the queued lane is host-bound while depth one still pays `R`, \
             so the gain peaks where the two meet. Beyond, both are device-bound, the device \
             idles `g` between queued runs instead of `R`, and the gain falls as \
             `(D + R) / (D + g) ≈ 1 + (R − g) / D`.\n",
            us(h1 - r - pre),
            us(h - g - pre)
        );
        out.push_str(
            "![Speedup of queued depth two over depth one against device time per run]\
             (performance-speedup.svg)\n\n",
        );
        Ok(())
    }

    /// Arm 3 of the sweep: copies on the streams, the runner's prepare and finalise on host
    /// workers, each point against its own model.
    fn offloaded(&self, out: &mut String) -> Result<(), String> {
        let model = &self.sweep["model"];
        let offload = &self.sweep["offload"];
        let (g, g3, l, w, c, h, launch) = (
            num(model, "g_ns")?,
            num(model, "g3_ns")?,
            num(model, "l_ns")?,
            num(model, "w_ns")?,
            num(model, "c_ns")?,
            num(model, "h_ns")?,
            num(model, "launch_ns")?,
        );
        let (p, f, wake) = (
            num(model, "prepare_ns")?,
            num(model, "finalise_ns")?,
            num(model, "wakeup_ns")?,
        );
        let (slots, window, workers) = (
            num(offload, "slots")?,
            num(offload, "prepare_window")?,
            num(offload, "workers")?,
        );
        out.push_str("### Arm 3: copies on the streams, runner work on host workers\n\n");
        let _ = writeln!(
            out,
            "The same sweep runs a third arm in the same invocation: queued at depth two with \
             the arm and status copies queued on the run's streams from pinned host memory \
             (`CopyPath::OnStream`) and the runner's prepare and finalise on {workers} virtual \
             host workers (`backend_sim::workers`: worker tracks in virtual time, shown in \
             the Perfetto trace beside the copy tasks on the stream tracks), on the a2a3 \
             profile with {slots} slots and a prepare window of {window}: the fake-bench's \
             third arm below. The simulated lane runs exactly as lane-service's does \
             (`WorkerLoop`): every device wait (each run's completion, the recovery drain) is \
             made by the completion waiter on a track of its own (`lane_driver::run_device_wait`, \
             the function lane-service's waiter thread runs), and the lane thread never waits on \
             the device: with nothing to execute it sleeps until the next answer, a worker's or \
             the waiter's (the workers' first when both have come). Every sleep ends in a \
             `host_wakeup`; a worker woken for a job and the waiter woken for a wait pay one \
             too. Its model extends §5(c): the period is the slowest of the device, the lane \
             thread, the workers, the prepare chain and the waiter, `T3 = max(D + g3, L, W, C, \
             V)` (each sum is written out in `Model::from_costs`):\n"
        );
        let _ = writeln!(
            out,
            "- `g3` = **{} us** (`g` = {} us): the device idle between queued runs. On the \
             AICore stream the predecessor's completion event, the successor's arm copy and \
             its \"armed\" record now sit between the kernels, each behind a task switch \
             (4·`task_switch` + 2·`event_task` + `copy_task`); the AICPU stream's readback \
             copy, completion event and wait for \"armed\" finish within that.",
            us(g3),
            us(g)
        );
        let _ = writeln!(
            out,
            "- `L` = **{} us**: the lane thread's calls per run: two copy enqueues, three \
             event records, the stream wait, two launches and a wake-up for each of the run's \
             three answers (its prepare, its completion, its finalise); it makes no wait (the \
             status read from pinned memory and the hand-offs cost no modelled host time). `V` \
             = **{} us**: the waiter's per run, a wake-up for the wait, one when the AICPU \
             event passes, a query of the AICore event.",
            us(l),
            us(num(model, "v_ns")?)
        );
        let _ = writeln!(
            out,
            "- `W` = **{} us**: max((`prepare` + `finalise` + 2 wake-ups) / workers, \
             (`prepare` + a wake-up) / min(workers, window)) = max(({} + {} + 2·{}) / \
             {workers}, ({} + {}) / {}) us.",
            us(w),
            us(p),
            us(f),
            us(wake),
            us(p),
            us(wake),
            workers.min(window)
        );
        let _ = writeln!(
            out,
            "- `C` = **{} us**: the prepare chain. Where the host bounds the lane, every launch \
             waits on its prepare, and a prepare is handed out only when a place in the \
             prepare window frees, which is when a run launches ({slots} slots = depth two + \
             the window, so its slot is free by then: the finalise that frees it runs while \
             the lane thread launches). From one launch, the prepare it lets in costs a \
             worker's wake-up and `prepare`, then the lane thread wakes for the answer and \
             makes its launch calls ({} us): (2·{} + {} + {}) / {window} us, as the {window} \
             window places run such chains side by side. That is the chain with a free worker \
             for every prepare, so `T3` is a lower bound there: the lane thread sees each \
             completion as soon as the waiter answers, so a run's finalise is handed out in the \
             step that also lets a later run's prepare in, and takes the free worker first \
             (lane-service does the same). `C` < `H` = {} us.\n",
            us(c),
            us(launch),
            us(wake),
            us(p),
            us(launch),
            us(h)
        );
        out.push_str(
            "| device time | depth one runs/s | queued runs/s | arm 3 runs/s | arm 3 / depth one \
             | arm 3 / queued | utilisation 3 | model T3 runs/s | arm 3 / model | bound by |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        );
        let mut worst: Option<(f64, f64)> = None;
        for point in points(self.sweep)? {
            let three = &point["offloaded"];
            let of_model = num(point, "offloaded_of_model")?;
            let device_us = num(point, "workload_device_ns")? / 1_000.0;
            if worst.is_none_or(|(w, _)| of_model < w) {
                worst = Some((of_model, device_us));
            }
            let _ = writeln!(
                out,
                "| {device_us} us | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x | {} | {:.0} | {:.2}% | {} |",
                num(&point["depth_one"], "runs_per_s")?,
                num(&point["queued"], "runs_per_s")?,
                num(three, "runs_per_s")?,
                num(point, "offloaded_ratio")?,
                num(point, "offloaded_over_queued")?,
                pct(num(three, "utilisation")?),
                num(point, "model_offloaded_runs_per_s")?,
                of_model * 100.0,
                point["offloaded_bound"].as_str().unwrap_or("?")
            );
        }
        out.push('\n');
        let first = points(self.sweep)?
            .first()
            .map(|p| -> Result<(f64, f64, f64, &str), String> {
                Ok((
                    num(p, "workload_device_ns")? / 1_000.0,
                    num(p, "offloaded_ratio")?,
                    num(p, "offloaded_over_queued")?,
                    p["offloaded_bound"].as_str().unwrap_or("?"),
                ))
            })
            .transpose()?;
        if let (Some((w, at)), Some((first_us, over_one, over_two, bound))) = (worst, first) {
            let _ = writeln!(
                out,
                "**Arm 3 reaches {:.2}% of its model at worst ({at} us).** Where the device \
                 bounds arm 3 it reaches 99% of its model; at {first_us} us, bound by the {bound}, \
                 it runs {over_one:.2}x depth one ({over_two:.2}x arm 2), short of `T3` because a \
                 finalise can take the worker a prepare on the chain was waiting for. Before the \
                 completion waiter (the lane thread made its own sliced completion waits and \
                 slept for a worker's answer first only when a launch waited on it) this point \
                 reached 100% of `T3` at 2.49x depth one: the lane thread looked at a completion \
                 only after serving the submit that let the next prepare in. The waiter is the \
                 price of queueing under any submit timing (L-18; the C ABI loops below). Where \
                 the host bounds arm 2 (`H > D + g`), arm 3 is faster than arm 2: its lane \
                 thread's calls `L`, its workers `W`, its waiter `V` and its chain `C` are each \
                 below `H`. Where the device bounds both, arm 3 is slower than arm 2 by exactly \
                 the copies' stream tasks: arm 3 / arm 2 = `(D + g) / (D + g3)` (the copies \
                 moved off the host sit between the kernels on the device). \
                 `backend-sim/tests/sweep.rs` checks each of these.\n",
                w * 100.0
            );
        }
        Ok(())
    }

    fn jitter(&self, out: &mut String) -> Result<(), String> {
        let _ = writeln!(
            out,
            "### With per-run jitter\n\n\
             The same sweep with each run's device time drawn uniformly from ±{JITTER_PCT}% \
             (`--jitter-pct {JITTER_PCT}`), around the point where `D + g` crosses `H`:\n"
        );
        out.push_str(
            "| device time | queued runs/s | model T2 runs/s | queued / model | E[max] runs/s | queued / E[max] |\n\
             |---:|---:|---:|---:|---:|---:|\n",
        );
        for p in points(self.jitter)? {
            let queued = num(&p["queued"], "runs_per_s")?;
            let jittered = num(p, "model_queued_jitter_runs_per_s")?;
            let _ = writeln!(
                out,
                "| {} us | {:.0} | {:.0} | {:.2}% | {:.0} | {:.2}% |",
                num(p, "workload_device_ns")? / 1_000.0,
                queued,
                num(p, "model_queued_runs_per_s")?,
                num(p, "queued_of_model")? * 100.0,
                jittered,
                queued / jittered * 100.0
            );
        }
        out.push_str(
            "\nNear the crossing the queued lane falls below the model, and that is the model, \
             not the lane: `T2 = max(D + g, H)` takes the mean device time, but each run \
             costs `max(D_i + g, H)`. A run shorter than `H` leaves the device idle while the \
             host finishes the next one, and the two-deep queue cannot bank that idle time \
             for a later, longer run, so the period tends to `E[max(D_i + g, H)]` (the \
             **E[max]** column, `Model::queued_period_with_jitter_ns`), which is above \
             `max(E[D] + g, H)` wherever some runs are host-bound and others device-bound \
             (Jensen's inequality). Away from the crossing every run is on the same side and \
             the two agree.\n\n",
        );
        Ok(())
    }

    fn layout(&self, out: &mut String) -> Result<(), String> {
        let before = &self.previous["model"];
        let after = &self.sweep["model"];
        out.push_str("### The slot layout: one copy to arm a run, one to read back\n\n");
        let _ = writeln!(
            out,
            "Each slot has one device allocation (handshake, timing buffer, status header, \
             result record, in that order: `lane_driver::HANDSHAKE_OFFSET`), so one H2D clears \
             handshake, timing and header before a launch, and one D2H, the completion \
             waiter's, reads timing, header and record after completion; the status read \
             answers from those bytes ([decision 0023](decisions/0023-status-read-with-the-record.md)). \
             The H2D is made at the run's prepare, while its predecessor still runs \
             ([decision 0024](decisions/0024-arm-at-prepare.md)), so at depth one only the \
             read is on the round trip `R`; both are in the host work `H`. Each small \
             synchronous copy is a ~9.5 us driver round trip whatever its size (A1). Before, \
             a run paid two copies each way: the handshake, timing buffer and header were \
             separate allocations (two H2D to arm, at the launch), and the record and the \
             status were read apart (two D2H). The sweep with `{}`, one copy each way at twice \
             the price, shows what two copies each way would cost this lane: `R` {} → {} us, \
             `H` {} → {} us. (It reproduced the older builds' runs/s while they armed at the \
             launch: checked at decision 0023 against the build before it. Since decision \
             0024 the write is off `R`, so the older builds' depth one was slower than this \
             column.)\n",
            PREVIOUS_LAYOUT_COSTS.join(" "),
            us(num(before, "r_ns")?),
            us(num(after, "r_ns")?),
            us(num(before, "h_ns")?),
            us(num(after, "h_ns")?),
        );
        out.push_str(
            "| device time | two copies each way: depth one / queued runs/s | one copy each way: depth one / queued runs/s | depth-one gain | queued gain |\n\
             |---:|---:|---:|---:|---:|\n",
        );
        for (old, new) in points(self.previous)?.iter().zip(points(self.sweep)?) {
            let (old_1, new_1) = (
                num(&old["depth_one"], "runs_per_s")?,
                num(&new["depth_one"], "runs_per_s")?,
            );
            let (old_2, new_2) = (
                num(&old["queued"], "runs_per_s")?,
                num(&new["queued"], "runs_per_s")?,
            );
            let _ = writeln!(
                out,
                "| {} us | {old_1:.0} / {old_2:.0} | {new_1:.0} / {new_2:.0} | {:+.1}% | {:+.1}% |",
                num(new, "workload_device_ns")? / 1_000.0,
                (new_1 / old_1 - 1.0) * 100.0,
                (new_2 / old_2 - 1.0) * 100.0
            );
        }
        out.push_str(
            "\nTwo copies each way meet their own model as well: the copies are not a \
             serialisation the model misses, they are in `R` (the read) and `H` (both). \
             Removing one of each raises the host-bound ceiling (queued and depth one alike) \
             and shortens the depth-one round trip; where the queued lane is device-bound it \
             was already at `D + g`. The queued/depth-one ratio falls a little, because depth \
             one gains the most from a shorter round trip.\n",
        );
        Ok(())
    }
}

// ----- docs/performance-speedup.svg -------------------------------------------------------

/// The plot's frame, in SVG user units.
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

/// A line chart of speedup (queued over depth-one runs/s) against device time per run, on a
/// log x axis: the measured sweep, the model's curve, and the jittered sweep's points.
fn speedup_svg(sweep: &Value, jitter: &Value) -> Result<String, String> {
    let model = &sweep["model"];
    let (pre, r, g, h) = (
        num(model, "preamble_ns")?,
        num(model, "r_ns")?,
        num(model, "g_ns")?,
        num(model, "h_ns")?,
    );
    let series = |sweep: &Value| -> Result<Vec<(f64, f64)>, String> {
        points(sweep)?
            .iter()
            .map(|p| Ok((num(p, "workload_device_ns")? / 1_000.0, num(p, "ratio")?)))
            .collect()
    };
    let measured = series(sweep)?;
    let jittered = series(jitter)?;
    // Arm 3 (copies on the streams, runner work on workers) over depth one, and its model.
    let offloaded: Vec<(f64, f64)> = points(sweep)?
        .iter()
        .map(|p| {
            Ok((
                num(p, "workload_device_ns")? / 1_000.0,
                num(p, "offloaded_ratio")?,
            ))
        })
        .collect::<Result<_, String>>()?;
    // The model's own terms (backend-sim's `Model::from_costs`), so the curve is T3 exactly.
    let (g3, l, w, c) = (
        num(model, "g3_ns")?,
        num(model, "l_ns")?,
        num(model, "w_ns")?,
        num(model, "c_ns")?,
    );
    let (x_min, x_max) = measured
        .iter()
        .chain(&jittered)
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), (x, _)| {
            (lo.min(*x), hi.max(*x))
        });
    if !(x_min > 0.0 && x_max > x_min) {
        return Err("the sweep needs at least two device times to plot".to_owned());
    }
    // The model's speedup on a fine grid (it has corners where D + R and D + g cross H).
    let model_speedup = |us: f64| {
        let d = us * 1_000.0 + pre;
        (d + r).max(h) / (d + g).max(h)
    };
    let steps = 200;
    let curve: Vec<(f64, f64)> = (0..=steps)
        .map(|i| {
            let x = x_min * (x_max / x_min).powf(f64::from(i) / f64::from(steps));
            (x, model_speedup(x))
        })
        .collect();
    let curve3: Vec<(f64, f64)> = curve
        .iter()
        .map(|(x, _)| {
            let d = x * 1_000.0 + pre;
            (*x, (d + r).max(h) / (d + g3).max(l).max(w).max(c))
        })
        .collect();
    // A shape or cost table can put arm 3 below depth one: the axis spans every series and
    // 1x.
    let (y_floor, y_top) = measured
        .iter()
        .chain(&jittered)
        .chain(&curve)
        .chain(&curve3)
        .chain(&offloaded)
        .fold((1.0_f64, 1.0_f64), |(lo, hi), (_, y)| {
            (lo.min(*y), hi.max(*y))
        });
    let y_max = (y_top * 10.0).ceil() / 10.0 + 0.05;
    let y_low = (y_floor * 10.0).floor() / 10.0;
    let (y_min, plot_w, plot_h) = (y_low - 0.05, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |x: f64| LEFT + (x / x_min).ln() / (x_max / x_min).ln() * plot_w;
    let py = |y: f64| TOP + (y_max - y) / (y_max - y_min) * plot_h;
    let path = |pts: &[(f64, f64)]| {
        pts.iter()
            .enumerate()
            .map(|(i, (x, y))| {
                format!(
                    "{}{:.1},{:.1}",
                    if i == 0 { "M" } else { " L" },
                    px(*x),
                    py(*y)
                )
            })
            .collect::<String>()
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">Speedup over depth one: queued depth two, and arm 3 (simulator)</text>"#,
        WIDTH / 2.0
    );
    // Grid and tick labels.
    for x in [
        10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
    ] {
        if x < x_min * 0.999 || x > x_max * 1.001 {
            continue;
        }
        let _ = writeln!(
            svg,
            r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#ddd"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{x}</text>"##,
            px(x),
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
    }
    let mut y = y_low;
    while y <= y_max + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{y:.1}×</text>"##,
            py(y),
            LEFT + plot_w,
            LEFT - 8.0,
            py(y) + 4.0
        );
        y += 0.1;
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">device time per run (us, log scale; the per-run preamble comes on top)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 22.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(22,{:.1}) rotate(-90)" text-anchor="middle">speedup: runs/s ÷ depth-one runs/s</text>"#,
        TOP + plot_h / 2.0
    );
    // Series: the model (a dashed curve), the measured sweep (dots: joining them with lines
    // would invent values between the points), the jittered sweep (squares).
    let _ = writeln!(
        svg,
        r##"<path d="{}" fill="none" stroke="#888" stroke-width="2" stroke-dasharray="6,4"/>"##,
        path(&curve)
    );
    for (x, y) in &measured {
        let _ = writeln!(
            svg,
            r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="#1f5fbf"/>"##,
            px(*x),
            py(*y)
        );
    }
    let _ = writeln!(
        svg,
        r##"<path d="{}" fill="none" stroke="#2e8b57" stroke-width="2" stroke-dasharray="2,3"/>"##,
        path(&curve3)
    );
    for (x, y) in &offloaded {
        let _ = writeln!(
            svg,
            r##"<path d="M{:.1},{:.1} l5,8 l-10,0 z" fill="#2e8b57"/>"##,
            px(*x),
            py(*y) - 5.0
        );
    }
    for (x, y) in &jittered {
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="none" stroke="#c0392b" stroke-width="1.5"/>"##,
            px(*x) - 3.5,
            py(*y) - 3.5
        );
    }
    // Legend.
    let (lx, ly) = (LEFT + plot_w - 290.0, TOP + 16.0);
    let _ = writeln!(
        svg,
        r##"<circle cx="{}" cy="{ly}" r="4" fill="#1f5fbf"/><text x="{}" y="{}">measured (no jitter)</text>"##,
        lx + 15.0,
        lx + 40.0,
        ly + 4.0
    );
    let _ = writeln!(
        svg,
        r##"<line x1="{lx}" y1="{}" x2="{}" y2="{}" stroke="#888" stroke-width="2" stroke-dasharray="6,4"/><text x="{}" y="{}">model: max(D+R, H) / max(D+g, H)</text>"##,
        ly + 20.0,
        lx + 30.0,
        ly + 20.0,
        lx + 40.0,
        ly + 24.0
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{}" y="{}" width="7" height="7" fill="none" stroke="#c0392b" stroke-width="1.5"/><text x="{}" y="{}">measured, ±{JITTER_PCT}% jitter per run</text>"##,
        lx + 11.5,
        ly + 36.5,
        lx + 40.0,
        ly + 44.0
    );
    let _ = writeln!(
        svg,
        r##"<path d="M{:.1},{:.1} l5,8 l-10,0 z" fill="#2e8b57"/><text x="{}" y="{}">arm 3: copies on streams + workers</text>"##,
        lx + 15.0,
        ly + 55.0,
        lx + 40.0,
        ly + 64.0
    );
    let _ = writeln!(
        svg,
        r##"<line x1="{lx}" y1="{}" x2="{}" y2="{}" stroke="#2e8b57" stroke-width="2" stroke-dasharray="2,3"/><text x="{}" y="{}">arm 3 model: max(D+R, H) / max(D+g3, L, W, C)</text>"##,
        ly + 80.0,
        lx + 30.0,
        ly + 80.0,
        lx + 40.0,
        ly + 84.0
    );
    svg.push_str("</svg>\n");
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_line_says_whether_an_idle_cpu_halts_at_once() {
        assert_eq!(
            describe_idle("haltpoll", Some("0\n")),
            "cpuidle haltpoll: an idle CPU halts at once, with no guest polling"
        );
        assert_eq!(
            describe_idle("haltpoll", Some("200000")),
            "cpuidle haltpoll: an idle CPU polls up to 200000 ns before it halts"
        );
        assert_eq!(describe_idle("intel_idle", None), "cpuidle intel_idle");
    }

    #[test]
    fn divan_tables_parse_into_paths_and_medians() {
        let text = "\
lane                                     fastest       │ slowest       │ median        │ mean          │ samples │ iters
├─ full_run_cycle                                      │               │               │               │         │
│  ├─ a2a3                               500.4 ns      │ 8.044 µs      │ 660.9 ns      │ 761.8 ns      │ 100     │ 100
│  ╰─ depth-one                          304.9 ns      │ 1.685 µs      │ 1.5 µs        │ 623.6 ns      │ 100     │ 400
╰─ full_run_cycle_with_invariant_checks  570.4 ns      │ 2.123 µs      │ 750.4 ns      │ 751.3 ns      │ 100     │ 100
Timer precision: 20 ns
";
        assert_eq!(
            parse_divan(text),
            [
                ("lane::full_run_cycle::a2a3".to_owned(), 660.9),
                ("lane::full_run_cycle::depth-one".to_owned(), 1_500.0),
                (
                    "lane::full_run_cycle_with_invariant_checks".to_owned(),
                    750.4
                ),
            ]
        );
    }

    #[test]
    fn dates_come_out_in_the_civil_calendar() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34 UTC, a leap day.
        assert_eq!(utc_date(951_827_640), "2000-02-29 12:34 UTC");
    }

    #[test]
    fn the_plot_has_both_axes_labelled_and_every_series() {
        let point = |us: f64, ratio: f64| serde_json::json!({ "workload_device_ns": us * 1_000.0, "ratio": ratio, "offloaded_ratio": ratio * 0.95 });
        let sweep = serde_json::json!({
            "model": {
                "preamble_ns": 9_000, "r_ns": 44_400, "g_ns": 3_800, "h_ns": 128_000,
                "g3_ns": 8_600, "l_ns": 37_000, "w_ns": 50_000, "c_ns": 51_500,
            },
            "points": [point(20.0, 1.0), point(250.0, 1.15), point(5_000.0, 1.008)],
        });
        let jitter = serde_json::json!({ "points": [point(115.0, 1.28)] });
        let svg = speedup_svg(&sweep, &jitter).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("device time per run (us, log scale"));
        assert!(svg.contains("speedup: runs/s ÷ depth-one runs/s"));
        assert_eq!(
            svg.matches("<circle").count(),
            3 + 1,
            "three points and the legend"
        );
        assert!(svg.contains("stroke-dasharray"), "the model's curve");
        assert_eq!(
            svg.matches("l5,8 l-10,0 z").count(),
            3 + 1,
            "arm 3's three points and the legend"
        );
        assert!(svg.contains("max(D+g3, L, W, C)"), "arm 3's model curve");
        // Arm 3 at 0.95x depth one: the y axis reaches below 1x to show it.
        assert!(svg.contains(">0.9×<"), "y tick below 1x");
        for tick in [">20<", ">100<", ">1000<", ">5000<"] {
            assert!(svg.contains(tick), "x tick {tick}");
        }
    }
}
