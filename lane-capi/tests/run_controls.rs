//! Issue 45's run controls and launch control through the C ABI, on the fake libascendcl and
//! through both backends (`on_each_backend!`): a held submit and `run_lane_activate`, an
//! ordering key, `run_lane_cancel`, `run_lane_run_state`, a declined queued launch
//! (`RUN_LANE_LAUNCH_DECLINED`), the per-submit `user`, the runtime's epoch, `on_launched`,
//! `finalise_verdict`, and `finalise_before_launch`.

mod common;

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use common::{BOUND, Kernels, Via, control, launch_kernel, wait};
use core::ffi::c_void;
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, Outcome};

/// Each run: a pair of 40 ms fake kernels (long enough that what a test does while the first
/// run executes happens before it ends, on a loaded machine too).
const KERNEL: Duration = Duration::from_millis(40);

/// What the runner's callbacks saw, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Prepare(u64),
    /// `launch_aicore` of a run, queued or not; declined or not.
    Aicore {
        run: u64,
        queued: bool,
        declined: bool,
    },
    Launched(u64),
    /// `finalise_verdict` began, with what it was told.
    FinaliseBegins {
        run: u64,
        verdict: RunLaneVerdict,
        class: RunLaneClass,
        code: Option<i32>,
        copy_back: bool,
    },
    FinaliseEnds(u64),
    Outcome(u64),
    /// A callback's `RunLaneRunInfo::user` (or the outcome's `run_user`) was not its submit's.
    WrongUser(u64),
    /// The test called `run_lane_activate` for the run.
    Activated(u64),
}

/// The runner: the fake's kernels, the runs whose launch it declines once each (when queued),
/// how long each `finalise_verdict` takes, and the log.
struct Runner {
    kernels: Kernels,
    decline: Mutex<Vec<u64>>,
    finalise_takes: Duration,
    seen: Mutex<Vec<Seen>>,
    /// The epochs the launch callbacks were given, by run.
    epochs: Mutex<Vec<(u64, u64)>>,
}

