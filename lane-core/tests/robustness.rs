//! L-1 admission and leases; the lane's robustness to any event sequence a broken backend
//! could produce: stale generations, duplicates, unknown runs, wrong order. A rejected event
//! changes nothing.

mod common;

use common::Harness;
use lane_core::{Event, EventError, Lease, RunPhase, RunRequest, SubmitError, Verdict};

/// The lane's whole state, minus the count of rejected events (which a rejection bumps).
fn snapshot(h: &Harness) -> String {
    let full = format!("{:?}", h.lane);
    full.split(", rejected_events").next().unwrap_or_default().to_owned()
}

#[test]
fn the_lane_holds_at_most_slots_runs_and_refuses_the_next_with_full() {
    let mut h = Harness::a2a3();
    h.run();
    h.run();
    assert_eq!(h.lane.submit(h.now, RunRequest::new()), Err(SubmitError::Full { slots: 2 }));
    let err = SubmitError::Full { slots: 2 }.to_string();
    assert!(err.contains("poll_outcome"), "the error says what to do: {err}");
}

#[test]
fn a_finished_run_held_behind_its_predecessor_still_counts_against_capacity() {
    // Run 2 fails to launch at once while run 1 runs: its outcome waits behind run 1's, so
    // the lane never queues finished runs without bound.
    let mut h = Harness::a2a3();
    h.fault(common::Fault::LaunchFails(2, lane_core::LaunchStep::Aicore, 107_000));
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Done { .. })));
    assert!(matches!(h.lane.submit(h.now, RunRequest::new()), Err(SubmitError::Full { .. })));
    h.complete(r1);
    assert!(h.verdict(r2).is_some());
    h.run();
}

#[test]
fn a_tag_equal_to_a_live_runs_is_refused_with_duplicate_run() {
    let mut h = Harness::a2a3();
    let r1 = h.submit(RunRequest::new().tagged(42));
    let err = h.lane.submit(h.now, RunRequest::new().tagged(42)).unwrap_err();
    assert_eq!(err, SubmitError::DuplicateRun { tag: lane_core::Tag(42), run: r1 });
    h.complete(r1);
    h.submit(RunRequest::new().tagged(42));
}

#[test]
fn a_reserved_lease_is_used_once_and_a_released_or_used_lease_is_stale() {
    let mut h = Harness::a2a3();
    let lease = h.lane.reserve(h.now).unwrap();
    let run = h.submit(RunRequest::new().on_lease(lease));
    assert!(h.take()[0].starts_with(&format!("PrepareRun {run} ({lease})")));
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new().on_lease(lease)),
        Err(SubmitError::StaleLease { lease }),
        "a used lease is stale"
    );
    let other = h.lane.reserve(h.now).unwrap();
    h.lane.release(other).unwrap();
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new().on_lease(other)),
        Err(SubmitError::StaleLease { lease: other }),
        "a released lease is stale (simpler-lane.md §11.15: the C++ replay filter let it pass)"
    );
    assert!(h.lane.release(other).is_err());
}

#[test]
fn a_reservation_counts_against_capacity() {
    let mut h = Harness::a2a3();
    let _lease = h.lane.reserve(h.now).unwrap();
    h.run();
    assert!(matches!(h.lane.submit(h.now, RunRequest::new()), Err(SubmitError::Full { .. })));
    assert!(matches!(h.lane.reserve(h.now), Err(SubmitError::Full { .. })));
}

#[test]
fn leases_taken_before_a_device_reset_are_stale_after_it() {
    let mut h = Harness::a2a3();
    h.fault(common::Fault::Latch(1, lane_core::status_latch::RuntimeCode::SchedulerTimeout));
    let r1 = h.run();
    let lease = h.lane.reserve(h.now).unwrap();
    h.complete(r1);
    assert_eq!(
        h.lane.submit(h.now, RunRequest::new().on_lease(lease)),
        Err(SubmitError::StaleLease { lease })
    );
}

#[test]
fn generations_are_minted_fresh_each_time_a_slot_is_taken() {
    let mut h = Harness::a2a3();
    let mut seen = Vec::new();
    for _ in 0..5 {
        let lease = h.lane.reserve(h.now).unwrap();
        assert!(!seen.contains(&lease.generation), "generation reused");
        seen.push(lease.generation);
        h.lane.release(lease).unwrap();
    }
}

#[test]
fn an_event_with_a_stale_generation_cannot_finalise_another_runs_slot() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete(r1);
    // Slot 0 is leased again to run 2 with a new generation.
    let r2 = h.run();
    let old = Lease {
        slot: lane_core::SlotId(0),
        generation: lane_core::Generation(core::num::NonZeroU64::new(1).unwrap()),
    };
    let before = snapshot(&h);
    let err = h.lane.handle(h.now, Event::Finalised { run: r2, lease: old }).unwrap_err();
    assert!(matches!(err, EventError::StaleLease { .. }), "{err}");
    assert_eq!(snapshot(&h), before, "a rejected event changes nothing");
    let err = h.lane.handle(h.now, Event::Finalised { run: r1, lease: old }).unwrap_err();
    assert!(matches!(err, EventError::UnknownRun { .. }), "{err}");
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Awaiting { .. })));
}

