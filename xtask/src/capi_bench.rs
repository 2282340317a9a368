//! The runner loops through the C ABI on the fake libascendcl: `cargo xtask fake-bench`'s
//! first part. It builds `lane-capi/examples/fake_bench.cpp` against the release static
//! library (`librun_lane.a`, linked with rustc's `native-static-libs`, as the install tree's
//! `run_lane.pc` links it), runs it on the release fake, and returns its figures as data
//! (docs/data/capi-bench.json): per kernel length, the fake's floor and each loop's median and
//! p99 device gap at launch depth two (`depth2`) beside depth one (`depth1`), with the loops'
//! target checked; beside them the hand-written anchors (the same runs on the fake's ACL calls,
//! no lane) and an idle lane's submit to launch beside the launch's own calls, each lane/anchor
//! figure against its target, the lane measured with its own threads (`submitters_bound` off
//! and on) and with the caller driving it (`RUN_LANE_DRIVE_CALLER`); then its
//! `--lanes` mode: sixteen lanes at once, healthy and beside a hung and a poisoned device, the
//! fourteen's median gap in each case against the run-to-run noise, and what the process of
//! sixteen lanes costs in threads and resident memory.
//!
//! This file parses the bench's output and runs it; the figures as data are in
//! `capi_bench/figures.rs` (split for length).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::{dist, project_root};

mod figures;

use figures::data;
/// Kernel lengths measured (us).
const KERNELS_US: [u64; 3] = [300, 1_000, 3_000];
/// Runs per arm by default, and runs skipped at the start of each.
const RUNS: u32 = 300;
const SKIP: u32 = 20;
/// Runs per block of the paired measurement (fake_bench.cpp's `kBlock`): the anchors and loop
/// (b)'s lanes take turns, a block each.
const BLOCK: u32 = 20;
/// The sixteen-lane mode: runs per lane by default (enough for device 14's lane to hang,
/// recover and hang again a few times at the 200 ms op timeout), its kernel length (us),
/// and how often each case runs (the spread of its medians is the noise).
const LANES_RUNS: u32 = 1_000;
const LANES_KERNEL_US: u64 = 1_000;
const LANES_REPEATS: u32 = 5;
/// How many processes run the loops: the anchors' targets are judged on the middle one, not on
/// one process's noise.
const LOOP_ROUNDS: u32 = 3;
/// The kernel lengths the anchors' targets are stated at (us); the other lengths' anchors are
/// shown, not judged.
const ANCHOR_TARGETS_US: [u64; 2] = [300, 1_000];
/// The lane's depth-one median gap may be at most this much of the depth-one anchor's, in
/// percent (1.05x).
const DEPTH_ONE_PERCENT: u64 = 105;
/// An idle lane's submit to launch may be at most this much above the launch's own calls (ns).
const IDLE_SLACK_NS: u64 = 5_000;
/// The lanes of the `--lanes` mode, and the healthy ones measured beside the faulty two.
const LANES: u64 = 16;
const FOURTEEN: u32 = 14;

/// One measured arm: a loop on a profile at one kernel length.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Arm {
    pub(crate) kernel_us: u64,
    pub(crate) loop_name: char,
    pub(crate) profile: String,
    pub(crate) runs: u32,
    pub(crate) ok: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// The fake's floor at one kernel length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Floor {
    pub(crate) kernel_us: u64,
    pub(crate) gaps: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// The faulty two of a `lanes faulty` line: each lane's runs, `Ok` outcomes and poisons
/// (runs that failed and poisoned the lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FaultyTwo {
    pub(crate) hung: [u32; 3],
    pub(crate) poisoned: [u32; 3],
}

/// One case of the sixteen-lane mode: the fourteen's gaps (devices 0 to 13), and with
/// `faulty` the outcomes of devices 14 (hung) and 15 (poisoned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LanesCase {
    pub(crate) repeat: u32,
    pub(crate) kernel_us: u64,
    pub(crate) runs: u32,
    pub(crate) ok: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) faulty: Option<FaultyTwo>,
}

/// What the process of sixteen lanes cost (/proc/self/status): threads and VmRSS (KiB)
/// before the lanes, once created, once they ran, after destroy; threads named `lane*` and
/// `fake-acl-*` once they ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LanesCost {
    pub(crate) threads: [u64; 4],
    pub(crate) rss_kib: [u64; 4],
    pub(crate) lane_threads: u64,
    pub(crate) fake_stream_threads: u64,
}

