//! Per-run and per-workload figures: device start/end, idle gaps, host time, throughput,
//! device utilisation and outcome counts.

use std::collections::BTreeMap;
use std::fmt;

use lane_core::{Outcome, PublicationResult, Verdict};

use crate::device::HostUse;

/// Nanoseconds as microseconds with three decimals (`12.345`), exact and deterministic.
pub fn fmt_us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// Microseconds (finite, not negative) as whole nanoseconds, rounded; saturates at the top.
pub fn us_to_ns(us: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (us * 1_000.0).round() as u64;
    ns
}

/// One run's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunStat {
    /// The run id.
    pub run: u64,
    /// Its outcome line.
    pub verdict: String,
    /// Device start, from its own slot's timing buffer (when its status was read).
    pub start_ns: Option<u64>,
    /// Device end.
    pub end_ns: Option<u64>,
    /// Device idle time between the previous timed run's end and this run's start.
    pub gap_before_ns: Option<u64>,
    /// Host time spent for it on the lane thread.
    pub host: HostUse,
    /// Host time in calls spent for it on virtual host workers (its prepare and finalise,
    /// when they ran off the lane thread).
    pub worker_ns: u64,
}

/// How many items ended which way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    /// Runs `Ok`.
    pub ok: u64,
    /// Runs `Failed`.
    pub failed: u64,
    /// Runs `Poisoned` by another run.
    pub poisoned: u64,
    /// Runs `Cancelled`.
    pub cancelled: u64,
    /// Publications uploaded.
    pub uploaded: u64,
    /// Publications failed, cancelled or poisoned.
    pub publications_not_uploaded: u64,
}

impl OutcomeCounts {
    /// Counts `outcomes`.
    pub fn of(outcomes: &[Outcome]) -> Self {
        let mut c = Self::default();
        for outcome in outcomes {
            match outcome {
                Outcome::Run(r) => match r.verdict {
                    Verdict::Ok => c.ok += 1,
                    Verdict::Failed { .. } => c.failed += 1,
                    Verdict::Poisoned { .. } => c.poisoned += 1,
                    Verdict::Cancelled => c.cancelled += 1,
                },
                Outcome::Publication(p) => match p.result {
                    PublicationResult::Uploaded => c.uploaded += 1,
                    _ => c.publications_not_uploaded += 1,
                },
            }
        }
        c
    }

    /// Runs with an outcome.
    pub const fn runs(&self) -> u64 {
        self.ok + self.failed + self.poisoned + self.cancelled
    }
}

impl fmt::Display for OutcomeCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            (self.ok, "ok"),
            (self.failed, "failed"),
            (self.poisoned, "poisoned"),
            (self.cancelled, "cancelled"),
            (self.uploaded, "uploaded"),
            (self.publications_not_uploaded, "not uploaded"),
        ];
        let text: Vec<String> =
            parts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
        if text.is_empty() { f.write_str("none") } else { f.write_str(&text.join(", ")) }
    }
}

/// A workload's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Outcome counts.
    pub counts: OutcomeCounts,
    /// Host time from the start to the last run outcome.
    pub wall_ns: u64,
    /// `Ok` runs per second of host (wall) time.
    pub runs_per_s: f64,
    /// Busy device time over the window from the first timed run's start to the last one's
    /// end (preamble included; `None` without timed runs).
    pub device_utilisation: Option<f64>,
    /// Mean device idle gap between consecutive timed runs.
    pub mean_gap_ns: Option<f64>,
    /// Median (nearest rank) of the same gaps, which the demo prints: a few warm-up gaps can
    /// lift the mean above the p99.
    pub median_gap_ns: Option<u64>,
    /// 99th percentile (nearest rank) of the same gaps.
    pub p99_gap_ns: Option<u64>,
    /// Mean host time in calls per run with an outcome.
    pub host_busy_per_run_ns: Option<f64>,
}

