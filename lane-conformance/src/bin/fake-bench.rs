//! `fake-bench`: three arms on the fake libascendcl in real time: depth one, queued depth
//! two, and queued with copies on the streams and runner work on host workers.
//!
//! ```text
//! fake-bench [--runs N] [--device-us A,B,..]
//! ```
//!
//! Prints the markdown section; `cargo xtask fake-bench` puts it into docs/performance.md
//! between its markers.

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
                return Err(format!(
                    "unknown argument `{other}`; use --runs N or --device-us A,B"
                ));
            }
        }
    }
    let load_before = load_average();
    let arms = bench::run(&config).map_err(|e| e.to_string())?;
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let machine = format!(
        "{cpus} logical CPUs, load average {load_before} before, {} after",
        load_average()
    );
    let section = bench::markdown(&config, &arms, &machine);
    print!("{section}");
    Ok(())
}

/// The 1-minute load average, or `?` where /proc/loadavg is not readable.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
