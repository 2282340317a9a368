//! Installing the tree: the header, the stripped libraries and their debug files, the
//! links, and the build files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::project_root;

use super::build_files::{
    cmake_config_file, cmake_version_file, pkg_config_file, plain_prefix, soname,
};
use super::elf::dynamic_section;
use super::{
    BINUTILS, BITCODE_SECTIONS, Built, CDYLIB, DEBUG_DIR, HEADER, STATICLIB, abi_major, describe,
};

/// An installed tree.
pub(super) struct Tree {
    /// The absolute prefix.
    pub(super) prefix: PathBuf,
    /// The ABI major it carries.
    pub(super) major: u32,
}

/// Creates `dir` and its parents, naming it on failure.
pub(super) fn create_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))
}

/// Copies `from` to `to`, replacing (not overwriting in place) what is there, so a process
/// that has the old library mapped keeps its copy.
fn install_file(from: &Path, to: &Path) -> Result<(), String> {
    remove_existing(to)?;
    fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("could not copy {} to {}: {e}", from.display(), to.display()))
}

/// Writes `text` to `to`, replacing what is there.
pub(super) fn install_text(text: &str, to: &Path) -> Result<(), String> {
    remove_existing(to)?;
    fs::write(to, text).map_err(|e| format!("could not write {}: {e}", to.display()))
}

