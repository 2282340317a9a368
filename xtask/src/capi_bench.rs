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

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::{dist, project_root};
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
        match self {
            Self::Off => "",
            Self::Bound => "-bound",
            Self::Caller => "-caller",
        }
    }

    /// What a row's figure or loop adds for it (`, bound`).
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::Off => "",
            Self::Bound => ", bound",
            Self::Caller => ", caller-driven",
        }
    }

    /// Its name in the tables of misses and targets.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Self::Off => "option off",
            Self::Bound => "bound",
            Self::Caller => "caller-driven",
        }
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
                return Err(format!(
                    "fake_bench printed a line it never prints: `{line}`"
                ));
            }
        }
    }
    Ok(measured)
}

/// The median gaps of one kind of case over its repeats: mean, lowest, highest (ns).
fn over_repeats(cases: &[&LanesCase]) -> Option<(f64, u64, u64)> {
    let medians: Vec<u64> = cases.iter().map(|c| c.median_ns).collect();
    let (min, max) = (*medians.iter().min()?, *medians.iter().max()?);
    Some((
        medians.iter().sum::<u64>() as f64 / medians.len() as f64,
        min,
        max,
    ))
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
    ("the launch's calls (to the AICPU launch's return)", |s| {
        s.launch_ns
    }),
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
        self.splits
            .iter()
            .find(|s| s.kernel_us == kernel_us && s.who == who)
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
        let rounds: Vec<AnchorTargets> = self
            .rounds()
            .filter_map(|m| m.anchor_targets_with(kernel_us, setting))
            .collect();
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
        self.anchors
            .iter()
            .find(|a| a.kernel_us == kernel_us && a.kind == kind)
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
        let one = self
            .arm(kernel_us, 'b', &format!("depth1{suffix}"))?
            .median_ns;
        let two = self
            .arm(kernel_us, 'b', &format!("depth2{suffix}"))?
            .median_ns;
        let by_hand_one = self.anchor(kernel_us, AnchorKind::DepthOne)?.median_ns;
        let queued = self.anchor(kernel_us, AnchorKind::Queued)?.median_ns;
        let idle = self.idle_at(kernel_us)?;
        let lane = idle.lane_of(setting)?;
        let (submit, calls) = (lane[0], idle.calls[0]);
        let two_threads = self
            .anchor(kernel_us, AnchorKind::HandOff)
            .map(|a| a.median_ns);
        Some(AnchorTargets {
            hand_off: two_threads.map(|two| {
                against(
                    one,
                    two,
                    one.saturating_mul(100) <= two.saturating_mul(DEPTH_ONE_PERCENT),
                )
            }),
            depth_one: against(
                one,
                by_hand_one,
                one.saturating_mul(100) <= by_hand_one.saturating_mul(DEPTH_ONE_PERCENT),
            ),
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
        let anchor = self
            .anchor(kernel_us, AnchorKind::Queued)
            .map(|a| a.median_ns);
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

/// Nanoseconds in microseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// The figures as data (docs/data/capi-bench.json): the loops' table from the first round,
/// the anchors' from every round, each target judged on the middle round.
pub(crate) fn data(measured: &Measured, runs: u32, abi: Option<u32>) -> Value {
    let (misses, idle_misses) = misses(measured);
    let first = measured.lanes.first();
    json!({
        "settings": {
            "abi": abi,
            "runs": runs,
            "skip": SKIP,
            "rounds": measured.rounds().count(),
            "block": BLOCK,
            "lanes_runs": first.map(|c| c.runs),
            "lanes_kernel_us": first.map(|c| c.kernel_us),
            "lanes_repeats": measured.lanes.iter().filter(|c| c.faulty.is_none()).count(),
            "poisoned_run": first.map(|c| c.runs / 3 + 1),
        },
        "loops": loops(measured),
        "loop_targets": KERNELS_US
            .iter()
            .filter_map(|&k| {
                let holds = measured.targets_hold(k)?;
                let queued: Vec<f64> = measured
                    .rounds()
                    .filter_map(|m| m.anchor(k, AnchorKind::Queued))
                    .map(|a| us(a.median_ns))
                    .collect();
                let of_target: Vec<f64> = measured
                    .rounds()
                    .filter_map(|m| m.loop_target_permille(k))
                    .map(|p| p as f64 / 1_000.0)
                    .collect();
                Some(json!({
                    "kernel_us": k,
                    "holds": holds,
                    "of_target": of_target,
                    "queued_anchor_us": queued,
                    "anchors_ratio": measured.anchor_ratio_permille(k).map(|p| p as f64 / 1_000.0),
                }))
            })
            .collect::<Vec<_>>(),
        "anchors": anchor_rows(measured),
        "targets": target_rows(measured),
        "misses": misses,
        "idle_misses": idle_misses,
        "depth_one_split": split_rows(measured),
        "lanes": measured.lanes.iter().map(lanes_row).collect::<Vec<_>>(),
        "lanes_verdict": lanes_verdict(&measured.lanes).map(|(healthy, faulty, noise, within)| json!({
            "healthy_us": healthy / 1_000.0,
            "faulty_us": faulty / 1_000.0,
            // Rounded first, so a difference that rounds to zero reads +0.00, not -0.00.
            "difference_us": ((faulty - healthy) / 10.0).round() / 100.0 + 0.0,
            "noise_us": noise / 1_000.0,
            "repeats": measured.lanes.iter().filter(|c| c.faulty.is_none()).count(),
            "within": within,
        })),
        "lanes_cost": measured.lanes_cost.map(|cost| {
            let per_lane = |a: u64, b: u64| b.saturating_sub(a) / LANES;
            let [t0, t1, ..] = cost.threads;
            let [r0, r1, r2, _] = cost.rss_kib;
            json!({
                "threads": cost.threads,
                "threads_per_lane": per_lane(t0, t1),
                "lane_threads": cost.lane_threads,
                "fake_stream_threads": cost.fake_stream_threads,
                "rss_mib": cost.rss_kib.map(|kib| kib as f64 / 1024.0),
                "per_lane_kib": [per_lane(r0, r1), per_lane(r0, r2)],
            })
        }),
    })
}

/// The loops' rows, the first round's: each loop's depth-two and depth-one gaps, the fake's
/// floor, and a submit's latency to its launch.
fn loops(measured: &Measured) -> Vec<Value> {
    let mut rows = Vec::new();
    for kernel_us in KERNELS_US {
        let floor = measured.floors.iter().find(|f| f.kernel_us == kernel_us);
        let settings = [
            ('a', Setting::Off),
            ('b', Setting::Off),
            ('b', Setting::Bound),
            ('b', Setting::Caller),
            ('c', Setting::Off),
        ];
        for (l, setting) in settings {
            let suffix = setting.suffix();
            let (Some(q), Some(d)) = (
                measured.arm(kernel_us, l, &format!("depth2{suffix}")),
                measured.arm(kernel_us, l, &format!("depth1{suffix}")),
            ) else {
                continue;
            };
            let latency = measured
                .latencies
                .iter()
                .find(|t| t.kernel_us == kernel_us && t.loop_name == l && setting == Setting::Off);
            rows.push(json!({
                "kernel_us": kernel_us,
                "loop": format!("({l}){}", setting.label()),
                "two_median_us": us(q.median_ns),
                "two_p99_us": us(q.p99_ns),
                "one_median_us": us(d.median_ns),
                "one_p99_us": us(d.p99_ns),
                "ratio": q.median_ns as f64 / d.median_ns.max(1) as f64,
                "floor_us": floor.map(|f| us(f.median_ns)),
                "submit_median_us": latency.map(|t| us(t.median_ns)),
                "submit_p99_us": latency.map(|t| us(t.p99_ns)),
            }));
        }
    }
    rows
}

/// Which of a round's targets a figure of the anchors' table is.
type Pick = fn(&AnchorTargets) -> Option<AgainstAnchor>;

/// The anchors' table's judged figures, each for every [`Setting`] in turn (`, bound`,
/// `, caller-driven`): the anchor it is against (`None`: the idle launch's calls), its name,
/// its target in each setting (`stated`: shown, not judged), and which of a round's targets
/// it is.
const FIGURES: [(Option<AnchorKind>, &str, [&str; 3], Pick); 4] = [
    (
        Some(AnchorKind::DepthOne),
        "depth one: gap",
        ["at most 1.05x"; 3],
        |t| Some(t.depth_one),
    ),
    (
        Some(AnchorKind::HandOff),
        "depth one: gap (anchor: the hand-off loop)",
        ["stated"; 3],
        |t| t.hand_off,
    ),
    (
        Some(AnchorKind::Queued),
        "depth two: gap (anchor: queued)",
        ["at most 1.00x"; 3],
        |t| Some(t.depth_two),
    ),
    (
        None,
        "idle: submit to launch (anchor: the launch's calls)",
        [
            "stated (+5 us is the bound and caller-driven target)",
            "at most +5 us",
            "at most +5 us",
        ],
        |t| Some(t.idle),
    ),
];

/// `lane - anchor` in us.
fn over(lane: u64, anchor: u64) -> f64 {
    (lane as f64 - anchor as f64) / 1_000.0
}

/// The anchors' rows: each figure's anchor and lane medians over the rounds, their ratio (or
/// difference) in each round, and the judged targets' middle round and verdict.
fn anchor_rows(measured: &Measured) -> Vec<Value> {
    let rounds: Vec<&Measured> = measured.rounds().collect();
    let each = |f: &dyn Fn(&Measured) -> Option<f64>| -> Value {
        json!(rounds.iter().map(|m| f(m)).collect::<Vec<_>>())
    };
    let mut rows = Vec::new();
    // A row that only shows its figures, with their difference (lane - anchor).
    let shown = |kernel_us: u64, figure: String, anchor: Value, lane: Value, over: Value| {
        json!({
            "kernel_us": kernel_us, "figure": figure, "anchor_us": anchor, "lane_us": lane,
            "against": over, "difference": true, "middle": null, "target": null, "met": null,
        })
    };
    for kernel_us in KERNELS_US {
        if !rounds.iter().any(|m| m.anchor_targets(kernel_us).is_some()) {
            continue;
        }
        let judged = ANCHOR_TARGETS_US.contains(&kernel_us);
        let hand_off = rounds
            .iter()
            .any(|m| m.anchor(kernel_us, AnchorKind::HandOff).is_some());
        let figures = FIGURES
            .iter()
            .flat_map(|&f| Setting::ALL.map(|setting| (f, setting)));
        for ((kind, name, targets, pick), setting) in figures {
            let verdict = measured.anchor_verdict_with(kernel_us, setting);
            if (setting != Setting::Off && verdict.is_none())
                || (kind == Some(AnchorKind::HandOff) && !hand_off)
            {
                continue;
            }
            let profile = |p: &str| format!("{p}{}", setting.suffix());
            let idle = kind.is_none();
            let show = |a: AgainstAnchor| if idle { a.over_ns / 1_000.0 } else { a.ratio };
            let target = targets[setting as usize];
            let judged = verdict.and_then(|t| pick(&t)).filter(|_| judged);
            rows.push(json!({
                "kernel_us": kernel_us,
                "figure": format!("{name}{}", setting.label()),
                "anchor_us": each(&|m| match kind {
                    Some(kind) => m.anchor(kernel_us, kind).map(|a| us(a.median_ns)),
                    None => m.idle_at(kernel_us).map(|i| us(i.calls[0])),
                }),
                "lane_us": each(&|m| match kind {
                    Some(AnchorKind::DepthOne | AnchorKind::HandOff) => {
                        m.arm(kernel_us, 'b', &profile("depth1")).map(|a| us(a.median_ns))
                    }
                    Some(AnchorKind::Queued) => {
                        m.arm(kernel_us, 'b', &profile("depth2")).map(|a| us(a.median_ns))
                    }
                    None => m
                        .idle_at(kernel_us)
                        .and_then(|i| i.lane_of(setting))
                        .map(|l| us(l[0])),
                }),
                "against": each(&|m| {
                    let t = m.anchor_targets_with(kernel_us, setting)?;
                    pick(&t).map(show)
                }),
                "difference": idle,
                "middle": verdict.and_then(|t| pick(&t)).map(show),
                "target": judged.map(|_| target),
                "met": judged.filter(|_| !target.starts_with("stated")).map(|t| t.met),
            }));
        }
        rows.push(json!({
            "kernel_us": kernel_us,
            "figure": "idle: the two kernel launches alone",
            "anchor_us": each(&|m| m.idle_at(kernel_us).map(|i| us(i.launches[0]))),
            "lane_us": null, "against": null, "difference": false, "middle": null,
            "target": null, "met": null,
        }));
        let split = |m: &Measured| m.idle_at(kernel_us).and_then(|i| i.split);
        if rounds.iter().any(|m| split(m).is_some()) {
            let name = "idle: to the AICore launch's start";
            for setting in Setting::ALL {
                let lane = |m: &Measured| m.idle_at(kernel_us)?.before_core(setting);
                if !rounds.iter().any(|m| lane(m).is_some()) {
                    continue;
                }
                let figure = match setting {
                    Setting::Off => format!("{name} (anchor: from its arm copy)"),
                    _ => format!("{name}{}", setting.label()),
                };
                rows.push(shown(
                    kernel_us,
                    figure,
                    each(&|m| split(m).map(|s| us(s[2]))),
                    each(&|m| lane(m).map(us)),
                    each(&|m| Some(over(lane(m)?, split(m)?[2]))),
                ));
            }
        }
        if rounds
            .iter()
            .any(|m| m.split_at(kernel_us, "lane").is_some())
        {
            let parts = SPLIT_PARTS
                .iter()
                .map(|part| ("where the gap goes", part))
                .chain(CYCLE_PARTS.iter().map(|part| ("the cycle", part)));
            for (group, &(figure, part)) in parts {
                let of = |m: &Measured, who: &str| m.split_at(kernel_us, who).map(part);
                rows.push(shown(
                    kernel_us,
                    format!("depth one, {group}: {figure}"),
                    each(&|m| of(m, "anchor").map(us)),
                    each(&|m| of(m, "lane").map(us)),
                    each(&|m| Some(over(of(m, "lane")?, of(m, "anchor")?))),
                ));
            }
        }
    }
    rows
}

/// The three targets at each judged kernel length for the lane in each [`Setting`], on the
/// middle round: the lane's and the anchor's medians, what the target allows, the lane's
/// figure over it (negative: under it, by that margin), and whether it is met (`null` for a
/// stated figure: the idle submit with the option off).
fn target_rows(measured: &Measured) -> Vec<Value> {
    // Each target: its name, what it allows given the anchor's median (ns), and its pick.
    type Allow = fn(f64) -> f64;
    let targets: [(&str, Allow, Pick); 3] = [
        (
            "depth one: gap at most 1.05x the depth-one anchor's",
            |anchor| anchor * DEPTH_ONE_PERCENT as f64 / 100.0,
            |t| Some(t.depth_one),
        ),
        (
            "depth two: gap at most the queued anchor's",
            |anchor| anchor,
            |t| Some(t.depth_two),
        ),
        (
            "idle: submit to launch within 5 us of the launch's calls",
            |anchor| anchor + IDLE_SLACK_NS as f64,
            |t| Some(t.idle),
        ),
    ];
    let mut rows = Vec::new();
    for &k in &ANCHOR_TARGETS_US {
        for setting in Setting::ALL {
            let Some(verdict) = measured.anchor_verdict_with(k, setting) else {
                continue;
            };
            for (i, (target, allow, pick)) in targets.iter().enumerate() {
                let Some(a) = pick(&verdict) else {
                    continue;
                };
                // With the option off an idle submit wakes the lane thread: stated, not judged.
                let stated = i == 2 && setting == Setting::Off;
                let allowed = allow(a.anchor_ns);
                rows.push(json!({
                    "kernel_us": k,
                    "lane": setting.name(),
                    "target": target,
                    "lane_us": (a.anchor_ns + a.over_ns) / 1_000.0,
                    "anchor_us": a.anchor_ns / 1_000.0,
                    "allowed_us": allowed / 1_000.0,
                    "over_us": (a.anchor_ns + a.over_ns - allowed) / 1_000.0,
                    "met": if stated { Value::Null } else { json!(a.met) },
                }));
            }
        }
    }
    rows
}

/// The targets missed on the middle round, each with what bounds its likely cause: a depth
/// miss beside the spread of its figures over the rounds (at depth one, with what the
/// hand-off loop's one hand-over costs), an idle miss beside what came before its AICore
/// launch (medians over the rounds).
fn misses(measured: &Measured) -> (Vec<Value>, Vec<Value>) {
    let rounds: Vec<&Measured> = measured.rounds().collect();
    let (mut depth, mut idle) = (Vec::new(), Vec::new());
    for &k in &ANCHOR_TARGETS_US {
        for setting in Setting::ALL {
            let Some(t) = measured.anchor_verdict_with(k, setting) else {
                continue;
            };
            // The spread over the rounds (highest minus lowest median) of the anchor's and of
            // the lane's figure, the larger: how far one process's figures move here.
            let spread = |kind: AnchorKind, profile: &str| {
                let profile = format!("{profile}{}", setting.suffix());
                let of = |medians: Vec<u64>| Some(medians.iter().max()? - medians.iter().min()?);
                let anchor = of(rounds
                    .iter()
                    .filter_map(|m| m.anchor(k, kind).map(|a| a.median_ns))
                    .collect())?;
                let lane = of(rounds
                    .iter()
                    .filter_map(|m| m.arm(k, 'b', &profile).map(|a| a.median_ns))
                    .collect())?;
                Some(anchor.max(lane))
            };
            let row = |figure: &str, by_ns: f64, spread_ns: u64, hand_over: Option<f64>| {
                json!({
                    "kernel_us": k,
                    "figure": format!("{figure}, {}", setting.name()),
                    "by_us": by_ns / 1_000.0,
                    "spread_us": us(spread_ns),
                    "within_spread": by_ns <= spread_ns as f64,
                    "hand_over": hand_over,
                    "lane_over_hand_off": t.hand_off.filter(|_| hand_over.is_some()).map(|h| h.ratio),
                })
            };
            if !t.depth_one.met
                && let Some(spread_ns) = spread(AnchorKind::DepthOne, "depth1")
            {
                // Beyond the 1.05x allowed.
                let by = t.depth_one.over_ns
                    - t.depth_one.anchor_ns * (DEPTH_ONE_PERCENT - 100) as f64 / 100.0;
                // The hand-off loop's gap over the depth-one anchor's (per mille, paired
                // within each round), the middle round's.
                let hand_over = middle_of(&rounds, |m| {
                    let two = m.anchor(k, AnchorKind::HandOff)?.median_ns;
                    let one = m.anchor(k, AnchorKind::DepthOne)?.median_ns;
                    Some(two.saturating_mul(1_000) / one.max(1))
                })
                .map(|permille| permille as f64 / 1_000.0);
                depth.push(row("depth one", by, spread_ns, hand_over));
            }
            if !t.depth_two.met
                && let Some(spread_ns) = spread(AnchorKind::Queued, "depth2")
            {
                depth.push(row("depth two", t.depth_two.over_ns, spread_ns, None));
            }
        }
        for setting in [Setting::Bound, Setting::Caller] {
            let judged = measured.anchor_verdict_with(k, setting).map(|t| t.idle);
            let Some(i) = judged.filter(|i| !i.met) else {
                continue;
            };
            let before_core = |setting: Setting| {
                middle_of(&rounds, |m| m.idle_at(k)?.before_core(setting)).map(us)
            };
            idle.push(json!({
                "kernel_us": k,
                "figure": format!("idle, {}", setting.name()),
                "beyond_us": (i.over_ns - IDLE_SLACK_NS as f64) / 1_000.0,
                "lane_us": before_core(setting),
                "anchor_us": middle_of(&rounds, |m| m.idle_at(k)?.split.map(|s| s[2])).map(us),
                "lane_off_us": before_core(Setting::Off),
            }));
        }
    }
    (depth, idle)
}

/// Where the depth-one gaps go at the judged kernel lengths: the middle round of each part,
/// for the anchor and the lane in each [`Setting`].
fn split_rows(measured: &Measured) -> Vec<Value> {
    let rounds: Vec<&Measured> = measured.rounds().collect();
    let mut rows = Vec::new();
    for &k in &ANCHOR_TARGETS_US {
        for (who, name) in [
            ("anchor", "anchor"),
            ("lane", "lane"),
            ("lane-bound", "lane, bound"),
            ("lane-caller", "lane, caller-driven"),
        ] {
            let part = |figure: fn(&DepthOneSplit) -> u64| {
                middle_of(&rounds, |m| m.split_at(k, who).map(figure)).map(us)
            };
            if part(SPLIT_PARTS[0].1).is_none() {
                continue;
            }
            rows.push(json!({
                "kernel_us": k,
                "loop": name,
                "react_us": part(SPLIT_PARTS[0].1),
                "launch_us": part(SPLIT_PARTS[1].1),
                "start_us": part(SPLIT_PARTS[2].1),
                "period_us": part(CYCLE_PARTS[0].1),
                "span_us": part(CYCLE_PARTS[1].1),
            }));
        }
    }
    rows
}

/// One case of the sixteen-lane mode as a row: the fourteen's gaps and outcomes, and runs,
/// `Ok` outcomes and poisons of devices 14 (hung) and 15 (poisoned).
fn lanes_row(case: &LanesCase) -> Value {
    let healthy = [case.runs, case.runs, 0];
    let (name, hung, poisoned) = match case.faulty {
        None => ("healthy 16", healthy, healthy),
        Some(two) => ("14 beside the faulty 2", two.hung, two.poisoned),
    };
    json!({
        "case": name,
        "repeat": case.repeat,
        "median_us": us(case.median_ns),
        "p99_us": us(case.p99_ns),
        "ok": case.ok,
        "runs": case.runs * FOURTEEN,
        "hung": hung,
        "poisoned": poisoned,
    })
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
    let mut loops = Vec::new();
    for round in 1..=LOOP_ROUNDS {
        println!(
            "fake-bench: the C ABI loops, round {round} of {LOOP_ROUNDS} ({runs} runs per arm)"
        );
        let output = Command::new(&exe)
            .arg(&fake)
            .arg(runs.to_string())
            .arg(SKIP.to_string())
            .arg(kernels.join(","))
            .output()
            .map_err(|e| format!("could not run {}: {e}", exe.display()))
            .and_then(succeeded);
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
        Command::new(&exe)
            .arg("--lanes")
            .arg(&fake)
            .arg(lanes_runs.to_string())
            .arg(SKIP.to_string())
            .arg(LANES_KERNEL_US.to_string())
            .arg(LANES_REPEATS.to_string())
            .output()
            .map_err(|e| format!("could not run {}: {e}", exe.display()))
            .and_then(succeeded)
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let mut rounds = Vec::new();
    for output in loops {
        rounds.push(parse(&output?)?);
    }
    let mut rounds = rounds.into_iter();
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
        Err(format!(
            "compiling fake_bench.cpp failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section's tables as docs/performance.md renders them from the data.
    fn markdown(measured: &Measured) -> String {
        crate::perf::capi_tables(&data(measured, 200, Some(7)))
    }

    const OUTPUT: &str = "floor 300 179 6840 8382\n\
        arm 300 a depth2 200 200 9254 16935\narm 300 a depth1 200 200 70415 241315\n\
        arm 300 b depth2 200 200 8583 29184\narm 300 b depth1 200 200 73900 160700\n\
        arm 300 c depth2 200 200 9885 66709\narm 300 c depth1 200 200 74260 204916\n\
        latency 300 b 21500 48000\n";

    #[test]
    fn the_loops_target_is_judged_on_the_middle_round_not_the_first() {
        let missed = OUTPUT.replace("b depth2 200 200 8583", "b depth2 200 200 70000");
        let mut measured = parse(&missed).unwrap();
        assert_eq!(
            measured.targets_hold(300),
            Some(false),
            "one round: its own"
        );
        measured.more_rounds = vec![parse(OUTPUT).unwrap(), parse(OUTPUT).unwrap()];
        assert_eq!(measured.targets_hold(300), Some(true), "two of three hold");
        assert_eq!(measured.more_rounds.len(), 2);
        let text = markdown(&measured);
        assert!(
            text.contains("| 300 us | holds | 3.78, 0.53, 0.53 | - | - |"),
            "{text}"
        );
        measured.more_rounds[1] = parse(&missed).unwrap();
        assert_eq!(measured.targets_hold(300), Some(false), "two of three miss");
    }

    #[test]
    fn the_benchs_lines_parse_and_the_targets_are_checked_per_kernel_length() {
        let measured = parse(OUTPUT).unwrap();
        assert_eq!(measured.floors.len(), 1);
        assert_eq!(measured.arms.len(), 6);
        assert_eq!(measured.targets_hold(300), Some(true));
        assert_eq!(measured.targets_hold(1_000), None, "not measured");
        // A queued gap that is depth one's gap is a miss.
        let missed = OUTPUT.replace("b depth2 200 200 8583", "b depth2 200 200 70000");
        assert_eq!(parse(&missed).unwrap().targets_hold(300), Some(false));
        let text = markdown(&measured);
        assert!(
            text.contains("| 300 us | (b) | 8.6 | 29.2 | 73.9 |"),
            "{text}"
        );
        assert!(text.contains("| 300 us | holds | 0.53 |"), "{text}");
        // The submit-to-launch columns, where measured.
        assert_eq!(measured.latencies.len(), 1);
        assert!(text.contains("| 6.8 | 21.5 | 48.0 |"), "{text}");
        assert!(
            text.contains("| (a) | 9.3 | 16.9 | 70.4 | 241.3 | 0.13 | 6.8 | - | - |"),
            "{text}"
        );
    }

    const LANES: &str = "lanes healthy 1 1000 1000 14000 4000 50000\n\
        lanes-cost 1 33 65 1 4936 8404 11152 10664 32 32\n\
        lanes faulty 1 1000 1000 14000 4200 60000 7 0 4 1000 998 1\n\
        lanes healthy 2 1000 1000 14000 3600 40000\n\
        lanes faulty 2 1000 1000 14000 3900 70000 7 0 4 1000 999 1\n";

    #[test]
    fn the_sixteen_lane_cases_parse_and_their_difference_is_judged_against_the_repeats_spread() {
        let measured = parse(&format!("{OUTPUT}{LANES}")).unwrap();
        assert_eq!(measured.lanes.len(), 4);
        assert_eq!(
            measured.lanes[1].faulty,
            Some(FaultyTwo {
                hung: [7, 0, 4],
                poisoned: [1000, 998, 1]
            })
        );
        assert_eq!(measured.lanes_cost.unwrap().threads, [1, 33, 65, 1]);
        // Healthy 3.8 us (3.6..4.0), faulty 4.05 us (3.9..4.2): 0.25 us apart, noise 0.4 us.
        let (healthy, faulty, noise, within) = lanes_verdict(&measured.lanes).unwrap();
        assert_eq!(
            (healthy, faulty, noise, within),
            (3800.0, 4050.0, 400.0, true)
        );
        let far = LANES
            .replace("14000 4200 60000", "14000 9000 60000")
            .replace("14000 3900 70000", "14000 9200 70000");
        let measured_far = parse(&far).unwrap();
        assert!(
            !lanes_verdict(&measured_far.lanes).unwrap().3,
            "outside the noise"
        );
        let text = markdown(&measured);
        assert!(
            text.contains("| 14 beside the faulty 2 | 1 | 4.2 | 60.0 | 14000 / 14000 | runs 7, Ok 0, poisons 4 | runs 1000, Ok 998, poisons 1 |"),
            "{text}"
        );
        assert!(
            text.contains("| the difference within the noise | yes |"),
            "{text}"
        );
        assert!(text.contains("| difference (us) | +0.25 |"), "{text}");
        assert!(text.contains("| threads | 1 | 33 | 65 | 1 |"), "{text}");
        assert!(
            text.contains("| VmRSS (MiB) | 4.8 | 8.2 | 10.9 | 10.4 |"),
            "{text}"
        );
        assert!(
            text.contains("| threads a lane, once created | 2 |")
                && text.contains("| VmRSS a lane, once created (KiB) | 216 |"),
            "{text}"
        );
        assert!(!markdown(&parse(OUTPUT).unwrap()).contains("| healthy 16 |"));
    }

    const ANCHORS: &str = "anchor 300 depth1 200 70000 90000\n\
        anchor 300 queued 200 9000 20000\n\
        idle 300 200 24000 60000 19500 30000 8000 12000\n";

    #[test]
    fn the_anchors_parse_and_the_lanes_loop_b_is_judged_against_them() {
        let measured = parse(&format!("{OUTPUT}{ANCHORS}")).unwrap();
        assert_eq!(
            measured.anchors[1],
            Anchor {
                kernel_us: 300,
                kind: AnchorKind::Queued,
                runs: 200,
                median_ns: 9_000,
                p99_ns: 20_000
            }
        );
        assert_eq!(measured.idle[0].launches, [8_000, 12_000]);
        // Loop (b): depth one 73.9 us over 70.0 (1.056x, above 1.05x), depth two 8.6 us under
        // 9.0, idle 24.0 us against 19.5 + 5.
        let t = measured.anchor_targets(300).unwrap();
        assert!(!t.depth_one.met && (t.depth_one.ratio - 73_900.0 / 70_000.0).abs() < 1e-9);
        assert!(t.depth_two.met);
        assert!(t.idle.met && (t.idle.over_ns - 4_500.0).abs() < 1e-9);
        assert_eq!(measured.anchor_targets(1_000), None, "not measured");
        assert_eq!(
            measured.anchor_verdict_with(300, Setting::Off),
            Some(t),
            "one round: its own"
        );
        // Half a microsecond more and the idle figure misses.
        let late = ANCHORS.replace("idle 300 200 24000", "idle 300 200 24600");
        let late = parse(&format!("{OUTPUT}{late}")).unwrap();
        assert!(!late.anchor_targets(300).unwrap().idle.met);
        // The loops' verdict line shows the anchors' own ratio: 9000 / 70000.
        assert!(
            markdown(&measured).contains("| 300 us | holds | 0.53 | 9.0 | 0.13 |"),
            "the loops' verdict names the anchors' ratio"
        );
        // Without the anchors' lines the section has no anchors' rows.
        assert_eq!(
            data(&parse(OUTPUT).unwrap(), 200, None)["anchors"],
            json!([])
        );
    }

    #[test]
    fn the_loops_third_gives_way_to_the_queued_anchors_gap_only_where_that_is_larger() {
        // Loop (b) queued 17.0 us against 40.0 us at depth one: above a third (13.3 us) by
        // 1.275, and within 2x of (a)'s 9.25 us.
        let loops = OUTPUT
            .replace("b depth2 200 200 8583", "b depth2 200 200 17000")
            .replace("b depth1 200 200 73900", "b depth1 200 200 40000");
        assert_eq!(
            parse(&loops).unwrap().targets_hold(300),
            Some(false),
            "no anchors: 1/3"
        );
        // The queued anchor's 9.0 us is below a third of 40.0: a third still applies.
        let low = parse(&format!("{loops}{ANCHORS}")).unwrap();
        assert_eq!(low.targets_hold(300), Some(false));
        assert_eq!(low.loop_target_permille(300), Some(1_275));
        // The queued anchor takes 20.0 us: the loop's 17.0 is 0.85 of it.
        let high = ANCHORS.replace("queued 200 9000", "queued 200 20000");
        let high = parse(&format!("{loops}{high}")).unwrap();
        assert_eq!(high.targets_hold(300), Some(true));
        assert_eq!(
            high.loop_target_permille(300),
            Some(918),
            "now (a)'s 2x is the worst"
        );
        // Still a miss where the loop does worse than the queued anchor: 17.0 against 16.0.
        let close = ANCHORS.replace("queued 200 9000", "queued 200 16000");
        let close = parse(&format!("{loops}{close}")).unwrap();
        assert_eq!(close.targets_hold(300), Some(false));
        assert_eq!(close.loop_target_permille(300), Some(1_062));
        assert!(
            markdown(&high).contains("| 300 us | holds | 0.92 | 20.0 | 0.28 |"),
            "the verdict quotes the bound it allowed"
        );
    }

    #[test]
    fn each_target_is_judged_on_its_middle_round() {
        let round = |depth_one_anchor: &str, idle_lane: &str| {
            let anchors = ANCHORS
                .replace(
                    "depth1 200 70000",
                    &format!("depth1 200 {depth_one_anchor}"),
                )
                .replace("idle 300 200 24000", &format!("idle 300 200 {idle_lane}"));
            parse(&format!("{OUTPUT}{anchors}")).unwrap()
        };
        // Depth one 73.9 us against 60.0, 70.0 and 80.0 us: 1.23x, 1.06x, 0.92x, the middle
        // 1.06x missed; idle +4.5, +40.5, +0.5 us, the middle +4.5 met.
        let mut measured = round("60000", "24000");
        measured.more_rounds = vec![round("70000", "60000"), round("80000", "20000")];
        let verdict = measured.anchor_verdict_with(300, Setting::Off).unwrap();
        assert!(!verdict.depth_one.met);
        assert!((verdict.depth_one.ratio - 73_900.0 / 70_000.0).abs() < 1e-9);
        assert!(verdict.idle.met && (verdict.idle.over_ns - 4_500.0).abs() < 1e-9);
        let text = markdown(&measured);
        assert!(
            text.contains("- rounds: 3\n") && text.contains("- block: 20\n"),
            "the paired method's settings are stated: {text}"
        );
        assert!(
            text.contains(
                "| 300 us | depth one: gap | 60.0, 70.0, 80.0 | 73.9, 73.9, 73.9 | 1.23, 1.06, 0.92 | 1.06 | at most 1.05x | no |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | depth two: gap (anchor: queued) | 9.0, 9.0, 9.0 | 8.6, 8.6, 8.6 | 0.95, 0.95, 0.95 | 0.95 | at most 1.00x | yes |"
            ),
            "{text}"
        );
        // With the option off the idle figure is stated, not judged.
        assert!(
            text.contains(
                "| 300 us | idle: submit to launch (anchor: the launch's calls) | 19.5, 19.5, 19.5 | 24.0, 60.0, 20.0 | +4.5, +40.5, +0.5 | +4.5 | stated (+5 us is the bound and caller-driven target) | - |"
            ),
            "{text}"
        );
        assert!(
            !text.contains("gap, bound |") && !text.contains("| (b), bound |"),
            "no bound lines, no bound rows: {text}"
        );
        assert!(
            text.contains(
                "| 300 us | idle: the two kernel launches alone | 8.0, 8.0, 8.0 | - | - | - | - | - |"
            ),
            "{text}"
        );
        // The depth-one miss, 0.4 us beyond 1.05x, is within the anchor's 20 us spread.
        assert!(
            text.contains("| 300 us | depth one, option off | 0.4 | 20.0 | yes | - | - |"),
            "{text}"
        );
        // A kernel length outside the targets' is shown, not judged.
        let other = format!("{OUTPUT}{ANCHORS}").replace(" 300 ", " 3000 ");
        let other = parse(&other).unwrap();
        let text = markdown(&other);
        assert!(
            text.contains("| 3 ms | depth one: gap | 70.0 | 73.9 | 1.06 | 1.06 | - | - |"),
            "{text}"
        );
        assert_eq!(data(&other, 200, None)["misses"], json!([]), "not judged");
    }

    const BOUND: &str = "arm 300 b depth2-bound 200 200 8000 20000\n\
        arm 300 b depth1-bound 200 200 72000 90000\n\
        idle-bound 300 200 23000 40000\n\
        idle-split 300 30000 13000 3000\n";

    #[test]
    fn the_lane_with_submitters_bound_is_judged_beside_the_same_anchors() {
        let measured = parse(&format!("{OUTPUT}{ANCHORS}{BOUND}")).unwrap();
        assert_eq!(measured.idle[0].bound, Some([23_000, 40_000]));
        assert_eq!(
            measured.idle[0].lane,
            [24_000, 60_000],
            "the option-off figure kept"
        );
        // Bound: depth one 72.0 us over 70.0 (1.03x), depth two 8.0 under 9.0, idle 23.0 us
        // against 19.5 + 5.
        let t = measured.anchor_targets_with(300, Setting::Bound).unwrap();
        assert!(t.depth_one.met && (t.depth_one.ratio - 72_000.0 / 70_000.0).abs() < 1e-9);
        assert!(t.depth_two.met);
        assert!(t.idle.met && (t.idle.over_ns - 3_500.0).abs() < 1e-9);
        // The option-off verdict is loop (b)'s own arms, as before.
        let off = measured.anchor_targets(300).unwrap();
        assert!(!off.depth_one.met);
        assert_eq!(
            parse(&format!("{OUTPUT}{ANCHORS}"))
                .unwrap()
                .anchor_targets_with(300, Setting::Bound),
            None
        );
        let text = markdown(&measured);
        assert!(
            text.contains(
                "| 300 us | depth one: gap, bound | 70.0 | 72.0 | 1.03 | 1.03 | at most 1.05x | yes |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | idle: submit to launch (anchor: the launch's calls), bound | 19.5 | 23.0 | +3.5 | +3.5 | at most +5 us | yes |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | (b), bound | 8.0 | 20.0 | 72.0 | 90.0 | 0.11 | 6.8 | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | depth two: gap (anchor: queued), bound | 9.0 | 8.0 | 0.89 | 0.89 | at most 1.00x | yes |"
            ),
            "{text}"
        );
        // The split rows, and the plain verdict: depth one (option off) is the only miss.
        assert_eq!(measured.idle[0].split, Some([30_000, 13_000, 3_000]));
        assert!(
            text.contains(
                "| 300 us | idle: to the AICore launch's start, bound | 3.0 | 13.0 | +10.0 | - | - | - |"
            ),
            "{text}"
        );
        let (misses, idle) = super::misses(&measured);
        assert_eq!((misses.len(), idle.len()), (1, 0), "{misses:?} {idle:?}");
        assert!(
            text.contains("| 300 us | depth one, option off | 0.4 | 0.0 | no | - | - |"),
            "{text}"
        );
        // A bound idle figure 6.5 us over the calls misses by 1.5 us, its split named.
        let late = format!("{OUTPUT}{ANCHORS}{BOUND}")
            .replace("idle-bound 300 200 23000", "idle-bound 300 200 26000");
        let text = markdown(&parse(&late).unwrap());
        assert!(
            text.contains("| 300 us | idle, bound | 1.5 | 13.0 | 3.0 | 30.0 |"),
            "{text}"
        );
        // A bound idle line needs its idle line first.
        assert!(
            parse("idle-bound 300 200 1 2")
                .unwrap_err()
                .contains("before its `idle` line")
        );
        assert!(
            parse("idle-split 300 1 2 3")
                .unwrap_err()
                .contains("before its `idle` line")
        );
    }

    const CALLER: &str = "arm 300 b depth2-caller 200 200 9500 21000\n\
        arm 300 b depth1-caller 200 200 71000 88000\n\
        idle-caller 300 200 25500 41000 9000\n\
        depth1-split 300 lane-caller 31000 16000 4000 371000 330000\n";

    #[test]
    fn the_caller_driven_lane_is_judged_by_the_three_targets_beside_the_lanes_threads() {
        let measured = parse(&format!("{OUTPUT}{ANCHORS}{BOUND}{CALLER}")).unwrap();
        assert_eq!(measured.idle[0].caller, Some([25_500, 41_000, 9_000]));
        assert_eq!(
            measured.idle[0].lane_of(Setting::Caller),
            Some([25_500, 41_000])
        );
        assert_eq!(measured.idle[0].before_core(Setting::Caller), Some(9_000));
        // Caller-driven: depth one 71.0 us over 70.0 (1.01x, met), depth two 9.5 over 9.0
        // (1.06x, missed by 0.5 us), idle 25.5 against 19.5 + 5 (missed by 1.0 us).
        let t = measured.anchor_targets_with(300, Setting::Caller).unwrap();
        assert!(t.depth_one.met && !t.depth_two.met && !t.idle.met, "{t:?}");
        assert_eq!(
            measured.anchor_targets_with(300, Setting::Bound),
            parse(&format!("{OUTPUT}{ANCHORS}{BOUND}"))
                .unwrap()
                .anchor_targets_with(300, Setting::Bound),
            "the threads' figures are their own"
        );
        let text = markdown(&measured);
        for row in [
            "| 300 us | (b), caller-driven | 9.5 | 21.0 | 71.0 | 88.0 | 0.13 | 6.8 | - | - |",
            "| 300 us | depth one: gap, caller-driven | 70.0 | 71.0 | 1.01 | 1.01 | at most 1.05x | yes |",
            "| 300 us | depth two: gap (anchor: queued), caller-driven | 9.0 | 9.5 | 1.06 | 1.06 | at most 1.00x | no |",
            "| 300 us | idle: submit to launch (anchor: the launch's calls), caller-driven | 19.5 | 25.5 | +6.0 | +6.0 | at most +5 us | no |",
            "| 300 us | idle: to the AICore launch's start, caller-driven | 3.0 | 9.0 | +6.0 | - | - | - |",
            // The three targets, each lane beside the others: what each allows, how far over.
            "| 300 us | caller-driven | depth one: gap at most 1.05x the depth-one anchor's | 71.0 | 70.0 | 73.5 | -2.5 | yes |",
            "| 300 us | caller-driven | depth two: gap at most the queued anchor's | 9.5 | 9.0 | 9.0 | +0.5 | no |",
            "| 300 us | caller-driven | idle: submit to launch within 5 us of the launch's calls | 25.5 | 19.5 | 24.5 | +1.0 | no |",
            "| 300 us | bound | idle: submit to launch within 5 us of the launch's calls | 23.0 | 19.5 | 24.5 | -1.5 | yes |",
            "| 300 us | option off | idle: submit to launch within 5 us of the launch's calls | 24.0 | 19.5 | 24.5 | -0.5 | stated |",
            // The misses, with what bounds their cause.
            "| 300 us | depth two, caller-driven | 0.5 | 0.0 | no | - | - |",
            "| 300 us | idle, caller-driven | 1.0 | 9.0 | 3.0 | 30.0 |",
            "| 300 us | lane, caller-driven | 31.0 | 16.0 | 4.0 | 371.0 | 330.0 |",
        ] {
            assert!(text.contains(row), "{row} in {text}");
        }
        // Without its lines, no caller-driven row.
        let without = markdown(&parse(&format!("{OUTPUT}{ANCHORS}{BOUND}")).unwrap());
        assert!(
            !without.contains(", caller-driven |") && !without.contains("| caller-driven |"),
            "{without}"
        );
        assert!(
            parse("idle-caller 300 200 1 2 3")
                .unwrap_err()
                .contains("before its `idle` line")
        );
    }

    const SPLITS: &str = "depth1-split 300 anchor 30000 17000 3000 380000 330000\n\
        depth1-split 300 lane 50000 17000 20000 381000 314000\n\
        depth1-split 300 lane-bound 52000 18000 21000 382000 313000\n";

    #[test]
    fn where_a_depth_one_gap_goes_is_shown_per_part_and_quoted_for_the_miss() {
        let measured = parse(&format!("{OUTPUT}{ANCHORS}{SPLITS}")).unwrap();
        assert_eq!(
            measured.splits[1],
            DepthOneSplit {
                kernel_us: 300,
                who: "lane".to_owned(),
                react_ns: 50_000,
                launch_ns: 17_000,
                start_ns: 20_000,
                period_ns: 381_000,
                span_ns: 314_000,
            }
        );
        let text = markdown(&measured);
        assert!(
            text.contains(
                "| 300 us | depth one, where the gap goes: device end to the AICore launch's start | 30.0 | 50.0 | +20.0 | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | depth one, where the gap goes: then to the run's device start | 3.0 | 20.0 | +17.0 | - | - | - |"
            ),
            "{text}"
        );
        // The parts' middle rounds, the bound lane's too, with the cycle they sit in.
        for row in [
            "| 300 us | anchor | 30.0 | 17.0 | 3.0 | 380.0 | 330.0 |",
            "| 300 us | lane | 50.0 | 17.0 | 20.0 | 381.0 | 314.0 |",
            "| 300 us | lane, bound | 52.0 | 18.0 | 21.0 | 382.0 | 313.0 |",
        ] {
            assert!(text.contains(row), "{row} in {text}");
        }
        // The cycle the gap sits in: the same period, the span shorter by what the gap is longer.
        assert!(
            text.contains(
                "| 300 us | depth one, the cycle: a run's device start to the next run's | 380.0 | 381.0 | +1.0 | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | depth one, the cycle: a run's device span | 330.0 | 314.0 | -16.0 | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            parse("depth1-split 300 sideways 1 2 3 4 5")
                .unwrap_err()
                .contains("not an anchor, lane, lane-bound or lane-caller split")
        );
    }

    #[test]
    fn the_hand_off_anchor_is_stated_beside_depth_one_and_quoted_for_a_depth_one_miss() {
        const HAND_OFF: &str = "anchor 300 handoff 200 77000 95000\n";
        let measured = parse(&format!("{OUTPUT}{ANCHORS}{HAND_OFF}")).unwrap();
        assert_eq!(
            measured.anchors[2],
            Anchor {
                kernel_us: 300,
                kind: AnchorKind::HandOff,
                runs: 200,
                median_ns: 77_000,
                p99_ns: 95_000
            }
        );
        // Loop (b) at depth one, 73.9 us: 1.056x the depth-one anchor (a miss), 0.96x the
        // hand-off loop's 77.0 us, which is 1.10x the depth-one anchor's 70.0.
        let t = measured.anchor_targets(300).unwrap();
        assert!(!t.depth_one.met);
        let h = t.hand_off.expect("measured");
        assert!(h.met && (h.ratio - 73_900.0 / 77_000.0).abs() < 1e-9);
        assert_eq!(
            measured
                .anchor_verdict_with(300, Setting::Off)
                .unwrap()
                .hand_off,
            Some(h)
        );
        let text = markdown(&measured);
        assert!(
            text.contains(
                "| 300 us | depth one: gap (anchor: the hand-off loop) | 77.0 | 73.9 | 0.96 | 0.96 | stated | - |"
            ),
            "{text}"
        );
        // The depth-one miss quotes the hand-off loop: 1.10x the anchor's gap, the lane 0.96x
        // of it.
        assert!(
            text.contains("| 300 us | depth one, option off | 0.4 | 0.0 | no | 1.10 | 0.96 |"),
            "{text}"
        );
        // Without its line, no row and no quote.
        let without = markdown(&parse(&format!("{OUTPUT}{ANCHORS}")).unwrap());
        assert!(
            !without.contains("(anchor: the hand-off loop)"),
            "{without}"
        );
        assert!(
            without.contains("| 300 us | depth one, option off | 0.4 | 0.0 | no | - | - |"),
            "{without}"
        );
        assert!(
            parse("anchor 300 sideways 200 1 2")
                .unwrap_err()
                .contains("not a depth1, queued or handoff anchor")
        );
    }

    #[test]
    fn a_line_the_bench_never_prints_is_an_error_naming_it() {
        let error = parse("arm 300 a").unwrap_err();
        assert!(error.contains("`arm 300 a`"), "{error}");
        assert!(parse("floor x 1 2 3").unwrap_err().contains("not a number"));
        assert!(
            parse("lanes sideways 1 1 1 1 1 1")
                .unwrap_err()
                .contains("not a healthy or faulty case")
        );
        assert!(
            parse("anchor 300 sideways 80 1 2")
                .unwrap_err()
                .contains("not a depth1, queued or handoff anchor")
        );
        assert!(
            parse("idle 300 80 1 2 3")
                .unwrap_err()
                .contains("never prints")
        );
    }
}
