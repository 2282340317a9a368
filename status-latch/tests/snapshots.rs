//! The rendered tables and failure lines, as reviewers read them. A policy or wording
//! change shows up as a diff: of docs/status-codes.md for the tables (committed once, there,
//! by `cargo xtask codegen`), of this file's snapshot for the failure lines.

use status_latch::{
    AclCode, Failure, HeaderLayout, Latch, LatchSource, LaunchProgress, RecordDefect, RecordSource,
    RuntimeCode, Stage, Stall, StallDetail, Status, classification_table, code_table, failure_line,
    layout_table, record_table, status_codes_doc, verdict_table,
};

#[test]
fn the_committed_status_codes_doc_is_the_rendering() {
    let path = "docs/status-codes.md";
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let doc = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let body = doc.split_once("-->\n\n").map_or("", |(_, body)| body);
    let want = format!("{}\n", status_codes_doc().trim_end());
    if body != want {
        let at = body
            .lines()
            .zip(want.lines())
            .position(|(have, want)| have != want)
            .unwrap_or_else(|| body.lines().count().min(want.lines().count()));
        panic!(
            "{path} is not the rendering from its body's line {}: run `cargo xtask codegen` \
             and review the diff",
            at + 1
        );
    }
}

#[test]
fn status_codes_doc_holds_every_table() {
    let doc = status_codes_doc();
    for table in [
        code_table(),
        classification_table(),
        layout_table(),
        record_table(),
        verdict_table(),
        status_latch::attribution_table(),
    ] {
        // The same text, whole; only the heading levels differ (one deeper in the doc).
        let deeper: Vec<String> = table
            .lines()
            .map(|line| if line.starts_with('#') { format!("#{line}") } else { line.to_owned() })
            .collect();
        let deeper = deeper.join("\n");
        // A table is a section of its own: its heading, then rows.
        assert!(
            table.starts_with("## ") && table.lines().filter(|l| l.starts_with('|')).count() > 2,
            "not a table:\n{table}"
        );
        assert!(doc.contains(deeper.trim_end()), "the doc does not hold this table:\n{table}");
    }
}

#[test]
fn failure_lines_snapshot() {
    let tmr = HeaderLayout::TensormapAndRingbuffer;
    let invalid_args =
        Failure::Latched(Latch { source: LatchSource::Orch, code: RuntimeCode::InvalidArgs });
    let sched_timeout =
        Failure::Latched(Latch { source: LatchSource::Sched, code: RuntimeCode::SchedulerTimeout });
    let stalled = Status {
        sched: Some(RuntimeCode::SchedulerTimeout),
        sched_thread: 2,
        sched_bitmap: 0b110,
        stall: Some(Stall {
            detail: Some(StallDetail::DepDeadlock),
            completed: 40,
            total: 64,
            running: 0,
            ready: 0,
            waiting: 24,
            orch_done: 1,
            task_id: 41,
            core: 7,
        }),
        ..Status::clean(tmr)
    };
    let lines = [
        failure_line(17, &invalid_args).to_string(),
        failure_line(17, &invalid_args)
            .with_status(Status { orch: Some(RuntimeCode::InvalidArgs), ..Status::clean(tmr) })
            .to_string(),
        failure_line(18, &sched_timeout).with_status(stalled).to_string(),
        failure_line(
            19,
            &Failure::Latched(Latch { source: LatchSource::Orch, code: RuntimeCode::Unknown(-3) }),
        )
        .to_string(),
        failure_line(
            20,
            &Failure::Acl { stage: Stage::EventWait, code: AclCode::RtEventSyncTimeout },
        )
        .to_string(),
        failure_line(
            21,
            &Failure::Launch {
                progress: LaunchProgress::NotStarted,
                code: AclCode::RtMemoryAllocation,
            },
        )
        .to_string(),
        failure_line(
            22,
            &Failure::Launch {
                progress: LaunchProgress::NotStarted,
                code: AclCode::RtParamInvalid,
            },
        )
        .to_string(),
        failure_line(
            23,
            &Failure::Launch { progress: LaunchProgress::Partial, code: AclCode::RtParamInvalid },
        )
        .to_string(),
        failure_line(24, &Failure::Acl { stage: Stage::CopyBack, code: AclCode::Unknown(123_456) })
            .to_string(),
        failure_line(25, &Failure::HostWaitTimeout).to_string(),
        failure_line(26, &Failure::CopyBackValidation).to_string(),
        failure_line(
            27,
            &Failure::Record {
                code: RuntimeCode::ExplicitOrchFatal,
                source: RecordSource::ThreadReturn,
            },
        )
        .to_string(),
        failure_line(
            28,
            &Failure::Record { code: RuntimeCode::SchedulerTimeout, source: RecordSource::Header },
        )
        .to_string(),
        failure_line(
            29,
            &Failure::Record { code: RuntimeCode::Unknown(-9), source: RecordSource::Shutdown },
        )
        .to_string(),
        failure_line(30, &Failure::NoRecord).to_string(),
        failure_line(31, &Failure::MalformedRecord(RecordDefect::UnknownVerdict { raw: 3 }))
            .to_string(),
        failure_line(32, &Failure::MalformedRecord(RecordDefect::Short { len: 10 })).to_string(),
        failure_line(33, &Failure::Acl { stage: Stage::RecordRead, code: AclCode::RtParamInvalid })
            .to_string(),
        failure_line(
            34,
            &Failure::Acl { stage: Stage::StreamSync, code: AclCode::RtStreamSyncTimeout },
        )
        .to_string(),
        failure_line(
            35,
            &Failure::Acl { stage: Stage::StreamSync, code: AclCode::RtStreamNotComplete },
        )
        .to_string(),
        failure_line(
            36,
            &Failure::Returned { stage: Stage::Prepare, code: RuntimeCode::FlowControlDeadlock },
        )
        .to_string(),
        failure_line(
            37,
            &Failure::Returned { stage: Stage::CopyBack, code: RuntimeCode::Unknown(12) },
        )
        .to_string(),
    ];
    for line in &lines {
        assert!(!line.contains('\n'), "a failure line is one line: {line}");
    }
    insta::assert_snapshot!(lines.join("\n"));
}
