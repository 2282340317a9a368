//! The fuzz targets on the stable toolchain, under plain `cargo test`:
//!
//! - every file under `fuzz/seeds/<target>/` and `fuzz/regressions/<target>/` replays through
//!   its target's body (the directory name is the target) without a finding or a panic;
//! - a seeded random smoke run feeds a few thousand byte buffers from a fixed seed through
//!   each body, and the smoke run and the seeds together reach every behaviour the body
//!   names, so neither can quietly stop exercising the machine.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use lane_fuzz::{Reached, TARGETS, Target};

/// Cases per target in the smoke run (a whole simulation per `sim_swarm` case, so fewer).
const SMOKE_CASES: usize = 3_000;
const SIM_SMOKE_CASES: usize = 3_000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// SplitMix64: a tiny, fixed PRNG, so the smoke run is the same everywhere.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A buffer of varying length: mostly short (a few operations), sometimes long.
    fn buffer(&mut self) -> Vec<u8> {
        let len = match self.next() % 8 {
            0..=3 => self.next() % 64,
            4..=6 => self.next() % 512,
            _ => self.next() % 2048,
        };
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Runs one input, turning a panic in the crate under test into a message.
fn replay(target: &Target, data: &[u8]) -> Result<Reached, String> {
    match catch_unwind(AssertUnwindSafe(|| (target.run_bytes)(data))) {
        Ok(Ok(reached)) => Ok(reached),
        Ok(Err(finding)) => Err(finding.to_string()),
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
    }
}

/// Every file of `fuzz/<kind>/<target>/`, sorted, with its target.
fn committed(kind: &str) -> Vec<(&'static Target, PathBuf)> {
    let root = fuzz_dir().join(kind);
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{} is missing: {e}", root.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for dir in dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if !dir.is_dir() {
            // A README may sit beside the target directories.
            continue;
        }
        let target = lane_fuzz::target(name).unwrap_or_else(|| {
            panic!(
                "{} names no fuzz target; the targets are {:?}",
                dir.display(),
                TARGETS.iter().map(|t| t.name).collect::<Vec<_>>()
            )
        });
        let mut inputs: Vec<PathBuf> = fs::read_dir(&dir)
            .expect("readable target directory")
            .map(|entry| entry.expect("readable directory entry").path())
            .filter(|path| path.is_file())
            .collect();
        inputs.sort();
        files.extend(inputs.into_iter().map(|path| (target, path)));
    }
    files
}

fn replay_all(kind: &str) -> Vec<(&'static str, Reached)> {
    let mut failures = Vec::new();
    let mut reached = Vec::new();
    for (target, path) in committed(kind) {
        let data = fs::read(&path).expect("readable input file");
        match replay(target, &data) {
            Ok(r) => reached.push((target.name, r)),
            Err(message) => failures.push(format!("{}: {message}", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} committed inputs fail:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    reached
}

#[test]
fn every_regression_replays_clean() {
    let replayed = replay_all("regressions");
    assert!(
        !replayed.is_empty(),
        "fuzz/regressions/ holds no input: the committed regressions were lost"
    );
}

#[test]
fn every_seed_replays_clean_and_every_target_has_seeds() {
    let reached = replay_all("seeds");
    for target in TARGETS {
        assert!(
            reached.iter().any(|(name, _)| *name == target.name),
            "fuzz/seeds/{} holds no seed",
            target.name
        );
    }
}

/// The smoke run of one target: finds nothing, and with the seeds reaches every behaviour.
fn smoke(name: &str, seed: u64, cases: usize) {
    let target = lane_fuzz::target(name).expect("a registered target");
    let mut rng = SplitMix64(seed);
    let mut reached = Reached::default();
    for case in 0..cases {
        let data = rng.buffer();
        match replay(target, &data) {
            Ok(r) => reached = reached.union(r),
            Err(message) => panic!(
                "smoke case {case} of {name} (seed {seed}) failed: {message}\ninput bytes: {data:?}"
            ),
        }
    }
    let mut with_seeds = reached;
    for (target, path) in committed("seeds") {
        if target.name == name {
            let data = fs::read(&path).expect("readable seed");
            with_seeds = with_seeds.union(replay(target, &data).unwrap_or_default());
        }
    }
    let missing = with_seeds.missing(target.behaviours);
    assert!(missing.is_empty(), "{name}: the smoke run and the seeds never reach {missing:?}");
}

#[test]
fn stream_pair_orderings_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("stream_pair_orderings", 0x5EED_0001, SMOKE_CASES);
}

#[test]
fn lane_sequences_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("lane_sequences", 0x5EED_0002, SMOKE_CASES);
}

#[test]
fn status_header_decode_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("status_header_decode", 0x5EED_0003, SMOKE_CASES);
}

#[test]
fn result_record_decode_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("result_record_decode", 0x5EED_0005, SMOKE_CASES);
}

#[test]
fn dispatch_orders_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("dispatch_orders", 0x5EED_0006, SMOKE_CASES);
}

#[test]
fn sim_swarm_smoke_run_finds_nothing_and_reaches_every_behaviour() {
    smoke("sim_swarm", 0x5EED_0004, SIM_SMOKE_CASES);
}

#[test]
fn every_target_has_a_smoke_run() {
    // A target added to TARGETS without a smoke test above would go untested here.
    let smoked = [
        "stream_pair_orderings",
        "lane_sequences",
        "status_header_decode",
        "result_record_decode",
        "dispatch_orders",
        "sim_swarm",
    ];
    for target in TARGETS {
        assert!(
            smoked.contains(&target.name),
            "{} has no smoke test in tests/replay.rs",
            target.name
        );
    }
}
