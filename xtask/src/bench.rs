//! `cargo xtask bench [--repeat N]`: runs the micro-benchmarks (divan, in the pure crates'
//! `benches/`) and the simulator's before/after sweep (`lane-sim sweep --json`), then writes
//! their figures to docs/data/bench.json (rendered into docs/performance.md) and
//! docs/performance-speedup.svg (queued over depth-one speedup against device time).
//!
//! Timings on a shared VM swing with the other work on it, and noise only ever adds time,
//! so each benchmark binary runs `--repeat` times and the data keep the lowest median and
//! the slowest. Where valgrind is installed, each benchmark's instructions per iteration are
//! counted too (cachegrind): they do not swing.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::{cargo, perf, project_root};

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
const CHECKED_MEASURES: &str = "the a2a3 cycle with `check_invariants` after every event (the \
                                simulator's and fuzzers' price, and lane-service's default; \
                                the C ABI's is off)";

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
    let provenance = perf::provenance("cargo xtask bench");
    eprintln!("xtask bench: micro-benchmarks, {repeat} runs of each binary");
    let medians = micro_medians(&root, repeat)?;
    let instructions = instruction_counts(&root);
    eprintln!("xtask bench: the simulator sweeps");
    let lane_sim = build_lane_sim(&root)?;
    let sweep = lane_sim_sweep(&lane_sim, &[])?;
    let jitter =
        lane_sim_sweep(&lane_sim, &["--jitter-pct", JITTER_PCT, "--points", JITTER_POINTS])?;
    let previous = lane_sim_sweep(&lane_sim, &PREVIOUS_LAYOUT_COSTS)?;
    let svg = root.join("docs/performance-speedup.svg");
    fs::write(&svg, speedup_svg(&sweep, &jitter)?)
        .map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    let micro = Micro { repeat, medians: &medians, instructions: instructions.as_deref() };
    perf::record("bench", data(&micro, &sweep, &jitter, &previous), provenance)
}

/// Runs a command to completion; its stdout, or an error naming it and its stderr's tail.
fn output(mut command: Command, what: &str) -> Result<String, String> {
    let out = command.output().map_err(|e| format!("could not start {what}: {e}"))?;
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
            command.current_dir(root);
            command.args(["bench", "-p", package, "--bench", bench]);
            let what = format!("`cargo bench -p {package} --bench {bench}`");
            let text = output(command, &what)?;
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
    let valgrind_found =
        Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !valgrind_found {
        eprintln!("xtask bench: valgrind not found, no instruction counts");
        return None;
    }
    let mut counts = Vec::new();
    let checked = ("lane-core", "lane", CHECKED_CYCLE);
    let paths = MICRO.iter().map(|m| (m.package, m.bench, m.path)).chain([checked]);
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
        .args(["--tool=cachegrind", "--cache-sim=no"])
        .arg("--cachegrind-out-file=/dev/null")
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
        .args(["build", "--release", "-p", "backend-sim"])
        .args(["--bin", "lane-sim", "--message-format", "json"])
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
    sweep["points"].as_array().ok_or_else(|| "the sweep's JSON has no `points`".to_owned())
}

// ----- docs/data/bench.json ---------------------------------------------------------------

/// The micro-benchmarks' figures: runs of each binary, each benchmark's medians, and its
/// instructions per iteration where valgrind counted them.
struct Micro<'a> {
    repeat: u32,
    medians: &'a Medians,
    instructions: Option<&'a [(String, u64)]>,
}

/// `v` as a number; NaN where it is not one.
fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `v` times `by`; null where `v` is not a number.
fn scaled(v: &Value, by: f64) -> Value {
    v.as_f64().map_or(Value::Null, |x| json!(x * by))
}

