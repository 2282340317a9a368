//! The verdict rule (SPEC L-8), exhaustively over a small domain of evidence: every row is
//! reachable, a run is `Ok` only on positive evidence, a record error decides, the
//! stream-synchronize channel never reads the record, and the rows keep their order.

use status_latch::{
    AclCode, Boundary, Class, DeviceVerdict, Evidence, Failure, HeaderRead, Judgement, Latch,
    LatchSource, Record, RecordDefect, RecordRead, RecordSource, RuntimeCode, Stage,
    VerdictChannel, VerdictRule, classify, judge, needs_device_verdict,
};

/// ACL codes that matter to the rule: a parameter error, a query result, a host timeout,
/// device faults, and an unnamed value.
const ACL: [AclCode; 6] = [
    AclCode::RtParamInvalid,
    AclCode::RtStreamNotComplete,
    AclCode::RtEventSyncTimeout,
    AclCode::RtStreamSyncTimeout,
    AclCode::RtAicpuException,
    AclCode::Unknown(123_456),
];

fn boundaries() -> Vec<Boundary> {
    let mut out = vec![Boundary::Complete];
    for code in ACL {
        out.push(Boundary::Failed(code));
        out.push(Boundary::Unfenced(code));
    }
    out
}

/// Every record shape: ok, errors from each source (run-only, poison and unknown codes),
/// never published (fresh and stale), and one of each defect.
fn records() -> Vec<Record> {
    let mut out =
        vec![Record::Ok, Record::NeverPublished { stamp: 0 }, Record::NeverPublished { stamp: 3 }];
    for source in RecordSource::ALL {
        for code in
            [RuntimeCode::ScopeDeadlock, RuntimeCode::SchedulerTimeout, RuntimeCode::Unknown(-9)]
        {
            out.push(Record::Error { code, source, payload_len: 64 });
        }
    }
    out.extend(
        [
            RecordDefect::ZeroEpoch,
            RecordDefect::Short { len: 10 },
            RecordDefect::PayloadTooLong { bytes: 257 },
            RecordDefect::NoVerdict,
            RecordDefect::UnknownVerdict { raw: 3 },
            RecordDefect::OkWithDetail { code: -9, source: 0, payload: 0 },
            RecordDefect::ErrorWithoutCode,
            RecordDefect::UnknownSource { raw: 4 },
        ]
        .map(Record::Malformed),
    );
    out
}

fn record_reads() -> Vec<RecordRead> {
    let mut out: Vec<RecordRead> = records().into_iter().map(RecordRead::Read).collect();
    out.extend(ACL.map(RecordRead::Failed));
    out.push(RecordRead::NotRead);
    out
}

fn devices() -> Vec<Option<DeviceVerdict>> {
    let mut out = vec![None, Some(DeviceVerdict::Clean)];
    out.extend(ACL.map(|code| Some(DeviceVerdict::Fault(code))));
    let sticky = AclCode::RtAicpuException;
    let aicore = AclCode::RtAicoreException;
    out.extend([
        Some(DeviceVerdict::Returned { aicpu: Some(sticky), aicore: None }),
        Some(DeviceVerdict::Returned { aicpu: None, aicore: Some(aicore) }),
        Some(DeviceVerdict::Covering { code: aicore, behind: 2 }),
        Some(DeviceVerdict::LeftBy { code: sticky, left_by: 4 }),
    ]);
    out
}

fn headers() -> Vec<HeaderRead> {
    let mut out = vec![HeaderRead::Unread, HeaderRead::Clean];
    for source in [LatchSource::Orch, LatchSource::Sched] {
        for code in [RuntimeCode::InvalidArgs, RuntimeCode::TensorWaitTimeout] {
            out.push(HeaderRead::Latched(Latch { source, code }));
        }
    }
    out
}

