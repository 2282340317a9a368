//! The verdict rule (SPEC L-8): a run is `Ok` only on positive evidence, its own published
//! ok record (or, for a runtime without records, a clean device verdict and a clean header).
//!
//! On real ACL an event wait returns 0 for a run whose kernel faulted, hung to the op
//! timeout or returned a fatal status; only a bounded stream synchronize materializes the
//! code (device-truth §1). So completion is evidence, not the verdict. [`judge`] takes the
//! evidence gathered so far ([`Evidence`] and the header fallback, [`HeaderRead`]) and gives
//! the verdict, or says which evidence it still needs. Its rows ([`VerdictRule`]) are tried
//! in order, first match wins, and are rendered into `docs/status-codes.md`.
//!
//! Who gathers what: the completion waiter waits on the run's boundary, reads the record
//! right after it, and, when [`needs_device_verdict`] says so, makes the device verdict
//! (AICPU stream, then AICore, bounded by the run's deadline) before it answers; the lane
//! then reads the status header and timing and calls [`judge`] with the header.

use core::fmt;

use crate::codes::AclCode;
use crate::header::Latch;
use crate::policy::{Failure, Stage};
use crate::record::Record;

/// How a profile's runs get their verdict.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub enum VerdictChannel {
    /// The runtime publishes a result record per run: a published ok record is `Ok` with no
    /// stream synchronize; every other shape is synchronized. Runs may queue (depth two).
    #[default]
    Record,
    /// The runtime publishes no record: every run's streams are synchronized after its
    /// boundary, and a clean synchronize with a clean header is `Ok`. Depth one only (the
    /// synchronize would wait for a queued successor too).
    StreamSync,
}

impl VerdictChannel {
    /// Both, record first.
    pub const ALL: [Self; 2] = [Self::Record, Self::StreamSync];

    /// The name in tables and configs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::StreamSync => "stream-sync",
        }
    }
}

impl fmt::Display for VerdictChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the run's events prove.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Boundary {
    /// The run's boundary event completed: both of its kernels exited.
    Complete,
    /// The wait on the boundary failed with this code (a timeout, a host error).
    Failed(AclCode),
    /// A record or wait of the run's fence failed after a kernel was accepted: its own
    /// events cannot decide it (L-5).
    Unfenced(AclCode),
}

/// The result record's read.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RecordRead {
    /// Read and decoded for the run's epoch.
    Read(Record),
    /// The device-to-host copy failed with this code.
    Failed(AclCode),
    /// Not read: the profile's channel is the stream synchronize, or the boundary did not
    /// complete.
    NotRead,
}

/// The device verdict: what the bounded synchronize of the pair returned, and once the lane
/// has attributed a code (L-8a), whose it is.
///
/// A synchronize returns the first code its stream holds, whichever run left it, and waits
/// for every run queued on the pair (device-truth §1). So the waiter answers what each stream
/// returned ([`Returned`](Self::Returned)), and the lane charges the code by evidence
/// ([`crate::attribute`]): it is another run's ([`LeftBy`](Self::LeftBy)), or this run's
/// ([`Fault`](Self::Fault), [`Covering`](Self::Covering)).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DeviceVerdict {
    /// Both streams synchronized with 0.
    Clean,
    /// What the synchronize returned, not attributed yet: the AICPU stream's code and the
    /// AICore stream's, each `None` when that stream synchronized clean (the AICore stream is
    /// synchronized after an AICPU code too, unless that code was the synchronize's timeout).
    /// At least one is a code.
    Returned {
        /// The AICPU stream's code.
        aicpu: Option<AclCode>,
        /// The AICore stream's code.
        aicore: Option<AclCode>,
    },
    /// The code is this run's: the synchronize covered no run behind it, and no evidence
    /// explains the code (507046 on the synchronize's timeout).
    Fault(AclCode),
    /// The code is this run's, and the synchronize also covered `behind` runs queued behind
    /// it, any of which may share the cause.
    Covering {
        /// The code charged.
        code: AclCode,
        /// The runs queued behind that the synchronize covered (at least 1).
        behind: u8,
    },
    /// The AICPU stream's `code` is run `left_by`'s fatal status (a sticky code, L-8a), and
    /// the AICore stream synchronized clean: judged as a clean device verdict.
    LeftBy {
        /// The AICPU stream's code.
        code: AclCode,
        /// The run whose record reported an error.
        left_by: u64,
    },
}

