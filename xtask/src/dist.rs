//! `cargo xtask dist --prefix DIR | --check`: the install tree of the C ABI, and a check
//! that it is consumed as users consume it.
//!
//! The tree (release build):
//!
//! ```text
//! include/run_lane.h
//! lib/librun_lane.a                 debug sections stripped
//! lib/librun_lane.so.<N>            soname librun_lane.so.<N> (lane-capi/build.rs); debug
//!                                   sections stripped, .gnu_debuglink librun_lane.so.<N>.debug
//! lib/librun_lane.so -> librun_lane.so.<N>
//! lib/.debug/librun_lane.so.<N>.debug   the shared library's debug information (gdb looks in
//!                                       the library's `.debug/` folder for the debuglink)
//! lib/.debug/librun_lane.a          the static library unstripped, to link by path (or with
//!                                   `-L lib/.debug`) when the binary should carry symbols
//! lib/pkgconfig/run_lane.pc         Version <N>; Libs.private from rustc's native-static-libs
//! lib/cmake/RunLane/RunLaneConfig.cmake          RunLane::run_lane, RunLane::run_lane_static
//! lib/cmake/RunLane/RunLaneConfigVersion.cmake   version <N>, SameMajorVersion
//! ```
//!
//! `<N>` is the ABI major: `RUN_LANE_ABI_VERSION` of the header (generated from
//! lane-capi/src/types.rs and checked current by a test), cross-checked against the soname
//! that lane-capi's build script read from the same constant. The package version is that
//! major, so `find_package(RunLane N)` and `pkg-config 'run_lane = N'` accept exactly the
//! ABI a runner was written for.
//!
//! Release keeps `debug = 1`, so the built libraries are mostly DWARF; the installed copies
//! are stripped with binutils' objcopy (`--strip-debug`: the symbol tables stay, so
//! backtraces still name functions) and the debug information is kept, zlib-compressed, in
//! `lib/.debug/`. Without objcopy dist fails, naming the package: it never installs the
//! libraries unstripped.
//!
//! `--check` installs into a temporary prefix, then builds the C++ example three ways (CMake
//! with each target, pkg-config with the shared library), runs each binary on the simulator
//! and on the fake libascendcl, checks that CMake refuses another major, and removes the
//! prefix; it also checks that the installed libraries carry no `.debug_info`, that their
//! debug files do, and that the shared library's `.gnu_debuglink` names its debug file. It
//! needs cmake, pkg-config, make, readelf and objcopy; `cargo test` needs none of them.
//!
//! This file lays the tree out; the check is in `dist/check.rs` (split for length).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::{cargo, project_root};

mod check;

/// The usage line, shown with every argument error.
const USAGE: &str = "usage: cargo xtask dist --prefix DIR | cargo xtask dist --check";
/// The header, relative to the project root.
pub(crate) const HEADER: &str = "lane-capi/include/run_lane.h";
/// The example and its CMakeLists.txt, relative to the project root.
const EXAMPLES: &str = "lane-capi/examples";
/// The libraries cargo builds (their file names in the target folder).
const STATICLIB: &str = "librun_lane.a";
const CDYLIB: &str = "librun_lane.so";
const FAKE_CDYLIB: &str = "librun_lane_fake_ascendcl.so";
/// The folder of `lib/` that holds the libraries' debug information: gdb looks for a
/// `.gnu_debuglink` file name beside the library and in this folder beside it.
const DEBUG_DIR: &str = ".debug";
/// The Debian package with objcopy and readelf.
const BINUTILS: &str = "binutils";
/// The line a passing example prints last.
const EXAMPLE_OK: &str = "onboard runner: ok\n";

/// What `cargo xtask dist` was asked to do.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Lay out the install tree under this prefix.
    Install(PathBuf),
    /// Install into a temporary prefix, build and run the consumers, clean up.
    Check,
}

/// Runs `cargo xtask dist` with its arguments.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    match parse(args)? {
        Mode::Install(prefix) => {
            require_objcopy()?;
            let prefix = prepare_prefix(&prefix)?;
            let built = build_release()?;
            let tree = install(&prefix, &built)?;
            println!(
                "dist: installed run_lane ABI {} into {}",
                tree.major,
                tree.prefix.display()
            );
            Ok(())
        }
        Mode::Check => check::check(),
    }
}

fn parse(args: &[&str]) -> Result<Mode, String> {
    match args {
        ["--prefix", dir] if !dir.is_empty() => Ok(Mode::Install(PathBuf::from(dir))),
        ["--prefix"] | ["--prefix", _] => Err(format!("dist: --prefix needs a folder; {USAGE}")),
        ["--check"] => Ok(Mode::Check),
        [] => Err(format!("dist: say where to install; {USAGE}")),
        other => Err(format!(
            "dist: unknown arguments `{}`; {USAGE}",
            other.join(" ")
        )),
    }
}

