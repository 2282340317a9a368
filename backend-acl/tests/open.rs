//! Opening a device against the fake libascendcl: the probe picks the profile from the SoC,
//! refuses what it cannot run on with a typed error and a hint, and sets the op timeout.

mod common;

use std::path::PathBuf;

use ascend_cl_sys::{AttemptFailure, types::ACL_ERROR_RT_PARAM_INVALID};
use backend_acl::{AclConfig, AclDevice, AclError, Library};
use lane_core::{Profile, ProfileSpec};

fn open_err(config: AclConfig) -> AclError {
    match AclDevice::open(config) {
        Ok((device, _)) => panic!("opened {device:?}"),
        Err(e) => e,
    }
}

#[test]
fn each_known_soc_opens_with_its_profile() {
    let fake = common::fake();
    let (device, profile) = fake.open();
    assert_eq!(profile, Profile::a2a3(), "the fake's default SoC");
    assert_eq!(device.soc_name(), Some("Ascend910B1"));
    assert_eq!(device.device_id(), 0);
    drop(device);
    for (soc, profile) in [("Ascend910_9392", Profile::a2a3()), ("Ascend950PR_9599", Profile::a5())]
    {
        fake.control.set_soc_name(Some(soc)).unwrap();
        assert_eq!(fake.open().1, profile, "{soc}");
    }
}

