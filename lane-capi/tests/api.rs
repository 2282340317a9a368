//! The C functions called from Rust as C would call them: statuses, bad arguments and
//! handles, the threading contract, and the outcome fields on the simulator backend.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use common::{create, destroy, last_error, text, try_wait as wait};
use core::ffi::c_void;
use run_lane::*;

/// The test runner's state, reached through `user`.
#[derive(Default)]
struct State {
    /// Every callback's thread.
    threads: Mutex<Vec<ThreadId>>,
    /// How long `prepare` sleeps (ms), to keep the lane thread busy.
    prepare_sleep_ms: AtomicU64,
    /// What `prepare` returns for the run tagged 1 (0 = success).
    prepare_tag1: AtomicU32,
    /// How often `prepare` refuses with INCOMPATIBLE before accepting (tag 2).
    incompatible_left: AtomicU32,
    /// What `finalise` returns for the run tagged 3.
    finalise_tag3: AtomicU32,
    /// The handle, for calls from inside a callback.
    lane: AtomicU64,
    /// What `run_lane_destroy` returned from inside a callback.
    destroy_from_callback: AtomicU32,
    /// The handle `prepare` of the run tagged 50 submits the run tagged 51 on.
    submit_lane: AtomicU64,
    /// The id that submit returned, or u64::MAX on a refusal.
    submitted_from_callback: AtomicU64,
    /// The copy-back flags `finalise` saw, by tag.
    copy_back: Mutex<Vec<(u64, bool)>>,
    /// The ids `on_outcome` saw, with its thread.
    seen: Mutex<Vec<(u64, ThreadId)>>,
}

fn state<'a>(user: *mut c_void) -> &'a State {
    // SAFETY: every test passes a `State` that outlives its lane.
    unsafe { &*user.cast::<State>() }
}

unsafe extern "C" fn prepare(user: *mut c_void, run: *const RunLaneRunInfo) -> i32 {
    let state = state(user);
    // SAFETY: the library passes a valid run for the call.
    let run = unsafe { *run };
    state.threads.lock().unwrap().push(thread::current().id());
    let sleep_ms = state.prepare_sleep_ms.load(Ordering::SeqCst);
    thread::sleep(Duration::from_millis(sleep_ms));
    let lane = state.lane.load(Ordering::SeqCst);
    if lane != 0 {
        // SAFETY: any handle value is checked.
        let status = unsafe { run_lane_destroy(std::ptr::without_provenance_mut(lane as usize)) };
        let status = status as u32;
        state.destroy_from_callback.store(status, Ordering::SeqCst);
    }
    let submit_lane = state.submit_lane.load(Ordering::SeqCst);
    if run.tag == 50 && submit_lane != 0 {
        let lane = std::ptr::without_provenance_mut(submit_lane as usize);
        let id = submit(lane, 51, false).unwrap_or(u64::MAX);
        state.submitted_from_callback.store(id, Ordering::SeqCst);
    }
    match run.tag {
        1 => state.prepare_tag1.load(Ordering::SeqCst) as i32,
        2 if state.incompatible_left.load(Ordering::SeqCst) > 0 => {
            state.incompatible_left.fetch_sub(1, Ordering::SeqCst);
            RUN_LANE_PREPARE_INCOMPATIBLE
        }
        _ => 0,
    }
}

unsafe extern "C" fn finalise(
    user: *mut c_void,
    run: *const RunLaneRunInfo,
    copy_back: bool,
) -> i32 {
    let state = state(user);
    // SAFETY: the library passes a valid run for the call.
    let run = unsafe { *run };
    state.threads.lock().unwrap().push(thread::current().id());
    state.copy_back.lock().unwrap().push((run.tag, copy_back));
    let returns = state.finalise_tag3.load(Ordering::SeqCst) as i32;
    if run.tag == 3 { returns } else { 0 }
}

unsafe extern "C" fn on_outcome(user: *mut c_void, outcome: *const RunLaneOutcome) {
    // SAFETY: the library passes a valid outcome for the call.
    let seen = (unsafe { (*outcome).id }, thread::current().id());
    state(user).seen.lock().unwrap().push(seen);
}

fn sim_config(state: &State) -> RunLaneConfig {
    let mut config = common::sim_config();
    config.check_invariants = true;
    config.runner.user = std::ptr::from_ref(state).cast_mut().cast();
    config.runner.prepare = Some(prepare);
    config.runner.finalise = Some(finalise);
    config.runner.on_outcome = Some(on_outcome);
    config
}

