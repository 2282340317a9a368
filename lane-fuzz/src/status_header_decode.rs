//! Target `status_header_decode`: arbitrary bytes under both header layouts.
//!
//! For every layout: [`decode`] never panics and refuses exactly the buffers shorter than
//! the layout; a decoded status re-encodes ([`encode`], [`encode_into`]) to the same field
//! bytes and decodes to the same [`Status`]; the winning latch is the orchestrator's when both
//! are set; and [`classify`] and [`failure_line`] of whatever latched (and of an ACL failure
//! built from the input) never panic and agree with the policy table.

use arbitrary::Arbitrary;
use status_latch::{
    AclCode, Class, DecodeError, EncodeError, Failure, FieldType, HeaderField, HeaderLayout,
    LatchSource, LaunchProgress, Rule, RuntimeCode, Stage, StallDetail, Status, classify, decode,
    encode, encode_into, failure_line,
};

use crate::{Finding, Reached, decode as build, pick};

/// The target's name.
pub const NAME: &str = "status_header_decode";

behaviours! {
    /// The behaviours a `status_header_decode` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    DecodedTmr => "decoded tensormap_and_ringbuffer",
    DecodedHbg => "decoded host_build_graph",
    TooShort => "refused a short buffer",
    Longer => "ignored bytes past the header",
    Clean => "clean latch",
    OrchLatched => "orchestrator latched",
    SchedLatched => "scheduler latched",
    BothLatched => "both latched, orchestrator wins",
    UnknownCode => "unknown runtime code",
    StallKnown => "known stall detail",
    StallUnknown => "unknown stall detail",
    RunOnly => "classified run-only",
    Poison => "classified poison",
    AclLine => "failure line for an ACL failure",
}

/// A `status_header_decode` input: which layout the writes follow, how long the buffer is,
/// field writes that make latches likely, an extra failure, and the raw bytes.
///
/// From raw bytes: the layout, length, writes and extra failure first; every byte left is
/// a raw header byte.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The layout whose field offsets the writes use (both layouts decode the buffer).
    pub layout: Layout,
    /// The buffer's length, relative to that layout's size.
    pub length: Length,
    /// Values written at field offsets, after the raw bytes.
    pub writes: Vec<Write>,
    /// A failure classified and printed besides the latch.
    pub extra: Extra,
    /// The raw bytes the buffer starts from.
    #[arbitrary(with = crate::dense)]
    pub bytes: Vec<u8>,
}

/// A header layout.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `HeaderLayout::TensormapAndRingbuffer`.
    TensormapAndRingbuffer,
    /// `HeaderLayout::HostBuildGraph`.
    HostBuildGraph,
}

/// The buffer's length.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// The raw bytes as they are.
    Raw,
    /// Exactly the layout's size (raw bytes cut or zero-padded).
    Exact,
    /// `n % size + 1` bytes short of the layout's size.
    Short(u16),
    /// `n` bytes longer than the layout's size.
    Long(u8),
}

/// A value written at a field's offset, in the field's width, little-endian.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The field, at `index % fields` of the layout.
    pub field: u8,
    /// The value.
    pub value: Value,
}

/// Values that matter to a latch field.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// 0: clear.
    Zero,
    /// A known runtime code (or, in the stall detail field, a known detail), at
    /// `index % known`.
    Known(u8),
    /// -1.
    MinusOne,
    /// The type's minimum.
    Min,
    /// The type's maximum.
    Max,
    /// Anything.
    Raw(i64),
}

/// A failure that does not come from the header, classified and printed too.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Nothing.
    None,
    /// An ACL code at the stage `index % stages`.
    Acl {
        /// The stage index.
        stage: u8,
        /// The raw code (0 builds no failure).
        code: i32,
    },
    /// A launch failure.
    Launch {
        /// `Partial` (else `NotStarted`).
        partial: bool,
        /// The raw code (0 builds no failure).
        code: i32,
    },
    /// The host wait timed out.
    HostWaitTimeout,
    /// Host-side validation failed.
    CopyBackValidation,
}

/// Builds an [`Input`] from raw bytes (as libFuzzer does) and runs [`run`]; bytes that
/// build no input reach nothing.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    build::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}

