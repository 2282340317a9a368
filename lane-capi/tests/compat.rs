//! A client of ABI 13 keeps working: `tests/compat/v13_client.c`, compiled against
//! `tests/compat/run_lane_v13.h` (the header as ABI 13, the first release with size prefixes,
//! shipped it: a copy, never regenerated), linked with the library this test run built, must
//! pass. A later change that breaks an ABI 13 client (a field moved, a size the library no
//! longer accepts, a renumbered enum) fails here; growing a struct at its end does not.

mod cpp;

use std::path::Path;
use std::process::Command;

use cpp::{build, profile_dir, run_compiler, temp_dir};
use run_lane::sized::Sized13;
use run_lane::{
    RunLaneCloseReport, RunLaneConfig, RunLaneDeviceOps, RunLaneNoticeMonitorReport,
    RunLaneOutcome, RunLaneRunStatus, RunLaneSubmit,
};

/// The static library this test run built (deps/ first, as the C++ tests take it).
fn staticlib() -> std::path::PathBuf {
    let candidates =
        [profile_dir().join("deps/librun_lane.a"), profile_dir().join("librun_lane.a")];
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("the static library is missing; looked at {candidates:?}"))
        .clone()
}

#[test]
fn a_client_built_against_the_abi_13_header_runs_with_this_library() {
    let compat = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat");
    let out = temp_dir();
    let exe = out.join("v13_client");
    let mut command =
        build(&out, false).flag("-std=c99").include(&compat).get_compiler().to_command();
    command
        .arg(compat.join("v13_client.c"))
        .arg(staticlib())
        .args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"])
        .arg("-o")
        .arg(&exe);
    run_compiler(command, "compiling the ABI 13 client");
    let output = Command::new(&exe).output().expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("compat ok"),
        "the ABI 13 client failed with this library: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The sizes the ABI 13 header declares are the smallest the library accepts.
    let size = |name: &str| -> usize {
        let key = format!(" {name}=");
        let at = stdout.find(&key).unwrap_or_else(|| panic!("{name} in {stdout}")) + key.len();
        stdout[at..]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}'s size in {stdout}"))
    };
    assert_eq!(size("RunLaneConfig"), RunLaneConfig::V13);
    assert_eq!(size("RunLaneSubmit"), RunLaneSubmit::V13);
    assert_eq!(size("RunLaneDeviceOps"), RunLaneDeviceOps::V13);
    assert_eq!(size("RunLaneOutcome"), RunLaneOutcome::V13);
    assert_eq!(size("RunLaneCloseReport"), RunLaneCloseReport::V13);
    assert_eq!(size("RunLaneRunStatus"), RunLaneRunStatus::V13);
    assert_eq!(size("RunLaneNoticeMonitorReport"), RunLaneNoticeMonitorReport::V13);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_abi_13_header_copy_is_still_abi_13() {
    // The copy is frozen: it says 13 as long as the library's major is 13; a new major
    // replaces this test's header (and its client) with the new major's.
    let copy = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/run_lane_v13.h"),
    )
    .expect("the ABI 13 header copy");
    assert!(copy.contains("#define RUN_LANE_ABI_VERSION 13"));
    assert_eq!(run_lane::RUN_LANE_ABI_VERSION, 13);
}