impl DeviceVerdict {
    /// The code a synchronize returned (the AICPU stream's first), or `None` when clean.
    pub const fn code(self) -> Option<AclCode> {
        match self {
            Self::Clean => None,
            Self::Returned { aicpu, aicore } => match aicpu {
                Some(code) => Some(code),
                None => aicore,
            },
            Self::Fault(code) | Self::Covering { code, .. } | Self::LeftBy { code, .. } => {
                Some(code)
            }
        }
    }
}

/// Everything the completion waiter learned about one run.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Evidence {
    /// The profile's channel.
    pub channel: VerdictChannel,
    /// What the run's events prove.
    pub boundary: Boundary,
    /// The record's read.
    pub record: RecordRead,
    /// The device verdict, if one was made.
    pub device: Option<DeviceVerdict>,
}

impl Evidence {
    /// A completed run whose own record is ok: the one shape that is `Ok` on the record
    /// channel without a synchronize.
    pub const PUBLISHED_OK: Self = Self {
        channel: VerdictChannel::Record,
        boundary: Boundary::Complete,
        record: RecordRead::Read(Record::Ok),
        device: None,
    };

    /// A completed run on the stream-synchronize channel whose streams synchronized clean.
    pub const SYNCHRONIZED_CLEAN: Self = Self {
        channel: VerdictChannel::StreamSync,
        boundary: Boundary::Complete,
        record: RecordRead::NotRead,
        device: Some(DeviceVerdict::Clean),
    };
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "channel={}", self.channel)?;
        match self.boundary {
            Boundary::Complete => f.write_str(" boundary=complete")?,
            Boundary::Failed(code) => write!(f, " boundary=failed({})", code.raw())?,
            Boundary::Unfenced(code) => write!(f, " boundary=unfenced({})", code.raw())?,
        }
        match self.record {
            RecordRead::Read(record) => write!(f, " record={record}")?,
            RecordRead::Failed(code) => write!(f, " record=read-failed({})", code.raw())?,
            RecordRead::NotRead => f.write_str(" record=not-read")?,
        }
        let raw = |code: Option<AclCode>| code.map_or(0, AclCode::raw);
        match self.device {
            None => Ok(()),
            Some(DeviceVerdict::Clean) => f.write_str(" device=clean"),
            Some(DeviceVerdict::Returned { aicpu, aicore }) => {
                write!(f, " device=returned(aicpu {}, aicore {})", raw(aicpu), raw(aicore))
            }
            Some(DeviceVerdict::Fault(code)) => write!(f, " device={}", code.raw()),
            Some(DeviceVerdict::Covering { code, behind }) => {
                write!(f, " device={} covering {behind} behind", code.raw())
            }
            Some(DeviceVerdict::LeftBy { code, left_by }) => {
                write!(f, " device={} left by run {left_by}", code.raw())
            }
        }
    }
}

/// The status header, as the lane's fallback reads it after the waiter answered.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum HeaderRead {
    /// Not read yet.
    Unread,
    /// Read; nothing latched.
    Clean,
    /// Read; the runtime latched this code.
    Latched(Latch),
}

/// What [`judge`] concludes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Judgement {
    /// The run succeeded.
    Ok,
    /// The run failed: classify the failure (run-only or poison).
    Fail(Failure),
    /// The record does not decide the run: make the device verdict first.
    NeedsDeviceVerdict,
    /// The device is clean and the record does not decide: read the status header first.
    NeedsHeader,
    /// The device verdict returned a code nobody has attributed yet: find whose it is first
    /// (L-8a, [`crate::attribute`]).
    NeedsAttribution,
}

/// One row of the verdict rule, in the order [`judge`] tries them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum VerdictRule {
    /// A fence call failed after a kernel was accepted.
    Unfenced,
    /// The boundary wait failed.
    BoundaryFailed,
    /// The record says error.
    RecordError,
    /// The record says ok.
    RecordOk,
    /// Nothing decides yet: synchronize the pair.
    AwaitDeviceVerdict,
    /// The synchronize returned a code nobody has attributed yet.
    AttributeCode,
    /// The synchronize's code is this run's.
    DeviceFault,
    /// The record could not be read (the synchronize was clean).
    RecordReadFailed,
    /// The header is not read yet.
    AwaitHeader,
    /// The header fallback latched a code.
    HeaderLatched,
    /// Stream-synchronize channel: clean streams, clean header.
    SynchronizedClean,
    /// The record is malformed (the synchronize was clean).
    MalformedRecord,
    /// No record, and the synchronize's code was another run's.
    NoRecordBesideCode,
    /// No record (the synchronize was clean).
    NoRecord,
}