#[test]
fn an_unknown_soc_is_refused_with_its_name_and_a_hint() {
    let fake = common::fake();
    fake.control.set_soc_name(Some("Ascend310P3")).unwrap();
    let error = open_err(fake.config());
    assert!(
        matches!(&error, AclError::UnknownSoc { name: Some(n) } if n == "Ascend310P3"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("`Ascend310P3`") && text.contains("hint: pass a profile explicitly"),
        "{text}"
    );
}

#[test]
fn a_null_soc_name_is_refused_as_unknown() {
    let fake = common::fake();
    fake.control.set_soc_name(None).unwrap();
    let error = open_err(fake.config());
    assert!(matches!(error, AclError::UnknownSoc { name: None }), "{error:?}");
    assert!(error.to_string().contains("returned NULL"));
}

#[test]
fn an_explicit_profile_opens_an_unknown_soc_and_wins_over_the_probe() {
    let fake = common::fake();
    fake.control.set_soc_name(Some("Ascend310P3")).unwrap();
    let config = fake.config_with(Profile::a5());
    assert_eq!(AclDevice::open(config).unwrap().1, Profile::a5());
    // On a known SoC too: the caller's profile is the one returned.
    fake.control.set_soc_name(Some("Ascend910B2")).unwrap();
    let config = fake.config_with(Profile::a5());
    assert_eq!(AclDevice::open(config).unwrap().1, Profile::a5());
}

#[test]
fn zero_devices_is_a_typed_error_with_a_hint() {
    let fake = common::fake();
    fake.control.set_device_count(0).unwrap();
    let error = open_err(fake.config());
    assert!(matches!(error, AclError::NoDevice), "{error:?}");
    assert!(error.to_string().contains("hint: check `npu-smi info`"));
}

#[test]
fn a_device_id_out_of_range_is_a_typed_error_naming_the_count() {
    let fake = common::fake();
    fake.control.set_device_count(2).unwrap();
    for device_id in [2, 7, -1] {
        let error = open_err(fake.config_on(device_id));
        assert!(
            matches!(error, AclError::BadDeviceId { device_id: d, count: 2 } if d == device_id),
            "{error:?}"
        );
        assert!(error.to_string().contains("2 devices visible (ids 0 to 1)"), "{error}");
        assert!(error.to_string().contains("hint: pass an id from 0 to 1"));
    }
    let (device, _) = AclDevice::open(fake.config_on(1)).unwrap();
    assert_eq!(device.device_id(), 1);
}

#[test]
fn a_bad_device_id_names_id_0_with_one_device_and_ids_0_to_15_with_the_fakes_sixteen() {
    let fake = common::fake();
    let sixteen = open_err(fake.config_on(16));
    assert!(matches!(sixteen, AclError::BadDeviceId { count: 16, .. }), "{sixteen:?}");
    assert!(sixteen.to_string().contains("16 devices visible (ids 0 to 15)"), "{sixteen}");
    fake.control.set_device_count(1).unwrap();
    let one = open_err(fake.config_on(1));
    let text = one.to_string();
    assert!(text.contains("1 device visible (id 0)"), "{text}");
    assert!(text.contains("hint: pass id 0;"), "{text}");
    assert!(!text.contains("0.."), "{text}");
}

#[test]
fn open_sets_the_op_timeout_from_the_profile_in_microseconds() {
    let fake = common::fake();
    let (device, profile) = fake.open();
    assert_eq!(device.op_timeout_us(), profile.device_op_timeout_ns() / 1_000);
    let spec = ProfileSpec {
        completion_timeout_ns: 2_000_000_000,
        device_op_timeout_ns: 1_500_000_500,
        ..Profile::a2a3().spec()
    };
    let config = fake.config_with(Profile::custom(spec).unwrap());
    // L-21: the op timeout is the process's; another value is refused while a device uses
    // the first, naming both.
    let refused = AclDevice::open(config.clone()).unwrap_err();
    assert!(
        matches!(
            refused,
            backend_acl::AclError::OpTimeoutInForce {
                asked_us: 1_500_001,
                in_force_us: 45_000_000
            }
        ),
        "{refused}"
    );
    assert!(refused.to_string().contains("process-wide"), "{refused}");
    // Once the first device is gone the next may set its own: rounded up, never shorter.
    drop(device);
    assert_eq!(AclDevice::open(config).unwrap().0.op_timeout_us(), 1_500_001);
    assert_eq!(backend_acl::op_timeout_in_force_us(), None, "given back on drop");
}

#[test]
fn two_devices_with_the_same_op_timeout_share_it_and_the_last_one_gives_it_back() {
    let fake = common::fake();
    let first = AclDevice::open(fake.config()).unwrap().0;
    let second = AclDevice::open(fake.config_on(1)).unwrap().0;
    assert_eq!(backend_acl::op_timeout_in_force_us(), Some(45_000_000));
    drop(first);
    assert_eq!(backend_acl::op_timeout_in_force_us(), Some(45_000_000));
    drop(second);
    assert_eq!(backend_acl::op_timeout_in_force_us(), None);
}

#[test]
fn a_failed_op_timeout_call_is_a_typed_error_with_the_code_and_message() {
    let fake = common::fake();
    fake.control.fail_call("aclrtSetOpExecuteTimeOutV2", ACL_ERROR_RT_PARAM_INVALID, 0, 1).unwrap();
    let error = open_err(fake.config());
    let AclError::SetOpTimeout(call) = &error else { panic!("{error:?}") };
    assert_eq!(call.code, ACL_ERROR_RT_PARAM_INVALID);
    assert!(call.message.as_deref().is_some_and(|m| m.contains("aclrtSetOpExecuteTimeOutV2")));
}

#[test]
fn a_failed_device_count_or_set_device_is_a_typed_error() {
    let fake = common::fake();
    fake.control.fail_call("aclrtGetDeviceCount", 507_899, 0, 1).unwrap();
    assert!(matches!(open_err(fake.config()), AclError::DeviceCount(c) if c.code == 507_899));
    fake.control.fail_call("aclrtSetDevice", 507_033, 0, 1).unwrap();
    let error = open_err(fake.config());
    assert!(
        matches!(&error, AclError::SetDevice { device_id: 0, source } if source.code == 507_033),
        "{error:?}"
    );
}

#[test]
fn init_is_called_only_when_asked_and_a_repeat_counts_as_success() {
    let fake = common::fake();
    let config = AclConfig { init: true, ..fake.config() };
    let (first, _) = AclDevice::open(config.clone()).unwrap();
    // The fake is initialised now: a second open sees 100002 and still opens.
    let (second, _) = AclDevice::open(config).unwrap();
    second.finalize().unwrap();
    // Only the open that initialised finalises.
    first.finalize().unwrap();
    fake.control.fail_call("aclInit", 500_000, 0, 1).unwrap();
    let error = open_err(AclConfig { init: true, ..fake.config() });
    assert!(matches!(&error, AclError::Init(c) if c.code == 500_000), "{error:?}");
    // Without `init`, aclInit is never called: the injected failure is still pending.
    fake.open();
    fake.control.clear_faults().unwrap();
}

#[test]
fn an_open_that_fails_after_its_own_init_finalises() {
    let fake = common::fake();
    fake.control.set_soc_name(Some("Ascend310P3")).unwrap();
    let config = AclConfig { init: true, ..fake.config() };
    assert!(matches!(open_err(config.clone()), AclError::UnknownSoc { .. }));
    // Finalised: the next init is a first init again, and this open is the one to finalise.
    fake.control.set_soc_name(Some("Ascend910B1")).unwrap();
    fake.control.fail_call("aclFinalize", 100_037, 0, 1).unwrap();
    let (device, _) = AclDevice::open(config).unwrap();
    assert!(device.finalize().is_err(), "this open did the init, so it finalises");
}

#[test]
fn a_missing_library_is_a_typed_error_listing_the_path() {
    let missing = PathBuf::from("/nonexistent/lib64/libascendcl.so");
    let error =
        open_err(AclConfig { library: Library::Path(missing.clone()), ..AclConfig::default() });
    let AclError::Load(load) = &error else { panic!("{error:?}") };
    assert_eq!(load.attempts().len(), 1);
    assert_eq!(load.attempts()[0].candidate.path, missing);
    assert_eq!(load.attempts()[0].failure, AttemptFailure::NotFound);
    assert!(error.to_string().contains("hint:"));
}

#[test]
fn a_stub_library_under_devlib_is_refused_before_it_is_opened() {
    let fake = common::fake();
    let dir = std::env::temp_dir().join(format!("backend-acl-devlib-{}", std::process::id()));
    let stub = dir.join("devlib/linux/x86_64/libascendcl.so");
    std::fs::create_dir_all(stub.parent().unwrap()).unwrap();
    std::fs::copy(&fake.path, &stub).unwrap();
    let error =
        open_err(AclConfig { library: Library::Path(stub.clone()), ..AclConfig::default() });
    let _ = std::fs::remove_dir_all(&dir);
    let AclError::Load(load) = &error else { panic!("{error:?}") };
    assert!(matches!(load.attempts()[0].failure, AttemptFailure::StubLibrary { .. }));
    assert!(error.to_string().contains("devlib"));
}

#[test]
fn a_library_missing_a_symbol_is_a_typed_error_naming_it() {
    // libc is a real shared library without a single ACL symbol.
    let libc = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let Some(libc) = libc else {
        eprintln!("no libc.so.6 at a known path; nothing to check");
        return;
    };
    let error = open_err(AclConfig { library: Library::Path(libc), ..AclConfig::default() });
    let AclError::Load(load) = &error else { panic!("{error:?}") };
    assert!(
        matches!(
            load.attempts()[0].failure,
            AttemptFailure::MissingSymbol { symbol: "aclInit", .. }
        ),
        "{error}"
    );
}

#[test]
fn an_op_timeout_that_rounds_up_to_the_host_wait_is_refused() {
    let fake = common::fake();
    // Valid as a profile (999_999_500 < 1_000_000_000 ns), but the device counts in µs, and
    // rounded up it equals the host wait: a hung kernel would race the host's deadline.
    let spec = ProfileSpec {
        completion_timeout_ns: 1_000_000_000,
        device_op_timeout_ns: 999_999_500,
        ..Profile::a2a3().spec()
    };
    let error = open_err(fake.config_with(Profile::custom(spec).unwrap()));
    assert!(
        matches!(error, AclError::OpTimeout { device_ns: 1_000_000_000, host_ns: 1_000_000_000 }),
        "{error:?}"
    );
    assert!(error.to_string().contains("hint: lower Profile::device_op_timeout_ns"));
}
