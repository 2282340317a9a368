//! The status header in device memory: its layouts as data, `decode` and `encode`.

use core::fmt;

use static_assertions::const_assert;

use crate::codes::RuntimeCode;

/// Which runtime wrote the header; each has its own layout (SPEC §5.1).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum HeaderLayout {
    /// `tensormap_and_ringbuffer` (a2a3, a5): 896 bytes, latch and stall fields.
    TensormapAndRingbuffer,
    /// `host_build_graph` (a2a3, a5): 256 bytes, latch fields only.
    HostBuildGraph,
}

/// One field of the header. Names are the runtime's (`sched_stall_*` in the C++ header).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum HeaderField {
    /// The orchestrator's latched code (first writer wins); 0 = clear.
    OrchErrorCode,
    /// One bit per scheduler thread that reported an error (accumulates every reporter).
    SchedErrorBitmap,
    /// The schedulers' latched code (first writer wins); 0 = clear.
    SchedErrorCode,
    /// The scheduler thread whose code latched.
    SchedErrorThread,
    /// Why the scheduler timed out (`StallDetail`); 0 = no stall recorded.
    StallDetail,
    /// Tasks completed when the stall was detected.
    StallCompleted,
    /// Tasks in the run.
    StallTotal,
    /// Tasks running when the stall was detected.
    StallRunning,
    /// Tasks ready but not dispatched.
    StallReady,
    /// Tasks waiting on dependencies.
    StallWaiting,
    /// Whether the orchestrator had finished submitting (raw flag, kept as read).
    StallOrchDone,
    /// The task the stall points at.
    StallTaskId,
    /// The core the stall points at.
    StallCore,
}

impl HeaderField {
    /// The field's name in the runtime's header.
    pub const fn name(self) -> &'static str {
        match self {
            Self::OrchErrorCode => "orch_error_code",
            Self::SchedErrorBitmap => "sched_error_bitmap",
            Self::SchedErrorCode => "sched_error_code",
            Self::SchedErrorThread => "sched_error_thread",
            Self::StallDetail => "sched_stall_detail",
            Self::StallCompleted => "sched_stall_completed",
            Self::StallTotal => "sched_stall_total",
            Self::StallRunning => "sched_stall_running",
            Self::StallReady => "sched_stall_ready",
            Self::StallWaiting => "sched_stall_waiting",
            Self::StallOrchDone => "sched_stall_orch_done",
            Self::StallTaskId => "sched_stall_task_id",
            Self::StallCore => "sched_stall_core",
        }
    }
}

/// How a field's bytes are read (little-endian). The width follows from the offsets; the
/// signedness is ours: codes and ids are signed (a runtime may write -1 for "none", and a
/// garbage code must stay visible as a negative value), counts and bitmaps are unsigned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldType {
    /// 4 bytes, signed.
    I32,
    /// 4 bytes, unsigned.
    U32,
    /// 8 bytes, signed.
    I64,
}

impl FieldType {
    /// Width in bytes.
    pub const fn width(self) -> usize {
        match self {
            Self::I32 | Self::U32 => 4,
            Self::I64 => 8,
        }
    }

    /// The Rust type name, for the rendered layout table.
    pub const fn name(self) -> &'static str {
        match self {
            Self::I32 => "i32",
            Self::U32 => "u32",
            Self::I64 => "i64",
        }
    }
}

/// Where one field lives in a layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FieldSpec {
    /// The field.
    pub field: HeaderField,
    /// Byte offset from the start of the header.
    pub offset: usize,
    /// How its bytes are read.
    pub ty: FieldType,
}

const fn spec(field: HeaderField, offset: usize, ty: FieldType) -> FieldSpec {
    FieldSpec { field, offset, ty }
}

const TMR_SIZE: usize = 896;
const HBG_SIZE: usize = 256;

