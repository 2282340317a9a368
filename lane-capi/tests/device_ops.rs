//! L-22 through the C ABI: a device the runtime supplies (`RUN_LANE_BACKEND_DEVICE_OPS`), its
//! `RunLaneDeviceOps` forwarding each entry to the fake libascendcl (tests/common/table.rs).
//! The fake-backed tests of the other files run through the same table as well as through the
//! ACL backend; this file checks what only a table has:
//!
//! - a table missing a required entry is refused at `run_lane_create`, the message naming the
//!   entry, before any entry is called; so is a config that cannot go with a table;
//! - a stream the runtime already owns, returned by `create_stream`, serves as one of the
//!   pair (the runner launches on it) and goes back to the table's destroy, never assumed the
//!   lane's;
//! - a handle the table did not issue, or no longer holds, is refused with a code before it
//!   reaches the table, on the device and on its completion waiter;
//! - the table's own codes are classified as ACL's: a stream create it fails fails only the
//!   run that needed it; an AICore exception its synchronize returns poisons, and the table's
//!   reset and probe recover the device;
//! - the waits are the table's, made on the completion waiter's thread (the recovery drain
//!   too), and the waiter binds its thread through the table;
//! - the copies on the streams go through the table's pinned entries and stay inside the
//!   pinned memory it returned.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use common::table::{self, Entry, forward};
use common::{Kernels, Via, control};
use core::ffi::c_void;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{Device, DevicePtr, EventHandle, HostPtr};
use run_lane::device_ops::{DeviceOps, REQUIRED_ENTRIES, TableDevice};
use run_lane::*;
use run_lane_fake_ascendcl::{ENGINE_AICORE, ENGINE_AICPU, Outcome};

/// Each run's kernels.
const KERNEL: Duration = Duration::from_millis(2);

const OP_TIMEOUT_MS: u64 = 200;
static HEALTHY: Kernels = Kernels::healthy(KERNEL);

/// `table` with its entry `name` NULL.
fn without(mut table: RunLaneDeviceOps, name: &str) -> RunLaneDeviceOps {
    match name {
        "create_stream" => table.create_stream = None,
        "destroy_stream" => table.destroy_stream = None,
        "destroy_stream_force" => table.destroy_stream_force = None,
        "create_event" => table.create_event = None,
        "destroy_event" => table.destroy_event = None,
        "record_event" => table.record_event = None,
        "stream_wait_event" => table.stream_wait_event = None,
        "synchronize_event" => table.synchronize_event = None,
        "synchronize_stream" => table.synchronize_stream = None,
        "malloc" => table.malloc = None,
        "free" => table.free = None,
        "memcpy_to_device" => table.memcpy_to_device = None,
        "memcpy_from_device" => table.memcpy_from_device = None,
        "reset_device_force" => table.reset_device_force = None,
        other => panic!("a required entry this test cannot clear: {other}; add it here"),
    }
    table
}

/// The fake reset for this test, and fake device 0's forwarding state cleared.
fn fresh() -> (common::Fresh, &'static table::Forward) {
    let fresh = common::fresh();
    forward(0).clear();
    (fresh, forward(0))
}

/// A lane's config on fake device 0 through the forwarding table.
fn table_config(kernels: &Kernels) -> RunLaneConfig {
    common::fake_config(Via::DeviceOps, 0, kernels, OP_TIMEOUT_MS)
}

/// Every call of the forwarding table of `device` so far.
fn table_calls(device: i32) -> u64 {
    [Entry::Bind, Entry::CreateStream, Entry::CreateEvent, Entry::Malloc, Entry::MemcpyToDevice]
        .into_iter()
        .map(|entry| forward(device).calls(entry))
        .sum()
}

