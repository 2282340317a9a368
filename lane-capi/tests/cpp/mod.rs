//! Building the C and C++ programs of the C ABI's tests with the `cc` crate: against
//! `include/run_lane.h`, warnings as errors, the C++ ones under AddressSanitizer and linked
//! with the `librun_lane.a` this very test run built. Shared by `cpp_example.rs` and
//! `embedded_runtime.rs`.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The folder cargo puts this build's libraries in (`target/<profile>/`): the test binary
/// sits in its `deps/`.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// A fresh temporary folder for one build.
pub(crate) fn temp_dir() -> PathBuf {
    static BUILDS: AtomicU32 = AtomicU32::new(0);
    let out = std::env::temp_dir().join(format!(
        "run-lane-capi-{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&out).expect("a temporary folder");
    out
}

/// A `cc` build for this target into `out`, warnings as errors, with the header's folder
/// on the include path (outside a build script `cc` needs the target named).
pub(crate) fn build(out: &Path, cpp: bool) -> cc::Build {
    let target = env!("RUN_LANE_TARGET");
    let mut build = cc::Build::new();
    build
        .cpp(cpp)
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .out_dir(out)
        .cargo_metadata(false)
        .include(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror");
    build
}

/// The C++ build of the examples: C++17 under AddressSanitizer.
pub(crate) fn asan_cpp(out: &Path) -> cc::Build {
    let mut build = build(out, true);
    build.flag("-std=c++17").flag("-fsanitize=address").flag("-fno-omit-frame-pointer");
    build
}

/// Runs `command`, failing the test with its output if it fails.
pub(crate) fn run_compiler(mut command: Command, what: &str) {
    let output = command.output().expect("the compiler runs");
    assert!(
        output.status.success(),
        "{what} failed: {:?} {:?}\n{}",
        command.get_program(),
        command.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Compiles and links `examples/<name>.cpp` with AddressSanitizer into `out`; the binary.
pub(crate) fn build_program_into(name: &str, out: &Path) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `cargo test` leaves the static library in deps/ (the test's own build of the lib);
    // only `cargo build` copies it up to the profile folder. Prefer deps/: it is the one this
    // very test run built.
    let candidates =
        [profile_dir().join("deps/librun_lane.a"), profile_dir().join("librun_lane.a")];
    let staticlib = candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("the static library is missing (cargo builds it with the lib, crate-type staticlib); looked at {candidates:?}")
        })
        .clone();
    let compiler = asan_cpp(out).get_compiler();
    let exe = out.join(name);
    let mut command = compiler.to_command();
    command
        .arg(crate_dir.join(format!("examples/{name}.cpp")))
        .arg(&staticlib)
        // What `rustc --print native-static-libs` names for a Rust staticlib on Linux.
        .args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"])
        .arg("-o")
        .arg(&exe);
    run_compiler(command, &format!("compiling {name}.cpp"));
    exe
}

/// Compiles and links `examples/<name>.cpp` with AddressSanitizer into a fresh temporary
/// folder.
pub(crate) fn build_program(name: &str) -> PathBuf {
    build_program_into(name, &temp_dir())
}
