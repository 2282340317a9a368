//! `cargo xtask dist --prefix DIR | --check`: the install tree of the C ABI, and a check
//! that it is consumed as users consume it.
//!
//! The tree (release build):
//!
//! ```text
//! include/run_lane.h
//! lib/librun_lane.a                 debug and LLVM bitcode sections stripped (at most
//!                                   20 MiB, which `--check` enforces)
//! lib/librun_lane.so.<N>            soname librun_lane.so.<N> (lane-capi/build.rs); debug
//!                                   sections stripped, .gnu_debuglink librun_lane.so.<N>.debug
//! lib/librun_lane.so -> librun_lane.so.<N>
//! lib/.debug/librun_lane.so.<N>.debug   the shared library's debug information (gdb looks in
//!                                       the library's `.debug/` folder for the debuglink)
//! lib/.debug/librun_lane.a          the static library with its debug information (no
//!                                   bitcode), to link by path (or with `-L lib/.debug`) when
//!                                   the binary should carry symbols
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
//! The static library's objects also carry LLVM bitcode (`.llvmbc`, with its command line in
//! `.llvmcmd`): rustc embeds it in every object for cross-language LTO, and the archive
//! bundles the objects of every crate it links, std's included. No C++ build reads it, and
//! it was most of the archive, so both copies of the static library go without it.
//!
//! `--check` installs into a temporary prefix, then builds the C++ example three ways (CMake
//! with each target, pkg-config with the shared library), runs each binary on the simulator
//! and on the fake libascendcl, checks that CMake refuses another major, and removes the
//! prefix; it also checks that the installed libraries carry no `.debug_info`, that their
//! debug files do, that the static library carries no bitcode and is at most
//! [`MAX_STATICLIB_BYTES`], and that the shared library's `.gnu_debuglink` names its debug
//! file. It needs cmake, pkg-config, make, readelf and objcopy; `cargo test` needs none of
//! them.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::{cargo, project_root};

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
/// The sections of LLVM bitcode rustc embeds in each object (`-C embed-bitcode`, on by
/// default): the module, and the command line that compiled it.
const BITCODE_SECTIONS: [&str; 2] = [".llvmbc", ".llvmcmd"];
/// The most the installed `lib/librun_lane.a` may weigh: 20 MiB (20 * 1024 * 1024 bytes).
/// Stripped of debug information and bitcode it is about 8 MiB; the bound catches bitcode
/// or a dependency that came back.
const MAX_STATICLIB_BYTES: u64 = 20 * 1024 * 1024;
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
        Mode::Check => check(),
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

/// objcopy's flags for the static library: for the installed copy (`debug` false) without
/// its debug sections, for its debug file with them, compressed (which the linkers read);
/// both without the embedded bitcode ([`BITCODE_SECTIONS`]).
fn static_objcopy_flags(debug: bool) -> Vec<String> {
    let keep_or_strip = if debug {
        "--compress-debug-sections=zlib"
    } else {
        "--strip-debug"
    };
    std::iter::once(keep_or_strip.to_owned())
        .chain(
            BITCODE_SECTIONS
                .iter()
                .map(|section| format!("--remove-section={section}")),
        )
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

/// The installed static library's size, `bytes`, against [`MAX_STATICLIB_BYTES`]: an error
/// naming both when it is larger.
fn check_static_size(bytes: u64) -> Result<(), String> {
    if bytes <= MAX_STATICLIB_BYTES {
        Ok(())
    } else {
        Err(format!(
            "dist --check: step `size`: lib/{STATICLIB} is {bytes} bytes ({:.1} MiB), above \
             the bound of {MAX_STATICLIB_BYTES} bytes (20 MiB): look for bitcode or debug \
             sections left in it, or a dependency the library should not link",
            bytes as f64 / (1024.0 * 1024.0)
        ))
    }
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

/// The tools the check runs, each with the Debian package that has it.
const TOOLS: &[(&str, &str)] = &[
    ("cmake", "cmake"),
    ("pkg-config", "pkg-config"),
    ("make", "make"),
    ("readelf", BINUTILS),
    ("objcopy", BINUTILS),
];

/// Fails, naming the packages, when a tool the check needs is missing.
fn check_tools() -> Result<(), String> {
    let mut missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(tool, _)| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .map(|(_, package)| *package)
        .collect();
    // readelf and objcopy are both binutils (adjacent in TOOLS).
    missing.dedup();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "dist --check needs {} (e.g. `apt-get install -y {}`)",
            missing.join(", "),
            missing.join(" ")
        ))
    }
}

