//! The stream-pair submit/retire cycle on a warm pair: `ready`, `submit`, `retire
//! Complete` at the front. Target (2-core guest): at most 15 ns median; the C++ runtime's
//! mutex-based pair takes about 30 ns for the same cycle.
//!
//! Sample sizes are fixed so that every sample spans many timer ticks (divan's own
//! calibration sometimes settles on one iteration per sample on a noisy VM).
#![allow(missing_docs)]

use divan::black_box;
use stream_pair::{
    Input, LaunchDepth, Owner, Readiness, Retired, Retirement, StreamHandle, StreamPair,
};

fn warm_pair(depth: u8) -> StreamPair {
    let mut pair = StreamPair::new(LaunchDepth::new(depth).expect("valid depth"));
    let Readiness::Pending(effects) = pair.ready() else { panic!("a cold pair asks for streams") };
    for (i, effect) in effects.into_iter().enumerate() {
        let stream_pair::Effect::Create { role } = effect else { panic!("{effect:?}") };
        let created = pair
            .handle(Input::Created { role, handle: StreamHandle(i as u64 + 1) })
            .expect("create answered");
        assert!(matches!(created, stream_pair::StreamResult::Created { .. }));
    }
    assert!(matches!(pair.ready(), Readiness::Ready { .. }));
    pair
}

fn main() {
    divan::main();
}

/// One run's whole use of the pair: ready, submit, complete, retire.
#[divan::bench(sample_size = 1000, sample_count = 1000)]
fn ready_submit_retire_cycle(bencher: divan::Bencher<'_, '_>) {
    let mut pair = warm_pair(2);
    let mut owner = 0u64;
    bencher.bench_local(|| {
        owner += 1;
        let ready = matches!(pair.ready(), Readiness::Ready { .. });
        let submitted = pair.submit(Owner(owner)).is_ok();
        let retired = pair.retire(Owner(owner), Retirement::Complete);
        black_box((ready, submitted, retired == Retired::Kept))
    });
}

/// Queued two deep: the successor is submitted before the predecessor retires.
#[divan::bench(sample_size = 1000, sample_count = 1000)]
fn queued_two_deep_cycle(bencher: divan::Bencher<'_, '_>) {
    let mut pair = warm_pair(2);
    pair.submit(Owner(0)).expect("first submission");
    let mut owner = 0u64;
    bencher.bench_local(|| {
        owner += 1;
        let ready = matches!(pair.ready(), Readiness::Ready { .. });
        let submitted = pair.submit(Owner(owner)).is_ok();
        let retired = pair.retire(Owner(owner - 1), Retirement::Complete);
        black_box((ready, submitted, retired == Retired::Kept))
    });
}
