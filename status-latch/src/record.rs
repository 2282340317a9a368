//! The per-run result record (SPEC L-8, device-truth §2): 280 bytes per slot that the
//! runtime's device side publishes once per run, stamped with the run's epoch.
//!
//! | offset | type | field |
//! |---:|---|---|
//! | 0 | u64 | `published`: the run's epoch, written and flushed last |
//! | 8 | u32 | `payload_bytes` (at most 256) |
//! | 12 | u32 | `verdict`: 0 none, 1 ok, 2 error |
//! | 16 | i32 | `completion_code`: 0 if and only if the verdict is ok |
//! | 20 | u32 | `code_source`: 0 none, 1 header, 2 thread return, 3 shutdown |
//! | 24 | 256 bytes | payload |
//!
//! A record counts only when `published` is this run's epoch, so a record left by an
//! earlier run of the slot can never be read as this run's, and no per-run clear is needed.
//! [`decode_record`] is total: any bytes and any epoch give a [`Record`], never a panic.

use core::fmt;

use crate::codes::RuntimeCode;

/// Bytes of a slot's record region.
pub const RECORD_BYTES: usize = 280;
/// Most payload bytes a record carries.
pub const RECORD_PAYLOAD_MAX: usize = 256;
/// Offset of the payload in the record.
pub const RECORD_PAYLOAD_OFFSET: usize = 24;

/// Offset of `published` (u64).
pub(crate) const PUBLISHED_AT: usize = 0;
/// Offset of `payload_bytes` (u32).
pub(crate) const PAYLOAD_BYTES_AT: usize = 8;
/// Offset of `verdict` (u32).
pub(crate) const VERDICT_AT: usize = 12;
/// Offset of `completion_code` (i32).
pub(crate) const CODE_AT: usize = 16;
/// Offset of `code_source` (u32).
pub(crate) const SOURCE_AT: usize = 20;

/// One field of the record region, as the layout table shows it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RecordField {
    /// Offset in bytes from the region's start.
    pub offset: usize,
    /// Wire type, little-endian (`u64`, `u32`, `i32`, or the payload's byte count).
    pub ty: &'static str,
    /// Field name, as the runtime spells it.
    pub name: &'static str,
    /// What the field holds.
    pub meaning: &'static str,
}

/// The record region, field by field, in offset order (device-truth §2). [`decode_record`]
/// and [`encode_record`] read and write exactly these offsets.
pub const RECORD_LAYOUT: [RecordField; 6] = [
    RecordField {
        offset: PUBLISHED_AT,
        ty: "u64",
        name: "published",
        meaning: "the run's epoch; written and flushed last",
    },
    RecordField {
        offset: PAYLOAD_BYTES_AT,
        ty: "u32",
        name: "payload_bytes",
        meaning: "payload bytes that follow (at most 256)",
    },
    RecordField {
        offset: VERDICT_AT,
        ty: "u32",
        name: "verdict",
        meaning: "0 none, 1 ok, 2 error",
    },
    RecordField {
        offset: CODE_AT,
        ty: "i32",
        name: "completion_code",
        meaning: "the runtime's own code; 0 if and only if the verdict is ok",
    },
    RecordField {
        offset: SOURCE_AT,
        ty: "u32",
        name: "code_source",
        meaning: "0 none, 1 status header, 2 thread return code, 3 shutdown code",
    },
    RecordField {
        offset: RECORD_PAYLOAD_OFFSET,
        ty: "256 bytes",
        name: "payload",
        meaning: "for tensormap_and_ringbuffer, the error tail of its status header; else none",
    },
];

/// Wire value of `verdict`: none.
const VERDICT_NONE: u32 = 0;
/// Wire value of `verdict`: ok.
const VERDICT_OK: u32 = 1;
/// Wire value of `verdict`: error.
const VERDICT_ERROR: u32 = 2;

/// Where a record's error code came from (`code_source`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum RecordSource {
    /// 1: the runtime's status header (a latched code).
    Header,
    /// 2: a device thread's return code.
    ThreadReturn,
    /// 3: a shutdown code.
    Shutdown,
}

impl RecordSource {
    /// Every source, in wire order.
    pub const ALL: [Self; 3] = [Self::Header, Self::ThreadReturn, Self::Shutdown];

