//! Steady state allocates nothing per run: inline storage for the FIFOs, the effect and
//! outcome queues and the stream pair's submissions. Proven with a counting global
//! allocator (this test binary only) over 10,000 runs, queued two deep on a2a3.

use lane_core::status_latch::Status;
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    Effect, Event, Lane, Outcome, Profile, RunRequest, SubmitError, Timestamp, Verdict,
};

/// Answers every effect with success, completing a run as soon as it is awaited; no
/// allocation of its own.
fn drive(lane: &mut Lane, now: &mut Timestamp, next_handle: &mut u64, oks: &mut u64) {
    while let Some(effect) = lane.poll_effect() {
        now.0 += 1_000;
        let event = match effect {
            Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
            Effect::CreateStream { role } => {
                *next_handle += 1;
                Event::StreamCreated {
                    role,
                    handle: StreamHandle(*next_handle),
                }
            }
            Effect::DestroyStream { role, handle } => Event::StreamDestroyed { role, handle },
            Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
            Effect::AwaitCompletion { run, lease, .. } => Event::Completed { run, lease },
            Effect::ReadStatus { run, lease, layout } => Event::StatusRead {
                run,
                lease,
                status: Status::clean(layout),
                timing: Default::default(),
            },
            Effect::FinaliseRun { run, lease, .. } => Event::Finalised { run, lease },
            Effect::UploadCode { publication, .. } => Event::Uploaded { publication },
            Effect::DrainDevice { attempt, .. } => Event::DeviceDrained { attempt },
            Effect::ForceReset { attempt } => Event::ResetDone { attempt },
            Effect::Probe { attempt } => Event::ProbePassed { attempt },
        };
        assert!(lane.handle(*now, event).is_ok());
    }
    while let Some(outcome) = lane.poll_outcome() {
        if matches!(outcome, Outcome::Run(r) if r.verdict == Verdict::Ok) {
            *oks += 1;
        }
    }
}

fn run_many(lane: &mut Lane, now: &mut Timestamp, next_handle: &mut u64, runs: u64) -> u64 {
    let mut oks = 0;
    let mut submitted = 0;
    while submitted < runs {
        match lane.submit(*now, RunRequest::new()) {
            Ok(_) => submitted += 1,
            Err(SubmitError::Full { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        drive(lane, now, next_handle, &mut oks);
    }
    drive(lane, now, next_handle, &mut oks);
    oks
}

#[test]
fn ten_thousand_runs_in_steady_state_allocate_nothing() {
    let mut lane = Lane::new(Profile::a2a3());
    let (mut now, mut handles) = (Timestamp(0), 0);
    // Warm up: the first runs create the streams.
    assert_eq!(run_many(&mut lane, &mut now, &mut handles, 10), 10);
    let mut oks = 0;
    let info = allocation_counter::measure(|| {
        oks = run_many(&mut lane, &mut now, &mut handles, 10_000);
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