/// The release build's products.
pub(crate) struct Built {
    /// `librun_lane.a`.
    pub(crate) staticlib: PathBuf,
    /// `librun_lane.so`.
    cdylib: PathBuf,
    /// What the static library needs linked after it, as rustc prints it (`-ldl`, ...).
    pub(crate) native_static_libs: Vec<String>,
}

/// Builds lane-capi in release (both libraries, one rustc) and asks rustc for the static
/// library's native libraries.
pub(crate) fn build_release() -> Result<Built, String> {
    println!("dist: building lane-capi (release)");
    let mut command = cargo();
    command
        .args(["rustc", "--release", "-p", "lane-capi", "--lib"])
        .args([
            "--message-format=json",
            "--",
            "--print",
            "native-static-libs",
        ]);
    let messages = cargo_json(command, "building lane-capi")?;
    let staticlib = artifact(&messages, STATICLIB)?;
    let cdylib = artifact(&messages, CDYLIB)?;
    let native_static_libs = native_static_libs(&messages).ok_or(
        "building lane-capi: rustc reported no `native-static-libs` note for librun_lane.a \
         (`--print native-static-libs`), so the system libraries it needs are unknown",
    )?;
    Ok(Built {
        staticlib,
        cdylib,
        native_static_libs,
    })
}

/// Builds acl-fake in release and returns its cdylib's path (the fake libascendcl is never
/// installed: only the check loads it).
pub(crate) fn build_fake() -> Result<PathBuf, String> {
    println!("dist: building acl-fake (release)");
    let mut command = cargo();
    command.args([
        "build",
        "--release",
        "-p",
        "acl-fake",
        "--message-format=json",
    ]);
    let messages = cargo_json(command, "building acl-fake")?;
    artifact(&messages, FAKE_CDYLIB)
}

/// Runs a cargo command with `--message-format=json` at the project root; its progress goes
/// to the terminal, its errors and warnings are printed, its messages returned.
fn cargo_json(mut command: Command, what: &str) -> Result<Vec<Value>, String> {
    let output = command
        .current_dir(project_root())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{what}: could not start cargo: {e}"))?;
    let messages: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    for message in &messages {
        let diagnostic = &message["message"];
        if matches!(diagnostic["level"].as_str(), Some("error" | "warning")) {
            eprint!("{}", diagnostic["rendered"].as_str().unwrap_or_default());
        }
    }
    if output.status.success() {
        Ok(messages)
    } else {
        Err(format!("{what} failed ({})", output.status))
    }
}

/// The path of the artifact named `file_name` among cargo's messages.
fn artifact(messages: &[Value], file_name: &str) -> Result<PathBuf, String> {
    messages
        .iter()
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter_map(|m| m["filenames"].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .map(PathBuf::from)
        .find(|path| path.file_name().is_some_and(|name| name == file_name))
        .ok_or_else(|| format!("cargo reported no artifact `{file_name}`"))
}

/// The flags of rustc's `native-static-libs: ...` note, in its order.
fn native_static_libs(messages: &[Value]) -> Option<Vec<String>> {
    messages
        .iter()
        .filter(|m| m["reason"] == "compiler-message")
        .filter_map(|m| m["message"]["message"].as_str())
        .find_map(|text| text.strip_prefix("native-static-libs:"))
        .map(|flags| flags.split_whitespace().map(str::to_owned).collect())
}

/// `#define RUN_LANE_ABI_VERSION N` in the header.
pub(crate) fn abi_major(header: &str) -> Result<u32, String> {
    let value = header
        .lines()
        .find_map(|line| line.trim().strip_prefix("#define RUN_LANE_ABI_VERSION"))
        .ok_or_else(|| format!("{HEADER} has no `#define RUN_LANE_ABI_VERSION`"))?;
    let value = value.trim();
    value.parse().map_err(|_| {
        format!("{HEADER}: `#define RUN_LANE_ABI_VERSION {value}` is not a version number")
    })
}

/// What `readelf -d` says about a binary's dynamic section.
#[derive(Debug, Default, PartialEq, Eq)]
struct Dynamic {
    soname: Option<String>,
    needed: Vec<String>,
}

/// Parses `readelf -d` output: the bracketed names of its SONAME and NEEDED entries.
fn parse_dynamic(readelf: &str) -> Dynamic {
    let mut dynamic = Dynamic::default();
    for line in readelf.lines() {
        let name = line
            .split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(name, _)| name.to_owned());
        if let Some(name) = name {
            if line.contains("(SONAME)") {
                dynamic.soname = Some(name);
            } else if line.contains("(NEEDED)") {
                dynamic.needed.push(name);
            }
        }
    }
    dynamic
}

