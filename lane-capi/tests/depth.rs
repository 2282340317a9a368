//! Launch depth through the C ABI (L-3, L-18): `RunLaneConfig::launch_depth` goes up to the
//! slot count (ABI 12; it stopped at the profile's two), as the peer runtime grants three.
//! On the fake libascendcl through both backends (`on_each_backend!`), and the refused
//! values, each with what to pass instead, on the simulator.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{Kernels, Via, control};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::ENGINE_AICPU;

/// Run 1's kernels: three runs submitted back to back are all on the pair long before it
/// ends, at depth three, however loaded the machine.
const RUN_1: Duration = Duration::from_millis(1_000);
/// Every other run's kernels.
const SHORT: Duration = Duration::from_millis(10);

static KERNELS: Kernels = Kernels::healthy(SHORT);

/// When each run's AICPU kernel was launched (host time), in launch order.
static AICPU_LAUNCHED: Mutex<Vec<(u64, Instant)>> = Mutex::new(Vec::new());

fn launch(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let run = args.info.run;
    if engine == ENGINE_AICPU {
        AICPU_LAUNCHED.lock().unwrap().push((run, Instant::now()));
    }
    common::launch_lasting(user, stream, engine, args, if run == 1 { RUN_1 } else { SHORT })
}

common::launch_callbacks!(launch_aicore, launch_aicpu, launch);

/// Three slots at launch depth three: runs 1, 2 and 3, submitted back to back, are all
/// launched onto the pair while run 1's one-second kernels still run (run 3's AICPU kernel
/// within that second of run 1's: at depth two it would wait for run 1 to retire), each
/// behind its predecessor on the device; a fourth submit is `FULL` (every slot holds a run);
/// all three end `OK` in order.
fn depth_three_queues_three_runs_on_the_pair_and_a_fourth_submit_is_full(via: Via) {
    let _fake = common::fresh();
    let control = control();
    AICPU_LAUNCHED.lock().unwrap().clear();
    let mut config = common::fake_config(via, 0, &KERNELS, 5_000);
    config.slots = 3;
    config.launch_depth = 3;
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    let lane = common::create(&config);
    let runs: Vec<u64> = (0..3)
        .map(|i| common::submit(lane).unwrap_or_else(|s| panic!("run {}: {s:?}", i + 1)))
        .collect();
    let fourth = common::submit(lane);
    let message = common::last_error();
    assert_eq!(fourth, Err(RunLaneStatus::Full), "three slots hold three runs: {message}");
    let outcomes: Vec<RunLaneOutcome> = runs.iter().map(|&run| common::wait(lane, run)).collect();
    let counters = control.counters().expect("the fake's counters");
    common::destroy(lane);
    common::assert_ok_in_order(0, &outcomes);
    let launched = AICPU_LAUNCHED.lock().unwrap().clone();
    let at = |run: u64| {
        launched
            .iter()
            .find(|(r, _)| *r == run)
            .map(|(_, at)| *at)
            .unwrap_or_else(|| panic!("run {run} launched: {launched:?}"))
    };
    let behind = at(3).duration_since(at(1));
    assert!(
        behind < RUN_1,
        "run 3 was launched {behind:?} after run 1, within run 1's {RUN_1:?} kernels: three \
         runs on the pair at once"
    );
    assert_eq!(
        counters.queued_launches, 2,
        "runs 2 and 3 each launched behind an unfinished predecessor: {counters:?}"
    );
}
common::on_each_backend!(depth_three_queues_three_runs_on_the_pair_and_a_fourth_submit_is_full);

/// The C ABI's depth is the config's up to the slot count, whatever the profile's: four slots
/// take depth four, and three slots with no depth keep the profile's two.
#[test]
fn launch_depth_up_to_the_slot_count_is_accepted_on_the_simulator() {
    for (slots, depth) in [(3, 3), (4, 4), (4, 3), (3, 0), (1, 1)] {
        let mut config = common::sim_config();
        (config.slots, config.launch_depth) = (slots, depth);
        let what = format!("slots {slots} depth {depth}");
        let lane = common::create(&config);
        let outcomes = common::documented_loop(lane, |submitted, _| submitted < 8);
        common::destroy(lane);
        assert_eq!(outcomes.len(), 8, "{what}");
        common::assert_all_ok(&what, &outcomes);
    }
}

/// Each refused depth and layout is `INVALID_CONFIG` with a one-line message that names the
/// field and what to pass instead; nothing is created.
#[test]
fn refused_depths_and_layouts_say_what_to_pass_instead() {
    let sim_with = |change: fn(&mut RunLaneConfig)| {
        let mut config = common::sim_config();
        change(&mut config);
        config
    };
    let cases: [(&str, RunLaneConfig, &str); 5] = [
        (
            "depth three on the profile's two slots",
            sim_with(|c| c.launch_depth = 3),
            "launch_depth 3 is above the slot count 2: every launched run holds a slot; set slots to at least 3",
        ),
        (
            "depth five on four slots",
            sim_with(|c| {
                c.slots = 4;
                c.launch_depth = 5;
            }),
            "launch_depth 5 is above the slot count 4",
        ),
        (
            "five slots for depth five",
            sim_with(|c| {
                c.slots = 5;
                c.launch_depth = 5;
            }),
            "1..=4 slots",
        ),
        (
            "depth two on the stream-synchronize channel",
            sim_with(|c| {
                c.launch_depth = 2;
                c.verdict_channel = RunLaneVerdictChannel::StreamSync as u32;
            }),
            "pass launch_depth 0 or 1, or verdict_channel RECORD",
        ),
        (
            "an unknown header layout",
            sim_with(|c| c.header_layout = 2),
            "header_layout 2 is not a RunLaneHeaderLayout: pass the runtime's, TENSORMAP_AND_RINGBUFFER = 0",
        ),
    ];
    for (case, config, what_to_do) in cases {
        let mut lane = std::ptr::null_mut();
        // SAFETY: a readable config and a writable handle.
        let status = unsafe { run_lane_create(&raw const config, &raw mut lane) };
        let message = common::last_error();
        assert_eq!(status, RunLaneStatus::InvalidConfig, "{case}: {message}");
        assert!(lane.is_null(), "{case}: no handle");
        assert!(!message.contains('\n'), "{case}: one line: {message:?}");
        let says = message.contains(what_to_do);
        assert!(says, "{case}: says what to pass ({what_to_do:?}): {message}");
    }
}
