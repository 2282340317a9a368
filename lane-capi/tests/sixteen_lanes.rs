//! Sixteen lanes at once through the C ABI, one per device of the fake libascendcl (ids 0 to
//! 15), each driven from its own thread with the documented loop (submit until `FULL`, then
//! wait for the oldest): every outcome `Ok` and in submission order, what each lane costs in
//! threads, and, with device 14 hung and device 15 poisoned, the other fourteen untouched.
//!
//! "Hung" here: every AICore kernel launched on device 14 hangs (a kernel rule with outcome
//! `Hang` for every launch). A hung kernel on the fake never ends on its own; it ends at the
//! device's op timeout, which backend-acl programs from the lane's profile
//! (`device_op_timeout_ms`, 200 ms here), with 507014 (AICore timeout). So each run of that
//! lane ends there and poisons the lane, which recovers the device (drain, force reset,
//! probe) and reopens, and its next run hangs and poisons again: the lane never delivers an
//! `Ok`. Device 15 has one AICore exception (507015) on one run: that run poisons, the run
//! queued behind it is poisoned by it, the lane recovers and every later run is `Ok`.
//!
//! Its own test binary: the fake's state is process-wide, and the thread counts are the
//! process's; the tests here take `common::serial()`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

use common::*;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, Outcome};

/// The fake's devices, one lane each.
const LANES: i32 = 16;
/// Runs per healthy lane (at least).
const RUNS: u64 = 300;
/// Each kernel's length: 300 runs at launch depth two take about 0.6 s of device time per
/// lane, and the sixteen lanes' threads fit two cores.
const KERNEL: Duration = Duration::from_millis(2);
/// Every lane's device op timeout: far above a healthy kernel, and the hung device's
/// kernels end there.
const OP_TIMEOUT_MS: u64 = 200;
/// The hung device and the poisoned one.
const HUNG: i32 = 14;
const POISONED: i32 = 15;
/// Device 15's AICore launches before the one that faults (its run 41 poisons).
const POISON_AFTER: u32 = 40;
/// Runs on device 15 in all.
const POISONED_RUNS: u64 = 120;
/// Times device 14's lane poisons (and recovers) before its driver stops.
const HUNG_POISONS: usize = 3;

/// When a lane's driver stops: `more(submitted, outcomes so far)` (see `documented_loop`).
type More = Box<dyn FnMut(u64, &[RunLaneOutcome]) -> bool + Send>;

/// Lane-service's threads and the fake's stream threads, per lane, as counted.
const LANE_THREADS_PER_LANE: u64 = 2; // the lane thread and its completion waiter (no workers)
const FAKE_STREAM_THREADS_PER_LANE: u64 = 2; // the stream pair, created at the first launch

/// One lane's thread: creates its lane and meets the others (and the main thread, which
/// counts the process then), runs one run and meets them again (counted with every lane's
/// streams created), then drives the lane with the documented loop while `more` says so,
/// destroys it and sends the outcomes (the first run's first).
fn lane_thread(
    via: Via,
    device: i32,
    steps: Arc<Barrier>,
    more: impl FnMut(u64, &[RunLaneOutcome]) -> bool + Send + 'static,
    done: mpsc::Sender<(i32, Vec<RunLaneOutcome>)>,
) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name(format!("driver-{device}"))
        .spawn(move || {
            let kernels = Kernels::healthy(KERNEL);
            let lane = create(&fake_config(via, device, &kernels, OP_TIMEOUT_MS));
            steps.wait(); // every lane created
            steps.wait(); // counted
            let first = submit(lane).expect("the first submit");
            let mut outcomes = vec![wait(lane, first)];
            steps.wait(); // every lane ran a run
            steps.wait(); // counted
            outcomes.extend(documented_loop(lane, more));
            destroy(lane);
            let _ = done.send((device, outcomes));
        })
        .expect("a driver thread")
}

/// Collects every lane's outcomes (each within [`BOUND`]) and joins the drivers.
fn collect(
    drivers: Vec<thread::JoinHandle<()>>,
    done: &mpsc::Receiver<(i32, Vec<RunLaneOutcome>)>,
) -> Vec<Vec<RunLaneOutcome>> {
    let mut by_device = vec![Vec::new(); LANES as usize];
    for _ in 0..drivers.len() {
        let (device, outcomes) = done
            .recv_timeout(BOUND)
            .expect("every driver ends within the bound (a panicking one fails the join below)");
        by_device[device as usize] = outcomes;
    }
    for driver in drivers {
        driver.join().expect("a driver thread panicked");
    }
    by_device
}