    /// Reads a wire value; `None` for 0 (none) and unknown values.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            1 => Some(Self::Header),
            2 => Some(Self::ThreadReturn),
            3 => Some(Self::Shutdown),
            _ => None,
        }
    }

    /// The wire value.
    pub const fn raw(self) -> u32 {
        match self {
            Self::Header => 1,
            Self::ThreadReturn => 2,
            Self::Shutdown => 3,
        }
    }

    /// The name in logs and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Header => "status header",
            Self::ThreadReturn => "thread return code",
            Self::Shutdown => "shutdown code",
        }
    }
}

impl fmt::Display for RecordSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a record stamped with this run's epoch (or read with a bad epoch) gives no verdict.
/// Each keeps what was read, for the failure line.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RecordDefect {
    /// The host asked with epoch 0, which is never valid (a zeroed region reads as it).
    ZeroEpoch,
    /// Fewer bytes than the record's fixed fields were read.
    Short {
        /// Bytes read.
        len: u16,
    },
    /// `payload_bytes` is over [`RECORD_PAYLOAD_MAX`].
    PayloadTooLong {
        /// The value read.
        bytes: u32,
    },
    /// `verdict` is 0 (none) on a published record.
    NoVerdict,
    /// `verdict` is not a known wire value.
    UnknownVerdict {
        /// The value read.
        raw: u32,
    },
    /// An ok record carries a code, a source or a payload.
    OkWithDetail {
        /// `completion_code` read.
        code: i32,
        /// `code_source` read.
        source: u32,
        /// `payload_bytes` read.
        payload: u32,
    },
    /// An error record carries code 0.
    ErrorWithoutCode,
    /// An error record's source is none or unknown.
    UnknownSource {
        /// The value read.
        raw: u32,
    },
}

impl RecordDefect {
    /// The defect's short name in tables.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::ZeroEpoch => "zero epoch",
            Self::Short { .. } => "short read",
            Self::PayloadTooLong { .. } => "payload too long",
            Self::NoVerdict => "no verdict",
            Self::UnknownVerdict { .. } => "unknown verdict",
            Self::OkWithDetail { .. } => "ok with detail",
            Self::ErrorWithoutCode => "error without code",
            Self::UnknownSource { .. } => "unknown source",
        }
    }
}

impl fmt::Display for RecordDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ZeroEpoch => f.write_str("the host asked for epoch 0, which no run has"),
            Self::Short { len } => write!(f, "only {len} of {RECORD_BYTES} bytes were read"),
            Self::PayloadTooLong { bytes } => {
                write!(f, "payload_bytes {bytes} is over {RECORD_PAYLOAD_MAX}")
            }
            Self::NoVerdict => f.write_str("published with verdict 0 (none)"),
            Self::UnknownVerdict { raw } => write!(f, "unknown verdict {raw}"),
            Self::OkWithDetail { code, source, payload } => {
                write!(f, "verdict ok with code {code}, source {source}, {payload} payload bytes")
            }
            Self::ErrorWithoutCode => f.write_str("verdict error with code 0"),
            Self::UnknownSource { raw } => write!(f, "verdict error with unknown source {raw}"),
        }
    }
}

/// A record as decoded for one run's epoch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Record {
    /// `published` is not this run's epoch: the run published nothing (it failed in its init,
    /// or did not complete its normal path). Never success.
    NeverPublished {
        /// The `published` word read (0, or an earlier run's epoch).
        stamp: u64,
    },
    /// Stamped with this run's epoch, but its fields break the record's rules.
    Malformed(RecordDefect),
    /// The run completed its audited normal path.
    Ok,
    /// The run failed with the runtime's own signed code (never an ACL code).
    Error {
        /// The runtime's code (`completion_code`).
        code: RuntimeCode,
        /// Where the runtime took it from.
        source: RecordSource,
        /// Payload bytes that follow (at most [`RECORD_PAYLOAD_MAX`]).
        payload_len: u16,
    },
}

impl Record {
    /// The record's name in tables.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::NeverPublished { .. } => "never published",
            Self::Malformed(_) => "malformed",
            Self::Ok => "ok",
            Self::Error { .. } => "error",
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NeverPublished { stamp: 0 } => f.write_str("never published"),
            Self::NeverPublished { stamp } => {
                write!(f, "never published (holds epoch {stamp} of another run)")
            }
            Self::Malformed(defect) => write!(f, "malformed: {defect}"),
            Self::Ok => f.write_str("ok"),
            Self::Error { code, source, payload_len } => write!(
                f,
                "error {} ({}) from the {source}, {payload_len} payload bytes",
                code.value(),
                code.name()
            ),
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        word.copy_from_slice(src);
    }
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        word.copy_from_slice(src);
    }
    u64::from_le_bytes(word)
}