/// Builds the buffer and checks decode, encode, classify and the failure line on it.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let mut reached = Reached::default();
    let layout = match input.layout {
        Layout::TensormapAndRingbuffer => HeaderLayout::TensormapAndRingbuffer,
        Layout::HostBuildGraph => HeaderLayout::HostBuildGraph,
    };
    let bytes = buffer(layout, input);
    let fail = |message: String| Finding::new(NAME, None, message);
    for layout in HeaderLayout::ALL {
        check_layout(layout, &bytes, &mut reached)
            .map_err(|m| fail(format!("{layout}, {} bytes: {m}", bytes.len())))?;
    }
    if let Some(failure) = extra_failure(input.extra) {
        check_failure(&failure, None, &mut reached).map_err(fail)?;
        reached.insert(B::AclLine.bit());
    }
    Ok(reached)
}

fn buffer(layout: HeaderLayout, input: &Input) -> Vec<u8> {
    let size = layout.size();
    let mut bytes = input.bytes.clone();
    match input.length {
        Length::Raw => {}
        Length::Exact => bytes.resize(size, 0),
        Length::Short(n) => bytes.resize(size - 1 - usize::from(n) % size, 0),
        Length::Long(n) => bytes.resize(size + usize::from(n), 0),
    }
    for write in &input.writes {
        let fields = layout.fields();
        let Some(spec) = fields.get(usize::from(write.field) % fields.len()) else {
            continue;
        };
        let value: i64 = match write.value {
            Value::Zero => 0,
            Value::Known(i) if spec.field == HeaderField::StallDetail => {
                pick(&StallDetail::ALL, i).map_or(0, |d| d.value().into())
            }
            Value::Known(i) => pick(&RuntimeCode::ALL, i).map_or(0, |c| c.value().into()),
            Value::MinusOne => -1,
            Value::Min => match spec.ty {
                FieldType::I32 => i32::MIN.into(),
                FieldType::U32 => 0,
                FieldType::I64 => i64::MIN,
            },
            Value::Max => match spec.ty {
                FieldType::I32 => i32::MAX.into(),
                FieldType::U32 => u32::MAX.into(),
                FieldType::I64 => i64::MAX,
            },
            Value::Raw(v) => v,
        };
        let width = spec.ty.width();
        let le = value.to_le_bytes();
        if let (Some(dst), Some(src)) =
            (bytes.get_mut(spec.offset..spec.offset + width), le.get(..width))
        {
            dst.copy_from_slice(src);
        }
    }
    bytes
}