impl Runner {
    fn new(kernels: Kernels) -> Self {
        Self {
            kernels,
            decline: Mutex::new(Vec::new()),
            finalise_takes: Duration::ZERO,
            seen: Mutex::new(Vec::new()),
            epochs: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, seen: Seen) {
        self.seen.lock().unwrap().push(seen);
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Where `seen` first is in the log.
    fn at(&self, seen: Seen) -> usize {
        let log = self.seen();
        log.iter()
            .position(|s| *s == seen)
            .unwrap_or_else(|| panic!("{seen:?} never seen: {log:?}"))
    }

    /// Waits (polling, within [`BOUND`]) until `seen` is in the log.
    fn until(&self, seen: Seen) {
        let start = Instant::now();
        while !self.seen().contains(&seen) {
            assert!(
                start.elapsed() < BOUND,
                "{seen:?} never seen: {:?}",
                self.seen()
            );
            thread::sleep(Duration::from_millis(1));
        }
    }
}

fn runner<'a>(user: *mut c_void) -> &'a Runner {
    // SAFETY: every lane of these tests passes a `Runner` that outlives it.
    unsafe { &*user.cast::<Runner>() }
}

/// The `user` every submit of these tests carries: the run's own marker, `run * 8`.
fn marker(run: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(usize::try_from(run * 8).unwrap_or(0))
}

/// Notes a callback whose `user` is not its run's submit's: tests submit each run `n` with
/// [`marker`] of the id it will get (ids are given in order, one lane per test).
fn check_user(r: &Runner, info: &RunLaneRunInfo) {
    if info.user != marker(info.run) {
        r.note(Seen::WrongUser(info.run));
    }
}

unsafe extern "C" fn prepare(user: *mut c_void, info: *const RunLaneRunInfo) -> i32 {
    let r = runner(user);
    // SAFETY: valid for the call.
    let info = unsafe { &*info };
    check_user(r, info);
    r.note(Seen::Prepare(info.run));
    0
}

unsafe extern "C" fn launch_aicore(
    user: *mut c_void,
    stream: *mut c_void,
    args: *const RunLaneRunArgs,
) -> i32 {
    let r = runner(user);
    // SAFETY: valid for the call.
    let args = unsafe { &*args };
    check_user(r, &args.info);
    let run = args.info.run;
    let declined = {
        let mut decline = r.decline.lock().unwrap();
        match decline.iter().position(|d| *d == run) {
            Some(at) if args.queued => {
                decline.remove(at);
                true
            }
            _ => false,
        }
    };
    r.note(Seen::Aicore {
        run,
        queued: args.queued,
        declined,
    });
    if declined {
        return RUN_LANE_LAUNCH_DECLINED;
    }
    r.epochs.lock().unwrap().push((run, args.epoch));
    launch_kernel(&r.kernels, stream, ENGINE_AICORE, args, r.kernels.kernel)
}

unsafe extern "C" fn launch_aicpu(
    user: *mut c_void,
    stream: *mut c_void,
    args: *const RunLaneRunArgs,
) -> i32 {
    let r = runner(user);
    // SAFETY: valid for the call.
    let args = unsafe { &*args };
    check_user(r, &args.info);
    launch_kernel(&r.kernels, stream, ENGINE_AICPU, args, r.kernels.kernel)
}

unsafe extern "C" fn on_launched(user: *mut c_void, info: *const RunLaneRunInfo) {
    let r = runner(user);
    // SAFETY: valid for the call.
    let info = unsafe { &*info };
    check_user(r, info);
    r.note(Seen::Launched(info.run));
}

unsafe extern "C" fn finalise_verdict(
    user: *mut c_void,
    info: *const RunLaneRunInfo,
    verdict: *const RunLaneFinaliseVerdict,
) -> i32 {
    let r = runner(user);
    // SAFETY: both valid for the call.
    let (info, verdict) = unsafe { (&*info, &*verdict) };
    check_user(r, info);
    r.note(Seen::FinaliseBegins {
        run: info.run,
        verdict: verdict.verdict,
        class: verdict.failure_class,
        code: verdict.has_code.then_some(verdict.code),
        copy_back: verdict.copy_back,
    });
    thread::sleep(r.finalise_takes);
    r.note(Seen::FinaliseEnds(info.run));
    0
}

unsafe extern "C" fn on_outcome(user: *mut c_void, outcome: *const RunLaneOutcome) {
    let r = runner(user);
    // SAFETY: valid for the call.
    let outcome = unsafe { &*outcome };
    if outcome.item == RunLaneItem::Run && outcome.run_user != marker(outcome.id) {
        r.note(Seen::WrongUser(outcome.id));
    }
    r.note(Seen::Outcome(outcome.id));
}

/// A lane on the fake with the recording runner; `slots` 0 keeps two.
fn lane(via: Via, r: &Runner, slots: u8) -> *mut RunLane {
    let mut config = common::fake_config(via, 0, &r.kernels, 5_000);
    config.slots = slots;
    config.runner.user = std::ptr::from_ref(r).cast_mut().cast();
    config.runner.prepare = Some(prepare);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.runner.on_launched = Some(on_launched);
    config.runner.finalise_verdict = Some(finalise_verdict);
    config.runner.on_outcome = Some(on_outcome);
    common::create(&config)
}

/// The request of run `run` (its id, as the lane will give it), with the run's marker.
fn request(run: u64) -> RunLaneSubmit {
    RunLaneSubmit {
        copy_back: true,
        user: marker(run),
        ..RunLaneSubmit::default()
    }
}

fn submit(lane: *mut RunLane, request: &RunLaneSubmit) -> Result<u64, RunLaneStatus> {
    let mut run = 0;
    // SAFETY: a live handle, a readable request and a writable id.
    match unsafe { run_lane_submit(lane, request, &raw mut run) } {
        RunLaneStatus::Ok => Ok(run),
        refused => Err(refused),
    }
}

fn state(lane: *mut RunLane, run: u64) -> Result<RunLaneRunStatus, RunLaneStatus> {
    let mut status = run_lane::sized::init::<RunLaneRunStatus>();
    // SAFETY: a live handle and a writable status.
    match unsafe { run_lane_run_state(lane, run, status.as_mut_ptr()) } {
        // SAFETY: filled by the OK call.
        RunLaneStatus::Ok => Ok(unsafe { status.assume_init() }),
        refused => Err(refused),
    }
}

fn activate(lane: *mut RunLane, r: &Runner, run: u64) {
    r.note(Seen::Activated(run));
    assert_eq!(run_lane_activate(lane, run), RunLaneStatus::Ok);
}

fn no_wrong_user(r: &Runner) {
    let log = r.seen();
    assert!(
        !log.iter().any(|s| matches!(s, Seen::WrongUser(_))),
        "a callback or an outcome saw another user: {log:?}"
    );
}

fn a_held_run_is_prepared_while_the_first_runs_and_launched_only_after_activate(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    let held = submit(
        lane,
        &RunLaneSubmit {
            held: true,
            ..request(2)
        },
    )
    .expect("run 2, held");
    r.until(Seen::Prepare(held));
    let status = state(lane, held).expect("pending");
    assert_eq!(
        (status.state, status.held),
        (RunLaneRunState::Prepared, true)
    );
    assert_eq!(
        state(lane, first).map(|s| s.state),
        Ok(RunLaneRunState::Launched),
        "prepared while the first runs"
    );
    let first_outcome = wait(lane, first);
    assert!(
        !r.seen()
            .iter()
            .any(|s| matches!(s, Seen::Aicore { run, .. } if *run == held)),
        "a held run never launches: {:?}",
        r.seen()
    );
    activate(lane, &r, held);
    let held_outcome = wait(lane, held);
    assert_eq!(first_outcome.verdict, RunLaneVerdict::Ok);
    assert_eq!(held_outcome.verdict, RunLaneVerdict::Ok);
    assert!(r.at(Seen::Activated(held)) < r.at(Seen::Launched(held)));
    assert_eq!(run_lane_activate(lane, held), RunLaneStatus::UnknownItem);
    no_wrong_user(&r);
    common::destroy(lane);
}
common::on_each_backend!(
    a_held_run_is_prepared_while_the_first_runs_and_launched_only_after_activate
);

fn an_earlier_key_submitted_later_runs_before_a_staged_successor(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 3);
    let keyed = |run, key| RunLaneSubmit {
        has_key: true,
        key,
        ..request(run)
    };
    let first = submit(lane, &keyed(1, 10)).expect("run 1");
    let staged = submit(
        lane,
        &RunLaneSubmit {
            held: true,
            ..keyed(2, 30)
        },
    )
    .expect("run 2, staged");
    r.until(Seen::Prepare(staged));
    let earlier = submit(lane, &keyed(3, 20)).expect("run 3, an earlier key");
    r.until(Seen::Launched(earlier));
    activate(lane, &r, staged);
    let mut order = Vec::new();
    let start = Instant::now();
    while order.len() < 3 {
        assert!(start.elapsed() < BOUND, "only {order:?}");
        let mut outcome = run_lane::sized::init::<RunLaneOutcome>();
        // SAFETY: a live handle and a writable outcome.
        match unsafe { run_lane_poll(lane, outcome.as_mut_ptr()) } {
            RunLaneStatus::Ok => {
                // SAFETY: filled by the OK poll.
                let outcome = unsafe { outcome.assume_init() };
                assert_eq!(
                    outcome.verdict,
                    RunLaneVerdict::Ok,
                    "{}",
                    common::line(&outcome)
                );
                order.push((outcome.id, outcome.key));
            }
            RunLaneStatus::Empty => thread::sleep(Duration::from_millis(1)),
            other => panic!("poll: {other:?}"),
        }
    }
    assert_eq!(
        order,
        [(first, 10), (earlier, 20), (staged, 30)],
        "outcomes in key order (L-2 by key)"
    );
    let launches: Vec<u64> = r
        .seen()
        .iter()
        .filter_map(|s| match s {
            Seen::Launched(run) => Some(*run),
            _ => None,
        })
        .collect();
    assert_eq!(launches, [first, earlier, staged]);
    no_wrong_user(&r);
    common::destroy(lane);
}
common::on_each_backend!(an_earlier_key_submitted_later_runs_before_a_staged_successor);

fn cancel_finalises_a_prepared_run_cancelled_and_a_launched_run_is_started(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    let held = submit(
        lane,
        &RunLaneSubmit {
            held: true,
            ..request(2)
        },
    )
    .expect("run 2, held");
    r.until(Seen::Prepare(held));
    assert_eq!(run_lane_cancel(lane, held), RunLaneStatus::Ok);
    assert_eq!(
        run_lane_cancel(lane, held),
        RunLaneStatus::Ok,
        "again: nothing"
    );
    assert_eq!(run_lane_cancel(lane, first), RunLaneStatus::Started);
    let first_outcome = wait(lane, first);
    let cancelled = wait(lane, held);
    assert_eq!(first_outcome.verdict, RunLaneVerdict::Ok);
    assert_eq!(cancelled.verdict, RunLaneVerdict::Cancelled);
    assert_eq!(cancelled.run_user, marker(held));
    assert!(r.seen().contains(&Seen::FinaliseBegins {
        run: held,
        verdict: RunLaneVerdict::Cancelled,
        class: RunLaneClass::None,
        code: None,
        copy_back: false,
    }));
    assert!(!r.seen().contains(&Seen::Launched(held)));
    assert_eq!(
        run_lane_cancel(lane, held),
        RunLaneStatus::UnknownItem,
        "taken"
    );
    no_wrong_user(&r);
    common::destroy(lane);
}
common::on_each_backend!(cancel_finalises_a_prepared_run_cancelled_and_a_launched_run_is_started);

fn a_declined_queued_launch_launches_after_its_predecessor_retired_and_the_outcome_counts_it(
    via: Via,
) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    r.decline.lock().unwrap().push(2);
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    r.until(Seen::Launched(first));
    let second = submit(lane, &request(2)).expect("run 2");
    let first_outcome = wait(lane, first);
    let second_outcome = wait(lane, second);
    assert_eq!(first_outcome.verdict, RunLaneVerdict::Ok);
    assert_eq!(
        second_outcome.verdict,
        RunLaneVerdict::Ok,
        "{}",
        common::line(&second_outcome)
    );
    assert_eq!((first_outcome.declines, second_outcome.declines), (0, 1));
    let aicore: Vec<Seen> = r
        .seen()
        .into_iter()
        .filter(|s| matches!(s, Seen::Aicore { run, .. } if *run == second))
        .collect();
    assert_eq!(
        aicore,
        [
            Seen::Aicore {
                run: second,
                queued: true,
                declined: true
            },
            Seen::Aicore {
                run: second,
                queued: false,
                declined: false
            }
        ],
        "declined behind run 1, launched again alone"
    );
    assert!(
        second_outcome.device_start_ns >= first_outcome.device_end_ns,
        "after run 1 retired"
    );
    // on_launched: once per launched run, never for the declined attempt.
    let launched: Vec<Seen> = r
        .seen()
        .into_iter()
        .filter(|s| matches!(s, Seen::Launched(_)))
        .collect();
    assert_eq!(launched, [Seen::Launched(first), Seen::Launched(second)]);
    no_wrong_user(&r);
    common::destroy(lane);
}
common::on_each_backend!(
    a_declined_queued_launch_launches_after_its_predecessor_retired_and_the_outcome_counts_it
);

