//! Runner callbacks re-entering the library: every callback (prepare, launch_aicore,
//! launch_aicpu, on_launched, finalise, finalise_verdict, upload_code, on_outcome; prepare and
//! finalise also on a host worker) makes every call (submit, publish, poll, close, activate,
//! cancel, run_state, wait, destroy, destroy with a report, each on its own lane and on
//! another, and create), and each gets the status the header's table promises: the calls
//! that return at once are allowed, the ones that block are `WRONG_THREAD` with a message
//! that says where to call them from. Whatever the call, every accepted item still gets its
//! outcome, a refused destroy destroyed nothing, and both lanes are destroyed afterwards.
//! On the simulator, host workers included.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use common::{create, last_error};
use core::ffi::c_void;
use run_lane::*;

/// Where the call is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    Prepare,
    LaunchAicore,
    LaunchAicpu,
    Finalise,
    UploadCode,
    OnOutcome,
    OnLaunched,
    FinaliseVerdict,
}

/// The call a callback makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Submit,
    Publish,
    Poll,
    Close,
    Wait,
    Destroy,
    DestroyWithReport,
    Create,
    /// `run_lane_activate` of item 0 (no run has it): `UNKNOWN_ITEM`, at once.
    Activate,
    /// `run_lane_cancel` of item 0: `UNKNOWN_ITEM`, at once.
    Cancel,
    /// `run_lane_run_state` of item 0: `UNKNOWN_ITEM`, at once.
    RunState,
}

/// Which lane the call names (`Create` makes a new one: always `Other`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Own,
    Other,
}

/// The header's re-entrance table: the status a call from a callback returns. The answer is
/// the same for every callback and thread; only a poll's depends on what is delivered (from
/// `on_outcome` the own lane's outcome is, and the poll takes it).
const fn expected(site: Site, call: Call, target: Target) -> RunLaneStatus {
    match (call, target) {
        (Call::Submit | Call::Publish | Call::Close, _) => RunLaneStatus::Ok,
        (Call::Poll, Target::Own) if matches!(site, Site::OnOutcome) => RunLaneStatus::Ok,
        (Call::Poll, _) => RunLaneStatus::Empty,
        (Call::Activate | Call::Cancel | Call::RunState, _) => RunLaneStatus::UnknownItem,
        (Call::Wait | Call::Destroy | Call::DestroyWithReport | Call::Create, _) => {
            RunLaneStatus::WrongThread
        }
    }
}

/// One combination, reached by the callbacks through `user`.
struct Case {
    site: Site,
    call: Call,
    target: Target,
    own: AtomicU64,
    other: AtomicU64,
    /// The call was made (once: the first time its site runs).
    fired: AtomicBool,
    /// Set, and notified, once the call returned.
    done: (Mutex<bool>, Condvar),
    status: AtomicU32,
    message: Mutex<String>,
    /// The thread the call was made on.
    call_thread: Mutex<Option<(ThreadId, Option<String>)>>,
    /// The threads the launch callbacks ran on (the lane thread).
    lane_threads: Mutex<Vec<ThreadId>>,
    /// The id a submit or publish from the callback was given.
    accepted: AtomicU64,
    /// The id of the outcome a poll from the callback took.
    taken: AtomicU64,
    /// The lane a create from the callback made, if it did (a bug: destroyed by the test).
    created: AtomicU64,
}

fn case<'a>(user: *mut c_void) -> &'a Case {
    // SAFETY: every lane of this test gets a `Case` that outlives it.
    unsafe { &*user.cast::<Case>() }
}

fn handle(value: u64) -> *mut RunLane {
    std::ptr::without_provenance_mut(usize::try_from(value).expect("a handle fits"))
}