impl VerdictRule {
    /// Every row, in the order [`judge`] tries them.
    pub const ALL: [Self; 14] = [
        Self::Unfenced,
        Self::BoundaryFailed,
        Self::RecordError,
        Self::RecordOk,
        Self::AwaitDeviceVerdict,
        Self::AttributeCode,
        Self::DeviceFault,
        Self::RecordReadFailed,
        Self::AwaitHeader,
        Self::HeaderLatched,
        Self::SynchronizedClean,
        Self::MalformedRecord,
        Self::NoRecordBesideCode,
        Self::NoRecord,
    ];

    /// The row: its name, the evidence it matches, and what it concludes.
    pub const fn row(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Unfenced => (
                "unfenced",
                "a record or wait of the run's fence failed after a kernel was accepted",
                "make the device verdict first (its own events cannot decide the run), and attribute a code it \
                 returns (L-8a); then fail with the code when it is this run's, or with the fence call's code \
                 when the streams are clean or the code is another run's (poison either way)",
            ),
            Self::BoundaryFailed => (
                "boundary-failed",
                "the wait on the run's boundary failed (a timeout, a host error)",
                "fail with the wait's code (poison: the work may still be running)",
            ),
            Self::RecordError => (
                "record-error",
                "the record, stamped with this run's epoch, says error",
                "fail with the record's code, classified as a latched code; whatever else happened",
            ),
            Self::RecordOk => (
                "record-ok",
                "the boundary completed and the record, stamped with this run's epoch, says ok",
                "`Ok`, with no stream synchronize",
            ),
            Self::AwaitDeviceVerdict => (
                "await-device-verdict",
                "no row above matched and no device verdict was made",
                "make the device verdict: a bounded synchronize of the AICPU stream, then the AICore \
                 stream, on the completion waiter",
            ),
            Self::AttributeCode => (
                "attribute-code",
                "the device verdict returned a code nobody has attributed yet",
                "find whose code it is (L-8a): the AICPU stream's sticky mark, then the records of the runs \
                 queued behind that the synchronize covered (the attribution table)",
            ),
            Self::DeviceFault => (
                "device-fault",
                "the device verdict's code is this run's (507046 on its timeout)",
                "fail with that code at the device verdict (poison for a device code); when the synchronize \
                 covered runs queued behind, the line says they may share the cause",
            ),
            Self::RecordReadFailed => (
                "record-read-failed",
                "the device verdict is clean but the record's read failed",
                "fail with the read's code (poison)",
            ),
            Self::AwaitHeader => (
                "await-header",
                "the device verdict is clean and the status header is not read yet",
                "read the status header (the fallback) and timing",
            ),
            Self::HeaderLatched => (
                "header-latched",
                "the device verdict is clean and the status header latched a code",
                "fail with the latched code, classified",
            ),
            Self::SynchronizedClean => (
                "synchronized-clean",
                "stream-synchronize channel: the device verdict and the status header are clean",
                "`Ok` (a runtime without records has no other evidence)",
            ),
            Self::MalformedRecord => (
                "malformed-record",
                "the device verdict and the header are clean and the record is malformed",
                "fail run-only, saying what was read",
            ),
            Self::NoRecordBesideCode => (
                "no-record-beside-code",
                "the device verdict's code is another run's sticky code, the header is clean and the run \
                 published no record",
                "fail run-only: \"no result record\", naming the run that left the code (it convicts no one)",
            ),
            Self::NoRecord => (
                "no-record",
                "the device verdict and the header are clean and the run published no record",
                "fail run-only: \"no result record: the run did not complete its normal path\", never `Ok`",
            ),
        }
    }

    /// The row's short name.
    pub const fn name(self) -> &'static str {
        self.row().0
    }
}

