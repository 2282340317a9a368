use serde_json::json;

use super::*;
use crate::testkit::assert_contains;

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
    assert_eq!(measured.targets_hold(300), Some(false), "one round: its own");
    measured.more_rounds = vec![parse(OUTPUT).unwrap(), parse(OUTPUT).unwrap()];
    assert_eq!(measured.targets_hold(300), Some(true), "two of three hold");
    assert_eq!(measured.more_rounds.len(), 2);
    assert_contains(&markdown(&measured), &["| 300 us | holds | 3.78, 0.53, 0.53 | - | - |"]);
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
    assert_eq!(measured.latencies.len(), 1);
    assert_contains(
        &markdown(&measured),
        &[
            "| 300 us | (b) | 8.6 | 29.2 | 73.9 |",
            "| 300 us | holds | 0.53 |",
            // The submit-to-launch columns, where measured.
            "| 6.8 | 21.5 | 48.0 |",
            "| (a) | 9.3 | 16.9 | 70.4 | 241.3 | 0.13 | 6.8 | - | - |",
        ],
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
    let (hung, poisoned) = ([7, 0, 4], [1000, 998, 1]);
    assert_eq!(measured.lanes[1].faulty, Some(FaultyTwo { hung, poisoned }));
    assert_eq!(measured.lanes_cost.unwrap().threads, [1, 33, 65, 1]);
    // Healthy 3.8 us (3.6..4.0), faulty 4.05 us (3.9..4.2): 0.25 us apart, noise 0.4 us.
    let verdict = lanes_verdict(&measured.lanes).unwrap();
    assert_eq!(verdict, (3800.0, 4050.0, 400.0, true));
    let far = LANES
        .replace("14000 4200 60000", "14000 9000 60000")
        .replace("14000 3900 70000", "14000 9200 70000");
    let far = lanes_verdict(&parse(&far).unwrap().lanes).unwrap();
    assert!(!far.3, "outside the noise");
    assert_contains(
        &markdown(&measured),
        &[
            "| 14 beside the faulty 2 | 1 | 4.2 | 60.0 | 14000 / 14000 | runs 7, Ok 0, poisons 4 | runs 1000, Ok 998, poisons 1 |",
            "| the difference within the noise | yes |",
            "| difference (us) | +0.25 |",
            "| threads | 1 | 33 | 65 | 1 |",
            "| VmRSS (MiB) | 4.8 | 8.2 | 10.9 | 10.4 |",
            "| threads a lane, once created | 2 |",
            "| VmRSS a lane, once created (KiB) | 216 |",
        ],
    );
    assert!(!markdown(&parse(OUTPUT).unwrap()).contains("| healthy 16 |"));
}

const ANCHORS: &str = "anchor 300 depth1 200 70000 90000\n\
    anchor 300 queued 200 9000 20000\n\
    idle 300 200 24000 60000 19500 30000 8000 12000\n";

#[test]
fn the_anchors_parse_and_the_lanes_loop_b_is_judged_against_them() {
    let measured = parse(&format!("{OUTPUT}{ANCHORS}")).unwrap();
    let (kernel_us, kind, runs) = (300, AnchorKind::Queued, 200);
    let (median_ns, p99_ns) = (9_000, 20_000);
    let queued = Anchor { kernel_us, kind, runs, median_ns, p99_ns };
    assert_eq!(measured.anchors[1], queued);
    assert_eq!(measured.idle[0].launches, [8_000, 12_000]);
    // Loop (b): depth one 73.9 us over 70.0 (1.056x, above 1.05x), depth two 8.6 us under
    // 9.0, idle 24.0 us against 19.5 + 5.
    let t = measured.anchor_targets(300).unwrap();
    assert!(!t.depth_one.met && (t.depth_one.ratio - 73_900.0 / 70_000.0).abs() < 1e-9);
    assert!(t.depth_two.met);
    assert!(t.idle.met && (t.idle.over_ns - 4_500.0).abs() < 1e-9);
    assert_eq!(measured.anchor_targets(1_000), None, "not measured");
    let one_round = measured.anchor_verdict_with(300, Setting::Off);
    assert_eq!(one_round, Some(t), "one round: its own");
    // Half a microsecond more and the idle figure misses.
    let late = ANCHORS.replace("idle 300 200 24000", "idle 300 200 24600");
    let late = parse(&format!("{OUTPUT}{late}")).unwrap();
    assert!(!late.anchor_targets(300).unwrap().idle.met);
    // The loops' verdict line shows the anchors' own ratio: 9000 / 70000.
    assert_contains(&markdown(&measured), &["| 300 us | holds | 0.53 | 9.0 | 0.13 |"]);
    // Without the anchors' lines the section has no anchors' rows.
    let without = data(&parse(OUTPUT).unwrap(), 200, None);
    assert_eq!(without["anchors"], json!([]));
}