/// Starts the drivers and, with `count`, counts the process at both meeting points (once the
/// lanes' new threads have taken their names: every lane healthy), and returns the counts:
/// what the main thread saw of the process before, with every lane created, and running.
fn start(
    via: Via,
    mores: Vec<More>,
    done: &mpsc::Sender<(i32, Vec<RunLaneOutcome>)>,
    count: bool,
) -> (Vec<thread::JoinHandle<()>>, [Usage; 3]) {
    let steps = Arc::new(Barrier::new(LANES as usize + 1));
    let before = usage();
    let drivers: Vec<_> = mores
        .into_iter()
        .enumerate()
        .map(|(device, more)| {
            lane_thread(via, device as i32, Arc::clone(&steps), more, done.clone())
        })
        .collect();
    let lanes = LANES as u64;
    steps.wait();
    let created = if count {
        wait_for_usage("every lane's threads named", |u| {
            u.lane_threads == lanes * LANE_THREADS_PER_LANE
        })
    } else {
        usage()
    };
    steps.wait();
    steps.wait();
    let running = if count {
        wait_for_usage("every lane's and stream's threads named", |u| {
            u.lane_threads == lanes * LANE_THREADS_PER_LANE
                && u.fake_stream_threads == lanes * FAKE_STREAM_THREADS_PER_LANE
        })
    } else {
        usage()
    };
    steps.wait();
    (drivers, [before, created, running])
}

fn rss_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn sixteen_lanes_one_per_device_at_once_every_outcome_ok_in_order_two_threads_per_lane(via: Via) {
    let _fake = common::fresh();
    let control = control();
    let (done_tx, done) = mpsc::channel();
    let mores: Vec<More> = (0..LANES)
        .map(|_| Box::new(|submitted, _: &[RunLaneOutcome]| submitted < RUNS) as Box<_>)
        .collect();
    let (drivers, counted) = start(via, mores, &done_tx, true);
    let by_device = collect(drivers, &done);
    let joined = wait_for_lane_threads_joined("every lane thread joined at destroy");

    for (device, outcomes) in by_device.iter().enumerate() {
        assert_eq!(outcomes.len() as u64, RUNS + 1, "device {device}");
        assert_ok_in_order(device as i32, outcomes);
    }
    // Each lane: its lane thread and completion waiter from create on; the fake's two stream
    // threads from the first launch on (a real libascendcl has no thread per stream).
    let lanes = LANES as u64;
    let [before, created, running] = counted;
    assert_eq!(before.lane_threads, 0);
    assert_eq!(created.fake_stream_threads, 0, "streams are created lazily");
    // A thread takes its spawner's name until it names itself: a lane thread nobody named
    // would count as its lane's `driver-N` (or as `lane`). So with exactly the drivers the
    // test started, and the counts above, the lanes started no other thread. (The process's
    // own count also includes the test harness's threads, which come and go.)
    assert_eq!(created.named("driver-"), lanes);
    assert_eq!(running.named("driver-"), lanes);
    // Destroy joined every lane thread (listed no more within the reap grace); the fake's
    // stream threads end once woken.
    assert_eq!(joined.lane_threads, 0);
    let after = wait_for_no_lane_threads();
    assert_eq!(after.named("driver-"), 0);
    for device in 0..LANES {
        let counters = control.device(device).counters().expect("counters");
        assert!(counters.balanced(), "device {device}: {counters:?}");
        assert_eq!(counters.force_resets, 0, "device {device}");
        assert_eq!(counters.launches, 2 * (RUNS + 1), "device {device}");
    }
    println!(
        "16 lanes: threads {} before, {} created, {} running ({} lane, {} fake stream, 16 drivers), {} after; \
         VmRSS {:.1} MiB before, {:.1} MiB created, {:.1} MiB running, {:.1} MiB after",
        before.threads,
        created.threads,
        running.threads,
        running.lane_threads,
        running.fake_stream_threads,
        after.threads,
        rss_mib(before.rss_kib),
        rss_mib(created.rss_kib),
        rss_mib(running.rss_kib),
        rss_mib(after.rss_kib),
    );
}

/// How many of `outcomes` have `verdict`.
fn count(outcomes: &[RunLaneOutcome], verdict: RunLaneVerdict) -> usize {
    outcomes.iter().filter(|o| o.verdict == verdict).count()
}

/// How a faulty lane's outcomes are judged: each failed run poisoned the lane itself (class
/// `POISON`, `code`) and each poisoned one names a failed run of this lane before it.
fn poisons(device: i32, outcomes: &[RunLaneOutcome], code: i32) -> Vec<u64> {
    let mut origins = Vec::new();
    let first = outcomes[0].id;
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.id, first + i as u64, "device {device}: in order");
        match outcome.verdict {
            RunLaneVerdict::Ok => {}
            RunLaneVerdict::Failed => {
                let got = (outcome.failure_class, outcome.has_code, outcome.code);
                assert_eq!(
                    got,
                    (RunLaneClass::Poison, true, code),
                    "device {device}: {}",
                    line(outcome)
                );
                origins.push(outcome.id);
            }
            RunLaneVerdict::Poisoned => {
                assert_eq!(outcome.failure_class, RunLaneClass::Poison);
                let (id, origin, line) = (outcome.id, outcome.origin, line(outcome));
                let earlier = origins.contains(&origin);
                assert!(
                    earlier,
                    "device {device}: run {id} poisoned by {origin}, not an earlier failed run: {line}"
                );
            }
            RunLaneVerdict::Cancelled | RunLaneVerdict::None => {
                panic!("device {device}: run {} {:?}", outcome.id, outcome.verdict)
            }
        }
    }
    origins
}

