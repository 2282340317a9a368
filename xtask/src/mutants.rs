//! `cargo xtask mutants [CRATE] [--own-tests] [--timeout S] [--jobs N] [--shard K/N]`: cargo-mutants on
//! the pure crates, the way docs/testing.md records their scores.
//!
//! For each pure crate (`CRATE`, or stream-pair, status-latch and lane-core in turn) it runs
//! `cargo mutants --package CRATE` from the workspace root, so only that crate is mutated,
//! and writes cargo-mutants' report to `target/mutants/CRATE/mutants.out/` (ignored by git;
//! `missed.txt` lists the survivors).
//!
//! Which tests judge a mutant: by default the whole workspace's (`--test-workspace=true`).
//! `cargo test --workspace` is the project's single gate, so a mutant is caught exactly when
//! CI would catch it, whichever crate's test does it (a lane scenario, the generated-docs
//! check). Naming the dependents instead buys little: every crate above a pure crate
//! depends on it, directly or through lane-driver (lane-core, lane-driver, backend-sim,
//! backend-acl, lane-fuzz, xtask), so the list would leave out only crates that cannot see
//! its mutants at all (ascend-cl-sys, the pure crates below it), and it would go stale when
//! a crate is added.
//!
//! `--own-tests` runs only the mutated crate's own tests: a mutant then rebuilds one crate,
//! not every crate above it, so it is many times faster. Its score is a lower bound on the workspace score
//! (more tests can only catch more mutants), which is how docs/testing.md measures it on a
//! small machine.
//!
//! Each mutant's tests get a fixed time limit (`--timeout`, default
//! [`DEFAULT_TIMEOUT_S`]): a mutant that makes the tests hang (one in lane-core does) is
//! reported as a timeout instead of stopping the run. `--jobs` (default 1) is how many
//! mutants build and test at once, each in its own copy of the tree.

use std::process::Command;

use crate::{PURE_CRATES, project_root, require_cargo};

/// Seconds a mutant's tests may run before cargo-mutants kills them and counts a timeout:
/// several times the workspace tests' own time, so only a hang reaches it.
const DEFAULT_TIMEOUT_S: u64 = 120;

/// Which tests run against each mutant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tests {
    /// Every workspace member's tests: what CI runs.
    Workspace,
    /// Only the mutated crate's tests (a lower bound on the score, many times faster).
    Own,
}

/// A parsed `cargo xtask mutants` command line.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Options {
    /// The crates to mutate, in turn.
    crates: Vec<&'static str>,
    /// The tests that judge each mutant.
    tests: Tests,
    /// Per-mutant test time limit, in seconds.
    timeout_s: u64,
    /// Mutants built and tested at once.
    jobs: u32,
    /// `Some("k/n")`: only shard `k` of `n` (round-robin), a sample for a crate whose full
    /// run does not fit the time at hand.
    shard: Option<String>,
}

/// `cargo xtask mutants ...`: mutates each chosen crate in turn. Survivors and timeouts are
/// results, not failures (docs/testing.md records the survivors that remain, equivalent
/// mutants among them); it fails when cargo-mutants is missing or could not measure, e.g.
/// because the unmutated tree already fails its tests.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let options = parse(args)?;
    require_cargo("mutants", "")?;
    let mut failed = Vec::new();
    for krate in &options.crates {
        let args = cargo_mutants_args(krate, &options);
        // cargo-mutants creates only the last level of `--output`.
        let output = project_root().join("target/mutants").join(krate);
        std::fs::create_dir_all(&output)
            .map_err(|e| format!("cannot create {}: {e}", output.display()))?;
        eprintln!("xtask: cargo {}", args.join(" "));
        let status = Command::new("cargo")
            .args(&args)
            .current_dir(project_root())
            .status()
            .map_err(|e| format!("could not start `cargo mutants` for {krate}: {e}"))?;
        if measured(status.code()) {
            eprintln!(
                "xtask: {krate}: survivors in target/mutants/{krate}/mutants.out/missed.txt; \
                 compare them with docs/testing.md"
            );
        } else {
            failed.push(format!("{krate} ({status})"));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "cargo-mutants could not measure {}: see its output above and \
             target/mutants/<crate>/mutants.out/log/",
            failed.join(", ")
        ))
    }
}

/// Whether cargo-mutants' exit code means it measured every mutant: 0 (all caught or
/// unviable), 2 (some missed) or 3 (some timed out). 1 is a usage error and 4 a failing
/// baseline; `None` is a kill by a signal.
fn measured(code: Option<i32>) -> bool {
    matches!(code, Some(0 | 2 | 3))
}

