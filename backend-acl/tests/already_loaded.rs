//! The lane can use the libascendcl the process already loaded (`AclConfig::prefer_loaded`):
//! the fake is loaded first, under one path; a lane asked for another copy's path, with the
//! preference, opens the loaded one, says so, and maps no second copy. Its own test binary,
//! so no other test's copy of the fake is loaded in this process.

mod common;

use backend_acl::{AclConfig, AclDevice, Library};
use run_lane_fake_ascendcl::Control;

#[test]
fn a_lane_preferring_the_loaded_libascendcl_opens_that_copy_and_no_second_one() {
    let first = common::copy_of_the_fake("first");
    let second = common::copy_of_the_fake("second");
    // The runtime loaded its libascendcl (dlopen, through the fake's control surface).
    let control = Control::open(&first).unwrap_or_else(|e| panic!("{e}"));
    let _session = control.session().expect("reset the fake");
    assert_eq!(
        ascend_cl_sys::loaded_library().map(|p| p.canonicalize().expect("canonical")),
        Some(first.clone()),
        "the loaded copy is found"
    );
    assert!(common::mapped(&first) && !common::mapped(&second));
    let (device, _) = AclDevice::open(AclConfig {
        library: Library::Path(second.clone()),
        prefer_loaded: true,
        ..AclConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        device.library_path().canonicalize().expect("canonical"),
        first,
        "the device reports the copy already loaded"
    );
    assert!(!common::mapped(&second), "no second copy was opened");
    drop(device);
    let _ = std::fs::remove_file(&second);
}