/// Removes a file or link at `path` if there is one.
fn remove_existing(path: &Path) -> Result<(), String> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("could not replace {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Fails, naming the package, when objcopy is missing: dist never installs unstripped.
pub(super) fn require_objcopy() -> Result<(), String> {
    let found = Command::new("objcopy")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if found {
        Ok(())
    } else {
        Err(format!(
            "dist: objcopy was not found; it strips the installed libraries (their debug \
             information goes to lib/{DEBUG_DIR}/). Install {BINUTILS} (e.g. `apt-get install \
             -y {BINUTILS}`)"
        ))
    }
}

/// Runs a binutils tool; the error names the command and its output, or the package when
/// the tool is missing.
pub(super) fn binutils(command: &mut Command) -> Result<Output, String> {
    let program = command.get_program().to_owned();
    let install = format!("{BINUTILS}; e.g. `apt-get install -y {BINUTILS}`");
    let output = command.output();
    let output = output.map_err(|e| format!("dist: could not run {program:?} ({install}): {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "dist: `{}` failed ({}): {}",
            describe(command),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// `objcopy FLAGS FROM TO`, replacing (not overwriting in place) what is at `to`.
fn objcopy<S: AsRef<std::ffi::OsStr>>(flags: &[S], from: &Path, to: &Path) -> Result<(), String> {
    remove_existing(to)?;
    binutils(Command::new("objcopy").args(flags).arg(from).arg(to)).map(drop)
}

/// The debug file of the installed library `name`, in `lib`: `.debug/<name>.debug` for the
/// shared library (its `.gnu_debuglink`), `.debug/<name>` (an unstripped, linkable copy) for
/// the static one.
pub(super) fn debug_file(lib: &Path, name: &str) -> PathBuf {
    let debug = lib.join(DEBUG_DIR);
    if name == STATICLIB { debug.join(name) } else { debug.join(format!("{name}.debug")) }
}

/// Installs the shared library `from` as `lib/<name>` without its debug sections, which go
/// (compressed) to its debug file; the installed copy's `.gnu_debuglink` names that file, so
/// gdb finds it in `lib/.debug/`.
fn install_shared(from: &Path, lib: &Path, name: &str) -> Result<(), String> {
    let debug = debug_file(lib, name);
    let keep_debug = ["--only-keep-debug", "--compress-debug-sections=zlib"];
    objcopy(&keep_debug, from, &debug)?;
    // Only the file name is recorded (with the debug file's CRC), so the tree may be moved.
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&["--strip-debug".to_owned(), link], from, &lib.join(name))
}

/// objcopy's flags for the static library: for the installed copy (`debug` false) without
/// its debug sections, for its debug file with them, compressed (which the linkers read);
/// both without the embedded bitcode ([`BITCODE_SECTIONS`]).
pub(super) fn static_objcopy_flags(debug: bool) -> Vec<String> {
    let keep_or_strip = if debug { "--compress-debug-sections=zlib" } else { "--strip-debug" };
    std::iter::once(keep_or_strip.to_owned())
        .chain(BITCODE_SECTIONS.iter().map(|section| format!("--remove-section={section}")))
        .collect()
}

/// Installs the static library `from` as `lib/<name>` without its debug sections, and a
/// copy with them as its debug file: a statically linked binary carries its own debug
/// information, so there is no debuglink to follow, and a runner that wants the lane's
/// symbols links that copy instead. Neither keeps the bitcode.
fn install_static(from: &Path, lib: &Path, name: &str) -> Result<(), String> {
    objcopy(&static_objcopy_flags(true), from, &debug_file(lib, name))?;
    objcopy(&static_objcopy_flags(false), from, &lib.join(name))
}

/// `librun_lane.so -> librun_lane.so.<N>` in `lib`.
#[cfg(unix)]
fn link_shared(lib: &Path, major: u32) -> Result<(), String> {
    let link = lib.join(CDYLIB);
    remove_existing(&link)?;
    std::os::unix::fs::symlink(soname(major), &link)
        .map_err(|e| format!("could not create the link {}: {e}", link.display()))
}

#[cfg(not(unix))]
fn link_shared(_lib: &Path, _major: u32) -> Result<(), String> {
    Err("dist lays out a Linux install tree (symbolic links, sonames)".to_owned())
}

/// Checks that the generated files can name `prefix`, creates it and returns it absolute, so
/// a bad or unwritable prefix fails before the build.
pub(super) fn prepare_prefix(prefix: &Path) -> Result<PathBuf, String> {
    let absolute = std::path::absolute(prefix)
        .map_err(|e| format!("could not resolve the prefix {}: {e}", prefix.display()))?;
    plain_prefix(&absolute)?;
    create_dir(&absolute)?;
    let resolved = fs::canonicalize(&absolute)
        .map_err(|e| format!("could not resolve the prefix {}: {e}", absolute.display()))?;
    plain_prefix(&resolved)?;
    Ok(resolved)
}

/// Lays out the install tree under `prefix` (absolute, from [`prepare_prefix`]).
pub(super) fn install(prefix: &Path, built: &Built) -> Result<Tree, String> {
    let root = project_root();
    let header_path = root.join(HEADER);
    let header = fs::read_to_string(&header_path)
        .map_err(|e| format!("could not read {}: {e}", header_path.display()))?;
    let major = abi_major(&header)?;
    let found = dynamic_section(&built.cdylib)?.soname;
    if found.as_deref() != Some(soname(major).as_str()) {
        return Err(format!(
            "{HEADER} says ABI {major}, but {} has soname {}, not {} (lane-capi/build.rs \
             names it from RUN_LANE_ABI_VERSION in lane-capi/src/types.rs): if the header is \
             stale, regenerate it with `RUN_LANE_BLESS=1 cargo test -p lane-capi --test header`",
            built.cdylib.display(),
            found.as_deref().unwrap_or("(none)"),
            soname(major),
        ));
    }

    let prefix_text = plain_prefix(prefix)?.to_owned();
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    let pkgconfig = lib.join("pkgconfig");
    let cmake = lib.join("cmake/RunLane");
    for dir in [&include, &lib, &lib.join(DEBUG_DIR), &pkgconfig, &cmake] {
        create_dir(dir)?;
    }
    install_file(&header_path, &include.join("run_lane.h"))?;
    install_static(&built.staticlib, &lib, STATICLIB)?;
    install_shared(&built.cdylib, &lib, &soname(major))?;
    link_shared(&lib, major)?;
    install_text(
        &pkg_config_file(&prefix_text, major, &built.native_static_libs),
        &pkgconfig.join("run_lane.pc"),
    )?;
    install_text(
        &cmake_config_file(major, &built.native_static_libs),
        &cmake.join("RunLaneConfig.cmake"),
    )?;
    install_text(
        &cmake_version_file(major, std::mem::size_of::<usize>()),
        &cmake.join("RunLaneConfigVersion.cmake"),
    )?;
    Ok(Tree { prefix: prefix.to_path_buf(), major })
}
