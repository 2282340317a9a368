//! Markdown renderings of the layouts, code tables, result record, verdict rule and policy:
//! written to `docs/status-codes.md` by `cargo xtask codegen`, and committed only there.
//!
//! Every conclusion in a table is computed by the code it documents (`decode_record`,
//! `judge`, `classify`); only the conditions and reasons are prose.

use core::fmt::Write as _;

use crate::attribution::{AttributionRule, CoveredRead, attribute};
use crate::codes::{AclCode, RUNTIME_STATUS_BAND, ReturnCode, RuntimeCode};
use crate::header::{HeaderLayout, Latch, LatchSource};
use crate::policy::{Failure, Rule, Stage, classify, known_failures};
use crate::record::{
    CODE_AT, PAYLOAD_BYTES_AT, RECORD_BYTES, RECORD_LAYOUT, RECORD_PAYLOAD_MAX,
    RECORD_PAYLOAD_OFFSET, Record, RecordSource, RecordWrite, SOURCE_AT, VERDICT_AT, decode_record,
    encode_record,
};
use crate::verdict::{
    Boundary, DeviceVerdict, Evidence, HeaderRead, Judgement, RecordRead, VerdictChannel,
    VerdictRule, judge,
};

/// A table cell: a `|` would end the cell early.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Markdown: every header layout, field by field.
pub fn layout_table() -> String {
    layout_table_under("##")
}

/// `layout_table` with one heading per layout at level `h`.
fn layout_table_under(h: &str) -> String {
    let mut out = String::new();
    for layout in HeaderLayout::ALL {
        let _ = writeln!(out, "{h} {} ({} bytes)\n", layout.name(), layout.size());
        out.push_str("| field | offset | type |\n|---|---:|---|\n");
        for spec in layout.fields() {
            let _ =
                writeln!(out, "| {} | {} | {} |", spec.field.name(), spec.offset, spec.ty.name());
        }
        out.push('\n');
    }
    out
}

/// Markdown: every runtime latch code and every named ACL/RT code, with name, meaning and
/// hint (and each runtime code's class when latched).
pub fn code_table() -> String {
    code_table_under("##")
}

/// `code_table` with its section headings at level `h` (`"##"`, `"###"`).
fn code_table_under(h: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{h} Runtime latch codes\n");
    out.push_str("`runtime_status = -code`; 0 is the clear latch, not a code.\n\n");
    out.push_str("| code | name | class | meaning | hint |\n|---:|---|---|---|---|\n");
    for code in RuntimeCode::ALL.into_iter().chain([RuntimeCode::Unknown(-1)]) {
        let class =
            classify(&Failure::Latched(crate::Latch { source: crate::LatchSource::Orch, code }))
                .class;
        let value = match code {
            RuntimeCode::Unknown(_) => "other".to_string(),
            known => known.value().to_string(),
        };
        let _ = writeln!(
            out,
            "| {value} | {} | {class} | {} | {} |",
            code.name(),
            cell(code.meaning()),
            cell(code.hint())
        );
    }
    let _ = writeln!(out, "\n{h} ACL/RT return codes\n");
    out.push_str(
        "0 (`ACL_SUCCESS`) is success, not a code. A device-fault code poisons at every stage.\n\n",
    );
    out.push_str("| code | name | device fault | meaning | hint |\n|---:|---|---|---|---|\n");
    for code in AclCode::ALL.into_iter().chain([AclCode::Unknown(-1)]) {
        let value = match code {
            AclCode::Unknown(_) => "other".to_string(),
            known => known.raw().to_string(),
        };
        let fault = match code {
            AclCode::Unknown(_) => "507xxx except 507004",
            known => yes_no(known.is_device_fault()),
        };
        let _ = writeln!(
            out,
            "| {value} | {} | {fault} | {} | {} |",
            code.name(),
            cell(code.meaning()),
            cell(code.hint())
        );
    }
    out
}