/// `cargo xtask dist --check`: install into a temporary prefix and consume it three ways.
fn check() -> Result<(), String> {
    check_tools()?;
    let scratch = std::env::temp_dir().join(format!("run-lane-dist-{}", std::process::id()));
    if scratch.exists() {
        fs::remove_dir_all(&scratch)
            .map_err(|e| format!("could not clear {}: {e}", scratch.display()))?;
    }
    match check_in(&scratch) {
        Ok(()) => {
            fs::remove_dir_all(&scratch)
                .map_err(|e| format!("could not remove {}: {e}", scratch.display()))?;
            println!("dist --check: ok (removed {})", scratch.display());
            Ok(())
        }
        Err(message) => Err(format!(
            "{message}\n(the prefix and builds are left in {} for a look)",
            scratch.display()
        )),
    }
}

/// The check's steps, in `scratch`.
fn check_in(scratch: &Path) -> Result<(), String> {
    let built = build_release()?;
    let fake = build_fake()?;
    let tree = install(&prepare_prefix(&scratch.join("prefix"))?, &built)?;
    let prefix = &tree.prefix;
    let major = tree.major;
    println!(
        "dist --check: installed ABI {major} into {} (soname {})",
        prefix.display(),
        soname(major)
    );
    check_stripped(&prefix.join("lib"), major)?;
    let staticlib = prefix.join("lib").join(STATICLIB);
    let bytes = fs::metadata(&staticlib)
        .map_err(|e| format!("could not read {}: {e}", staticlib.display()))?
        .len();
    check_static_size(bytes)?;
    println!("dist --check: {STATICLIB}: {bytes} bytes, at most {MAX_STATICLIB_BYTES}: ok");

    let examples = project_root().join(EXAMPLES);
    let mut consumers = Vec::new();
    for (name, static_link) in [("cmake-shared", false), ("cmake-static", true)] {
        let build = scratch.join(name);
        let mut configure = Command::new("cmake");
        configure
            .arg("-S")
            .arg(&examples)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .arg("-DCMAKE_BUILD_TYPE=Release")
            .arg(format!(
                "-DRUN_LANE_STATIC={}",
                if static_link { "ON" } else { "OFF" }
            ));
        step(&format!("{name}: cmake configure"), &mut configure)?;
        let mut compile = Command::new("cmake");
        compile.arg("--build").arg(&build);
        step(&format!("{name}: cmake --build"), &mut compile)?;
        println!("dist --check: {name}: built {}", describe(&configure));
        consumers.push((name.to_owned(), build.join("onboard_runner"), !static_link));
    }

    let exe = pkg_config_consumer(scratch, prefix, major, &examples)?;
    consumers.push(("pkg-config".to_owned(), exe, true));

    for (name, exe, shared) in &consumers {
        check_linkage(name, exe, major, *shared)?;
        let modes: [Vec<&std::ffi::OsStr>; 3] = [
            vec!["sim".as_ref()],
            vec!["acl".as_ref(), fake.as_os_str()],
            // The runner as its own device (L-22): its table of device operations over the fake.
            vec!["device_ops".as_ref(), fake.as_os_str()],
        ];
        for args in modes {
            let mut command = Command::new(exe);
            // cargo's run path for the xtask must not help the binary find the library.
            command.args(&args).env_remove("LD_LIBRARY_PATH");
            let step_name = format!("{name}: run {}", describe(&command));
            let output = step(&step_name, &mut command)?;
            let stdout = String::from_utf8_lossy(&output.stdout);
            if !stdout.ends_with(EXAMPLE_OK) {
                return Err(format!(
                    "dist --check: step `{step_name}` did not end with `{}`:\n{stdout}",
                    EXAMPLE_OK.trim_end()
                ));
            }
            println!("dist --check: {step_name}: ok");
        }
    }

    refuse_other_majors(scratch, prefix, major)
}