/// Per-run figures and the workload summary of one simulation.
pub fn summarise(
    outcomes: &[Outcome],
    host_use: &BTreeMap<u64, HostUse>,
    worker_use: &BTreeMap<u64, u64>,
    wall_ns: u64,
) -> (Vec<RunStat>, Summary) {
    let mut runs = Vec::new();
    let mut prev_end: Option<u64> = None;
    let mut gaps = Vec::new();
    let (mut busy, mut first_start, mut last_end) = (0_u64, None::<u64>, None::<u64>);
    for outcome in outcomes {
        let Outcome::Run(r) = outcome else { continue };
        let timing = r.timing.filter(|t| t.end_ns >= t.start_ns && t.end_ns > 0);
        let gap = match (timing, prev_end) {
            (Some(t), Some(prev)) => Some(t.start_ns.saturating_sub(prev)),
            _ => None,
        };
        if let Some(t) = timing {
            gaps.extend(gap);
            busy += t.end_ns - t.start_ns;
            first_start = Some(first_start.map_or(t.start_ns, |f| f.min(t.start_ns)));
            last_end = Some(last_end.map_or(t.end_ns, |l| l.max(t.end_ns)));
            prev_end = Some(t.end_ns);
        }
        runs.push(RunStat {
            run: r.run.0,
            verdict: outcome.to_string(),
            start_ns: timing.map(|t| t.start_ns),
            end_ns: timing.map(|t| t.end_ns),
            gap_before_ns: gap,
            host: host_use.get(&r.run.0).copied().unwrap_or_default(),
            worker_ns: worker_use.get(&r.run.0).copied().unwrap_or_default(),
        });
    }
    let counts = OutcomeCounts::of(outcomes);
    let secs = wall_ns as f64 / 1e9;
    let device_utilisation = match (first_start, last_end) {
        (Some(s), Some(e)) if e > s => Some(busy as f64 / (e - s) as f64),
        _ => None,
    };
    let mean_gap_ns =
        (!gaps.is_empty()).then(|| gaps.iter().sum::<u64>() as f64 / gaps.len() as f64);
    gaps.sort_unstable();
    let median_gap_ns = nearest_rank(&gaps, 50);
    let p99_gap_ns = nearest_rank(&gaps, 99);
    let host_busy_per_run_ns = (!runs.is_empty())
        .then(|| runs.iter().map(|r| r.host.busy_ns).sum::<u64>() as f64 / runs.len() as f64);
    let summary = Summary {
        counts,
        wall_ns,
        runs_per_s: if secs > 0.0 { counts.ok as f64 / secs } else { 0.0 },
        device_utilisation,
        mean_gap_ns,
        median_gap_ns,
        p99_gap_ns,
        host_busy_per_run_ns,
    };
    (runs, summary)
}

/// The `pct`th percentile of `sorted` by nearest rank: the smallest value with at least
/// `pct`% of the values at or below it (`None` when empty).
fn nearest_rank(sorted: &[u64], pct: usize) -> Option<u64> {
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// The per-run table (`--per-run`).
pub fn per_run_table(runs: &[RunStat]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>6} {:>14} {:>14} {:>11} {:>11} {:>11}  outcome",
        "run", "start_us", "end_us", "gap_us", "host_us", "blocked_us"
    );
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), fmt_us);
    for r in runs {
        let _ = writeln!(
            out,
            "{:>6} {:>14} {:>14} {:>11} {:>11} {:>11}  {}",
            r.run,
            opt(r.start_ns),
            opt(r.end_ns),
            opt(r.gap_before_ns),
            fmt_us(r.host.busy_ns),
            fmt_us(r.host.blocked_ns),
            r.verdict
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lane_core::{DeviceTiming, RunId, RunOutcome};

    fn ok(run: u64, start: u64, end: u64) -> Outcome {
        Outcome::Run(RunOutcome {
            run: RunId(run),
            tag: None,
            verdict: Verdict::Ok,
            timing: Some(DeviceTiming { start_ns: start, end_ns: end, ..Default::default() }),
            key: None,
            declines: 0,
        })
    }

    #[test]
    fn gaps_utilisation_and_p99_come_from_the_runs_own_timing() {
        let outcomes = [ok(1, 0, 100), ok(2, 110, 200), ok(3, 230, 300)];
        let (runs, s) = summarise(&outcomes, &BTreeMap::new(), &BTreeMap::new(), 1_000_000_000);
        assert_eq!(runs[0].gap_before_ns, None);
        assert_eq!(runs[1].gap_before_ns, Some(10));
        assert_eq!(runs[2].gap_before_ns, Some(30));
        assert_eq!(s.mean_gap_ns, Some(20.0));
        assert_eq!(s.median_gap_ns, Some(10));
        assert_eq!(s.p99_gap_ns, Some(30));
        assert_eq!(s.device_utilisation, Some(260.0 / 300.0));
        assert_eq!(s.runs_per_s, 3.0);
        assert_eq!(s.counts.to_string(), "3 ok");
    }

    #[test]
    fn microseconds_print_exactly() {
        assert_eq!(fmt_us(0), "0.000");
        assert_eq!(fmt_us(1_234_567), "1234.567");
    }
}
