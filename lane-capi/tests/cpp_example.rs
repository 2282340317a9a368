//! The C++ example (`examples/onboard_runner.cpp`) compiles against `include/run_lane.h`,
//! links `librun_lane.a` and runs its checks on the simulator, under AddressSanitizer.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The folder cargo puts this build's libraries in (`target/<profile>/`): the test binary
/// sits in its `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Compiles and links the example with AddressSanitizer into a fresh temporary folder.
fn build_example() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let staticlib = profile_dir().join("librun_lane.a");
    assert!(
        staticlib.is_file(),
        "{} is missing: cargo builds it with the lib (crate-type staticlib)",
        staticlib.display()
    );
    static BUILDS: AtomicU32 = AtomicU32::new(0);
    let out = std::env::temp_dir().join(format!(
        "run-lane-cpp-{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&out).expect("a temporary folder");
    let target = env!("RUN_LANE_TARGET");
    let compiler = cc::Build::new()
        .cpp(true)
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .out_dir(&out)
        .cargo_metadata(false)
        .include(crate_dir.join("include"))
        .flag("-std=c++17")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror")
        .flag("-fsanitize=address")
        .flag("-fno-omit-frame-pointer")
        .get_compiler();
    let exe = out.join("onboard_runner");
    let mut command = compiler.to_command();
    command
        .arg(crate_dir.join("examples/onboard_runner.cpp"))
        .arg(&staticlib)
        // What `rustc --print native-static-libs` names for a Rust staticlib on Linux.
        .args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"])
        .arg("-o")
        .arg(&exe);
    let output = command.output().expect("the C++ compiler runs");
    assert!(
        output.status.success(),
        "compiling the example failed: {:?} {:?}\n{}",
        command.get_program(),
        command.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Runs the example with `args` and checks it passed every check and printed the failing
/// dispatch's stable failure line.
fn run_example(args: &[&std::ffi::OsStr]) {
    let exe = build_example();
    let output = Command::new(&exe)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the example failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    println!("{stdout}");
    assert!(stdout.ends_with("onboard runner: ok\n"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("run ") && l.contains("failed") && l.contains("107000")),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(exe.parent().expect("the temporary folder"));
}

#[test]
fn the_cpp_onboard_runner_runs_on_the_simulator_under_asan() {
    run_example(&["sim".as_ref()]);
}

#[test]
fn the_cpp_onboard_runner_runs_on_the_fake_acl_library_under_asan() {
    let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    run_example(&["acl".as_ref(), fake.as_os_str()]);
}