/// The installed libraries carry no `.debug_info`, their debug files do, neither copy of the
/// static library carries bitcode, and the shared library's `.gnu_debuglink` names its debug
/// file (which gdb then finds in `lib/.debug/`).
fn check_stripped(lib: &Path, major: u32) -> Result<(), String> {
    let step_name = "debug information";
    for name in [soname(major), STATICLIB.to_owned()] {
        let installed = lib.join(&name);
        let debug = debug_file(lib, &name);
        if section_names(&installed)?
            .iter()
            .any(|s| s == ".debug_info")
        {
            return Err(format!(
                "dist --check: step `{step_name}`: {} has a .debug_info section; it should be \
                 stripped",
                installed.display()
            ));
        }
        if !section_names(&debug)?.iter().any(|s| s == ".debug_info") {
            return Err(format!(
                "dist --check: step `{step_name}`: {} has no .debug_info section",
                debug.display()
            ));
        }
        println!(
            "dist --check: {name}: stripped, debug information in {}",
            debug.display()
        );
    }
    for archive in [lib.join(STATICLIB), debug_file(lib, STATICLIB)] {
        if let Some(section) = bitcode_section(&section_names(&archive)?) {
            return Err(format!(
                "dist --check: step `bitcode`: {} has a {section} section; dist removes \
                 the embedded bitcode",
                archive.display()
            ));
        }
    }
    println!("dist --check: {STATICLIB} and its debug file: no bitcode: ok");
    let shared = lib.join(soname(major));
    let output = binutils(
        Command::new("readelf")
            .args(["-W", "-p", ".gnu_debuglink"])
            .arg(&shared),
    )?;
    let link = first_string(&String::from_utf8_lossy(&output.stdout));
    let want = format!("{}.debug", soname(major));
    if link.as_deref() != Some(want.as_str()) {
        return Err(format!(
            "dist --check: step `{step_name}`: {}'s .gnu_debuglink names {}, want {want}",
            shared.display(),
            link.as_deref().unwrap_or("nothing (no such section)")
        ));
    }
    println!("dist --check: {}: .gnu_debuglink {want}: ok", soname(major));
    Ok(())
}

/// The section names of `readelf -S -W` output (of every member, for an archive).
fn parse_section_names(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('['))
        .filter_map(|rest| rest.split_once(']'))
        .filter(|(index, _)| index.trim().parse::<u32>().is_ok())
        .filter_map(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The first of [`BITCODE_SECTIONS`] among `sections`, if any.
fn bitcode_section(sections: &[String]) -> Option<&'static str> {
    BITCODE_SECTIONS
        .into_iter()
        .find(|bitcode| sections.iter().any(|s| s == bitcode))
}

/// `readelf -S -W FILE`'s section names.
fn section_names(file: &Path) -> Result<Vec<String>, String> {
    let output = binutils(Command::new("readelf").args(["-S", "-W"]).arg(file))?;
    Ok(parse_section_names(&String::from_utf8_lossy(
        &output.stdout,
    )))
}

/// The string at offset 0 of `readelf -p SECTION` output: for `.gnu_debuglink`, the debug
/// file's name (the CRC follows it, after its NUL).
fn first_string(readelf: &str) -> Option<String> {
    readelf
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('['))
        .filter_map(|rest| rest.split_once(']'))
        .find(|(offset, _)| offset.trim() == "0")
        .map(|(_, name)| name.trim().to_owned())
}

/// Builds the example with `pkg-config --cflags --libs run_lane` (the shared library; an
/// rpath from the .pc's libdir so it runs from the tree).
fn pkg_config_consumer(
    scratch: &Path,
    prefix: &Path,
    major: u32,
    examples: &Path,
) -> Result<PathBuf, String> {
    let pc_path = prefix.join("lib/pkgconfig");
    let pkg_config = |args: &[&str], name: &str| -> Result<String, String> {
        let mut command = Command::new("pkg-config");
        command.args(args).env("PKG_CONFIG_PATH", &pc_path);
        let output = step(name, &mut command)?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let version = pkg_config(
        &["--modversion", "run_lane"],
        "pkg-config: --modversion run_lane",
    )?;
    if version != major.to_string() {
        return Err(format!(
            "dist --check: step `pkg-config: --modversion run_lane` gave {version}, want {major}"
        ));
    }
    let wanted = format!("run_lane = {major}");
    pkg_config(
        &["--exists", &wanted],
        &format!("pkg-config: --exists '{wanted}'"),
    )?;
    let flags = pkg_config(
        &["--cflags", "--libs", "run_lane"],
        "pkg-config: --cflags --libs run_lane",
    )?;
    let libdir = pkg_config(
        &["--variable=libdir", "run_lane"],
        "pkg-config: --variable=libdir run_lane",
    )?;
    let out = scratch.join("pkg-config");
    create_dir(&out)?;
    let exe = out.join("onboard_runner");
    let mut compile = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned()));
    compile
        .arg("-std=c++17")
        .arg("-O1")
        .arg(examples.join("onboard_runner.cpp"))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{libdir}"))
        // The example's own needs: threads and dlopen (of the fake).
        .args(["-pthread", "-ldl"])
        .arg("-o")
        .arg(&exe);
    step("pkg-config: compile", &mut compile)?;
    println!("dist --check: pkg-config: built {}", describe(&compile));
    Ok(exe)
}