fn sim_config(user: *mut c_void, workers: bool) -> RunLaneConfig {
    let mut config = common::sim_config();
    config.runner = RunLaneRunner {
        user,
        prepare: Some(prepare),
        launch_aicore: Some(launch_aicore),
        launch_aicpu: Some(launch_aicpu),
        finalise: Some(finalise),
        upload_code: Some(upload_code),
        on_outcome: Some(on_outcome),
        concurrency: RunLaneConcurrency { off_lane_thread: workers, prepares_at_once: 1 },
        on_launched: Some(on_launched),
        ..config.runner
    };
    config.workers = if workers { 2 } else { 0 };
    config
}

/// Makes the case's call, the first time its site runs.
fn reenter(user: *mut c_void, site: Site) {
    if user.is_null() {
        return; // a lane made by a (wrongly accepted) create from a callback
    }
    let case = case(user);
    if case.site != site || case.fired.swap(true, Ordering::SeqCst) {
        return;
    }
    *case.call_thread.lock().unwrap() =
        Some((thread::current().id(), thread::current().name().map(str::to_owned)));
    let target = handle(match case.target {
        Target::Own => case.own.load(Ordering::SeqCst),
        Target::Other => case.other.load(Ordering::SeqCst),
    });
    let status = match case.call {
        Call::Submit => {
            let request = RunLaneSubmit {
                has_tag: true,
                tag: 99,
                diagnostics: false,
                copy_back: false,
                ..RunLaneSubmit::default()
            };
            let mut id = 0;
            // SAFETY: a readable request and a writable id.
            let status = unsafe { run_lane_submit(target, &raw const request, &raw mut id) };
            case.accepted.store(id, Ordering::SeqCst);
            status
        }
        Call::Publish => {
            let mut id = 0;
            // SAFETY: a writable id.
            let status = unsafe { run_lane_publish(target, 5, &raw mut id) };
            case.accepted.store(id, Ordering::SeqCst);
            status
        }
        Call::Poll => common::poll(target).map_or_else(
            |status| status,
            |outcome| {
                case.taken.store(outcome.id, Ordering::SeqCst);
                RunLaneStatus::Ok
            },
        ),
        // SAFETY: the report is optional.
        Call::Close => unsafe { run_lane_close(target, std::ptr::null_mut()) },
        Call::Wait => {
            common::try_wait(target, 1, 0).map_or_else(|status| status, |_| RunLaneStatus::Ok)
        }
        // SAFETY: any handle value is checked.
        Call::Destroy => unsafe { run_lane_destroy(target) },
        Call::DestroyWithReport => {
            let mut report = run_lane::sized::init::<RunLaneCloseReport>();
            // SAFETY: any handle value is checked; a writable report.
            unsafe { run_lane_destroy_with_report(target, report.as_mut_ptr()) }
        }
        Call::Activate => run_lane_activate(target, 0),
        Call::Cancel => run_lane_cancel(target, 0),
        Call::RunState => {
            let mut status = run_lane::sized::init::<RunLaneRunStatus>();
            // SAFETY: a writable status.
            unsafe { run_lane_run_state(target, 0, status.as_mut_ptr()) }
        }
        Call::Create => {
            let config = sim_config(std::ptr::null_mut(), false);
            let mut lane = std::ptr::null_mut();
            // SAFETY: a valid config and a writable handle.
            let status = unsafe { run_lane_create(&raw const config, &raw mut lane) };
            case.created.store(lane.addr() as u64, Ordering::SeqCst);
            status
        }
    };
    case.status.store(status as u32, Ordering::SeqCst);
    *case.message.lock().unwrap() = last_error();
    let (done, returned) = &case.done;
    *done.lock().unwrap() = true;
    returned.notify_all();
}

/// Blocks until the case's call returned (bounded: a call that never returns fails the test).
fn until_done(case: &Case, what: &str) {
    let (done, returned) = &case.done;
    let (done, timeout) = returned
        .wait_timeout_while(done.lock().unwrap(), Duration::from_secs(30), |done| !*done)
        .unwrap();
    assert!(*done && !timeout.timed_out(), "{what}: the call did not return");
}