/// tensormap_and_ringbuffer, SPEC §5.1. 828..832 is padding that aligns the i64 task id.
const TMR_FIELDS: [FieldSpec; 13] = [
    spec(HeaderField::OrchErrorCode, 784, FieldType::I32),
    spec(HeaderField::SchedErrorBitmap, 788, FieldType::U32),
    spec(HeaderField::SchedErrorCode, 792, FieldType::I32),
    spec(HeaderField::SchedErrorThread, 796, FieldType::I32),
    spec(HeaderField::StallDetail, 800, FieldType::I32),
    spec(HeaderField::StallCompleted, 804, FieldType::U32),
    spec(HeaderField::StallTotal, 808, FieldType::U32),
    spec(HeaderField::StallRunning, 812, FieldType::U32),
    spec(HeaderField::StallReady, 816, FieldType::U32),
    spec(HeaderField::StallWaiting, 820, FieldType::U32),
    spec(HeaderField::StallOrchDone, 824, FieldType::U32),
    spec(HeaderField::StallTaskId, 832, FieldType::I64),
    spec(HeaderField::StallCore, 840, FieldType::I32),
];

/// host_build_graph, SPEC §5.1: the same four latch fields, no stall fields.
const HBG_FIELDS: [FieldSpec; 4] = [
    spec(HeaderField::OrchErrorCode, 208, FieldType::I32),
    spec(HeaderField::SchedErrorBitmap, 212, FieldType::U32),
    spec(HeaderField::SchedErrorCode, 216, FieldType::I32),
    spec(HeaderField::SchedErrorThread, 220, FieldType::I32),
];

/// Every field lies inside the header, is naturally aligned, and starts after the previous
/// one ends (the table is in offset order, so no two fields overlap).
const fn fields_fit(fields: &[FieldSpec], size: usize) -> bool {
    let mut i = 0;
    let mut end = 0;
    while i < fields.len() {
        let f = fields[i];
        let width = f.ty.width();
        if f.offset < end || f.offset % width != 0 || f.offset + width > size {
            return false;
        }
        end = f.offset + width;
        i += 1;
    }
    true
}

/// The four latch fields sit together, in the same order, in both layouts.
const fn latch_block_at(fields: &[FieldSpec], base: usize) -> bool {
    fields.len() >= 4
        && fields[0].field as u8 == HeaderField::OrchErrorCode as u8
        && fields[0].offset == base
        && fields[1].field as u8 == HeaderField::SchedErrorBitmap as u8
        && fields[1].offset == base + 4
        && fields[2].field as u8 == HeaderField::SchedErrorCode as u8
        && fields[2].offset == base + 8
        && fields[3].field as u8 == HeaderField::SchedErrorThread as u8
        && fields[3].offset == base + 12
}

// The fixed facts of SPEC §5.1, checked at compile time.
const_assert!(TMR_SIZE == 896);
const_assert!(HBG_SIZE == 256);
const_assert!(fields_fit(&TMR_FIELDS, TMR_SIZE));
const_assert!(fields_fit(&HBG_FIELDS, HBG_SIZE));
const_assert!(latch_block_at(&TMR_FIELDS, 784));
const_assert!(latch_block_at(&HBG_FIELDS, 208));

impl HeaderLayout {
    /// Both layouts.
    pub const ALL: [HeaderLayout; 2] = [Self::TensormapAndRingbuffer, Self::HostBuildGraph];

