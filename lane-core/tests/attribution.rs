//! L-8a: a synchronize's code is charged by evidence, never by who asked. A run whose record
//! reports an error marks the AICPU stream, which is replaced once the FIFO drained; a code
//! returned to an unpublished run is another run's when the stream was marked or a covered
//! run's record reports an error (then the run fails run-only, naming that run), and the
//! awaited run's own otherwise (poison, saying runs behind may share the cause; the poison
//! takes the runs behind down, L-10).

mod common;

use common::{Fault, Harness};
use lane_core::status_latch::{
    AclCode, Class, DeviceVerdict, Evidence, Failure, Record, RecordRead, RecordSource,
    RuntimeCode, Stage,
};
use lane_core::{LaneState, RunId, Verdict};

const NEVER: RecordRead = RecordRead::Read(Record::NeverPublished { stamp: 0 });
const STICKY: AclCode = AclCode::RtAicpuException;

fn error_record() -> Record {
    Record::Error {
        code: RuntimeCode::ScopeDeadlock,
        source: RecordSource::Header,
        payload_len: 64,
    }
}

/// A run whose record reports a latched SCOPE_DEADLOCK (its fatal status stays sticky).
fn latched() -> Evidence {
    Evidence { record: RecordRead::Read(error_record()), ..Evidence::PUBLISHED_OK }
}

/// An unpublished run whose synchronize returned these codes.
fn returned(aicpu: Option<AclCode>, aicore: Option<AclCode>) -> Evidence {
    Evidence {
        record: NEVER,
        device: Some(DeviceVerdict::Returned { aicpu, aicore }),
        ..Evidence::PUBLISHED_OK
    }
}

fn failed(h: &Harness, run: RunId) -> Failure {
    match h.verdict(run) {
        Some(Verdict::Failed { cause }) => cause.failure,
        other => panic!("{run}: expected Failed, got {other:?}"),
    }
}

#[test]
fn a_record_error_marks_the_aicpu_stream_which_is_replaced_once_the_queued_run_retired() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.take();
    h.complete_with(r1, latched());
    assert!(matches!(failed(&h, r1), Failure::Record { code: RuntimeCode::ScopeDeadlock, .. }));
    // Run 3 waits: nothing new joins a stream that holds a sticky code.
    let r3 = h.run();
    let log = h.take();
    assert!(!common::has(&log, "LaunchRun run 3"), "{log:?}");
    h.complete(r2);
    let log = h.take();
    let replaced = [
        "DestroyStream Aicpu h101",
        "CreateStream Aicpu",
        "LaunchRun run 3 (slot 0 gen 3) aicpu h103 aicore h102",
    ];
    let at: Vec<Option<usize>> =
        replaced.iter().map(|want| log.iter().position(|l| l == want)).collect();
    assert!(
        at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]),
        "the AICPU stream alone is replaced, then run 3 launches on the new one: {log:?}"
    );
    assert_eq!(h.verdict(r2), Some(Verdict::Ok), "queued on it, its own ok record");
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_code_on_a_marked_stream_is_the_marking_runs_and_fails_an_unpublished_run_only() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.complete_with(r1, latched());
    // Run 2, queued on the marked stream, publishes nothing: its synchronize returns run 1's
    // fatal status. Nothing is read: the mark explains the code.
    h.take();
    h.complete_with(r2, returned(Some(STICKY), None));
    assert!(!common::has(&h.take(), "ReadRecords"));
    let failure = failed(&h, r2);
    assert_eq!(failure, Failure::NoRecordBesideCode { code: STICKY, left_by: r1.0 });
    let line = lane_core::status_latch::failure_line(r2.0, &failure).to_string();
    assert!(line.contains("run 1's"), "{line}");
    assert_eq!(h.state(), LaneState::Open, "no poison");
    let r3 = h.run();
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
}

#[test]
fn a_covered_runs_error_record_explains_the_code_and_both_runs_keep_their_own_verdicts() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.fault(Fault::CoveredRecord(r2.0, error_record()));
    h.take();
    // Run 1 publishes nothing; run 2, queued behind, latched: run 1's synchronize waited for
    // run 2 and returned its fatal status.
    h.complete_with(r1, returned(Some(STICKY), None));
    let log = h.take();
    assert!(common::has(&log, "ReadRecords run 1 behind run 2"), "{log:?}");
    assert_eq!(failed(&h, r1), Failure::NoRecordBesideCode { code: STICKY, left_by: r2.0 });
    // Run 2's fatal status is on the AICPU stream now: nothing new joins it, even before
    // run 2 retires (a device that refuses an enqueue on a faulted stream would refuse it).
    let r3 = h.run();
    assert!(!common::has(&h.take(), "LaunchRun run 3"));
    h.complete_with(r2, latched());
    assert!(matches!(failed(&h, r2), Failure::Record { .. }));
    let log = h.take();
    assert!(common::has(&log, "DestroyStream Aicpu"), "{log:?}");
    assert!(common::has(&log, "LaunchRun run 3"), "{log:?}");
    h.complete(r3);
    assert_eq!(h.verdict(r3), Some(Verdict::Ok));
    assert_eq!(h.state(), LaneState::Open, "no poison");
}

