//! Target `result_record_decode`: arbitrary record bytes and epochs through
//! [`decode_record`], and the verdict rule ([`judge`]) over evidence built around them.
//!
//! [`decode_record`] never panics; it gives [`Record::Ok`] only when the first 24 bytes are
//! exactly what [`encode_record`] writes for an ok record of that epoch (and always then);
//! an error record re-encodes to the same fixed fields and decodes to the same record; a
//! stamp other than the epoch is never published; epoch 0 and reads under 24 bytes are
//! malformed. [`judge`] never gives `Ok` on the record channel without a completed boundary
//! and a published ok record, nor on the stream-synchronize channel without a clean device
//! verdict and header; a record error decides whatever the device verdict and header; the
//! stream-synchronize channel never reads the record; and every failure it gives classifies
//! and prints. Uses only `status-latch` and `arbitrary`.

use arbitrary::Arbitrary;
use status_latch::{
    AclCode, Boundary, Class, DeviceVerdict, Evidence, Failure, HeaderRead, Judgement, Latch,
    LatchSource, RECORD_BYTES, RECORD_PAYLOAD_MAX, RECORD_PAYLOAD_OFFSET, Record, RecordDefect,
    RecordRead, RecordSource, RecordWrite, Rule, RuntimeCode, VerdictChannel, VerdictRule,
    classify, decode_record, encode_record, failure_line, judge, needs_device_verdict,
    record_payload,
};

use crate::{Finding, Reached, decode as build, pick};

/// The target's name.
pub const NAME: &str = "result_record_decode";

behaviours! {
    /// The behaviours a `result_record_decode` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    NeverPublished => "never published",
    Ok => "ok",
    Error => "error",
    ZeroEpoch => "malformed: zero epoch",
    Short => "malformed: short read",
    PayloadTooLong => "malformed: payload too long",
    NoVerdict => "malformed: no verdict",
    UnknownVerdict => "malformed: unknown verdict",
    OkWithDetail => "malformed: ok with detail",
    ErrorWithoutCode => "malformed: error without code",
    UnknownSource => "malformed: unknown source",
    PayloadCut => "error payload cut by a short read",
    RuleUnfenced => "row unfenced",
    RuleBoundaryFailed => "row boundary-failed",
    RuleRecordError => "row record-error",
    RuleRecordOk => "row record-ok",
    RuleAwaitDeviceVerdict => "row await-device-verdict",
    RuleDeviceFault => "row device-fault",
    RuleRecordReadFailed => "row record-read-failed",
    RuleAwaitHeader => "row await-header",
    RuleHeaderLatched => "row header-latched",
    RuleSynchronizedClean => "row synchronized-clean",
    RuleMalformedRecord => "row malformed-record",
    RuleNoRecord => "row no-record",
    RuleAttributeCode => "row attribute-code",
    RuleNoRecordBesideCode => "row no-record-beside-code",
}

/// A `result_record_decode` input: the run's epoch, the record the region starts from, field
/// overrides, how much of it was read, and the rest of the evidence the verdict rule sees.
///
/// From raw bytes: everything but the raw bytes first; every byte left is a raw region byte
/// (and the payload of an error base).
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The epoch the host decodes for.
    pub epoch: Epoch,
    /// What the region holds before the overrides.
    pub base: Base,
    /// Words written over the base, in order.
    pub overrides: Vec<Override>,
    /// How many bytes were read.
    pub length: Length,
    /// Whether the record's read succeeded.
    pub read: Read,
    /// The profile's verdict channel.
    pub channel: Channel,
    /// What the run's events proved.
    pub boundary: BoundaryIn,
    /// The device verdict, if made.
    pub device: DeviceIn,
    /// The status header, if read.
    pub header: HeaderIn,
    /// The raw bytes.
    #[arbitrary(with = crate::dense)]
    pub bytes: Vec<u8>,
}

/// The run's epoch.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epoch {
    /// 1.
    One,
    /// `n + 1`.
    Small(u8),
    /// 0, never valid.
    Zero,
    /// Anything.
    Raw(u64),
}

/// The region before the overrides.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// `encode_record(epoch, Ok)`.
    Ok,
    /// `encode_record(epoch, Error)` with a picked code and source, and `payload % 300`
    /// payload bytes taken from the raw bytes.
    Error {
        /// The code, at `index % codes` of a list of known, unknown and zero values.
        code: u8,
        /// The source, at `index % 3`.
        source: u8,
        /// The payload's length (cut at 256 by the encoder).
        payload: u16,
    },
    /// The raw bytes.
    Raw,
    /// 280 zero bytes: a fresh region.
    Zeroed,
}

