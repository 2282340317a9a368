//! The C++ example (`examples/onboard_runner.cpp`) compiles against `include/run_lane.h`,
//! links `librun_lane.a` and runs its checks under AddressSanitizer, on the simulator and
//! on the fake libascendcl; the header alone compiles as strict C.

mod cpp;

use std::path::PathBuf;
use std::process::Command;

use cpp::{asan_cpp, build, build_program, run_compiler, temp_dir};

/// Compiles and links the example with AddressSanitizer into a fresh temporary folder.
fn build_example() -> PathBuf {
    build_program("onboard_runner")
}

/// Runs the example with `args` and checks it passed every check and printed the failing
/// dispatch's stable failure line; on the fake (`acl`), that it found no force reset made
/// under a device wait (SPEC L-20).
fn run_example(args: &[&std::ffi::OsStr]) {
    let exe = build_example();
    let output = Command::new(&exe)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the example failed ({}):\n{stdout}\n{stderr}", output.status);
    println!("{stdout}");
    assert!(stdout.ends_with("onboard runner: ok\n"), "{stdout}");
    // On the fake, the program checked L-20 itself (a force reset under a device wait fails
    // it) and said so.
    if args.first().is_some_and(|mode| *mode == "acl" || *mode == "device_ops") {
        let checked = stderr.lines().any(|l| l == "onboard runner: resets_under_wait 0");
        assert!(checked, "{stderr}");
    }
    let failed = |l: &str| l.starts_with("run ") && l.contains("failed") && l.contains("107000");
    assert!(stdout.lines().any(failed), "{stdout}");
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

/// L-22 from C++: the runner is also the device, its `RunLaneDeviceOps` forwarding to the fake
/// libascendcl; with host workers, so the table binds the workers too.
#[test]
fn the_cpp_onboard_runner_runs_on_its_own_device_table_with_host_workers_under_asan() {
    let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    run_example(&["device_ops".as_ref(), fake.as_os_str(), "workers".as_ref()]);
}

#[test]
fn the_cpp_onboard_runner_runs_with_host_workers_on_the_simulator_under_asan() {
    run_example(&["sim".as_ref(), "workers".as_ref()]);
}

#[test]
fn the_cpp_onboard_runner_runs_with_host_workers_on_the_fake_acl_library_under_asan() {
    let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    run_example(&["acl".as_ref(), fake.as_os_str(), "workers".as_ref()]);
}

/// Builds `examples/fake_bench.cpp` (ASan) and runs it as `fake_bench MODE... FAKE ARGS...`,
/// failing the test with its output unless it succeeds and reports no force reset made
/// under a device wait (SPEC L-20); the binary and what it printed.
fn run_fake_bench(mode: &[&str], args: &[&str]) -> (PathBuf, String) {
    let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    let exe = build_program("fake_bench");
    let output = Command::new(&exe)
        .args(mode)
        .arg(&fake)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .output()
        .expect("the bench runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}\n{stdout}\n{stderr}", output.status);
    // L-20, checked by the bench itself at its end (it fails on a force reset made under a
    // device wait), over every lane it ran.
    let checked = stderr.lines().any(|l| l == "fake_bench: resets_under_wait 0");
    assert!(checked, "{stderr}");
    (exe, stdout)
}

/// Each line of `text`, split into its words.
fn words(text: &str) -> Vec<Vec<&str>> {
    text.lines().map(|l| l.split_whitespace().collect()).collect()
}

/// `cargo xtask fake-bench`'s C++ runner, built against this test build and run for a few
/// runs of each arm: it prints the floor, the six arms (three loops at depth two and at depth
/// one), every run OK, the three hand-written anchors measured interleaved with loop (b) and
/// printed just before it (their runs checked by the bench itself: each must publish an ok
/// record), loop (b) again at both depths with `submitters_bound` on and with the caller
/// driving the lane (`RUN_LANE_DRIVE_CALLER`; in the same turns), where a depth-one gap goes
/// for the anchor and the lane (option off, on, caller-driven), and the idle lane's lines last
/// (option off, then on, then where their time goes before the AICore launch, then the
/// caller-driven lane's). Its figures are the benchmark's, not this test's.
#[test]
fn the_c_abi_fake_bench_runs_every_loop_at_both_depths_on_the_fake() {
    let (exe, stdout) = run_fake_bench(&[], &["8", "1", "2000"]);
    let lines = words(&stdout);
    assert_eq!(lines.len(), 25, "{stdout}");
    assert_eq!(lines[0][..3], ["floor", "2000", "6"], "{stdout}");
    let (mut arms, mut latencies, mut anchors, mut splits) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for line in &lines[1..lines.len() - 4] {
        match line[0] {
            "arm" => {
                assert_eq!((line[4], line[5]), ("8", "8"), "every run OK: {stdout}");
                arms.push((line[2], line[3]));
            }
            // At depth two, each loop's submit-to-launch latency follows its arm's line.
            "latency" => {
                assert_eq!(line.len(), 5, "{stdout}");
                assert_eq!(arms.last().map(|a| a.1), Some("depth2"), "{stdout}");
                latencies.push(line[2]);
            }
            // anchor KERNEL_US KIND RUNS MEDIAN P99, right after loop (a)'s arms.
            "anchor" => {
                assert_eq!(line.len(), 6, "{stdout}");
                assert_eq!((line[1], line[3]), ("2000", "8"), "{stdout}");
                assert_eq!(arms.len(), 2, "{stdout}");
                anchors.push(line[2]);
            }
            // depth1-split KERNEL_US WHO REACT LAUNCH START PERIOD SPAN, after loop (b)'s arms.
            "depth1-split" => {
                assert_eq!(line.len(), 8, "{stdout}");
                assert_eq!(line[1], "2000", "{stdout}");
                assert_eq!(arms.len(), 8, "{stdout}");
                let figure = |i: usize| line[i].parse::<u64>().expect("a figure");
                let figures: Vec<u64> = (3..line.len()).map(figure).collect();
                // At depth one a run starts after its predecessor ended: its period (start to
                // start) exceeds a span (start to end).
                assert!(figures[3] > figures[4], "{stdout}");
                splits.push(line[2]);
            }
            other => panic!("an unknown line `{other}`: {stdout}"),
        }
    }
    // Loop (b)'s arms with submitters_bound on, then caller-driven, right after its own.
    let want = [
        ("a", "depth2"),
        ("a", "depth1"),
        ("b", "depth2"),
        ("b", "depth1"),
        ("b", "depth2-bound"),
        ("b", "depth1-bound"),
        ("b", "depth2-caller"),
        ("b", "depth1-caller"),
        ("c", "depth2"),
        ("c", "depth1"),
    ];
    assert_eq!(arms, want);
    assert_eq!(latencies, ["a", "b", "c"]);
    assert_eq!(anchors, ["depth1", "queued", "handoff"]);
    assert_eq!(splits, ["anchor", "lane", "lane-bound", "lane-caller"]);
    // idle KERNEL_US RUNS LANE_MEDIAN LANE_P99 CALLS_MEDIAN CALLS_P99 LAUNCHES_MEDIAN
    // LAUNCHES_P99: the two kernel launches are part of the launch's calls.
    let idle = &lines[lines.len() - 4];
    assert_eq!(idle.len(), 9, "{stdout}");
    assert_eq!(idle[..3], ["idle", "2000", "8"], "{stdout}");
    let n = |i: usize| idle[i].parse::<u64>().expect("a figure");
    assert!(n(7) <= n(5), "the launches within the launch's calls: {stdout}");
    // idle-bound KERNEL_US RUNS LANE_MEDIAN LANE_P99: the idle lane with submitters_bound on.
    let bound = &lines[lines.len() - 3];
    assert_eq!(bound.len(), 5, "{stdout}");
    assert_eq!(bound[..3], ["idle-bound", "2000", "8"], "{stdout}");
    // idle-split KERNEL_US OFF BOUND ANCHOR: the medians up to the AICore launch's start, each
    // within its whole figure.
    let split = &lines[lines.len() - 2];
    assert_eq!(split.len(), 5, "{stdout}");
    assert_eq!(split[..2], ["idle-split", "2000"], "{stdout}");
    let anchor_before_core = split[4].parse::<u64>().expect("a figure");
    let within = anchor_before_core <= n(5);
    assert!(within, "the anchor's part of its calls: {stdout}");
    // idle-caller KERNEL_US RUNS LANE_MEDIAN LANE_P99 BEFORE_CORE_MEDIAN: the idle lane the
    // caller drives, its submit to the AICore launch's start within its submit to launch.
    let caller = &lines[lines.len() - 1];
    assert_eq!(caller.len(), 6, "{stdout}");
    assert_eq!(caller[..3], ["idle-caller", "2000", "8"], "{stdout}");
    let c = |i: usize| caller[i].parse::<u64>().expect("a figure");
    assert!(c(5) <= c(3), "before the AICore launch, within the whole: {stdout}");
    let _ = std::fs::remove_dir_all(exe.parent().expect("the temporary folder"));
}

/// The bench's `--lanes` mode, built against this test build and run for a few runs of one
/// repeat: sixteen lanes at once, healthy, then beside a hung device 14 and a poisoned device
/// 15: the fourteen's every run OK in both cases, the hung lane never OK and poisoned at
/// least once, the poisoned one poisoned once, and the cost line's thread counts (2 lane
/// threads and 2 fake stream threads a lane). Its figures are the benchmark's.
#[test]
fn the_c_abi_fake_bench_runs_sixteen_lanes_healthy_and_beside_a_hung_and_a_poisoned_device() {
    let (exe, stdout) = run_fake_bench(&["--lanes"], &["8", "1", "2000", "1"]);
    let lines = words(&stdout);
    assert_eq!(lines.len(), 3, "{stdout}");
    // lanes healthy REPEAT KERNEL_US RUNS OK MEDIAN P99: every run of the fourteen OK.
    assert_eq!(lines[0].len(), 8, "{stdout}");
    assert_eq!(lines[0][..6], ["lanes", "healthy", "1", "2000", "8", "112"]);
    // lanes-cost ...: 2 lane threads (lane thread, completion waiter) and 2 fake stream
    // threads a lane once they ran; the lanes' threads gone after destroy.
    assert_eq!(lines[1].len(), 11, "{stdout}");
    assert_eq!(lines[1][0], "lanes-cost");
    assert_eq!((lines[1][9], lines[1][10]), ("32", "32"), "{stdout}");
    assert_eq!(lines[1][4], lines[1][1], "threads after destroy as before");
    // lanes faulty ... HUNG_RUNS HUNG_OK HUNG_POISONS POISONED_RUNS POISONED_OK POISONED_POISONS
    let faulty = &lines[2];
    assert_eq!(faulty.len(), 14, "{stdout}");
    assert_eq!(faulty[..6], ["lanes", "faulty", "1", "2000", "8", "112"]);
    let n = |i: usize| faulty[i].parse::<u32>().expect("a count");
    assert_eq!(n(9), 0, "the hung lane never ends a run OK: {stdout}");
    assert!(n(10) >= 1, "the hung lane poisons: {stdout}");
    assert_eq!((n(11), n(13)), (8, 1), "the poisoned lane, once: {stdout}");
    let _ = std::fs::remove_dir_all(exe.parent().expect("the temporary folder"));
}

#[test]
fn the_header_compiles_as_c99_and_as_c11() {
    let out = temp_dir();
    let source = out.join("header.c");
    std::fs::write(
        &source,
        "#include \"run_lane.h\"\nint main(void) { RunLaneConfig c; RUN_LANE_INIT(c); return run_lane_config_default(&c) == RUN_LANE_STATUS_OK ? 0 : 1; }\n",
    )
    .expect("write the C file");
    for standard in ["-std=c99", "-std=c11"] {
        let compiler = build(&out, false).flag(standard).flag("-Wpedantic").get_compiler();
        let mut command = compiler.to_command();
        command.arg("-c").arg(&source).arg("-o").arg(out.join("header.o"));
        run_compiler(command, &format!("compiling run_lane.h as {standard}"));
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_example_build_catches_a_heap_overflow() {
    // The example passing under ASan means something only if ASan is in effect: the same
    // build of a one-byte overflow must be stopped (`volatile`, or -O1 elides the
    // malloc/free pair and the store with it).
    let out = temp_dir();
    let source = out.join("overflow.cpp");
    std::fs::write(
        &source,
        "#include <cstdlib>\nint main(int argc, char **) { volatile char *p = static_cast<char *>(std::malloc(4)); p[argc + 3] = 1; std::free(const_cast<char *>(p)); return 0; }\n",
    )
    .expect("write the C++ file");
    let exe = out.join("overflow");
    let mut command = asan_cpp(&out).get_compiler().to_command();
    command.arg(&source).arg("-o").arg(&exe);
    run_compiler(command, "compiling the overflow");
    let output = Command::new(&exe).output().expect("the overflow runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("heap-buffer-overflow"), "{stderr}");
    let _ = std::fs::remove_dir_all(&out);
}