#[test]
fn every_required_entry_left_null_is_refused_at_create_naming_it_before_any_entry_is_called() {
    let (_fake, _) = fresh();
    let names = REQUIRED_ENTRIES.iter().map(|(name, _)| *name).chain(["reset_device_force"]);
    let with_ops =
        |ops: &RunLaneDeviceOps| RunLaneConfig { device_ops: ops, ..table_config(&HEALTHY) };
    for name in names {
        let (status, message) = common::refusal(&with_ops(&without(table::table(0), name)));
        assert_eq!(status, RunLaneStatus::InvalidConfig, "{name}: {message}");
        assert!(
            message.contains(&format!("device_ops.{name} (")) && message.contains("set it"),
            "names the entry and what to do: {message}"
        );
        if name == "reset_device_force" {
            assert!(
                message.contains("unless the runtime owns recovery"),
                "says when it may be NULL: {message}"
            );
        }
    }
    // Two missing: both named.
    let (_, message) =
        common::refusal(&with_ops(&without(without(table::table(0), "malloc"), "free")));
    assert!(
        message.contains("device_ops.malloc (")
            && message.contains("device_ops.free (")
            && message.contains("set them"),
        "{message}"
    );
    assert_eq!(table_calls(0), 0, "refused before any entry was called");
    // With the runtime's own recovery the lane never resets: no reset entry is needed.
    let ops = without(table::table(0), "reset_device_force");
    let mut config = with_ops(&ops);
    config.recovery = RunLaneRecovery::Runtime as u32;
    common::destroy(common::create(&config));
}

#[test]
fn a_config_that_cannot_go_with_a_table_is_refused_at_create_with_what_to_do() {
    let (_fake, _) = fresh();
    let healthy = || table_config(&HEALTHY);
    let half_pinned = RunLaneDeviceOps {
        free_host: None,
        memcpy_from_device_async: None,
        ..table::table_with_pinned(0)
    };
    let (no_table, probe) = (std::ptr::null(), RunLaneProfile::Probe as u32);
    let no_aicpu = RunLaneRunner { launch_aicpu: None, ..healthy().runner };
    #[rustfmt::skip]
    let cases: [(&str, RunLaneConfig, &str); 5] = [
        ("no table", RunLaneConfig { device_ops: no_table, ..healthy() },
            "point it at the runtime's RunLaneDeviceOps"),
        ("a probed profile", RunLaneConfig { profile: probe, ..healthy() },
            "name the chip's profile"),
        ("the library's notice monitor", RunLaneConfig { fault_notice_monitor: true, ..healthy() },
            "run_lane_report_device_fault"),
        ("no launch callbacks", RunLaneConfig { runner: no_aicpu, ..healthy() },
            "launch_aicore and launch_aicpu"),
        ("some of the pinned-copy entries", RunLaneConfig { device_ops: &half_pinned, ..healthy() },
            "not free_host, memcpy_from_device_async"),
    ];
    for (case, config, says) in cases {
        let (status, message) = common::refusal(&config);
        assert_eq!(status, RunLaneStatus::InvalidConfig, "{case}: {message}");
        assert!(message.contains(says), "{case}: {message}");
    }
    assert_eq!(table_calls(0), 0, "refused before any entry was called");
}

#[test]
fn a_table_whose_bind_fails_on_the_lane_thread_is_backend_unavailable_naming_the_bind() {
    let (_fake, f) = fresh();
    f.fail(Entry::Bind, 507_899, 0, 1);
    let (status, message) = common::refusal(&table_config(&HEALTHY));
    assert_eq!(status, RunLaneStatus::BackendUnavailable, "{message}");
    assert!(
        message.contains("bind failed") && message.contains("507899"),
        "names the entry and its code: {message}"
    );
    assert_eq!(f.calls(Entry::CreateStream), 0, "nothing made");
    // The lane thread ended: nothing of the refused lane is left running.
    common::wait_for_lane_threads_joined("a refused create joins its lane thread");
}

/// The streams the launch callbacks were handed, in launch order.
static LAUNCHED_ON: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn noting(user: *mut c_void, stream: *mut c_void, engine: u32, args: &RunLaneRunArgs) -> i32 {
    LAUNCHED_ON.lock().unwrap().push(stream.addr());
    common::launch(user, stream, engine, args)
}

