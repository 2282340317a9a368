//! The runner loops through the C ABI on the fake libascendcl: `cargo xtask fake-bench`'s
//! second part. It builds `lane-capi/examples/fake_bench.cpp` against the release static
//! library (`librun_lane.a`, linked with rustc's `native-static-libs`, as the install tree's
//! `run_lane.pc` links it), runs it on the release fake, and writes its section of
//! docs/performance.md: per kernel length, the fake's floor and each loop's median and p99
//! device gap at launch depth two (`depth2`) beside depth one (`depth1`), with the targets checked; then
//! beside them the two hand-written anchors (the same runs on the fake's ACL calls, no lane: at
//! depth one, and queued on the submitting thread) and an idle lane's submit to launch beside
//! the launch's own calls, each lane/anchor ratio against its target, the lane measured with
//! `submitters_bound` off and on; then
//! its `--lanes` mode: sixteen lanes at once, healthy and beside a hung and a poisoned device,
//! the fourteen's median gap in each case against the run-to-run noise, and what the process
//! of sixteen lanes costs in threads and resident memory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// An idle lane at one kernel length, each figure `[median, p99]` in ns: from a submit to its
/// launch's return (`lane`, and `bound` with `submitters_bound` on where measured), the same
/// launch's calls made by hand (`calls`, the anchor), of those the two kernel launches
/// alone (`launches`), and what came before the AICore launch (`split`).
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
}

/// Where a depth-one gap goes at one kernel length, for the depth-one anchor or loop (b) at
/// depth one (`who`: `anchor`, `lane`, `lane-bound`), medians in ns: from the predecessor's
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