/// `readelf -d BINARY`, parsed.
fn dynamic_section(binary: &Path) -> Result<Dynamic, String> {
    let output = Command::new("readelf")
        .arg("-d")
        .arg(binary)
        .output()
        .map_err(|e| format!("could not run `readelf -d` (binutils, installed with gcc): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`readelf -d {}` failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(parse_dynamic(&String::from_utf8_lossy(&output.stdout)))
}

/// The shared library's installed name (and soname) for ABI major `major`.
fn soname(major: u32) -> String {
    format!("{CDYLIB}.{major}")
}

/// A prefix the generated files can name without quoting: pkg-config splits its flags at
/// whitespace, and CMake strings treat `"`, `$`, `;` and `\` specially.
fn plain_prefix(prefix: &Path) -> Result<&str, String> {
    let text = prefix
        .to_str()
        .ok_or_else(|| format!("the prefix {} is not UTF-8", prefix.display()))?;
    match text
        .chars()
        .find(|c| c.is_whitespace() || matches!(c, '"' | '$' | ';' | '\\' | '#'))
    {
        Some(c) => Err(format!(
            "the prefix `{text}` holds {c:?}, which run_lane.pc and RunLaneConfig.cmake \
             cannot carry unquoted; choose another folder"
        )),
        None => Ok(text),
    }
}

/// `lib/pkgconfig/run_lane.pc`.
fn pkg_config_file(prefix: &str, major: u32, native_static_libs: &[String]) -> String {
    format!(
        "# run_lane: the run lane's C ABI (lane-capi), installed by `cargo xtask dist`.\n\
         # Version is the ABI major (RUN_LANE_ABI_VERSION); Libs.private is what\n\
         # `rustc --print native-static-libs` names for librun_lane.a.\n\
         prefix={prefix}\n\
         libdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: run_lane\n\
         Description: The run lane: queued consecutive device runs on Ascend NPUs (C ABI)\n\
         Version: {major}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lrun_lane\n\
         Libs.private: {}\n",
        native_static_libs.join(" ")
    )
}

/// rustc's linker flags as CMake link items: `-lfoo` becomes `foo`, anything else stays a
/// flag.
fn cmake_link_items(native_static_libs: &[String]) -> String {
    native_static_libs
        .iter()
        .map(|flag| flag.strip_prefix("-l").unwrap_or(flag))
        .collect::<Vec<_>>()
        .join(";")
}

/// `lib/cmake/RunLane/RunLaneConfig.cmake`: the imported targets, relative to its own folder
/// (so the tree may be moved).
fn cmake_config_file(major: u32, native_static_libs: &[String]) -> String {
    let soname = soname(major);
    let links = cmake_link_items(native_static_libs);
    let mut text = String::new();
    let _ = write!(
        text,
        "\
# RunLane: the run lane's C ABI (lane-capi), installed by `cargo xtask dist`.
#
#   find_package(RunLane {major} REQUIRED)
#   target_link_libraries(app PRIVATE RunLane::run_lane)         # {soname}
#   target_link_libraries(app PRIVATE RunLane::run_lane_static)  # librun_lane.a
#
# The version is the ABI major (RUN_LANE_ABI_VERSION, also RunLane_ABI_VERSION here); the
# static target carries the system libraries `rustc --print native-static-libs` names.
get_filename_component(_run_lane_prefix \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)
set(RunLane_ABI_VERSION {major})
set(RunLane_INCLUDE_DIR \"${{_run_lane_prefix}}/include\")

if(NOT TARGET RunLane::run_lane)
  add_library(RunLane::run_lane SHARED IMPORTED)
  set_target_properties(RunLane::run_lane PROPERTIES
    IMPORTED_LOCATION \"${{_run_lane_prefix}}/lib/{soname}\"
    IMPORTED_SONAME \"{soname}\"
    INTERFACE_INCLUDE_DIRECTORIES \"${{_run_lane_prefix}}/include\")
endif()

if(NOT TARGET RunLane::run_lane_static)
  add_library(RunLane::run_lane_static STATIC IMPORTED)
  set_target_properties(RunLane::run_lane_static PROPERTIES
    IMPORTED_LOCATION \"${{_run_lane_prefix}}/lib/{STATICLIB}\"
    IMPORTED_LINK_INTERFACE_LANGUAGES \"C\"
    INTERFACE_INCLUDE_DIRECTORIES \"${{_run_lane_prefix}}/include\"
    INTERFACE_LINK_LIBRARIES \"{links}\")
endif()

unset(_run_lane_prefix)
"
    );
    text
}

/// `lib/cmake/RunLane/RunLaneConfigVersion.cmake`: version `major`, SameMajorVersion (what
/// CMake's `write_basic_package_version_file` writes for a one-number version), and the
/// pointer width the libraries were built for.
fn cmake_version_file(major: u32, pointer_bytes: usize) -> String {
    format!(
        "\
# RunLane's version is its ABI major (RUN_LANE_ABI_VERSION), with SameMajorVersion
# compatibility: find_package(RunLane {major}) accepts this install, any other major is refused.
# Written by `cargo xtask dist`.
set(PACKAGE_VERSION \"{major}\")
set(PACKAGE_VERSION_COMPATIBLE FALSE)

if(PACKAGE_FIND_VERSION_RANGE)
  # A range accepts the ABI if it holds it.
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
      AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL \"INCLUDE\"
            AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
        OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL \"EXCLUDE\"
            AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL \"{major}\"
    AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

# The libraries are {bits}-bit: a project of another pointer width cannot link them.
if(NOT \"${{CMAKE_SIZEOF_VOID_P}}\" STREQUAL \"\" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL \"{pointer_bytes}\")
  set(PACKAGE_VERSION \"${{PACKAGE_VERSION}} ({bits}bit)\")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
",
        bits = pointer_bytes * 8
    )
}

/// An installed tree.
struct Tree {
    /// The absolute prefix.
    prefix: PathBuf,
    /// The ABI major it carries.
    major: u32,
}

/// Creates `dir` and its parents, naming it on failure.
fn create_dir(dir: &Path) -> Result<(), String> {
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
fn install_text(text: &str, to: &Path) -> Result<(), String> {
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
fn require_objcopy() -> Result<(), String> {
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
fn binutils(command: &mut Command) -> Result<Output, String> {
    let output = command.output().map_err(|e| {
        format!(
            "dist: could not run {:?} ({BINUTILS}; e.g. `apt-get install -y {BINUTILS}`): {e}",
            command.get_program()
        )
    })?;
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
fn objcopy(flags: &[String], from: &Path, to: &Path) -> Result<(), String> {
    remove_existing(to)?;
    binutils(Command::new("objcopy").args(flags).arg(from).arg(to)).map(drop)
}

/// The debug file of the installed library `name`, in `lib`: `.debug/<name>.debug` for the
/// shared library (its `.gnu_debuglink`), `.debug/<name>` (an unstripped, linkable copy) for
/// the static one.
fn debug_file(lib: &Path, name: &str) -> PathBuf {
    let debug = lib.join(DEBUG_DIR);
    if name == STATICLIB {
        debug.join(name)
    } else {
        debug.join(format!("{name}.debug"))
    }
}

/// Installs the shared library `from` as `lib/<name>` without its debug sections, which go
/// (compressed) to its debug file; the installed copy's `.gnu_debuglink` names that file, so
/// gdb finds it in `lib/.debug/`.
fn install_shared(from: &Path, lib: &Path, name: &str) -> Result<(), String> {
    let debug = debug_file(lib, name);
    objcopy(
        &[
            "--only-keep-debug".to_owned(),
            "--compress-debug-sections=zlib".to_owned(),
        ],
        from,
        &debug,
    )?;
    // Only the file name is recorded (with the debug file's CRC), so the tree may be moved.
    objcopy(
        &[
            "--strip-debug".to_owned(),
            format!("--add-gnu-debuglink={}", debug.display()),
        ],
        from,
        &lib.join(name),
    )
}

/// Installs the static library `from` as `lib/<name>` without its debug sections, and an
/// unstripped copy (debug sections compressed, which the linkers read) as its debug file: a
/// statically linked binary carries its own debug information, so there is no debuglink to
/// follow, and a runner that wants the lane's symbols links that copy instead.
fn install_static(from: &Path, lib: &Path, name: &str) -> Result<(), String> {
    objcopy(
        &["--compress-debug-sections=zlib".to_owned()],
        from,
        &debug_file(lib, name),
    )?;
    objcopy(&["--strip-debug".to_owned()], from, &lib.join(name))
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
fn prepare_prefix(prefix: &Path) -> Result<PathBuf, String> {
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
fn install(prefix: &Path, built: &Built) -> Result<Tree, String> {
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
    Ok(Tree {
        prefix: prefix.to_path_buf(),
        major,
    })
}

/// Runs one step of the check: `command` must succeed; on failure the error names the step,
/// the command and its output.
fn step(name: &str, command: &mut Command) -> Result<Output, String> {
    let output = command.output().map_err(|e| {
        format!(
            "dist --check: step `{name}` could not start {:?}: {e}",
            command.get_program()
        )
    })?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "dist --check: step `{name}` failed ({}): {}\n{}{}",
            output.status,
            describe(command),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// A command as a shell line, for messages.
fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