/// Parses `[CRATE] [--own-tests] [--timeout S] [--jobs N] [--shard K/N]`, in any order.
fn parse(args: &[&str]) -> Result<Options, String> {
    let mut options = Options {
        crates: PURE_CRATES.to_vec(),
        tests: Tests::Workspace,
        timeout_s: DEFAULT_TIMEOUT_S,
        jobs: 1,
        shard: None,
    };
    let mut krate = None;
    let mut rest = args.iter().copied();
    while let Some(arg) = rest.next() {
        match arg {
            "--own-tests" => options.tests = Tests::Own,
            "--timeout" => options.timeout_s = positive("--timeout", rest.next())?.into(),
            "--jobs" => options.jobs = positive("--jobs", rest.next())?,
            "--shard" => options.shard = Some(shard(rest.next())?),
            flag if flag.starts_with('-') => {
                return Err(format!(
                    "unknown option `{flag}`; `cargo xtask mutants` takes [CRATE] \
                     [--own-tests] [--timeout S] [--jobs N] [--shard K/N]"
                ));
            }
            name => {
                let Some(known) = PURE_CRATES.iter().copied().find(|c| *c == name) else {
                    let covers = PURE_CRATES.join(", ");
                    return Err(format!(
                        "`{name}` is not a pure crate; mutation testing covers {covers}"
                    ));
                };
                if krate.replace(known).is_some() {
                    return Err("name at most one crate (none: every pure crate)".to_owned());
                }
            }
        }
    }
    if let Some(krate) = krate {
        options.crates = vec![krate];
    }
    Ok(options)
}

/// The value after `--shard`: `k/n` with `k < n`.
fn shard(value: Option<&str>) -> Result<String, String> {
    let parsed = value.and_then(|v| {
        let (k, n) = v.split_once('/')?;
        let (k, n): (u32, u32) = (k.parse().ok()?, n.parse().ok()?);
        (k < n).then(|| format!("{k}/{n}"))
    });
    parsed.ok_or_else(|| "--shard takes k/n with k below n, e.g. `--shard 0/8`".to_owned())
}

/// The value after `flag`, a whole number above zero.
fn positive(flag: &str, value: Option<&str>) -> Result<u32, String> {
    value
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{flag} takes a whole number above zero, e.g. `{flag} 2`"))
}

/// The `cargo` arguments that mutate `krate` as `options` say.
fn cargo_mutants_args(krate: &str, options: &Options) -> Vec<String> {
    let tests = match options.tests {
        Tests::Workspace => "--test-workspace=true".to_owned(),
        Tests::Own => format!("--test-package {krate}"),
    };
    // Unoptimised builds (Cargo.toml): the test profile optimises the explorer's crates,
    // which would slow every mutant's build more than it speeds its tests.
    let mut line = format!(
        "mutants --package {krate} {tests} --profile mutants --timeout {} --jobs {} \
         --output target/mutants/{krate}",
        options.timeout_s, options.jobs
    );
    if let Some(shard) = &options.shard {
        line += &format!(" --sharding round-robin --shard {shard}");
    }
    line.split(' ').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_mutate_every_pure_crate_against_the_workspace_tests() {
        let options = parse(&[]).unwrap();
        assert_eq!(options.crates, ["stream-pair", "status-latch", "lane-core", "device-model"]);
        assert_eq!(options.tests, Tests::Workspace);
        assert_eq!(options.timeout_s, DEFAULT_TIMEOUT_S);
        assert_eq!(options.jobs, 1);
    }

    #[test]
    fn a_crate_and_options_are_read_in_any_order() {
        let args: Vec<&str> = "--timeout 30 status-latch --own-tests --jobs 2".split(' ').collect();
        let options = parse(&args).unwrap();
        assert_eq!(
            options,
            Options {
                crates: vec!["status-latch"],
                tests: Tests::Own,
                timeout_s: 30,
                jobs: 2,
                shard: None,
            }
        );
    }

    #[test]
    fn bad_arguments_are_rejected_with_what_is_accepted() {
        let err = parse(&["lane-driver"]).unwrap_err();
        assert!(err.contains("stream-pair, status-latch, lane-core"), "{err}");
        let err = parse(&["lane-core", "stream-pair"]).unwrap_err();
        assert!(err.contains("at most one crate"), "{err}");
        let err = parse(&["--fast"]).unwrap_err();
        assert!(err.contains("--own-tests"), "{err}");
        for bad in [&["--timeout"][..], &["--timeout", "0"], &["--jobs", "two"]] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("whole number above zero"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_shard_samples_round_robin_and_a_bad_one_is_refused() {
        let options = parse(&["lane-core", "--shard", "0/8"]).unwrap();
        assert!(
            cargo_mutants_args("lane-core", &options)
                .join(" ")
                .ends_with("--sharding round-robin --shard 0/8"),
        );
        for bad in ["8/8", "1", "a/b"] {
            let err = parse(&["--shard", bad]).unwrap_err();
            assert!(err.contains("k/n"), "{bad}: {err}");
        }
    }

    #[test]
    fn survivors_and_timeouts_are_results_but_a_failing_baseline_is_not() {
        for (code, results) in [(0, true), (2, true), (3, true), (1, false), (4, false)] {
            assert_eq!(measured(Some(code)), results, "exit code {code}");
        }
        assert!(!measured(None));
    }

    #[test]
    fn the_command_mutates_one_package_with_a_timeout_and_reports_under_target() {
        let mut options = parse(&["stream-pair", "--timeout", "45"]).unwrap();
        assert_eq!(
            cargo_mutants_args("stream-pair", &options).join(" "),
            "mutants --package stream-pair --test-workspace=true --profile mutants --timeout 45 \
             --jobs 1 --output target/mutants/stream-pair"
        );
        options.tests = Tests::Own;
        assert_eq!(
            cargo_mutants_args("stream-pair", &options).join(" "),
            "mutants --package stream-pair --test-package stream-pair --profile mutants \
             --timeout 45 --jobs 1 --output target/mutants/stream-pair"
        );
    }
}
