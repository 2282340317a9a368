//! Project tooling in the rust-analyzer pattern: `cargo xtask <command>`.
//!
//! The alias lives in `.cargo/config.toml`. Checks that must never drift (tidy rules,
//! generated docs being current) are ordinary `#[test]`s here, so `cargo test --workspace`
//! is the single gate and CI needs nothing else.

#![forbid(unsafe_code)]

mod bench;
mod capi_bench;
mod codegen;
mod device_check;
mod dist;
mod docs_budget;
mod file_length;
mod fuzz;
mod mutants;
mod perf;
#[cfg(test)]
mod testkit;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// Crates whose library code must stay pure (SPEC §6): the tidy rules hold them to it, and
/// mutation testing scores their tests.
const PURE_CRATES: &[&str] = &["stream-pair", "status-latch", "lane-core", "device-model"];

const HELP: &str = "\
cargo xtask <command>

Commands:
  bench [--repeat N] run the micro-benchmarks (N runs each, default 3) and the simulator sweep, then
                     write their figures to docs/data/bench.json, render docs/performance.md's
                     tables and write docs/performance-speedup.svg (on a quiet machine)
  fake-bench [--runs N]
                     real time on the fake libascendcl, release builds: the runner loops through
                     the C ABI (a C++ runner on librun_lane.a, each loop at depth two beside depth
                     one, with the fake's floor, the hand-written anchors on the fake's ACL
                     calls and an idle lane's submit to launch, in three processes; then sixteen
                     lanes at once, healthy and beside a hung and a poisoned device), then
                     lane-conformance's `fake-bench` arms; each part writes its figures to
                     docs/data/capi-bench.json or docs/data/fake-bench.json and renders
                     docs/performance.md's tables
  ci                 run what CI runs (.ci/run): fmt check, clippy, docs, `cargo test --workspace`,
                     then `cargo xtask dist --check`
  codegen [--check]  write the generated docs (transition tables, code tables, and the tables of
                     docs/performance.md from docs/data/*.json) into docs/; with --check, only
                     report which files are stale
  docs-budget        print the prose figures of the hand-written docs (words, sentences, median
                     sentence per doc; the total) and fail when a budget is broken
  device-check [--lib PATH] [--device N] [--overrun-mib N] [--overlap-runs N] [--overlap-mib N]
                     on a machine with CANN and an NPU: the probe and the device-side checks that
                     need no kernels (streams, events, timed waits, copies, force reset and probe,
                     devlib refusal), as a report, then the device gap between runs at launch
                     depth one and two (copies stand in for kernels); without them one line and a
                     failure (docs/hardware.md). --lib also takes the fake,
                     target/debug/librun_lane_fake_ascendcl.so
  dist --prefix DIR  install the C ABI (release build) for C++ consumers: include/run_lane.h,
                     lib/librun_lane.a, lib/librun_lane.so.<ABI> (its soname) and the librun_lane.so
                     link, lib/pkgconfig/run_lane.pc, lib/cmake/RunLane/ (RunLane::run_lane,
                     RunLane::run_lane_static; version = ABI major); the libraries stripped
                     by objcopy (the static one of its LLVM bitcode too), their debug
                     information in lib/.debug/ (docs/embedding.md)
  dist --check       install into a temporary prefix, build the C++ example from it with CMake
                     (shared, static) and pkg-config (shared), run each on the simulator and the
                     fake libascendcl, check the libraries are stripped and their debug files
                     not, the static library has no bitcode and is at most 20 MiB, check
                     another ABI major is refused, clean up (CI runs it; needs cmake,
                     pkg-config, make, readelf, objcopy)
  explore [--runs N] [--publications N] [--reservations] [--pair-owners N] [--pair-handles N]
          [--pair-publications N] [--pair-abandons N]
                     the exhaustive explorer with bigger bounds than `cargo test` (release build):
                     the lane on a2a3 and a5 with up to N runs (default 3), a publication and a
                     close, then the stream pair alone at every depth; prints the state counts
  fuzz <target> [--time S]
                     run one cargo-fuzz target (`-s none`, stable toolchain) on fuzz/corpus/<target>
                     and the committed fuzz/seeds/<target>, for S seconds (until a crash or Ctrl-C
                     without --time); a new crash is copied into fuzz/regressions/<target>/
  fuzz-all --time S  each target in turn for S seconds, then executions and new crashes per target
                     (needs cargo-fuzz: `cargo install cargo-fuzz`; CI never runs these)
  mutants [CRATE] [--own-tests] [--timeout S] [--jobs N] [--shard K/N]
                     cargo-mutants on one pure crate (default: stream-pair, status-latch, lane-core
                     in turn), judged by the workspace's tests (--own-tests: the crate's own, faster),
                     S seconds per mutant's tests (default 120), N mutants at once (default 1),
                     only the K-th of N round-robin shards (a sample) with --shard;
                     report in target/mutants/CRATE/mutants.out (needs `cargo install cargo-mutants`)
  help               print this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["bench", rest @ ..] => bench::run(rest),
        ["ci"] => ci(),
        ["fake-bench", rest @ ..] => fake_bench(rest),
        ["docs-budget"] => docs_budget::run(),
        ["device-check", rest @ ..] => device_check::run(rest),
        ["dist", rest @ ..] => dist::run(rest),
        ["codegen"] => codegen::run(codegen::Mode::Write),
        ["codegen", "--check"] => codegen::run(codegen::Mode::Check),
        ["explore", rest @ ..] => explore(rest),
        ["fuzz", target] => fuzz::run(target, None),
        ["fuzz", target, "--time", seconds] => {
            fuzz::parse_time(seconds).and_then(|s| fuzz::run(target, Some(s)))
        }
        ["fuzz-all", "--time", seconds] => fuzz::parse_time(seconds).and_then(fuzz::run_all),
        ["mutants", rest @ ..] => mutants::run(rest),
        [] | ["help"] | ["--help"] | ["-h"] => {
            print!("{HELP}");
            Ok(())
        }
        other => Err(format!(
            "unknown arguments `{}`; run `cargo xtask help` for the list of commands",
            other.join(" ")
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's manifest directory).
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// `cargo xtask fake-bench [--runs N]`: the real-time figures on the fake libascendcl, each
/// part written to its data file as soon as it is measured, so a later failure keeps it:
/// first the runner loops through the C ABI (the C++ bench against the release static library,
/// [`capi_bench`], with its hand-written anchors and its sixteen lanes at once), then
/// lane-conformance's `fake-bench` (the three arms through the Rust API), which prints its
/// figures as JSON.
fn fake_bench(args: &[&str]) -> Result<(), String> {
    let runs = match args {
        [] => None,
        ["--runs", n] => Some(
            n.parse::<u32>()
                .ok()
                .filter(|n| *n > 30)
                .ok_or_else(|| format!("--runs takes a count above 30, not `{n}`"))?,
        ),
        other => {
            return Err(format!(
                "unknown arguments `{}`; use `cargo xtask fake-bench [--runs N]`",
                other.join(" ")
            ));
        }
    };
    let provenance = perf::provenance("cargo xtask fake-bench");
    let commit = provenance["commit"].clone();
    perf::record("capi-bench", capi_bench::run(runs)?, provenance)?;
    // lane-conformance's arms print their figures; their progress goes to the terminal. Their
    // commit is the tree's before the first part's data file changed it.
    let mut provenance = perf::provenance("cargo xtask fake-bench");
    provenance["commit"] = commit;
    let runs: Vec<String> =
        runs.map_or_else(Vec::new, |n| vec!["--runs".to_owned(), n.to_string()]);
    let out = release(&["-p", "lane-conformance", "--bin", "fake-bench"], &runs)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start cargo run: {e}"))?;
    if !out.status.success() {
        return Err(format!("fake-bench failed ({})", out.status));
    }
    let data = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("fake-bench printed no JSON: {e}"))?;
    perf::record("fake-bench", data, provenance)
}

/// `cargo xtask explore ...`: lane-fuzz's `explore` example in a release build, with the
/// arguments as they are (the example parses and documents them).
fn explore(args: &[&str]) -> Result<(), String> {
    let mut explorer = release(&["-p", "lane-fuzz", "--example", "explore"], args);
    run(&mut explorer, "cargo run", "the explorer")
}

/// The cargo that runs xtask, so the same toolchain builds what xtask runs.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}

/// `cargo run --release TARGET... -- ARGS...` at the project root, not started yet.
fn release<S: AsRef<std::ffi::OsStr>>(target: &[&str], args: &[S]) -> Command {
    let mut command = cargo();
    command
        .args(["run", "--release"])
        .args(target)
        .arg("--")
        .args(args)
        .current_dir(project_root());
    command
}

/// Runs `command` with the terminal's output; the error names it as `start` when it cannot
/// start, as `what` when it fails.
fn run(command: &mut Command, start: &str, what: &str) -> Result<(), String> {
    let status = command.status();
    let status = status.map_err(|e| format!("could not start {start}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
}

/// Runs `.ci/run`, so `cargo xtask ci` and CI can never disagree.
fn ci() -> Result<(), String> {
    let mut ci = Command::new("bash");
    ci.arg(".ci/run").current_dir(project_root());
    run(&mut ci, "`bash .ci/run`", "`.ci/run`")
}

/// Fails, saying how to install it (and `more`), unless `cargo <subcommand> --version` runs:
/// the commands that need a cargo plugin check it first.
fn require_cargo(subcommand: &str, more: &str) -> Result<(), String> {
    let found = Command::new("cargo")
        .args([subcommand, "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let plugin = format!("cargo-{subcommand}");
    let error = format!("{plugin} is not installed: run `cargo install {plugin}`{more}");
    if found { Ok(()) } else { Err(error) }
}