/// A word written over the region.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Override {
    /// `published`.
    Stamp(Stamp),
    /// `payload_bytes`.
    PayloadBytes(Word),
    /// `verdict`.
    Verdict(Word),
    /// `completion_code`.
    Code(Word),
    /// `code_source`.
    Source(Word),
}

/// A `published` stamp.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// The run's epoch.
    This,
    /// `n + 1` before the run's epoch (an earlier run of the slot).
    Earlier(u8),
    /// 0: never written.
    Zero,
    /// Anything.
    Raw(u64),
}

/// A u32 word's value.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// A value the decoder treats specially, at `index % values` of the field's list.
    Pick(u8),
    /// Anything.
    Raw(u32),
}

/// How many bytes were read.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// The whole region.
    Full,
    /// `n % 24` bytes: fewer than the fixed fields.
    Short(u8),
    /// `n % 280` bytes.
    Cut(u16),
    /// `n` bytes past the region.
    Long(u8),
    /// The base as it is (the raw bytes' length for a raw base).
    AsIs,
}

/// The record's read.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The copy succeeded: the decoded record.
    Decoded,
    /// The copy failed with the named ACL code at `index % codes`.
    Failed(u8),
    /// Not read.
    NotRead,
}

/// The profile's verdict channel.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// Result records.
    Record,
    /// Stream synchronize only.
    StreamSync,
}

/// What the run's events proved.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundaryIn {
    /// Completed.
    Complete,
    /// The wait failed with the named ACL code at `index % codes`.
    Failed(u8),
    /// A fence call failed with the named ACL code at `index % codes`.
    Unfenced(u8),
}

/// The device verdict.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceIn {
    /// Not made.
    NotMade,
    /// Both streams clean.
    Clean,
    /// A stream returned the named ACL code at `index % codes`, charged to this run.
    Fault(u8),
    /// The AICPU stream returned the named code, not attributed yet (L-8a).
    Returned(u8),
    /// The AICPU stream's named code is run `left_by`'s sticky status (L-8a).
    LeftBy(u8, u8),
    /// Charged to this run, with `behind` runs covered.
    Covering(u8, u8),
}

/// The status header.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderIn {
    /// Not read.
    Unread,
    /// Nothing latched.
    Clean,
    /// A latch.
    Latched {
        /// The scheduler's (else the orchestrator's).
        sched: bool,
        /// The known runtime code at `index % (codes + 1)`; the index past them is unknown.
        code: u8,
    },
}

/// Codes an error base carries: known, unknown (negative, past the table) and 0 (invalid).
const CODES: [i32; 8] = [1, 5, 9, 100, 103, -9, 12, 0];
/// Special `payload_bytes` values.
const PAYLOAD_BYTES: [u32; 7] = [0, 1, 64, 255, 256, 257, u32::MAX];
/// Special `verdict` values.
const VERDICTS: [u32; 5] = [0, 1, 2, 3, u32::MAX];
/// Special `completion_code` values.
const CODE_WORDS: [i32; 8] = [0, 1, 5, 9, 100, -9, i32::MIN, 12];
/// Special `code_source` values.
const SOURCES: [u32; 6] = [0, 1, 2, 3, 4, u32::MAX];

/// Builds an [`Input`] from raw bytes (as libFuzzer does) and runs [`run`]; bytes that
/// build no input reach nothing.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    build::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}

/// Builds the region and the evidence, and checks the decoder and the verdict rule on them.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let mut reached = Reached::default();
    let epoch = match input.epoch {
        Epoch::One => 1,
        Epoch::Small(n) => u64::from(n) + 1,
        Epoch::Zero => 0,
        Epoch::Raw(v) => v,
    };
    let bytes = region(input, epoch);
    let fail = |message: String| Finding::new(NAME, None, message);
    let record = check_decode(&bytes, epoch, &mut reached)
        .map_err(|m| fail(format!("epoch {epoch}, {} bytes {bytes:?}: {m}", bytes.len())))?;
    let evidence = evidence(input, record);
    let header = header(input.header);
    check_judge(&evidence, header, &mut reached)
        .map_err(|m| fail(format!("{evidence} header={header:?}: {m}")))?;
    Ok(reached)
}

