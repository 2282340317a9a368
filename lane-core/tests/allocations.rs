//! Steady state allocates nothing per run: inline storage for the FIFOs, the effect and
//! outcome queues and the stream pair's submissions. Proven with a counting global
//! allocator (this test binary only) over 10,000 runs, queued two deep on a2a3.

use lane_core::testkit::Succeed;
use lane_core::{Lane, Outcome, Profile, RunRequest, SubmitError, Timestamp, Verdict};

/// Answers every effect with success (`testkit::Succeed`, which allocates nothing),
/// completing a run as soon as it is awaited; the clock advances 1 us per effect.
fn drive(lane: &mut Lane, now: &mut Timestamp, backend: &mut Succeed, oks: &mut u64) {
    while let Some(effect) = lane.poll_effect() {
        now.0 += 1_000;
        assert!(lane.handle(*now, backend.answer(effect)).is_ok());
    }
    while let Some(outcome) = lane.poll_outcome() {
        if matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok) {
            *oks += 1;
        }
    }
}

fn run_many(lane: &mut Lane, now: &mut Timestamp, backend: &mut Succeed, runs: u64) -> u64 {
    let mut oks = 0;
    let mut submitted = 0;
    while submitted < runs {
        match lane.submit(*now, RunRequest::new()) {
            Ok(_) => submitted += 1,
            Err(SubmitError::Full { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        drive(lane, now, backend, &mut oks);
    }
    drive(lane, now, backend, &mut oks);
    oks
}

#[test]
fn ten_thousand_runs_in_steady_state_allocate_nothing() {
    let mut lane = Lane::new(Profile::a2a3());
    let (mut now, mut backend) = (Timestamp(0), Succeed::new());
    // Warm up: the first runs create the streams.
    assert_eq!(run_many(&mut lane, &mut now, &mut backend, 10), 10);
    let mut oks = 0;
    let info = allocation_counter::measure(|| {
        oks = run_many(&mut lane, &mut now, &mut backend, 10_000);
    });
    assert_eq!(oks, 10_000);
    assert_eq!(
        info.count_total, 0,
        "allocations during 10,000 runs: {info:?}"
    );
}

#[test]
fn the_counter_sees_an_allocation_when_there_is_one() {
    // The proof above means something only if the counter counts in this binary.
    let info = allocation_counter::measure(|| {
        let v = std::hint::black_box(vec![1u8; 64]);
        drop(v);
    });
    assert_eq!(info.count_total, 1);
}
