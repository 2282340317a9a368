//! `fake-bench`: three arms on the fake libascendcl in real time: depth one, queued depth
//! two, and queued with copies on the streams and runner work on host workers.
//!
//! ```text
//! fake-bench [--runs N] [--device-us A,B,..]
//! ```
//!
//! Prints its figures as JSON; `cargo xtask fake-bench` writes them to
//! docs/data/fake-bench.json and renders their table into docs/performance.md.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use lane_conformance::bench::{self, BenchConfig};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fake-bench: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut config = BenchConfig::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} takes a value; see the usage in the source doc"))
        };
        match arg.as_str() {
            "--runs" => {
                config.runs = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n > config.skip + 1)
                    .ok_or_else(|| format!("--runs takes a count above {}", config.skip + 1))?;
            }
            "--device-us" => {
                config.device_ns = value()?
                    .split(',')
                    .map(|us| us.trim().parse::<u64>().ok().filter(|us| *us > 0))
                    .map(|us| us.map(|us| us * 1_000))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("--device-us takes positive microseconds, e.g. 100,250,1000")?;
            }
            other => {
                return Err(format!("unknown argument `{other}`; use --runs N or --device-us A,B"));
            }
        }
    }
    let arms = bench::run(&config).map_err(|e| e.to_string())?;
    println!("{}", bench::to_json(&config, &arms));
    Ok(())
}