/// Markdown: how a value a call of the runtime's returned is read ([`ReturnCode`]): an example
/// per kind of value, what it is read as, and its class and rule at each stage whose call is
/// the runtime's.
pub fn return_code_table() -> String {
    let mut out = String::new();
    let (high, low) = (RUNTIME_STATUS_BAND.end(), RUNTIME_STATUS_BAND.start());
    let _ = writeln!(
        out,
        "A runner callback (prepare, a kernel launch, finalise, an upload) returns 0, one of the \
         runtime's latch codes negated ({high} to {low}, `runtime_status = -code`: that latched \
         failure, named and classified as the same code latched, except where the stage decides \
         alone), or an ACL/RT code. No ACL code lies in the band, so an embedding's own \
         sentinels lie outside it (lane-capi's `RUN_LANE_PREPARE_INCOMPATIBLE` is -1002, \
         `RUN_LANE_FINALISE_VALIDATION_FAILED` -1101: docs/embedding.md); a value below the band \
         that is no sentinel reads as an unnamed ACL code.\n"
    );
    out.push_str("| returned | read as | name |");
    for stage in Stage::RETURNING {
        let _ = write!(out, " at {stage} |");
    }
    out.push_str("\n|---:|---|---|");
    for _ in Stage::RETURNING {
        out.push_str("---|");
    }
    out.push('\n');
    for raw in [-1, -3, -4, -6, -100, -103, -12, -999, -1000, -1002, 107_000, 507_015, 12] {
        let Some(code) = ReturnCode::from_raw(raw) else {
            continue;
        };
        let read_as = match code {
            ReturnCode::Runtime(RuntimeCode::Unknown(_)) => "unknown runtime latch code",
            ReturnCode::Runtime(_) => "runtime latch code",
            ReturnCode::Acl(AclCode::Unknown(_)) => "unnamed ACL/RT code",
            ReturnCode::Acl(_) => "ACL/RT code",
        };
        let _ = write!(out, "| {raw} | {read_as} | {} |", code.name());
        for stage in Stage::RETURNING {
            let c = classify(&Failure::returned(stage, code));
            let _ = write!(out, " {} `{}` |", c.class, c.rule);
        }
        out.push('\n');
    }
    out
}

/// Markdown: the policy's rules with their class and reason, then every known failure
/// (every code at every stage, and unknown codes) with the rule that classifies it.
pub fn classification_table() -> String {
    classification_table_under("##")
}

/// `classification_table` with its section headings at level `h`.
fn classification_table_under(h: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{h} Rules\n");
    out.push_str("Tried in this order; the first that matches decides.\n\n");
    out.push_str("| rule | class | why |\n|---|---|---|\n");
    for rule in Rule::ALL {
        let _ = writeln!(out, "| {} | {} | {} |", rule.name(), rule.class(), cell(rule.reason()));
    }
    let _ = writeln!(out, "\n{h} Every failure\n");
    out.push_str("| failure | stage | code | name | class | rule |\n|---|---|---:|---|---|---|\n");
    for failure in known_failures() {
        let (kind, stage, code, name) = match failure {
            Failure::Latched(latch) => (
                "latched",
                "runtime latch".to_string(),
                latch.code.value().to_string(),
                latch.code.name(),
            ),
            Failure::Acl { stage, code } => {
                ("acl", stage.name().to_string(), code.raw().to_string(), code.name())
            }
            Failure::Launch { progress, code } => (
                "launch",
                format!("{} ({})", progress.stage().name(), progress.name()),
                code.raw().to_string(),
                code.name(),
            ),
            Failure::HostWaitTimeout => {
                ("host wait timeout", "host wait".to_string(), "-".to_string(), "-")
            }
            Failure::CopyBackValidation => {
                ("copy-back validation", "copy-back".to_string(), "-".to_string(), "-")
            }
            Failure::Record { code, source } => (
                "result record",
                format!("record ({source})"),
                code.value().to_string(),
                code.name(),
            ),
            Failure::NoRecord => {
                ("no result record", "device verdict clean".to_string(), "-".to_string(), "-")
            }
            Failure::NoRecordBesideCode { code, left_by } => (
                "no result record",
                format!("device verdict: {} left by run {left_by}", code.raw()),
                "-".to_string(),
                "-",
            ),
            Failure::Covering { code, behind } => (
                "device verdict, covering",
                format!("{} ({behind} behind)", Stage::StreamSync.name()),
                code.raw().to_string(),
                code.name(),
            ),
            Failure::MalformedRecord(_) => {
                ("malformed record", "device verdict clean".to_string(), "-".to_string(), "-")
            }
            Failure::Returned { stage, code } => (
                "returned latch code",
                format!("{} (returned)", stage.name()),
                code.value().wrapping_neg().to_string(),
                code.name(),
            ),
        };
        let c = classify(&failure);
        let _ = writeln!(out, "| {kind} | {stage} | {code} | {name} | {} | {} |", c.class, c.rule);
    }
    out
}