    /// The runtime's name for this layout.
    pub const fn name(self) -> &'static str {
        match self {
            Self::TensormapAndRingbuffer => "tensormap_and_ringbuffer",
            Self::HostBuildGraph => "host_build_graph",
        }
    }

    /// Header size in bytes: how many bytes the backend must read for `decode`.
    pub const fn size(self) -> usize {
        match self {
            Self::TensormapAndRingbuffer => TMR_SIZE,
            Self::HostBuildGraph => HBG_SIZE,
        }
    }

    /// Every field this layout carries, in offset order.
    pub const fn fields(self) -> &'static [FieldSpec] {
        match self {
            Self::TensormapAndRingbuffer => &TMR_FIELDS,
            Self::HostBuildGraph => &HBG_FIELDS,
        }
    }

    /// Where `field` lives, or `None` when this layout does not carry it.
    pub fn field(self, field: HeaderField) -> Option<FieldSpec> {
        self.fields().iter().copied().find(|f| f.field == field)
    }

    /// Whether the layout carries the stall detail and its locators.
    pub fn has_stall(self) -> bool {
        self.field(HeaderField::StallDetail).is_some()
    }
}

impl fmt::Display for HeaderLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the scheduler reported SCHEDULER_TIMEOUT (tensormap_and_ringbuffer only).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StallDetail {
    /// 1 (S1): tasks were running but made no progress.
    RunningStalled,
    /// 3 (S3): tasks were ready but nothing dispatched them.
    ReadyIdle,
    /// 4 (S4): the remaining tasks wait on each other.
    DepDeadlock,
    /// 5 (S5): the scheduler starved waiting for the orchestrator.
    OrchStarvation,
    /// 99: the runtime could not tell which (its own "unknown").
    Unclassified,
    /// A value this build does not know; kept as read, never rejected. Never 0 or a known
    /// value when produced by [`StallDetail::from_value`].
    Unknown(i32),
}

impl StallDetail {
    /// The known details, in value order.
    pub const ALL: [StallDetail; 5] = [
        Self::RunningStalled,
        Self::ReadyIdle,
        Self::DepDeadlock,
        Self::OrchStarvation,
        Self::Unclassified,
    ];

    /// Reads a raw value; `None` for 0 (no stall recorded).
    pub const fn from_value(value: i32) -> Option<Self> {
        Some(match value {
            0 => return None,
            1 => Self::RunningStalled,
            3 => Self::ReadyIdle,
            4 => Self::DepDeadlock,
            5 => Self::OrchStarvation,
            99 => Self::Unclassified,
            other => Self::Unknown(other),
        })
    }

    /// The raw value in the header.
    pub const fn value(self) -> i32 {
        match self {
            Self::RunningStalled => 1,
            Self::ReadyIdle => 3,
            Self::DepDeadlock => 4,
            Self::OrchStarvation => 5,
            Self::Unclassified => 99,
            Self::Unknown(v) => v,
        }
    }

    /// A short name for logs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::RunningStalled => "running-stalled",
            Self::ReadyIdle => "ready-idle",
            Self::DepDeadlock => "dep-deadlock",
            Self::OrchStarvation => "orch-starvation",
            Self::Unclassified => "unclassified",
            Self::Unknown(_) => "unrecognised",
        }
    }
}

/// The stall detail and its locators, as the scheduler wrote them on SCHEDULER_TIMEOUT.
/// Meaningful only when `detail` is set; kept raw otherwise.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Stall {
    /// Why it stalled; `None` when the field is 0.
    pub detail: Option<StallDetail>,
    /// Tasks completed.
    pub completed: u32,
    /// Tasks in the run.
    pub total: u32,
    /// Tasks running.
    pub running: u32,
    /// Tasks ready.
    pub ready: u32,
    /// Tasks waiting on dependencies.
    pub waiting: u32,
    /// The orchestrator's done flag, raw (0 = still submitting).
    pub orch_done: u32,
    /// The task the stall points at.
    pub task_id: i64,
    /// The core the stall points at.
    pub core: i32,
}

/// Which side of the runtime latched a code.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LatchSource {
    /// The orchestrator (`orch_error_code`).
    Orch,
    /// A scheduler thread (`sched_error_code`).
    Sched,
}

impl LatchSource {
    /// The header field this source latches into.
    pub const fn field(self) -> HeaderField {
        match self {
            Self::Orch => HeaderField::OrchErrorCode,
            Self::Sched => HeaderField::SchedErrorCode,
        }
    }
}

