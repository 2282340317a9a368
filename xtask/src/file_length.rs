//! The tidy rule on file length (issue 46 item 5), run as an ordinary `#[test]`.
//!
//! Covered: every `.rs` file under a workspace member's `src/` (read from the root
//! `Cargo.toml`), xtask's included. A covered file holds at most `MAX_LINES` (1,000) lines.
//!
//! Excepted, and why:
//! - test files: anything under a `tests/` directory and any `tests.rs` module (a test module
//!   grows with the cases it proves; splitting it would scatter one subject's cases);
//! - generated files: none lives under `src/` today (the cbindgen header
//!   `lane-capi/include/run_lane.h` and the documents `cargo xtask codegen` writes are
//!   outside it); a generated file placed there must be named here;
//! - not Rust source under `src/`: examples (`examples/*.rs`, `lane-capi/examples/*.cpp`),
//!   build scripts, benches and the separate `fuzz/` workspace.
//!
//! No other file is excepted. The bound is 1,000 lines, not the 600 the project's commits
//! cite: 44 files were over 600 when the rule came in. The 22 over 1,000 were split into
//! submodules; a file between 600 and 1,000 is split when it is next worked on.

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use crate::project_root;
    use crate::testkit::{files_under, is_rust, workspace_members};

    /// The most lines a covered file may hold.
    const MAX_LINES: usize = 1_000;

    /// Whether a path is a test file the rule excepts.
    fn is_test_file(path: &Path) -> bool {
        path.file_name().is_some_and(|n| n == "tests.rs")
            || path.components().any(|c| c.as_os_str() == "tests")
    }

    /// What breaks the rule: each `(relative path, lines)` over the bound.
    fn violations(files: &[(String, usize)]) -> Vec<String> {
        files
            .iter()
            .filter(|(_, lines)| *lines > MAX_LINES)
            .map(|(path, lines)| {
                format!(
                    "{path}: {lines} lines, over the bound of {MAX_LINES}: split it into submodules"
                )
            })
            .collect()
    }

    #[test]
    fn hand_written_source_files_stay_under_the_length_bound() {
        let root = project_root();
        let mut files = Vec::new();
        for member in workspace_members() {
            let covered = |path: &Path| is_rust(path) && !is_test_file(path);
            for path in files_under(&root.join(&member).join("src"), &covered) {
                let text = fs::read_to_string(&path).expect("a source file");
                let relative = path
                    .strip_prefix(&root)
                    .expect("under the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((relative, text.lines().count()));
            }
        }
        assert!(files.len() > 50, "found only {} source files", files.len());
        let broken = violations(&files);
        assert!(broken.is_empty(), "{}", broken.join("\n"));
    }

    #[test]
    fn the_length_rule_catches_what_it_names() {
        assert!(is_test_file(Path::new("lane-core/src/lane/tests.rs")));
        assert!(is_test_file(Path::new("lane-capi/tests/common/mod.rs")));
        assert!(!is_test_file(Path::new("lane-core/src/run.rs")));
        let files =
            [("a/src/long.rs".to_owned(), MAX_LINES + 1), ("a/src/short.rs".to_owned(), MAX_LINES)];
        let broken = violations(&files);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].starts_with("a/src/long.rs: 1001 lines, over the bound of 1000"));
    }
}
