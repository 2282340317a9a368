//! One full run cycle through lane-core with a scripted backend: submit, prepare, launch,
//! await and complete, read status, finalise, outcome. Target (2-core guest): at most
//! 250 ns median, far below the ~5.5 us of one device call; zero heap allocations per run
//! is enforced separately by tests/allocations.rs. Sample sizes are fixed so that every
//! sample spans many timer ticks.
#![allow(missing_docs)]

use divan::black_box;
use lane_core::testkit::Succeed;
use lane_core::{Lane, Outcome, Profile, RunRequest, Timestamp};

fn main() {
    divan::main();
}

/// Answers every effect at once with success (`testkit::Succeed`: the status read returns
/// `clean`; decoding is measured by status-latch's own benchmark); returns the outcomes seen.
fn answer_all(lane: &mut Lane, now: Timestamp, backend: &mut Succeed) -> u32 {
    backend.drive(lane, now).expect("a healthy cycle rejects no event");
    let mut outcomes = 0;
    while let Some(outcome) = lane.poll_outcome() {
        outcomes += u32::from(matches!(outcome, Outcome::Run(_)));
    }
    outcomes
}

/// A lane whose streams exist (one run done), and its backend.
fn warm_lane(profile: Profile) -> (Lane, Succeed) {
    let mut lane = Lane::new(profile);
    let mut backend = Succeed::new();
    lane.submit(Timestamp(0), RunRequest::new()).expect("accepted");
    answer_all(&mut lane, Timestamp(0), &mut backend);
    (lane, backend)
}

/// One run from submit to outcome on a warm lane.
#[divan::bench(args = ["a2a3", "depth-one"], sample_size = 100, sample_count = 1000)]
fn full_run_cycle(bencher: divan::Bencher<'_, '_>, profile: &str) {
    let profile = if profile == "depth-one" { Profile::depth_one() } else { Profile::a2a3() };
    let (mut lane, mut backend) = warm_lane(profile);
    let mut now = 0u64;
    bencher.bench_local(|| {
        now += 1_000;
        let accepted = lane.submit(Timestamp(now), RunRequest::new()).is_ok();
        black_box((accepted, answer_all(&mut lane, Timestamp(now), &mut backend)))
    });
}

/// The same cycle with `check_invariants` after every event, as the simulator and the
/// fuzzers run it, and lane-service by default (so the C ABI): the price of checking.
#[divan::bench(sample_size = 100, sample_count = 1000)]
fn full_run_cycle_with_invariant_checks(bencher: divan::Bencher<'_, '_>) {
    let (mut lane, mut backend) = warm_lane(Profile::a2a3());
    let mut now = 0u64;
    bencher.bench_local(|| {
        now += 1_000;
        let accepted = lane.submit(Timestamp(now), RunRequest::new()).is_ok();
        let outcomes = answer_all(&mut lane, Timestamp(now), &mut backend);
        black_box((accepted, outcomes, lane.check_invariants().is_ok()))
    });
}