/// At depth two, from a run's submit to its launch's return (the `launch_aicpu` callback),
/// for one loop at one kernel length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Latency {
    pub(crate) kernel_us: u64,
    pub(crate) loop_name: char,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// Which hand-written anchor: launch, wait, read, launch (`depth1`), or two in flight, run
/// N+1 launched before N's wait (`queued`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AnchorKind {
    /// `depth1`: each run launched once the one before was read.
    DepthOne,
    /// `queued`: two runs in flight, from the submitting thread.
    Queued,
    /// `handoff`: depth one on two threads: a device thread launches each run once the one
    /// before was read and hands the read run's outcome to the submitting thread, which
    /// waits for it (the shape of a lane whose submitting thread is not the device's).
    HandOff,
}

/// A hand-written anchor's median and p99 gap at one kernel length: the same runs on the
/// fake's ACL calls from the bench's thread, no lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub(crate) kernel_us: u64,
    pub(crate) kind: AnchorKind,
    pub(crate) runs: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// Which lane a figure is of: the lane's own threads running its steps with
/// `submitters_bound` off or on, or the caller driving it (`RUN_LANE_DRIVE_CALLER`: no thread
/// of the lane's own, the device waits made by the bench's thread inside `run_lane_wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    /// The lane's threads; an idle submit wakes the lane thread.
    Off,
    /// The lane's threads, `submitters_bound` on: an idle submit launches on its thread.
    Bound,
    /// No thread of the lane's: every call runs its steps on the calling thread.
    Caller,
}

impl Setting {
    /// Every setting, in the order the tables show them.
    pub(crate) const ALL: [Self; 3] = [Self::Off, Self::Bound, Self::Caller];

    /// The suffix of its arms' profiles (`depth1-bound`) and of its depth-one split
    /// (`lane-caller`), as fake_bench.cpp prints them.
    pub(crate) const fn suffix(self) -> &'static str {
        ["", "-bound", "-caller"][self as usize]
    }

    /// What a row's figure or loop adds for it (`, bound`).
    pub(crate) const fn label(self) -> &'static str {
        ["", ", bound", ", caller-driven"][self as usize]
    }

    /// Its name in the tables of misses and targets.
    pub(crate) const fn name(self) -> &'static str {
        ["option off", "bound", "caller-driven"][self as usize]
    }
}

/// An idle lane at one kernel length, each figure `[median, p99]` in ns: from a submit to its
/// launch's return (`lane`, `bound` with `submitters_bound` on and `caller` with the caller
/// driving, where measured), the same launch's calls made by hand (`calls`, the anchor), of
/// those the two kernel launches alone (`launches`), and what came before the AICore launch
/// (`split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Idle {
    pub(crate) kernel_us: u64,
    pub(crate) runs: u32,
    pub(crate) lane: [u64; 2],
    pub(crate) bound: Option<[u64; 2]>,
    pub(crate) calls: [u64; 2],
    pub(crate) launches: [u64; 2],
    /// Medians (ns) up to the AICore launch's start: the lane's from its submit with the
    /// option off and on, the anchor's from its arm copy's start.
    pub(crate) split: Option<[u64; 3]>,
    /// The caller-driven lane: `[median, p99]` submit to launch, then the median submit to its
    /// AICore launch's start (ns).
    pub(crate) caller: Option<[u64; 3]>,
}

impl Idle {
    /// The lane's `[median, p99]` submit to launch with `setting`, where measured.
    pub(crate) const fn lane_of(&self, setting: Setting) -> Option<[u64; 2]> {
        match (setting, self.bound, self.caller) {
            (Setting::Off, ..) => Some(self.lane),
            (Setting::Bound, Some(bound), _) => Some(bound),
            (Setting::Caller, _, Some([median, p99, _])) => Some([median, p99]),
            _ => None,
        }
    }

    /// The lane's median from its submit to its AICore launch's start with `setting`, where
    /// measured.
    pub(crate) const fn before_core(&self, setting: Setting) -> Option<u64> {
        match (setting, self.split, self.caller) {
            (Setting::Off, Some(split), _) => Some(split[0]),
            (Setting::Bound, Some(split), _) => Some(split[1]),
            (Setting::Caller, _, Some(caller)) => Some(caller[2]),
            _ => None,
        }
    }
}