common::launch_callbacks!(noting_aicore, noting_aicpu, noting);

#[test]
fn a_stream_the_runtime_already_owns_serves_as_one_of_the_pair_and_goes_back_to_the_tables_destroy()
{
    let (_fake, _) = fresh();
    let control = control();
    LAUNCHED_ON.lock().unwrap().clear();
    // The runtime's own run stream, made before the lane, handed out by the table's first
    // create_stream.
    let owned = table::runtime_stream(0);
    forward(0).own_stream(owned);
    let mut config = table_config(&HEALTHY);
    config.runner.launch_aicore = Some(noting_aicore);
    config.runner.launch_aicpu = Some(noting_aicpu);
    let lane = common::create(&config);
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 6);
    common::assert_ok_in_order(0, &outcomes);
    let launched = LAUNCHED_ON.lock().unwrap().clone();
    let on_owned = launched.iter().filter(|s| **s == owned.addr()).count();
    assert_eq!(
        on_owned, 6,
        "one of each run's two launches is on the runtime's stream: {launched:x?}"
    );
    let created = forward(0).calls(Entry::CreateStream);
    assert_eq!(created, 2, "the pair: the owned one and one the table made");
    assert!(forward(0).returned().is_empty(), "not given back while used");
    let report = common::close(lane);
    common::destroy(lane);
    assert_eq!(report.streams_left, 0);
    let returned = forward(0).returned();
    assert_eq!(
        returned,
        [owned.addr()],
        "the lane's teardown gave the runtime's stream to the table's destroy, once"
    );
    // Still the runtime's: it destroys it itself, and the fake balances.
    assert_eq!(table::destroy_runtime_stream(0, owned), 0);
    assert!(control.counters().expect("counters").balanced());
}

