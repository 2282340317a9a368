//! `run_lane_acl_library` (ABI 13) names the libascendcl a lane runs on, with or without
//! `acl_prefer_loaded`; a lane on the simulator has none. (That the preference picks a copy
//! already loaded, and maps no second one, is backend-acl's `already_loaded` test.)

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use run_lane::*;

/// The lane's libascendcl, or the refusal's status.
fn library_of(lane: *mut RunLane, capacity: usize) -> Result<String, RunLaneStatus> {
    let mut buffer = vec![0 as core::ffi::c_char; capacity.max(1)];
    // SAFETY: `capacity` writable bytes (at least one).
    let status = unsafe { run_lane_acl_library(lane, buffer.as_mut_ptr(), capacity) };
    if status != RunLaneStatus::Ok {
        return Err(status);
    }
    Ok(text(&buffer))
}

#[test]
fn a_lane_names_the_libascendcl_it_runs_on_with_and_without_preferring_a_loaded_copy() {
    let control = control();
    let _fake = control.session().expect("reset the fake");
    let _serial = serial();
    let kernels = Kernels::healthy(Duration::from_micros(100));
    let fake =
        Path::new(fake_path().to_str().expect("UTF-8")).canonicalize().expect("the fake's path");
    for prefer_loaded in [false, true] {
        let mut config = fake_config(Via::Acl, 0, &kernels, 5_000);
        config.acl_prefer_loaded = prefer_loaded;
        let lane = create(&config);
        let named = library_of(lane, 4096).unwrap_or_else(|s| panic!("{s:?}: {}", last_error()));
        assert_eq!(
            Path::new(&named).canonicalize().expect("the named path"),
            fake,
            "prefer_loaded {prefer_loaded}: the fake (the copy loaded, or the path asked for)"
        );
        assert_eq!(library_of(lane, 4), Err(RunLaneStatus::Refused));
        assert!(last_error().contains("bytes"), "{}", last_error());
        destroy(lane);
    }
}

#[test]
fn a_lane_on_the_simulator_names_no_libascendcl() {
    let lane = create(&sim_config());
    assert_eq!(library_of(lane, 4096), Err(RunLaneStatus::Refused));
    let message = last_error();
    assert!(message.contains("not on the ACL backend"), "{message}");
    destroy(lane);
}
