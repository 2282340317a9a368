//! Tidy rules that keep the architecture honest, run as ordinary `#[test]`s.
//!
//! - The pure crates (stream-pair, status-latch, lane-core) never touch the clock, threads,
//!   files, the network or processes, never use `HashMap`/`HashSet` (iteration order is not
//!   deterministic), and contain no `unsafe`.
//! - `unsafe` appears only in the FFI crates (`UNSAFE_CRATES`); every other workspace
//!   member (read from the root `Cargo.toml`) is `#![forbid(unsafe_code)]`.

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use crate::{PURE_CRATES, project_root};

    /// The only crates allowed to contain `unsafe` (each block with a `// SAFETY:` line,
    /// which clippy's `undocumented_unsafe_blocks` enforces): the FFI crates.
    const UNSAFE_CRATES: &[&str] = &["ascend-cl-sys", "backend-acl", "acl-fake", "lane-capi"];

    /// Every workspace member's directory, from the root `Cargo.toml`'s `members` list.
    fn workspace_members() -> Vec<String> {
        let manifest =
            fs::read_to_string(project_root().join("Cargo.toml")).expect("root manifest");
        let start = manifest.find("members = [").expect("a members list");
        let list = &manifest[start..];
        let end = list.find(']').expect("the members list ends");
        list[..end]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

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
            rust_files(&root.join(krate).join("src"), &mut files);
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
    fn every_member_but_the_ffi_crates_forbids_unsafe_code() {
        let root = project_root();
        let members = workspace_members();
        assert!(members.len() >= 8, "members list not found: {members:?}");
        for member in &members {
            if UNSAFE_CRATES.contains(&member.as_str()) {
                continue;
            }
            let src = root.join(member).join("src");
            let roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
                .iter()
                .map(|f| src.join(f))
                .filter(|p| p.exists())
                .collect();
            assert!(
                !roots.is_empty(),
                "{member} has neither src/lib.rs nor src/main.rs"
            );
            for file in roots {
                let text = fs::read_to_string(&file).expect("readable crate root");
                assert!(
                    text.contains("#![forbid(unsafe_code)]"),
                    "{} lacks #![forbid(unsafe_code)]",
                    file.display()
                );
            }
        }
    }

    #[test]
    fn unsafe_appears_only_in_the_ffi_crates() {
        let root = project_root();
        let mut files = Vec::new();
        for member in workspace_members() {
            // xtask's own rules name the word; its crate root's `forbid` still covers it.
            if UNSAFE_CRATES.contains(&member.as_str()) || member == "xtask" {
                continue;
            }
            rust_files(&root.join(&member), &mut files);
        }
        assert!(!files.is_empty(), "found no source files in the workspace");
        let found = violations(&files, &[("unsafe", "unsafe lives only in the FFI crates")]);
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

    /// The workspace crates a member's `[dependencies]` names (dev- and build-dependencies
    /// are not layering: tests may reach across).
    fn our_dependencies(member: &str, members: &[String]) -> Vec<String> {
        let manifest = fs::read_to_string(project_root().join(member).join("Cargo.toml"))
            .expect("member manifest");
        let mut in_deps = false;
        let mut found = Vec::new();
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_deps = line == "[dependencies]";
                continue;
            }
            if !in_deps {
                continue;
            }
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            if members.iter().any(|m| m == name) {
                found.push(name.to_owned());
            }
        }
        found
    }

    #[test]
    fn layering_pure_crates_depend_on_nothing_above_them_and_no_backend_on_another() {
        let members = workspace_members();
        // Each crate may depend only on the crates listed for it (of ours); anything else is
        // a layering break: a pure crate reaching up, or one backend reaching into another.
        let allowed: &[(&str, &[&str])] = &[
            ("stream-pair", &[]),
            ("status-latch", &[]),
            ("lane-core", &["stream-pair", "status-latch"]),
            ("lane-driver", &["lane-core"]),
            ("lane-service", &["lane-core", "lane-driver"]),
            ("backend-sim", &["lane-core", "lane-driver", "status-latch"]),
            ("ascend-cl-sys", &[]),
            // The fake's runs publish result records in the format status-latch owns.
            ("acl-fake", &["ascend-cl-sys", "status-latch"]),
            (
                "backend-acl",
                &["ascend-cl-sys", "lane-driver", "lane-core"],
            ),
        ];
        let mut broken = Vec::new();
        for (krate, may) in allowed {
            if !members.iter().any(|m| m == krate) {
                continue;
            }
            for dep in our_dependencies(krate, &members) {
                if !may.contains(&dep.as_str()) {
                    broken.push(format!("{krate} depends on {dep}"));
                }
            }
        }
        assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
        // The rule can fire: backend-sim's own manifest names lane-driver, which the pure
        // crates may not.
        assert!(our_dependencies("backend-sim", &members).contains(&"lane-driver".to_owned()));
    }
}
