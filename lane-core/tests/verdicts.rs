//! L-8: a verdict needs positive evidence. Completion is not the verdict: the lane judges the
//! completion waiter's evidence (the result record, the device verdict) with the verdict
//! rule, and only a run's own published ok record (or, on the stream-synchronize channel, a
//! clean synchronize and a clean header) is `Ok`.

mod common;

use common::{Fault, HEADER_DECIDES, Harness};
use lane_core::status_latch::{
    AclCode, Boundary, Class, DeviceVerdict, Evidence, Failure, Record, RecordDefect, RecordRead,
    RecordSource, RuntimeCode, Stage, VerdictChannel,
};
use lane_core::{LaneState, Profile, RunId, Verdict};

fn failed(verdict: Option<Verdict>) -> lane_core::Cause {
    match verdict {
        Some(Verdict::Failed { cause }) => cause,
        other => panic!("expected Failed, got {other:?}"),
    }
}

const NEVER: RecordRead = RecordRead::Read(Record::NeverPublished { stamp: 0 });

fn unpublished(device: DeviceVerdict) -> Evidence {
    Evidence { record: NEVER, device: Some(device), ..Evidence::PUBLISHED_OK }
}

#[test]
fn a_device_code_from_the_synchronize_poisons_the_run_and_its_queued_successor() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.complete_with(r1, unpublished(DeviceVerdict::Fault(AclCode::RtAicpuException)));
    let cause = failed(h.verdict(r1));
    assert_eq!(cause.class(), Class::Poison);
    assert_eq!(
        cause.failure,
        Failure::Acl { stage: Stage::StreamSync, code: AclCode::RtAicpuException }
    );
    // No status read on a faulted device: the poison is decided by the evidence alone.
    assert!(!common::has(&h.take(), "ReadStatus run 1"));
    match h.verdict(r2) {
        Some(Verdict::Poisoned { origin, .. }) => assert_eq!(origin, r1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_synchronize_timeout_poisons() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    h.complete_with(r1, unpublished(DeviceVerdict::Fault(AclCode::RtStreamSyncTimeout)));
    assert_eq!(failed(h.verdict(r1)).class(), Class::Poison);
}

#[test]
fn a_record_error_fails_only_its_run_and_the_queued_successor_gets_its_own_ok() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    let error = Evidence {
        record: RecordRead::Read(Record::Error {
            code: RuntimeCode::ScopeDeadlock,
            source: RecordSource::Header,
            payload_len: 64,
        }),
        ..Evidence::PUBLISHED_OK
    };
    h.complete_with(r1, error);
    h.complete(r2);
    let cause = failed(h.verdict(r1));
    assert_eq!(cause.class(), Class::RunOnly);
    assert_eq!(
        cause.failure,
        Failure::Record { code: RuntimeCode::ScopeDeadlock, source: RecordSource::Header }
    );
    assert!(
        cause.line(r1).contains("result record error from the status header"),
        "{}",
        cause.line(r1)
    );
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
    assert_eq!(h.state(), LaneState::Open);
}

#[test]
fn a_record_error_decides_the_run_whatever_the_device_verdict_says() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let error = Evidence {
        record: RecordRead::Read(Record::Error {
            code: RuntimeCode::InvalidArgs,
            source: RecordSource::ThreadReturn,
            payload_len: 0,
        }),
        device: Some(DeviceVerdict::Fault(AclCode::RtAicpuException)),
        ..Evidence::PUBLISHED_OK
    };
    h.complete_with(r1, error);
    assert_eq!(failed(h.verdict(r1)).class(), Class::RunOnly);
}

#[test]
fn an_unpublished_record_on_clean_streams_fails_the_run_only_and_is_never_ok() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let r2 = h.run();
    h.complete_with(r1, unpublished(DeviceVerdict::Clean));
    h.complete(r2);
    let cause = failed(h.verdict(r1));
    assert_eq!(cause.failure, Failure::NoRecord);
    assert_eq!(cause.class(), Class::RunOnly);
    assert!(cause.line(r1).contains("no result record"), "{}", cause.line(r1));
    assert_eq!(h.verdict(r2), Some(Verdict::Ok));
}

#[test]
fn the_header_fallback_names_the_latched_code_of_an_unrecorded_run() {
    let mut h = Harness::a2a3();
    h.fault(Fault::Latch(1, RuntimeCode::ScopeDeadlock));
    let r1 = h.run();
    h.complete_with(r1, HEADER_DECIDES);
    assert!(matches!(
        failed(h.verdict(r1)).failure,
        Failure::Latched(l) if l.code == RuntimeCode::ScopeDeadlock
    ));
}