/// The three targets at one kernel length, for the lane with `submitters_bound` off or on: the
/// lane's depth one (loop (b)) at most 1.05x the depth-one anchor's gap, its depth two at most
/// the queued anchor's gap, an idle submit to launch within 5 us of the launch's own calls
/// (the target with the option on; with it off the figure is stated). Beside them, stated and
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
            }),
            Some(&"depth1-split") if fields.len() == 8 => {
                let who = fields[2];
                if !["anchor", "lane", "lane-bound"].contains(&who) {
                    return Err(format!(
                        "fake_bench printed `{line}`: not an anchor, lane or lane-bound split"
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

/// The anchors' part of the section (empty when the bench printed none): each round's
/// figures, and each target judged on the middle round.
fn anchors_markdown(measured: &Measured, runs: u32) -> String {
    let mut out = String::new();
    if measured.anchors.is_empty() && measured.idle.is_empty() {
        return out;
    }
    let rounds: Vec<&Measured> = measured.rounds().collect();
    let _ = writeln!(
        out,
        "### Beside the hand-written anchors\n\n\
         The lane against the loops a runner writes without it, in the same process on the same \
         fake. **Depth-one anchor**: the calls the lane makes for a run, on the lane's slot \
         layout (the arm copy, the AICore kernel, `core_done`, the AICPU kernel, the AICPU \
         stream's wait on `core_done`, the boundary; then the boundary's wait and one read of \
         the timing buffer, the status header and the record), made directly on the fake's ACL calls from the bench's thread, \
         each run launched once the one before was read (launch, wait, read, launch). **Queued \
         anchor**: the same calls with two runs in flight, run N+1 launched (its AICore kernel \
         behind N's boundary) before N's wait, then wait for the oldest, read it, launch the \
         next: the queued loop on the submitting thread. **Hand-off anchor** (stated, not a \
         target): the depth-one anchor's calls on two threads, the shape of any lane whose \
         submitting thread is not the device's: a device thread launches each submitted run \
         once the one before was read, then hands the read run's outcome to the submitting \
         thread (launch, then deliver, as the lane's completion waiter does), which submits up \
         to two runs ahead and waits for each outcome; its ratio to the depth-one anchor is \
         what that one hand-over costs on this machine, and the lane's to it is what the lane \
         adds beyond it. **Paired**: the three are measured \
         interleaved with loop (b), the documented loop they are compared with, at depth two \
         and one with the option off and on: every lane and the anchor's streams are opened \
         first, then the seven take turns, a block of {BLOCK} runs each (each block from idle to \
         idle), until each has {runs} runs, so an anchor and the lane arm it is compared with \
         are sampled under the same machine conditions; the gaps are taken from the runs' \
         timing buffers exactly as the lane's, within blocks only (the gap across a switch is \
         not taken), the first {SKIP} runs of each arm skipped. **Idle submit \
         to launch**: {runs} runs, each submitted to an idle lane (launch depth two, its \
         predecessor retired and a 1 ms pause passed, nothing in flight), from just before \
         `run_lane_submit` to the return of its `launch_aicpu` callback; its anchor is the same \
         launch's calls made by hand, idle alike, from the arm copy to the AICPU launch's \
         return (of those, the two kernel launches alone are a row of their own; the rows *to the \
         AICore launch's start* split off what comes before that launch: the lane's from the \
         submit to its `launch_aicore` callback's start, the anchor's from its arm copy's \
         start); the lane with the option off, on, and the anchor take turns, one run each. The \
         lane is measured twice in each round, beside the same anchors: with \
         `RunLaneConfig::submitters_bound` off (the default: a submit that finds no thread \
         running the lane's steps wakes the lane thread, which prepares and launches) and on \
         (the bench's thread bound to the device first: such a submit prepares and launches on \
         the submitting thread, the runner callbacks with it; rows marked *bound*). The loops ran in {} processes (rounds), each measuring \
         the lane beside its anchors; each cell lists the rounds' medians in order, and each \
         target is judged on the middle round's ratio (the idle figure's, on its difference), \
         each ratio paired within its round: one process's medians on this machine can move by \
         tens of us from one process to the next, and within a process from one phase to the \
         next, which the turns spread over both sides of each ratio alike (the table above is \
         the first round's).\n",
        rounds.len()
    );
    let _ = writeln!(
        out,
        "| kernel | figure | anchor: median (us) | lane: median (us) | lane / anchor (idle: lane - anchor, us) | middle round | target | met |\n\
         |---:|:---|:---|:---|:---|---:|:---|:---|"
    );
    let each = |f: &dyn Fn(&Measured) -> Option<String>| {
        rounds
            .iter()
            .map(|m| f(m).unwrap_or_else(|| "?".to_owned()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for kernel_us in KERNELS_US {
        if !rounds.iter().any(|m| m.anchor_targets(kernel_us).is_some()) {
            continue;
        }
        let judged = ANCHOR_TARGETS_US.contains(&kernel_us);
        let kernel = kernel_label(kernel_us);
        // Each row: the figure, its anchor (`None`: the idle launch's calls), whether the lane
        // had submitters_bound on, its target (`stated`: shown, not judged), and which of a
        // round's targets it is.
        struct Row {
            figure: &'static str,
            kind: Option<AnchorKind>,
            bound: bool,
            target: &'static str,
            stated: bool,
            pick: fn(&AnchorTargets) -> Option<AgainstAnchor>,
        }
        let rows = [
            Row {
                figure: "depth one: gap",
                kind: Some(AnchorKind::DepthOne),
                bound: false,
                target: "at most 1.05x",
                stated: false,
                pick: |t| Some(t.depth_one),
            },
            Row {
                figure: "depth one: gap, *bound*",
                kind: Some(AnchorKind::DepthOne),
                bound: true,
                target: "at most 1.05x",
                stated: false,
                pick: |t| Some(t.depth_one),
            },
            Row {
                figure: "depth one: gap (anchor: the hand-off loop)",
                kind: Some(AnchorKind::HandOff),
                bound: false,
                target: "stated",
                stated: true,
                pick: |t| t.hand_off,
            },
            Row {
                figure: "depth one: gap (anchor: the hand-off loop), *bound*",
                kind: Some(AnchorKind::HandOff),
                bound: true,
                target: "stated",
                stated: true,
                pick: |t| t.hand_off,
            },
            Row {
                figure: "depth two: gap (anchor: queued)",
                kind: Some(AnchorKind::Queued),
                bound: false,
                target: "at most 1.00x",
                stated: false,
                pick: |t| Some(t.depth_two),
            },
            Row {
                figure: "depth two: gap (anchor: queued), *bound*",
                kind: Some(AnchorKind::Queued),
                bound: true,
                target: "at most 1.00x",
                stated: false,
                pick: |t| Some(t.depth_two),
            },
            Row {
                figure: "idle: submit to launch (anchor: the launch's calls)",
                kind: None,
                bound: false,
                target: "stated (+5 us is the bound target)",
                stated: true,
                pick: |t| Some(t.idle),
            },
            Row {
                figure: "idle: submit to launch, *bound*",
                kind: None,
                bound: true,
                target: "at most +5 us",
                stated: false,
                pick: |t| Some(t.idle),
            },
        ];
        for Row {
            figure,
            kind,
            bound,
            target,
            stated,
            pick,
        } in rows
        {
            let verdict = measured.anchor_verdict_with(kernel_us, bound);
            if bound && verdict.is_none() {
                continue;
            }
            if kind == Some(AnchorKind::HandOff)
                && !rounds
                    .iter()
                    .any(|m| m.anchor(kernel_us, AnchorKind::HandOff).is_some())
            {
                continue;
            }
            let profile = |p: &str| {
                if bound {
                    format!("{p}-bound")
                } else {
                    p.to_owned()
                }
            };
            let anchor = each(&|m| match kind {
                Some(kind) => m.anchor(kernel_us, kind).map(|a| us(a.median_ns)),
                None => m.idle_at(kernel_us).map(|i| us(i.calls[0])),
            });
            let lane = each(&|m| match kind {
                Some(AnchorKind::DepthOne | AnchorKind::HandOff) => m
                    .arm(kernel_us, 'b', &profile("depth1"))
                    .map(|a| us(a.median_ns)),
                Some(AnchorKind::Queued) => m
                    .arm(kernel_us, 'b', &profile("depth2"))
                    .map(|a| us(a.median_ns)),
                None => m
                    .idle_at(kernel_us)
                    .and_then(|i| if bound { i.bound } else { Some(i.lane) })
                    .map(|l| us(l[0])),
            });
            let idle = kind.is_none();
            let show = |a: AgainstAnchor| {
                if idle {
                    format!("{:+.1}", a.over_ns / 1_000.0)
                } else {
                    format!("{:.2}", a.ratio)
                }
            };
            let against = each(&|m| {
                m.anchor_targets_with(kernel_us, bound)
                    .and_then(|t| pick(&t))
                    .map(show)
            });
            let middle = verdict
                .and_then(|t| pick(&t))
                .map_or_else(|| "?".to_owned(), show);
            let (target, met) = match (judged, verdict.and_then(|t| pick(&t))) {
                (true, Some(_)) if stated => (target, "-"),
                (true, Some(t)) => (target, if t.met { "yes" } else { "no" }),
                _ => ("-", "-"),
            };
            let _ = writeln!(
                out,
                "| {kernel} | {figure} | {anchor} | {lane} | {against} | {middle} | {target} | {met} |"
            );
        }
        let launches = each(&|m| m.idle_at(kernel_us).map(|i| us(i.launches[0])));
        let _ = writeln!(
            out,
            "| {kernel} | idle: the two kernel launches alone | {launches} | - | - | - | - | - |"
        );
        if rounds
            .iter()
            .any(|m| m.idle_at(kernel_us).is_some_and(|i| i.split.is_some()))
        {
            for (figure, at) in [
                (
                    "idle: to the AICore launch's start (anchor: from its arm copy)",
                    0,
                ),
                ("idle: to the AICore launch's start, *bound*", 1),
            ] {
                let split = |m: &Measured| m.idle_at(kernel_us).and_then(|i| i.split);
                let anchor = each(&|m| split(m).map(|s| us(s[2])));
                let lane = each(&|m| split(m).map(|s| us(s[at])));
                let over = each(&|m| {
                    split(m).map(|s| format!("{:+.1}", (s[at] as f64 - s[2] as f64) / 1_000.0))
                });
                let _ = writeln!(
                    out,
                    "| {kernel} | {figure} | {anchor} | {lane} | {over} | - | - | - |"
                );
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
                let anchor = each(&|m| of(m, "anchor").map(us));
                let lane = each(&|m| of(m, "lane").map(us));
                let over = each(&|m| {
                    of(m, "lane")
                        .zip(of(m, "anchor"))
                        .map(|(l, a)| format!("{:+.1}", (l as f64 - a as f64) / 1_000.0))
                });
                let _ = writeln!(
                    out,
                    "| {kernel} | depth one, {group}: {figure} | {anchor} | {lane} | {over} | - | - | - |"
                );
            }
        }
    }
    out.push('\n');
    let verdicts: Vec<String> = ANCHOR_TARGETS_US
        .iter()
        .filter_map(|&k| {
            let word = |a: AgainstAnchor| if a.met { "met" } else { "missed" };
            let off = measured.anchor_verdict(k).map(|t| {
                format!(
                    "option off: depth one {:.2}x ({}), depth two {:.2}x ({}), idle {:+.1} us \
                     (stated)",
                    t.depth_one.ratio,
                    word(t.depth_one),
                    t.depth_two.ratio,
                    word(t.depth_two),
                    t.idle.over_ns / 1_000.0,
                )
            })?;
            let on = measured.anchor_verdict_with(k, true).map(|t| {
                format!(
                    "; *bound*: depth one {:.2}x ({}), depth two {:.2}x ({}), idle {:+.1} us ({})",
                    t.depth_one.ratio,
                    word(t.depth_one),
                    t.depth_two.ratio,
                    word(t.depth_two),
                    t.idle.over_ns / 1_000.0,
                    word(t.idle),
                )
            });
            Some(format!(
                "{}: {off}{}",
                kernel_label(k),
                on.unwrap_or_default()
            ))
        })
        .collect();
    let _ = writeln!(
        out,
        "Targets (a benchmark, not a timed test), medians, at 300 us and 1 ms kernels: the lane \
         at depth one at most 1.05x the depth-one anchor's gap; at depth two at most the queued \
         anchor's gap; an idle submit to launch within 5 us of the launch's own calls with \
         `submitters_bound` on (with it off the figure is stated, not judged). Measured, the \
         middle round: {}. \
         The anchors make every call on one thread; the lane spreads them over the submitting \
         thread, the lane thread and its completion waiter (docs/ARCHITECTURE.md), and each \
         hand-over between them is a wake-up on this machine's two shared CPUs.\n",
        if verdicts.is_empty() {
            "not measured".to_owned()
        } else {
            verdicts.join("; ")
        }
    );
    out.push_str(&plain_verdict(measured));
    out
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

/// The targets that hold and those that do not, in plain words, with each miss's figure and
/// its likely cause, read off the measured rows (empty when no target was measured).
fn plain_verdict(measured: &Measured) -> String {
    let rounds: Vec<&Measured> = measured.rounds().collect();
    let (mut held, mut missed, mut causes) = (Vec::new(), Vec::new(), Vec::new());
    // Which kinds of depth miss there were: one, two.
    let mut why = [false; 2];
    for &k in &ANCHOR_TARGETS_US {
        let kernel = kernel_label(k);
        for (bound, setting) in [(false, "option off"), (true, "*bound*")] {
            let Some(t) = measured.anchor_verdict_with(k, bound) else {
                continue;
            };
            let mut judge = |met: bool, text: String| {
                if met { &mut held } else { &mut missed }.push(text);
            };
            judge(
                t.depth_one.met,
                format!("{kernel} depth one, {setting} ({:.2}x)", t.depth_one.ratio),
            );
            judge(
                t.depth_two.met,
                format!("{kernel} depth two, {setting} ({:.2}x)", t.depth_two.ratio),
            );
            if bound {
                judge(
                    t.idle.met,
                    format!(
                        "{kernel} idle, *bound* ({:+.1} us)",
                        t.idle.over_ns / 1_000.0
                    ),
                );
            }
            // A depth miss against the spread over the rounds (highest minus lowest median)
            // of its anchor's and of the lane's figure, the larger: how far one process's
            // figures move on this machine.
            let spread = |kind: AnchorKind, profile: &str| {
                let profile = if bound {
                    format!("{profile}-bound")
                } else {
                    profile.to_owned()
                };
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
            let noise = |by_ns: f64, spread_ns: u64| {
                format!(
                    "by {:.1} us, against a spread of {:.1} us over the rounds (the anchor's \
                     median or the lane's, the larger){}",
                    by_ns / 1_000.0,
                    spread_ns as f64 / 1_000.0,
                    if by_ns <= spread_ns as f64 {
                        ": within this machine's noise"
                    } else {
                        ""
                    }
                )
            };
            if !t.depth_one.met {
                // Beyond the 1.05x allowed.
                let over = t.depth_one.over_ns
                    - t.depth_one.anchor_ns * (DEPTH_ONE_PERCENT - 100) as f64 / 100.0;
                if let Some(spread_ns) = spread(AnchorKind::DepthOne, "depth1") {
                    why[0] = true;
                    // The one hand-over's cost on this machine: the hand-off loop's gap over
                    // the depth-one anchor's (per mille, paired within each round), the
                    // middle round's.
                    let hand_over = middle_of(&rounds, |m| {
                        let two = m.anchor(k, AnchorKind::HandOff)?.median_ns;
                        let one = m.anchor(k, AnchorKind::DepthOne)?.median_ns;
                        Some(two.saturating_mul(1_000) / one.max(1))
                    })
                    .map(|permille| permille as f64 / 1_000.0);
                    let beside = match (hand_over, t.hand_off) {
                        (Some(hand_over), Some(h)) => format!(
                            "; the hand-off loop (the anchor's calls on two threads, one \
                             hand-over of an outcome a run) takes {hand_over:.2}x the anchor's \
                             gap, and the lane {:.2}x the hand-off loop's",
                            h.ratio
                        ),
                        _ => String::new(),
                    };
                    causes.push(format!(
                        "{kernel} depth one, {setting}, misses {}{beside}",
                        noise(over, spread_ns)
                    ));
                }
            }
            if !t.depth_two.met
                && let Some(spread_ns) = spread(AnchorKind::Queued, "depth2")
            {
                why[1] = true;
                causes.push(format!(
                    "{kernel} depth two, {setting}, misses {}",
                    noise(t.depth_two.over_ns, spread_ns)
                ));
            }
        }
        let bound_idle = measured.anchor_verdict_with(k, true).map(|t| t.idle);
        if let Some(idle) = bound_idle.filter(|i| !i.met) {
            let split = |at: usize| {
                middle_of(&rounds, |m| {
                    m.idle_at(k).and_then(|i| i.split).map(|s| s[at])
                })
            };
            let before = match (split(0), split(1), split(2)) {
                (Some(off), Some(on), Some(anchor)) => format!(
                    " The lane takes {} us from the submit to its AICore launch's start (the \
                     submit's command under the lane's lock, the dispatch decisions, the prepare \
                     step and the arm copy) where the anchor takes {} us for its arm copy alone \
                     (medians over the rounds), and {} us with the option off (the lane thread's \
                     wake-up included): the excess is the lane's own steps ahead of the launch",
                    us(on),
                    us(anchor),
                    us(off)
                ),
                _ => String::new(),
            };
            causes.push(format!(
                "{kernel} idle, *bound*, misses by {:.1} us beyond the 5 us allowed, with no \
                 wake-up left in it (the launch is made on the submitting thread).{before}",
                (idle.over_ns - IDLE_SLACK_NS as f64) / 1_000.0
            ));
        }
    }
    if held.is_empty() && missed.is_empty() {
        return String::new();
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    let mut out = format!(
        "In plain words (the middle round): **the targets that hold**: {}. **The targets \
         missed**: {}.",
        list(&held),
        list(&missed)
    );
    out.push_str("\n\n");
    if !causes.is_empty() {
        out.push_str("The misses, with their likely causes:\n\n");
        for cause in causes {
            let _ = writeln!(out, "- {cause}.");
        }
        out.push('\n');
        if why[0] {
            out.push_str(&depth_one_split_text(&rounds));
        }
        if why[1] {
            out.push_str(
                "At depth two the next run is already queued behind the boundary in both loops \
                 when its predecessor ends, so the gap is the fake's cross-stream wake-up (the \
                 one-stream floor is a fraction of it) and whatever holds the two CPUs at that \
                 moment: the lane's own threads add to that contention, the anchor has one \
                 thread. ",
            );
        }
        if why.iter().any(|&w| w) {
            out.truncate(out.trim_end().len());
            out.push_str("\n\n");
        }
    }
    out
}

/// Where the depth-one gaps went, measured (the middle round of each part, at the judged
/// kernel lengths), and what each part is.
fn depth_one_split_text(rounds: &[&Measured]) -> String {
    let mut sums = Vec::new();
    let mut cycles = Vec::new();
    for &k in &ANCHOR_TARGETS_US {
        let parts = |who: &str| -> Option<[u64; 3]> {
            let part = |i: usize| middle_of(rounds, |m| m.split_at(k, who).map(SPLIT_PARTS[i].1));
            Some([part(0)?, part(1)?, part(2)?])
        };
        let show = |p: [u64; 3]| format!("{} + {} + {}", us(p[0]), us(p[1]), us(p[2]));
        let (Some(anchor), Some(lane)) = (parts("anchor"), parts("lane")) else {
            continue;
        };
        let bound = parts("lane-bound")
            .map(|b| format!(", *bound* {}", show(b)))
            .unwrap_or_default();
        sums.push(format!(
            "{}: the anchor {}, the lane {}{bound}",
            kernel_label(k),
            show(anchor),
            show(lane)
        ));
        let cycle =
            |who: &str, i: usize| middle_of(rounds, |m| m.split_at(k, who).map(CYCLE_PARTS[i].1));
        if let (Some(pa), Some(pl), Some(sa), Some(sl)) = (
            cycle("anchor", 0),
            cycle("lane", 0),
            cycle("anchor", 1),
            cycle("lane", 1),
        ) {
            cycles.push(format!(
                "{}: period {} against {} ({:+.1}), span {} against {}",
                kernel_label(k),
                us(pa),
                us(pl),
                (pl as f64 - pa as f64) / 1_000.0,
                us(sa),
                us(sl)
            ));
        }
    }
    let mut measured = if sums.is_empty() {
        String::new()
    } else {
        format!(
            "Where a depth-one gap goes (the rows *where the gap goes*; us, the middle round of \
             each part: the predecessor's device end to the AICore launch's start, the launch's \
             calls, then to the run's device start): {}. ",
            sums.join("; ")
        )
    };
    if !cycles.is_empty() {
        let _ = write!(
            measured,
            "The cycle those parts sit in (the rows *the cycle*; us, the anchor's against the \
             lane's, middle rounds): {}. A gap is a run's period less its predecessor's span, so \
             a longer span in one loop shows as a shorter gap there at the same period. The \
             fake's stream workers run with no timer slack, so a span is the kernel's time plus \
             its worker's wake-up in both loops alike (with Linux's default 50 us slack, merged \
             with whatever other timers the process had, the anchor's spans came out 25 us \
             longer than the lane's at the same period, and its gaps as much shorter). ",
            cycles.join("; ")
        );
    }
    format!(
        "{measured}At depth one both loops wait on the boundary, read the record and the status \
         and launch the next run from the thread that learned of the completion, making the \
         same calls. The first part is the waiting thread's wake-up from the device wait and \
         its work before the launch: for the lane, also the waiter's answer under the lane's \
         lock and the dispatch decisions (measured with temporary in-process marks on a \
         two-CPU guest, 1 ms kernels, the option off: 2.0 us median from the wait's return to \
         the launch's start, where the anchor makes its arm copy, 2.2 us; \
         docs/depth-one-on-the-fake.md). Both parts also hold a \
         CPU's wake-up whenever a woken thread is placed on an idle CPU: where the machine \
         line says an idle CPU halts at once, that is the hypervisor's wake-up, tens of us, \
         which the lane's threads and the anchor's single thread meet differently. The last part is \
         the fake, not the launch: the run's AICPU kernel starts when the fake's worker thread \
         for its stream gets a CPU, and after its launch the anchor's thread goes straight into \
         its next wait while the lane's finalises the previous run and delivers its outcome, \
         which wakes the waiting submitter: on two CPUs the worker waits for them. On a device \
         the kernel starts without a host thread. `submitters_bound` does not change this path \
         (the submitter is not the thread that learns of the completion). The hand-off \
         anchor makes the depth-one anchor's calls with that one hand-over of an outcome a \
         run and nothing of the lane's: its rows show what the hand-over costs on this machine, \
         and how much of the lane's depth-one gap is left beyond it. "
    )
}

fn kib_to_mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The sixteen-lane part of the section (empty when the bench printed none).
fn lanes_markdown(measured: &Measured) -> String {
    let mut out = String::new();
    let Some(first) = measured.lanes.first() else {
        return out;
    };
    let (runs, kernel_us) = (first.runs, first.kernel_us);
    let _ = writeln!(
        out,
        "### Sixteen lanes at once, beside a hung and a poisoned device\n\n\
         `fake_bench --lanes`: sixteen lanes in one process, one per device of the fake (ids 0 \
         to 15), each driven from its own thread with loop (b), {runs} runs of {kernel} kernels \
         per lane, at launch depth two with a 200 ms device op timeout. Two cases, alternating, \
         each repeated: **healthy 16**, every lane healthy; **14 beside the faulty 2**, device \
         14's AICore kernels all hang (each of its runs ends at the op timeout with 507014 and \
         poisons the lane, which recovers the device and hangs on its next run again, until the \
         fourteen are done) and device 15 has one AICore exception (run {poison} fails with \
         507015 and poisons; the lane recovers and runs on). The gap figures pool the gaps of \
         devices 0 to 13 in both cases (the first {SKIP} runs of each lane skipped), so the two \
         cases compare the same fourteen lanes.\n",
        kernel = kernel_label(kernel_us),
        poison = runs / 3 + 1,
    );
    let _ = writeln!(
        out,
        "| case | repeat | devices 0-13: median gap (us) | p99 (us) | devices 0-13: runs Ok | device 14 (hung) | device 15 (poisoned) |\n\
         |:---|---:|---:|---:|---:|:---|:---|"
    );
    for case in &measured.lanes {
        let expected = case.runs * FOURTEEN;
        let (name, hung, poisoned) = match case.faulty {
            None => (
                "healthy 16",
                format!("{} runs, all Ok", case.runs),
                format!("{} runs, all Ok", case.runs),
            ),
            Some(two) => (
                "14 beside the faulty 2",
                format!(
                    "{} runs, {} Ok, {} poisons",
                    two.hung[0], two.hung[1], two.hung[2]
                ),
                format!(
                    "{} runs, {} Ok, {} poison",
                    two.poisoned[0], two.poisoned[1], two.poisoned[2]
                ),
            ),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} / {expected} | {hung} | {poisoned} |",
            case.repeat,
            us(case.median_ns),
            us(case.p99_ns),
            case.ok,
        );
    }
    out.push('\n');
    if let Some((healthy, faulty, noise, within)) = lanes_verdict(&measured.lanes) {
        let _ = writeln!(
            out,
            "Every run of the fourteen ended `Ok`, in order, in both cases. Their median gap, \
             averaged over the repeats: healthy {:.2} us, beside the faulty two {:.2} us, a \
             difference of {:+.2} us. The run-to-run noise, taken as the larger spread (highest \
             minus lowest median) of one case over its {} repeats, is {:.2} us (a coarse estimate from so few \
             repeats): the difference is {} it. \
             The faulty two cost the others little by construction: a hung kernel on the fake is \
             a timed wait on its own device's condition variable (no CPU), and recovery is a \
             drain, a force reset and a probe of device 14 or 15 alone. The p99 column is the \
             machine's: two logical CPUs share 64 lane and stream threads and the 16 drivers.\n",
            healthy / 1_000.0,
            faulty / 1_000.0,
            // Rounded first, so a difference that rounds to zero reads +0.00, not -0.00.
            ((faulty - healthy) / 10.0).round() / 100.0 + 0.0,
            measured.lanes.iter().filter(|c| c.faulty.is_none()).count(),
            noise / 1_000.0,
            if within {
                "no larger than"
            } else {
                "larger than"
            },
        );
    }
    if let Some(cost) = measured.lanes_cost {
        let [t0, t1, t2, t3] = cost.threads;
        let [r0, r1, r2, r3] = cost.rss_kib;
        let per_lane = |a: u64, b: u64| b.saturating_sub(a) / LANES;
        let _ = writeln!(
            out,
            "What one process of sixteen lanes costs (the first healthy case, from \
             /proc/self/status; the bench's own threads joined before each reading): **threads** \
             {t0} before the lanes, {t1} once the sixteen were created ({} a lane: its lane \
             thread and completion waiter; host workers would add `config.workers` each), {t2} \
             once they ran ({} named `lane*`, {} named `fake-acl-*`: the fake's two stream \
             threads a lane, created at its first launch, which a real libascendcl does not \
             have), {t3} after destroy. **Resident memory** (VmRSS) {} MiB before, {} MiB once \
             created ({} KiB a lane: thread stacks touched, the lane's tables, the fake's \
             device and pinned memory of its slots), {} MiB once they ran ({} KiB a lane over \
             the start, with its streams and the bench's own record of its runs, 48 bytes a \
             run), {} MiB after destroy (what the allocator keeps for reuse; the create/destroy \
             test, `tests/create_destroy_cycles.rs`, checks 1,000 cycles leave it within 1 \
             MiB).\n",
            per_lane(t0, t1),
            cost.lane_threads,
            cost.fake_stream_threads,
            kib_to_mib(r0),
            kib_to_mib(r1),
            per_lane(r0, r1),
            kib_to_mib(r2),
            per_lane(r0, r2),
            kib_to_mib(r3),
        );
    }
    out
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

    /// The anchors' targets at `kernel_us` over the rounds: each target's middle round (by
    /// ratio; the idle figure by its difference), the lower middle for an even count; `None`
    /// where no round measured them all.
    pub(crate) fn anchor_verdict(&self, kernel_us: u64) -> Option<AnchorTargets> {
        self.anchor_verdict_with(kernel_us, false)
    }

    /// [`Self::anchor_verdict`] for the lane with `submitters_bound` off or on (`bound`).
    pub(crate) fn anchor_verdict_with(&self, kernel_us: u64, bound: bool) -> Option<AnchorTargets> {
        let rounds: Vec<AnchorTargets> = self
            .rounds()
            .filter_map(|m| m.anchor_targets_with(kernel_us, bound))
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
        self.anchor_targets_with(kernel_us, false)
    }

    /// [`Self::anchor_targets`] for the lane with `submitters_bound` off or on (`bound`: the
    /// `depth1-bound` and `depth2-bound` arms and the idle lane's bound figure).
    pub(crate) fn anchor_targets_with(&self, kernel_us: u64, bound: bool) -> Option<AnchorTargets> {
        let suffix = if bound { "-bound" } else { "" };
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
        let lane = if bound { idle.bound? } else { idle.lane };
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

    /// Each round's queued anchor's median gap at `kernel_us`, in us, in round order.
    fn queued_anchor_rounds(&self, kernel_us: u64) -> Vec<String> {
        self.rounds()
            .filter_map(|m| m.anchor(kernel_us, AnchorKind::Queued))
            .map(|a| us(a.median_ns))
            .collect()
    }

    /// Each round's [`loop_target_permille`](Self::loop_target_permille) at `kernel_us`, as
    /// fractions of what the target allows, in round order.
    fn loop_target_rounds(&self, kernel_us: u64) -> Vec<String> {
        self.rounds()
            .filter_map(|m| m.loop_target_permille(kernel_us))
            .map(|p| format!("{:.2}", p as f64 / 1_000.0))
            .collect()
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1_000.0)
}

/// The section's markdown (without its markers).
pub(crate) fn markdown(measured: &Measured, runs: u32, machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## The runner loops through the C ABI (real time, on the fake libascendcl)\n\n\
         Generated by `cargo xtask fake-bench` ({machine}): `lane-capi/examples/fake_bench.cpp`, \
         a C++ runner built against the release `librun_lane.a` and `run_lane.h` (the path an \
         onboard runner links), with `run_lane_config_default`'s settings (invariant checks off, \
         ABI 7), on the release fake (`librun_lane_fake_ascendcl.so`), in one \
         process. Each run is a pair of fake kernels of the given length, AICore and AICPU; the \
         gap is the device idle time from a run's end to the next run's start, from each run's \
         own timing buffer; {runs} runs per arm, the first {SKIP} skipped. The loops: **(a) kept \
         full**, every run submitted up front as far as the lane takes them, then each next run \
         from the outcome callback (on the lane thread) the moment a slot frees; **(b) the \
         documented loop**, submit until `FULL`, then wait for the oldest outcome, with no outcome \
         callback (only loop (a) sets one); **(c)** a \
         successor submitted a third of a kernel after its predecessor's outcome. Each runs at \
         launch depth two (`depth2`: queued) and, beside it, at depth one (`depth1`); loop (b) runs \
         again with `RunLaneConfig::submitters_bound` on (**(b), *bound***: the bench's thread \
         bound to the device, so a submit that finds the lane idle launches on it; its \
         submit-to-launch columns are not measured). The floor is the \
         fake's own: the same kernels already queued on one stream.\n"
    );
    let _ = writeln!(
        out,
        "| kernel | loop | depth two: median gap (us) | p99 (us) | depth one: median gap (us) | p99 (us) | depth two / depth one | floor: median (us) | depth two: submit to launch, median (us) | p99 (us) |\n\
         |---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for kernel_us in KERNELS_US {
        let floor = measured.floors.iter().find(|f| f.kernel_us == kernel_us);
        for (l, bound) in [('a', false), ('b', false), ('b', true), ('c', false)] {
            let suffix = if bound { "-bound" } else { "" };
            let (Some(q), Some(d)) = (
                measured.arm(kernel_us, l, &format!("depth2{suffix}")),
                measured.arm(kernel_us, l, &format!("depth1{suffix}")),
            ) else {
                continue;
            };
            let ratio = q.median_ns as f64 / d.median_ns.max(1) as f64;
            let latency = measured
                .latencies
                .iter()
                .find(|t| t.kernel_us == kernel_us && t.loop_name == l && !bound);
            let name = if bound {
                format!("({l}), *bound*")
            } else {
                format!("({l})")
            };
            let _ = writeln!(
                out,
                "| {} | {name} | {} | {} | {} | {} | {ratio:.2} | {} | {} | {} |",
                kernel_label(kernel_us),
                us(q.median_ns),
                us(q.p99_ns),
                us(d.median_ns),
                us(d.p99_ns),
                floor.map_or_else(|| "?".to_owned(), |f| us(f.median_ns)),
                latency.map_or_else(|| "?".to_owned(), |t| us(t.median_ns)),
                latency.map_or_else(|| "?".to_owned(), |t| us(t.p99_ns)),
            );
        }
    }
    out.push('\n');
    let verdicts: Vec<String> = KERNELS_US
        .iter()
        .filter_map(|&k| {
            measured.targets_hold(k).map(|hold| {
                let queued = measured.queued_anchor_rounds(k);
                let anchors = measured
                    .anchor_ratio_permille(k)
                    .map(|p| {
                        format!(
                            "; the queued anchor's gap: {} us; the anchors' own queued / \
                             depth-one gap: {:.2}",
                            queued.join(", "),
                            p as f64 / 1_000.0
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "{}: {} (rounds: {} of the target{anchors})",
                    kernel_label(k),
                    if hold { "holds" } else { "missed" },
                    measured.loop_target_rounds(k).join(", ")
                )
            })
        })
        .collect();
    let _ = writeln!(
        out,
        "Target (a benchmark, not a timed test): at every kernel length, (b) and (c) at depth two \
         have a median gap at most 1/3 of depth one's and within 2x of (a), judged on the middle \
         round as the anchors' targets below are (each round's worst loop as a fraction of what \
         the target allows, at most 1.00 holds; the table shows the first round). Where the \
         queued anchor below (the same calls made with no lane, two in flight) has a gap above \
         1/3 of a loop's depth-one gap in a round, that anchor's gap is the bound instead: the \
         hand-written loops cannot reach a third on this fake, whose own cross-stream \
         hand-over bounds the queued gap (decision 0022; the anchors' own queued / depth-one \
         ratio, the middle round's, is quoted): {}. A ratio near 1 \
         would mean queueing bought nothing; here the successor is on the pair before its \
         predecessor ends, because no thread running the lane's steps sits in the predecessor's \
         wait (the completion waiter makes it outside the steps, docs/ARCHITECTURE.md). At \
         depth one every gap is the host's round trip: the waiter wakes, reads the status and \
         launches the next run itself (decision 0021). The p99 column is the machine's noise (two logical CPUs \
         share the lane thread, its waiter, the fake's stream threads and the runner). The last \
         two columns are L-16's promise, measured: from just before `run_lane_submit` to the \
         return of the run's `launch_aicpu` callback (its launch's last call), while the run \
         ahead of it executes; it includes the run's prepare, which the fake runner makes \
         free, and in loop (a) the rest of the outcome callback the submit is made from. \
         docs/embedding.md recommends loop (b), the one the C++ example uses.\n",
        verdicts.join(", ")
    );
    out.push_str(&anchors_markdown(measured, runs));
    out.push_str(&lanes_markdown(measured));
    let _ = writeln!(
        out,
        "Reproduce: `cargo xtask fake-bench` (writes this section and the one before). \
         `cargo test -p lane-capi --test cpp_example` builds the same program against the test \
         build and runs a few runs of each arm and each anchor, and of each case of `--lanes`; \
         `cargo test -p lane-capi --test sixteen_lanes` checks the sixteen lanes' outcomes and \
         threads (no timings)."
    );
    out
}

fn kernel_label(us: u64) -> String {
    if us % 1_000 == 0 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} us")
    }
}

/// Builds the bench (release libraries, then the C++ program), runs its loops ([`LOOP_ROUNDS`]
/// processes) and its `--lanes` mode (`runs_asked` runs per arm and per lane, else [`RUNS`]
/// and [`LANES_RUNS`]), and returns its section's markdown: the main table from the first
/// round, the anchors' from every round.
pub(crate) fn run(runs_asked: Option<u32>, machine: &str) -> Result<String, String> {
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
    Ok(markdown(&measured, runs, machine))
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
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains("300 us: holds (rounds: 3.78, 0.53, 0.53 of the target)"),
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
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains("| 300 us | (b) | 8.6 | 29.2 | 73.9 |"),
            "{text}"
        );
        assert!(text.contains("300 us: holds"), "{text}");
        // The submit-to-launch columns, where measured.
        assert_eq!(measured.latencies.len(), 1);
        assert!(text.contains("| 6.8 | 21.5 | 48.0 |"), "{text}");
        assert!(
            text.contains("| (a) | 9.3 | 16.9 | 70.4 | 241.3 | 0.13 | 6.8 | ? | ? |"),
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
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains("| 14 beside the faulty 2 | 1 | 4.2 | 60.0 | 14000 / 14000 | 7 runs, 0 Ok, 4 poisons | 1000 runs, 998 Ok, 1 poison |"),
            "{text}"
        );
        assert!(
            text.contains("the difference is no larger than it"),
            "{text}"
        );
        assert!(
            text.contains(
                "**threads** 1 before the lanes, 33 once the sixteen were created (2 a lane"
            ),
            "{text}"
        );
        assert!(!markdown(&parse(OUTPUT).unwrap(), 200, "test").contains("Sixteen lanes"));
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
        assert_eq!(measured.anchor_verdict(300), Some(t), "one round: its own");
        // Half a microsecond more and the idle figure misses.
        let late = ANCHORS.replace("idle 300 200 24000", "idle 300 200 24600");
        let late = parse(&format!("{OUTPUT}{late}")).unwrap();
        assert!(!late.anchor_targets(300).unwrap().idle.met);
        // The loops' verdict line shows the anchors' own ratio: 9000 / 70000.
        assert!(
            markdown(&measured, 200, "test").contains(
                "the queued anchor's gap: 9.0 us; the anchors' own queued / depth-one gap: 0.13)"
            ),
            "the loops' verdict names the anchors' ratio"
        );
        // Without the anchors' lines the section has no anchors' part.
        assert!(!markdown(&parse(OUTPUT).unwrap(), 200, "test").contains("hand-written anchors"));
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
            markdown(&high, 200, "test").contains(
                "the queued anchor's gap: 20.0 us; the anchors' own queued / depth-one gap: 0.28)"
            ),
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
        let verdict = measured.anchor_verdict(300).unwrap();
        assert!(!verdict.depth_one.met);
        assert!((verdict.depth_one.ratio - 73_900.0 / 70_000.0).abs() < 1e-9);
        assert!(verdict.idle.met && (verdict.idle.over_ns - 4_500.0).abs() < 1e-9);
        let text = markdown(&measured, 200, "test");
        assert!(text.contains("in 3 processes (rounds)"), "{text}");
        assert!(
            text.contains("then the seven take turns, a block of 20 runs each"),
            "the paired method is stated: {text}"
        );
        assert!(
            text.contains("take turns, one run each"),
            "the idle figure's turns are stated: {text}"
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
                "| 300 us | idle: submit to launch (anchor: the launch's calls) | 19.5, 19.5, 19.5 | 24.0, 60.0, 20.0 | +4.5, +40.5, +0.5 | +4.5 | stated (+5 us is the bound target) | - |"
            ),
            "{text}"
        );
        assert!(
            !text.contains("gap, *bound* |") && !text.contains("| (b), *bound* |"),
            "no bound lines, no bound rows: {text}"
        );
        assert!(
            text.contains(
                "| 300 us | idle: the two kernel launches alone | 8.0, 8.0, 8.0 | - | - | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "300 us: option off: depth one 1.06x (missed), depth two 0.95x (met), idle +4.5 us (stated)."
            ),
            "{text}"
        );
        // The depth-one miss, 0.4 us beyond 1.05x, is within the anchor's 20 us spread.
        assert!(
            text.contains(
                "- 300 us depth one, option off, misses by 0.4 us, against a spread of 20.0 us over the rounds (the anchor's median or the lane's, the larger): within this machine's noise."
            ),
            "{text}"
        );
        // A kernel length outside the targets' is shown, not judged.
        let other = format!("{OUTPUT}{ANCHORS}").replace(" 300 ", " 3000 ");
        let text = markdown(&parse(&other).unwrap(), 200, "test");
        assert!(
            text.contains("| 3 ms | depth one: gap | 70.0 | 73.9 | 1.06 | 1.06 | - | - |"),
            "{text}"
        );
        assert!(
            text.contains("Measured, the middle round: not measured"),
            "{text}"
        );
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
        let t = measured.anchor_targets_with(300, true).unwrap();
        assert!(t.depth_one.met && (t.depth_one.ratio - 72_000.0 / 70_000.0).abs() < 1e-9);
        assert!(t.depth_two.met);
        assert!(t.idle.met && (t.idle.over_ns - 3_500.0).abs() < 1e-9);
        // The option-off verdict is loop (b)'s own arms, as before.
        let off = measured.anchor_targets(300).unwrap();
        assert!(!off.depth_one.met);
        assert_eq!(
            parse(&format!("{OUTPUT}{ANCHORS}"))
                .unwrap()
                .anchor_targets_with(300, true),
            None
        );
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains(
                "| 300 us | depth one: gap, *bound* | 70.0 | 72.0 | 1.03 | 1.03 | at most 1.05x | yes |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | idle: submit to launch, *bound* | 19.5 | 23.0 | +3.5 | +3.5 | at most +5 us | yes |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 300 us | (b), *bound* | 8.0 | 20.0 | 72.0 | 90.0 | 0.11 | 6.8 | ? | ? |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "idle +4.5 us (stated); *bound*: depth one 1.03x (met), depth two 0.89x (met), idle +3.5 us (met)"
            ),
            "{text}"
        );
        // The split rows, and the plain verdict: depth one (option off) is the only miss.
        assert_eq!(measured.idle[0].split, Some([30_000, 13_000, 3_000]));
        assert!(
            text.contains(
                "| 300 us | idle: to the AICore launch's start, *bound* | 3.0 | 13.0 | +10.0 | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "**The targets missed**: 300 us depth one, option off (1.06x).\n\nThe misses, with their likely causes:\n\n- 300 us depth one, option off, misses by 0.4 us, against a spread of 0.0 us over the rounds (the anchor's median or the lane's, the larger).\n\nAt depth one both loops wait"
            ),
            "{text}"
        );
        assert!(text.contains("300 us idle, *bound* (+3.5 us)"), "{text}");
        // A bound idle figure 6.5 us over the calls misses by 1.5 us, its split named.
        let late = format!("{OUTPUT}{ANCHORS}{BOUND}")
            .replace("idle-bound 300 200 23000", "idle-bound 300 200 26000");
        let text = markdown(&parse(&late).unwrap(), 200, "test");
        assert!(
            text.contains("- 300 us idle, *bound*, misses by 1.5 us beyond the 5 us allowed"),
            "{text}"
        );
        assert!(
            text.contains("The lane takes 13.0 us from the submit to its AICore launch's start"),
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
        let text = markdown(&measured, 200, "test");
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
        // Depth one misses (1.056x), so the cause quotes the parts, the bound lane's too.
        assert!(
            text.contains(
                "300 us: the anchor 30.0 + 17.0 + 3.0, the lane 50.0 + 17.0 + 20.0, *bound* 52.0 + 18.0 + 21.0."
            ),
            "{text}"
        );
        assert!(
            text.contains("300 us: period 380.0 against 381.0 (+1.0), span 330.0 against 314.0."),
            "{text}"
        );
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
                .contains("not an anchor, lane or lane-bound split")
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
        assert_eq!(measured.anchor_verdict(300).unwrap().hand_off, Some(h));
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains(
                "| 300 us | depth one: gap (anchor: the hand-off loop) | 77.0 | 73.9 | 0.96 | 0.96 | stated | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "the hand-off loop (the anchor's calls on two threads, one hand-over of an outcome a run) takes 1.10x the anchor's gap, and the lane 0.96x the hand-off loop's."
            ),
            "{text}"
        );
        // Stated, not judged: it is not among the targets.
        let targets = text
            .lines()
            .find(|l| l.starts_with("In plain words"))
            .expect("the plain verdict");
        assert!(!targets.contains("hand-off"), "{targets}");
        // Without its line, no row and no quote.
        let without = markdown(&parse(&format!("{OUTPUT}{ANCHORS}")).unwrap(), 200, "test");
        assert!(
            !without.contains("(anchor: the hand-off loop)"),
            "{without}"
        );
        assert!(!without.contains("takes 1.10x"), "{without}");
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
