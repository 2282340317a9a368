//! A short run of the fake bench (`fake-bench`): queued depth two overlaps runs, depth one
//! does not, and the lifted arm (copies on the streams, runner work on host workers) runs
//! every run. Orderings and outcomes only, no timing assertions.

use lane_conformance::bench;

const RUNS: u32 = 6;

#[test]
fn queued_depth_two_launches_every_successor_before_its_predecessor_completed() {
    let two = bench::arm(2, 200_000, RUNS, 1).unwrap();
    assert_eq!(two.ok, RUNS, "every run succeeds: {two:?}");
    assert_eq!(
        two.queued_launches,
        Some(u64::from(RUNS - 1)),
        "each run after the first is launched before its predecessor's completion: {two:?}"
    );
}

#[test]
fn depth_one_launches_no_run_before_its_predecessor_completed() {
    let one = bench::arm(1, 200_000, RUNS, 1).unwrap();
    assert_eq!(one.ok, RUNS, "every run succeeds: {one:?}");
    assert_eq!(one.queued_launches, Some(0), "{one:?}");
    assert_eq!(
        one.gaps_ns.len(),
        (RUNS - 2) as usize,
        "a gap per measured pair of consecutive runs"
    );
}

#[test]
fn the_lifted_arm_runs_every_run_with_its_timing_through_the_service_s_workers() {
    let lifted = bench::lifted_arm(200_000, RUNS, 1).unwrap();
    assert_eq!(lifted.ok, RUNS, "every run succeeds: {lifted:?}");
    assert_eq!(lifted.depth, 2);
    assert_eq!(
        lifted.gaps_ns.len(),
        (RUNS - 2) as usize,
        "a gap per measured pair of consecutive runs, from the runs' timing read back through \
         the pinned buffers: {lifted:?}"
    );
    assert!(lifted.busy_ns.iter().all(|b| *b > 0), "{lifted:?}");
}

/// The lifted lane still queues: with prepare and finalise on host workers and their answers
/// coming back through the service's mailbox, every successor is launched before its
/// predecessor's kernels finished (the fake counts it on the device). The runs are 50 ms
/// long, so a launch late by even tens of milliseconds on a loaded machine still counts.
#[test]
fn the_lifted_arm_launches_every_successor_while_its_predecessor_is_on_the_device() {
    let lifted = bench::lifted_arm(50_000_000, RUNS, 1).unwrap();
    assert_eq!(lifted.ok, RUNS, "every run succeeds: {lifted:?}");
    assert_eq!(
        lifted.queued_launches,
        Some(u64::from(RUNS - 1)),
        "each run after the first is launched while its predecessor runs: {lifted:?}"
    );
}

/// What `cargo xtask fake-bench` writes to docs/data/fake-bench.json: a row per arm and
/// device time with every figure docs/performance.md's table renders, and null where the
/// third arm cannot measure one.
#[test]
fn the_figures_come_out_as_json_a_row_per_arm() {
    let config = bench::BenchConfig { runs: RUNS, device_ns: vec![200_000], skip: 1 };
    let data = bench::to_json(&config, &bench::run(&config).unwrap());
    assert_eq!(data["settings"]["runs"], RUNS);
    let rows = data["arms"].as_array().expect("a list of arms");
    assert_eq!(rows.len(), 3, "{data}");
    for row in rows {
        assert_eq!(row["device_us"], 200, "{row}");
        for figure in ["runs_per_s", "busy_us", "mean_gap_us", "median_gap_us", "p99_gap_us"] {
            assert!(row[figure].is_f64(), "{figure} in {row}");
        }
        assert!(row["queued_launches"].is_u64(), "{row}");
    }
    assert_eq!(rows[0]["arm"], "depth one");
    assert!(rows[0]["host_us"].is_f64(), "{data}");
    assert!(rows[2]["host_us"].is_null(), "not measured: {data}");
}