fn submit(lane: *mut RunLane, tag: u64, copy_back: bool) -> Result<u64, RunLaneStatus> {
    let request = RunLaneSubmit {
        has_tag: true,
        tag,
        diagnostics: false,
        copy_back,
        ..RunLaneSubmit::default()
    };
    common::submit_request(lane, &request)
}

/// Waits for run `id`, which must end `OK`.
fn ok(lane: *mut RunLane, id: u64) {
    assert_eq!(wait(lane, id, 10_000).unwrap().verdict, RunLaneVerdict::Ok, "run {id}");
}

/// `run_lane_publish` of `code`, which must be accepted: the publication's id.
fn publish(lane: *mut RunLane, code: u64) -> u64 {
    let mut publication = 0;
    // SAFETY: a live handle and a valid out pointer.
    let status = unsafe { run_lane_publish(lane, code, &raw mut publication) };
    assert_eq!(status, RunLaneStatus::Ok);
    publication
}

#[test]
fn the_abi_version_is_the_headers() {
    assert_eq!(run_lane_abi_version(), RUN_LANE_ABI_VERSION);
}

#[test]
fn poll_and_submit_return_at_once_while_a_callback_holds_the_lane_thread() {
    let state = State::default();
    state.prepare_sleep_ms.store(400, Ordering::SeqCst);
    let lane = create(&sim_config(&state));
    let first = submit(lane, 10, false).unwrap();
    thread::sleep(Duration::from_millis(50)); // the lane thread is now in `prepare`
    let start = Instant::now();
    assert_eq!(common::poll(lane).err(), Some(RunLaneStatus::Empty));
    let second = submit(lane, 11, false).unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert_eq!(wait(lane, first, 10).unwrap_err(), RunLaneStatus::TimedOut);
    ok(lane, first);
    ok(lane, second);
    // Every callback ran on the lane's own threads (the lane thread, or the completion
    // waiter once it has a run's verdict), never on this one.
    let mut threads = state.threads.lock().unwrap().clone();
    assert!(threads.iter().all(|t| *t != thread::current().id()));
    threads.sort_by_key(|t| format!("{t:?}"));
    threads.dedup();
    assert!(threads.len() <= 2, "{threads:?}");
    destroy(lane);
}

#[test]
fn callback_failures_become_classified_outcomes_and_copy_back_follows_the_request() {
    let state = State::default();
    state.prepare_tag1.store(107_000, Ordering::SeqCst);
    state.incompatible_left.store(1, Ordering::SeqCst);
    state.finalise_tag3.store(RUN_LANE_FINALISE_VALIDATION_FAILED as u32, Ordering::SeqCst);
    let lane = create(&sim_config(&state));
    let mut outcomes = Vec::new();
    for (tag, copy_back) in [(1, true), (2, true), (3, true), (4, false)] {
        let run = submit(lane, tag, copy_back).unwrap();
        outcomes.push(wait(lane, run, 10_000).unwrap());
    }
    let failed = &outcomes[0];
    assert_eq!(failed.verdict, RunLaneVerdict::Failed);
    assert_eq!(failed.failure_class, RunLaneClass::RunOnly);
    assert_eq!(failed.stage, RunLaneStage::Prepare);
    assert_eq!((failed.has_code, failed.code), (true, 107_000));
    assert_eq!(text(&failed.code_name), "ACL_ERROR_RT_PARAM_INVALID");
    assert!(text(&failed.failure_line).starts_with(&format!("run {} failed", failed.id)));
    assert!(!text(&failed.hint).is_empty());
    // An incompatible prepare is retried, not failed.
    assert_eq!(outcomes[1].verdict, RunLaneVerdict::Ok);
    let invalid = &outcomes[2];
    assert_eq!(invalid.verdict, RunLaneVerdict::Failed);
    assert_eq!(text(&invalid.code_name), "COPY_BACK_VALIDATION");
    assert!(!invalid.has_code);
    assert_eq!(outcomes[3].verdict, RunLaneVerdict::Ok);
    assert!(outcomes[3].has_timing && outcomes[3].device_end_ns > outcomes[3].device_start_ns);
    // Copy-back: only for a run that succeeded on the device and asked for it.
    let copy_back = state.copy_back.lock().unwrap().clone();
    assert_eq!(copy_back, [(1, false), (2, true), (3, true), (4, false)]);
    destroy(lane);
}