#[test]
fn a_malformed_record_on_clean_streams_fails_the_run_only_saying_what_was_read() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let evidence = Evidence {
        record: RecordRead::Read(Record::Malformed(RecordDefect::UnknownVerdict { raw: 9 })),
        device: Some(DeviceVerdict::Clean),
        ..Evidence::PUBLISHED_OK
    };
    h.complete_with(r1, evidence);
    let cause = failed(h.verdict(r1));
    assert_eq!(cause.class(), Class::RunOnly);
    assert!(cause.line(r1).contains("unknown verdict 9"), "{}", cause.line(r1));
}

#[test]
fn a_failed_record_read_poisons_even_on_clean_streams() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let evidence = Evidence {
        record: RecordRead::Failed(AclCode::RtParamInvalid),
        device: Some(DeviceVerdict::Clean),
        ..Evidence::PUBLISHED_OK
    };
    h.complete_with(r1, evidence);
    let cause = failed(h.verdict(r1));
    assert_eq!(cause.class(), Class::Poison);
    assert_eq!(cause.stage(), Some(Stage::RecordRead));
}

#[test]
fn a_completion_without_the_device_verdict_its_evidence_needs_poisons() {
    let mut h = Harness::a2a3();
    let r1 = h.run();
    let evidence = Evidence { record: NEVER, ..Evidence::PUBLISHED_OK };
    h.complete_with(r1, evidence);
    assert_eq!(failed(h.verdict(r1)).class(), Class::Poison);
}

#[test]
fn the_stream_sync_channel_is_ok_only_on_a_clean_synchronize_and_a_clean_header() {
    let profile = Profile::a2a3().with_stream_sync();
    assert_eq!(profile.launch_depth().get(), 1);
    assert_eq!(profile.verdict(), VerdictChannel::StreamSync);
    let mut h = Harness::new(profile);
    let r1 = h.run();
    h.complete_with(r1, Evidence::SYNCHRONIZED_CLEAN);
    assert_eq!(h.verdict(r1), Some(Verdict::Ok));
    // A published ok record proves nothing on this channel: its synchronize decides.
    h.fault(Fault::Latch(2, RuntimeCode::InvalidArgs));
    let r2 = h.run();
    h.complete_with(r2, Evidence::SYNCHRONIZED_CLEAN);
    assert!(matches!(
        failed(h.verdict(r2)).failure,
        Failure::Latched(l) if l.code == RuntimeCode::InvalidArgs
    ));
    let r3 = h.run();
    h.complete_with(r3, Evidence { device: None, ..Evidence::SYNCHRONIZED_CLEAN });
    assert_eq!(failed(h.verdict(r3)).class(), Class::Poison);
}

#[test]
fn no_path_reports_ok_without_a_published_ok_record() {
    let records = [
        NEVER,
        RecordRead::Read(Record::NeverPublished { stamp: 41 }),
        RecordRead::Read(Record::Malformed(RecordDefect::ZeroEpoch)),
        RecordRead::Read(Record::Malformed(RecordDefect::PayloadTooLong { bytes: 300 })),
        RecordRead::Read(Record::Error {
            code: RuntimeCode::Unknown(77),
            source: RecordSource::Shutdown,
            payload_len: 0,
        }),
        RecordRead::Failed(AclCode::RtParamInvalid),
        RecordRead::NotRead,
        RecordRead::Read(Record::Ok),
    ];
    let devices =
        [None, Some(DeviceVerdict::Clean), Some(DeviceVerdict::Fault(AclCode::RtAicoreTimeout))];
    for record in records {
        for device in devices {
            let mut h = Harness::a2a3();
            let r1 = h.run();
            let evidence = Evidence {
                channel: VerdictChannel::Record,
                boundary: Boundary::Complete,
                record,
                device,
            };
            h.complete_with(r1, evidence);
            let ok = h.verdict(r1) == Some(Verdict::Ok);
            assert_eq!(
                ok,
                record == RecordRead::Read(Record::Ok),
                "{evidence} gave {:?}",
                h.verdict(r1)
            );
        }
    }
}

#[test]
fn a_run_only_failure_on_a_slot_leaves_its_later_runs_ok() {
    // The header is cleared at every launch's arm and the record counts only for its own
    // epoch, so a run-only failure on slot 0 leaves every later run of that slot Ok.
    let mut h = Harness::a2a3();
    let mut verdicts = Vec::new();
    for i in 1..=6_u64 {
        if i == 1 {
            h.fault(Fault::Latch(i, RuntimeCode::ScopeDeadlock));
        }
        let run = h.run();
        if i == 1 {
            h.complete_with(run, HEADER_DECIDES);
        } else {
            h.complete(run);
        }
        verdicts.push((run, h.verdict(run)));
    }
    assert!(matches!(verdicts[0].1, Some(Verdict::Failed { .. })));
    for (run, verdict) in &verdicts[1..] {
        assert_eq!(*verdict, Some(Verdict::Ok), "{run}");
    }
    assert_eq!(verdicts[0].0, RunId(1));
}
