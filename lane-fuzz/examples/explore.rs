//! `cargo xtask explore [--runs N] [--publications N] [--reservations] [--pair-owners N]
//! [--pair-handles N] [--pair-publications N] [--pair-abandons N]`:
//! the exhaustive explorer with bounds bigger than `cargo test` affords (release build).
//!
//! Explores the lane on a2a3 (depth two), at depth one and at depth three with up to `N` runs (default 3), the given publications
//! (default 1) and a close, then the stream pair alone at every launch depth; prints the
//! state counts and the table states never reached, or the first violation with its
//! shortest trace as Rust code. Exits 1 on a violation.

use std::process::ExitCode;
use std::time::Instant;

use lane_fuzz::explore::lane::{self, Chip, Config};
use lane_fuzz::explore::pair::{self, PairConfig};

/// Most distinct states per configuration before giving up.
const LIMIT: usize = 50_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args).and_then(|(configs, pair)| explore(&configs, pair)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// The lane configurations and the pair bounds the arguments ask for.
fn parse(args: &[String]) -> Result<(Vec<Config>, PairConfig), String> {
    let mut runs = 3;
    let mut publications = 1;
    let mut reservations = false;
    let mut pair = PairConfig::deep(1);
    let mut it = args.iter();
    let number = |flag: &str, value: Option<&String>| -> Result<u8, String> {
        value
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{flag} takes a small whole number, e.g. `{flag} 3`"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--runs" => runs = number("--runs", it.next())?,
            "--publications" => publications = number("--publications", it.next())?,
            "--reservations" => reservations = true,
            "--pair-owners" => pair.owners = number("--pair-owners", it.next())?,
            "--pair-handles" => pair.handles = number("--pair-handles", it.next())?,
            "--pair-publications" => {
                pair.publications = number("--pair-publications", it.next())?;
            }
            "--pair-abandons" => pair.abandons = number("--pair-abandons", it.next())?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let configs = [Chip::A2a3, Chip::DepthOne, Chip::A2a3Window2, Chip::Depth3]
        .into_iter()
        .map(|chip| Config { runs, publications, reservations, ..Config::test(chip) })
        .collect();
    Ok((configs, pair))
}

fn explore(configs: &[Config], pair_bounds: PairConfig) -> Result<(), String> {
    println!("| configuration | states | transitions | depth | seconds |");
    println!("|---|---|---|---|---|");
    let mut reached = lane::Reached::default();
    for &config in configs {
        let start = Instant::now();
        let one = lane::run(config, LIMIT)?;
        reached.union(&one.reached);
        println!(
            "| {} | {} | {} | {} | {:.1} |",
            config.rust(),
            one.stats.states,
            one.stats.transitions,
            one.stats.depth,
            start.elapsed().as_secs_f64()
        );
    }
    for depth in 1..=stream_pair::MAX_DEPTH {
        let config = PairConfig { depth, ..pair_bounds };
        let start = Instant::now();
        let stats = pair::run(config, LIMIT)?;
        println!(
            "| {config:?} | {} | {} | {} | {:.1} |",
            stats.states,
            stats.transitions,
            stats.depth,
            start.elapsed().as_secs_f64()
        );
    }
    let tables = reached.against_tables();
    if !tables.unlisted.is_empty() {
        return Err(format!("reached states no table lists: {:?}", tables.unlisted));
    }
    println!("\ntable states never reached: {:?}", tables.unreached);
    Ok(())
}