#[test]
fn an_unexplained_code_poisons_the_awaited_run_and_says_the_run_behind_may_share_it() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.fault(Fault::CoveredRecord(r2.0, Record::NeverPublished { stamp: 0 }));
    h.take();
    h.complete_with(r1, returned(None, Some(AclCode::RtAicoreException)));
    let failure = failed(&h, r1);
    assert_eq!(failure, Failure::Covering { code: AclCode::RtAicoreException, behind: 1 });
    assert_eq!(failure.stage(), Some(Stage::StreamSync));
    match h.verdict(r2) {
        Some(Verdict::Poisoned { origin, cause }) => {
            assert_eq!(origin, r1);
            assert_eq!(cause.class(), Class::Poison);
        }
        other => panic!("{other:?}"),
    }
    h.pump();
    assert_eq!(h.state(), LaneState::Open, "recovered");
}

#[test]
fn a_covered_runs_own_ok_record_convicts_no_one_and_the_poison_takes_it_down() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.take();
    // Run 2's record (read after the synchronize) is its own ok: it explains nothing, so the
    // AICore code is run 1's. The device is poisoned: run 2's outputs come from it, so L-10
    // takes it down with run 1 as origin, with no copy-back.
    h.complete_with(r1, returned(None, Some(AclCode::RtAicoreException)));
    assert!(matches!(failed(&h, r1), Failure::Covering { .. }));
    assert!(matches!(
        h.verdict(r2),
        Some(Verdict::Poisoned { origin, .. }) if origin == r1
    ));
    assert!(!common::has(&h.take(), "FinaliseRun run 2 copy-back"));
}

#[test]
fn a_code_with_no_run_launched_behind_and_no_mark_is_the_awaited_runs_own() {
    // A held run behind is prepared, never launched: the synchronize cannot have covered it.
    for hold_one_behind in [false, true] {
        let mut h = Harness::a2a3();
        let r1 = h.run();
        if hold_one_behind {
            h.submit(lane_core::RunRequest::new().held());
        }
        h.take();
        h.complete_with(r1, returned(Some(STICKY), None));
        assert!(!common::has(&h.take(), "ReadRecords"), "held behind: {hold_one_behind}");
        assert_eq!(
            failed(&h, r1),
            Failure::Acl { stage: Stage::StreamSync, code: STICKY },
            "held behind: {hold_one_behind}"
        );
    }
}

#[test]
fn a_marked_stream_explains_no_aicore_code_and_no_synchronize_timeout() {
    for (aicpu, aicore, charged) in [
        (Some(STICKY), Some(AclCode::RtAicoreException), AclCode::RtAicoreException),
        (Some(AclCode::RtStreamSyncTimeout), None, AclCode::RtStreamSyncTimeout),
    ] {
        let mut h = Harness::a2a3();
        let r1 = h.run();
        let r2 = h.run();
        h.complete_with(r1, latched());
        h.complete_with(r2, returned(aicpu, aicore));
        let failure = failed(&h, r2);
        assert_eq!(failure.code(), Some(charged.raw()), "{failure:?}");
        assert_eq!(lane_core::status_latch::classify(&failure).class, Class::Poison);
    }
}

#[test]
fn a_completion_replayed_while_its_code_is_attributed_is_rejected_and_changes_nothing() {
    use lane_core::{Effect, Event, Lane, Profile, RunRequest, Timestamp};
    let mut lane = Lane::new(Profile::a2a3());
    let now = Timestamp(0);
    let mut backend = lane_core::testkit::Succeed::new();
    let mut awaited = Vec::new();
    let mut read_records = false;
    let mut pump = |lane: &mut Lane, awaited: &mut Vec<(RunId, lane_core::Lease)>| {
        while let Some(effect) = lane.poll_effect() {
            match effect {
                Effect::AwaitCompletion { run, lease, .. } => awaited.push((run, lease)),
                // Held: the records of the runs behind are still being read.
                Effect::ReadRecords { .. } => read_records = true,
                other => {
                    if let Some(event) = backend.answer(other) {
                        lane.handle(now, event).expect("answers");
                    }
                }
            }
        }
    };
    lane.submit(now, RunRequest::new()).expect("open");
    pump(&mut lane, &mut awaited);
    lane.submit(now, RunRequest::new()).expect("room");
    pump(&mut lane, &mut awaited);
    let (run, lease) = awaited[0];
    let completed =
        Event::Completed { run, lease, evidence: returned(None, Some(AclCode::RtAicoreException)) };
    lane.handle(now, completed).expect("the await's answer");
    pump(&mut lane, &mut awaited);
    assert!(read_records, "the run behind was covered (L-8a)");
    let before = lane.fingerprint();
    assert!(
        lane.handle(now, completed).is_err(),
        "a replayed completion answers nothing the lane asked for"
    );
    assert_eq!(lane.fingerprint(), before);
    assert_eq!(lane.poison(), None, "the replay poisoned nothing");
}