/// The code that decides a run's latched failure, and who latched it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Latch {
    /// Orchestrator or scheduler.
    pub source: LatchSource,
    /// The latched code.
    pub code: RuntimeCode,
}

impl Latch {
    /// `runtime_status` as the runtime returns it: the negated code. Wraps for `i32::MIN`
    /// (a garbage value), which stays negative and so still reads as a failure.
    pub const fn runtime_status(&self) -> i32 {
        self.code.value().wrapping_neg()
    }
}

/// A decoded status header. A latch that reads 0 is clear and is `None`: 0 is "no error",
/// not a code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Status {
    /// The orchestrator's latch.
    pub orch: Option<RuntimeCode>,
    /// The schedulers' latch.
    pub sched: Option<RuntimeCode>,
    /// The scheduler thread whose code latched (raw; meaningful when `sched` is set).
    pub sched_thread: i32,
    /// Every scheduler thread that reported, one bit each.
    pub sched_bitmap: u32,
    /// The stall detail and locators: `Some` exactly when the layout carries them
    /// (tensormap_and_ringbuffer), even when all zero.
    pub stall: Option<Stall>,
}

impl Status {
    /// A header with nothing latched, as `decode` returns it for an all-zero header.
    pub fn clean(layout: HeaderLayout) -> Self {
        Self { stall: layout.has_stall().then(Stall::default), ..Self::default() }
    }

    /// The latch that decides the run: `None` when clean; the orchestrator's code wins when
    /// both are set (SPEC §5.1).
    pub const fn latched(&self) -> Option<Latch> {
        match (self.orch, self.sched) {
            (Some(code), _) => Some(Latch { source: LatchSource::Orch, code }),
            (None, Some(code)) => Some(Latch { source: LatchSource::Sched, code }),
            (None, None) => None,
        }
    }

    /// `runtime_status`: the negated winning code, 0 when clean.
    pub const fn runtime_status(&self) -> i32 {
        match self.latched() {
            Some(latch) => latch.runtime_status(),
            None => 0,
        }
    }
}

/// A header could not be decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the layout's size.
    #[error(
        "{layout} status header needs {needed} bytes but got {got}; \
         read the whole header from the device before decoding"
    )]
    TooShort {
        /// The layout asked for.
        layout: HeaderLayout,
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
}

/// A header could not be written.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EncodeError {
    /// The output buffer is smaller than the layout's size.
    #[error(
        "{layout} status header needs {needed} bytes but the buffer has {got}; \
         pass a buffer of at least the layout's size"
    )]
    TooShort {
        /// The layout asked for.
        layout: HeaderLayout,
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
}

