//! Issue 45's run controls and launch control through the C ABI, on the fake libascendcl and
//! through both backends (`on_each_backend!`): a held submit and `run_lane_activate`, an
//! ordering key, `run_lane_cancel`, `run_lane_run_state`, a declined queued launch
//! (`RUN_LANE_LAUNCH_DECLINED`), the per-submit `user`, the runtime's epoch, `on_launched`,
//! `finalise_verdict`, and `finalise_before_launch`.

mod common;

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use common::{BOUND, Kernels, Via, launch_kernel, submit_request as submit, wait};
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

    /// The log's entries that `keep` keeps.
    fn only(&self, keep: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        self.seen().into_iter().filter(keep).collect()
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
            assert!(start.elapsed() < BOUND, "{seen:?} never seen: {:?}", self.seen());
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

/// The runner and the run of a callback, noting a callback whose `user` is not its run's
/// submit's: tests submit each run `n` with [`marker`] of the id it will get (ids are given in
/// order, one lane per test).
fn called<'a>(user: *mut c_void, info: &RunLaneRunInfo) -> &'a Runner {
    let r = runner(user);
    if info.user != marker(info.run) {
        r.note(Seen::WrongUser(info.run));
    }
    r
}

unsafe extern "C" fn prepare(user: *mut c_void, info: *const RunLaneRunInfo) -> i32 {
    // SAFETY: valid for the call.
    let info = unsafe { &*info };
    called(user, info).note(Seen::Prepare(info.run));
    0
}

/// Both launches: the AICore one declines a queued run [`Runner::decline`] names, once.
fn launch(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    let r = called(user, &args.info);
    if engine == ENGINE_AICPU {
        return launch_kernel(&r.kernels, stream, engine, args, r.kernels.kernel);
    }
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
    r.note(Seen::Aicore { run, queued: args.queued, declined });
    if declined {
        return RUN_LANE_LAUNCH_DECLINED;
    }
    r.epochs.lock().unwrap().push((run, args.epoch));
    launch_kernel(&r.kernels, stream, ENGINE_AICORE, args, r.kernels.kernel)
}

common::launch_callbacks!(launch_aicore, launch_aicpu, launch);

unsafe extern "C" fn on_launched(user: *mut c_void, info: *const RunLaneRunInfo) {
    // SAFETY: valid for the call.
    let info = unsafe { &*info };
    called(user, info).note(Seen::Launched(info.run));
}

unsafe extern "C" fn finalise_verdict(
    user: *mut c_void,
    info: *const RunLaneRunInfo,
    verdict: *const RunLaneFinaliseVerdict,
) -> i32 {
    // SAFETY: both valid for the call.
    let (info, verdict) = unsafe { (&*info, &*verdict) };
    let r = called(user, info);
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

/// A lane's config on the fake with the recording runner.
fn config(via: Via, r: &Runner) -> RunLaneConfig {
    let mut config = common::fake_config(via, 0, &r.kernels, 5_000);
    config.runner.user = std::ptr::from_ref(r).cast_mut().cast();
    config.runner.prepare = Some(prepare);
    config.runner.launch_aicore = Some(launch_aicore);
    config.runner.launch_aicpu = Some(launch_aicpu);
    config.runner.on_launched = Some(on_launched);
    config.runner.finalise_verdict = Some(finalise_verdict);
    config.runner.on_outcome = Some(on_outcome);
    config
}

/// A lane of [`config`]; `slots` 0 keeps two.
fn lane(via: Via, r: &Runner, slots: u8) -> *mut RunLane {
    let mut config = config(via, r);
    config.slots = slots;
    common::create(&config)
}

/// The request of run `run` (its id, as the lane will give it), with the run's marker.
fn request(run: u64) -> RunLaneSubmit {
    RunLaneSubmit { copy_back: true, user: marker(run), ..RunLaneSubmit::default() }
}

/// `request`, held.
fn held(request: RunLaneSubmit) -> RunLaneSubmit {
    RunLaneSubmit { held: true, ..request }
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
    let _fake = common::fresh();
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    let held = submit(lane, &held(request(2))).expect("run 2, held");
    r.until(Seen::Prepare(held));
    let status = state(lane, held).expect("pending");
    assert_eq!((status.state, status.held), (RunLaneRunState::Prepared, true));
    let first_state = state(lane, first).map(|s| s.state);
    assert_eq!(first_state, Ok(RunLaneRunState::Launched), "prepared while the first runs");
    let first_outcome = wait(lane, first);
    let log = r.seen();
    let launched = log.iter().any(|s| matches!(s, Seen::Aicore { run, .. } if *run == held));
    assert!(!launched, "a held run never launches: {log:?}");
    activate(lane, &r, held);
    let held_outcome = wait(lane, held);
    assert_eq!(first_outcome.verdict, RunLaneVerdict::Ok);
    assert_eq!(held_outcome.verdict, RunLaneVerdict::Ok);
    assert!(r.at(Seen::Activated(held)) < r.at(Seen::Launched(held)));
    assert_eq!(run_lane_activate(lane, held), RunLaneStatus::UnknownItem);
    no_wrong_user(&r);
    common::destroy(lane);
}

fn an_earlier_key_submitted_later_runs_before_a_staged_successor(via: Via) {
    let _fake = common::fresh();
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 3);
    let keyed = |run, key| RunLaneSubmit { has_key: true, key, ..request(run) };
    let first = submit(lane, &keyed(1, 10)).expect("run 1");
    let staged = submit(lane, &held(keyed(2, 30))).expect("run 2, staged");
    r.until(Seen::Prepare(staged));
    let earlier = submit(lane, &keyed(3, 20)).expect("run 3, an earlier key");
    r.until(Seen::Launched(earlier));
    activate(lane, &r, staged);
    let mut order = Vec::new();
    common::wait_until("three outcomes polled", || {
        match common::poll(lane) {
            Ok(outcome) => {
                common::assert_ok("polled", &outcome);
                order.push((outcome.id, outcome.key));
            }
            Err(status) => assert_eq!(status, RunLaneStatus::Empty, "poll"),
        }
        order.len() == 3
    });
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

fn cancel_finalises_a_prepared_run_cancelled_and_a_launched_run_is_started(via: Via) {
    let _fake = common::fresh();
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    let held = submit(lane, &held(request(2))).expect("run 2, held");
    r.until(Seen::Prepare(held));
    assert_eq!(run_lane_cancel(lane, held), RunLaneStatus::Ok);
    assert_eq!(run_lane_cancel(lane, held), RunLaneStatus::Ok, "again: nothing");
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
    assert_eq!(run_lane_cancel(lane, held), RunLaneStatus::UnknownItem, "taken");
    no_wrong_user(&r);
    common::destroy(lane);
}

fn a_declined_queued_launch_launches_after_its_predecessor_retired_and_the_outcome_counts_it(
    via: Via,
) {
    let _fake = common::fresh();
    let r = Runner::new(Kernels::healthy(KERNEL));
    r.decline.lock().unwrap().push(2);
    let lane = lane(via, &r, 0);
    let first = submit(lane, &request(1)).expect("run 1");
    r.until(Seen::Launched(first));
    let second = submit(lane, &request(2)).expect("run 2");
    let first_outcome = wait(lane, first);
    let second_outcome = wait(lane, second);
    assert_eq!(first_outcome.verdict, RunLaneVerdict::Ok);
    common::assert_ok("the declined run", &second_outcome);
    assert_eq!((first_outcome.declines, second_outcome.declines), (0, 1));
    let aicore = r.only(|s| matches!(s, Seen::Aicore { run, .. } if *run == second));
    let (queued, alone) = (true, false);
    let attempts = [(queued, true), (alone, false)].map(|(queued, declined)| Seen::Aicore {
        run: second,
        queued,
        declined,
    });
    assert_eq!(aicore, attempts, "declined behind run 1, launched again alone");
    let after = second_outcome.device_start_ns >= first_outcome.device_end_ns;
    assert!(after, "after run 1 retired");
    // on_launched: once per launched run, never for the declined attempt.
    let launched = r.only(|s| matches!(s, Seen::Launched(_)));
    assert_eq!(launched, [Seen::Launched(first), Seen::Launched(second)]);
    no_wrong_user(&r);
    common::destroy(lane);
}

fn the_user_pointer_reaches_every_callback_and_the_outcome_and_on_launched_comes_once_per_launched_run(
    via: Via,
) {
    let _fake = common::fresh();
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
        let launched = r.only(|s| *s == Seen::Launched(run));
        assert_eq!(launched.len(), 1, "on_launched of run {run}");
    }
    common::destroy(lane);
}

fn a_runtime_epoch_reaches_the_launch_and_zero_or_a_repeat_is_refused(via: Via) {
    let _fake = common::fresh();
    let r = Runner::new(Kernels::healthy(KERNEL));
    let lane = lane(via, &r, 0);
    let epoch = |run, epoch| RunLaneSubmit { has_epoch: true, epoch, ..request(run) };
    assert_eq!(submit(lane, &epoch(1, 0)), Err(RunLaneStatus::Refused));
    let message = common::last_error();
    assert!(message.contains("epoch 0"), "{message}");
    let run = submit(lane, &epoch(1, 700)).expect("a fresh epoch");
    let refused = Err(RunLaneStatus::Refused);
    assert_eq!(submit(lane, &epoch(2, 700)), refused, "a repeat");
    assert_eq!(submit(lane, &epoch(2, 699)), refused, "an older one");
    assert_eq!(submit(lane, &request(2)), refused, "a lane's runs carry epochs or none");
    let outcome = wait(lane, run);
    // The record the fake's AICPU kernel published is stamped with the runtime's epoch.
    common::assert_ok("the run with an epoch", &outcome);
    assert_eq!(*r.epochs.lock().unwrap(), [(run, 700)]);
    common::destroy(lane);
}

fn finalise_is_told_the_verdict_its_class_and_its_code(via: Via) {
    let _fake = common::fresh();
    let r = Runner::new(Kernels::faulty(KERNEL, &[(2, ENGINE_AICPU, Outcome::Latch)]));
    let lane = lane(via, &r, 0);
    let ok = submit(lane, &request(1)).expect("run 1");
    assert_eq!(wait(lane, ok).verdict, RunLaneVerdict::Ok);
    let latched = submit(lane, &request(2)).expect("run 2");
    let outcome = wait(lane, latched);
    assert_eq!(outcome.verdict, RunLaneVerdict::Failed);
    let told = r.only(|s| matches!(s, Seen::FinaliseBegins { .. }));
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

fn with_finalise_before_launch_finalise_n_returns_before_launch_n_plus_1_begins(via: Via) {
    let _fake = common::fresh();
    let mut r = Runner::new(Kernels::healthy(KERNEL));
    r.finalise_takes = Duration::from_millis(20);
    let mut config = config(via, &r);
    config.runner.on_outcome = None;
    config.finalise_before_launch = true;
    let lane = common::create(&config);
    let runs: Vec<u64> = (1..=2).map(|run| submit(lane, &request(run)).expect("room")).collect();
    for &run in &runs {
        assert_eq!(wait(lane, run).verdict, RunLaneVerdict::Ok);
    }
    let ends = r.at(Seen::FinaliseEnds(1));
    let begins = r.at(Seen::Aicore { run: 2, queued: false, declined: false });
    let log = r.seen();
    assert!(ends < begins, "finalise(1) returned before launch(2) began: {log:?}");
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
    assert_eq!(status, RunLaneStatus::InvalidConfig, "{}", common::last_error());
}

common::on_each_backend!(
    a_held_run_is_prepared_while_the_first_runs_and_launched_only_after_activate,
    an_earlier_key_submitted_later_runs_before_a_staged_successor,
    cancel_finalises_a_prepared_run_cancelled_and_a_launched_run_is_started,
    a_declined_queued_launch_launches_after_its_predecessor_retired_and_the_outcome_counts_it,
    the_user_pointer_reaches_every_callback_and_the_outcome_and_on_launched_comes_once_per_launched_run,
    a_runtime_epoch_reaches_the_launch_and_zero_or_a_repeat_is_refused,
    finalise_is_told_the_verdict_its_class_and_its_code,
    with_finalise_before_launch_finalise_n_returns_before_launch_n_plus_1_begins,
);