fn region(input: &Input, epoch: u64) -> Vec<u8> {
    let mut bytes = match input.base {
        Base::Ok => encode_record(epoch, &RecordWrite::Ok).to_vec(),
        Base::Error { code, source, payload } => {
            let len = usize::from(payload) % 300;
            let mut body: Vec<u8> = input.bytes.iter().copied().take(len).collect();
            body.resize(len, 0);
            encode_record(
                epoch,
                &RecordWrite::Error {
                    code: pick(&CODES, code).unwrap_or(1),
                    source: pick(&RecordSource::ALL, source).unwrap_or(RecordSource::Header),
                    payload: &body,
                },
            )
            .to_vec()
        }
        Base::Raw => input.bytes.clone(),
        Base::Zeroed => vec![0; RECORD_BYTES],
    };
    for o in &input.overrides {
        let (at, word): (usize, Vec<u8>) = match *o {
            Override::Stamp(stamp) => {
                let value = match stamp {
                    Stamp::This => epoch,
                    Stamp::Earlier(n) => epoch.wrapping_sub(u64::from(n) + 1),
                    Stamp::Zero => 0,
                    Stamp::Raw(v) => v,
                };
                (0, value.to_le_bytes().to_vec())
            }
            Override::PayloadBytes(w) => (8, word_bytes(w, &PAYLOAD_BYTES)),
            Override::Verdict(w) => (12, word_bytes(w, &VERDICTS)),
            Override::Code(w) => {
                (16, word_bytes(w, &CODE_WORDS.map(|c| u32::from_le_bytes(c.to_le_bytes()))))
            }
            Override::Source(w) => (20, word_bytes(w, &SOURCES)),
        };
        if let Some(dst) = bytes.get_mut(at..at + word.len()) {
            dst.copy_from_slice(&word);
        }
    }
    match input.length {
        Length::Full => bytes.resize(RECORD_BYTES, 0),
        Length::Short(n) => bytes.resize(usize::from(n) % RECORD_PAYLOAD_OFFSET, 0),
        Length::Cut(n) => bytes.resize(usize::from(n) % RECORD_BYTES, 0),
        Length::Long(n) => bytes.resize(RECORD_BYTES + usize::from(n), 0),
        Length::AsIs => {}
    }
    bytes
}