#[test]
fn a_publication_and_close_report_through_the_structs() {
    let state = State::default();
    let lane = create(&sim_config(&state));
    let publication = publish(lane, 9);
    let outcome = wait(lane, publication, 10_000).unwrap();
    assert_eq!((outcome.item, outcome.verdict), (RunLaneItem::Publication, RunLaneVerdict::Ok));
    let report = common::close(lane);
    assert!(!report.poisoned && !report.device_lost);
    assert_eq!(submit(lane, 1, false), Err(RunLaneStatus::Closed));
    assert!(last_error().contains("closed"), "{}", last_error());
    let again = wait(lane, publication, 0).unwrap_err();
    assert_eq!(again, RunLaneStatus::AlreadyTaken);
    assert_eq!(wait(lane, 77, 0).unwrap_err(), RunLaneStatus::UnknownItem);
    destroy(lane);
}

#[test]
fn a_full_lane_refuses_with_full_until_a_run_has_its_outcome() {
    let state = State::default();
    // Long enough that the first run is still preparing when the third is submitted.
    state.prepare_sleep_ms.store(300, Ordering::SeqCst);
    let lane = create(&sim_config(&state));
    let first = submit(lane, 1, false).unwrap();
    submit(lane, 2, false).unwrap();
    assert_eq!(submit(lane, 3, false), Err(RunLaneStatus::Full));
    wait(lane, first, 10_000).unwrap();
    submit(lane, 3, false).unwrap();
    destroy(lane);
}

#[test]
fn a5_and_probed_lanes_run_on_the_simulator() {
    for profile in [RunLaneProfile::A5, RunLaneProfile::Probe] {
        let state = State::default();
        let mut config = sim_config(&state);
        config.profile = profile as u32;
        let lane = create(&config);
        let runs = [11, 12].map(|tag| submit(lane, tag, true).unwrap());
        runs.into_iter().for_each(|run| ok(lane, run));
        destroy(lane);
    }
}

#[test]
fn a_callback_may_submit_on_its_own_lane() {
    let state = State::default();
    let lane = create(&sim_config(&state));
    state.submit_lane.store(lane.addr() as u64, Ordering::SeqCst);
    let first = submit(lane, 50, false).unwrap();
    ok(lane, first);
    let second = state.submitted_from_callback.load(Ordering::SeqCst);
    assert_eq!(second, first + 1);
    let outcome = wait(lane, second, 10_000).unwrap();
    assert_eq!((outcome.verdict, outcome.tag), (RunLaneVerdict::Ok, 51));
    destroy(lane);
}

#[test]
fn the_outcome_callback_sees_every_outcome_in_order_on_the_lanes_own_threads() {
    let state = State::default();
    let lane = create(&sim_config(&state));
    let ids = [submit(lane, 1, false).unwrap(), publish(lane, 5), submit(lane, 2, false).unwrap()];
    for id in &ids {
        // Seeing an outcome does not take it.
        wait(lane, *id, 10_000).unwrap();
    }
    destroy(lane); // joins the lane's threads: every callback has returned
    let seen = state.seen.lock().unwrap().clone();
    assert_eq!(seen.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids);
    // On whichever of the lane's own threads delivered it (ABI 8: the thread running the
    // steps; the completion waiter delivers most), never on this one: no submitter is bound.
    let here = thread::current().id();
    assert!(seen.iter().all(|(_, thread)| *thread != here));
}

#[test]
fn every_call_that_succeeds_clears_the_threads_last_error() {
    // A failure leaves a message; the next call that returns OK (or EMPTY) clears it.
    let fail = || {
        let refused = submit(std::ptr::null_mut(), 1, false);
        assert_eq!(refused, Err(RunLaneStatus::InvalidHandle));
        assert!(last_error().contains("handle"), "{}", last_error());
    };
    let state = State::default();
    let config = sim_config(&state);
    fail();
    common::default_config();
    assert_eq!(last_error(), "", "run_lane_config_default");
    fail();
    let lane = create(&config);
    assert_eq!(last_error(), "", "run_lane_create");
    fail();
    let run = submit(lane, 1, false).unwrap();
    assert_eq!(last_error(), "", "run_lane_submit");
    fail();
    let publication = publish(lane, 3);
    assert_eq!(last_error(), "", "run_lane_publish");
    fail();
    wait(lane, run, 10_000).unwrap();
    assert_eq!(last_error(), "", "run_lane_wait");
    wait(lane, publication, 10_000).unwrap();
    fail();
    assert_eq!(common::poll(lane).err(), Some(RunLaneStatus::Empty));
    assert_eq!(last_error(), "", "run_lane_poll returning EMPTY");
    fail();
    // SAFETY: the report is optional.
    let closed = unsafe { run_lane_close(lane, std::ptr::null_mut()) };
    assert_eq!(closed, RunLaneStatus::Ok);
    assert_eq!(last_error(), "", "run_lane_close");
    fail();
    destroy(lane);
    assert_eq!(last_error(), "", "run_lane_destroy");
    // The two functions that return no status leave the message alone.
    fail();
    let _ = run_lane_abi_version();
    assert!(last_error().contains("handle"), "{}", last_error());
}

