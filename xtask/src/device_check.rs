//! `cargo xtask device-check [--lib PATH] [--device N] [--overrun-mib N] [--overlap-runs N]
//! [--overlap-mib N]`: backend-acl's device check, printed, then each overlap arm's device
//! gaps ([`ArmSummary`]). `--overrun-mib` sizes the copies the event-wait overrun step queues;
//! `--overlap-runs` and `--overlap-mib` are the overlap step's runs per depth and the size of
//! the copy that stands in for each run's AICore kernel.

use std::path::PathBuf;

use backend_acl::Library;
use backend_acl::check::{self, CheckOptions};

/// Parses the arguments, runs the check and prints its report. A machine without CANN or
/// without a device gets one line (the error), and every failure exits non-zero.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let options = parse(args)?;
    let report = check::run(&options);
    if let Some(reason) = &report.unavailable {
        return Err(format!("device-check: {reason}"));
    }
    print!("{report}");
    for arm in &report.overlap {
        println!("  {}", arm_summary(arm.depth, &arm.timings));
    }
    if report.passed() {
        Ok(())
    } else {
        Err("device-check: a check failed (see FAIL above)".to_owned())
    }
}

fn parse(args: &[&str]) -> Result<CheckOptions, String> {
    let mut options = CheckOptions::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--lib" => {
                let path = rest.next().ok_or("--lib needs a path")?;
                options.library = Library::Path(PathBuf::from(path));
            }
            "--overrun-mib" => {
                let mib = rest.next().ok_or("--overrun-mib needs a size in MiB")?;
                let mib: usize = mib.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                    format!("--overrun-mib takes a size in MiB (256, ...), not `{mib}`")
                })?;
                options.overrun_copy_bytes = mib << 20;
            }
            "--overlap-mib" => {
                let mib = rest.next().ok_or("--overlap-mib needs a size in MiB")?;
                let mib: usize = mib.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                    format!("--overlap-mib takes a size in MiB (32, ...), not `{mib}`")
                })?;
                options.overlap_copy_bytes = mib << 20;
            }
            "--overlap-runs" => {
                let runs = rest.next().ok_or("--overlap-runs needs a count")?;
                options.overlap_runs = runs.parse().ok().filter(|&n| n >= 2).ok_or_else(|| {
                    format!("--overlap-runs takes a count of at least 2, not `{runs}`")
                })?;
            }
            "--device" => {
                let id = rest.next().ok_or("--device needs an id")?;
                options.device_id = id
                    .parse()
                    .map_err(|_| format!("--device takes a device id (0, 1, ...), not `{id}`"))?;
            }
            other => {
                return Err(format!(
                    "device-check: unknown argument `{other}`; usage: device-check [--lib PATH] [--device N] [--overrun-mib N] [--overlap-runs N] [--overlap-mib N]"
                ));
            }
        }
    }
    Ok(options)
}

/// One launch-depth arm of the overlap step (issue 45 item 7): the device gap between
/// consecutive runs, from their event timestamps, and how many queued runs proved overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArmSummary {
    /// The arm's launch depth.
    pub(crate) depth: u8,
    /// Consecutive pairs measured (both runs timed by event timestamps).
    pub(crate) gaps: usize,
    /// The median gap, ns (`next start - previous end`, 0 when the next started first).
    pub(crate) median_ns: u64,
    /// The 90th-percentile gap, ns (nearest rank).
    pub(crate) p90_ns: u64,
    /// The largest gap, ns.
    pub(crate) max_ns: u64,
    /// Queued runs (all but the first) whose overlap was proven.
    pub(crate) proven: usize,
    /// Queued runs (all but the first).
    pub(crate) queued: usize,
}

/// The arm's summary from its runs' timings, in submission order: a gap is taken only between
/// two runs both timed by event timestamps (a timing-buffer run's clock may be another).
pub(crate) fn arm_summary(depth: u8, timings: &[lane_core::DeviceTiming]) -> ArmSummary {
    use lane_core::{Overlap, TimingSource};
    let mut gaps: Vec<u64> = timings
        .windows(2)
        .filter(|pair| pair.iter().all(|t| t.source == TimingSource::EventTimestamps))
        .map(|pair| pair[1].start_ns.saturating_sub(pair[0].end_ns))
        .collect();
    gaps.sort_unstable();
    let rank = |q: usize| -> u64 {
        if gaps.is_empty() {
            return 0;
        }
        // Nearest rank: the smallest gap with at least q% of the gaps at or below it.
        let index = (gaps.len() * q).div_ceil(100).max(1) - 1;
        gaps[index.min(gaps.len() - 1)]
    };
    let queued = timings.len().saturating_sub(1);
    ArmSummary {
        depth,
        gaps: gaps.len(),
        median_ns: rank(50),
        p90_ns: rank(90),
        max_ns: gaps.last().copied().unwrap_or(0),
        proven: timings.iter().skip(1).filter(|t| t.overlap == Overlap::Proven).count(),
        queued,
    }
}

