//! Curates `fuzz/seeds/<target>/`: for every behaviour the target's body names, the shortest
//! input that reaches it, picked from the current seeds, any candidate directories (typically
//! `fuzz/corpus/<target>` after a fuzzing run) and random buffers from a fixed seed.
//! `Arbitrary` has no inverse, so seeds are byte files that happen to decode to useful
//! inputs; this finds them, one small example per behaviour, plus the input that reaches the
//! most behaviours at once.
//!
//! ```text
//! cargo run --release -p lane-fuzz --example pick_seeds -- <target> [candidate dir ...]
//! ```
//!
//! The directory is rewritten with the chosen files, named `<nn>-<behaviour>` (an input that
//! is the shortest for several behaviours is written once, for the first) and
//! `<nn>-deepest`. An input that finds something is reported and never chosen.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lane_fuzz::{Reached, Target};

/// Random candidates added to the files given.
const RANDOM_CANDIDATES: usize = 20_000;

/// Seeds larger than this are skipped (libFuzzer's default `-max_len` is 4096).
const MAX_SEED_LEN: usize = 4096;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((name, dirs)) = args.split_first() else {
        eprintln!("usage: pick_seeds <target> [candidate dir ...]");
        return ExitCode::FAILURE;
    };
    let Some(target) = lane_fuzz::target(name) else {
        eprintln!("no target `{name}`");
        return ExitCode::FAILURE;
    };
    let seeds_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds").join(target.name);
    let mut candidates = files_in(&seeds_dir);
    for dir in dirs {
        candidates.extend(files_in(Path::new(dir)));
    }
    let mut rng = 0x5EED_5EED_u64;
    for _ in 0..RANDOM_CANDIDATES {
        let len = (split_mix(&mut rng) % 1024) as usize;
        candidates.push((0..len).map(|_| split_mix(&mut rng) as u8).collect());
    }
    let chosen = cover(target, candidates);
    if let Err(e) = write(&seeds_dir, &chosen) {
        eprintln!("cannot write {}: {e}", seeds_dir.display());
        return ExitCode::FAILURE;
    }
    let reached = chosen.iter().fold(Reached::default(), |r, seed| r.union(seed.reached));
    println!(
        "{}: {} seeds reach {}/{} behaviours; missing {:?}",
        target.name,
        chosen.len(),
        reached.count(),
        target.behaviours.len(),
        reached.missing(target.behaviours)
    );
    ExitCode::SUCCESS
}

fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    paths.iter().filter(|p| p.is_file()).filter_map(|p| fs::read(p).ok()).collect()
}

/// For each behaviour, the shortest input reaching it (the first on a tie), then the input
/// reaching the most (the shorter on a tie); without repeats, each with what it is for.
fn cover(target: &Target, candidates: Vec<Vec<u8>>) -> Vec<Seed> {
    let mut scored: Vec<(Vec<u8>, Reached)> = Vec::new();
    for data in candidates {
        if data.len() > MAX_SEED_LEN {
            continue;
        }
        match (target.run_bytes)(&data) {
            Ok(reached) => scored.push((data, reached)),
            Err(finding) => eprintln!("skipped an input that finds something: {finding}"),
        }
    }
    let mut chosen: Vec<Seed> = Vec::new();
    let add = |chosen: &mut Vec<Seed>, pick: Option<&(Vec<u8>, Reached)>, purpose: &str| {
        if let Some((data, reached)) = pick {
            if !chosen.iter().any(|seed| seed.data == *data) {
                chosen.push(Seed {
                    data: data.clone(),
                    reached: *reached,
                    purpose: purpose.to_owned(),
                });
            }
        }
    };
    for (bit, name) in target.behaviours.iter().enumerate() {
        let shortest =
            scored.iter().filter(|(_, r)| r.contains(bit)).min_by_key(|(data, _)| data.len());
        add(&mut chosen, shortest, name);
    }
    let deepest =
        scored.iter().max_by(|a, b| a.1.count().cmp(&b.1.count()).then(b.0.len().cmp(&a.0.len())));
    add(&mut chosen, deepest, "deepest");
    chosen
}

/// A chosen seed: its bytes, what it reaches, and the behaviour it was chosen for.
struct Seed {
    data: Vec<u8>,
    reached: Reached,
    purpose: String,
}

fn write(dir: &Path, chosen: &[Seed]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() {
            fs::remove_file(path)?;
        }
    }
    for (n, seed) in chosen.iter().enumerate() {
        let slug: String = seed
            .purpose
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        fs::write(dir.join(format!("{n:02}-{slug}")), &seed.data)?;
    }
    Ok(())
}