fn the_user_pointer_reaches_every_callback_and_the_outcome_and_on_launched_comes_once_per_launched_run(
    via: Via,
) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let mut outcomes = Vec::new();
    for run in 1..=6 {
        let id = loop {
            match submit(lane, &request(run)) {
                Ok(id) => break id,
                Err(RunLaneStatus::Full) => {
                    let oldest = outcomes.len() as u64 + 1;
                    outcomes.push(wait(lane, oldest));
                }
                Err(other) => panic!("submit: {other:?}"),
            }
        };
        assert_eq!(id, run);
    }
    while outcomes.len() < 6 {
        let next = outcomes.len() as u64 + 1;
        outcomes.push(wait(lane, next));
    }
    for outcome in &outcomes {
        assert_eq!(outcome.verdict, RunLaneVerdict::Ok);
        assert_eq!(outcome.run_user, marker(outcome.id), "the outcome's user");
    }
    r.until(Seen::Outcome(6));
    no_wrong_user(&r);
    for run in 1..=6 {
        let launched = r
            .seen()
            .iter()
            .filter(|s| **s == Seen::Launched(run))
            .count();
        assert_eq!(launched, 1, "on_launched of run {run}");
    }
    common::destroy(lane);
}
common::on_each_backend!(
    the_user_pointer_reaches_every_callback_and_the_outcome_and_on_launched_comes_once_per_launched_run
);