/// The epoch the decode table's example bytes are read for.
const EXAMPLE_EPOCH: u64 = 7;

/// `base` with the u32 at `at` set to `value`.
fn with_word(base: &[u8; RECORD_BYTES], at: usize, value: u32) -> Vec<u8> {
    let mut bytes = base.to_vec();
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    bytes
}

/// One example per shape [`decode_record`] tells apart, in the order it checks them: the
/// condition on the bytes, then bytes and an epoch that meet it.
fn decode_examples() -> Vec<(&'static str, Vec<u8>, u64)> {
    let e = EXAMPLE_EPOCH;
    let ok = encode_record(e, &RecordWrite::Ok);
    let error = encode_record(
        e,
        &RecordWrite::Error {
            code: RuntimeCode::ScopeDeadlock.value(),
            source: RecordSource::Header,
            payload: &[0; 64],
        },
    );
    vec![
        ("the host asks with epoch 0, whatever the bytes", ok.to_vec(), 0),
        ("fewer than 24 bytes were read (the fixed fields)", ok[..10].to_vec(), e),
        (
            "`published` is not the run's epoch: 0 in a fresh region, or an earlier run's epoch",
            encode_record(e - 1, &RecordWrite::Ok).to_vec(),
            e,
        ),
        (
            "`payload_bytes` is over 256 (checked before `verdict`)",
            with_word(&error, PAYLOAD_BYTES_AT, 257),
            e,
        ),
        ("`verdict` is 0", with_word(&ok, VERDICT_AT, 0), e),
        (
            "`verdict` is 1 and `completion_code`, `code_source` and `payload_bytes` are 0",
            ok.to_vec(),
            e,
        ),
        (
            "`verdict` is 1 with a non-zero code, source or payload",
            with_word(&ok, CODE_AT, u32::from_le_bytes((-9_i32).to_le_bytes())),
            e,
        ),
        ("`verdict` is 2 and `completion_code` is 0", with_word(&error, CODE_AT, 0), e),
        (
            "`verdict` is 2, the code is not 0, `code_source` is not 1, 2 or 3",
            with_word(&error, SOURCE_AT, 0),
            e,
        ),
        ("`verdict` is 2, the code is not 0, `code_source` is 1, 2 or 3", error.to_vec(), e),
        ("`verdict` is over 2", with_word(&ok, VERDICT_AT, 3), e),
    ]
}

/// A judgement in words, with the failure's class and rule.
fn judgement_text(judgement: Judgement) -> String {
    match judgement {
        Judgement::Ok => "`Ok`".to_string(),
        Judgement::NeedsDeviceVerdict => "make the device verdict".to_string(),
        Judgement::NeedsHeader => "read the status header".to_string(),
        Judgement::NeedsAttribution => "attribute the code (L-8a)".to_string(),
        Judgement::Fail(failure) => {
            let c = classify(&failure);
            let at = failure.stage().map_or(String::new(), |stage| format!(" at {stage}"));
            format!("fail `{}`{at}: {} (`{}`)", failure.name(), c.class, c.rule)
        }
    }
}