unsafe extern "C" fn prepare(user: *mut c_void, _run: *const RunLaneRunInfo) -> i32 {
    reenter(user, Site::Prepare);
    0
}

fn note_lane_thread(user: *mut c_void) {
    if !user.is_null() {
        case(user).lane_threads.lock().unwrap().push(thread::current().id());
    }
}

unsafe extern "C" fn launch_aicore(
    user: *mut c_void,
    _stream: *mut c_void,
    _args: *const RunLaneRunArgs,
) -> i32 {
    note_lane_thread(user);
    reenter(user, Site::LaunchAicore);
    0
}

unsafe extern "C" fn launch_aicpu(
    user: *mut c_void,
    _stream: *mut c_void,
    _args: *const RunLaneRunArgs,
) -> i32 {
    note_lane_thread(user);
    reenter(user, Site::LaunchAicpu);
    0
}

unsafe extern "C" fn finalise(
    user: *mut c_void,
    _run: *const RunLaneRunInfo,
    _copy_back: bool,
) -> i32 {
    reenter(user, Site::Finalise);
    0
}

unsafe extern "C" fn on_launched(user: *mut c_void, _run: *const RunLaneRunInfo) {
    note_lane_thread(user);
    reenter(user, Site::OnLaunched);
}

unsafe extern "C" fn finalise_verdict(
    user: *mut c_void,
    _run: *const RunLaneRunInfo,
    _verdict: *const RunLaneFinaliseVerdict,
) -> i32 {
    reenter(user, Site::FinaliseVerdict);
    0
}

unsafe extern "C" fn upload_code(user: *mut c_void, _code: u64) -> i32 {
    note_lane_thread(user);
    reenter(user, Site::UploadCode);
    0
}

unsafe extern "C" fn on_outcome(user: *mut c_void, _outcome: *const RunLaneOutcome) {
    note_lane_thread(user);
    reenter(user, Site::OnOutcome);
}

/// Waits for item `id` of `lane`: its outcome's id, or the wait's status.
fn wait(lane: *mut RunLane, id: u64) -> Result<u64, RunLaneStatus> {
    common::try_wait(lane, id, 30_000).map(|outcome| outcome.id)
}