/// A binary linked to the shared library needs `librun_lane.so.<N>` (the soname, not the
/// link name); one linked statically needs no run_lane at all.
fn check_linkage(name: &str, exe: &Path, major: u32, shared: bool) -> Result<(), String> {
    let needed = dynamic_section(exe)?.needed;
    let lane: Vec<&String> = needed
        .iter()
        .filter(|n| n.starts_with("librun_lane"))
        .collect();
    let want = soname(major);
    let ok = if shared {
        lane == [&want]
    } else {
        lane.is_empty()
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "dist --check: step `{name}: linkage`: {} needs {lane:?}, want {}",
            exe.display(),
            if shared {
                want
            } else {
                "no librun_lane".to_owned()
            }
        ))
    }
}

/// `find_package(RunLane M REQUIRED)` fails for a major M other than the installed one.
fn refuse_other_majors(scratch: &Path, prefix: &Path, major: u32) -> Result<(), String> {
    let project = scratch.join("refusal");
    create_dir(&project)?;
    install_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(run_lane_refusal LANGUAGES NONE)\n\
         find_package(RunLane ${WANT} REQUIRED)\n",
        &project.join("CMakeLists.txt"),
    )?;
    let others = [Some(major + 1), major.checked_sub(1).filter(|m| *m > 0)];
    for other in others.into_iter().flatten() {
        let build = scratch.join(format!("refusal-{other}"));
        let output = Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .arg(format!("-DWANT={other}"))
            .output()
            .map_err(|e| format!("dist --check: could not start cmake: {e}"))?;
        let text = String::from_utf8_lossy(&output.stderr);
        if output.status.success() || !text.contains("RunLane") {
            return Err(format!(
                "dist --check: step `find_package(RunLane {other})`: CMake accepted ABI {major} \
                 for {other} (or failed for another reason):\n{text}"
            ));
        }
        println!("dist --check: find_package(RunLane {other}) refused ABI {major}: ok");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> Vec<String> {
        ["-ldl", "-lgcc_s", "-lpthread", "-lc"]
            .map(str::to_owned)
            .to_vec()
    }

    #[test]
    fn arguments_are_a_prefix_or_check() {
        assert_eq!(
            parse(&["--prefix", "/opt/lane"]),
            Ok(Mode::Install(PathBuf::from("/opt/lane")))
        );
        assert_eq!(parse(&["--check"]), Ok(Mode::Check));
        assert!(parse(&["--prefix"]).unwrap_err().contains("needs a folder"));
        assert!(
            parse(&["--prefix", ""])
                .unwrap_err()
                .contains("needs a folder")
        );
        assert!(parse(&[]).unwrap_err().contains("usage"));
        assert!(parse(&["--check", "x"]).unwrap_err().contains("unknown"));
    }

    #[test]
    fn the_major_comes_from_the_header_define() {
        assert_eq!(
            abi_major("/* x */\n#define RUN_LANE_ABI_VERSION 7\n#define X 1\n"),
            Ok(7)
        );
        assert!(
            abi_major("#define X 1\n")
                .unwrap_err()
                .contains("no `#define")
        );
        assert!(
            abi_major("#define RUN_LANE_ABI_VERSION two\n")
                .unwrap_err()
                .contains("not a version")
        );
        // The committed header has one, so the install tree always has a major.
        let header = fs::read_to_string(project_root().join(HEADER)).unwrap();
        assert!(abi_major(&header).is_ok());
    }

    #[test]
    fn cargo_messages_give_the_artifacts_and_the_native_libraries() {
        let lines = [
            r#"{"reason":"compiler-message","message":{"level":"note","message":"native-static-libs: -ldl -lgcc_s -lc","rendered":"note: ..."}}"#,
            r#"{"reason":"compiler-artifact","filenames":["/t/release/librun_lane.so","/t/release/librun_lane.a"]}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ];
        let messages: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            artifact(&messages, STATICLIB),
            Ok(PathBuf::from("/t/release/librun_lane.a"))
        );
        assert!(artifact(&messages, FAKE_CDYLIB).is_err());
        assert_eq!(
            native_static_libs(&messages),
            Some(["-ldl", "-lgcc_s", "-lc"].map(str::to_owned).to_vec())
        );
        assert_eq!(native_static_libs(&messages[1..]), None);
    }

    #[test]
    fn readelf_output_gives_the_soname_and_the_needed_libraries() {
        let readelf = "\
Dynamic section at offset 0x1 contains 3 entries:
  Tag        Type                         Name/Value
 0x0000000000000001 (NEEDED)             Shared library: [librun_lane.so.2]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
 0x000000000000000e (SONAME)             Library soname: [librun_lane.so.2]
 0x000000000000001d (RUNPATH)            Library runpath: [/opt/lane/lib]
";
        assert_eq!(
            parse_dynamic(readelf),
            Dynamic {
                soname: Some("librun_lane.so.2".to_owned()),
                needed: vec!["librun_lane.so.2".to_owned(), "libc.so.6".to_owned()],
            }
        );
        assert_eq!(parse_dynamic(""), Dynamic::default());
    }

    #[test]
    fn readelf_output_gives_the_section_names_and_the_debuglink() {
        let sections = "\
File: librun_lane.a(a.o)
There are 4 section headers, starting at offset 0x1:

Section Headers:
  [Nr] Name              Type            Address          Off    Size   ES Flg Lk Inf Al
  [ 0]                   NULL            0000000000000000 000000 000000 00      0   0  0
  [ 1] .text             PROGBITS        0000000000000000 000040 000010 00  AX  0   0 16
  [ 2] .debug_info       PROGBITS        0000000000000000 000050 000020 00   C  0   0  1
Key to Flags:
  W (write), A (alloc), X (execute), M (merge), S (strings), I (info),
";
        let names = parse_section_names(sections);
        assert_eq!(names, ["NULL", ".text", ".debug_info"]);
        assert!(parse_section_names("").is_empty());

        let dump = "\nString dump of section '.gnu_debuglink':\n  [     0]  librun_lane.so.3.debug\n  [    18]  Z!x\n\n";
        assert_eq!(
            first_string(dump),
            Some("librun_lane.so.3.debug".to_owned())
        );
        assert_eq!(first_string("readelf: Warning: no section\n"), None);
    }

    #[test]
    fn both_copies_of_the_static_library_lose_the_bitcode_and_only_one_its_debug_sections() {
        let removed = [".llvmbc", ".llvmcmd"].map(|s| format!("--remove-section={s}"));
        let installed = static_objcopy_flags(false);
        let debug = static_objcopy_flags(true);
        for flags in [&installed, &debug] {
            for remove in &removed {
                assert!(flags.contains(remove), "{flags:?}");
            }
        }
        assert!(installed.contains(&"--strip-debug".to_owned()));
        assert!(!debug.iter().any(|flag| flag.starts_with("--strip")));
        assert!(debug.contains(&"--compress-debug-sections=zlib".to_owned()));

        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            bitcode_section(&names(&[".text", ".llvmcmd"])),
            Some(".llvmcmd")
        );
        assert_eq!(
            bitcode_section(&names(&[".llvmbc", ".text"])),
            Some(".llvmbc")
        );
        assert_eq!(bitcode_section(&names(&[".text", ".debug_info"])), None);
    }

    #[test]
    fn a_static_library_above_20_mib_fails_the_check_naming_its_size_and_the_bound() {
        assert_eq!(MAX_STATICLIB_BYTES, 20 * 1024 * 1024);
        assert!(check_static_size(0).is_ok());
        assert!(check_static_size(12_135_054).is_ok());
        assert!(check_static_size(MAX_STATICLIB_BYTES).is_ok());
        let error = check_static_size(MAX_STATICLIB_BYTES + 1).unwrap_err();
        assert!(error.contains("20971521 bytes"), "{error}");
        assert!(
            error.contains("bound of 20971520 bytes (20 MiB)"),
            "{error}"
        );
        // The size before bitcode was removed.
        assert!(
            check_static_size(51_823_094)
                .unwrap_err()
                .contains("49.4 MiB")
        );
    }

    #[test]
    fn the_debug_files_lie_in_libs_debug_folder() {
        let lib = Path::new("/opt/lane/lib");
        assert_eq!(
            debug_file(lib, &soname(3)),
            Path::new("/opt/lane/lib/.debug/librun_lane.so.3.debug")
        );
        assert_eq!(
            debug_file(lib, STATICLIB),
            Path::new("/opt/lane/lib/.debug/librun_lane.a")
        );
    }

    #[test]
    fn the_pc_file_carries_the_major_and_rustcs_libraries() {
        let pc = pkg_config_file("/opt/lane", 3, &flags());
        assert!(pc.contains("prefix=/opt/lane\n"), "{pc}");
        assert!(pc.contains("\nVersion: 3\n"), "{pc}");
        assert!(pc.contains("\nLibs: -L${libdir} -lrun_lane\n"), "{pc}");
        assert!(
            pc.contains("\nLibs.private: -ldl -lgcc_s -lpthread -lc\n"),
            "{pc}"
        );
        assert!(pc.contains("\nCflags: -I${includedir}\n"), "{pc}");
    }

    #[test]
    fn the_cmake_config_names_both_targets_and_the_soname() {
        let config = cmake_config_file(3, &flags());
        assert!(config.contains("add_library(RunLane::run_lane SHARED IMPORTED)"));
        assert!(config.contains("add_library(RunLane::run_lane_static STATIC IMPORTED)"));
        assert!(config.contains("/lib/librun_lane.so.3\""), "{config}");
        assert!(config.contains("IMPORTED_SONAME \"librun_lane.so.3\""));
        assert!(config.contains("/lib/librun_lane.a\""));
        assert!(config.contains("INTERFACE_LINK_LIBRARIES \"dl;gcc_s;pthread;c\""));
        assert!(config.contains("set(RunLane_ABI_VERSION 3)"));
        assert_eq!(
            cmake_link_items(&["-lm".to_owned(), "-Wl,-x".to_owned()]),
            "m;-Wl,-x"
        );
    }

    #[test]
    fn the_cmake_version_is_the_major_with_same_major_compatibility() {
        let version = cmake_version_file(3, 8);
        assert!(version.contains("set(PACKAGE_VERSION \"3\")"));
        assert!(version.contains("PACKAGE_FIND_VERSION_MAJOR STREQUAL \"3\""));
        assert!(version.contains("CMAKE_SIZEOF_VOID_P STREQUAL \"8\""));
        assert!(version.contains("(64bit)"));
    }

    #[test]
    fn a_prefix_the_files_cannot_carry_is_refused() {
        assert_eq!(
            plain_prefix(Path::new("/opt/run-lane")),
            Ok("/opt/run-lane")
        );
        for bad in ["/opt/run lane", "/opt/a;b", "/opt/$x", "/opt/\"q"] {
            assert!(
                plain_prefix(Path::new(bad))
                    .unwrap_err()
                    .contains("cannot carry"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_example_and_the_guide_ask_for_the_current_abi_major() {
        // The consumers pin the major they were written for; after an ABI bump they must be
        // reviewed and the number raised with them.
        let root = project_root();
        let major = abi_major(&fs::read_to_string(root.join(HEADER)).unwrap()).unwrap();
        let want = format!("find_package(RunLane {major} REQUIRED)");
        for file in [
            format!("{EXAMPLES}/CMakeLists.txt"),
            "docs/embedding.md".to_owned(),
        ] {
            let text = fs::read_to_string(root.join(&file)).unwrap();
            let asks: Vec<&str> = text
                .match_indices("find_package(RunLane ")
                .map(|(at, _)| text[at..].split(')').next().unwrap_or_default())
                .collect();
            assert!(
                !asks.is_empty(),
                "{file} has no find_package(RunLane N ...)"
            );
            for ask in asks {
                assert!(
                    want.starts_with(ask),
                    "{file} asks `{ask})`; the ABI major is {major}: review it and write `{want}`"
                );
            }
        }
    }
}