/// Where a depth-one gap goes at one kernel length, for the depth-one anchor or loop (b) at
/// depth one (`who`: `anchor`, `lane`, `lane-bound`, `lane-caller`), medians in ns: from the
/// predecessor's
/// device end to the AICore launch's start (`react`: the wait's return, the reads, the arm),
/// from there to the AICPU launch's return (`launch`: the launch's calls), and from there to
/// the run's device start (`start`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DepthOneSplit {
    pub(crate) kernel_us: u64,
    pub(crate) who: String,
    pub(crate) react_ns: u64,
    pub(crate) launch_ns: u64,
    pub(crate) start_ns: u64,
    /// The predecessor's device start to the run's: the cycle the three parts sit in.
    pub(crate) period_ns: u64,
    /// The run's device span (its start to its end).
    pub(crate) span_ns: u64,
}

/// One target against its anchor: the lane's median over the anchor's (for the idle figure,
/// also the difference in ns), and whether the target holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AgainstAnchor {
    pub(crate) ratio: f64,
    pub(crate) over_ns: f64,
    pub(crate) anchor_ns: f64,
    pub(crate) met: bool,
}

/// The three targets at one kernel length, for the lane in one [`Setting`]: the lane's depth
/// one (loop (b)) at most 1.05x the depth-one anchor's gap, its depth two at most the queued
/// anchor's gap, an idle submit to launch within 5 us of the launch's own calls (the target
/// where the submitting thread launches, bound or caller-driven; with the option off the
/// figure is stated). Beside them, stated and
/// not judged, the lane's depth one against the hand-off anchor, where it was measured (`met`:
/// within the same 1.05x).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AnchorTargets {
    pub(crate) depth_one: AgainstAnchor,
    pub(crate) depth_two: AgainstAnchor,
    pub(crate) idle: AgainstAnchor,
    pub(crate) hand_off: Option<AgainstAnchor>,
}

/// What the bench printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub(crate) floors: Vec<Floor>,
    pub(crate) arms: Vec<Arm>,
    pub(crate) latencies: Vec<Latency>,
    pub(crate) anchors: Vec<Anchor>,
    pub(crate) idle: Vec<Idle>,
    pub(crate) splits: Vec<DepthOneSplit>,
    pub(crate) lanes: Vec<LanesCase>,
    pub(crate) lanes_cost: Option<LanesCost>,
    /// The loops' further processes ([`LOOP_ROUNDS`]), each parsed on its own: their anchors
    /// are judged against their own lane arms.
    pub(crate) more_rounds: Vec<Measured>,
}

/// The latest `idle` figure for `kernel_us`, which a line that adds to it (`line`) must
/// follow.
fn idle_of<'a>(idle: &'a mut [Idle], kernel_us: u64, line: &str) -> Result<&'a mut Idle, String> {
    idle.iter_mut()
        .rev()
        .find(|i| i.kernel_us == kernel_us)
        .ok_or_else(|| format!("fake_bench printed `{line}` before its `idle` line"))
}