/// The events of [`destroy_joins_the_lane_while_another_threads_wait_on_it_is_in_flight`], in
/// order.
static EVENTS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

unsafe extern "C" fn slow_prepare(user: *mut c_void, _run: *const RunLaneRunInfo) -> i32 {
    EVENTS.lock().unwrap().push("prepare begins");
    // SAFETY: the test passes a `Sender` that outlives the lane.
    let started = unsafe { &*user.cast::<std::sync::mpsc::Sender<()>>() };
    let _ = started.send(());
    // The runtime's work: long enough that the destroy below begins while it runs.
    thread::sleep(Duration::from_millis(200));
    EVENTS.lock().unwrap().push("prepare ends");
    0
}

unsafe extern "C" fn logged_finalise(_: *mut c_void, _: *const RunLaneRunInfo, _: bool) -> i32 {
    EVENTS.lock().unwrap().push("finalise");
    0
}

#[test]
fn destroy_joins_the_lane_while_another_threads_wait_on_it_is_in_flight() {
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let mut config = sim_config(&State::default());
    config.runner.user = std::ptr::from_ref(&started_tx).cast_mut().cast();
    config.runner.prepare = Some(slow_prepare);
    config.runner.finalise = Some(logged_finalise);
    config.runner.on_outcome = None;
    let lane = create(&config);
    let run = submit(lane, 1, false).unwrap();
    let (waiting_tx, waiting_rx) = std::sync::mpsc::channel::<()>();
    let handle = lane.addr();
    let waiter = thread::spawn(move || {
        let lane: *mut RunLane = std::ptr::without_provenance_mut(handle);
        waiting_tx.send(()).unwrap();
        // In flight across the destroy: its outcome (the close cancels the run) or LOST.
        wait(lane, run, 30_000).map(|o| o.verdict)
    });
    started_rx.recv().unwrap();
    waiting_rx.recv().unwrap();
    destroy(lane);
    EVENTS.lock().unwrap().push("destroy returned");
    let waited = waiter.join().unwrap();
    assert!(
        matches!(
            waited,
            Ok(RunLaneVerdict::Cancelled) | Err(RunLaneStatus::Lost | RunLaneStatus::InvalidHandle)
        ),
        "{waited:?}"
    );
    let events = EVENTS.lock().unwrap().clone();
    assert_eq!(
        events,
        ["prepare begins", "prepare ends", "finalise", "destroy returned"],
        "destroy returned only after every callback, and none ran after it"
    );
}

/// Submits `runs` runs one after another to an idle lane (each waited for, then a pause,
/// before the next) and returns how many of their prepares ran on the submitting thread.
fn prepares_on_the_submitting_thread(submitters_bound: bool, runs: u64) -> usize {
    let state = State::default();
    let mut config = sim_config(&state);
    config.submitters_bound = submitters_bound;
    let lane = create(&config);
    // A prepare on a submitting thread is a callback of this lane: a destroy from it is
    // refused like one from the lane's own threads.
    state.lane.store(lane as usize as u64, Ordering::SeqCst);
    for tag in 0..runs {
        // The outcome is delivered before the thread that delivered it lets go of the lane's
        // steps: without the pause the next submit can find them still running there (a
        // preempted thread on a loaded machine) and hand them its command.
        thread::sleep(Duration::from_millis(5));
        ok(lane, submit(lane, 20 + tag, false).unwrap());
    }
    state.lane.store(0, Ordering::SeqCst);
    let refused = state.destroy_from_callback.load(Ordering::SeqCst);
    assert_eq!(refused, RunLaneStatus::WrongThread as u32, "a destroy from a prepare");
    destroy(lane);
    let me = thread::current().id();
    state.threads.lock().unwrap().iter().filter(|t| **t == me).count()
}

#[test]
fn with_submitters_bound_a_submit_to_an_idle_lane_prepares_on_the_submitting_thread() {
    // The lane thread looks at the notice ring every 50 ms and may run the steps a submit
    // posts at that moment; over ten submits to an idle lane at least one prepares here.
    assert!(prepares_on_the_submitting_thread(true, 10) >= 1);
}

#[test]
fn without_submitters_bound_no_callback_runs_on_the_submitting_thread() {
    assert_eq!(prepares_on_the_submitting_thread(false, 5), 0);
}