/// What the verdict rule does with a completed run's `record` on the record channel: the
/// row that fires, and, when it needs the device verdict, the row once the device verdict
/// and the header came back clean.
fn record_verdict(record: Record) -> String {
    let mut evidence = Evidence {
        channel: VerdictChannel::Record,
        boundary: Boundary::Complete,
        record: RecordRead::Read(record),
        device: None,
    };
    let (rule, judgement) = judge(&evidence, HeaderRead::Unread);
    if judgement != Judgement::NeedsDeviceVerdict {
        return format!("`{rule}`: {}", judgement_text(judgement));
    }
    evidence.device = Some(DeviceVerdict::Clean);
    let (then, judgement) = judge(&evidence, HeaderRead::Clean);
    format!(
        "`{rule}`, then on a clean device verdict and header `{then}`: {}",
        judgement_text(judgement)
    )
}

/// Markdown: the result record's layout (offset, type, field), then every shape the decoder
/// tells apart with the condition on the bytes, an example decode and what the verdict rule
/// does with it.
pub fn record_table() -> String {
    record_table_under("##")
}

/// `record_table` with its section headings at level `h`.
fn record_table_under(h: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{h} Record layout ({RECORD_BYTES} bytes)\n");
    out.push_str("| offset | type | field | meaning |\n|---:|---|---|---|\n");
    for field in RECORD_LAYOUT {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} |",
            field.offset,
            field.ty,
            field.name,
            cell(field.meaning)
        );
    }
    let _ = writeln!(out, "\n{h} Decode\n");
    let _ = writeln!(
        out,
        "`decode_record(bytes, epoch)`, checked in this order; the first that holds decides. \
         The examples are read for epoch {EXAMPLE_EPOCH}; the payload starts at byte \
         {RECORD_PAYLOAD_OFFSET} and holds at most {RECORD_PAYLOAD_MAX} bytes. The verdict rule \
         column is `judge` on a completed run of the record channel.\n"
    );
    out.push_str(
        "| shape | condition on the bytes | decodes to (example) | verdict rule |\n|---|---|---|---|\n",
    );
    for (condition, bytes, epoch) in decode_examples() {
        let record = decode_record(&bytes, epoch);
        let shape = match record {
            Record::Malformed(defect) => format!("malformed: {}", defect.name()),
            other => other.name().to_string(),
        };
        let _ = writeln!(
            out,
            "| {shape} | {} | {} | {} |",
            cell(condition),
            cell(&record.to_string()),
            cell(&record_verdict(record))
        );
    }
    out
}

/// The evidence dimensions the combination table enumerates: channel, boundary, record,
/// device verdict, header. Each has a few representative values (the functions below).
const DIMENSIONS: usize = 5;

fn channels() -> [(String, VerdictChannel); 2] {
    VerdictChannel::ALL.map(|c| (c.name().to_string(), c))
}

fn boundaries() -> [(String, Boundary); 3] {
    let failed = AclCode::RtEventSyncTimeout;
    let unfenced = AclCode::RtParamInvalid;
    [
        ("complete".to_string(), Boundary::Complete),
        (format!("wait failed ({})", failed.raw()), Boundary::Failed(failed)),
        (format!("unfenced ({})", unfenced.raw()), Boundary::Unfenced(unfenced)),
    ]
}

fn records() -> [(String, RecordRead); 6] {
    let code = RuntimeCode::ScopeDeadlock;
    let read_failed = AclCode::RtParamInvalid;
    let malformed = crate::record::RecordDefect::NoVerdict;
    [
        ("ok".to_string(), RecordRead::Read(Record::Ok)),
        (
            format!("error {} ({})", code.value(), RecordSource::Header),
            RecordRead::Read(Record::Error { code, source: RecordSource::Header, payload_len: 0 }),
        ),
        ("never published".to_string(), RecordRead::Read(Record::NeverPublished { stamp: 0 })),
        (
            format!("malformed ({})", malformed.name()),
            RecordRead::Read(Record::Malformed(malformed)),
        ),
        (format!("read failed ({})", read_failed.raw()), RecordRead::Failed(read_failed)),
        ("not read".to_string(), RecordRead::NotRead),
    ]
}