fn a_hung_device_and_a_poisoned_one_leave_the_other_fourteen_lanes_every_outcome_ok(via: Via) {
    let _fake = common::fresh();
    let control = control();
    // Device 14: every AICore kernel hangs (to the op timeout). Device 15: one faults.
    let (hung, poisoned) = (control.device(HUNG), control.device(POISONED));
    let (hang, exception) = (Outcome::Hang, Outcome::Exception);
    let rules = hung.fault_kernel(hang, ENGINE_AICORE, 0, u32::MAX, &[]);
    rules
        .and(poisoned.fault_kernel(exception, ENGINE_AICORE, POISON_AFTER, 1, &[]))
        .expect("the fault rules");
    // The healthy lanes run until both faulty ones are through their faults, and at least
    // RUNS runs: every fault happens while all fourteen are running.
    let faulty_done = Arc::new(AtomicU32::new(0));
    let hung_poisons = Arc::new(AtomicBool::new(false));
    let (done_tx, done) = mpsc::channel();
    let mores: Vec<More> = (0..LANES)
        .map(|device| -> More {
            let faulty_done = Arc::clone(&faulty_done);
            let hung_poisons = Arc::clone(&hung_poisons);
            match device {
                HUNG => Box::new(move |_, outcomes: &[RunLaneOutcome]| {
                    if count(outcomes, RunLaneVerdict::Failed) < HUNG_POISONS {
                        return true;
                    }
                    if !hung_poisons.swap(true, Ordering::SeqCst) {
                        faulty_done.fetch_add(1, Ordering::SeqCst);
                    }
                    false
                }),
                POISONED => {
                    let mut counted = false;
                    Box::new(move |submitted, _: &[RunLaneOutcome]| {
                        let more = submitted < POISONED_RUNS;
                        if !more && !counted {
                            counted = true;
                            faulty_done.fetch_add(1, Ordering::SeqCst);
                        }
                        more
                    })
                }
                _ => Box::new(move |submitted, _: &[RunLaneOutcome]| {
                    submitted < RUNS || faulty_done.load(Ordering::SeqCst) < 2
                }),
            }
        })
        .collect();
    // Not counted: device 14's lane is between a poison and its next launch at the meeting
    // point, its streams gone with the reset.
    let (drivers, _) = start(via, mores, &done_tx, false);
    let by_device = collect(drivers, &done);

    for device in 0..HUNG {
        let outcomes = &by_device[device as usize];
        assert!(outcomes.len() as u64 > RUNS, "device {device}");
        assert_ok_in_order(device, outcomes);
    }
    // Device 14: its first run was the one before the loop; none ended Ok, each failure is
    // an AICore timeout at the op timeout that poisoned the lane, and the lane recovered
    // after each (the next run was accepted and hung again).
    let hung = &by_device[HUNG as usize];
    let origins = poisons(HUNG, hung, 507_014);
    assert_eq!(count(hung, RunLaneVerdict::Ok), 0, "a hung device's run ended OK");
    assert!(origins.len() >= HUNG_POISONS, "{origins:?}");
    // Device 15: exactly one run failed with the AICore exception (its 41st AICore launch),
    // at most the one run queued behind it was poisoned by it, and every other run is Ok.
    let poisoned = &by_device[POISONED as usize];
    let origins = poisons(POISONED, poisoned, 507_015);
    assert_eq!(origins, [u64::from(POISON_AFTER) + 1]);
    let taken_down = count(poisoned, RunLaneVerdict::Poisoned);
    assert!(taken_down <= 1, "launch depth two: at most one run behind it");
    assert_eq!(count(poisoned, RunLaneVerdict::Ok), poisoned.len() - 1 - taken_down);
    // Nothing leaked on any device; only the faulty two were reset, each per poison.
    for device in 0..LANES {
        let counters = control.device(device).counters().expect("counters");
        assert!(counters.balanced(), "device {device}: {counters:?}");
        let resets = match device {
            HUNG => count(hung, RunLaneVerdict::Failed) as u64,
            POISONED => 1,
            _ => 0,
        };
        assert_eq!(counters.force_resets, resets, "device {device}");
    }
    wait_for_lane_threads_joined("every lane thread joined at destroy");
    wait_for_no_lane_threads();
    let fewest = by_device[..HUNG as usize].iter().map(Vec::len).min();
    println!(
        "beside the faulty two: the fourteen ran at least {fewest:?} runs each, all Ok; device 14 \
         {} runs, {} poisons; device 15 {} runs, {taken_down} taken down by its one poison",
        hung.len(),
        count(hung, RunLaneVerdict::Failed),
        poisoned.len(),
    );
    let _fake = control.session().expect("reset the fake");
}

common::on_each_backend!(
    sixteen_lanes_one_per_device_at_once_every_outcome_ok_in_order_two_threads_per_lane,
    a_hung_device_and_a_poisoned_one_leave_the_other_fourteen_lanes_every_outcome_ok,
);
