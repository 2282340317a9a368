//! 1,000 lanes created, run and destroyed one after another in one process, through the C
//! ABI, on the simulator, then 1,000 more on the fake libascendcl (each on the next of its
//! 16 devices; a fake lane opens the library, binds, creates its streams at the first launch
//! and destroys them, about half a millisecond a cycle), then 1,000 more on the fake through
//! a runtime's device table (`RUN_LANE_BACKEND_DEVICE_OPS`): the process's open descriptors and
//! threads end where they started, its memory mappings and resident memory within a bound. Every other lane has
//! two host workers, so their threads come and go too.
//!
//! Its own test binary, with one test: the counts are the process's, and the fake's state is
//! process-wide.

mod common;

use std::time::Duration;

use common::*;
use run_lane::*;

/// Cycles measured, and cycles run before the baseline is taken: the first creates load
/// the libraries, fill the registries and the thread-local error text, and let the
/// allocator make its per-thread arenas and cache freed thread stacks (glibc keeps up to
/// 40 MiB of them for reuse), none of which is a leak.
const CYCLES: u32 = 1_000;
const WARM_UP: u32 = 50;
/// Runs per cycle.
const RUNS: u64 = 2;

/// How much resident memory may grow over the measured cycles, KiB: 1 MiB. Measured, it
/// grows by tens of KiB: the allocator's noise (glibc gives freed memory back to the kernel
/// only past its trim threshold, 128 KiB at the top of an arena, so that much can stay
/// resident per arena without a leak). A leak of 1 KiB per cycle is 1 MiB over the 1,000
/// cycles and fails; a leaked thread fails the exact thread count, a leaked thread stack
/// the mapping bound.
const RSS_GROWTH_KIB: u64 = 1024;
/// How many memory mappings the process may gain over the measured cycles: 64. Ended threads'
/// stacks stay mapped for a while without a leak: the fake keeps each device's last stream
/// workers' join handles (and so their stacks) until the next stream on that device (16
/// devices x 2 stacks x 2 mappings, a stack and its guard page), and glibc caches freed
/// stacks for reuse (up to 40 MiB); how many of either are held at the end depends on thread
/// timing (on a quiet machine the count is unchanged). A thread stack leaked per cycle would
/// be 2,000 more.
const MAPPINGS_GROWTH: u64 = 64;

/// A simulator lane (its callbacks NULL: the simulated device runs the kernels).
fn sim_config() -> RunLaneConfig {
    let mut config = common::sim_config();
    config.profile = RunLaneProfile::A2a3 as u32;
    config.sim_run_ns = 100_000;
    config
}

/// Every other cycle's lane has this many host workers (prepare and finalise off the lane
/// thread), so their threads are started and joined too.
const WORKERS: u32 = 2;

/// `config` with [`WORKERS`] host workers on odd cycles.
fn with_workers(mut config: RunLaneConfig, cycle: u32) -> RunLaneConfig {
    if cycle % 2 == 1 {
        config.workers = WORKERS;
        config.runner.concurrency =
            RunLaneConcurrency { off_lane_thread: true, prepares_at_once: 2 };
    }
    config
}

/// One cycle: create (the lane's own threads counted: its lane thread, completion waiter and
/// host workers), [`RUNS`] runs with the documented loop (each `Ok`), destroy.
fn cycle(config: &RunLaneConfig) {
    let lane = create(config);
    let own = 2 + u64::from(config.workers);
    wait_for_usage(&format!("{own} lane threads: lane thread, completion waiter, workers"), |u| {
        u.lane_threads == own
    });
    let outcomes = documented_loop(lane, |submitted, _| submitted < RUNS);
    assert_eq!(outcomes.len() as u64, RUNS);
    assert_ok_in_order(config.device_id, &outcomes);
    destroy(lane);
}

/// The process's usage once every thread a destroyed lane left has ended.
fn settled() -> Usage {
    wait_for_lane_threads_joined("destroy joins the lane's threads");
    wait_for_no_lane_threads()
}

/// Runs [`WARM_UP`] then [`CYCLES`] cycles of `config_for(i)` and checks the process's
/// descriptors and threads are back where they were after the warm-up, its memory mappings
/// within [`MAPPINGS_GROWTH`] and its resident memory within [`RSS_GROWTH_KIB`].
fn cycles_leave_the_process_as_it_was(what: &str, config_for: impl Fn(u32) -> RunLaneConfig) {
    for i in 0..WARM_UP {
        cycle(&config_for(i));
    }
    let before = settled();
    for i in 0..CYCLES {
        cycle(&config_for(i));
    }
    let after = settled();
    println!(
        "{what}: {CYCLES} cycles: fds {} -> {}, threads {} -> {}, mappings {} -> {}, VmRSS {} KiB -> {} KiB ({:+} KiB)",
        before.fds,
        after.fds,
        before.threads,
        after.threads,
        before.mappings,
        after.mappings,
        before.rss_kib,
        after.rss_kib,
        after.rss_kib as i64 - before.rss_kib as i64
    );
    assert_eq!(after.fds, before.fds, "{what}: open descriptors");
    assert_eq!(after.threads, before.threads, "{what}: threads");
    assert!(
        after.mappings <= before.mappings + MAPPINGS_GROWTH,
        "{what}: {} memory mappings more after {CYCLES} cycles (bound {MAPPINGS_GROWTH})",
        after.mappings - before.mappings
    );
    assert!(
        after.rss_kib <= before.rss_kib + RSS_GROWTH_KIB,
        "{what}: resident memory grew by {} KiB over {CYCLES} cycles (bound {RSS_GROWTH_KIB} KiB)",
        after.rss_kib - before.rss_kib
    );
}

/// One test for both backends, so no other test's thread comes or goes in this process
/// while it counts.
#[test]
fn a_thousand_lanes_created_run_and_destroyed_leave_fds_threads_and_memory_as_they_were() {
    let config = sim_config();
    cycles_leave_the_process_as_it_was("simulator", |i| with_workers(config, i));

    let control = control();
    let _fake = control.session().expect("reset the fake");
    let kernels = Kernels::healthy(Duration::from_micros(100));
    // Each cycle on the next of the fake's 16 devices.
    cycles_leave_the_process_as_it_was("fake libascendcl", |i| {
        with_workers(fake_config(Via::Acl, (i % 16) as i32, &kernels, 5_000), i)
    });
    // The same fake reached through a runtime's device table: the lane keeps nothing of a
    // table (its handles, its device's record) past the last lane that used it.
    cycles_leave_the_process_as_it_was("a runtime's device table over the fake", |i| {
        with_workers(fake_config(Via::DeviceOps, (i % 16) as i32, &kernels, 5_000), i)
    });
    let counters = control.total_counters().expect("counters");
    assert!(counters.balanced(), "{counters:?}");
    assert_eq!(counters.force_resets, 0);
}