fn devices() -> [(String, Option<DeviceVerdict>); 6] {
    let fault = AclCode::RtAicpuException;
    let code = fault.raw();
    [
        ("not made".to_string(), None),
        ("clean".to_string(), Some(DeviceVerdict::Clean)),
        (
            format!("{code} returned, not attributed"),
            Some(DeviceVerdict::Returned { aicpu: Some(fault), aicore: None }),
        ),
        (format!("{code}, this run's"), Some(DeviceVerdict::Fault(fault))),
        (
            format!("{code}, this run's, 1 behind"),
            Some(DeviceVerdict::Covering { code: fault, behind: 1 }),
        ),
        (format!("{code}, left by run 4"), Some(DeviceVerdict::LeftBy { code: fault, left_by: 4 })),
    ]
}

fn headers() -> [(String, HeaderRead); 3] {
    let latch = Latch { source: LatchSource::Orch, code: RuntimeCode::ExplicitOrchFatal };
    [
        ("not read".to_string(), HeaderRead::Unread),
        ("clean".to_string(), HeaderRead::Clean),
        (format!("latched {}", latch.code.value()), HeaderRead::Latched(latch)),
    ]
}

/// How many representative values each dimension has.
const SIZES: [usize; DIMENSIONS] = [2, 3, 6, 6, 3];

/// `judge` on the combination `at` (an index into each dimension's values).
fn judge_at(at: [usize; DIMENSIONS]) -> (VerdictRule, Judgement) {
    let evidence = Evidence {
        channel: channels()[at[0]].1,
        boundary: boundaries()[at[1]].1,
        record: records()[at[2]].1,
        device: devices()[at[3]].1,
    };
    judge(&evidence, headers()[at[4]].1)
}

/// Every completion of `at` from dimension `from` on, each dimension over its values.
fn completions(at: [usize; DIMENSIONS], from: usize) -> Vec<[usize; DIMENSIONS]> {
    let mut out = vec![at];
    for dim in from..DIMENSIONS {
        out = out
            .into_iter()
            .flat_map(|a| {
                (0..SIZES[dim]).map(move |i| {
                    let mut b = a;
                    b[dim] = i;
                    b
                })
            })
            .collect();
    }
    out
}

/// Whether `judge` ignores dimension `dim` under the prefix `at[..dim]`, whatever the later
/// dimensions hold.
fn ignored(at: [usize; DIMENSIONS], dim: usize) -> bool {
    completions(at, dim + 1).into_iter().all(|c| {
        (1..SIZES[dim]).all(|i| {
            let mut other = c;
            other[dim] = i;
            let mut first = c;
            first[dim] = 0;
            judge_at(other) == judge_at(first)
        })
    })
}

/// The combination table's rows: a value index per dimension, `None` where `judge` ignores
/// the dimension under the values to its left.
fn combination_rows() -> Vec<[Option<usize>; DIMENSIONS]> {
    fn walk(
        at: [usize; DIMENSIONS],
        row: [Option<usize>; DIMENSIONS],
        dim: usize,
        out: &mut Vec<[Option<usize>; DIMENSIONS]>,
    ) {
        if dim == DIMENSIONS {
            out.push(row);
            return;
        }
        if ignored(at, dim) {
            walk(at, row, dim + 1, out);
            return;
        }
        for i in 0..SIZES[dim] {
            let (mut at, mut row) = (at, row);
            at[dim] = i;
            row[dim] = Some(i);
            walk(at, row, dim + 1, out);
        }
    }
    let mut out = Vec::new();
    walk([0; DIMENSIONS], [None; DIMENSIONS], 0, &mut out);
    out
}

/// Markdown: the verdict rule's rows ([`VerdictRule::ALL`], in the order `judge` tries
/// them) with their evidence and conclusion, then representative evidence combinations with
/// the row that fires and the judgement, computed by `judge`.
pub fn verdict_table() -> String {
    verdict_table_under("##")
}

