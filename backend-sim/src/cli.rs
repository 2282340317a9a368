//! The `lane-sim` command: options (clap), the depth-one vs queued comparison, scenario
//! checks, and output files.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use lane_core::CopyPath;

use crate::costs::{Cost, Costs};
use crate::error::{InputError, SimError};
use crate::faults::{FaultKind, FaultRule};
use crate::scenario;
use crate::stats::{fmt_us, per_run_table, us_to_ns};
use crate::sweep::{DEFAULT_POINTS_US, DEFAULT_RUNS, Offload, SweepConfig, sweep};
use crate::trace::chrome_json;
use crate::workload::{
    MAX_RUNS, Points, ProfileName, Report, SimConfig, Workload, describe_faults, run,
};

/// Runs above which progress is shown on stderr.
const PROGRESS_FROM_RUNS: u32 = 20_000;
/// Runs above which no trace is recorded (trace.json would be too large to open).
const TRACE_MAX_RUNS: u32 = 20_000;

/// Simulate the run lane on a deterministic, fault-injecting Ascend device model.
///
/// With no arguments it runs a workload of 200 back-to-back runs of about 250 us of device
/// time each twice, at launch depth one and queued (depth two), prints a side-by-side
/// table, and writes a Perfetto trace of the queued arm to trace.json.
#[derive(Debug, Parser)]
#[command(
    name = "lane-sim",
    version,
    after_help = "Examples:\n  lane-sim                                  compare depth one and queued\n  \
                  lane-sim --device-us 100 --runs 1000      another workload shape\n  \
                  lane-sim --depth 2 --fault latch=1@run:3  one arm, one latched run\n  \
                  lane-sim --swarm --seed 7 --liveness      a seeded fault mix, then heal\n  \
                  lane-sim check scenarios/*.toml           run the scenario files\n  \
                  lane-sim sweep                            three arms, 20 us to 5 ms, each beside its model\n  \
                  lane-sim costs                            the cost table and its sources"
)]
pub struct Cli {
    /// What to do (default: simulate the workload the options describe).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The workload, profile, faults and outputs.
    #[command(flatten)]
    pub sim: SimArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenario files (TOML) and check each run's outcome against what the file
    /// expects; exits non-zero with a diff when an expectation fails.
    Check {
        /// Scenario files, e.g. scenarios/*.toml.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print every simulated cost, its default and the source of the default.
    Costs,
    /// Sweep device time per run and compare three arms at each point, each beside its
    /// throughput model (measured-figures.md §5(c), extended): depth one, queued depth two as
    /// today, and queued with the copies on the streams and prepare/finalise on host workers
    /// (steady state, all arms in this one invocation).
    Sweep(SweepArgs),
    /// Print every fault kind --fault and scenario files accept.
    Faults,
}

/// Options of the simulation.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Runs to submit.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    pub runs: u32,
    /// Device time of each run in microseconds, after the per-run preamble.
    #[arg(long, default_value_t = 250.0, allow_negative_numbers = true)]
    pub device_us: f64,
    /// Per-run jitter of the device time, in percent (uniform, drawn from the seed).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub jitter_pct: f64,
    /// Publish new AICore code after every N-th run (a drain barrier; the next launch gets
    /// a fresh AICore stream).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub publish_every: Option<u32>,
    /// Publish new AICore code right after these runs (comma-separated positions from 1).
    #[arg(long, value_name = "K,..", value_delimiter = ',')]
    pub publish_after: Vec<u32>,
    /// Submit every N-th run with diagnostics (it runs alone, at depth one).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub diagnostics_every: Option<u32>,
    /// Submit these runs with diagnostics (comma-separated positions from 1).
    #[arg(long, value_name = "K,..", value_delimiter = ',')]
    pub diagnostics_after: Vec<u32>,
    /// Close the lane right after submitting K runs, with runs still in flight.
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub close_after: Option<u32>,
    /// Chip profile.
    #[arg(long, value_enum, default_value_t = ProfileName::A2a3)]
    pub profile: ProfileName,
    /// Run one arm at this launch depth (1..=2) instead of comparing depth one and queued.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub depth: Option<u8>,
    /// Slots of the profile (1..=4; default: the profile's own).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub slots: Option<u8>,
    /// Runs the lane may prepare at once (1..=slots; default: the profile's own).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub prepare_window: Option<u8>,
    /// How the arm and status copies run: synchronous copies on the lane thread, or queued
    /// on the run's streams from pinned host memory (default: the profile's own).
    #[arg(long, value_enum)]
    pub copies: Option<CopiesArg>,
    /// Virtual host workers running the runner's prepare and finalise off the lane thread
    /// (0: all on the lane thread).
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true)]
    pub workers: u8,
    /// Seed of every random choice (fault rates, swarm mix, device-time jitter).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Install a fault rule: `KIND[=CODE][@SELECTOR]`, SELECTOR one of always (default),
    /// run:1,3  call:2  rate:0.05. Repeatable; the first rule that fires wins.
    /// `lane-sim faults` lists the kinds.
    #[arg(long, value_name = "SPEC", value_parser = parse_fault)]
    pub fault: Vec<FaultRule>,
    /// Derive a whole fault mix from the seed, print it, and install it.
    #[arg(long)]
    pub swarm: bool,
    /// After the workload, heal every fault, drain the lane and require fresh runs to
    /// succeed (unless the lane ended lost).
    #[arg(long)]
    pub liveness: bool,
    /// Override a cost: NAME=US. Repeatable; `lane-sim costs` lists the names.
    #[arg(long, value_name = "NAME=US", value_parser = parse_cost)]
    pub cost: Vec<(Cost, u64)>,
    /// Where to write the Chrome trace-event JSON (open it in <https://ui.perfetto.dev>).
    #[arg(long, value_name = "PATH", default_value = "trace.json")]
    pub trace: PathBuf,
    /// Write no trace file.
    #[arg(long)]
    pub no_trace: bool,
    /// Put both arms of the comparison in the trace (default: the queued arm only).
    #[arg(long)]
    pub trace_both: bool,
    /// Also write the text trace (one line per event) of the traced arm here.
    #[arg(long, value_name = "PATH")]
    pub trace_text: Option<PathBuf>,
    /// Print per-run figures: device start/end, idle gap before the run, host time.
    #[arg(long)]
    pub per_run: bool,
    /// Never print progress on stderr (shown by default above 20000 runs).
    #[arg(long)]
    pub no_progress: bool,
}

