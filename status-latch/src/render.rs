//! Markdown renderings of the layouts, code tables and policy: snapshot-tested, and written
//! to `docs/status-codes.md` by `cargo xtask codegen`.

use core::fmt::Write as _;

use crate::codes::{AclCode, RuntimeCode};
use crate::header::HeaderLayout;
use crate::policy::{Failure, Rule, classify, known_failures};

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
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                spec.field.name(),
                spec.offset,
                spec.ty.name()
            );
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
    for code in RuntimeCode::ALL
        .into_iter()
        .chain([RuntimeCode::Unknown(-1)])
    {
        let class = classify(&Failure::Latched(crate::Latch {
            source: crate::LatchSource::Orch,
            code,
        }))
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
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            rule.name(),
            rule.class(),
            cell(rule.reason())
        );
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
            Failure::Acl { stage, code } => (
                "acl",
                stage.name().to_string(),
                code.raw().to_string(),
                code.name(),
            ),
            Failure::Launch { progress, code } => (
                "launch",
                format!("{} ({})", progress.stage().name(), progress.name()),
                code.raw().to_string(),
                code.name(),
            ),
            Failure::HostWaitTimeout => (
                "host wait timeout",
                "host wait".to_string(),
                "-".to_string(),
                "-",
            ),
            Failure::CopyBackValidation => (
                "copy-back validation",
                "copy-back".to_string(),
                "-".to_string(),
                "-",
            ),
            Failure::Record { code, source } => (
                "result record",
                format!("record ({source})"),
                code.value().to_string(),
                code.name(),
            ),
            Failure::NoRecord => (
                "no result record",
                "device verdict clean".to_string(),
                "-".to_string(),
                "-",
            ),
            Failure::MalformedRecord(_) => (
                "malformed record",
                "device verdict clean".to_string(),
                "-".to_string(),
                "-",
            ),
        };
        let c = classify(&failure);
        let _ = writeln!(
            out,
            "| {kind} | {stage} | {code} | {name} | {} | {} |",
            c.class, c.rule
        );
    }
    out
}

/// What `docs/status-codes.md` holds: a legend, the header layouts, the code tables and
/// the classification table.
pub fn status_codes_doc() -> String {
    let mut out = String::new();
    out.push_str("# Status codes and failure classification\n\n");
    out.push_str(
        "What the `status-latch` crate knows (SPEC §5): the status header layouts, the runtime latch \
         codes, the ACL/RT return codes, and the one policy that classifies every failure.\n\n\
         Legend:\n\n\
         - **run-only**: fail this run; a queued successor and later runs continue.\n\
         - **poison**: the device can no longer be trusted; the lane stops, fails what is in flight and \
         recovers the device (drain, force reset, probe).\n\
         - **device fault**: an ACL code that poisons at every stage, whatever the stage would otherwise say.\n\
         - A latched failure's class does not depend on whether the orchestrator or a scheduler latched it; \
         the orchestrator's code wins when both are set.\n\
         - Unknown values are values of their own (`Unknown(v)`), never rejected; an unknown latch \
         code poisons.\n\n",
    );
    out.push_str("## Header layouts\n\nLittle-endian; offsets in bytes.\n\n");
    out.push_str(&layout_table_under("###"));
    out.push_str("## Codes\n\n");
    out.push_str(&code_table_under("###"));
    out.push_str("\n## Classification\n\n");
    out.push_str(&classification_table_under("###"));
    out
}