#[test]
fn a_handle_the_table_did_not_issue_or_no_longer_holds_is_refused_without_reaching_the_table() {
    let (_fake, f) = fresh();
    let ops = DeviceOps::new(&table::table(0), false).expect("a full table");
    let mut d = TableDevice::open(ops, 0).unwrap_or_else(|(code, _)| panic!("open: {code}"));
    let mut waiter = d.completion_waiter().expect("a waiter");
    let stream = d.create_stream().expect("a stream");
    let event = d.create_event().expect("an event");
    let memory = d.malloc(64).expect("memory");
    let forged_stream = StreamHandle(stream.0 ^ 0xF000);
    let forged_event = EventHandle(event.0 ^ 0xF000);
    let handle_entries = || {
        use Entry::*;
        [DestroyStream, RecordEvent, SynchronizeEvent, SynchronizeStream, MemcpyToDevice]
            .into_iter()
            .chain([MemcpyFromDevice, Free, DestroyEvent, StreamWaitEvent, QueryEvent])
            .map(|e| f.calls(e))
            .collect::<Vec<u64>>()
    };
    let calls_before = handle_entries();
    let handle = AclCode::RtInvalidHandle;
    let range = AclCode::RtParamInvalid;
    let mut bytes = [0_u8; 16];
    let far = DevicePtr(memory.0 + 0x10_0000);
    #[rustfmt::skip]
    let device_refusals: [(&str, Result<(), AclCode>, AclCode); 10] = [
        ("destroy a forged stream", d.destroy_stream(forged_stream), handle),
        ("record a forged event", d.record_event(forged_event, stream), handle),
        ("record on a forged stream", d.record_event(event, forged_stream), handle),
        ("wait on a forged event", d.stream_wait_event(stream, forged_event), handle),
        ("synchronize a forged stream", d.synchronize_stream(forged_stream, 10), handle),
        ("synchronize a forged event", d.synchronize_event(forged_event, 10), handle),
        ("copy past the allocation's end", d.memcpy_to_device(memory.at(56), &bytes), range),
        ("copy from memory never allocated", d.memcpy_from_device(&mut bytes, far), range),
        ("free inside an allocation", d.free(memory.at(8)), range),
        ("query a forged event", d.query_event(forged_event).map(|_| ()), handle),
    ];
    for (what, result, code) in device_refusals {
        assert_eq!(result, Err(code), "{what}");
    }
    let text = d.recent_error_message().expect("the refusal's text");
    assert!(text.contains("refused before any entry"), "{text}");
    // The waiter refuses the same, on its own thread's calls.
    assert_eq!(waiter.bind(), Ok(()));
    assert_eq!(waiter.synchronize_event(forged_event, 10), Err(handle));
    assert_eq!(waiter.synchronize_stream(forged_stream, 10), Err(handle));
    assert_eq!(waiter.memcpy_from_device(&mut bytes, memory.at(60)), Err(range));
    assert!(waiter.recent_error_message().is_some_and(|t| t.contains("refused before any entry")));
    assert_eq!(handle_entries(), calls_before, "no refused handle reached the table");

    // No longer held: destroyed, then used again.
    d.destroy_event(event).expect("destroyed");
    let destroys = f.calls(Entry::DestroyEvent);
    assert_eq!(d.destroy_event(event), Err(handle), "a second destroy");
    assert_eq!(d.synchronize_event(event, 10), Err(handle));
    assert_eq!(f.calls(Entry::DestroyEvent), destroys);
    // Killed by a reset: every handle from before it is refused, and never destroyed.
    d.reset_device_force().expect("the table's reset");
    let binds = f.calls(Entry::Bind);
    let after_reset = (f.calls(Entry::DestroyStream), f.calls(Entry::Free));
    assert_eq!(d.destroy_stream(stream), Err(handle));
    assert_eq!(d.free(memory), Err(range));
    assert_eq!(
        (f.calls(Entry::DestroyStream), f.calls(Entry::Free)),
        after_reset,
        "handles from before the reset never reach the table"
    );
    assert_eq!(waiter.synchronize_stream(stream, 10), Err(handle));
    // A new handle after the reset works; the thread bound again through the table once, at
    // its first call after the reset.
    let fresh = d.create_stream().expect("a stream after the reset");
    assert_eq!(f.calls(Entry::Bind), binds + 1, "bound again after the reset, once");
    d.destroy_stream(fresh).expect("destroyed");
}

#[test]
fn a_stream_create_the_table_fails_fails_only_the_run_that_needed_it_and_nothing_is_reset() {
    let (_fake, f) = fresh();
    // The pair's first create (run 1's launch) fails with a parameter error, the table's own.
    f.fail(Entry::CreateStream, 107_000, 0, 1);
    let lane = common::fake_lane(Via::DeviceOps, 0, &HEALTHY, OP_TIMEOUT_MS);
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 5);
    common::destroy(lane);
    let one = &outcomes[0];
    let line = common::line(one);
    assert_eq!(one.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(one.failure_class, RunLaneClass::RunOnly, "{line}");
    assert_eq!(one.stage, RunLaneStage::StreamCreate, "{line}");
    assert!(one.has_code && one.code == 107_000, "{line}");
    common::assert_ok_in_order(0, &outcomes[1..]);
    assert_eq!(f.calls(Entry::ResetDeviceForce), 0, "no recovery");
}

/// Run 2 publishes no record, so its verdict is the pair's synchronize.
static RUN_2_SILENT: Kernels = Kernels::faulty(KERNEL, &[(2, ENGINE_AICPU, Outcome::Silent)]);