/// The lowest of `values[key]` over `rows` (each a fraction of its model) and the device
/// time (us) it was at.
fn worst(rows: &[Value], key: &str) -> Option<(f64, Value)> {
    rows.iter()
        .filter_map(|p| Some((p[key].as_f64()?, p["device_us"].clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// The figures as data (docs/data/bench.json): what docs/performance.md's tables show.
fn data(micro: &Micro<'_>, sweep: &Value, jitter: &Value, previous: &Value) -> Value {
    let rows = MICRO.iter().map(|m| (m.path, m.measures, m.target_ns)).chain([(
        CHECKED_CYCLE,
        CHECKED_MEASURES,
        None,
    )]);
    let mut cycle = None;
    let micro_rows: Vec<Value> = rows
        .filter_map(|(path, measures, target)| {
            let values = &micro.medians.iter().find(|(p, _)| p == path)?.1;
            let best = values.iter().copied().fold(f64::INFINITY, f64::min);
            if path == "lane::full_run_cycle::a2a3" {
                cycle = Some(best);
            }
            let instructions = micro
                .instructions
                .and_then(|counts| counts.iter().find(|(p, _)| p == path))
                .map(|(_, n)| n);
            Some(json!({
                "benchmark": path,
                "measures": measures,
                "target_ns": target,
                "met": target.map(|t| best <= t),
                "median_ns": best,
                "slowest_ns": values.iter().copied().fold(0.0, f64::max),
                "instructions": instructions,
            }))
        })
        .collect();
    let model = &sweep["model"];
    let us = |key: &str| scaled(&model[key], 1e-3);
    let ns = |key: &str| number(&model[key]);
    let h = ns("h_ns");
    let cycle = cycle.unwrap_or(f64::NAN);
    let point = |p: &Value| {
        let (one, two, three) = (&p["depth_one"], &p["queued"], &p["offloaded"]);
        json!({
            "device_us": scaled(&p["workload_device_ns"], 1e-3),
            "host_bound": p["host_bound"],
            "d_us": scaled(&p["d_ns"], 1e-3),
            "one_runs_per_s": one["runs_per_s"],
            "two_runs_per_s": two["runs_per_s"],
            "ratio": p["ratio"],
            "one_util_pct": scaled(&one["utilisation"], 100.0),
            "two_util_pct": scaled(&two["utilisation"], 100.0),
            "one_gap_us": scaled(&one["mean_gap_ns"], 1e-3),
            "two_gap_us": scaled(&two["mean_gap_ns"], 1e-3),
            "t1_runs_per_s": p["model_depth_one_runs_per_s"],
            "t2_runs_per_s": p["model_queued_runs_per_s"],
            "model_ratio": p["model_ratio"],
            "two_of_model_pct": scaled(&p["queued_of_model"], 100.0),
            "three_runs_per_s": three["runs_per_s"],
            "three_over_one": p["offloaded_ratio"],
            "three_over_two": p["offloaded_over_queued"],
            "three_util_pct": scaled(&three["utilisation"], 100.0),
            "t3_runs_per_s": p["model_offloaded_runs_per_s"],
            "three_of_model_pct": scaled(&p["offloaded_of_model"], 100.0),
            "bound_by": p["offloaded_bound"],
        })
    };
    let list = |sweep: &Value| sweep["points"].as_array().cloned().unwrap_or_default();
    let points: Vec<Value> = list(sweep).iter().map(point).collect();
    let check = |name: &str, key: &str, target: Option<f64>| {
        worst(&points, key).map(|(pct, at)| {
            json!({
                "check": name,
                "worst_pct": pct,
                "at_us": at,
                "target_pct": target,
                "met": target.map(|t| pct >= t),
            })
        })
    };
    let jitter: Vec<Value> = list(jitter)
        .iter()
        .map(|p| {
            let queued = number(&p["queued"]["runs_per_s"]);
            let emax = number(&p["model_queued_jitter_runs_per_s"]);
            json!({
                "device_us": scaled(&p["workload_device_ns"], 1e-3),
                "two_runs_per_s": queued,
                "t2_runs_per_s": p["model_queued_runs_per_s"],
                "two_of_model_pct": scaled(&p["queued_of_model"], 100.0),
                "emax_runs_per_s": emax,
                "two_of_emax_pct": queued / emax * 100.0,
            })
        })
        .collect();
    let layouts: Vec<Value> = list(previous)
        .iter()
        .zip(list(sweep))
        .map(|(old, new)| {
            let runs = |p: &Value, arm: &str| number(&p[arm]["runs_per_s"]);
            json!({
                "device_us": scaled(&new["workload_device_ns"], 1e-3),
                "before_one": runs(old, "depth_one"),
                "before_two": runs(old, "queued"),
                "after_one": runs(&new, "depth_one"),
                "after_two": runs(&new, "queued"),
                "one_gain_pct": (runs(&new, "depth_one") / runs(old, "depth_one") - 1.0) * 100.0,
                "two_gain_pct": (runs(&new, "queued") / runs(old, "queued") - 1.0) * 100.0,
            })
        })
        .collect();
    let offload = &sweep["offload"];
    json!({
        "settings": {
            "repeat": micro.repeat,
            "instructions_counted": micro.instructions.is_some(),
            "runs": sweep["runs"],
            "warmup_runs": sweep["warmup_runs"],
            "workers": offload["workers"],
            "slots": offload["slots"],
            "prepare_window": offload["prepare_window"],
            "jitter_pct": JITTER_PCT,
            "jitter_points": JITTER_POINTS,
            "two_copies": PREVIOUS_LAYOUT_COSTS.join(" "),
        },
        "micro": micro_rows,
        "lane_run": {
            "cycle_ns": cycle,
            "device_call_us": DEVICE_CALL_NS / 1e3,
            "of_device_call_pct": cycle / DEVICE_CALL_NS * 100.0,
            "h_us": h / 1e3,
            "of_h_pct": cycle / h * 100.0,
            "step_ns": cycle / 6.0,
            "step_of_device_call_pct": cycle / 6.0 / DEVICE_CALL_NS * 100.0,
        },
        "model": {
            "preamble_us": us("preamble_ns"),
            "g_us": us("g_ns"),
            "r_us": us("r_ns"),
            "h_us": us("h_ns"),
            "h1_us": us("h1_ns"),
            "g3_us": us("g3_ns"),
            "l_us": us("l_ns"),
            "v_us": us("v_ns"),
            "w_us": us("w_ns"),
            "c_us": us("c_ns"),
            "prepare_us": us("prepare_ns"),
            "finalise_us": us("finalise_ns"),
            "wakeup_us": us("wakeup_ns"),
            "launch_us": us("launch_ns"),
            "both_host_bound_below_us": (ns("h1_ns") - ns("r_ns") - ns("preamble_ns")) / 1e3,
            "queued_host_bound_below_us": (h - ns("g_ns") - ns("preamble_ns")) / 1e3,
        },
        "points": points,
        "checks": [
            check("queued / model T2", "two_of_model_pct", Some(99.0)),
            check("arm 3 / model T3", "three_of_model_pct", None),
        ],
        "jitter": jitter,
        "two_copies": {
            "r_us": [scaled(&previous["model"]["r_ns"], 1e-3), us("r_ns")],
            "h_us": [scaled(&previous["model"]["h_ns"], 1e-3), us("h_ns")],
        },
        "layouts": layouts,
    })
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
    let [pre, r, g, h] = ["preamble_ns", "r_ns", "g_ns", "h_ns"].map(|key| num(model, key));
    let (pre, r, g, h) = (pre?, r?, g?, h?);
    let series = |sweep: &Value, ratio: &str| -> Result<Vec<(f64, f64)>, String> {
        points(sweep)?
            .iter()
            .map(|p| Ok((num(p, "workload_device_ns")? / 1_000.0, num(p, ratio)?)))
            .collect()
    };
    let measured = series(sweep, "ratio")?;
    let jittered = series(jitter, "ratio")?;
    // Arm 3 (copies on the streams, runner work on workers) over depth one, and its model.
    let offloaded = series(sweep, "offloaded_ratio")?;
    // The model's own terms (backend-sim's `Model::from_costs`), so the curve is T3 exactly.
    let [g3, l, w, c] = ["g3_ns", "l_ns", "w_ns", "c_ns"].map(|key| num(model, key));
    let (g3, l, w, c) = (g3?, l?, w?, c?);
    let (x_min, x_max) = measured
        .iter()
        .chain(&jittered)
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
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
        .fold((1.0_f64, 1.0_f64), |(lo, hi), (_, y)| (lo.min(*y), hi.max(*y)));
    let y_max = (y_top * 10.0).ceil() / 10.0 + 0.05;
    let y_low = (y_floor * 10.0).floor() / 10.0;
    let (y_min, plot_w, plot_h) = (y_low - 0.05, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |x: f64| LEFT + (x / x_min).ln() / (x_max / x_min).ln() * plot_w;
    let py = |y: f64| TOP + (y_max - y) / (y_max - y_min) * plot_h;
    let path = |pts: &[(f64, f64)]| {
        pts.iter()
            .enumerate()
            .map(|(i, (x, y))| {
                format!("{}{:.1},{:.1}", if i == 0 { "M" } else { " L" }, px(*x), py(*y))
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
    for x in [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0] {
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
                ("lane::full_run_cycle_with_invariant_checks".to_owned(), 750.4),
            ]
        );
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
        assert_eq!(svg.matches("<circle").count(), 3 + 1, "three points and the legend");
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
