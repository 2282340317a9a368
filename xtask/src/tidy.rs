//! Tidy rules that keep the architecture honest, run as ordinary `#[test]`s.
//!
//! - The pure crates (stream-pair, status-latch, lane-core, device-model) never touch the clock, threads,
//!   files, the network or processes, never use `HashMap`/`HashSet` (iteration order is not
//!   deterministic), and contain no `unsafe`.
//! - `unsafe` appears only in the FFI crates (`UNSAFE_CRATES`); every other workspace
//!   member (read from the root `Cargo.toml`) is `#![forbid(unsafe_code)]`.
//! - The C ABI (lane-capi) links none of the simulator's argument and file parsers (clap,
//!   toml): `cargo tree` of its normal dependencies names none of them.
//! - Every rule id the workspace cites (`L-n`, `S-n`, `SPEC §n`, `device-truth §n`, the
//!   other reference sheets' `§n`) has an entry in `docs/rules.md`, and every test an entry
//!   names under "Checked by" exists in the file it names.
//! - No hand-written source file under a member's `src/` passes the length bound
//!   ([`crate::file_length`], which says what it covers and what it excepts); the
//!   hand-written docs keep their prose budget ([`crate::docs_budget`]).

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use crate::testkit::{files_under, is_rust, workspace_members};
    use crate::{PURE_CRATES, project_root};

    /// The only crates allowed to contain `unsafe` (each block with a `// SAFETY:` line,
    /// which clippy's `undocumented_unsafe_blocks` enforces): the FFI crates.
    const UNSAFE_CRATES: &[&str] = &["ascend-cl-sys", "backend-acl", "acl-fake", "lane-capi"];

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
        ("HashMap", "iteration order is random; use BTreeMap or an array"),
        ("HashSet", "iteration order is random; use BTreeSet or an array"),
        ("unsafe", "pure crates are #![forbid(unsafe_code)]"),
    ];

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
        let files: Vec<PathBuf> = PURE_CRATES
            .iter()
            .flat_map(|krate| files_under(&root.join(krate).join("src"), &is_rust))
            .collect();
        assert!(!files.is_empty(), "found no source files in the pure crates");
        let found = violations(&files, IMPURE);
        assert!(found.is_empty(), "pure-crate rule broken:\n{}", found.join("\n"));
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
            let roots: Vec<PathBuf> =
                ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).filter(|p| p.exists()).collect();
            assert!(!roots.is_empty(), "{member} has neither src/lib.rs nor src/main.rs");
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
            files.extend(files_under(&root.join(&member), &is_rust));
        }
        assert!(!files.is_empty(), "found no source files in the workspace");
        let found = violations(&files, &[("unsafe", "unsafe lives only in the FFI crates")]);
        assert!(found.is_empty(), "unsafe outside the FFI crates:\n{}", found.join("\n"));
    }

    #[test]
    fn tidy_rules_catch_what_they_name() {
        // A rule that cannot fire proves nothing: feed each needle through the scanner.
        let dir = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("probe.rs");
        let body: String =
            IMPURE.iter().map(|(needle, _)| format!("let _ = {needle};\n")).collect();
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
            found.iter().all(|f| !f.contains("probe.rs:1:") && !f.contains("probe.rs:2:")),
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
            // The device model is pure: status-latch gives it the codes and record format.
            ("device-model", &["status-latch"]),
            ("backend-sim", &["lane-core", "lane-driver", "status-latch", "device-model"]),
            ("ascend-cl-sys", &[]),
            // The fake's device is the device model; status-latch gives it the codes.
            ("acl-fake", &["ascend-cl-sys", "status-latch", "device-model"]),
            ("backend-acl", &["ascend-cl-sys", "lane-driver", "lane-core"]),
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

    /// The crates of the simulator's command line and scenario files (backend-sim's `cli`
    /// and `scenario` features), which the C ABI's libraries must not link.
    const PARSERS: &[&str] = &["clap", "clap_builder", "clap_derive", "toml", "toml_edit"];

    #[test]
    fn the_c_abi_links_none_of_the_simulators_argument_and_file_parsers() {
        // `cargo tree` resolves lane-capi's features alone, as `cargo xtask dist` builds it.
        let output = crate::cargo()
            .args(["tree", "-p", "lane-capi", "-e", "normal"])
            .args(["--prefix", "none"])
            .args(["--format", "{p}", "--offline", "--locked"])
            .current_dir(project_root())
            .output()
            .expect("cargo tree runs");
        assert!(
            output.status.success(),
            "cargo tree -p lane-capi failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let tree = String::from_utf8_lossy(&output.stdout);
        let names: Vec<&str> =
            tree.lines().filter_map(|line| line.split_whitespace().next()).collect();
        assert!(names.contains(&"backend-sim"), "lane-capi's tree has no backend-sim:\n{tree}");
        let linked: Vec<&&str> = PARSERS.iter().filter(|p| names.contains(p)).collect();
        assert!(
            linked.is_empty(),
            "lane-capi links {linked:?}: backend-sim's `cli`/`scenario` feature is on in its \
             tree (the workspace entry has `default-features = false`; lane-capi must not ask \
             for them):\n{tree}"
        );
    }

    // ----- docs/rules.md: every cited id has an entry, every named test exists ------------

    /// The rules file, relative to the workspace root.
    const RULES_MD: &str = "docs/rules.md";

    /// The documents a `§n` citation can point into, by the name written before it
    /// (`SPEC §5.3`, `device-truth.md §1`, `reference/ascend-cl.md §2.1`). docs/rules.md
    /// names each cited section the same way, without `.md`.
    const CITED_DOCUMENTS: &[&str] = &[
        "SPEC",
        "device-truth",
        "ascend-cl",
        "measured-figures",
        "simpler-lane",
        "model-codebases",
    ];

    /// The extensions of the files whose citations are checked: sources, the C header and
    /// example, docs, manifests and scenarios.
    const CITING_EXTENSIONS: &[&str] = &["rs", "md", "h", "hpp", "c", "cc", "cpp", "toml"];

    /// Whether `c` continues a word, so that an id or a document name next to it is part of
    /// something else (`CL-10`, `L-1x`, `SPEC_FILE`).
    fn is_word(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }

    /// The section number at the start of `rest`, just after a `§` (`5.3`, `5(c)`; a full
    /// stop that ends the sentence is not part of it), with its length in bytes.
    fn section_number(rest: &str) -> Option<(String, usize)> {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = rest[..end].trim_end_matches('.');
        if !number.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let mut id = number.to_owned();
        // A lettered part, as in measured-figures §5(c).
        if let [b'(', letter, b')', ..] = &rest.as_bytes()[number.len()..]
            && letter.is_ascii_lowercase()
        {
            id.push_str(&rest[number.len()..number.len() + 3]);
        }
        let len = id.len();
        Some((id, len))
    }

    /// The `L-n` or `S-n` rule id at the start of `rest`, with its length in bytes.
    fn rule_id(rest: &str) -> Option<(String, usize)> {
        let [kind @ (b'L' | b'S'), b'-', ..] = rest.as_bytes() else {
            return None;
        };
        let number = &rest[2..];
        let digits = number.find(|c: char| !c.is_ascii_digit()).unwrap_or(number.len());
        if digits == 0 || number[digits..].starts_with(is_word) {
            return None;
        }
        Some((format!("{}-{}", char::from(*kind), &number[..digits]), 2 + digits))
    }

    /// The cited document whose name starts `rest` (`device-truth.md`, `SPEC's`), not a
    /// longer name that begins with it (`ascend-cl-sys`, the crate).
    fn document_name(rest: &str) -> Option<&'static str> {
        CITED_DOCUMENTS.iter().copied().find(|name| {
            rest.strip_prefix(name)
                .is_some_and(|after| !after.starts_with(|c: char| is_word(c) || c == '-'))
        })
    }

    /// The rule ids `text` cites, each with its line number. A `§n` belongs to the document
    /// named last before it in the text (SPEC until another is named), so
    /// `device-truth §2, §3` cites two of its sections.
    fn citations(text: &str) -> Vec<(usize, String)> {
        let mut found = Vec::new();
        let mut document = CITED_DOCUMENTS[0];
        for (line_no, line) in text.lines().enumerate() {
            let mut at = 0;
            while let Some(c) = line[at..].chars().next() {
                let rest = &line[at..];
                let mut len = c.len_utf8();
                let starts_word = !line[..at].ends_with(|p: char| is_word(p) || p == '-');
                if c == '§' {
                    if let Some((number, n)) = section_number(&rest[len..]) {
                        found.push((line_no + 1, format!("{document} §{number}")));
                        len += n;
                    }
                } else if starts_word {
                    if let Some(name) = document_name(rest) {
                        document = name;
                        len = name.len();
                    } else if let Some((id, n)) = rule_id(rest) {
                        found.push((line_no + 1, id));
                        len = n;
                    }
                }
                at += len;
            }
        }
        found
    }

    /// The id an entry of docs/rules.md defines: a `### ` heading or a `- **` item that
    /// starts with one (`### L-8 ...`, `### SPEC §5.3 ...`, `- **ascend-cl §2.1** ...`).
    fn entry_id(line: &str) -> Option<String> {
        let text = line.strip_prefix("### ").or_else(|| line.strip_prefix("- **"))?;
        let (_, id) = citations(text).into_iter().next()?;
        text.starts_with(&id).then_some(id)
    }

    /// One entry of docs/rules.md: its id, its line, and the tests its "Checked by" list
    /// names, each as (line, file, function).
    struct Entry {
        id: String,
        line: usize,
        tests: Vec<(usize, String, String)>,
    }

    /// The entries of docs/rules.md, and the lines of its "Checked by" lists that name no
    /// file and test. A list starts at a `Checked by:` line; each item is
    /// `` - `path/to/file.rs`: `test_one`, `test_two` ``.
    fn rules_entries(text: &str) -> (Vec<Entry>, Vec<String>) {
        let mut entries: Vec<Entry> = Vec::new();
        let mut malformed = Vec::new();
        let mut in_list = false;
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            if let Some(id) = entry_id(line) {
                entries.push(Entry { id, line: line_no, tests: Vec::new() });
                in_list = false;
            } else if line.trim() == "Checked by:" {
                in_list = true;
            } else if in_list && line.starts_with("- ") {
                let quoted: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
                match (entries.last_mut(), quoted.split_first()) {
                    (Some(entry), Some((file, tests))) if !tests.is_empty() => {
                        for test in tests {
                            entry.tests.push((line_no, (*file).to_owned(), (*test).to_owned()));
                        }
                    }
                    _ => malformed.push(format!(
                        "{RULES_MD}:{line_no}: a `Checked by:` item is `` - `path/to/file.rs`: \
                         `test_name`, ... `` under an entry's heading"
                    )),
                }
            } else {
                in_list = false;
            }
        }
        (entries, malformed)
    }

    #[test]
    fn every_rule_id_the_workspace_cites_has_an_entry_in_docs_rules_md() {
        let root = project_root();
        let rules = fs::read_to_string(root.join(RULES_MD)).expect("docs/rules.md");
        let (entries, _) = rules_entries(&rules);
        let mut ids = std::collections::BTreeMap::new();
        let mut problems = Vec::new();
        for entry in &entries {
            if let Some(first) = ids.insert(entry.id.clone(), entry.line) {
                problems.push(format!(
                    "{RULES_MD}:{}: a second entry for {} (the first is at line {first}): \
                     merge them",
                    entry.line, entry.id
                ));
            }
        }
        let rules_md = root.join(RULES_MD);
        let files = files_under(&root, &|path| {
            let ext = path.extension().and_then(|e| e.to_str());
            ext.is_some_and(|e| CITING_EXTENSIONS.contains(&e)) && path != rules_md
        });
        assert!(files.len() > 100, "found only {} files to scan", files.len());
        let mut cited = 0;
        for file in &files {
            let text =
                String::from_utf8_lossy(&fs::read(file).expect("readable file")).into_owned();
            let rel = file.strip_prefix(&root).unwrap_or(file).display();
            for (line_no, id) in citations(&text) {
                cited += 1;
                if !ids.contains_key(&id) {
                    problems.push(format!(
                        "{rel}:{line_no}: cites {id}, which has no entry: add an entry for \
                         {id} to {RULES_MD} (a `### {id}` heading with the rule in the \
                         project's words and its `Checked by:` tests), or correct the \
                         citation (a bare `§n` belongs to the document named last above it in \
                         the file; write `SPEC §n` or `device-truth §n`)"
                    ));
                }
            }
        }
        assert!(cited > 500, "found only {cited} citations: is the scanner broken?");
        assert!(problems.is_empty(), "rule ids without an entry:\n{}", problems.join("\n"));
    }

    #[test]
    fn every_test_docs_rules_md_names_exists_and_every_rule_names_one() {
        let root = project_root();
        let rules = fs::read_to_string(root.join(RULES_MD)).expect("docs/rules.md");
        let (entries, mut problems) = rules_entries(&rules);
        let mut named = 0;
        for entry in &entries {
            let is_rule = entry.id.starts_with("L-") || entry.id.starts_with("S-");
            if is_rule && entry.tests.is_empty() {
                problems.push(format!(
                    "{RULES_MD}:{}: {} names no test: list the tests that check it under \
                     `Checked by:`",
                    entry.line, entry.id
                ));
            }
            for (line_no, file, test) in &entry.tests {
                named += 1;
                let Ok(text) = fs::read_to_string(root.join(file)) else {
                    problems.push(format!(
                        "{RULES_MD}:{line_no}: {}: no file {file}: give the test's file \
                         relative to the workspace root",
                        entry.id
                    ));
                    continue;
                };
                // A test a `cases!` list declares reads `fn NAME = CASE`.
                if ![format!("fn {test}("), format!("fn {test} =")]
                    .iter()
                    .any(|decl| text.contains(decl.as_str()))
                {
                    problems.push(format!(
                        "{RULES_MD}:{line_no}: {}: {file} has no `fn {test}`: name a test \
                         that exists (it was renamed or moved?), or drop it",
                        entry.id
                    ));
                }
            }
        }
        assert!(named > 100, "found only {named} tests named in {RULES_MD}");
        assert!(problems.is_empty(), "{RULES_MD} is out of date:\n{}", problems.join("\n"));
    }

    #[test]
    fn the_citation_scanner_reads_ids_and_nothing_that_only_looks_like_one() {
        // Built at run time, so this file cites nothing it does not mean.
        let (l, s, sec) = ("L", "S", '§');
        let text = format!(
            "({l}-8, {s}-1..{s}-8) SPEC {sec}5.3.\n\
             not CL-10, {l}-1x, {l}-, v0.29.4, x86-64, ascend-cl-sys {sec}2\n\
             device-truth.md {sec}2, {sec}3; `measured-figures.md` {sec}5(c)'s\n\
             {sec}4 {sec}x\n"
        );
        let expected = [
            (1, format!("{l}-8")),
            (1, format!("{s}-1")),
            (1, format!("{s}-8")),
            (1, format!("SPEC {sec}5.3")),
            (2, format!("SPEC {sec}2")),
            (3, format!("device-truth {sec}2")),
            (3, format!("device-truth {sec}3")),
            (3, format!("measured-figures {sec}5(c)")),
            (4, format!("measured-figures {sec}4")),
        ];
        assert_eq!(citations(&text), expected);

        let rules = format!(
            "## The lane ({l}-1..{l}-21)\n\
             ### {l}-8 A verdict needs positive evidence\n\
             Checked by:\n\
             - `lane-core/tests/verdicts.rs`: `one`, `two`\n\
             \n\
             ### SPEC {sec}5.3 Policy\n\
             - **ascend-cl {sec}2.1** Init and device.\n\
             Checked by:\n\
             - no file here\n"
        );
        let (entries, malformed) = rules_entries(&rules);
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        let want = format!("{l}-8 | SPEC {sec}5.3 | ascend-cl {sec}2.1");
        assert_eq!(ids.join(" | "), want);
        let file = "lane-core/tests/verdicts.rs".to_owned();
        let test = |name: &str| (4, file.clone(), name.to_owned());
        assert_eq!(entries[0].tests, [test("one"), test("two")]);
        assert!(entries[1].tests.is_empty() && entries[2].tests.is_empty());
        assert_eq!(malformed.len(), 1, "{malformed:?}");
        assert!(malformed[0].contains(":9:"), "{malformed:?}");
    }
}