fn check_layout(layout: HeaderLayout, bytes: &[u8], reached: &mut Reached) -> Result<(), String> {
    let size = layout.size();
    let status = match decode(layout, bytes) {
        Err(error) => {
            let want = DecodeError::TooShort { layout, needed: size, got: bytes.len() };
            if bytes.len() >= size || error != want {
                return Err(format!(
                    "decode refused with {error:?}, expected {want:?} only when short"
                ));
            }
            reached.insert(B::TooShort.bit());
            return Ok(());
        }
        Ok(_) if bytes.len() < size => {
            return Err(format!("decode accepted {} bytes, below the size {size}", bytes.len()));
        }
        Ok(status) => status,
    };
    reached.insert(match layout {
        HeaderLayout::TensormapAndRingbuffer => B::DecodedTmr.bit(),
        HeaderLayout::HostBuildGraph => B::DecodedHbg.bit(),
    });
    if bytes.len() > size {
        reached.insert(B::Longer.bit());
    }
    if status.stall.is_some() != layout.has_stall() {
        return Err(format!(
            "stall is {:?} but the layout has_stall() is {}",
            status.stall,
            layout.has_stall()
        ));
    }

    // encode is the inverse of decode: same field bytes, same status.
    let encoded = encode(layout, &status);
    if encoded.len() != size {
        return Err(format!("encode wrote {} bytes, not {size}", encoded.len()));
    }
    for spec in layout.fields() {
        let range = spec.offset..spec.offset + spec.ty.width();
        if encoded.get(range.clone()) != bytes.get(range.clone()) {
            return Err(format!(
                "field {} re-encoded as {:?}, read from {:?}",
                spec.field.name(),
                encoded.get(range.clone()),
                bytes.get(range)
            ));
        }
    }
    match decode(layout, &encoded) {
        Ok(again) if again == status => {}
        other => return Err(format!("re-encoded {status:?} decodes to {other:?}")),
    }
    let mut copy = bytes.to_vec();
    if let Err(e) = encode_into(layout, &status, &mut copy) {
        return Err(format!("encode_into refused a buffer of {} bytes: {e}", copy.len()));
    }
    if copy != bytes {
        return Err("encode_into of the decoded status changed bytes it should leave alone".into());
    }
    let mut short = vec![0; size - 1];
    let want = EncodeError::TooShort { layout, needed: size, got: size - 1 };
    if encode_into(layout, &status, &mut short) != Err(want) {
        return Err(format!("encode_into into {} bytes did not refuse with {want:?}", size - 1));
    }

    // The winning latch: the orchestrator's when both are set (SPEC §5.1).
    let latch = status.latched();
    match (status.orch, status.sched, latch) {
        (None, None, None) => reached.insert(B::Clean.bit()),
        (Some(code), sched, Some(l)) if l.source == LatchSource::Orch && l.code == code => {
            reached.insert(if sched.is_some() {
                B::BothLatched.bit()
            } else {
                B::OrchLatched.bit()
            });
        }
        (None, Some(code), Some(l)) if l.source == LatchSource::Sched && l.code == code => {
            reached.insert(B::SchedLatched.bit());
        }
        _ => return Err(format!("latched() is {latch:?} for {status:?}")),
    }
    let runtime_status = latch.map_or(0, |l| l.code.value().wrapping_neg());
    if status.runtime_status() != runtime_status {
        return Err(format!("runtime_status() {} for {latch:?}", status.runtime_status()));
    }
    if let Some(stall) = status.stall {
        match stall.detail {
            Some(StallDetail::Unknown(v)) => {
                reached.insert(B::StallUnknown.bit());
                if v == 0 || StallDetail::ALL.iter().any(|d| d.value() == v) {
                    return Err(format!("stall detail {v} decoded as unknown"));
                }
            }
            Some(_) => reached.insert(B::StallKnown.bit()),
            None => {}
        }
    }
    if let Some(latch) = latch {
        if let RuntimeCode::Unknown(v) = latch.code {
            reached.insert(B::UnknownCode.bit());
            if RuntimeCode::ALL.iter().any(|c| c.value() == v) || v == 0 {
                return Err(format!("code {v} decoded as unknown"));
            }
        }
        let failure = Failure::Latched(latch);
        let class = check_failure(&failure, Some(status), reached)?;
        // An unknown code proves nothing about the device (status-latch's invariant).
        if matches!(latch.code, RuntimeCode::Unknown(_)) && class != Class::Poison {
            return Err(format!("unknown code {:?} classified {class}", latch.code));
        }
    }
    Ok(())
}

/// Classifies and prints `failure` (with and without the status) and checks both agree
/// with the policy table.
fn check_failure(
    failure: &Failure,
    status: Option<Status>,
    reached: &mut Reached,
) -> Result<Class, String> {
    let classification = classify(failure);
    let rule = Rule::of(failure);
    if classification.rule != rule
        || classification.class != rule.class()
        || classification.reason != rule.reason()
    {
        return Err(format!(
            "classify({failure:?}) = {classification:?}, but the rule is {rule:?}"
        ));
    }
    reached.insert(match classification.class {
        Class::RunOnly => B::RunOnly.bit(),
        Class::Poison => B::Poison.bit(),
    });
    let run = 7;
    let mut lines = vec![failure_line(run, failure).to_string()];
    if let Some(status) = status {
        lines.push(failure_line(run, failure).with_status(status).to_string());
    }
    for line in lines {
        let class = format!("class={} rule={}", classification.class, rule);
        if !line.starts_with(&format!("run {run} failed")) || !line.contains(&class) {
            return Err(format!("failure line {line:?} lacks the run or `{class}`"));
        }
    }
    Ok(classification.class)
}

fn extra_failure(extra: Extra) -> Option<Failure> {
    match extra {
        Extra::None => None,
        Extra::Acl { stage, code } => {
            Some(Failure::Acl { stage: pick(&Stage::ALL, stage)?, code: AclCode::from_raw(code)? })
        }
        Extra::Launch { partial, code } => Some(Failure::Launch {
            progress: if partial { LaunchProgress::Partial } else { LaunchProgress::NotStarted },
            code: AclCode::from_raw(code)?,
        }),
        Extra::HostWaitTimeout => Some(Failure::HostWaitTimeout),
        Extra::CopyBackValidation => Some(Failure::CopyBackValidation),
    }
}