impl std::fmt::Display for ArmSummary {
    /// `depth 2: device gap median 3.1 us, p90 4.0 us, max 9.8 us over 99 pairs; overlap proven 98/99`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |ns: u64| ns as f64 / 1_000.0;
        write!(
            f,
            "depth {}: device gap median {:.1} us, p90 {:.1} us, max {:.1} us over {} pairs; overlap proven {}/{}",
            self.depth,
            us(self.median_ns),
            us(self.p90_ns),
            us(self.max_ns),
            self.gaps,
            self.proven,
            self.queued
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::{DeviceTiming, Overlap, TimingSource};

    fn timed(start_ns: u64, end_ns: u64, overlap: Overlap) -> DeviceTiming {
        DeviceTiming { start_ns, end_ns, source: TimingSource::EventTimestamps, overlap }
    }

    #[test]
    fn an_arms_gaps_are_next_start_minus_previous_end_with_median_p90_and_proven_fraction() {
        // Gaps 10, 20, 30, ..., 100 ns; run 1 not queued, runs 2..=11 proven but one.
        let mut timings = vec![timed(0, 100, Overlap::NotQueued)];
        for i in 1..=10_u64 {
            let start = timings.last().unwrap().end_ns + 10 * i;
            let overlap = if i == 4 { Overlap::NotProven } else { Overlap::Proven };
            timings.push(timed(start, start + 100, overlap));
        }
        let arm = arm_summary(2, &timings);
        assert_eq!(
            arm,
            ArmSummary {
                depth: 2,
                gaps: 10,
                median_ns: 50,
                p90_ns: 90,
                max_ns: 100,
                proven: 9,
                queued: 10,
            }
        );
        assert_eq!(
            arm.to_string(),
            "depth 2: device gap median 0.1 us, p90 0.1 us, max 0.1 us over 10 pairs; overlap proven 9/10"
        );
    }

    #[test]
    fn a_run_started_before_its_predecessor_ended_has_gap_zero_and_a_timing_buffer_run_no_gap() {
        let mut buffer = timed(150, 300, Overlap::Proven);
        buffer.source = TimingSource::TimingBuffer;
        let timings = [timed(0, 100, Overlap::NotQueued), timed(90, 200, Overlap::Proven), buffer];
        let arm = arm_summary(1, &timings);
        assert_eq!((arm.gaps, arm.median_ns, arm.max_ns), (1, 0, 0));
        assert_eq!((arm.proven, arm.queued), (2, 2));
        assert_eq!(arm_summary(1, &[]).queued, 0);
    }

    #[test]
    fn arguments_name_the_library_and_the_device() {
        let options = parse(&["--lib", "/x/libascendcl.so", "--device", "3"]).unwrap();
        assert_eq!(options.library, Library::Path(PathBuf::from("/x/libascendcl.so")));
        assert_eq!(options.device_id, 3);
        assert_eq!(parse(&[]).unwrap(), CheckOptions::default());
    }

    #[test]
    fn bad_arguments_are_refused_with_the_usage() {
        let error = |args: &[&str]| parse(args).unwrap_err();
        assert!(error(&["--device", "x"]).contains("device id"));
        assert!(error(&["--lib"]).contains("needs a path"));
        assert!(error(&["--fast"]).contains("usage"));
        assert!(error(&["--overlap-runs", "1"]).contains("at least 2"));
        assert!(error(&["--overlap-mib", "0"]).contains("MiB"));
    }

    #[test]
    fn overlap_arguments_set_the_runs_per_depth_and_the_stand_in_copy() {
        let options = parse(&["--overlap-runs", "50", "--overlap-mib", "64"]).unwrap();
        assert_eq!((options.overlap_runs, options.overlap_copy_bytes), (50, 64 << 20));
    }
}
