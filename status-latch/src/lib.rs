//! The runtime status header, the code tables and the failure classification (SPEC §5).
//!
//! What it owns:
//!
//! - the status header layouts of both runtimes as data ([`HeaderLayout`]), [`decode`] from
//!   the bytes a backend read, and [`encode`] for the simulator, tests and fuzzers;
//! - the code tables: every runtime latch code ([`RuntimeCode`]) and every ACL/RT return
//!   code that matters ([`AclCode`]), each with a name, a meaning and a hint, and what a call
//!   of the runtime's returned ([`ReturnCode`]): a latch code negated (-1..-999,
//!   [`RUNTIME_STATUS_BAND`]) is that latched failure, any other value an ACL code;
//! - the one classification policy ([`classify`], [`Rule`]): every [`Failure`] is
//!   [`Class::RunOnly`] or [`Class::Poison`], with the documented reason;
//! - the per-run result record ([`decode_record`], [`encode_record`], [`RECORD_LAYOUT`]):
//!   a record counts only when it carries this run's epoch;
//! - the verdict rule (L-8, [`judge`], [`VerdictRule`]): a run is `Ok` only on positive
//!   evidence, and every other shape says which evidence it still needs or how it failed;
//! - the attribution of a synchronize's code (L-8a, [`attribute`], [`AttributionRule`]): a
//!   code is charged by evidence (a sticky mark, the records of the runs it covered), never
//!   by who asked;
//! - the stable log line for a failed run ([`failure_line`]) and the Markdown tables
//!   generated into `docs/status-codes.md` ([`status_codes_doc`]).
//!
//! Invariant: total over its inputs. `decode` and `decode_record` never panic, whatever the
//! bytes; `judge` gives a row for every input; unknown codes are values of their own
//! (`Unknown(v)`), never rejected, and classify as poison.
//!
//! Boundary: pure. It never touches a device, reads a clock or allocates on the
//! classification path; the backend reads the header and maps return values to
//! [`AclCode`], the lane decides what a [`Class`] does.
#![forbid(unsafe_code)]

mod attribution;
mod codes;
mod header;
mod line;
mod policy;
mod record;
mod render;
mod verdict;

pub use attribution::{AttributionRule, CoveredRead, attribute};
pub use codes::{AclCode, CodeInfo, RUNTIME_STATUS_BAND, ReturnCode, RuntimeCode};
pub use header::{
    DecodeError, EncodeError, FieldSpec, FieldType, HeaderField, HeaderLayout, Latch, LatchSource,
    Stall, StallDetail, Status, decode, encode, encode_into,
};
pub use line::{FailureDetail, FailureLine, failure_line};
pub use policy::{
    Class, Classification, Failure, LaunchProgress, Rule, Stage, classify, known_failures,
};
pub use record::{
    RECORD_BYTES, RECORD_LAYOUT, RECORD_PAYLOAD_MAX, RECORD_PAYLOAD_OFFSET, Record, RecordDefect,
    RecordField, RecordSource, RecordWrite, decode_record, encode_record, record_payload,
};
pub use render::{
    attribution_table, classification_table, code_table, layout_table, record_table,
    return_code_table, status_codes_doc, verdict_table,
};
pub use verdict::{
    Boundary, DeviceVerdict, Evidence, HeaderRead, Judgement, RecordRead, VerdictChannel,
    VerdictRule, judge, needs_device_verdict,
};

// The lane keeps one failure per run inline and copies statuses around: keep them small. A
// failure may name another run (`NoRecordBesideCode`): a code and a run id, 24 bytes.
static_assertions::assert_impl_all!(Failure: Copy, Send, Sync);
static_assertions::assert_impl_all!(Status: Copy, Send, Sync);
static_assertions::assert_impl_all!(Classification: Copy, Send, Sync);
static_assertions::assert_impl_all!(Evidence: Copy, Send, Sync);
static_assertions::const_assert!(core::mem::size_of::<Evidence>() <= 56);
static_assertions::const_assert!(core::mem::size_of::<Failure>() <= 24);
static_assertions::const_assert!(core::mem::size_of::<Status>() <= 80);