/// Parses the bench's output lines (`floor ...`, `arm ...`, `anchor ...`, `idle ...`, ...; see
/// fake_bench.cpp).
pub(crate) fn parse(output: &str) -> Result<Measured, String> {
    let mut measured = Measured::default();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| format!("fake_bench printed `{line}`: field {i} is not a number"))
        };
        let count = |i: usize| num(i).and_then(|n| u32::try_from(n).map_err(|e| e.to_string()));
        match fields.first() {
            Some(&"floor") if fields.len() == 5 => measured.floors.push(Floor {
                kernel_us: num(1)?,
                gaps: count(2)?,
                median_ns: num(3)?,
                p99_ns: num(4)?,
            }),
            Some(&"latency") if fields.len() == 5 => measured.latencies.push(Latency {
                kernel_us: num(1)?,
                loop_name: fields[2].chars().next().unwrap_or('?'),
                median_ns: num(3)?,
                p99_ns: num(4)?,
            }),
            Some(&"arm") if fields.len() == 8 => measured.arms.push(Arm {
                kernel_us: num(1)?,
                loop_name: fields[2].chars().next().unwrap_or('?'),
                profile: fields[3].to_owned(),
                runs: count(4)?,
                ok: count(5)?,
                median_ns: num(6)?,
                p99_ns: num(7)?,
            }),
            Some(&"anchor") if fields.len() == 6 => measured.anchors.push(Anchor {
                kernel_us: num(1)?,
                kind: match fields[2] {
                    "depth1" => AnchorKind::DepthOne,
                    "queued" => AnchorKind::Queued,
                    "handoff" => AnchorKind::HandOff,
                    _ => {
                        return Err(format!(
                            "fake_bench printed `{line}`: not a depth1, queued or handoff anchor"
                        ));
                    }
                },
                runs: count(3)?,
                median_ns: num(4)?,
                p99_ns: num(5)?,
            }),
            Some(&"idle") if fields.len() == 9 => measured.idle.push(Idle {
                kernel_us: num(1)?,
                runs: count(2)?,
                lane: [num(3)?, num(4)?],
                bound: None,
                calls: [num(5)?, num(6)?],
                launches: [num(7)?, num(8)?],
                split: None,
                caller: None,
            }),
            Some(&"depth1-split") if fields.len() == 8 => {
                let who = fields[2];
                if !["anchor", "lane", "lane-bound", "lane-caller"].contains(&who) {
                    return Err(format!(
                        "fake_bench printed `{line}`: not an anchor, lane, lane-bound or \
                         lane-caller split"
                    ));
                }
                measured.splits.push(DepthOneSplit {
                    kernel_us: num(1)?,
                    who: who.to_owned(),
                    react_ns: num(3)?,
                    launch_ns: num(4)?,
                    start_ns: num(5)?,
                    period_ns: num(6)?,
                    span_ns: num(7)?,
                });
            }
            Some(&"idle-split") if fields.len() == 5 => {
                let kernel_us = num(1)?;
                let figures = [num(2)?, num(3)?, num(4)?];
                idle_of(&mut measured.idle, kernel_us, line)?.split = Some(figures);
            }
            Some(&"idle-bound") if fields.len() == 5 => {
                let kernel_us = num(1)?;
                let figures = [num(3)?, num(4)?];
                idle_of(&mut measured.idle, kernel_us, line)?.bound = Some(figures);
            }
            Some(&"idle-caller") if fields.len() == 6 => {
                let kernel_us = num(1)?;
                let figures = [num(3)?, num(4)?, num(5)?];
                idle_of(&mut measured.idle, kernel_us, line)?.caller = Some(figures);
            }
            Some(&"lanes") if fields.len() == 8 || fields.len() == 14 => {
                let faulty = match (fields[1], fields.len()) {
                    ("healthy", 8) => None,
                    ("faulty", 14) => Some(FaultyTwo {
                        hung: [count(8)?, count(9)?, count(10)?],
                        poisoned: [count(11)?, count(12)?, count(13)?],
                    }),
                    _ => {
                        return Err(format!(
                            "fake_bench printed `{line}`: not a healthy or faulty case"
                        ));
                    }
                };
                measured.lanes.push(LanesCase {
                    repeat: count(2)?,
                    kernel_us: num(3)?,
                    runs: count(4)?,
                    ok: count(5)?,
                    median_ns: num(6)?,
                    p99_ns: num(7)?,
                    faulty,
                });
            }
            Some(&"lanes-cost") if fields.len() == 11 => {
                measured.lanes_cost = Some(LanesCost {
                    threads: [num(1)?, num(2)?, num(3)?, num(4)?],
                    rss_kib: [num(5)?, num(6)?, num(7)?, num(8)?],
                    lane_threads: num(9)?,
                    fake_stream_threads: num(10)?,
                });
            }
            _ => {
                return Err(format!("fake_bench printed a line it never prints: `{line}`"));
            }
        }
    }
    Ok(measured)
}

/// The median gaps of one kind of case over its repeats: mean, lowest, highest (ns).
fn over_repeats(cases: &[&LanesCase]) -> Option<(f64, u64, u64)> {
    let medians: Vec<u64> = cases.iter().map(|c| c.median_ns).collect();
    let (min, max) = (*medians.iter().min()?, *medians.iter().max()?);
    Some((medians.iter().sum::<u64>() as f64 / medians.len() as f64, min, max))
}