/// `--copies`: the profile's copy path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CopiesArg {
    /// Synchronous copies on the lane thread.
    Sync,
    /// Async copies on the run's streams from pinned host memory.
    OnStream,
}

impl CopiesArg {
    /// The profile's copy path.
    pub const fn path(self) -> CopyPath {
        match self {
            Self::Sync => CopyPath::Sync,
            Self::OnStream => CopyPath::OnStream,
        }
    }
}

/// Options of `lane-sim sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Device times per run to sweep, in microseconds (after the per-run preamble).
    #[arg(long, value_name = "US,..", value_delimiter = ',', default_values_t = DEFAULT_POINTS_US)]
    pub points: Vec<u64>,
    /// Runs per arm and point (the first tenth is skipped as warm-up).
    #[arg(long, default_value_t = DEFAULT_RUNS, allow_negative_numbers = true)]
    pub runs: u32,
    /// Per-run jitter of the device time, in percent (the model assumes none).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub jitter_pct: f64,
    /// Seed of the jitter.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Override a cost: NAME=US (the model uses the same table). Repeatable.
    #[arg(long, value_name = "NAME=US", value_parser = parse_cost)]
    pub cost: Vec<(Cost, u64)>,
    /// Slots of the offloaded arm.
    #[arg(long, value_name = "N", default_value_t = Offload::default().slots, allow_negative_numbers = true)]
    pub slots: u8,
    /// Prepare window of the offloaded arm.
    #[arg(long, value_name = "N", default_value_t = Offload::default().prepare_window, allow_negative_numbers = true)]
    pub prepare_window: u8,
    /// Host workers of the offloaded arm.
    #[arg(long, value_name = "N", default_value_t = Offload::default().workers, allow_negative_numbers = true)]
    pub workers: u8,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