#[test]
fn an_aicore_exception_the_tables_synchronize_returns_poisons_and_the_tables_reset_and_probe_recover()
 {
    let (_fake, f) = fresh();
    // The fake's streams stay clean: the code is the table's alone.
    f.fail(Entry::SynchronizeStream, 507_015, 0, 1);
    let mut config = table_config(&RUN_2_SILENT);
    config.launch_depth = 1;
    let lane = common::create(&config);
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 5);
    common::destroy(lane);
    let two = &outcomes[1];
    let line = common::line(two);
    assert_eq!(two.verdict, RunLaneVerdict::Failed, "{line}");
    assert_eq!(two.failure_class, RunLaneClass::Poison, "{line}");
    assert_eq!(two.stage, RunLaneStage::StreamSync, "{line}");
    assert!(two.has_code && two.code == 507_015, "{line}");
    // Run 3, prepared behind it, is taken down with it (L-10); the rest are Ok, those after
    // the recovery on fresh streams.
    for outcome in outcomes.iter().filter(|o| o.id != two.id) {
        let taken_down = outcome.verdict == RunLaneVerdict::Poisoned
            && outcome.origin == two.id
            && outcome.id == two.id + 1;
        let (id, line) = (outcome.id, common::line(outcome));
        assert!(outcome.verdict == RunLaneVerdict::Ok || taken_down, "run {id}: {line}");
    }
    assert_eq!(outcomes[4].verdict, RunLaneVerdict::Ok, "recovered");
    let recovery = [Entry::SynchronizeDevice, Entry::ResetDeviceForce, Entry::Probe];
    let calls = recovery.map(|e| f.calls(e));
    assert_eq!(calls, [1, 1, 1], "one recovery: the table's drain, force reset and probe");
}

/// Run 2 publishes no record (its pair is synchronized) and run 4's AICore kernel faults (a
/// poison and its recovery drain).
static SILENT_THEN_FAULT: Kernels = Kernels::faulty(
    KERNEL,
    &[(2, ENGINE_AICPU, Outcome::Silent), (4, ENGINE_AICORE, Outcome::Exception)],
);

#[test]
fn the_waits_are_the_tables_made_on_the_completion_waiters_thread_which_binds_through_it() {
    let (_fake, f) = fresh();
    f.note_threads();
    let mut config = table_config(&SILENT_THEN_FAULT);
    config.launch_depth = 1;
    let lane = common::create(&config);
    let outcomes = common::documented_loop(lane, |submitted, _| submitted < 6);
    common::destroy(lane);
    assert_eq!(outcomes[3].failure_class, RunLaneClass::Poison);
    for entry in [Entry::SynchronizeEvent, Entry::SynchronizeStream, Entry::SynchronizeDevice] {
        let threads = f.threads_of(entry);
        assert!(!threads.is_empty(), "{entry:?} was called");
        let on_waiter = threads.iter().all(|t| t == "lane-waiter");
        assert!(on_waiter, "{entry:?} only on the completion waiter: {threads:?}");
    }
    let reads = f.threads_of(Entry::MemcpyFromDevice);
    let read_on_waiter = reads.iter().any(|t| t == "lane-waiter");
    assert!(read_on_waiter, "the record read right after the boundary: {reads:?}");
    let binds = f.threads_of(Entry::Bind);
    for thread in ["lane", "lane-waiter"] {
        let bound = binds.iter().any(|t| t == thread);
        assert!(bound, "{thread} bound through the table: {binds:?}");
    }
}