fn a_runtime_epoch_reaches_the_launch_and_zero_or_a_repeat_is_refused(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let epoch = |run, epoch| RunLaneSubmit {
        has_epoch: true,
        epoch,
        ..request(run)
    };
    assert_eq!(submit(lane, &epoch(1, 0)), Err(RunLaneStatus::Refused));
    assert!(
        common::last_error().contains("epoch 0"),
        "{}",
        common::last_error()
    );
    let run = submit(lane, &epoch(1, 700)).expect("a fresh epoch");
    assert_eq!(
        submit(lane, &epoch(2, 700)),
        Err(RunLaneStatus::Refused),
        "a repeat"
    );
    assert_eq!(
        submit(lane, &epoch(2, 699)),
        Err(RunLaneStatus::Refused),
        "an older one"
    );
    assert_eq!(
        submit(lane, &request(2)),
        Err(RunLaneStatus::Refused),
        "a lane's runs carry epochs or none"
    );
    let outcome = wait(lane, run);
    // The record the fake's AICPU kernel published is stamped with the runtime's epoch.
    assert_eq!(
        outcome.verdict,
        RunLaneVerdict::Ok,
        "{}",
        common::line(&outcome)
    );
    assert_eq!(*r.epochs.lock().unwrap(), [(run, 700)]);
    common::destroy(lane);
}
common::on_each_backend!(a_runtime_epoch_reaches_the_launch_and_zero_or_a_repeat_is_refused);