impl SweepArgs {
    /// The sweep these options describe.
    pub fn config(&self) -> Result<SweepConfig, InputError> {
        Ok(SweepConfig {
            points_us: self.points.clone(),
            runs: self.runs,
            jitter_ppm: Workload::jitter_from_pct(self.jitter_pct)?,
            seed: self.seed,
            costs: self.cost.clone(),
            offload: Offload {
                slots: self.slots,
                prepare_window: self.prepare_window,
                workers: self.workers,
            },
        })
    }
}

fn parse_fault(spec: &str) -> Result<FaultRule, String> {
    FaultRule::parse(spec).map_err(|e| e.to_string())
}

fn parse_cost(spec: &str) -> Result<(Cost, u64), String> {
    let (name, us) = spec
        .split_once('=')
        .ok_or_else(|| format!("'{spec}' is not NAME=US; write e.g. prepare=70"))?;
    let cost = Cost::from_name(name.trim())
        .ok_or_else(|| format!("unknown cost '{name}'; `lane-sim costs` lists the names"))?;
    let us: f64 = us
        .trim()
        .parse()
        .map_err(|_| format!("'{us}' is not a number of microseconds; write e.g. {name}=70"))?;
    if !us.is_finite() || !(0.0..=1e9).contains(&us) {
        return Err(format!("{name}={us} is not a time between 0 and 1e9 us"));
    }
    Ok((cost, us_to_ns(us)))
}

impl SimArgs {
    /// The simulation these options describe (one arm; the comparison sets the depth).
    pub fn config(&self) -> Result<SimConfig, InputError> {
        if !self.device_us.is_finite() || self.device_us <= 0.0 {
            return Err(InputError::Workload(format!(
                "--device-us {} is not a positive time; give microseconds, e.g. --device-us 100",
                self.device_us
            )));
        }
        if self.runs > MAX_RUNS {
            return Err(InputError::Workload(format!(
                "--runs {} is more than {MAX_RUNS}; use fewer runs",
                self.runs
            )));
        }
        // Checked positive and finite; absurd values are refused by Workload::validate.
        let device_ns = us_to_ns(self.device_us);
        Ok(SimConfig {
            profile: self.profile,
            depth: self.depth,
            slots: self.slots,
            prepare_window: self.prepare_window,
            copies: self.copies.map(CopiesArg::path),
            workers: self.workers,
            seed: self.seed,
            workload: Workload {
                runs: self.runs,
                device_ns,
                jitter_ppm: Workload::jitter_from_pct(self.jitter_pct)?,
                publish_after: Points { every: self.publish_every, at: self.publish_after.clone() },
                diagnostics: Points {
                    every: self.diagnostics_every,
                    at: self.diagnostics_after.clone(),
                },
                close_after: self.close_after,
            },
            faults: self.fault.clone(),
            swarm: self.swarm,
            costs: self.cost.clone(),
            liveness: self.liveness,
            trace: !self.no_trace && self.runs <= TRACE_MAX_RUNS,
            ..SimConfig::default()
        })
    }
}

/// Parses the arguments and runs; never panics on bad input.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match execute(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Runs a parsed command line, printing to stdout; the error carries the exit code.
pub fn execute(cli: &Cli) -> Result<ExitCode, SimError> {
    match &cli.command {
        Some(Command::Costs) => {
            print!("{}", Costs::with_overrides(&cli.sim.cost).table());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Faults) => {
            println!("fault kinds (--fault KIND[=CODE][@SELECTOR], or [[fault]] kind = ...):");
            println!("{}", FaultKind::help_table());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Check { files }) => check(files),
        Some(Command::Sweep(args)) => {
            let config = args.config()?;
            let result = sweep(&config, &mut |done, total| {
                if !args.json {
                    eprintln!("lane-sim sweep: point {done}/{total}");
                }
            })?;
            if args.json {
                println!("{}", result.to_json());
            } else {
                print!("{}", result.table());
            }
            Ok(ExitCode::SUCCESS)
        }
        None => simulate(&cli.sim),
    }
}

