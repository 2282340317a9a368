//! Tidy rules that keep the architecture honest, run as ordinary `#[test]`s.
//!
//! - The pure crates (stream-pair, status-latch, lane-core) never touch the clock, threads,
//!   files, the network or processes, never use `HashMap`/`HashSet` (iteration order is not
//!   deterministic), and contain no `unsafe`.
//! - `unsafe` appears only in ascend-cl-sys and backend-acl.

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::project_root;

    /// Crates whose library code must stay pure (SPEC §6).
    const PURE_CRATES: &[&str] = &["stream-pair", "status-latch", "lane-core"];

    /// The only crates allowed to contain `unsafe` (each block with a `// SAFETY:` line,
    /// which clippy's `undocumented_unsafe_blocks` enforces).
    const UNSAFE_CRATES: &[&str] = &["ascend-cl-sys", "backend-acl"];

    /// Forbidden in pure library code, with the reason printed on failure.
    const IMPURE: &[(&str, &str)] = &[
        ("std::time", "time comes in as a value"),
        ("SystemTime", "time comes in as a value"),
        ("Instant", "time comes in as a value"),
        ("std::thread", "pure crates spawn no threads"),
        ("thread::", "pure crates spawn no threads"),
        ("std::fs", "pure crates do no IO"),
        ("std::net", "pure crates do no IO"),
        ("std::process", "pure crates do no IO"),
        ("std::io", "pure crates do no IO"),
        (
            "HashMap",
            "iteration order is not deterministic; use BTreeMap or an array",
        ),
        (
            "HashSet",
            "iteration order is not deterministic; use BTreeSet or an array",
        ),
        ("unsafe", "pure crates are #![forbid(unsafe_code)]"),
    ];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Source lines with comments removed, so docs may mention what code may not use.
    fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
        text.lines().enumerate().filter_map(|(i, line)| {
            let code = match line.find("//") {
                Some(at) => &line[..at],
                None => line,
            };
            let code = code.trim();
            (!code.is_empty()).then_some((i + 1, code))
        })
    }

    fn violations(files: &[PathBuf], rules: &[(&str, &str)]) -> Vec<String> {
        let root = project_root();
        let mut found = Vec::new();
        for file in files {
            let text = fs::read_to_string(file).expect("readable source file");
            for (line_no, code) in code_lines(&text) {
                let code = code.replace("forbid(unsafe_code)", "");
                for (needle, why) in rules {
                    if code.contains(needle) {
                        let rel = file.strip_prefix(&root).unwrap_or(file);
                        found.push(format!("{}:{line_no}: `{needle}`: {why}", rel.display()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn pure_crates_use_no_clock_threads_io_hashmaps_or_unsafe() {
        let root = project_root();
        let mut files = Vec::new();
        for krate in PURE_CRATES {
            rust_files(&root.join("crates").join(krate).join("src"), &mut files);
        }
        assert!(
            !files.is_empty(),
            "found no source files in the pure crates"
        );
        let found = violations(&files, IMPURE);
        assert!(
            found.is_empty(),
            "pure-crate rule broken:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn pure_crates_forbid_unsafe_code() {
        let root = project_root();
        for krate in PURE_CRATES {
            let lib = root.join("crates").join(krate).join("src/lib.rs");
            let text = fs::read_to_string(&lib).expect("pure crate has src/lib.rs");
            assert!(
                text.contains("#![forbid(unsafe_code)]"),
                "{} lacks #![forbid(unsafe_code)]",
                lib.display()
            );
        }
    }

    #[test]
    fn unsafe_appears_only_in_the_ffi_crates() {
        let root = project_root();
        let mut files = Vec::new();
        let Ok(entries) = fs::read_dir(root.join("crates")) else {
            panic!("no crates/ directory");
        };
        let mut crates: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        crates.sort();
        for krate in crates {
            let name = krate
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if UNSAFE_CRATES.contains(&name) {
                continue;
            }
            rust_files(&krate, &mut files);
        }
        let found = violations(
            &files,
            &[(
                "unsafe",
                "unsafe lives only in ascend-cl-sys and backend-acl",
            )],
        );
        assert!(
            found.is_empty(),
            "unsafe outside the FFI crates:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn tidy_rules_catch_what_they_name() {
        // A rule that cannot fire proves nothing: feed each needle through the scanner.
        let dir = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("probe.rs");
        let body: String = IMPURE
            .iter()
            .map(|(needle, _)| format!("let _ = {needle};\n"))
            .collect();
        fs::write(
            &file,
            format!("//! doc mentions HashMap but is a comment\n#![forbid(unsafe_code)]\n{body}"),
        )
        .unwrap();
        let found = violations(&[file], IMPURE);
        fs::remove_dir_all(&dir).ok();
        for (needle, _) in IMPURE {
            assert!(
                found.iter().any(|f| f.contains(&format!("`{needle}`"))),
                "rule `{needle}` never fired"
            );
        }
        assert!(
            found
                .iter()
                .all(|f| !f.contains("probe.rs:1:") && !f.contains("probe.rs:2:")),
            "{found:?}"
        );
    }
}