fn finalise_is_told_the_verdict_its_class_and_its_code(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let r = Runner::new(Kernels {
        kernel: KERNEL,
        faults: &[(2, ENGINE_AICPU, Outcome::Latch)],
    });
    let lane = lane(via, &r, 0);
    let ok = submit(lane, &request(1)).expect("run 1");
    assert_eq!(wait(lane, ok).verdict, RunLaneVerdict::Ok);
    let latched = submit(lane, &request(2)).expect("run 2");
    let outcome = wait(lane, latched);
    assert_eq!(outcome.verdict, RunLaneVerdict::Failed);
    let told: Vec<Seen> = r
        .seen()
        .into_iter()
        .filter(|s| matches!(s, Seen::FinaliseBegins { .. }))
        .collect();
    assert_eq!(
        told,
        [
            Seen::FinaliseBegins {
                run: ok,
                verdict: RunLaneVerdict::Ok,
                class: RunLaneClass::None,
                code: None,
                copy_back: true,
            },
            Seen::FinaliseBegins {
                run: latched,
                verdict: RunLaneVerdict::Failed,
                class: RunLaneClass::RunOnly,
                // SCOPE_DEADLOCK, from the run's record.
                code: Some(1),
                copy_back: false,
            },
        ]
    );
    common::destroy(lane);
}
common::on_each_backend!(finalise_is_told_the_verdict_its_class_and_its_code);

fn with_finalise_before_launch_finalise_n_returns_before_launch_n_plus_1_begins(via: Via) {
    let _serial = common::serial();
    let _fake = control().session().expect("reset the fake");
    let mut r = Runner::new(Kernels::healthy(KERNEL));
    r.finalise_takes = Duration::from_millis(20);
    let mut config = common::fake_config(via, 0, &r.kernels, 5_000);
    config.runner.user = std::ptr::from_ref(&r).cast_mut().cast();
    config.runner.prepare = Some(prepare);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.runner.on_launched = Some(on_launched);
    config.runner.finalise_verdict = Some(finalise_verdict);
    config.finalise_before_launch = true;
    let lane = common::create(&config);
    let runs: Vec<u64> = (1..=2)
        .map(|run| submit(lane, &request(run)).expect("room"))
        .collect();
    for &run in &runs {
        assert_eq!(wait(lane, run).verdict, RunLaneVerdict::Ok);
    }
    let ends = r.at(Seen::FinaliseEnds(1));
    let begins = r.at(Seen::Aicore {
        run: 2,
        queued: false,
        declined: false,
    });
    assert!(
        ends < begins,
        "finalise(1) returned before launch(2) began: {:?}",
        r.seen()
    );
    // And it was prepared while run 1 ran.
    assert!(
        r.at(Seen::Prepare(2))
            < r.at(Seen::FinaliseBegins {
                run: 1,
                verdict: RunLaneVerdict::Ok,
                class: RunLaneClass::None,
                code: None,
                copy_back: true,
            })
    );
    common::destroy(lane);
    // A launch depth above one with it is refused.
    config.launch_depth = 2;
    let mut refused = std::ptr::null_mut();
    // SAFETY: a valid config and a writable handle.
    let status = unsafe { run_lane_create(&raw const config, &raw mut refused) };
    assert_eq!(
        status,
        RunLaneStatus::InvalidConfig,
        "{}",
        common::last_error()
    );
}
common::on_each_backend!(
    with_finalise_before_launch_finalise_n_returns_before_launch_n_plus_1_begins
);