/// `verdict_table` with its section headings at level `h`.
fn verdict_table_under(h: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{h} Rows\n");
    out.push_str(
        "`judge(evidence, header)` tries these in order; the first that matches decides. A run is \
         `Ok` only on positive evidence (L-8).\n\n",
    );
    out.push_str("| # | row | evidence | conclusion |\n|---:|---|---|---|\n");
    for (i, rule) in VerdictRule::ALL.into_iter().enumerate() {
        let (name, evidence, conclusion) = rule.row();
        let _ = writeln!(out, "| {} | {name} | {} | {} |", i + 1, cell(evidence), cell(conclusion));
    }
    let _ = writeln!(out, "\n{h} Evidence combinations\n");
    out.push_str(
        "Every combination of these values, through `judge`; *any* marks a column `judge` \
         ignores given the columns to its left. Codes: 507047 event sync timeout, 107000 \
         parameter invalid, 507018 AICPU exception; the record error and the latch are runtime \
         codes (1 SCOPE_DEADLOCK, 9 EXPLICIT_ORCH_FATAL).\n\n",
    );
    out.push_str(
        "| channel | boundary | record | device verdict | header | row | judgement |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let (c, b, r, d, hd) = (channels(), boundaries(), records(), devices(), headers());
    for row in combination_rows() {
        let label = |dim: usize| -> String {
            let Some(i) = row[dim] else {
                return "*any*".to_string();
            };
            match dim {
                0 => c[i].0.clone(),
                1 => b[i].0.clone(),
                2 => r[i].0.clone(),
                3 => d[i].0.clone(),
                _ => hd[i].0.clone(),
            }
        };
        let (rule, judgement) = judge_at(row.map(|i| i.unwrap_or(0)));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {rule} | {} |",
            label(0),
            label(1),
            label(2),
            label(3),
            label(4),
            cell(&judgement_text(judgement))
        );
    }
    out
}

/// An attribution example: the AICPU and AICore streams' codes, the sticky mark, the covered
/// records.
type Example = (Option<AclCode>, Option<AclCode>, Option<u64>, Vec<CoveredRead>);

/// Markdown: the attribution's rows ([`AttributionRule::ALL`], in the order `attribute`
/// tries them), then examples computed by `attribute`.
pub fn attribution_table() -> String {
    attribution_table_under("##")
}

/// `attribution_table` with its section headings at level `h`.
fn attribution_table_under(h: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{h} Rows\n");
    out.push_str(
        "`attribute(aicpu, aicore, sticky, covered)` tries these in order when the device verdict \
         returned a code (L-8a); the first that matches decides. `sticky` is the run whose fatal status \
         the AICPU stream holds; `covered` the record reads of the runs queued behind that the \
         synchronize waited for.\n\n",
    );
    out.push_str("| # | row | evidence | conclusion |\n|---:|---|---|---|\n");
    for (i, rule) in AttributionRule::ALL.into_iter().enumerate() {
        let (name, evidence, conclusion) = rule.row();
        let _ = writeln!(out, "| {} | {name} | {} | {} |", i + 1, cell(evidence), cell(conclusion));
    }
    let _ = writeln!(out, "\n{h} Examples\n");
    out.push_str(
        "The awaited run is run 5. Codes: 507018 AICPU exception (a fatal status reads as it), \
         507015 AICore exception, 507046 the synchronize's timeout.\n\n",
    );
    out.push_str(
        "| AICPU stream | AICore stream | sticky mark | covered records | row | device verdict |\n\
         |---|---|---|---|---|---|\n",
    );
    let fatal = AclCode::RtAicpuException;
    let aicore = AclCode::RtAicoreException;
    let error = RecordRead::Read(Record::Error {
        code: RuntimeCode::ScopeDeadlock,
        source: RecordSource::Header,
        payload_len: 0,
    });
    let ok = RecordRead::Read(Record::Ok);
    let none = RecordRead::Read(Record::NeverPublished { stamp: 0 });
    let read = |run, record| CoveredRead { run, record };
    let examples: [Example; 7] = [
        (Some(fatal), None, Some(4), vec![]),
        (Some(fatal), None, None, vec![read(6, error)]),
        (Some(fatal), None, None, vec![read(6, ok)]),
        (Some(fatal), None, None, vec![]),
        (Some(fatal), Some(aicore), Some(4), vec![read(6, none)]),
        (None, Some(aicore), None, vec![read(6, none)]),
        (Some(AclCode::RtStreamSyncTimeout), None, Some(4), vec![read(6, error)]),
    ];
    let code = |c: Option<AclCode>| c.map_or_else(|| "clean".to_string(), |c| c.raw().to_string());
    let record = |r: RecordRead| match r {
        RecordRead::Read(Record::Ok) => "ok",
        RecordRead::Read(Record::Error { .. }) => "error",
        _ => "none",
    };
    for (aicpu, core, sticky, covered) in examples {
        let (rule, verdict) = attribute(aicpu, core, sticky, &covered);
        let reads: Vec<String> =
            covered.iter().map(|c| format!("run {} {}", c.run, record(c.record))).collect();
        let verdict = match verdict {
            DeviceVerdict::LeftBy { code, left_by } => {
                format!("`LeftBy` {}: run {left_by}'s", code.raw())
            }
            DeviceVerdict::Fault(code) => format!("`Fault` {}: run 5's", code.raw()),
            DeviceVerdict::Covering { code, behind } => {
                format!("`Covering` {}: run 5's, {behind} behind", code.raw())
            }
            other => format!("`{other:?}`"),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {rule} | {verdict} |",
            code(aicpu),
            code(core),
            sticky.map_or_else(|| "none".to_string(), |run| format!("run {run}")),
            if reads.is_empty() { "none".to_string() } else { reads.join(", ") },
        );
    }
    out
}

