//! The library search: order, devlib refusal, and errors that list every candidate.

use std::ffi::OsString;
use std::path::PathBuf;

use ascend_cl_sys::{AttemptFailure, LIBRARY_NAME, Search, Source};

/// An environment with exactly these variables.
fn env(vars: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> + 'static {
    let vars: Vec<(&'static str, &'static str)> = vars.to_vec();
    move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
}

#[test]
fn explicit_path_is_the_only_candidate_and_beats_the_env_var() {
    let search =
        Search::with_env(env(&[("RUN_LANE_ACL_LIB", "/from/env.so"), ("ASCEND_HOME_PATH", "/h")]))
            .explicit("/given.so");
    let candidates = search.candidates();
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].path, PathBuf::from("/given.so"));
    assert_eq!(candidates[0].source, Source::Explicit);
}

#[test]
fn env_var_explicit_path_is_the_only_candidate() {
    let candidates =
        Search::with_env(env(&[("RUN_LANE_ACL_LIB", "/from/env.so"), ("ASCEND_HOME_PATH", "/h")]))
            .candidates();
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].path, PathBuf::from("/from/env.so"));
    assert_eq!(candidates[0].source, Source::Env("RUN_LANE_ACL_LIB"));
}

#[test]
fn search_order_is_home_path_then_toolkit_home_then_prefixes_then_bare() {
    let search = Search::with_env(env(&[
        ("ASCEND_HOME_PATH", "/home-path"),
        ("ASCEND_TOOLKIT_HOME", "/toolkit-home"),
        ("RUN_LANE_ACL_LIB", ""),
    ]))
    .prefixes(vec![PathBuf::from("/prefix")]);
    let candidates = search.candidates();
    let sources: Vec<&Source> = candidates.iter().map(|c| &c.source).collect();
    let first_of = |s: &Source| sources.iter().position(|x| *x == s).expect("present");
    let last_of = |s: &Source| sources.iter().rposition(|x| *x == s).expect("present");
    assert!(
        last_of(&Source::Env("ASCEND_HOME_PATH")) < first_of(&Source::Env("ASCEND_TOOLKIT_HOME"))
    );
    assert!(last_of(&Source::Env("ASCEND_TOOLKIT_HOME")) < first_of(&Source::Prefix));
    assert_eq!(
        candidates.last().map(|c| (&c.source, c.path.clone())),
        Some((&Source::Bare, PathBuf::from(LIBRARY_NAME)))
    );
    assert_eq!(
        candidates[0].path,
        PathBuf::from("/home-path/lib64/libascendcl.so"),
        "newest layout first"
    );
    let arch_layout = format!("/prefix/{}-linux/lib64/libascendcl.so", std::env::consts::ARCH);
    assert!(candidates.iter().any(|c| c.path.as_os_str() == arch_layout.as_str()));
}

#[test]
fn the_same_home_in_both_variables_is_tried_once() {
    let candidates =
        Search::with_env(env(&[("ASCEND_HOME_PATH", "/same"), ("ASCEND_TOOLKIT_HOME", "/same")]))
            .prefixes(vec![])
            .candidates();
    let lib64 =
        candidates.iter().filter(|c| c.path.as_os_str() == "/same/lib64/libascendcl.so").count();
    assert_eq!(lib64, 1);
    assert!(candidates.iter().all(|c| c.source != Source::Env("ASCEND_TOOLKIT_HOME")));
}

#[test]
fn default_prefixes_cover_both_layouts_for_root_and_home_installs() {
    let search = Search::with_env(env(&[("HOME", "/home/u")]));
    assert_eq!(
        search.default_prefixes(),
        [
            "/usr/local/Ascend/cann",
            "/home/u/Ascend/cann",
            "/usr/local/Ascend/ascend-toolkit/latest",
            "/home/u/Ascend/ascend-toolkit/latest"
        ]
        .map(PathBuf::from)
    );
    let without_bare = search.bare_dlopen(false).candidates();
    assert!(without_bare.iter().all(|c| c.source == Source::Prefix));
}

#[test]
fn a_devlib_path_is_refused_without_opening_it() {
    let err = Search::with_env(env(&[]))
        .explicit("/usr/local/Ascend/cann/devlib/libascendcl.so")
        .open()
        .expect_err("refused");
    let attempts = err.attempts();
    assert_eq!(attempts.len(), 1);
    assert!(matches!(attempts[0].failure, AttemptFailure::StubLibrary { .. }));
    let text = err.to_string();
    assert!(
        text.contains("devlib")
            && text.contains("stub")
            && text.contains("success from every call"),
        "{text}"
    );
    assert!(text.contains("hint:"), "{text}");
}