impl fmt::Display for VerdictRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The verdict rule (L-8): the first row of [`VerdictRule::ALL`] that matches `evidence` and
/// `header`, and what it concludes. Total and pure: every input gives a row.
pub const fn judge(evidence: &Evidence, header: HeaderRead) -> (VerdictRule, Judgement) {
    use VerdictRule as R;
    match evidence.boundary {
        Boundary::Unfenced(code) => {
            let judgement = match evidence.device {
                None => Judgement::NeedsDeviceVerdict,
                Some(DeviceVerdict::Returned { .. }) => Judgement::NeedsAttribution,
                Some(DeviceVerdict::Fault(device)) => {
                    Judgement::Fail(Failure::Acl { stage: Stage::StreamSync, code: device })
                }
                Some(DeviceVerdict::Covering { code, behind }) => {
                    Judgement::Fail(Failure::Covering { code, behind })
                }
                Some(DeviceVerdict::Clean | DeviceVerdict::LeftBy { .. }) => {
                    Judgement::Fail(Failure::Acl { stage: Stage::EventRecord, code })
                }
            };
            return (R::Unfenced, judgement);
        }
        Boundary::Failed(code) => {
            return (
                R::BoundaryFailed,
                Judgement::Fail(Failure::Acl { stage: Stage::EventWait, code }),
            );
        }
        Boundary::Complete => {}
    }
    let record_channel = matches!(evidence.channel, VerdictChannel::Record);
    if record_channel {
        match evidence.record {
            RecordRead::Read(Record::Error { code, source, .. }) => {
                return (R::RecordError, Judgement::Fail(Failure::Record { code, source }));
            }
            RecordRead::Read(Record::Ok) => return (R::RecordOk, Judgement::Ok),
            _ => {}
        }
    }
    let left_by = match evidence.device {
        None => return (R::AwaitDeviceVerdict, Judgement::NeedsDeviceVerdict),
        Some(DeviceVerdict::Returned { .. }) => {
            return (R::AttributeCode, Judgement::NeedsAttribution);
        }
        Some(DeviceVerdict::Covering { code, behind }) => {
            return (R::DeviceFault, Judgement::Fail(Failure::Covering { code, behind }));
        }
        Some(DeviceVerdict::Fault(code)) => {
            return (
                R::DeviceFault,
                Judgement::Fail(Failure::Acl { stage: Stage::StreamSync, code }),
            );
        }
        // Without records no run's error can be known: a code is a code on that channel.
        Some(DeviceVerdict::LeftBy { code, .. }) if !record_channel => {
            return (
                R::DeviceFault,
                Judgement::Fail(Failure::Acl { stage: Stage::StreamSync, code }),
            );
        }
        Some(DeviceVerdict::LeftBy { code, left_by }) => Some((code, left_by)),
        Some(DeviceVerdict::Clean) => None,
    };
    if let (true, RecordRead::Failed(code)) = (record_channel, evidence.record) {
        return (
            R::RecordReadFailed,
            Judgement::Fail(Failure::Acl { stage: Stage::RecordRead, code }),
        );
    }
    match header {
        HeaderRead::Unread => return (R::AwaitHeader, Judgement::NeedsHeader),
        HeaderRead::Latched(latch) => {
            return (R::HeaderLatched, Judgement::Fail(Failure::Latched(latch)));
        }
        HeaderRead::Clean => {}
    }
    if !record_channel {
        return (R::SynchronizedClean, Judgement::Ok);
    }
    match evidence.record {
        RecordRead::Read(Record::Malformed(defect)) => {
            (R::MalformedRecord, Judgement::Fail(Failure::MalformedRecord(defect)))
        }
        _ => match left_by {
            Some((code, left_by)) => (
                R::NoRecordBesideCode,
                Judgement::Fail(Failure::NoRecordBesideCode { code, left_by }),
            ),
            None => (R::NoRecord, Judgement::Fail(Failure::NoRecord)),
        },
    }
}