#[test]
fn duplicated_and_unrequested_events_are_rejected_without_change() {
    let mut h = Harness::a2a3();
    let run = h.lane.submit(h.now, RunRequest::new()).unwrap();
    let lane_core::Effect::PrepareRun { lease, .. } = h.lane.poll_effect().unwrap() else {
        panic!()
    };
    h.lane.handle(h.now, Event::Prepared { run, lease }).unwrap();
    let before = snapshot(&h);
    for event in [
        Event::Prepared { run, lease },
        Event::Completed { run, lease, evidence: lane_core::status_latch::Evidence::PUBLISHED_OK },
        Event::Launched { run, lease },
        Event::Finalised { run, lease },
        Event::StatusRead {
            run,
            lease,
            status: lane_core::status_latch::Status::clean(h.lane.profile().header()),
            timing: Default::default(),
        },
        Event::Uploaded { publication: lane_core::PublicationId(run.0) },
        Event::DeviceDrained { attempt: 1 },
        Event::ProbePassed { attempt: 1 },
        Event::Prepared { run: lane_core::RunId(99), lease },
    ] {
        let result = h.lane.handle(h.now, event);
        assert!(result.is_err(), "{event:?} was accepted");
        assert_eq!(snapshot(&h), before, "{event:?} changed the lane");
        h.lane.check_invariants().unwrap();
    }
    assert_eq!(h.lane.rejected_events(), 9);
}

#[test]
fn a_stream_result_that_answers_nothing_is_rejected() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let err = h
        .lane
        .handle(
            h.now,
            Event::StreamCreated {
                role: lane_core::stream_pair::Role::Aicore,
                handle: lane_core::stream_pair::StreamHandle(7),
            },
        )
        .unwrap_err();
    assert!(matches!(err, EventError::Stream { .. }), "{err}");
    h.complete(r1);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
}

#[test]
fn out_of_order_completion_is_rejected_and_cannot_strand_the_fifo() {
    // S-5 at the lane level: the lane awaits only the oldest launched run, so a completion of
    // its successor first is an event it did not ask for; the FIFO stays intact and the
    // proper order still completes both.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    assert!(matches!(h.lane.phase_of(r2), Some(RunPhase::Launched { .. })));
    let lease = h.lease(r2);
    let err = h
        .lane
        .handle(
            h.now,
            Event::Completed {
                run: r2,
                lease,
                evidence: lane_core::status_latch::Evidence::PUBLISHED_OK,
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, EventError::UnexpectedForRun { phase: RunPhase::Launched { .. }, .. }),
        "{err}"
    );
    assert_eq!(h.lane.pair().submissions().len(), 2);
    h.complete(r1);
    h.complete(r2);
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    assert!(h.lane.pair().submissions().is_empty());
}

#[test]
fn spurious_timeouts_are_harmless_and_the_lane_asks_for_each_completion_once() {
    // simpler-lane.md §11.13 (#1650): a re-polling wait made 636,336 polls for one 200 ms
    // run. The lane asks once per run and spurious timeout calls before the deadline change
    // nothing.
    let mut h = Harness::a2a3();
    let r1 = h.run();
    assert_eq!(h.take().iter().filter(|l| l.starts_with("AwaitCompletion")).count(), 1);
    let before = snapshot(&h);
    for _ in 0..1000 {
        h.tick(1_000);
        h.lane.handle_timeout(h.now);
    }
    assert_eq!(snapshot(&h), before);
    h.complete(r1);
    let awaits = h.take().iter().filter(|l| l.starts_with("AwaitCompletion")).count();
    assert_eq!(awaits, 0, "no second await after the first");
}

#[test]
fn a_lease_naming_the_slot_just_past_the_last_is_refused_without_panicking() {
    let spec = lane_core::ProfileSpec {
        slots: lane_core::MAX_SLOTS,
        ..lane_core::Profile::default_spec()
    };
    let mut lane = lane_core::Lane::new(lane_core::Profile::custom(spec).unwrap());
    let lease = lane_core::Lease {
        slot: lane_core::SlotId(lane_core::MAX_SLOTS),
        generation: lane_core::Generation(core::num::NonZeroU64::MIN),
    };
    assert!(lane.release(lease).is_err());
    let refused =
        lane.submit(lane_core::Timestamp(0), lane_core::RunRequest::new().on_lease(lease));
    assert_eq!(refused, Err(lane_core::SubmitError::StaleLease { lease }));
}