/// Decodes `bytes` (a slot's record region, [`RECORD_BYTES`]) for the run stamped `epoch`.
/// Total: a short read, a zero epoch, an unknown verdict or source, a payload over 256 give
/// [`Record::Malformed`] or [`Record::NeverPublished`], never a panic and never `Ok`.
pub fn decode_record(bytes: &[u8], epoch: u64) -> Record {
    if epoch == 0 {
        return Record::Malformed(RecordDefect::ZeroEpoch);
    }
    if bytes.len() < RECORD_PAYLOAD_OFFSET {
        let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
        return Record::Malformed(RecordDefect::Short { len });
    }
    let stamp = u64_at(bytes, PUBLISHED_AT);
    if stamp != epoch {
        return Record::NeverPublished { stamp };
    }
    let payload = u32_at(bytes, PAYLOAD_BYTES_AT);
    let verdict = u32_at(bytes, VERDICT_AT);
    let code = i32::from_le_bytes(u32_at(bytes, CODE_AT).to_le_bytes());
    let source = u32_at(bytes, SOURCE_AT);
    if payload as usize > RECORD_PAYLOAD_MAX {
        return Record::Malformed(RecordDefect::PayloadTooLong { bytes: payload });
    }
    match verdict {
        VERDICT_NONE => Record::Malformed(RecordDefect::NoVerdict),
        VERDICT_OK if code == 0 && source == 0 && payload == 0 => Record::Ok,
        VERDICT_OK => Record::Malformed(RecordDefect::OkWithDetail { code, source, payload }),
        VERDICT_ERROR if code == 0 => Record::Malformed(RecordDefect::ErrorWithoutCode),
        VERDICT_ERROR => match RecordSource::from_raw(source) {
            Some(source) => Record::Error {
                code: record_code(code, source),
                source,
                // At most 256: checked above.
                payload_len: payload as u16,
            },
            None => Record::Malformed(RecordDefect::UnknownSource { raw: source }),
        },
        raw => Record::Malformed(RecordDefect::UnknownVerdict { raw }),
    }
}

/// The runtime's code in a record: a code taken from the status header may be written as
/// the runtime's status (`runtime_status = -code`, device-truth §2's `-9`), which reads as
/// the latched code it negates; every other value is kept as written (an unknown one
/// classifies as poison).
fn record_code(code: i32, source: RecordSource) -> RuntimeCode {
    let code = match source {
        RecordSource::Header if code < 0 => code.wrapping_neg(),
        _ => code,
    };
    RuntimeCode::from_value(code).unwrap_or(RuntimeCode::Unknown(code))
}

/// The payload of a record read into `bytes`, as long as its `payload_bytes` says (capped at
/// [`RECORD_PAYLOAD_MAX`] and at what was read). Meaningful for [`Record::Error`].
pub fn record_payload(bytes: &[u8]) -> &[u8] {
    let len = (u32_at(bytes, PAYLOAD_BYTES_AT) as usize).min(RECORD_PAYLOAD_MAX);
    let end = (RECORD_PAYLOAD_OFFSET + len).min(bytes.len());
    bytes.get(RECORD_PAYLOAD_OFFSET..end).unwrap_or(&[])
}

/// What a runtime's device side (or a simulator, a fake, a test) publishes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RecordWrite<'a> {
    /// Verdict ok: code 0, no source, no payload.
    Ok,
    /// Verdict error with the runtime's code, its source and a payload (at most 256 bytes;
    /// longer is cut).
    Error {
        /// The runtime's signed code (non-zero).
        code: i32,
        /// Where it came from.
        source: RecordSource,
        /// The payload.
        payload: &'a [u8],
    },
}

fn put(out: &mut [u8], at: usize, word: [u8; 4]) {
    out[at..at + 4].copy_from_slice(&word);
}