fn check(files: &[PathBuf]) -> Result<ExitCode, SimError> {
    let (mut failed, mut bad_input, mut skipped) = (0, 0, 0);
    for path in files {
        let loaded = scenario::load(path);
        if let Ok(s) = &loaded {
            if !s.runs_on(scenario::BackendName::Sim) {
                // The file says the simulator cannot express it (and why).
                let why = s.backends_reason.as_deref().unwrap_or_default();
                let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
                println!("skip  {}  {}: not on the simulator: {why}", s.path, s.name);
                skipped += 1;
                continue;
            }
        }
        match loaded.map_err(SimError::from).and_then(scenario::check) {
            Ok(checked) => {
                print!("{}", checked.render());
                if !checked.passed() {
                    failed += 1;
                }
            }
            Err(e @ SimError::Input(_)) => {
                println!("ERROR {e}");
                bad_input += 1;
            }
            Err(e) => {
                println!("FAIL  {}: {e}", path.display());
                failed += 1;
            }
        }
    }
    let total = files.len();
    println!(
        "{total} scenario{}: {} passed, {failed} failed{}{}",
        if total == 1 { "" } else { "s" },
        total - failed - bad_input - skipped,
        if bad_input > 0 { format!(", {bad_input} unreadable") } else { String::new() },
        if skipped > 0 { format!(", {skipped} not for the simulator") } else { String::new() }
    );
    // 2 for an unreadable file, 1 for a failed expectation, else 0.
    let code = u8::from(failed > 0).max(2 * u8::from(bad_input > 0));
    Ok(ExitCode::from(code))
}

fn progress_printer(label: &'static str, enabled: bool) -> impl FnMut(u32, u32) {
    let mut shown = 0;
    move |done: u32, total: u32| {
        if !enabled || total < PROGRESS_FROM_RUNS {
            return;
        }
        let tenth = u64::from(done) * 10 / u64::from(total.max(1));
        if tenth > shown {
            shown = tenth;
            eprintln!("lane-sim: {label}: {done}/{total} runs ({}%)", tenth * 10);
            let _ = std::io::stderr().flush();
        }
    }
}

fn simulate(args: &SimArgs) -> Result<ExitCode, SimError> {
    let base = args.config()?;
    let profile = base.lane_profile()?;
    base.workload.validate(&profile)?;
    let w = &base.workload;
    println!(
        "lane-sim: {} runs of {} us device time (+-{}%), profile {}, seed {}",
        w.runs,
        fmt_us(w.device_ns),
        f64::from(w.jitter_ppm) / 10_000.0,
        base.profile.name(),
        base.seed
    );
    if base.swarm || !base.faults.is_empty() {
        println!(
            "faults{}:\n{}",
            if base.swarm {
                format!(" (swarm mix derived from seed {})", base.seed)
            } else {
                String::new()
            },
            describe_faults(&base)
        );
    }
    let arms: Vec<(&'static str, SimConfig)> = match args.depth {
        Some(_) => vec![("single arm", base.clone())],
        None => [("depth one", 1), ("queued", profile.slots().min(2))]
            .into_iter()
            .map(|(label, depth)| {
                let config = SimConfig { depth: Some(depth), ..base.clone() };
                (label, config)
            })
            .collect(),
    };
    let mut reports = Vec::new();
    for (label, config) in &arms {
        let mut progress = progress_printer(label, !args.no_progress);
        let report = run(config, &mut progress)?;
        reports.push((*label, report));
    }
    println!();
    print!("{}", table(&reports));
    if let [(_, one), (_, queued)] = reports.as_slice() {
        if one.summary.runs_per_s > 0.0 {
            println!(
                "\nqueued vs depth one: {:.2}x runs/s",
                queued.summary.runs_per_s / one.summary.runs_per_s
            );
        }
    }
    if args.per_run {
        for (label, report) in &reports {
            println!("\nper run ({label}, profile {}):", report.profile.name());
            print!("{}", per_run_table(&report.runs));
        }
    }
    write_traces(args, &reports)?;
    Ok(ExitCode::SUCCESS)
}