#[test]
fn the_loops_third_gives_way_to_the_queued_anchors_gap_only_where_that_is_larger() {
    // Loop (b) queued 17.0 us against 40.0 us at depth one: above a third (13.3 us) by
    // 1.275, and within 2x of (a)'s 9.25 us.
    let loops = OUTPUT
        .replace("b depth2 200 200 8583", "b depth2 200 200 17000")
        .replace("b depth1 200 200 73900", "b depth1 200 200 40000");
    let no_anchors = parse(&loops).unwrap().targets_hold(300);
    assert_eq!(no_anchors, Some(false), "no anchors: 1/3");
    // The queued anchor's 9.0 us is below a third of 40.0: a third still applies.
    let low = parse(&format!("{loops}{ANCHORS}")).unwrap();
    assert_eq!(low.targets_hold(300), Some(false));
    assert_eq!(low.loop_target_permille(300), Some(1_275));
    // The queued anchor takes 20.0 us: the loop's 17.0 is 0.85 of it; now (a)'s 2x is the
    // worst.
    let high = ANCHORS.replace("queued 200 9000", "queued 200 20000");
    let high = parse(&format!("{loops}{high}")).unwrap();
    assert_eq!(high.targets_hold(300), Some(true));
    assert_eq!(high.loop_target_permille(300), Some(918));
    // Still a miss where the loop does worse than the queued anchor: 17.0 against 16.0.
    let close = ANCHORS.replace("queued 200 9000", "queued 200 16000");
    let close = parse(&format!("{loops}{close}")).unwrap();
    assert_eq!(close.targets_hold(300), Some(false));
    assert_eq!(close.loop_target_permille(300), Some(1_062));
    // The verdict quotes the bound it allowed.
    assert_contains(&markdown(&high), &["| 300 us | holds | 0.92 | 20.0 | 0.28 |"]);
}

