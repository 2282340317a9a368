//! Steady state allocates nothing per run: inline storage for the FIFOs, the effect and
//! outcome queues and the stream pair's submissions. Proven with a counting global
//! allocator (this test binary only) over 10,000 runs, queued two deep on a2a3, and again
//! with a prepare window of two and runner answers held back and delivered late and out of
//! order, as host workers deliver them.

use lane_core::testkit::Succeed;
use lane_core::{Lane, Outcome, Profile, RunRequest, SubmitError, Timestamp, Verdict};

/// Answers every effect with success (`testkit::Succeed`, which allocates nothing),
/// completing a run as soon as it is awaited; the clock advances 1 us per effect. Returns
/// how many effects it answered.
fn drive(lane: &mut Lane, now: &mut Timestamp, backend: &mut Succeed, oks: &mut u64) -> u32 {
    let mut answered = 0;
    while let Some(effect) = lane.poll_effect() {
        now.0 += 1_000;
        answered += 1;
        // A lane that never stops asking is a failure, not a hang.
        assert!(answered <= 100_000, "livelock");
        if let Some(event) = backend.answer(effect) {
            assert!(lane.handle(*now, event).is_ok());
        }
    }
    while let Some(outcome) = lane.poll_outcome() {
        if matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok) {
            *oks += 1;
        }
    }
    answered
}

fn run_many(lane: &mut Lane, now: &mut Timestamp, backend: &mut Succeed, runs: u64) -> u64 {
    let mut oks = 0;
    let mut submitted = 0;
    while submitted < runs {
        let full = match lane.submit(*now, RunRequest::new()) {
            Ok(_) => {
                submitted += 1;
                false
            }
            Err(SubmitError::Full { .. }) => true,
            Err(e) => panic!("{e}"),
        };
        // Full with nothing to answer would loop here for ever: the lane is stuck, a failure
        // (not a hang) of this test.
        let answered = drive(lane, now, backend, &mut oks);
        assert!(
            !full || answered > 0,
            "the lane is full and asks for nothing after {submitted} runs: {} pending",
            lane.pending_items()
        );
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
    assert_eq!(info.count_total, 0, "allocations during 10,000 runs: {info:?}");
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

#[test]
fn a_lane_at_its_largest_allocates_nothing() {
    // Every slot of the largest profile in flight and the most publications waiting: the
    // item FIFO at its bound still fits its inline storage.
    let spec = lane_core::ProfileSpec {
        slots: lane_core::MAX_SLOTS,
        launch_depth: lane_core::MAX_SLOTS,
        ..Profile::default_spec()
    };
    let mut lane = Lane::new(Profile::custom(spec).unwrap());
    let (mut now, mut backend) = (Timestamp(0), Succeed::new());
    assert_eq!(run_many(&mut lane, &mut now, &mut backend, 10), 10);
    let mut oks = 0;
    let info = allocation_counter::measure(|| {
        for _ in 0..lane_core::MAX_SLOTS {
            lane.submit(now, RunRequest::new()).unwrap();
        }
        for code in 0..lane_core::MAX_PENDING_PUBLICATIONS {
            lane.publish(now, lane_core::CodeRef(code as u64)).unwrap();
        }
        assert_eq!(
            lane.pending_items(),
            usize::from(lane_core::MAX_SLOTS) + lane_core::MAX_PENDING_PUBLICATIONS
        );
        drive(&mut lane, &mut now, &mut backend, &mut oks);
    });
    assert_eq!(oks, u64::from(lane_core::MAX_SLOTS));
    assert_eq!(info.count_total, 0, "allocations at the bound: {info:?}");
}

/// Runner work a worker-style driver holds back: at most one per slot.
const HELD: usize = lane_core::MAX_SLOTS as usize;

/// A driver like lane-service with host workers: device effects are answered at once,
/// runner work (`PrepareRun`, `FinaliseRun`) is held back and answered late, newest first.
/// Holds it in a fixed array, so the driver allocates nothing.
struct Workers {
    held: [Option<lane_core::Effect>; HELD],
    backend: Succeed,
    /// The most runner work out at once: proves answers were held back.
    most_held: usize,
    oks: u64,
}

impl Workers {
    fn new() -> Self {
        Self { held: [None; HELD], backend: Succeed::new(), most_held: 0, oks: 0 }
    }

    /// Takes every effect: answers device effects, holds runner work.
    fn poll(&mut self, lane: &mut Lane, now: &mut Timestamp) {
        while let Some(effect) = lane.poll_effect() {
            now.0 += 1_000;
            if matches!(
                effect,
                lane_core::Effect::PrepareRun { .. } | lane_core::Effect::FinaliseRun { .. }
            ) {
                let free = self.held.iter().position(Option::is_none).expect("one per slot");
                self.held[free] = Some(effect);
            } else {
                if let Some(event) = self.backend.answer(effect) {
                    assert!(lane.handle(*now, event).is_ok());
                }
            }
        }
        let held = self.held.iter().flatten().count();
        self.most_held = self.most_held.max(held);
        assert_eq!(lane.runner_work_count(), held);
        while let Some(outcome) = lane.poll_outcome() {
            if matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok) {
                self.oks += 1;
            }
        }
    }

    /// Answers the newest held runner work; false when none is held.
    fn answer_late(&mut self, lane: &mut Lane, now: &mut Timestamp) -> bool {
        let Some(late) = self.held.iter_mut().rev().find_map(Option::take) else {
            return false;
        };
        now.0 += 1_000;
        if let Some(event) = self.backend.answer(late) {
            assert!(lane.handle(*now, event).is_ok());
        }
        true
    }

    /// Submits `runs` runs, answering runner work only once two pieces are out or the lane
    /// is full, then answers everything.
    fn run_many(&mut self, lane: &mut Lane, now: &mut Timestamp, runs: u64) {
        let mut submitted = 0;
        let mut rounds = 0u64;
        while submitted < runs {
            rounds += 1;
            assert!(rounds <= 100 * runs + 100, "livelock");
            let full = match lane.submit(*now, RunRequest::new()) {
                Ok(_) => {
                    submitted += 1;
                    false
                }
                Err(SubmitError::Full { .. }) => true,
                Err(e) => panic!("{e}"),
            };
            self.poll(lane, now);
            if full || self.held.iter().flatten().count() >= 2 {
                // A full lane with nothing held back would never make room: stuck.
                assert!(self.answer_late(lane, now) || !full, "full with nothing out");
                self.poll(lane, now);
            }
        }
        while self.answer_late(lane, now) {
            self.poll(lane, now);
        }
    }
}

#[test]
fn window_two_with_late_out_of_order_runner_answers_allocates_nothing() {
    let spec = lane_core::ProfileSpec {
        slots: 4,
        launch_depth: 2,
        prepare_window: 2,
        ..Profile::default_spec()
    };
    let mut lane = Lane::new(Profile::custom(spec).unwrap());
    let mut now = Timestamp(0);
    let mut workers = Workers::new();
    workers.run_many(&mut lane, &mut now, 10);
    assert_eq!(workers.oks, 10);
    let info = allocation_counter::measure(|| {
        workers.run_many(&mut lane, &mut now, 10_000);
    });
    assert_eq!(workers.oks, 10_010);
    assert!(lane.is_idle());
    assert!(workers.most_held >= 2, "runner work never overlapped");
    assert_eq!(
        info.count_total, 0,
        "allocations during 10,000 runs with late runner answers: {info:?}"
    );
}
