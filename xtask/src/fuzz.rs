//! `cargo xtask fuzz <target> [--time S]` and `cargo xtask fuzz-all --time S`: cargo-fuzz on
//! the stable toolchain (`-s none`: no sanitizer, so no nightly), from `fuzz/`.
//!
//! Each run uses `fuzz/corpus/<target>` (ignored by git; libFuzzer writes new inputs there)
//! and the committed `fuzz/seeds/<target>` (read only). A new crash file under
//! `fuzz/artifacts/<target>/` is copied into `fuzz/regressions/<target>/`, where `cargo test`
//! replays it (and a named test in lane-fuzz/tests/regressions.rs should say why it
//! crashed). CI never runs these commands: it runs the replay and the smoke run instead.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{project_root, require_cargo};

/// What the missing cargo-fuzz message adds.
const STABLE: &str = " (it runs on the stable toolchain: these commands pass `-s none`)";

/// File name prefixes libFuzzer gives the inputs it saves when a run fails.
const FAILURE_PREFIXES: &[&str] = &["crash-", "leak-", "oom-", "timeout-"];

/// What one target's run did.
struct Report {
    target: String,
    executions: Option<u64>,
    new_failures: Vec<PathBuf>,
    success: bool,
}

/// `cargo xtask fuzz <target> [--time S]`: fuzzes one target (until a crash or Ctrl-C when
/// no time is given).
pub(crate) fn run(target: &str, seconds: Option<u64>) -> Result<(), String> {
    let root = project_root();
    check_target(&root, target)?;
    require_cargo("fuzz", STABLE)?;
    let report = fuzz_target(&root, target, seconds)?;
    summarise(&[report])
}

/// `cargo xtask fuzz-all --time S`: every target in turn, then one line per target.
pub(crate) fn run_all(seconds: u64) -> Result<(), String> {
    let root = project_root();
    require_cargo("fuzz", STABLE)?;
    let mut reports = Vec::new();
    for target in targets(&root)? {
        reports.push(fuzz_target(&root, &target, Some(seconds))?);
    }
    summarise(&reports)
}

/// Parses `--time S` (seconds).
pub(crate) fn parse_time(value: &str) -> Result<u64, String> {
    value
        .parse()
        .map_err(|_| format!("--time takes whole seconds, e.g. `--time 600`, not `{value}`"))
}

/// The targets, as `fuzz/Cargo.toml` names its `[[bin]]`s.
fn targets(root: &Path) -> Result<Vec<String>, String> {
    let manifest = root.join("fuzz/Cargo.toml");
    let text = fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    Ok(bin_names(&text))
}

/// The `name` of every `[[bin]]` table in a manifest.
fn bin_names(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            names.push(value.trim().trim_matches('"').to_owned());
        }
    }
    names
}

fn check_target(root: &Path, target: &str) -> Result<(), String> {
    let known = targets(root)?;
    if known.iter().any(|t| t == target) {
        Ok(())
    } else {
        Err(format!("no fuzz target `{target}`; the targets are: {}", known.join(", ")))
    }
}

/// Runs `cargo fuzz run <target> -s none corpus/<target> seeds/<target> --
/// -print_final_stats=1 -max_total_time=S` in `fuzz/`, echoing libFuzzer's output, and
/// collects what it found. The final stats carry the execution count even when a crash
/// comes while the corpus loads, before any status line.
fn fuzz_target(root: &Path, target: &str, seconds: Option<u64>) -> Result<Report, String> {
    let fuzz = root.join("fuzz");
    let corpus = format!("corpus/{target}");
    let seeds = format!("seeds/{target}");
    fs::create_dir_all(fuzz.join(&corpus))
        .map_err(|e| format!("cannot create fuzz/{corpus}: {e}"))?;
    let artifacts = fuzz.join("artifacts").join(target);
    let before = failures_in(&artifacts);

    let mut command = Command::new("cargo");
    command
        .current_dir(&fuzz)
        .args(["fuzz", "run", target, "-s", "none", &corpus, &seeds])
        .args(["--", "-print_final_stats=1"]);
    if let Some(seconds) = seconds {
        command.arg(format!("-max_total_time={seconds}"));
    }
    eprintln!(
        "xtask: fuzzing {target}{}",
        seconds.map_or(String::new(), |s| format!(" for {s} s"))
    );
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start `cargo fuzz run {target}`: {e}"))?;
    let mut executions = None;
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if let Some(n) = executions_in(&line) {
                // Later lines count more: the final stats come last.
                executions = Some(n);
            }
        }
    }
    let status =
        child.wait().map_err(|e| format!("`cargo fuzz run {target}` did not finish: {e}"))?;

    let mut new_failures = Vec::new();
    for artifact in failures_in(&artifacts) {
        if before.contains(&artifact) {
            continue;
        }
        let Some(name) = artifact.file_name() else {
            continue;
        };
        let regressions = root.join("fuzz/regressions").join(target);
        fs::create_dir_all(&regressions)
            .map_err(|e| format!("cannot create {}: {e}", regressions.display()))?;
        let saved = regressions.join(name);
        let (from, to) = (artifact.display(), saved.display());
        fs::copy(&artifact, &saved).map_err(|e| format!("cannot copy {from} to {to}: {e}"))?;
        new_failures.push(saved);
    }
    Ok(Report { target: target.to_owned(), executions, new_failures, success: status.success() })
}

