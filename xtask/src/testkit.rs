//! What the tests share: the workspace's members and files, and a text check.

use std::fs;
use std::path::{Path, PathBuf};

use crate::project_root;

/// The workspace members' folders, from the root `Cargo.toml`'s `members` list.
pub(crate) fn workspace_members() -> Vec<String> {
    let manifest = fs::read_to_string(project_root().join("Cargo.toml")).expect("manifest");
    let start = manifest.find("members = [").expect("a members list");
    let list = &manifest[start..];
    let end = list.find(']').expect("the members list ends");
    list[..end].split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The files under `dir` that `keep` takes, sorted, outside `target/` and hidden folders.
pub(crate) fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    let mut files = Vec::new();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files.extend(files_under(&path, keep));
            }
        } else if keep(&path) {
            files.push(path);
        }
    }
    files
}

/// Whether `path` is a Rust source file.
pub(crate) fn is_rust(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "rs")
}

/// Fails naming the first of `rows` that `text` lacks.
pub(crate) fn assert_contains(text: &str, rows: &[&str]) {
    for row in rows {
        assert!(text.contains(row), "no `{row}` in:\n{text}");
    }
}
