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

mod build_files;
mod check;
mod elf;
mod install;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use self::check::check;
use self::install::{install, prepare_prefix, require_objcopy};
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
            println!("dist: installed run_lane ABI {} into {}", tree.major, tree.prefix.display());
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
        other => Err(format!("dist: unknown arguments `{}`; {USAGE}", other.join(" "))),
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
        .args(["--message-format=json", "--"])
        .args(["--print", "native-static-libs"]);
    let messages = cargo_json(command, "building lane-capi")?;
    let staticlib = artifact(&messages, STATICLIB)?;
    let cdylib = artifact(&messages, CDYLIB)?;
    let native_static_libs = native_static_libs(&messages).ok_or(
        "building lane-capi: rustc reported no `native-static-libs` note for librun_lane.a \
         (`--print native-static-libs`), so the system libraries it needs are unknown",
    )?;
    Ok(Built { staticlib, cdylib, native_static_libs })
}

/// Builds acl-fake in release and returns its cdylib's path (the fake libascendcl is never
/// installed: only the check loads it).
pub(crate) fn build_fake() -> Result<PathBuf, String> {
    println!("dist: building acl-fake (release)");
    let mut command = cargo();
    command.args(["build", "--release", "-p", "acl-fake"]);
    command.arg("--message-format=json");
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

/// Runs one step of the check: `command` must succeed; on failure the error names the step,
/// the command and its output.
fn step(name: &str, command: &mut Command) -> Result<Output, String> {
    let program = command.get_program().to_owned();
    let output = command.output();
    let output = output
        .map_err(|e| format!("dist --check: step `{name}` could not start {program:?}: {e}"))?;
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