/// What `docs/status-codes.md` holds: a legend, the header layouts, the result record, the
/// code tables, the verdict rule and the classification table.
pub fn status_codes_doc() -> String {
    let mut out = String::new();
    out.push_str("# Status codes and failure classification\n\n");
    out.push_str(
        "What the `status-latch` crate knows (SPEC §5, L-8): the status header layouts, the result \
         record, the runtime latch codes, the ACL/RT return codes, the verdict rule, and the one policy \
         that classifies every failure.\n\n\
         Legend:\n\n\
         - **run-only**: fail this run; a queued successor and later runs continue.\n\
         - **poison**: the device can no longer be trusted; the lane stops, fails what is in flight and \
         recovers the device (drain, force reset, probe).\n\
         - **device fault**: an ACL code that poisons at every stage, whatever the stage would otherwise say.\n\
         - A latched failure's class does not depend on whether the orchestrator or a scheduler latched it; \
         the orchestrator's code wins when both are set.\n\
         - Unknown values are values of their own (`Unknown(v)`), never rejected; an unknown latch \
         code poisons.\n\
         - **result record**: the per-run record the runtime's device side publishes, stamped with the \
         run's epoch; only this run's own published ok record makes a run `Ok` without a stream \
         synchronize (L-8).\n\
         - **device verdict**: the bounded synchronize of the pair (AICPU stream, then AICore) that \
         materializes a stream's code when the record does not decide the run; the code is then \
         attributed by evidence (L-8a), since a synchronize returns whichever run's code its stream \
         holds.\n\n",
    );
    out.push_str("## Header layouts\n\nLittle-endian; offsets in bytes.\n\n");
    out.push_str(&layout_table_under("###"));
    out.push_str("## Result record\n\nLittle-endian; offsets in bytes.\n\n");
    out.push_str(&record_table_under("###"));
    out.push_str("\n## Codes\n\n");
    out.push_str(&code_table_under("###"));
    out.push_str("\n### What a call of the runtime's returns\n\n");
    out.push_str(&return_code_table());
    out.push_str("\n## Verdict rule\n\n");
    out.push_str(&verdict_table_under("###"));
    out.push_str("\n## Attribution of a synchronize's code\n\n");
    out.push_str(&attribution_table_under("###"));
    out.push_str("\n## Classification\n\n");
    out.push_str(&classification_table_under("###"));
    out
}
