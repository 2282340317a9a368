//! `cargo xtask device-check` run as a command: against the fake libascendcl it checks and
//! passes; against no library it says so in one line and exits non-zero.

use std::process::Command;

fn xtask(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().expect("xtask runs")
}

#[test]
fn device_check_against_the_fake_passes_and_reports_each_check() {
    let fake = run_lane_fake_ascendcl::cdylib_path().unwrap_or_else(|e| panic!("{e}"));
    let out = xtask(&[
        "device-check",
        "--lib",
        fake.to_str().unwrap(),
        "--device",
        "0",
        "--overlap-runs",
        "20",
        "--overlap-mib",
        "4",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for step in [
        "probe",
        "streams",
        "events",
        "copies",
        "overlap",
        "force reset then probe",
        "devlib refusal",
    ] {
        assert!(stdout.contains(&format!("ok    {step}: ")), "{step}: {stdout}");
    }
    assert!(stdout.contains("skip  kernels: "), "{stdout}");
    // Issue 45 item 7: both arms of the overlap step, in one process, each summarised from
    // its runs' event timestamps.
    for depth in [1, 2] {
        assert!(
            stdout.contains(&format!("  depth {depth}: device gap median ")),
            "depth {depth}: {stdout}"
        );
    }
    assert!(stdout.contains("over 19 pairs; overlap proven "), "{stdout}");
}

#[test]
fn device_check_without_a_library_is_one_line_and_a_failure() {
    let out = xtask(&["device-check", "--lib", "/nonexistent/lib64/libascendcl.so"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no CANN install found"), "{stderr}");
}