/// Every combination of the domain.
fn domain() -> Vec<(Evidence, HeaderRead)> {
    let mut out = Vec::new();
    for channel in VerdictChannel::ALL {
        for boundary in boundaries() {
            for record in record_reads() {
                for device in devices() {
                    for header in headers() {
                        let evidence = Evidence { channel, boundary, record, device };
                        out.push((evidence, header));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_row_fires_for_some_input() {
    let domain = domain();
    for rule in VerdictRule::ALL {
        let found = domain.iter().find(|(e, h)| judge(e, *h).0 == rule);
        assert!(found.is_some(), "no input fires {rule}");
    }
}

#[test]
fn the_rows_are_listed_in_the_order_judge_tries_them_with_unique_names() {
    let mut sorted = VerdictRule::ALL;
    sorted.sort_unstable();
    assert_eq!(sorted, VerdictRule::ALL, "ALL is in declaration order");
    let mut names: Vec<&str> = VerdictRule::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), VerdictRule::ALL.len());
    for rule in VerdictRule::ALL {
        let (name, evidence, conclusion) = rule.row();
        assert_eq!(name, rule.to_string());
        assert!(!evidence.is_empty() && !conclusion.is_empty(), "{rule}");
    }
}

/// Order: a row never fires on an input an earlier row matches. Checked by the rows'
/// defining property, each against the rows before it.
#[test]
fn a_row_fires_only_when_no_earlier_row_matches() {
    for (evidence, header) in domain() {
        let (rule, _) = judge(&evidence, header);
        let complete = evidence.boundary == Boundary::Complete;
        let record_channel = evidence.channel == VerdictChannel::Record;
        let record_decides = record_channel
            && matches!(evidence.record, RecordRead::Read(Record::Ok | Record::Error { .. }));
        let want = match (evidence.boundary, evidence.device, header) {
            (Boundary::Unfenced(_), ..) => VerdictRule::Unfenced,
            (Boundary::Failed(_), ..) => VerdictRule::BoundaryFailed,
            _ if record_decides => match evidence.record {
                RecordRead::Read(Record::Ok) => VerdictRule::RecordOk,
                _ => VerdictRule::RecordError,
            },
            (_, None, _) => VerdictRule::AwaitDeviceVerdict,
            (_, Some(DeviceVerdict::Returned { .. }), _) => VerdictRule::AttributeCode,
            (_, Some(DeviceVerdict::Fault(_) | DeviceVerdict::Covering { .. }), _) => {
                VerdictRule::DeviceFault
            }
            (_, Some(DeviceVerdict::LeftBy { .. }), _) if !record_channel => {
                VerdictRule::DeviceFault
            }
            _ if record_channel && matches!(evidence.record, RecordRead::Failed(_)) => {
                VerdictRule::RecordReadFailed
            }
            (.., HeaderRead::Unread) => VerdictRule::AwaitHeader,
            (.., HeaderRead::Latched(_)) => VerdictRule::HeaderLatched,
            _ if !record_channel => VerdictRule::SynchronizedClean,
            _ if matches!(evidence.record, RecordRead::Read(Record::Malformed(_))) => {
                VerdictRule::MalformedRecord
            }
            (_, Some(DeviceVerdict::LeftBy { .. }), _) => VerdictRule::NoRecordBesideCode,
            _ => VerdictRule::NoRecord,
        };
        assert!(complete || matches!(rule, VerdictRule::Unfenced | VerdictRule::BoundaryFailed));
        assert_eq!(rule, want, "{evidence} header={header:?}");
    }
}

#[test]
fn no_input_is_ok_on_the_record_channel_unless_its_record_is_published_ok() {
    for (evidence, header) in domain() {
        if evidence.channel != VerdictChannel::Record {
            continue;
        }
        if judge(&evidence, header).1 == Judgement::Ok {
            assert_eq!(
                (evidence.boundary, evidence.record),
                (Boundary::Complete, RecordRead::Read(Record::Ok)),
                "{evidence} header={header:?}"
            );
        }
    }
}

#[test]
fn a_completed_run_with_its_own_ok_record_is_ok_without_a_synchronize() {
    for device in devices() {
        for header in headers() {
            let evidence = Evidence { device, ..Evidence::PUBLISHED_OK };
            assert_eq!(judge(&evidence, header), (VerdictRule::RecordOk, Judgement::Ok));
        }
    }
    assert!(!needs_device_verdict(&Evidence::PUBLISHED_OK));
}

#[test]
fn the_stream_sync_channel_is_ok_only_on_a_clean_device_verdict_and_a_clean_header() {
    for (evidence, header) in domain() {
        if evidence.channel != VerdictChannel::StreamSync {
            continue;
        }
        if judge(&evidence, header).1 == Judgement::Ok {
            assert_eq!(
                (evidence.boundary, evidence.device, header),
                (Boundary::Complete, Some(DeviceVerdict::Clean), HeaderRead::Clean),
                "{evidence}"
            );
        }
    }
    assert_eq!(
        judge(&Evidence::SYNCHRONIZED_CLEAN, HeaderRead::Clean),
        (VerdictRule::SynchronizedClean, Judgement::Ok)
    );
}

#[test]
fn a_record_error_decides_whatever_the_device_verdict_and_the_header() {
    for record in records() {
        let Record::Error { code, source, .. } = record else {
            continue;
        };
        for device in devices() {
            for header in headers() {
                let evidence = Evidence {
                    channel: VerdictChannel::Record,
                    boundary: Boundary::Complete,
                    record: RecordRead::Read(record),
                    device,
                };
                assert_eq!(
                    judge(&evidence, header),
                    (VerdictRule::RecordError, Judgement::Fail(Failure::Record { code, source })),
                    "{evidence} header={header:?}"
                );
                assert!(!needs_device_verdict(&evidence));
            }
        }
    }
}

#[test]
fn the_stream_sync_channel_never_reads_the_record() {
    for boundary in boundaries() {
        for device in devices() {
            for header in headers() {
                let at = |record| {
                    judge(
                        &Evidence { channel: VerdictChannel::StreamSync, boundary, record, device },
                        header,
                    )
                };
                let want = at(RecordRead::NotRead);
                for record in record_reads() {
                    assert_eq!(at(record), want, "record {record:?}");
                }
            }
        }
    }
}

#[test]
fn a_failed_boundary_poisons_whatever_else_was_seen() {
    for (evidence, header) in domain() {
        let Boundary::Failed(code) = evidence.boundary else {
            continue;
        };
        let (_, Judgement::Fail(failure)) = judge(&evidence, header) else {
            panic!("{evidence}: not a failure");
        };
        assert_eq!(failure.stage(), Some(Stage::EventWait), "{evidence}");
        assert_eq!(failure.code(), Some(code.raw()), "{evidence}");
        assert_eq!(classify(&failure).class, Class::Poison, "{evidence}");
    }
}

/// L-8, §5.3: an unfenced run's own events cannot decide it, so it is synchronized first,
/// whatever its record says; then it poisons with the device's code, or with the fence
/// call's code when both streams are clean.
#[test]
fn an_unfenced_run_takes_the_device_verdict_and_poisons_with_its_code() {
    for (evidence, header) in domain() {
        let Boundary::Unfenced(call) = evidence.boundary else {
            continue;
        };
        let (rule, judgement) = judge(&evidence, header);
        assert_eq!(rule, VerdictRule::Unfenced, "{evidence}");
        let (stage, code) = match evidence.device {
            None => {
                assert_eq!(judgement, Judgement::NeedsDeviceVerdict, "{evidence}");
                assert!(needs_device_verdict(&evidence), "{evidence}");
                continue;
            }
            Some(DeviceVerdict::Returned { .. }) => {
                assert_eq!(judgement, Judgement::NeedsAttribution, "{evidence}");
                continue;
            }
            Some(DeviceVerdict::Fault(device) | DeviceVerdict::Covering { code: device, .. }) => {
                (Stage::StreamSync, device)
            }
            // Another run's code: the run's own fence call is what failed.
            Some(DeviceVerdict::Clean | DeviceVerdict::LeftBy { .. }) => (Stage::EventRecord, call),
        };
        let Judgement::Fail(failure) = judgement else {
            panic!("{evidence}: not a failure");
        };
        assert_eq!(failure.stage(), Some(stage), "{evidence}");
        assert_eq!(failure.code(), Some(code.raw()), "{evidence}");
        assert_eq!(classify(&failure).class, Class::Poison, "{evidence}");
    }
}

#[test]
fn a_device_code_fails_at_the_device_verdict_and_poisons() {
    for (evidence, header) in domain() {
        if let (VerdictRule::DeviceFault, judgement) = judge(&evidence, header) {
            let failure = match evidence.device {
                Some(DeviceVerdict::Fault(code)) => Failure::Acl { stage: Stage::StreamSync, code },
                Some(DeviceVerdict::Covering { code, behind }) => {
                    Failure::Covering { code, behind }
                }
                // A runtime without records has no run's error to explain a code with.
                Some(DeviceVerdict::LeftBy { code, .. })
                    if evidence.channel == VerdictChannel::StreamSync =>
                {
                    Failure::Acl { stage: Stage::StreamSync, code }
                }
                _ => panic!("{evidence}: device-fault without a code charged to the run"),
            };
            assert_eq!(judgement, Judgement::Fail(failure));
            assert_eq!(failure.stage(), Some(Stage::StreamSync), "{evidence}");
            assert_eq!(classify(&failure).class, Class::Poison, "{evidence}");
        }
    }
}

#[test]
fn a_clean_synchronize_on_an_unpublished_or_malformed_record_fails_the_run_only() {
    for record in record_reads() {
        let evidence = Evidence {
            channel: VerdictChannel::Record,
            boundary: Boundary::Complete,
            record,
            device: Some(DeviceVerdict::Clean),
        };
        let (rule, judgement) = judge(&evidence, HeaderRead::Clean);
        let want = match record {
            RecordRead::Read(Record::Ok) => VerdictRule::RecordOk,
            RecordRead::Read(Record::Error { .. }) => VerdictRule::RecordError,
            RecordRead::Read(Record::Malformed(_)) => VerdictRule::MalformedRecord,
            RecordRead::Read(Record::NeverPublished { .. }) | RecordRead::NotRead => {
                VerdictRule::NoRecord
            }
            RecordRead::Failed(_) => VerdictRule::RecordReadFailed,
        };
        assert_eq!(rule, want, "{evidence}");
        if matches!(want, VerdictRule::NoRecord | VerdictRule::MalformedRecord) {
            let Judgement::Fail(failure) = judgement else {
                panic!("{evidence}: {judgement:?}");
            };
            assert_eq!(classify(&failure).class, Class::RunOnly, "{evidence}");
        }
        if want == VerdictRule::RecordReadFailed {
            let Judgement::Fail(failure) = judgement else {
                panic!("{evidence}: {judgement:?}");
            };
            assert_eq!(failure.stage(), Some(Stage::RecordRead));
            assert_eq!(classify(&failure).class, Class::Poison, "{evidence}");
        }
    }
}

#[test]
fn the_header_is_asked_for_only_after_a_clean_device_verdict() {
    for (evidence, header) in domain() {
        if judge(&evidence, header).1 == Judgement::NeedsHeader {
            // Clean, or another run's code (L-8a), which is judged as clean.
            assert!(
                matches!(
                    evidence.device,
                    Some(DeviceVerdict::Clean | DeviceVerdict::LeftBy { .. })
                ),
                "{evidence}"
            );
            assert_eq!(header, HeaderRead::Unread);
        }
    }
}

#[test]
fn needs_device_verdict_is_exactly_judge_asking_for_it() {
    for (evidence, header) in domain() {
        let asks = judge(&evidence, header).1 == Judgement::NeedsDeviceVerdict;
        if asks {
            assert!(needs_device_verdict(&evidence), "{evidence}");
            assert_eq!(evidence.device, None);
        }
        let asks_unread = judge(&evidence, HeaderRead::Unread).1 == Judgement::NeedsDeviceVerdict;
        assert_eq!(needs_device_verdict(&evidence), asks_unread, "{evidence}");
    }
}

#[test]
fn every_judgement_is_final_once_all_evidence_is_in() {
    // With a device verdict made and attributed and the header read, judge never asks for
    // more.
    for (evidence, header) in domain() {
        let attributed = !matches!(evidence.device, None | Some(DeviceVerdict::Returned { .. }));
        if attributed && header != HeaderRead::Unread {
            let judgement = judge(&evidence, header).1;
            assert!(
                matches!(judgement, Judgement::Ok | Judgement::Fail(_)),
                "{evidence} header={header:?}: {judgement:?}"
            );
        }
    }
}

#[test]
fn a_latched_header_on_a_clean_unrecorded_run_is_that_latch() {
    let latch = Latch { source: LatchSource::Sched, code: RuntimeCode::TensorWaitTimeout };
    for channel in VerdictChannel::ALL {
        let evidence = Evidence {
            channel,
            boundary: Boundary::Complete,
            record: RecordRead::Read(Record::NeverPublished { stamp: 0 }),
            device: Some(DeviceVerdict::Clean),
        };
        assert_eq!(
            judge(&evidence, HeaderRead::Latched(latch)),
            (VerdictRule::HeaderLatched, Judgement::Fail(Failure::Latched(latch)))
        );
    }
}

#[test]
fn evidence_displays_every_part() {
    let evidence = Evidence {
        channel: VerdictChannel::Record,
        boundary: Boundary::Unfenced(AclCode::RtParamInvalid),
        record: RecordRead::Failed(AclCode::RtStreamNotComplete),
        device: Some(DeviceVerdict::Fault(AclCode::RtAicpuException)),
    };
    assert_eq!(
        evidence.to_string(),
        "channel=record boundary=unfenced(107000) record=read-failed(507004) device=507018"
    );
    assert_eq!(
        Evidence::SYNCHRONIZED_CLEAN.to_string(),
        "channel=stream-sync boundary=complete record=not-read device=clean"
    );
}

/// L-8a: a code nobody has attributed is attributed before anything after the record rows
/// decides, and a code another run left fails an unpublished run run-only, naming that run
/// (it convicts no one), exactly where a clean device verdict would fail it `no-record`.
#[test]
fn a_returned_code_is_attributed_first_and_another_runs_code_convicts_no_one() {
    for (evidence, header) in domain() {
        let (rule, judgement) = judge(&evidence, header);
        if let Some(DeviceVerdict::Returned { .. }) = evidence.device {
            assert!(
                matches!(
                    rule,
                    VerdictRule::Unfenced
                        | VerdictRule::BoundaryFailed
                        | VerdictRule::RecordError
                        | VerdictRule::RecordOk
                        | VerdictRule::AttributeCode
                ),
                "{evidence}: {rule}"
            );
        }
        if let Some(DeviceVerdict::LeftBy { code, left_by }) = evidence.device {
            let clean = Evidence { device: Some(DeviceVerdict::Clean), ..evidence };
            let (clean_rule, clean_judgement) = judge(&clean, header);
            if evidence.channel == VerdictChannel::StreamSync {
                continue;
            }
            match clean_rule {
                VerdictRule::NoRecord => {
                    assert_eq!(rule, VerdictRule::NoRecordBesideCode, "{evidence}");
                    let Judgement::Fail(failure) = judgement else {
                        panic!("{evidence}: not a failure");
                    };
                    assert_eq!(failure, Failure::NoRecordBesideCode { code, left_by });
                    assert_eq!(classify(&failure).class, Class::RunOnly, "{evidence}");
                    assert_eq!(failure.code(), None, "the code is not this run's");
                    let line = status_latch::failure_line(5, &failure).to_string();
                    assert!(line.contains("no result record"), "{line}");
                    assert!(line.contains(&format!("run {left_by}'s")), "{line}");
                }
                other => {
                    assert_eq!((rule, judgement), (other, clean_judgement), "{evidence}");
                }
            }
        }
    }
}

#[test]
fn a_code_charged_with_runs_behind_says_they_may_share_the_cause() {
    let failure = Failure::Covering { code: AclCode::RtAicoreException, behind: 1 };
    let line = status_latch::failure_line(5, &failure).to_string();
    assert!(line.contains("at stream synchronize"), "{line}");
    assert!(line.contains("507015"), "{line}");
    assert!(line.contains("1 run queued behind this one, which may share the cause"), "{line}");
    assert_eq!(classify(&failure).class, Class::Poison);
    assert_eq!(
        classify(&failure).rule,
        classify(&Failure::Acl { stage: Stage::StreamSync, code: AclCode::RtAicoreException }).rule
    );
}

#[test]
fn a_device_verdicts_code_is_the_aicpu_streams_first_and_none_when_clean() {
    let [a, b] = [AclCode::from_raw(507_015), AclCode::from_raw(507_018)].map(Option::unwrap);
    assert_eq!(DeviceVerdict::Clean.code(), None);
    let both = DeviceVerdict::Returned { aicpu: Some(a), aicore: Some(b) };
    assert_eq!(both.code(), Some(a), "the AICPU stream's code comes first");
    let aicore_only = DeviceVerdict::Returned { aicpu: None, aicore: Some(b) };
    assert_eq!(aicore_only.code(), Some(b));
    assert_eq!(DeviceVerdict::Fault(b).code(), Some(b));
    assert_eq!(DeviceVerdict::Covering { code: a, behind: 1 }.code(), Some(a));
    assert_eq!(DeviceVerdict::LeftBy { code: b, left_by: 5 }.code(), Some(b));
}