#[test]
fn each_target_is_judged_on_its_middle_round() {
    let round = |depth_one_anchor: &str, idle_lane: &str| {
        let anchors = ANCHORS
            .replace("depth1 200 70000", &format!("depth1 200 {depth_one_anchor}"))
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
    assert_contains(
        &text,
        &[
            // The paired method's settings are stated.
            "- rounds: 3\n",
            "- block: 20\n",
            "| 300 us | depth one: gap | 60.0, 70.0, 80.0 | 73.9, 73.9, 73.9 | 1.23, 1.06, 0.92 | 1.06 | at most 1.05x | no |",
            "| 300 us | depth two: gap (anchor: queued) | 9.0, 9.0, 9.0 | 8.6, 8.6, 8.6 | 0.95, 0.95, 0.95 | 0.95 | at most 1.00x | yes |",
            // With the option off the idle figure is stated, not judged.
            "| 300 us | idle: submit to launch (anchor: the launch's calls) | 19.5, 19.5, 19.5 | 24.0, 60.0, 20.0 | +4.5, +40.5, +0.5 | +4.5 | stated (+5 us is the bound and caller-driven target) | - |",
            "| 300 us | idle: the two kernel launches alone | 8.0, 8.0, 8.0 | - | - | - | - | - |",
            // The depth-one miss, 0.4 us beyond 1.05x, is within the anchor's 20 us spread.
            "| 300 us | depth one, option off | 0.4 | 20.0 | yes | - | - |",
        ],
    );
    assert!(
        !text.contains("gap, bound |") && !text.contains("| (b), bound |"),
        "no bound lines, no bound rows: {text}"
    );
    // A kernel length outside the targets' is shown, not judged.
    let other = format!("{OUTPUT}{ANCHORS}").replace(" 300 ", " 3000 ");
    let other = parse(&other).unwrap();
    assert_contains(
        &markdown(&other),
        &["| 3 ms | depth one: gap | 70.0 | 73.9 | 1.06 | 1.06 | - | - |"],
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
    let off = measured.idle[0].lane;
    assert_eq!(off, [24_000, 60_000], "the option-off figure kept");
    // Bound: depth one 72.0 us over 70.0 (1.03x), depth two 8.0 under 9.0, idle 23.0 us
    // against 19.5 + 5.
    let t = measured.anchor_targets_with(300, Setting::Bound).unwrap();
    assert!(t.depth_one.met && (t.depth_one.ratio - 72_000.0 / 70_000.0).abs() < 1e-9);
    assert!(t.depth_two.met);
    assert!(t.idle.met && (t.idle.over_ns - 3_500.0).abs() < 1e-9);
    // The option-off verdict is loop (b)'s own arms, as before.
    assert!(!measured.anchor_targets(300).unwrap().depth_one.met);
    let unbound = parse(&format!("{OUTPUT}{ANCHORS}")).unwrap();
    assert_eq!(unbound.anchor_targets_with(300, Setting::Bound), None);
    assert_eq!(measured.idle[0].split, Some([30_000, 13_000, 3_000]));
    assert_contains(
        &markdown(&measured),
        &[
            "| 300 us | depth one: gap, bound | 70.0 | 72.0 | 1.03 | 1.03 | at most 1.05x | yes |",
            "| 300 us | idle: submit to launch (anchor: the launch's calls), bound | 19.5 | 23.0 | +3.5 | +3.5 | at most +5 us | yes |",
            "| 300 us | (b), bound | 8.0 | 20.0 | 72.0 | 90.0 | 0.11 | 6.8 | - | - |",
            "| 300 us | depth two: gap (anchor: queued), bound | 9.0 | 8.0 | 0.89 | 0.89 | at most 1.00x | yes |",
            // The split rows, and the plain verdict: depth one (option off) is the only miss.
            "| 300 us | idle: to the AICore launch's start, bound | 3.0 | 13.0 | +10.0 | - | - | - |",
            "| 300 us | depth one, option off | 0.4 | 0.0 | no | - | - |",
        ],
    );
    let (misses, idle) = super::figures::misses(&measured);
    assert_eq!((misses.len(), idle.len()), (1, 0), "{misses:?} {idle:?}");
    // A bound idle figure 6.5 us over the calls misses by 1.5 us, its split named.
    let late = format!("{OUTPUT}{ANCHORS}{BOUND}")
        .replace("idle-bound 300 200 23000", "idle-bound 300 200 26000");
    assert_contains(
        &markdown(&parse(&late).unwrap()),
        &["| 300 us | idle, bound | 1.5 | 13.0 | 3.0 | 30.0 |"],
    );
}

const CALLER: &str = "arm 300 b depth2-caller 200 200 9500 21000\n\
    arm 300 b depth1-caller 200 200 71000 88000\n\
    idle-caller 300 200 25500 41000 9000\n\
    depth1-split 300 lane-caller 31000 16000 4000 371000 330000\n";

#[test]
fn the_caller_driven_lane_is_judged_by_the_three_targets_beside_the_lanes_threads() {
    let measured = parse(&format!("{OUTPUT}{ANCHORS}{BOUND}{CALLER}")).unwrap();
    let idle = &measured.idle[0];
    assert_eq!(idle.caller, Some([25_500, 41_000, 9_000]));
    assert_eq!(idle.lane_of(Setting::Caller), Some([25_500, 41_000]));
    assert_eq!(idle.before_core(Setting::Caller), Some(9_000));
    // Caller-driven: depth one 71.0 us over 70.0 (1.01x, met), depth two 9.5 over 9.0
    // (1.06x, missed by 0.5 us), idle 25.5 against 19.5 + 5 (missed by 1.0 us).
    let t = measured.anchor_targets_with(300, Setting::Caller).unwrap();
    assert!(t.depth_one.met && !t.depth_two.met && !t.idle.met, "{t:?}");
    let threads = parse(&format!("{OUTPUT}{ANCHORS}{BOUND}")).unwrap();
    assert_eq!(
        measured.anchor_targets_with(300, Setting::Bound),
        threads.anchor_targets_with(300, Setting::Bound),
        "the threads' figures are their own"
    );
    assert_contains(
        &markdown(&measured),
        &[
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
        ],
    );
    // Without its lines, no caller-driven row.
    let without = markdown(&threads);
    assert!(
        !without.contains(", caller-driven |") && !without.contains("| caller-driven |"),
        "{without}"
    );
}

const SPLITS: &str = "depth1-split 300 anchor 30000 17000 3000 380000 330000\n\
    depth1-split 300 lane 50000 17000 20000 381000 314000\n\
    depth1-split 300 lane-bound 52000 18000 21000 382000 313000\n";

#[test]
fn where_a_depth_one_gap_goes_is_shown_per_part_and_quoted_for_the_miss() {
    let measured = parse(&format!("{OUTPUT}{ANCHORS}{SPLITS}")).unwrap();
    let (react_ns, launch_ns, start_ns) = (50_000, 17_000, 20_000);
    let (period_ns, span_ns, who) = (381_000, 314_000, "lane".to_owned());
    let lane =
        DepthOneSplit { kernel_us: 300, who, react_ns, launch_ns, start_ns, period_ns, span_ns };
    assert_eq!(measured.splits[1], lane);
    assert_contains(
        &markdown(&measured),
        &[
            "| 300 us | depth one, where the gap goes: device end to the AICore launch's start | 30.0 | 50.0 | +20.0 | - | - | - |",
            "| 300 us | depth one, where the gap goes: then to the run's device start | 3.0 | 20.0 | +17.0 | - | - | - |",
            // The parts' middle rounds, the bound lane's too, with the cycle they sit in.
            "| 300 us | anchor | 30.0 | 17.0 | 3.0 | 380.0 | 330.0 |",
            "| 300 us | lane | 50.0 | 17.0 | 20.0 | 381.0 | 314.0 |",
            "| 300 us | lane, bound | 52.0 | 18.0 | 21.0 | 382.0 | 313.0 |",
            // The cycle the gap sits in: the same period, the span shorter by what the gap
            // is longer.
            "| 300 us | depth one, the cycle: a run's device start to the next run's | 380.0 | 381.0 | +1.0 | - | - | - |",
            "| 300 us | depth one, the cycle: a run's device span | 330.0 | 314.0 | -16.0 | - | - | - |",
        ],
    );
}

#[test]
fn the_hand_off_anchor_is_stated_beside_depth_one_and_quoted_for_a_depth_one_miss() {
    const HAND_OFF: &str = "anchor 300 handoff 200 77000 95000\n";
    let measured = parse(&format!("{OUTPUT}{ANCHORS}{HAND_OFF}")).unwrap();
    let (kernel_us, kind, runs) = (300, AnchorKind::HandOff, 200);
    let (median_ns, p99_ns) = (77_000, 95_000);
    let hand_off = Anchor { kernel_us, kind, runs, median_ns, p99_ns };
    assert_eq!(measured.anchors[2], hand_off);
    // Loop (b) at depth one, 73.9 us: 1.056x the depth-one anchor (a miss), 0.96x the
    // hand-off loop's 77.0 us, which is 1.10x the depth-one anchor's 70.0.
    let t = measured.anchor_targets(300).unwrap();
    assert!(!t.depth_one.met);
    let h = t.hand_off.expect("measured");
    assert!(h.met && (h.ratio - 73_900.0 / 77_000.0).abs() < 1e-9);
    let verdict = measured.anchor_verdict_with(300, Setting::Off).unwrap();
    assert_eq!(verdict.hand_off, Some(h));
    assert_contains(
        &markdown(&measured),
        &[
            "| 300 us | depth one: gap (anchor: the hand-off loop) | 77.0 | 73.9 | 0.96 | 0.96 | stated | - |",
            // The depth-one miss quotes the hand-off loop: 1.10x the anchor's gap, the lane
            // 0.96x of it.
            "| 300 us | depth one, option off | 0.4 | 0.0 | no | 1.10 | 0.96 |",
        ],
    );
    // Without its line, no row and no quote.
    let without = markdown(&parse(&format!("{OUTPUT}{ANCHORS}")).unwrap());
    assert!(!without.contains("(anchor: the hand-off loop)"), "{without}");
    assert_contains(&without, &["| 300 us | depth one, option off | 0.4 | 0.0 | no | - | - |"]);
}

#[test]
fn a_line_the_bench_never_prints_is_an_error_naming_it() {
    for (line, error) in [
        ("arm 300 a", "`arm 300 a`"),
        ("floor x 1 2 3", "not a number"),
        ("lanes sideways 1 1 1 1 1 1", "not a healthy or faulty case"),
        ("anchor 300 sideways 200 1 2", "not a depth1, queued or handoff anchor"),
        ("idle 300 80 1 2 3", "never prints"),
        (
            "depth1-split 300 sideways 1 2 3 4 5",
            "not an anchor, lane, lane-bound or lane-caller split",
        ),
        // A bound, split or caller-driven idle line needs its idle line first.
        ("idle-bound 300 200 1 2", "before its `idle` line"),
        ("idle-split 300 1 2 3", "before its `idle` line"),
        ("idle-caller 300 200 1 2 3", "before its `idle` line"),
    ] {
        let err = parse(line).unwrap_err();
        assert!(err.contains(error), "{line}: {err}");
    }
}