fn word_bytes(word: Word, values: &[u32]) -> Vec<u8> {
    let value = match word {
        Word::Pick(i) => pick(values, i).unwrap_or(0),
        Word::Raw(v) => v,
    };
    value.to_le_bytes().to_vec()
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let word = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// Decodes and checks the record against the bytes; returns it.
fn check_decode(bytes: &[u8], epoch: u64, reached: &mut Reached) -> Result<Record, String> {
    let record = decode_record(bytes, epoch);
    let _ = record.to_string();
    let payload = record_payload(bytes);
    if payload.len() > RECORD_PAYLOAD_MAX
        || payload.len() > bytes.len().saturating_sub(RECORD_PAYLOAD_OFFSET)
    {
        return Err(format!("record_payload gave {} bytes", payload.len()));
    }
    let ok_prefix = encode_record(epoch, &RecordWrite::Ok);
    let is_ok_prefix = bytes.get(..RECORD_PAYLOAD_OFFSET) == ok_prefix.get(..RECORD_PAYLOAD_OFFSET);
    if (record == Record::Ok) != (epoch != 0 && is_ok_prefix) {
        return Err(format!(
            "decoded {record:?}; the first 24 bytes are the ok record's: {is_ok_prefix}"
        ));
    }
    let short = bytes.len() < RECORD_PAYLOAD_OFFSET;
    match record {
        Record::Malformed(RecordDefect::ZeroEpoch) if epoch == 0 => {}
        _ if epoch == 0 => return Err(format!("epoch 0 decoded as {record:?}")),
        Record::Malformed(RecordDefect::Short { len })
            if short && usize::from(len) == bytes.len() => {}
        _ if short => return Err(format!("a short read decoded as {record:?}")),
        Record::NeverPublished { stamp } => {
            let read = bytes
                .get(..8)
                .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
            if stamp == epoch || read != Some(stamp) {
                return Err(format!("never published with stamp {stamp}, read {read:?}"));
            }
        }
        Record::Error { code, source, payload_len } => {
            check_error_round_trip(bytes, epoch, record, payload, reached)?;
            if code.value() == 0 || usize::from(payload_len) > RECORD_PAYLOAD_MAX {
                return Err(format!("error with code {code:?}, {payload_len} payload bytes"));
            }
            if u32_at(bytes, 20) != Some(source.raw()) {
                return Err(format!("source {source} is not the word read"));
            }
        }
        _ => {}
    }
    reached.insert(
        match record {
            Record::NeverPublished { .. } => B::NeverPublished,
            Record::Ok => B::Ok,
            Record::Error { .. } => B::Error,
            Record::Malformed(defect) => match defect {
                RecordDefect::ZeroEpoch => B::ZeroEpoch,
                RecordDefect::Short { .. } => B::Short,
                RecordDefect::PayloadTooLong { .. } => B::PayloadTooLong,
                RecordDefect::NoVerdict => B::NoVerdict,
                RecordDefect::UnknownVerdict { .. } => B::UnknownVerdict,
                RecordDefect::OkWithDetail { .. } => B::OkWithDetail,
                RecordDefect::ErrorWithoutCode => B::ErrorWithoutCode,
                RecordDefect::UnknownSource { .. } => B::UnknownSource,
            },
        }
        .bit(),
    );
    Ok(record)
}

/// An error record re-encodes with its code, source and payload to the same fixed fields
/// and decodes to the same record (with the payload as read, when the read cut it).
fn check_error_round_trip(
    bytes: &[u8],
    epoch: u64,
    record: Record,
    payload: &[u8],
    reached: &mut Reached,
) -> Result<(), String> {
    let Record::Error { code, source, payload_len } = record else {
        return Ok(());
    };
    let again = encode_record(epoch, &RecordWrite::Error { code: code.value(), source, payload });
    let cut = payload.len() != usize::from(payload_len);
    // A header code written as the runtime status (-code) decodes as the code it negates,
    // so its bytes re-encode positive: compare the fields only when the code was kept.
    let written =
        bytes.get(16..20).and_then(|b| <[u8; 4]>::try_from(b).ok()).map(i32::from_le_bytes);
    let negated = written.is_some_and(|raw| raw != code.value());
    if cut {
        reached.insert(B::PayloadCut.bit());
    } else if !negated
        && again.get(..RECORD_PAYLOAD_OFFSET + payload.len())
            != bytes.get(..RECORD_PAYLOAD_OFFSET + payload.len())
    {
        return Err("the re-encoded error record differs from the bytes read".into());
    }
    let want = Record::Error {
        code,
        source,
        payload_len: u16::try_from(payload.len()).unwrap_or(u16::MAX),
    };
    match decode_record(&again, epoch) {
        got if got == want => Ok(()),
        got => Err(format!("the re-encoded error record decodes to {got:?}")),
    }
}

fn evidence(input: &Input, record: Record) -> Evidence {
    let acl = |i: u8| pick(&AclCode::ALL, i).unwrap_or(AclCode::RtParamInvalid);
    Evidence {
        channel: match input.channel {
            Channel::Record => VerdictChannel::Record,
            Channel::StreamSync => VerdictChannel::StreamSync,
        },
        boundary: match input.boundary {
            BoundaryIn::Complete => Boundary::Complete,
            BoundaryIn::Failed(i) => Boundary::Failed(acl(i)),
            BoundaryIn::Unfenced(i) => Boundary::Unfenced(acl(i)),
        },
        record: match input.read {
            Read::Decoded => RecordRead::Read(record),
            Read::Failed(i) => RecordRead::Failed(acl(i)),
            Read::NotRead => RecordRead::NotRead,
        },
        device: match input.device {
            DeviceIn::NotMade => None,
            DeviceIn::Clean => Some(DeviceVerdict::Clean),
            DeviceIn::Fault(i) => Some(DeviceVerdict::Fault(acl(i))),
            DeviceIn::Returned(i) => {
                Some(DeviceVerdict::Returned { aicpu: Some(acl(i)), aicore: None })
            }
            DeviceIn::LeftBy(i, run) => {
                Some(DeviceVerdict::LeftBy { code: acl(i), left_by: u64::from(run) })
            }
            DeviceIn::Covering(i, behind) => {
                Some(DeviceVerdict::Covering { code: acl(i), behind: behind.max(1) })
            }
        },
    }
}

fn header(header: HeaderIn) -> HeaderRead {
    match header {
        HeaderIn::Unread => HeaderRead::Unread,
        HeaderIn::Clean => HeaderRead::Clean,
        HeaderIn::Latched { sched, code } => HeaderRead::Latched(Latch {
            source: if sched { LatchSource::Sched } else { LatchSource::Orch },
            code: RuntimeCode::ALL
                .get(usize::from(code) % (RuntimeCode::ALL.len() + 1))
                .copied()
                .unwrap_or(RuntimeCode::Unknown(-1)),
        }),
    }
}

/// Checks the verdict rule's properties on one input.
fn check_judge(
    evidence: &Evidence,
    header: HeaderRead,
    reached: &mut Reached,
) -> Result<(), String> {
    let (rule, judgement) = judge(evidence, header);
    reached.insert(rule_bit(rule));
    let complete = evidence.boundary == Boundary::Complete;
    match (evidence.channel, judgement) {
        (VerdictChannel::Record, Judgement::Ok)
            if !complete || evidence.record != RecordRead::Read(Record::Ok) =>
        {
            return Err("Ok on the record channel without a published ok record".into());
        }
        (VerdictChannel::StreamSync, Judgement::Ok)
            if !complete
                || evidence.device != Some(DeviceVerdict::Clean)
                || header != HeaderRead::Clean =>
        {
            return Err("Ok on the stream-sync channel without clean streams and header".into());
        }
        _ => {}
    }
    // A record error decides whatever the device verdict and the header.
    if let (VerdictChannel::Record, true, RecordRead::Read(Record::Error { code, source, .. })) =
        (evidence.channel, complete, evidence.record)
    {
        let want = (VerdictRule::RecordError, Judgement::Fail(Failure::Record { code, source }));
        let bare = Evidence { device: None, ..*evidence };
        if (rule, judgement) != want || judge(&bare, HeaderRead::Unread) != want {
            return Err(format!("a record error gave {rule} {judgement:?}"));
        }
    }
    // The stream-synchronize channel never reads the record.
    if evidence.channel == VerdictChannel::StreamSync {
        let unread = Evidence { record: RecordRead::NotRead, ..*evidence };
        if judge(&unread, header) != (rule, judgement) {
            return Err("the stream-sync channel's judgement depends on the record".into());
        }
    }
    let asks = judge(evidence, HeaderRead::Unread).1 == Judgement::NeedsDeviceVerdict;
    if needs_device_verdict(evidence) != asks {
        return Err(format!("needs_device_verdict is not judge asking ({asks})"));
    }
    // Clean, or another run's code, judged as clean (L-8a).
    let clean =
        matches!(evidence.device, Some(DeviceVerdict::Clean | DeviceVerdict::LeftBy { .. }));
    if judgement == Judgement::NeedsHeader && !clean {
        return Err("asked for the header before a clean device verdict".into());
    }
    if let Judgement::Fail(failure) = judgement {
        check_failure(&failure)?;
    }
    Ok(())
}

/// Classifies and prints a failure the rule gave; a record error classifies as its code
/// latched.
fn check_failure(failure: &Failure) -> Result<(), String> {
    let c = classify(failure);
    let rule = Rule::of(failure);
    if c.rule != rule || c.class != rule.class() {
        return Err(format!("classify({failure:?}) = {c:?}, but the rule is {rule:?}"));
    }
    if let Failure::Record { code, .. } = *failure {
        let latched = classify(&Failure::Latched(Latch { source: LatchSource::Orch, code }));
        if latched != c {
            return Err(format!("record error {c:?}, the same code latched {latched:?}"));
        }
        if matches!(code, RuntimeCode::Unknown(_)) && c.class != Class::Poison {
            return Err(format!("unknown record code {code:?} classified {}", c.class));
        }
    }
    let line = failure_line(3, failure).to_string();
    let named = format!("class={} rule={rule}", c.class);
    if !line.starts_with("run 3 failed") || !line.contains(&named) || line.contains('\n') {
        return Err(format!("failure line {line:?} lacks the run or `{named}`"));
    }
    Ok(())
}

const fn rule_bit(rule: VerdictRule) -> u32 {
    match rule {
        VerdictRule::Unfenced => B::RuleUnfenced,
        VerdictRule::BoundaryFailed => B::RuleBoundaryFailed,
        VerdictRule::RecordError => B::RuleRecordError,
        VerdictRule::RecordOk => B::RuleRecordOk,
        VerdictRule::AwaitDeviceVerdict => B::RuleAwaitDeviceVerdict,
        VerdictRule::DeviceFault => B::RuleDeviceFault,
        VerdictRule::RecordReadFailed => B::RuleRecordReadFailed,
        VerdictRule::AwaitHeader => B::RuleAwaitHeader,
        VerdictRule::HeaderLatched => B::RuleHeaderLatched,
        VerdictRule::SynchronizedClean => B::RuleSynchronizedClean,
        VerdictRule::MalformedRecord => B::RuleMalformedRecord,
        VerdictRule::NoRecord => B::RuleNoRecord,
        VerdictRule::AttributeCode => B::RuleAttributeCode,
        VerdictRule::NoRecordBesideCode => B::RuleNoRecordBesideCode,
    }
    .bit()
}
