//! The failure lines of the result record's failures, word for word: the lane's logs and
//! the runtime team's greps read these.

use status_latch::{
    AclCode, Failure, RecordDefect, RecordSource, RuntimeCode, Stage, classify, failure_line,
};

#[test]
fn a_record_error_names_its_source_code_class_and_hint() {
    let line = failure_line(
        4,
        &Failure::Record { code: RuntimeCode::InvalidArgs, source: RecordSource::Header },
    )
    .to_string();
    assert_eq!(
        line,
        format!(
            "run 4 failed: result record error from the status header: completion_code=5 \
             INVALID_ARGS (orchestration API misuse); class=run-only rule=latched-change-and-rerun; \
             hint: {}",
            RuntimeCode::InvalidArgs.hint()
        )
    );
}

#[test]
fn a_record_error_prints_the_code_as_read_even_when_unknown() {
    for source in RecordSource::ALL {
        let line = failure_line(5, &Failure::Record { code: RuntimeCode::Unknown(-9), source })
            .to_string();
        assert!(
            line.starts_with(&format!(
                "run 5 failed: result record error from the {source}: completion_code=-9 UNKNOWN"
            )),
            "{line}"
        );
        assert!(line.contains("class=poison rule=latched-unknown"), "{line}");
    }
}

#[test]
fn no_record_says_the_run_did_not_complete_its_normal_path() {
    assert_eq!(
        failure_line(6, &Failure::NoRecord).to_string(),
        format!(
            "run 6 failed: no result record: the run did not complete its normal path (its boundary \
             completed and both streams synchronized clean); class=run-only rule=no-result-record; \
             hint: {}",
            Failure::NoRecord.hint()
        )
    );
}

#[test]
fn a_malformed_record_says_what_was_read() {
    let cases = [
        (RecordDefect::ZeroEpoch, "the host asked for epoch 0, which no run has"),
        (RecordDefect::Short { len: 10 }, "only 10 of 280 bytes were read"),
        (RecordDefect::PayloadTooLong { bytes: 257 }, "payload_bytes 257 is over 256"),
        (RecordDefect::NoVerdict, "published with verdict 0 (none)"),
        (RecordDefect::UnknownVerdict { raw: 3 }, "unknown verdict 3"),
        (
            RecordDefect::OkWithDetail { code: -9, source: 2, payload: 4 },
            "verdict ok with code -9, source 2, 4 payload bytes",
        ),
        (RecordDefect::ErrorWithoutCode, "verdict error with code 0"),
        (RecordDefect::UnknownSource { raw: 4 }, "verdict error with unknown source 4"),
    ];
    for (defect, said) in cases {
        let failure = Failure::MalformedRecord(defect);
        assert_eq!(
            failure_line(7, &failure).to_string(),
            format!(
                "run 7 failed: malformed result record ({said}); class=run-only \
                 rule=malformed-result-record; hint: {}",
                failure.hint()
            )
        );
    }
}

#[test]
fn record_read_and_device_verdict_failures_name_their_stage() {
    for (stage, name) in [(Stage::RecordRead, "record read"), (Stage::StreamSync, "device verdict")]
    {
        for code in [AclCode::RtParamInvalid, AclCode::RtStreamSyncTimeout] {
            let failure = Failure::Acl { stage, code };
            let c = classify(&failure);
            let line = failure_line(8, &failure).to_string();
            assert!(
                line.starts_with(&format!(
                    "run 8 failed at {name}: ACL {} {}",
                    code.raw(),
                    code.name()
                )),
                "{line}"
            );
            assert!(line.contains(&format!("class={} rule={}", c.class, c.rule)));
            assert!(!line.contains('\n'));
        }
    }
}

#[test]
fn a_returned_latch_code_names_its_stage_and_the_code_as_returned_never_as_an_acl_code() {
    let line = failure_line(
        6,
        &Failure::Returned { stage: Stage::Prepare, code: RuntimeCode::DepPoolOverflow },
    )
    .to_string();
    assert_eq!(
        line,
        format!(
            "run 6 failed at prepare: runtime latch code returned runtime_status=-4 \
             DEP_POOL_OVERFLOW (a task's fan-in exceeded the dependency pool); class=run-only \
             rule=latched-change-and-rerun; hint: {}",
            RuntimeCode::DepPoolOverflow.hint()
        )
    );
    let unknown = failure_line(
        7,
        &Failure::Returned { stage: Stage::CopyBack, code: RuntimeCode::Unknown(12) },
    )
    .to_string();
    assert!(
        unknown.starts_with(
            "run 7 failed at copy-back: runtime latch code returned runtime_status=-12 UNKNOWN ("
        ),
        "{unknown}"
    );
    assert!(unknown.contains("class=poison rule=latched-unknown"), "{unknown}");
    for line in [line, unknown] {
        assert!(!line.contains("ACL"), "never read as an ACL code: {line}");
    }
}
