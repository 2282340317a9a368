//! `dist --check`: the tree installed into a scratch prefix, consumed as users consume it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::project_root;

use super::build_files::soname;
use super::elf::{bitcode_section, dynamic_section, first_string, section_names};
use super::install::{binutils, create_dir, debug_file, install, install_text, prepare_prefix};
use super::{
    BINUTILS, EXAMPLE_OK, EXAMPLES, MAX_STATICLIB_BYTES, STATICLIB, build_fake, build_release,
    describe, step,
};

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
pub(super) fn check() -> Result<(), String> {
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
        let mut configure = cmake(&examples, &build, prefix);
        let static_link_option = if static_link { "ON" } else { "OFF" };
        configure
            .arg("-DCMAKE_BUILD_TYPE=Release")
            .arg(format!("-DRUN_LANE_STATIC={static_link_option}"));
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

/// `cmake -S SOURCE -B BUILD` configuring against the tree installed under `prefix`.
fn cmake(source: &Path, build: &Path, prefix: &Path) -> Command {
    let mut command = Command::new("cmake");
    command.arg("-S").arg(source).arg("-B").arg(build);
    command.arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()));
    command
}

/// The installed static library's size, `bytes`, against [`MAX_STATICLIB_BYTES`]: an error
/// naming both when it is larger.
pub(super) fn check_static_size(bytes: u64) -> Result<(), String> {
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

/// The installed libraries carry no `.debug_info`, their debug files do, neither copy of the
/// static library carries bitcode, and the shared library's `.gnu_debuglink` names its debug
/// file (which gdb then finds in `lib/.debug/`).
fn check_stripped(lib: &Path, major: u32) -> Result<(), String> {
    let step_name = "debug information";
    for name in [soname(major), STATICLIB.to_owned()] {
        let installed = lib.join(&name);
        let debug = debug_file(lib, &name);
        if section_names(&installed)?.iter().any(|s| s == ".debug_info") {
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
        println!("dist --check: {name}: stripped, debug information in {}", debug.display());
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
    let output =
        binutils(Command::new("readelf").args(["-W", "-p", ".gnu_debuglink"]).arg(&shared))?;
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

/// Builds the example with `pkg-config --cflags --libs run_lane` (the shared library; an
/// rpath from the .pc's libdir so it runs from the tree).
fn pkg_config_consumer(
    scratch: &Path,
    prefix: &Path,
    major: u32,
    examples: &Path,
) -> Result<PathBuf, String> {
    let pc_path = prefix.join("lib/pkgconfig");
    // `pkg-config ARGS` (the step named `pkg-config: ARGS`, or `name`), its output trimmed.
    let pkg_config = |args: &[&str], name: Option<&str>| -> Result<String, String> {
        let mut command = Command::new("pkg-config");
        command.args(args).env("PKG_CONFIG_PATH", &pc_path);
        let name = name.map_or_else(|| format!("pkg-config: {}", args.join(" ")), str::to_owned);
        let output = step(&name, &mut command)?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let version = pkg_config(&["--modversion", "run_lane"], None)?;
    if version != major.to_string() {
        return Err(format!(
            "dist --check: step `pkg-config: --modversion run_lane` gave {version}, want {major}"
        ));
    }
    let wanted = format!("run_lane = {major}");
    let exists = format!("pkg-config: --exists '{wanted}'");
    pkg_config(&["--exists", &wanted], Some(&exists))?;
    let flags = pkg_config(&["--cflags", "--libs", "run_lane"], None)?;
    let libdir = pkg_config(&["--variable=libdir", "run_lane"], None)?;
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
    let lane: Vec<&String> = needed.iter().filter(|n| n.starts_with("librun_lane")).collect();
    let want = if shared { soname(major) } else { "no librun_lane".to_owned() };
    if (shared && lane == [&want]) || (!shared && lane.is_empty()) {
        Ok(())
    } else {
        Err(format!(
            "dist --check: step `{name}: linkage`: {} needs {lane:?}, want {want}",
            exe.display(),
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
        let output = cmake(&project, &build, prefix)
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