/// The healthy and the faulty cases' medians against the noise: (healthy mean, faulty mean,
/// noise, within), the noise being the larger spread (highest minus lowest median) of one
/// case over its repeats, and `within` whether the means differ by at most that.
pub(crate) fn lanes_verdict(lanes: &[LanesCase]) -> Option<(f64, f64, f64, bool)> {
    let healthy: Vec<&LanesCase> = lanes.iter().filter(|c| c.faulty.is_none()).collect();
    let faulty: Vec<&LanesCase> = lanes.iter().filter(|c| c.faulty.is_some()).collect();
    let (h, h_min, h_max) = over_repeats(&healthy)?;
    let (f, f_min, f_max) = over_repeats(&faulty)?;
    let noise = (h_max - h_min).max(f_max - f_min) as f64;
    Some((h, f, noise, (f - h).abs() <= noise))
}

/// The cycle a depth-one gap sits in, on the device's clock alone: a gap is the period less
/// the span, so where the spans differ the gaps differ by as much with the same period.
const CYCLE_PARTS: [SplitPart; 2] = [
    ("a run's device start to the next run's", |s| s.period_ns),
    ("a run's device span", |s| s.span_ns),
];

/// One part of a depth-one gap: its name in the anchors' table, and its figure.
type SplitPart = (&'static str, fn(&DepthOneSplit) -> u64);

/// The three parts of a depth-one gap, in order.
const SPLIT_PARTS: [SplitPart; 3] = [
    ("device end to the AICore launch's start", |s| s.react_ns),
    ("the launch's calls (to the AICPU launch's return)", |s| s.launch_ns),
    ("then to the run's device start", |s| s.start_ns),
];

/// The median of the rounds' figures (the lower middle for an even count).
fn middle_of(rounds: &[&Measured], figure: impl Fn(&Measured) -> Option<u64>) -> Option<u64> {
    let mut figures: Vec<u64> = rounds.iter().filter_map(|m| figure(m)).collect();
    figures.sort_unstable();
    figures.get(figures.len().checked_sub(1)? / 2).copied()
}

impl Measured {
    fn arm(&self, kernel_us: u64, loop_name: char, profile: &str) -> Option<&Arm> {
        self.arms
            .iter()
            .find(|a| a.kernel_us == kernel_us && a.loop_name == loop_name && a.profile == profile)
    }

    /// This process's figures, then the further rounds'.
    fn rounds(&self) -> impl Iterator<Item = &Measured> {
        std::iter::once(self).chain(&self.more_rounds)
    }

    fn split_at(&self, kernel_us: u64, who: &str) -> Option<&DepthOneSplit> {
        self.splits.iter().find(|s| s.kernel_us == kernel_us && s.who == who)
    }

    fn idle_at(&self, kernel_us: u64) -> Option<&Idle> {
        self.idle.iter().find(|i| i.kernel_us == kernel_us)
    }

    /// The anchors' targets at `kernel_us` over the rounds, for the lane in `setting`: each
    /// target's middle round (by ratio; the idle figure by its difference), the lower middle
    /// for an even count; `None` where no round measured them all.
    pub(crate) fn anchor_verdict_with(
        &self,
        kernel_us: u64,
        setting: Setting,
    ) -> Option<AnchorTargets> {
        let rounds: Vec<AnchorTargets> =
            self.rounds().filter_map(|m| m.anchor_targets_with(kernel_us, setting)).collect();
        // The middle round's figure; `None` unless every round has it.
        let middle = |pick: fn(&AnchorTargets) -> Option<AgainstAnchor>,
                      key: fn(&AgainstAnchor) -> f64| {
            let mut figures: Vec<AgainstAnchor> = rounds.iter().map(pick).collect::<Option<_>>()?;
            figures.sort_by(|a, b| key(a).total_cmp(&key(b)));
            figures.get(figures.len().checked_sub(1)? / 2).copied()
        };
        Some(AnchorTargets {
            depth_one: middle(|t| Some(t.depth_one), |a| a.ratio)?,
            depth_two: middle(|t| Some(t.depth_two), |a| a.ratio)?,
            idle: middle(|t| Some(t.idle), |a| a.over_ns)?,
            hand_off: middle(|t| t.hand_off, |a| a.ratio),
        })
    }

    fn anchor(&self, kernel_us: u64, kind: AnchorKind) -> Option<&Anchor> {
        self.anchors.iter().find(|a| a.kernel_us == kernel_us && a.kind == kind)
    }

    /// The anchors' targets at `kernel_us`, the lane's figures being the documented loop's
    /// (b): its depth-one median gap at most 1.05x the depth-one anchor's, its depth-two median
    /// gap at most the queued anchor's, and an idle lane's median submit to launch at most
    /// 5 us above the launch's own calls; `None` where a figure is missing.
    pub(crate) fn anchor_targets(&self, kernel_us: u64) -> Option<AnchorTargets> {
        self.anchor_targets_with(kernel_us, Setting::Off)
    }

    /// [`Self::anchor_targets`] for the lane in `setting` (bound: the `depth1-bound` and
    /// `depth2-bound` arms and the idle lane's bound figure; caller-driven: the `-caller` arms
    /// and the `idle-caller` figure).
    pub(crate) fn anchor_targets_with(
        &self,
        kernel_us: u64,
        setting: Setting,
    ) -> Option<AnchorTargets> {
        let suffix = setting.suffix();
        let against = |lane: u64, anchor: u64, met: bool| AgainstAnchor {
            ratio: lane as f64 / anchor.max(1) as f64,
            over_ns: lane as f64 - anchor as f64,
            anchor_ns: anchor as f64,
            met,
        };
        let arm = |depth: &str| self.arm(kernel_us, 'b', &format!("{depth}{suffix}"));
        let (one, two) = (arm("depth1")?.median_ns, arm("depth2")?.median_ns);
        let by_hand_one = self.anchor(kernel_us, AnchorKind::DepthOne)?.median_ns;
        let queued = self.anchor(kernel_us, AnchorKind::Queued)?.median_ns;
        let idle = self.idle_at(kernel_us)?;
        let lane = idle.lane_of(setting)?;
        let (submit, calls) = (lane[0], idle.calls[0]);
        let two_threads = self.anchor(kernel_us, AnchorKind::HandOff);
        // Depth one within 1.05x of `anchor`.
        let depth_one = |anchor: u64| {
            let met = one.saturating_mul(100) <= anchor.saturating_mul(DEPTH_ONE_PERCENT);
            against(one, anchor, met)
        };
        Some(AnchorTargets {
            hand_off: two_threads.map(|a| depth_one(a.median_ns)),
            depth_one: depth_one(by_hand_one),
            depth_two: against(two, queued, two <= queued),
            idle: against(submit, calls, submit <= calls.saturating_add(IDLE_SLACK_NS)),
        })
    }

    /// This round's loops against their target at `kernel_us`, in per mille of what the
    /// target allows (at most 1000 holds): the largest of (b)'s and (c)'s depth-two median
    /// gap over the most it may be (a third of the same loop's depth-one gap, or the queued
    /// anchor's gap in this round where that is larger: decision 0022), and of their
    /// depth-two gap over 2x loop (a)'s.
    fn loop_target_permille(&self, kernel_us: u64) -> Option<u64> {
        let queued = |l| self.arm(kernel_us, l, "depth2").map(|a| a.median_ns);
        let depth_one = |l| self.arm(kernel_us, l, "depth1").map(|a| a.median_ns);
        let up_front = queued('a')?;
        let anchor = self.anchor(kernel_us, AnchorKind::Queued).map(|a| a.median_ns);
        let mut worst = 0;
        for l in ['b', 'c'] {
            let (q, d) = (queued(l)?, depth_one(l)?);
            let of_bound = match anchor {
                // The hand-written queued loop cannot reach a third here: the fake's own
                // cross-stream hand-over bounds the queued gap, so that loop's gap is the bound.
                Some(anchor) if anchor.saturating_mul(3) > d => {
                    q.saturating_mul(1_000) / anchor.max(1)
                }
                _ => q.saturating_mul(3_000) / d.max(1),
            };
            let of_up_front = q.saturating_mul(1_000) / up_front.saturating_mul(2).max(1);
            worst = worst.max(of_bound).max(of_up_front);
        }
        Some(worst)
    }

    /// Whether the targets hold at `kernel_us`: (b) and (c) at depth two have a median gap at
    /// most 1/3 of depth one's (`depth1`, the same loop), or at most the queued anchor's gap
    /// where that is larger (decision 0022), and at most 2x loop (a)'s, judged on the middle
    /// round (each round's worst loop against the target, the median of those), as the
    /// anchors' targets are: one process's medians on a shared machine move by tens of us
    /// from the next's.
    pub(crate) fn targets_hold(&self, kernel_us: u64) -> Option<bool> {
        let rounds: Vec<&Self> = self.rounds().collect();
        middle_of(&rounds, |m| m.loop_target_permille(kernel_us)).map(|p| p <= 1_000)
    }

    /// The hand-written anchors' own queued gap over their depth-one gap at `kernel_us`, on
    /// the middle round (per mille): the best ratio the same calls reach without a lane; above
    /// a third, the queued anchor's gap bounds the loops' (decision 0022).
    fn anchor_ratio_permille(&self, kernel_us: u64) -> Option<u64> {
        let rounds: Vec<&Self> = self.rounds().collect();
        middle_of(&rounds, |m| {
            let one = m.anchor(kernel_us, AnchorKind::DepthOne)?.median_ns;
            let queued = m.anchor(kernel_us, AnchorKind::Queued)?.median_ns;
            Some(queued.saturating_mul(1_000) / one.max(1))
        })
    }
}

/// Builds the bench (release libraries, then the C++ program), runs its loops ([`LOOP_ROUNDS`]
/// processes) and its `--lanes` mode (`runs_asked` runs per arm and per lane, else [`RUNS`]
/// and [`LANES_RUNS`]), and returns its figures as data ([`data`]).
pub(crate) fn run(runs_asked: Option<u32>) -> Result<Value, String> {
    let runs = runs_asked.unwrap_or(RUNS);
    let built = dist::build_release()?;
    let fake = dist::build_fake()?;
    let scratch = std::env::temp_dir().join(format!("run-lane-capi-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let exe = compile(&scratch, &built.staticlib, &built.native_static_libs)?;
    let kernels: Vec<String> = KERNELS_US.iter().map(u64::to_string).collect();
    let loop_args = [runs.to_string(), SKIP.to_string(), kernels.join(",")];
    // The bench on the fake with `args`: its stdout, or why it failed.
    let bench = |lanes: bool, args: &[String]| {
        let mut command = Command::new(&exe);
        command.args(lanes.then_some("--lanes")).arg(&fake).args(args);
        let output = command.output();
        let output = output.map_err(|e| format!("could not run {}: {e}", exe.display()));
        output.and_then(succeeded)
    };
    let mut loops = Vec::new();
    for round in 1..=LOOP_ROUNDS {
        println!(
            "fake-bench: the C ABI loops, round {round} of {LOOP_ROUNDS} ({runs} runs per arm)"
        );
        let output = bench(false, &loop_args);
        let failed = output.is_err();
        loops.push(output);
        if failed {
            break;
        }
    }
    let lanes_runs = runs_asked.unwrap_or(LANES_RUNS);
    let lanes = loops.iter().all(Result::is_ok).then(|| {
        println!(
            "fake-bench: sixteen lanes at once ({lanes_runs} runs per lane, {LANES_REPEATS} repeats)"
        );
        let args = [lanes_runs.into(), SKIP.into(), LANES_KERNEL_US, LANES_REPEATS.into()];
        bench(true, &args.map(|n: u64| n.to_string()))
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let rounds = loops.into_iter().map(|output| parse(&output?));
    let mut rounds = rounds.collect::<Result<Vec<_>, String>>()?.into_iter();
    let mut measured = rounds.next().ok_or("fake_bench ran no loops")?;
    measured.more_rounds = rounds.collect();
    if let Some(lanes) = lanes {
        let lanes = parse(&lanes?)?;
        measured.lanes = lanes.lanes;
        measured.lanes_cost = lanes.lanes_cost;
    }
    let header = std::fs::read_to_string(project_root().join(dist::HEADER));
    let abi = header.ok().and_then(|h| dist::abi_major(&h).ok());
    Ok(data(&measured, runs, abi))
}

/// A finished bench's stdout, or why it failed.
fn succeeded(output: std::process::Output) -> Result<String, String> {
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "fake_bench failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// `c++ -O2` of the bench against the static library.
fn compile(scratch: &Path, staticlib: &Path, native: &[String]) -> Result<PathBuf, String> {
    let root = project_root();
    let exe = scratch.join("fake_bench");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let output = Command::new(&compiler)
        .args(["-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(root.join("lane-capi/include"))
        .arg(root.join("lane-capi/examples/fake_bench.cpp"))
        .arg(staticlib)
        .args(native)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("could not start {compiler}: {e}"))?;
    if output.status.success() {
        Ok(exe)
    } else {
        Err(format!("compiling fake_bench.cpp failed: {}", String::from_utf8_lossy(&output.stderr)))
    }
}

#[cfg(test)]
mod tests;