fn table(reports: &[(&str, Report)]) -> String {
    use std::fmt::Write as _;
    type Cell = fn(&Report) -> String;
    let rows: [(&str, Cell); 9] = [
        ("launch depth", |r| r.profile.launch_depth().get().to_string()),
        ("runs/s", |r| {
            let v = r.summary.runs_per_s;
            if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
        }),
        ("device utilisation", |r| {
            r.summary
                .device_utilisation
                .map_or_else(|| "-".to_owned(), |u| format!("{:.1}%", u * 100.0))
        }),
        ("median inter-run gap", |r| opt_us(r.summary.median_gap_ns)),
        ("p99 inter-run gap", |r| opt_us(r.summary.p99_gap_ns)),
        ("host busy per run", |r| opt_us_f(r.summary.host_busy_per_run_ns)),
        ("launches queued on device", |r| r.queued_launches.to_string()),
        ("outcomes", |r| r.summary.counts.to_string()),
        ("lane end", |r| r.end.name().to_owned()),
    ];
    let cells: Vec<Vec<String>> =
        rows.iter().map(|(_, cell)| reports.iter().map(|(_, r)| cell(r)).collect()).collect();
    // Each column as wide as its widest cell, two spaces apart.
    let widths: Vec<usize> = reports
        .iter()
        .enumerate()
        .map(|(i, (label, _))| {
            cells
                .iter()
                .filter_map(|row| row.get(i).map(String::len))
                .chain([label.len()])
                .max()
                .unwrap_or(0)
                + 2
        })
        .collect();
    let mut out = String::new();
    let _ = write!(out, "{:<26}", "");
    for ((label, _), w) in reports.iter().zip(&widths) {
        let _ = write!(out, "{label:>w$}");
    }
    out.push('\n');
    for ((name, _), row) in rows.iter().zip(&cells) {
        let _ = write!(out, "{name:<26}");
        for (cell, w) in row.iter().zip(&widths) {
            let _ = write!(out, "{cell:>w$}");
        }
        out.push('\n');
    }
    out
}

fn opt_us_f(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".to_owned(), |v| format!("{:.3} us", v / 1_000.0))
}

fn opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_owned(), |g| format!("{} us", fmt_us(g)))
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
    }
}

fn write_file(path: &Path, text: &str, flag: &str) -> Result<(), InputError> {
    std::fs::write(path, text).map_err(|e| InputError::Io {
        path: path.display().to_string(),
        message: format!(
            "cannot write it: {e}; check that the directory exists and is writable, or pass {flag} PATH"
        ),
    })
}

fn write_traces(args: &SimArgs, reports: &[(&str, Report)]) -> Result<(), InputError> {
    if args.no_trace {
        return Ok(());
    }
    if args.runs > TRACE_MAX_RUNS {
        println!(
            "\nno trace written: {} runs is more than {TRACE_MAX_RUNS} (the file would be too large to open); use fewer runs for a trace",
            args.runs
        );
        return Ok(());
    }
    // The queued arm (the last), or every arm with --trace-both.
    let traced: Vec<&(&str, Report)> = if args.trace_both {
        reports.iter().collect()
    } else {
        reports.last().into_iter().collect()
    };
    let arms: Vec<_> =
        traced.iter().map(|(label, r)| (*label, &r.trace, &r.stream_roles)).collect();
    write_file(&args.trace, &chrome_json(&arms), "--trace")?;
    let which = traced.iter().map(|(label, _)| *label).collect::<Vec<_>>().join(" and ");
    println!(
        "\ntrace: {} ({which}; open it in https://ui.perfetto.dev)",
        absolute(&args.trace).display()
    );
    if let (Some(path), Some((_, report))) = (&args.trace_text, traced.last()) {
        write_file(path, &report.text_trace(), "--trace-text")?;
        println!("text trace: {}", absolute(path).display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