/// libFuzzer's execution count on one line of its output: `stat::number_of_executed_units: N`
/// in the final stats (printed at exit and on a crash, also one during corpus loading, when
/// no status line has come yet), `Done N runs in T second(s)` at the end of a run, or the
/// `#N` that starts each status line.
fn executions_in(line: &str) -> Option<u64> {
    if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
        return rest.trim().parse().ok();
    }
    if let Some(rest) = line.strip_prefix("Done ") {
        return rest.split_whitespace().next()?.parse().ok();
    }
    let rest = line.strip_prefix('#')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = rest.get(digits.len()..)?;
    if digits.is_empty() || !after.starts_with(char::is_whitespace) {
        return None;
    }
    digits.parse().ok()
}

/// The failure inputs libFuzzer saved in `dir`, sorted.
fn failures_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| FAILURE_PREFIXES.iter().any(|p| n.starts_with(p)))
        })
        .collect();
    files.sort();
    files
}

fn summarise(reports: &[Report]) -> Result<(), String> {
    eprintln!("\nxtask: fuzz summary");
    let mut failed = Vec::new();
    for report in reports {
        let executions = report.executions.map_or_else(|| "unknown".to_owned(), |n| n.to_string());
        let found = if report.new_failures.is_empty() {
            "no new crash".to_owned()
        } else {
            let saved: Vec<String> =
                report.new_failures.iter().map(|p| p.display().to_string()).collect();
            format!("NEW CRASH saved to {}", saved.join(", "))
        };
        eprintln!("  {:<24} {executions:>12} executions  {found}", report.target);
        if !report.new_failures.is_empty() || !report.success {
            failed.push(report.target.as_str());
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(failure_advice(&failed)) }
}

/// What to do after a failed run. `cargo fuzz fmt` needs `-s none` on stable, like `run`.
fn failure_advice(failed: &[&str]) -> String {
    format!(
        "fuzzing failed for {}: for each crash in fuzz/regressions/<target>/, add a named \
         test that builds its operations literally (`cargo fuzz fmt -s none <target> <file>` \
         in fuzz/ prints them) to lane-fuzz/tests/regressions.rs, with its root cause, and \
         record it in docs/fuzzing.md",
        failed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{files_under, is_rust};

    #[test]
    fn executions_are_read_from_libfuzzer_output() {
        assert_eq!(executions_in("Done 387216 runs in 16 second(s)"), Some(387_216));
        assert_eq!(
            executions_in("#840\tNEW    cov: 457 ft: 588 corp: 4/21b lim: 11 exec/s: 0"),
            Some(840)
        );
        assert_eq!(
            executions_in("#1048576\tpulse  cov: 600 ft: 2000 corp: 90/3Kb"),
            Some(1_048_576)
        );
        assert_eq!(executions_in("stat::number_of_executed_units: 37"), Some(37));
        assert_eq!(executions_in("stat::peak_rss_mb: 41"), None);
        assert_eq!(executions_in("INFO: Seed: 2804145855"), None);
        assert_eq!(executions_in("#### end of dictionary"), None);
        assert_eq!(executions_in("\tNEW_FUNC[1/30]: 0x5601f3e8dcc1"), None);
    }

    #[test]
    fn the_failure_advice_formats_crashes_without_a_sanitizer_so_it_works_on_stable() {
        let advice = failure_advice(&["lane_sequences"]);
        assert!(advice.contains("fuzzing failed for lane_sequences:"), "{advice}");
        assert!(advice.contains("`cargo fuzz fmt -s none <target> <file>`"), "{advice}");
    }

    #[test]
    fn bin_names_are_read_from_the_manifest() {
        let manifest = "[package]\nname = \"pkg\"\n\n[[bin]]\nname = \"one\"\npath = \"a.rs\"\n\n\
                        [dependencies]\nname = \"not-a-bin\"\n[[bin]]\nname=\"two\"\n";
        assert_eq!(bin_names(manifest), ["one", "two"]);
    }

    #[test]
    fn every_fuzz_target_has_a_source_file_and_committed_seeds() {
        let root = project_root();
        let names = targets(&root).expect("fuzz/Cargo.toml is readable");
        assert!(!names.is_empty(), "fuzz/Cargo.toml declares no target");
        let files = files_under(&root.join("fuzz/fuzz_targets"), &is_rust);
        let stem = |path: &PathBuf| path.file_stem()?.to_str().map(str::to_owned);
        let mut sources: Vec<String> = files.iter().filter_map(stem).collect();
        sources.sort();
        let mut declared = names.clone();
        declared.sort();
        assert_eq!(declared, sources, "fuzz/Cargo.toml and fuzz/fuzz_targets/ disagree");
        for name in names {
            let seeds = root.join("fuzz/seeds").join(&name);
            let count = fs::read_dir(&seeds).map_or(0, |entries| entries.count());
            assert!(count > 0, "{} holds no seed", seeds.display());
        }
    }

    #[test]
    fn new_failures_are_recognised_by_libfuzzers_prefixes() {
        let dir = std::env::temp_dir().join(format!("xtask-fuzz-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for name in ["crash-1", "oom-2", "timeout-3", "leak-4", "slow-unit-5", "notes.txt"] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        let found: Vec<String> = failures_in(&dir)
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect();
        fs::remove_dir_all(&dir).ok();
        assert_eq!(found, ["crash-1", "leak-4", "oom-2", "timeout-3"]);
    }
}
