//! `Display` for effects and events (feature `testkit`) prints the trace format that
//! backend-sim's text trace uses, byte for byte: one case per variant.

use core::num::NonZeroU64;

use lane_core::status_latch::{
    AclCode, Boundary, DeviceVerdict, Evidence, HeaderLayout, Record, RecordRead, Status,
    VerdictChannel,
};
use lane_core::stream_pair::{DestroyMode, Role, StreamHandle};
use lane_core::{
    CodeRef, DeviceTiming, Effect, Event, FinaliseFailure, Generation, LaunchStep, Lease, Peers,
    PublicationId, RunId, SlotId, Timestamp,
};

const RUN: RunId = RunId(7);
const LEASE: Lease = Lease { slot: SlotId(1), generation: Generation(NonZeroU64::MIN) };

fn code() -> AclCode {
    AclCode::from_raw(507_015).expect("non-zero")
}

fn layout() -> HeaderLayout {
    lane_core::Profile::a2a3().header()
}

#[test]
fn every_effect_prints_its_trace_line() {
    let cases = [
        (
            Effect::PrepareRun { run: RUN, lease: LEASE, diagnostics: true },
            "PrepareRun run 7 (slot 1 gen 1) diagnostics",
        ),
        (
            Effect::PrepareRun { run: RUN, lease: LEASE, diagnostics: false },
            "PrepareRun run 7 (slot 1 gen 1)",
        ),
        (Effect::CreateStream { role: Role::Aicpu }, "CreateStream Aicpu"),
        (
            Effect::DestroyStream {
                role: Role::Aicore,
                handle: StreamHandle(12),
                mode: DestroyMode::Healthy,
            },
            "DestroyStream Aicore h12",
        ),
        (
            Effect::DestroyStream {
                role: Role::Aicore,
                handle: StreamHandle(12),
                mode: DestroyMode::Force,
            },
            "DestroyStream Aicore h12 force",
        ),
        (
            Effect::LaunchRun {
                run: RUN,
                lease: LEASE,
                aicpu: StreamHandle(3),
                aicore: StreamHandle(4),
                after: Peers::new(),
                epoch: None,
            },
            "LaunchRun run 7 (slot 1 gen 1) aicpu h3 aicore h4",
        ),
        (
            Effect::LaunchRun {
                run: RUN,
                lease: LEASE,
                aicpu: StreamHandle(3),
                aicore: StreamHandle(4),
                after: Peers::new(),
                epoch: Some(41),
            },
            "LaunchRun run 7 (slot 1 gen 1) aicpu h3 aicore h4 epoch 41",
        ),
        (
            Effect::LaunchRun {
                run: RUN,
                lease: LEASE,
                aicpu: StreamHandle(3),
                aicore: StreamHandle(4),
                after: [Lease {
                    slot: SlotId(0),
                    generation: Generation(NonZeroU64::new(6).unwrap()),
                }]
                .into_iter()
                .collect(),
                epoch: None,
            },
            "LaunchRun run 7 (slot 1 gen 1) aicpu h3 aicore h4 after (slot 0 gen 6)",
        ),
        (
            Effect::LaunchRun {
                run: RUN,
                lease: LEASE,
                aicpu: StreamHandle(3),
                aicore: StreamHandle(4),
                after: [6, 5]
                    .map(|generation| Lease {
                        slot: SlotId(0),
                        generation: Generation(NonZeroU64::new(generation).unwrap()),
                    })
                    .into_iter()
                    .collect(),
                epoch: None,
            },
            "LaunchRun run 7 (slot 1 gen 1) aicpu h3 aicore h4 after (slot 0 gen 6, slot 0 gen 5)",
        ),
        (
            Effect::ReadRecords {
                run: RUN,
                lease: LEASE,
                behind: [(RunId(8), LEASE), (RunId(9), LEASE)].into_iter().collect(),
            },
            "ReadRecords run 7 behind run 8 run 9",
        ),
        (
            Effect::AwaitCompletion {
                run: RUN,
                lease: LEASE,
                deadline: Timestamp(12_345_678),
                sync_bound_ns: 50_000_000_000,
                channel: VerdictChannel::Record,
                unfenced: None,
            },
            "AwaitCompletion run 7 (deadline 12345.678 us)",
        ),
        (
            Effect::AwaitCompletion {
                run: RUN,
                lease: LEASE,
                deadline: Timestamp(12_345_678),
                sync_bound_ns: 50_000_000_000,
                channel: VerdictChannel::Record,
                unfenced: Some(AclCode::RtParamInvalid),
            },
            "AwaitCompletion run 7 (deadline 12345.678 us) unfenced (107000)",
        ),
        (Effect::ReadStatus { run: RUN, lease: LEASE, layout: layout() }, "ReadStatus run 7"),
        (
            Effect::FinaliseRun {
                run: RUN,
                lease: LEASE,
                copy_back: true,
                verdict: lane_core::Verdict::Ok,
            },
            "FinaliseRun run 7 copy-back",
        ),
        (
            Effect::FinaliseRun {
                run: RUN,
                lease: LEASE,
                copy_back: false,
                verdict: lane_core::Verdict::Cancelled,
            },
            "FinaliseRun run 7",
        ),
        (
            Effect::UploadCode { publication: PublicationId(9), code: CodeRef(42) },
            "UploadCode publication 9 code 42",
        ),
        (
            Effect::DrainDevice { attempt: 2, timeout_ns: 5_000_000_000 },
            "DrainDevice attempt 2 (timeout 5000 ms)",
        ),
        (Effect::ForceReset { attempt: 1 }, "ForceReset attempt 1"),
        (Effect::Probe { attempt: 3 }, "Probe attempt 3"),
    ];
    for (effect, want) in cases {
        assert_eq!(effect.to_string(), want, "{effect:?}");
    }
}