#[test]
fn a_missing_library_error_lists_every_candidate_and_why() {
    let search = Search::with_env(env(&[
        ("ASCEND_HOME_PATH", "/nonexistent/home-path"),
        ("ASCEND_TOOLKIT_HOME", "/nonexistent/toolkit"),
        ("HOME", "/nonexistent/user"),
    ]))
    .prefixes(vec![PathBuf::from("/nonexistent/prefix")]);
    let candidates = search.candidates();
    let err = search.open().expect_err("no CANN here");
    let attempts = err.attempts();
    assert_eq!(attempts.iter().map(|a| a.candidate.clone()).collect::<Vec<_>>(), candidates);
    for attempt in &attempts[..attempts.len() - 1] {
        assert_eq!(attempt.failure, AttemptFailure::NotFound, "{attempt:?}");
    }
    assert!(
        matches!(attempts.last().map(|a| &a.failure), Some(AttemptFailure::Open(_))),
        "the bare dlopen fails to open"
    );
    let text = err.to_string();
    for candidate in &candidates {
        assert!(text.contains(&candidate.path.display().to_string()), "{text}");
    }
    assert!(text.contains("no such file") && text.contains("RUN_LANE_ACL_LIB"), "{text}");
}

#[test]
fn a_library_without_the_symbols_names_the_symbol_and_the_library() {
    // The C library is loaded in every process and exports none of ACL.
    let err = Search::with_env(env(&[])).explicit("libc.so.6").open().expect_err("not ACL");
    let attempts = err.attempts();
    assert_eq!(attempts.len(), 1);
    match &attempts[0].failure {
        AttemptFailure::MissingSymbol { symbol, library, .. } => {
            assert_eq!(*symbol, "aclInit");
            assert_eq!(library, &PathBuf::from("libc.so.6"));
        }
        other => panic!("expected a missing symbol, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("aclInit") && text.contains("libc.so.6"), "{text}");
}

#[test]
fn an_unopenable_file_reports_the_loader_message() {
    let dir = std::env::temp_dir().join(format!("ascend-cl-sys-not-elf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("libascendcl.so");
    std::fs::write(&path, b"not an ELF file").expect("write");
    let err = Search::with_env(env(&[])).explicit(&path).open().expect_err("not a library");
    assert!(matches!(err.attempts()[0].failure, AttemptFailure::Open(_)), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_table_binds_the_minimal_surface_and_the_probe_calls() {
    // ascend-cl.md §5's required set, the four calls issue 11 adds, and the copies a later
    // issue queues on streams.
    let expected = [
        "aclInit",
        "aclFinalize",
        "aclrtSetDevice",
        "aclrtResetDeviceForce",
        "aclrtSynchronizeDeviceWithTimeout",
        "aclrtCreateStreamWithConfig",
        "aclrtDestroyStreamForce",
        "aclrtDestroyStream",
        "aclrtCreateEventExWithFlag",
        "aclrtRecordEvent",
        "aclrtQueryEventStatus",
        "aclrtSynchronizeEventWithTimeout",
        "aclrtDestroyEvent",
        "aclrtMalloc",
        "aclrtFree",
        "aclrtMemcpy",
        "aclGetRecentErrMsg",
        "aclrtSetOpExecuteTimeOutV2",
        "aclrtGetSocName",
        "aclrtGetDeviceCount",
        "aclrtMallocHost",
        "aclrtFreeHost",
        "aclrtMemcpyAsync",
        "aclrtStreamWaitEvent",
        "aclrtSynchronizeStreamWithTimeout",
    ];
    let mut bound = ascend_cl_sys::SYMBOLS.to_vec();
    bound.sort_unstable();
    let mut expected = expected.to_vec();
    expected.sort_unstable();
    assert_eq!(bound, expected);
}

#[test]
fn a_library_without_the_symbols_names_every_missing_required_symbol_one_line_each() {
    let err = Search::with_env(env(&[])).explicit("libc.so.6").open().expect_err("not ACL");
    let AttemptFailure::MissingSymbol { missing, .. } = &err.attempts()[0].failure else {
        panic!("expected missing symbols: {err}");
    };
    assert_eq!(missing.as_slice(), ascend_cl_sys::SYMBOLS, "every one, in order");
    let text = err.to_string();
    for symbol in ascend_cl_sys::SYMBOLS {
        let lines = text.lines().filter(|line| line.contains(&format!("`{symbol}`"))).count();
        assert_eq!(lines, 1, "one line for {symbol}: {text}");
    }
    assert!(!text.contains("aclrtStreamGetId"), "an optional symbol never refuses a load: {text}");
}

#[test]
fn the_refusal_says_which_cann_has_each_versioned_symbol() {
    let failure = ascend_cl_sys::missing_symbols(
        vec!["aclrtSynchronizeDeviceWithTimeout", "aclrtSetOpExecuteTimeOutV2", "aclrtMalloc"],
        PathBuf::from("/cann-2024-08/lib64/libascendcl.so"),
        vec![PathBuf::from("/cann-2024-08/lib64/libacl_rt.so")],
    );
    let text = failure.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "a heading and one line per symbol: {text}");
    assert!(
        lines[0].contains("3 required symbols missing from /cann-2024-08/lib64/libascendcl.so")
            && lines[0].contains("libacl_rt.so"),
        "{text}"
    );
    for (line, symbol) in
        lines[1..3].iter().zip(["aclrtSynchronizeDeviceWithTimeout", "aclrtSetOpExecuteTimeOutV2"])
    {
        assert!(
            line.contains(symbol)
                && line.contains("CANN 8.0.0 or newer")
                && line.contains("ACL 1.10.0"),
            "{line}"
        );
    }
    assert!(
        lines[3].contains("aclrtMalloc") && !lines[3].contains("CANN"),
        "no version claimed where none is known: {}",
        lines[3]
    );
    assert_eq!(
        ascend_cl_sys::required_version("aclrtSynchronizeDeviceWithTimeout"),
        ascend_cl_sys::required_version("aclrtSetOpExecuteTimeOutV2")
    );
    assert_eq!(ascend_cl_sys::required_version("aclInit"), None);
    // Only the versioned symbols missing: the hint is an old CANN, not a wrong library.
    let err = ascend_cl_sys::LoadError::NotLoaded {
        attempts: vec![ascend_cl_sys::Attempt {
            candidate: ascend_cl_sys::Candidate {
                path: PathBuf::from("/old/libascendcl.so"),
                source: Source::Explicit,
            },
            failure: ascend_cl_sys::missing_symbols(
                vec!["aclrtSetOpExecuteTimeOutV2"],
                PathBuf::from("/old/libascendcl.so"),
                vec![],
            ),
        }],
    };
    let text = err.to_string();
    assert!(
        text.contains("hint: its CANN is too old: the lane needs CANN 8.0.0 or newer"),
        "{text}"
    );
}

#[test]
fn an_empty_explicit_path_is_refused_without_opening_anything() {
    let err = Search::with_env(env(&[])).explicit("").open().expect_err("refused");
    assert_eq!(err.attempts().len(), 1);
    assert_eq!(err.attempts()[0].failure, AttemptFailure::EmptyPath);
    let text = err.to_string();
    assert!(text.contains("empty path"), "{text}");
    let err = ascend_cl_sys::Acl::open("").expect_err("refused");
    assert_eq!(err.attempts()[0].failure, AttemptFailure::EmptyPath);
}

#[test]
fn the_optional_table_binds_the_fault_notice_calls_the_stream_id_and_the_event_timestamp() {
    let mut bound = ascend_cl_sys::OPTIONAL_SYMBOLS.to_vec();
    bound.sort_unstable();
    let mut expected = vec![
        "aclrtSetExceptionInfoCallback",
        "aclrtGetDeviceIdFromExceptionInfo",
        "aclrtGetStreamIdFromExceptionInfo",
        "aclrtGetTaskIdFromExceptionInfo",
        "aclrtGetThreadIdFromExceptionInfo",
        "aclrtGetErrorCodeFromExceptionInfo",
        "aclrtStreamGetId",
        "aclrtEventGetTimestamp",
    ];
    expected.sort_unstable();
    assert_eq!(bound, expected);
    assert!(
        ascend_cl_sys::OPTIONAL_SYMBOLS.iter().all(|s| !ascend_cl_sys::SYMBOLS.contains(s)),
        "a symbol is required or optional, never both"
    );
}
