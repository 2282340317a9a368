//! The bench's figures as data (docs/data/capi-bench.json): the loops' table, the anchors'
//! and targets' rows, the misses, the depth-one split and the lanes' rows. Apart from
//! [`super`]'s parsing and running for length.

use serde_json::{Value, json};

use super::{
    ANCHOR_TARGETS_US, AgainstAnchor, AnchorKind, AnchorTargets, BLOCK, CYCLE_PARTS,
    DEPTH_ONE_PERCENT, DepthOneSplit, FOURTEEN, IDLE_SLACK_NS, KERNELS_US, LANES, LanesCase,
    Measured, SKIP, SPLIT_PARTS, Setting, lanes_verdict, middle_of,
};

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
    (Some(AnchorKind::DepthOne), "depth one: gap", ["at most 1.05x"; 3], |t| Some(t.depth_one)),
    (Some(AnchorKind::HandOff), "depth one: gap (anchor: the hand-off loop)", ["stated"; 3], |t| {
        t.hand_off
    }),
    (Some(AnchorKind::Queued), "depth two: gap (anchor: queued)", ["at most 1.00x"; 3], |t| {
        Some(t.depth_two)
    }),
    (
        None,
        "idle: submit to launch (anchor: the launch's calls)",
        ["stated (+5 us is the bound and caller-driven target)", "at most +5 us", "at most +5 us"],
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
        let hand_off = rounds.iter().any(|m| m.anchor(kernel_us, AnchorKind::HandOff).is_some());
        let figures = FIGURES.iter().flat_map(|&f| Setting::ALL.map(|setting| (f, setting)));
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
        if rounds.iter().any(|m| m.split_at(kernel_us, "lane").is_some()) {
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
        ("depth two: gap at most the queued anchor's", |anchor| anchor, |t| Some(t.depth_two)),
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
pub(super) fn misses(measured: &Measured) -> (Vec<Value>, Vec<Value>) {
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
                let of = |median: &dyn Fn(&Measured) -> Option<u64>| {
                    let medians: Vec<u64> = rounds.iter().filter_map(|m| median(m)).collect();
                    Some(medians.iter().max()? - medians.iter().min()?)
                };
                let anchor = of(&|m| Some(m.anchor(k, kind)?.median_ns))?;
                let lane = of(&|m| Some(m.arm(k, 'b', &profile)?.median_ns))?;
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