#[test]
fn the_copies_on_the_streams_go_through_the_tables_pinned_entries_and_stay_inside_its_memory() {
    let (_fake, f) = fresh();
    let ops = DeviceOps::new(&table::table_with_pinned(0), false).expect("a full table");
    assert!(ops.has_pinned_copies());
    let mut d = TableDevice::open(ops, 0).unwrap_or_else(|(code, _)| panic!("open: {code}"));
    let stream = d.create_stream().expect("a stream");
    let event = d.create_event().expect("an event");
    let memory = d.malloc(64).expect("memory");
    let p = d.pinned_copies().expect("the table has them");
    let pinned = p.malloc_host(32).expect("pinned memory");
    p.write_host(pinned, &[1, 2, 3, 4]).expect("inside");
    let to_device = p.memcpy_to_device_async(memory.at(8), pinned, 4, stream);
    to_device
        .and(p.memcpy_from_device_async(pinned.at(16), memory.at(7), 6, stream))
        .expect("enqueued");
    d.record_event(event, stream).expect("recorded");
    d.synchronize_event(event, 5_000).expect("done");
    let p = d.pinned_copies().expect("the table has them");
    let mut back = [0xAA_u8; 6];
    p.read_host(&mut back, pinned.at(16)).expect("inside");
    assert_eq!(back, [0, 1, 2, 3, 4, 0], "H2D then D2H, in stream order");
    // Outside the pinned memory the table returned: refused, nothing touched or called.
    let invalid = Err(AclCode::InvalidParam);
    assert_eq!(p.write_host(pinned.at(30), &[0; 4]), invalid);
    assert_eq!(p.read_host(&mut back, HostPtr(pinned.0 + 4096)), invalid);
    let copies = f.calls(Entry::MemcpyAsync);
    assert_eq!(p.memcpy_to_device_async(memory, pinned.at(28), 8, stream), invalid);
    assert_eq!(f.calls(Entry::MemcpyAsync), copies, "never reached the table");
    p.free_host(pinned).expect("freed");
    assert_eq!(p.free_host(pinned), invalid, "a second free");
    let calls = [Entry::MallocHost, Entry::FreeHost, Entry::MemcpyAsync].map(|e| f.calls(e));
    assert_eq!(calls, [1, 1, 2]);
    d.free(memory).expect("freed");
    d.destroy_event(event).expect("destroyed");
    d.destroy_stream(stream).expect("destroyed");
    assert!(control().counters().expect("counters").balanced());
}

/// Whether the runner's `on_poison` was called (the runtime's recovery).
static TOLD_OF_POISON: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn on_poison(_user: *mut c_void, _info: *const RunLaneRecoveryInfo) {
    TOLD_OF_POISON.store(true, SeqCst);
}

static RUN_1_FAULTS: Kernels = Kernels::faulty(KERNEL, &[(1, ENGINE_AICPU, Outcome::Exception)]);

/// L-22 with L-24: a runtime that owns recovery gives a table without `reset_device_force`;
/// after a poison it resets the device itself and reports it, and the lane forgets every
/// handle the table gave and every thread's binding (the reset unbound the fake's threads):
/// it binds its threads again through the table and reopens on fresh streams.
#[test]
fn with_the_runtimes_recovery_its_own_reset_makes_the_lane_forget_the_tables_handles_and_bind_again()
 {
    let (_fake, f) = fresh();
    TOLD_OF_POISON.store(false, SeqCst);
    let ops = without(table::table(0), "reset_device_force");
    let mut config = table_config(&RUN_1_FAULTS);
    (config.device_ops, config.recovery) = (&raw const ops, RunLaneRecovery::Runtime as u32);
    config.runner.on_poison = Some(on_poison);
    let lane = common::create(&config);
    let one = common::wait(lane, common::submit(lane).expect("run 1"));
    common::assert_class(&one, RunLaneClass::Poison);
    common::wait_until("on_poison never came", || TOLD_OF_POISON.load(SeqCst));
    assert_eq!(common::submit(lane), Err(RunLaneStatus::Unusable));
    let binds = f.calls(Entry::Bind);
    // The runtime's reset, outside the lane: every thread of the fake's device 0 is unbound.
    assert_eq!(table::runtime_reset(0), 0);
    assert_eq!(run_lane_device_reset(lane), RunLaneStatus::Ok);
    common::assert_ok(
        "after the runtime's reset",
        &common::wait(lane, common::submit_when_open(lane)),
    );
    let bound_again = f.calls(Entry::Bind) > binds;
    assert!(
        bound_again,
        "the lane's threads bound again through the table after the runtime's reset"
    );
    let resets = common::force_resets(0);
    assert_eq!(resets, 1, "the runtime's reset, none of the lane's");
    common::destroy(lane);
}