/// Whether the completion waiter must make the device verdict before it answers: the
/// boundary completed and the record does not decide the run, or the run is unfenced.
pub const fn needs_device_verdict(evidence: &Evidence) -> bool {
    matches!(judge(evidence, HeaderRead::Unread).1, Judgement::NeedsDeviceVerdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::RuntimeCode;
    use crate::header::LatchSource;
    use crate::policy::{Class, classify};
    use crate::record::{RecordDefect, RecordSource};

    fn record(record: RecordRead, device: Option<DeviceVerdict>) -> Evidence {
        Evidence { channel: VerdictChannel::Record, boundary: Boundary::Complete, record, device }
    }

    const NEVER: RecordRead = RecordRead::Read(Record::NeverPublished { stamp: 0 });

    #[test]
    fn only_a_published_ok_record_is_ok_without_a_synchronize() {
        assert_eq!(
            judge(&Evidence::PUBLISHED_OK, HeaderRead::Unread),
            (VerdictRule::RecordOk, Judgement::Ok)
        );
        assert!(!needs_device_verdict(&Evidence::PUBLISHED_OK));
        assert!(needs_device_verdict(&record(NEVER, None)));
    }

    #[test]
    fn a_clean_synchronize_on_an_unpublished_record_fails_the_run_only() {
        let evidence = record(NEVER, Some(DeviceVerdict::Clean));
        assert_eq!(judge(&evidence, HeaderRead::Unread).1, Judgement::NeedsHeader);
        let (rule, judgement) = judge(&evidence, HeaderRead::Clean);
        assert_eq!(rule, VerdictRule::NoRecord);
        let Judgement::Fail(failure) = judgement else { panic!("{judgement:?}") };
        assert_eq!(classify(&failure).class, Class::RunOnly);
    }

    #[test]
    fn a_device_code_poisons_and_a_record_error_decides_whatever_else() {
        let fault = record(NEVER, Some(DeviceVerdict::Fault(AclCode::RtAicpuException)));
        let Judgement::Fail(failure) = judge(&fault, HeaderRead::Unread).1 else { panic!() };
        assert_eq!(classify(&failure).class, Class::Poison);
        let error = record(
            RecordRead::Read(Record::Error {
                code: RuntimeCode::ScopeDeadlock,
                source: RecordSource::Header,
                payload_len: 0,
            }),
            Some(DeviceVerdict::Fault(AclCode::RtAicpuException)),
        );
        let (rule, Judgement::Fail(failure)) = judge(&error, HeaderRead::Unread) else { panic!() };
        assert_eq!(rule, VerdictRule::RecordError);
        assert_eq!(classify(&failure).class, Class::RunOnly);
    }

    #[test]
    fn the_header_fallback_decides_a_clean_unrecorded_run() {
        let latch = Latch { source: LatchSource::Orch, code: RuntimeCode::ScopeDeadlock };
        let evidence = record(NEVER, Some(DeviceVerdict::Clean));
        assert_eq!(
            judge(&evidence, HeaderRead::Latched(latch)),
            (VerdictRule::HeaderLatched, Judgement::Fail(Failure::Latched(latch)))
        );
        assert_eq!(
            judge(&Evidence::SYNCHRONIZED_CLEAN, HeaderRead::Clean),
            (VerdictRule::SynchronizedClean, Judgement::Ok)
        );
        let malformed = record(
            RecordRead::Read(Record::Malformed(RecordDefect::NoVerdict)),
            Some(DeviceVerdict::Clean),
        );
        assert_eq!(judge(&malformed, HeaderRead::Clean).0, VerdictRule::MalformedRecord);
    }

    #[test]
    fn the_stream_sync_channel_ignores_records_and_always_synchronizes() {
        let evidence = Evidence {
            channel: VerdictChannel::StreamSync,
            boundary: Boundary::Complete,
            record: RecordRead::Read(Record::Ok),
            device: None,
        };
        assert!(needs_device_verdict(&evidence));
    }

    #[test]
    fn no_evidence_without_a_published_ok_record_is_ok_on_the_record_channel() {
        let records = [
            NEVER,
            RecordRead::Read(Record::Malformed(RecordDefect::ZeroEpoch)),
            RecordRead::Failed(AclCode::RtParamInvalid),
            RecordRead::NotRead,
            RecordRead::Read(Record::Error {
                code: RuntimeCode::InvalidArgs,
                source: RecordSource::ThreadReturn,
                payload_len: 3,
            }),
        ];
        let boundaries = [
            Boundary::Complete,
            Boundary::Failed(AclCode::RtEventSyncTimeout),
            Boundary::Unfenced(AclCode::RtParamInvalid),
        ];
        let devices = [
            None,
            Some(DeviceVerdict::Clean),
            Some(DeviceVerdict::Fault(AclCode::RtStreamSyncTimeout)),
        ];
        let headers = [HeaderRead::Unread, HeaderRead::Clean];
        for boundary in boundaries {
            for record in records {
                for device in devices {
                    for header in headers {
                        let evidence =
                            Evidence { channel: VerdictChannel::Record, boundary, record, device };
                        assert_ne!(judge(&evidence, header).1, Judgement::Ok, "{evidence}");
                    }
                }
            }
        }
    }
}