#[test]
fn every_event_prints_its_trace_line() {
    let c = code();
    let acl = format!("{} {}", c.raw(), c.name());
    let status = Status::clean(layout());
    let cases = [
        (Event::Prepared { run: RUN, lease: LEASE }, "Prepared run 7".to_owned()),
        (
            Event::PrepareIncompatible { run: RUN, lease: LEASE },
            "PrepareIncompatible run 7".to_owned(),
        ),
        (
            Event::PrepareFailed { run: RUN, lease: LEASE, code: c.into() },
            format!("PrepareFailed run 7 {acl}"),
        ),
        (
            Event::StreamCreated { role: Role::Aicpu, handle: StreamHandle(5) },
            "StreamCreated Aicpu h5".to_owned(),
        ),
        (
            Event::StreamCreateFailed { role: Role::Aicore, code: c },
            format!("StreamCreateFailed Aicore {acl}"),
        ),
        (
            Event::StreamDestroyed { role: Role::Aicore, handle: StreamHandle(6) },
            "StreamDestroyed Aicore h6".to_owned(),
        ),
        (
            Event::StreamDestroyFailed { role: Role::Aicpu, handle: StreamHandle(6), code: c },
            format!("StreamDestroyFailed Aicpu h6 {acl}"),
        ),
        (Event::Launched { run: RUN, lease: LEASE }, "Launched run 7".to_owned()),
        (Event::LaunchDeclined { run: RUN, lease: LEASE }, "LaunchDeclined run 7".to_owned()),
        (
            Event::LaunchFailed { run: RUN, lease: LEASE, step: LaunchStep::Aicpu, code: c.into() },
            format!("LaunchFailed run 7 at Aicpu {acl}"),
        ),
        (
            Event::Completed { run: RUN, lease: LEASE, evidence: Evidence::PUBLISHED_OK },
            "Completed run 7".to_owned(),
        ),
        (
            Event::Completed {
                run: RUN,
                lease: LEASE,
                evidence: Evidence {
                    channel: VerdictChannel::Record,
                    boundary: Boundary::Complete,
                    record: RecordRead::Read(Record::NeverPublished { stamp: 0 }),
                    device: Some(DeviceVerdict::Fault(AclCode::RtAicpuException)),
                },
            },
            "Completed run 7 channel=record boundary=complete record=never published device=507018"
                .to_owned(),
        ),
        (
            Event::CompletionFailed { run: RUN, lease: LEASE, code: c },
            format!("CompletionFailed run 7 {acl}"),
        ),
        (
            Event::StatusRead {
                run: RUN,
                lease: LEASE,
                status,
                timing: DeviceTiming { start_ns: 1_500, end_ns: 2_000_001, ..Default::default() },
            },
            format!("StatusRead run 7 latch {} device 1.500..2000.001 us", status.runtime_status()),
        ),
        (
            Event::StatusReadFailed { run: RUN, lease: LEASE, code: c },
            format!("StatusReadFailed run 7 {acl}"),
        ),
        (Event::Finalised { run: RUN, lease: LEASE }, "Finalised run 7".to_owned()),
        (
            Event::FinaliseFailed { run: RUN, lease: LEASE, failure: FinaliseFailure::Validation },
            "FinaliseFailed run 7 Validation".to_owned(),
        ),
        (Event::Uploaded { publication: PublicationId(9) }, "Uploaded publication 9".to_owned()),
        (
            Event::UploadFailed { publication: PublicationId(9), code: c.into() },
            format!("UploadFailed publication 9 {acl}"),
        ),
        (Event::DeviceDrained { attempt: 1 }, "DeviceDrained attempt 1".to_owned()),
        (Event::ResetDone { attempt: 2 }, "ResetDone attempt 2".to_owned()),
        (Event::ResetFailed { attempt: 2, code: c }, format!("ResetFailed attempt 2 {acl}")),
        (Event::ProbePassed { attempt: 3 }, "ProbePassed attempt 3".to_owned()),
        (Event::ProbeFailed { attempt: 3, code: c }, format!("ProbeFailed attempt 3 {acl}")),
    ];
    for (event, want) in cases {
        assert_eq!(event.to_string(), want, "{event:?}");
    }
}

#[test]
fn timing_sources_and_overlap_proofs_have_their_report_names() {
    use lane_core::{Overlap, TimingSource};
    assert_eq!(TimingSource::TimingBuffer.name(), "timing buffer");
    assert_eq!(TimingSource::EventTimestamps.name(), "event timestamps");
    assert_eq!(Overlap::Unknown.name(), "unknown");
    assert_eq!(Overlap::NotQueued.name(), "not queued");
    assert_eq!(Overlap::Proven.name(), "proven");
    assert_eq!(Overlap::NotProven.name(), "not proven");
}