/// Decodes a status header. Never panics: a short buffer is [`DecodeError::TooShort`],
/// bytes past the header are ignored, and any code value (negative, garbage) decodes, as
/// [`RuntimeCode::Unknown`] when it is not a known code.
pub fn decode(layout: HeaderLayout, bytes: &[u8]) -> Result<Status, DecodeError> {
    let too_short = DecodeError::TooShort { layout, needed: layout.size(), got: bytes.len() };
    if bytes.len() < layout.size() {
        return Err(too_short);
    }
    // One pass over the layout's fields, as `encode_into` writes them (a lookup per field
    // would search the table once per field).
    let read = |offset: usize| le_bytes::<4>(bytes, offset).ok_or(too_short);
    let mut status = Status::default();
    let mut stall: Option<Stall> = None;
    for spec in layout.fields() {
        let offset = spec.offset;
        match spec.field {
            HeaderField::OrchErrorCode => {
                status.orch = RuntimeCode::from_value(i32::from_le_bytes(read(offset)?));
            }
            HeaderField::SchedErrorBitmap => {
                status.sched_bitmap = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::SchedErrorCode => {
                status.sched = RuntimeCode::from_value(i32::from_le_bytes(read(offset)?));
            }
            HeaderField::SchedErrorThread => {
                status.sched_thread = i32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallDetail => {
                stall.get_or_insert_default().detail =
                    StallDetail::from_value(i32::from_le_bytes(read(offset)?));
            }
            HeaderField::StallCompleted => {
                stall.get_or_insert_default().completed = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallTotal => {
                stall.get_or_insert_default().total = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallRunning => {
                stall.get_or_insert_default().running = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallReady => {
                stall.get_or_insert_default().ready = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallWaiting => {
                stall.get_or_insert_default().waiting = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallOrchDone => {
                stall.get_or_insert_default().orch_done = u32::from_le_bytes(read(offset)?);
            }
            HeaderField::StallTaskId => {
                stall.get_or_insert_default().task_id =
                    i64::from_le_bytes(le_bytes(bytes, offset).ok_or(too_short)?);
            }
            HeaderField::StallCore => {
                stall.get_or_insert_default().core = i32::from_le_bytes(read(offset)?);
            }
        }
    }
    status.stall = stall;
    Ok(status)
}

/// The `N` bytes at `offset`; `None` only if the layout table lied about its size (its
/// fields are checked to fit at compile time).
fn le_bytes<const N: usize>(bytes: &[u8], offset: usize) -> Option<[u8; N]> {
    offset.checked_add(N).and_then(|end| bytes.get(offset..end)).and_then(|b| b.try_into().ok())
}

/// Writes `status` into `out` at the layout's offsets, leaving every other byte as it
/// was. A clear latch (`None`) writes 0; on a layout with stall fields, `stall: None`
/// writes zeros there; on one without, `stall` is ignored. For tests, the simulator and
/// the fuzzers: it is the inverse of [`decode`].
pub fn encode_into(
    layout: HeaderLayout,
    status: &Status,
    out: &mut [u8],
) -> Result<(), EncodeError> {
    let got = out.len();
    let too_short = EncodeError::TooShort { layout, needed: layout.size(), got };
    if got < layout.size() {
        return Err(too_short);
    }
    let stall = status.stall.unwrap_or_default();
    for spec in layout.fields() {
        let value: i64 = match spec.field {
            HeaderField::OrchErrorCode => status.orch.map_or(0, RuntimeCode::value).into(),
            HeaderField::SchedErrorBitmap => status.sched_bitmap.into(),
            HeaderField::SchedErrorCode => status.sched.map_or(0, RuntimeCode::value).into(),
            HeaderField::SchedErrorThread => status.sched_thread.into(),
            HeaderField::StallDetail => stall.detail.map_or(0, StallDetail::value).into(),
            HeaderField::StallCompleted => stall.completed.into(),
            HeaderField::StallTotal => stall.total.into(),
            HeaderField::StallRunning => stall.running.into(),
            HeaderField::StallReady => stall.ready.into(),
            HeaderField::StallWaiting => stall.waiting.into(),
            HeaderField::StallOrchDone => stall.orch_done.into(),
            HeaderField::StallTaskId => stall.task_id,
            HeaderField::StallCore => stall.core.into(),
        };
        let bytes = value.to_le_bytes();
        let width = spec.ty.width();
        // Little-endian: the low `width` bytes of the i64 are the field's bytes (for u32
        // values, widened without sign extension, they are the u32's own bytes).
        let src = bytes.get(..width).ok_or(too_short)?;
        let dst = spec
            .offset
            .checked_add(width)
            .and_then(|end| out.get_mut(spec.offset..end))
            .ok_or(too_short)?;
        dst.copy_from_slice(src);
    }
    Ok(())
}

/// Encodes `status` into a fresh zeroed buffer of exactly the layout's size.
pub fn encode(layout: HeaderLayout, status: &Status) -> Vec<u8> {
    let mut out = vec![0; layout.size()];
    // Cannot fail: the buffer has exactly the layout's size.
    let _ = encode_into(layout, status, &mut out);
    out
}

/// The compile-time table checks run again at run time, so that they can fail: each
/// `const_assert!` above only ever sees the real tables, which pass, so a check weakened to
/// `true` would go unnoticed. These call the same `const fn`s on deliberately broken copies
/// of the tables and expect `false`.
#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `(offset, type)` fields; which field each is does not matter to
    /// `fields_fit`.
    fn table(fields: &[(usize, FieldType)]) -> Vec<FieldSpec> {
        fields.iter().map(|&(offset, ty)| spec(HeaderField::StallCompleted, offset, ty)).collect()
    }

    #[test]
    fn the_real_tables_pass_both_checks() {
        assert!(fields_fit(&TMR_FIELDS, TMR_SIZE));
        assert!(fields_fit(&HBG_FIELDS, HBG_SIZE));
        assert!(latch_block_at(&TMR_FIELDS, 784));
        assert!(latch_block_at(&HBG_FIELDS, 208));
    }

    #[test]
    fn fields_fit_accepts_adjacent_fields_and_a_field_ending_at_the_header_end() {
        use FieldType::{I32, I64, U32};
        assert!(fields_fit(&table(&[(4, I32), (8, U32), (16, I64)]), 24));
        assert!(fields_fit(&[], 0));
    }

    #[test]
    fn fields_fit_rejects_a_field_that_overlaps_the_previous_one() {
        use FieldType::{I32, I64};
        assert!(!fields_fit(&table(&[(8, I64), (12, I32)]), 32));
        let mut broken = TMR_FIELDS;
        broken[1].offset = broken[0].offset;
        assert!(!fields_fit(&broken, TMR_SIZE));
    }

    #[test]
    fn fields_fit_rejects_a_misaligned_field() {
        use FieldType::{I32, I64};
        assert!(!fields_fit(&table(&[(2, I32)]), 8));
        assert!(!fields_fit(&table(&[(4, I64)]), 16));
        let mut broken = TMR_FIELDS;
        // The i64 task id moved into the padding before it: 4-aligned, not 8-aligned.
        broken[11].offset = 828;
        assert!(!fields_fit(&broken, TMR_SIZE));
    }

    #[test]
    fn fields_fit_rejects_a_field_past_the_header_end() {
        use FieldType::{I32, I64};
        assert!(!fields_fit(&table(&[(8, I32)]), 8));
        assert!(!fields_fit(&table(&[(8, I64)]), 12));
        assert!(!fields_fit(&HBG_FIELDS, 220));
        assert!(!fields_fit(&TMR_FIELDS, HBG_SIZE));
    }

    #[test]
    fn latch_block_at_rejects_the_wrong_base() {
        assert!(!latch_block_at(&TMR_FIELDS, 208));
        assert!(!latch_block_at(&HBG_FIELDS, 784));
        assert!(!latch_block_at(&HBG_FIELDS, 212));
    }

    #[test]
    fn latch_block_at_rejects_a_table_shorter_than_the_latch_block() {
        assert!(!latch_block_at(&HBG_FIELDS[..3], 208));
        assert!(!latch_block_at(&[], 208));
    }

    #[test]
    fn latch_block_at_rejects_any_latch_field_moved_or_replaced() {
        for i in 0..4 {
            let mut moved = HBG_FIELDS;
            moved[i].offset += 4;
            assert!(!latch_block_at(&moved, 208), "field {i} moved");

            let mut replaced = HBG_FIELDS;
            replaced[i].field = HeaderField::StallDetail;
            assert!(!latch_block_at(&replaced, 208), "field {i} replaced");
        }
        let mut swapped = HBG_FIELDS;
        swapped.swap(0, 2);
        (swapped[0].offset, swapped[2].offset) = (208, 216);
        assert!(!latch_block_at(&swapped, 208), "orch and sched codes swapped");
    }
}