/// Runs one combination and checks it.
fn check(site: Site, on_worker: bool, call: Call, target: Target) {
    let what = format!("{call:?} on the {target:?} lane from {site:?} (worker: {on_worker})");
    let case = Case {
        site,
        call,
        target,
        own: AtomicU64::new(0),
        other: AtomicU64::new(0),
        fired: AtomicBool::new(false),
        done: (Mutex::new(false), Condvar::new()),
        status: AtomicU32::new(u32::MAX),
        message: Mutex::new(String::new()),
        call_thread: Mutex::new(None),
        lane_threads: Mutex::new(Vec::new()),
        accepted: AtomicU64::new(0),
        taken: AtomicU64::new(0),
        created: AtomicU64::new(0),
    };
    let user = std::ptr::from_ref(&case).cast_mut().cast();
    // The other lane's callbacks make no call (their `user` is NULL).
    let other = create(&sim_config(std::ptr::null_mut(), false));
    let mut own_config = sim_config(user, on_worker);
    if site == Site::FinaliseVerdict {
        // Called instead of `finalise` where it is set.
        own_config.runner.finalise_verdict = Some(finalise_verdict);
    }
    let own = create(&own_config);
    case.own.store(own.addr() as u64, Ordering::SeqCst);
    case.other.store(other.addr() as u64, Ordering::SeqCst);

    // The item whose callbacks make the call: a publication for upload_code, else a run.
    let trigger = if site == Site::UploadCode {
        let mut id = 0;
        // SAFETY: a writable id.
        let published = unsafe { run_lane_publish(own, 1, &raw mut id) };
        assert_eq!(published, RunLaneStatus::Ok);
        id
    } else {
        let request = RunLaneSubmit {
            has_tag: true,
            tag: 7,
            diagnostics: false,
            copy_back: true,
            ..RunLaneSubmit::default()
        };
        common::submit_request(own, &request).expect("the trigger")
    };

    // The call returns first (from on_outcome: before this thread takes the outcome, so a
    // poll there finds it). Then every accepted item gets its outcome: the trigger (unless
    // the callback's poll took it), and what the callback submitted or published.
    until_done(&case, &what);
    assert!(case.fired.load(Ordering::SeqCst), "{what}: the call was made");
    let got = wait(own, trigger);
    let taken = case.taken.load(Ordering::SeqCst);
    if taken == trigger && target == Target::Own {
        assert_eq!(got, Err(RunLaneStatus::AlreadyTaken), "{what}");
    } else {
        assert_eq!(got, Ok(trigger), "{what}");
    }
    let status = case.status.load(Ordering::SeqCst);
    let want = expected(site, call, target);
    let message = case.message.lock().unwrap().clone();
    assert_eq!(status, want as u32, "{what}: {message}");
    let says = match (want, call, target) {
        (RunLaneStatus::WrongThread, Call::Create, _) => {
            let made = case.created.load(Ordering::SeqCst);
            assert_eq!(made, 0, "{what}: no lane made");
            "run_lane_create was called from a runner callback"
        }
        (RunLaneStatus::WrongThread, _, Target::Own) => "runner callback of this lane",
        (RunLaneStatus::WrongThread, _, Target::Other) => "runner callback of another lane",
        // Names the item.
        (RunLaneStatus::UnknownItem, _, _) => "0",
        _ => {
            assert_eq!(message, "", "{what}: a success leaves no message");
            ""
        }
    };
    assert!(message.contains(says), "{what}: {message}");
    let accepted = case.accepted.load(Ordering::SeqCst);
    if matches!(call, Call::Submit | Call::Publish) {
        let lane = if target == Target::Own { own } else { other };
        assert_eq!(wait(lane, accepted), Ok(accepted), "{what}: the callback's item");
    }
    if on_worker {
        let (_, name) = case.call_thread.lock().unwrap().clone().expect("recorded");
        // A host worker also runs the steps its answers start (launches among them), so
        // the worker is known by its name, not by never running a launch.
        let on_worker = name.as_deref().is_some_and(|n| n.starts_with("lane-worker-"));
        assert!(on_worker, "{what}: made on a host worker, not the lane thread: {name:?}");
    }
    // A refused destroy destroyed nothing: both handles are live until the test destroys them.
    for lane in [own, other] {
        // SAFETY: any handle value is checked.
        let destroyed = unsafe { run_lane_destroy(lane) };
        assert_eq!(destroyed, RunLaneStatus::Ok, "{what}: {}", last_error());
    }
    let created = case.created.load(Ordering::SeqCst);
    if created != 0 {
        // SAFETY: any handle value is checked.
        unsafe { run_lane_destroy(handle(created)) };
    }
}

#[test]
fn every_call_from_every_callback_gets_the_status_of_the_headers_table() {
    let sites = [
        (Site::Prepare, false),
        (Site::Prepare, true),
        (Site::LaunchAicore, false),
        (Site::LaunchAicpu, false),
        (Site::Finalise, false),
        (Site::Finalise, true),
        (Site::UploadCode, false),
        (Site::OnOutcome, false),
        (Site::OnLaunched, false),
        (Site::FinaliseVerdict, false),
        (Site::FinaliseVerdict, true),
    ];
    let on_both = [Call::Submit, Call::Publish, Call::Poll, Call::Close, Call::Wait]
        .into_iter()
        .chain([Call::Destroy, Call::DestroyWithReport, Call::Activate, Call::Cancel])
        .chain([Call::RunState]);
    let calls: Vec<(Call, Target)> = on_both
        .flat_map(|call| [(call, Target::Own), (call, Target::Other)])
        .chain([(Call::Create, Target::Other)])
        .collect();
    for (site, on_worker) in sites {
        for &(call, target) in &calls {
            check(site, on_worker, call, target);
        }
    }
}
