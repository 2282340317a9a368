//! No polling loop: a lane service on the fake libascendcl uses no CPU while it has nothing to
//! do, and none while a long run executes (the lane thread sleeps on its mailbox, the
//! completion waiter in the device's event wait, the fake's kernel in a timed wait). CPU time
//! is read from the kernel's per-thread accounting (`/proc/self/task/*/schedstat`: ns on a
//! CPU), so the bounds are about work done, not about how fast a loaded machine runs; this
//! test is its own binary, so no other test's threads are counted.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use backend_sim::RunTimes;
use lane_conformance::{FakeRunner, FakeSession, FakeTimeouts};
use lane_core::{Outcome, Profile, RunRequest, Verdict};
use lane_service::{ServiceConfig, spawn};

/// Nanoseconds every thread of this process has spent on a CPU so far.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn an_idle_lane_and_a_lane_waiting_on_a_600_ms_run_use_almost_no_cpu() {
    let profile = FakeTimeouts::default().scale(Profile::a2a3()).expect("the fake's timeouts");
    let session = FakeSession::start().expect("the fake");
    let device = session.open(profile).expect("the fake device");
    let runner = FakeRunner::new(
        Arc::clone(session.control()),
        profile.header(),
        1,
        RunTimes { device_ns: 600_000_000, jitter_ppm: 0 },
    );
    let lane = spawn(ServiceConfig::new(profile), move || Ok::<_, String>((device, runner)))
        .expect("the lane starts");
    // Idle: a spinning or polling thread would burn most of these 300 ms.
    let before = cpu_ns();
    thread::sleep(Duration::from_millis(300));
    let idle = cpu_ns() - before;
    // A run of 600 ms: the lane thread launches it and sleeps, the waiter blocks in its wait.
    let before = cpu_ns();
    let run = lane.submit(RunRequest::new()).expect("accepted");
    let outcome = lane.wait(run, Duration::from_secs(30)).expect("its outcome");
    let waiting = cpu_ns() - before;
    assert!(matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok), "{outcome:?}");
    // Bounds: a few ms of real work (thread wake-ups, the launch, the status read) against
    // hundreds of ms a poll would cost; generous for a loaded 2-core machine.
    assert!(idle < 30_000_000, "{} ms of CPU in 300 ms idle", idle / 1_000_000);
    assert!(waiting < 60_000_000, "{} ms of CPU while a 600 ms run executed", waiting / 1_000_000);
    drop(lane);
}
