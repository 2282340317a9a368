//! The `lane-sim` command: the default comparison, the trace it writes, the reproduction
//! line, and bad input refused with the problem and the fix (never a panic).

use std::path::PathBuf;
use std::process::{Command, Output};

use backend_sim::cli::Cli;
use backend_sim::workload::ProfileName;
use backend_sim::{SimConfig, run};
use clap::Parser;
use serde_json::Value;

fn lane_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lane-sim")).args(args).output().expect("lane-sim runs")
}

/// `lane-sim` with `args`, parsed.
fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("lane-sim").chain(args))
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lane-sim-test-{}-{name}", std::process::id()))
}

fn arm(depth: u8) -> backend_sim::Report {
    let config = SimConfig { depth: Some(depth), trace: true, ..SimConfig::default() };
    run(&config, &mut |_, _| {}).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_default_workload_queued_keeps_the_device_busier_than_depth_one() {
    let (one, queued) = (arm(1), arm(2));
    for r in [&one, &queued] {
        assert_eq!(r.summary.counts.ok, 200);
        assert_eq!(r.summary.counts.runs(), 200);
    }
    assert_eq!(one.queued_launches, 0, "depth one never queues on the device");
    assert!(queued.queued_launches >= 190, "{}", queued.queued_launches);
    assert!(queued.summary.runs_per_s > one.summary.runs_per_s * 1.1);
    let (g1, gq) = (one.summary.mean_gap_ns.unwrap(), queued.summary.mean_gap_ns.unwrap());
    assert!(gq * 5.0 < g1, "queued gap {gq} ns vs depth-one gap {g1} ns");
    assert!(queued.summary.device_utilisation > one.summary.device_utilisation);
}

/// `(name, pid, tid, ts, end)` of the trace's complete events.
fn spans(json: &str) -> Vec<(String, u64, u64, f64, f64)> {
    let doc: Value = serde_json::from_str(json).expect("trace.json is JSON");
    doc["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                e["name"].as_str().unwrap().to_owned(),
                e["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                ts,
                ts + e["dur"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_trace_has_a_host_track_and_one_per_stream_and_shows_queued_launches() {
    let queued = arm(2);
    let json = backend_sim::trace::chrome_json(&[("queued", &queued.trace, &queued.stream_roles)]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let names: Vec<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"lane thread (calls)".to_owned()), "{names:?}");
    assert!(names.contains(&"stream h1/aicpu".to_owned()), "{names:?}");
    assert!(names.contains(&"stream h2/aicore".to_owned()), "{names:?}");
    let spans = spans(&json);
    let kernel_end = |run: u64| {
        spans.iter().find(|s| s.0 == format!("run {run} aicore") && s.1 == 2).map(|s| s.4).unwrap()
    };
    let launches: Vec<f64> =
        spans.iter().filter(|s| s.0 == "launch_aicore" && s.1 == 1).map(|s| s.3).collect();
    assert_eq!(launches.len(), 200);
    let queued_before_predecessor_ended =
        (1..200).filter(|&n| launches[n] < kernel_end(n as u64)).count();
    assert!(
        queued_before_predecessor_ended >= 190,
        "only {queued_before_predecessor_ended} runs were launched before their predecessor ended"
    );
}

#[test]
fn the_default_command_prints_the_table_and_writes_the_trace() {
    let trace = temp_path("trace.json");
    let text = temp_path("trace.txt");
    let out =
        lane_sim(&["--trace", trace.to_str().unwrap(), "--trace-text", text.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for row in [
        "depth one",
        "queued",
        "runs/s",
        "device utilisation",
        "median inter-run gap",
        "p99 inter-run gap",
        "outcomes",
        "200 ok",
        "queued vs depth one:",
        "open it in https://ui.perfetto.dev",
    ] {
        assert!(stdout.contains(row), "missing '{row}' in:\n{stdout}");
    }
    let json = std::fs::read_to_string(&trace).unwrap();
    assert!(serde_json::from_str::<Value>(&json).is_ok());
    assert!(std::fs::read_to_string(&text).unwrap().contains("launch_aicore"));
    let _ = std::fs::remove_file(trace);
    let _ = std::fs::remove_file(text);
}

#[test]
fn the_reproduction_line_parses_back_to_the_same_simulation() {
    let args = "--seed 42 --profile a5 --depth 2 --runs 17 --device-us 12.5 --jitter-pct 3 \
                --publish-every 4 --diagnostics-after 2,5 --close-after 9 --fault latch=1@run:3 \
                --fault hang@rate:0.01 --cost prepare=61 --swarm --liveness";
    let cli = parse(args.split_whitespace()).unwrap();
    let config = cli.sim.config().unwrap();
    let line = config.repro();
    let args = line.strip_prefix("cargo run --release -- ").expect("a cargo run line");
    let again = parse(args.split(' ')).unwrap();
    assert_eq!(again.sim.config().unwrap(), config, "{line}");
    assert_eq!(config.profile, ProfileName::A5);
}

#[test]
fn bad_options_are_refused_by_the_parser_with_the_fix() {
    let err = |args: &[&str]| parse(args.iter().copied()).unwrap_err().to_string();
    assert!(err(&["--profile", "a9"]).contains("possible values: a2a3, a5"));
    assert!(err(&["--fault", "melt"]).contains("unknown fault kind 'melt'; use one of"));
    assert!(err(&["--fault", "latch=0"]).contains("not a runtime latch code"));
    assert!(err(&["--cost", "warp=1"]).contains("unknown cost 'warp'"));
    assert!(err(&["--runs", "-1"]).contains("invalid value '-1' for '--runs <RUNS>'"));
    assert!(err(&["--seed", "x"]).contains("invalid value 'x' for '--seed <SEED>'"));
}

#[test]
fn impossible_workloads_are_refused_with_the_fix() {
    let config_err = |args: &[&str]| {
        let cli = parse(args.iter().copied()).unwrap();
        match backend_sim::cli::execute(&cli) {
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "{e}");
                e.to_string()
            }
            Ok(_) => panic!("{args:?} was accepted"),
        }
    };
    assert!(config_err(&["--runs", "0"]).contains("give at least one run"));
    assert!(config_err(&["--device-us", "-5"]).contains("not a positive time"));
    assert!(config_err(&["--device-us", "1e15"]).contains("completion timeout"));
    assert!(config_err(&["--jitter-pct", "300"]).contains("give a percentage"));
    assert!(config_err(&["--depth", "3"]).contains("launch depth 3 is outside 1..=2"));
    assert!(config_err(&["--close-after", "0"]).contains("close_after >= 1"));
}

#[test]
fn the_binary_exits_2_on_bad_input_and_1_on_a_failed_check_without_panicking() {
    let out = lane_sim(&["--runs", "0", "--no-trace"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: impossible workload: 0 runs"), "{stderr}");
    assert!(!stderr.contains("panicked"));

    let bad_toml = temp_path("bad.toml");
    std::fs::write(&bad_toml, "name = [").unwrap();
    let out = lane_sim(&["check", bad_toml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not a valid scenario"));

    let wrong = temp_path("wrong.toml");
    std::fs::write(
        &wrong,
        "name = \"wrong\"\n[workload]\nruns = 2\n[expect]\noutcomes = [\"run 1: ok\", \"run 2: cancelled\"]\n",
    )
    .unwrap();
    let out = lane_sim(&["check", wrong.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("- run 2: cancelled\n    + run 2: ok"), "{stdout}");
    let _ = std::fs::remove_file(bad_toml);
    let _ = std::fs::remove_file(wrong);

    let out = lane_sim(&["check", "/nonexistent/x.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot read it"));
}

#[test]
fn check_skips_a_scenario_the_simulator_cannot_express_and_says_why() {
    let acl_only = temp_path("acl-only.toml");
    std::fs::write(
        &acl_only,
        "name = \"acl only\"\nbackends = [\"acl\"]\nbackends_reason = \"needs real threads\"\n\
         [workload]\nruns = 1\n[expect]\noutcomes = [\"run 1: failed\"]\n",
    )
    .unwrap();
    let out = lane_sim(&["check", acl_only.to_str().unwrap()]);
    let _ = std::fs::remove_file(&acl_only);
    assert_eq!(out.status.code(), Some(0), "a skip is not a failure");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("acl only: not on the simulator: needs real threads"), "{stdout}");
    assert!(stdout.contains("1 scenario: 0 passed, 0 failed, 1 not for the simulator"), "{stdout}");
}

#[test]
fn swarm_mode_prints_the_fault_mix_before_running() {
    let args: Vec<_> = "--swarm --seed 5 --runs 20 --depth 2 --no-trace".split(' ').collect();
    let out = lane_sim(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("faults (swarm mix derived from seed 5):"), "{stdout}");
    let mix = backend_sim::faults::swarm(5);
    for rule in &mix {
        assert!(stdout.contains(&format!("--fault {rule}")), "{stdout}");
    }
}
