//! One full run cycle through lane-core with a scripted backend: submit, prepare, launch,
//! await and complete, read status, finalise, outcome. Target (2-core guest): at most
//! 250 ns median, far below the ~5.5 us of one device call; zero heap allocations per run
//! is enforced separately by tests/allocations.rs. Sample sizes are fixed so that every
//! sample spans many timer ticks.
#![allow(missing_docs)]

use divan::black_box;
use lane_core::status_latch::Status;
use lane_core::stream_pair::StreamHandle;
use lane_core::{Effect, Event, Lane, Outcome, Profile, RunRequest, Timestamp};

fn main() {
    divan::main();
}

/// Answers every effect at once with success (the status read returns `clean`, a canned
/// answer: decoding is measured by status-latch's own benchmark); returns the outcomes seen.
fn answer_all(lane: &mut Lane, now: Timestamp, handles: &mut u64, clean: Status) -> u32 {
    while let Some(effect) = lane.poll_effect() {
        let event = match effect {
            Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
            Effect::CreateStream { role } => {
                *handles += 1;
                Event::StreamCreated {
                    role,
                    handle: StreamHandle(*handles),
                }
            }
            Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
            Effect::AwaitCompletion { run, lease, .. } => Event::Completed { run, lease },
            Effect::ReadStatus { run, lease, .. } => Event::StatusRead {
                run,
                lease,
                status: clean,
                timing: Default::default(),
            },
            Effect::FinaliseRun { run, lease, .. } => Event::Finalised { run, lease },
            other => unreachable!("not in a healthy cycle: {other:?}"),
        };
        let _ = lane.handle(now, event);
    }
    let mut outcomes = 0;
    while let Some(outcome) = lane.poll_outcome() {
        outcomes += u32::from(matches!(outcome, Outcome::Run(_)));
    }
    outcomes
}

/// A lane whose streams exist (one run done), its handle counter, and its clean status.
fn warm_lane(profile: Profile) -> (Lane, u64, Status) {
    let mut lane = Lane::new(profile);
    let mut handles = 0;
    let clean = Status::clean(profile.header());
    lane.submit(Timestamp(0), RunRequest::new())
        .expect("accepted");
    answer_all(&mut lane, Timestamp(0), &mut handles, clean);
    (lane, handles, clean)
}

/// One run from submit to outcome on a warm lane.
#[divan::bench(args = ["a2a3", "a5"], sample_size = 100, sample_count = 1000)]
fn full_run_cycle(bencher: divan::Bencher<'_, '_>, profile: &str) {
    let profile = if profile == "a5" {
        Profile::a5()
    } else {
        Profile::a2a3()
    };
    let (mut lane, mut handles, clean) = warm_lane(profile);
    let mut now = 0u64;
    bencher.bench_local(|| {
        now += 1_000;
        let accepted = lane.submit(Timestamp(now), RunRequest::new()).is_ok();
        black_box((
            accepted,
            answer_all(&mut lane, Timestamp(now), &mut handles, clean),
        ))
    });
}

/// The same cycle with `check_invariants` after every event, as the simulator and the
/// fuzzers run it (the price of checking, not a production path).
#[divan::bench(sample_size = 100, sample_count = 1000)]
fn full_run_cycle_with_invariant_checks(bencher: divan::Bencher<'_, '_>) {
    let (mut lane, mut handles, clean) = warm_lane(Profile::a2a3());
    let mut now = 0u64;
    bencher.bench_local(|| {
        now += 1_000;
        let accepted = lane.submit(Timestamp(now), RunRequest::new()).is_ok();
        let outcomes = answer_all(&mut lane, Timestamp(now), &mut handles, clean);
        black_box((accepted, outcomes, lane.check_invariants().is_ok()))
    });
}