/// The 280 bytes of `write` published with `epoch`, `published` included: what the device
/// leaves in the region once it has written the fields and then the stamp.
pub fn encode_record(epoch: u64, write: &RecordWrite<'_>) -> [u8; RECORD_BYTES] {
    let mut out = [0; RECORD_BYTES];
    match *write {
        RecordWrite::Ok => put(&mut out, VERDICT_AT, VERDICT_OK.to_le_bytes()),
        RecordWrite::Error { code, source, payload } => {
            let len = payload.len().min(RECORD_PAYLOAD_MAX);
            // At most 256: fits.
            put(&mut out, PAYLOAD_BYTES_AT, (len as u32).to_le_bytes());
            put(&mut out, VERDICT_AT, VERDICT_ERROR.to_le_bytes());
            put(&mut out, CODE_AT, code.to_le_bytes());
            put(&mut out, SOURCE_AT, source.raw().to_le_bytes());
            out[RECORD_PAYLOAD_OFFSET..RECORD_PAYLOAD_OFFSET + len]
                .copy_from_slice(&payload[..len]);
        }
    }
    out[PUBLISHED_AT..PUBLISHED_AT + 8].copy_from_slice(&epoch.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ok_record_decodes_only_for_its_own_epoch() {
        let bytes = encode_record(7, &RecordWrite::Ok);
        assert_eq!(decode_record(&bytes, 7), Record::Ok);
        assert_eq!(decode_record(&bytes, 8), Record::NeverPublished { stamp: 7 });
    }

    #[test]
    fn a_header_code_written_as_the_runtime_status_reads_as_its_latch_code() {
        let write =
            |code, source| encode_record(2, &RecordWrite::Error { code, source, payload: &[] });
        let code_of = |bytes: &[u8]| match decode_record(bytes, 2) {
            Record::Error { code, .. } => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code_of(&write(-9, RecordSource::Header)), RuntimeCode::ExplicitOrchFatal);
        assert_eq!(code_of(&write(-9, RecordSource::ThreadReturn)), RuntimeCode::Unknown(-9));
    }

    #[test]
    fn a_zeroed_region_is_never_published() {
        assert_eq!(decode_record(&[0; RECORD_BYTES], 1), Record::NeverPublished { stamp: 0 });
    }

    #[test]
    fn an_error_record_keeps_its_code_source_and_payload() {
        let bytes = encode_record(
            3,
            &RecordWrite::Error { code: 1, source: RecordSource::Header, payload: &[9; 64] },
        );
        assert_eq!(
            decode_record(&bytes, 3),
            Record::Error {
                code: RuntimeCode::ScopeDeadlock,
                source: RecordSource::Header,
                payload_len: 64
            }
        );
        assert_eq!(record_payload(&bytes), &[9; 64]);
    }

    #[test]
    fn bad_records_are_malformed_with_what_was_read() {
        let mut bytes = encode_record(5, &RecordWrite::Ok);
        bytes[16..20].copy_from_slice(&(-9_i32).to_le_bytes());
        assert!(matches!(
            decode_record(&bytes, 5),
            Record::Malformed(RecordDefect::OkWithDetail { code: -9, .. })
        ));
        bytes[12..16].copy_from_slice(&7_u32.to_le_bytes());
        assert_eq!(
            decode_record(&bytes, 5),
            Record::Malformed(RecordDefect::UnknownVerdict { raw: 7 })
        );
        bytes[8..12].copy_from_slice(&257_u32.to_le_bytes());
        assert_eq!(
            decode_record(&bytes, 5),
            Record::Malformed(RecordDefect::PayloadTooLong { bytes: 257 })
        );
        assert_eq!(decode_record(&bytes, 0), Record::Malformed(RecordDefect::ZeroEpoch));
        assert_eq!(
            decode_record(&bytes[..10], 5),
            Record::Malformed(RecordDefect::Short { len: 10 })
        );
        let mut error = encode_record(
            5,
            &RecordWrite::Error { code: 2, source: RecordSource::Shutdown, payload: &[] },
        );
        error[20..24].copy_from_slice(&0_u32.to_le_bytes());
        assert_eq!(
            decode_record(&error, 5),
            Record::Malformed(RecordDefect::UnknownSource { raw: 0 })
        );
        error[16..20].copy_from_slice(&0_i32.to_le_bytes());
        assert_eq!(decode_record(&error, 5), Record::Malformed(RecordDefect::ErrorWithoutCode));
    }
}
