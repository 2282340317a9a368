//! The runtime and ACL code tables.

use std::collections::BTreeSet;

use status_latch::{AclCode, RUNTIME_STATUS_BAND, ReturnCode, RuntimeCode};

#[test]
fn runtime_code_table_has_exactly_the_spec_codes() {
    // SPEC §5.2, spelled out here so a table edit that drops or renumbers a code fails.
    let spec = [
        (1, "SCOPE_DEADLOCK"),
        (2, "HEAP_RING_DEADLOCK"),
        (3, "FLOW_CONTROL_DEADLOCK"),
        (4, "DEP_POOL_OVERFLOW"),
        (5, "INVALID_ARGS"),
        (6, "DEPENDENCY_OVERFLOW"),
        (7, "REQUIRE_SYNC_START_INVALID"),
        (8, "TENSOR_WAIT_TIMEOUT"),
        (9, "EXPLICIT_ORCH_FATAL"),
        (10, "SCOPE_TASKS_OVERFLOW"),
        (11, "TENSORMAP_OVERFLOW"),
        (100, "SCHEDULER_TIMEOUT"),
        (101, "ASYNC_COMPLETION_INVALID"),
        (102, "ASYNC_WAIT_OVERFLOW"),
        (103, "ASYNC_REGISTRATION_FAILED"),
        (104, "READY_QUEUE_OVERFLOW"),
    ];
    let table: Vec<(i32, &str)> = RuntimeCode::ALL.iter().map(|c| (c.value(), c.name())).collect();
    assert_eq!(table, spec);
}

#[test]
fn every_known_runtime_code_round_trips_through_its_value() {
    for code in RuntimeCode::ALL {
        assert_eq!(RuntimeCode::from_value(code.value()), Some(code));
    }
}

#[test]
fn every_named_acl_code_round_trips_through_its_raw_value() {
    for code in AclCode::ALL {
        assert_eq!(AclCode::from_raw(code.raw()), Some(code));
        assert_eq!(AclCode::check(code.raw()), Err(code));
    }
}

#[test]
fn zero_is_the_clear_latch_and_acl_success_not_a_code() {
    assert_eq!(RuntimeCode::from_value(0), None);
    assert_eq!(AclCode::from_raw(0), None);
    assert_eq!(AclCode::check(0), Ok(()));
}

#[test]
fn unknown_values_are_kept_not_rejected() {
    for raw in [-1, 12, 99, 105, 507_005, i32::MIN, i32::MAX] {
        let code = RuntimeCode::from_value(raw).unwrap();
        assert_eq!(code, RuntimeCode::Unknown(raw));
        assert_eq!(code.value(), raw);
        assert_eq!(code.name(), "UNKNOWN");
    }
    for raw in [-1, 1, 107_999, 507_002, 507_006, i32::MIN, i32::MAX] {
        let code = AclCode::from_raw(raw).unwrap();
        assert_eq!(code, AclCode::Unknown(raw));
        assert_eq!(code.raw(), raw);
        assert_eq!(code.name(), "UNKNOWN");
    }
}

#[test]
fn every_code_has_a_unique_name_and_a_one_line_meaning_and_hint() {
    let mut names = BTreeSet::new();
    let runtime = RuntimeCode::ALL.map(|c| c.info());
    let acl = AclCode::ALL.map(|c| c.info());
    for info in runtime.iter().chain(&acl) {
        assert!(names.insert(info.name), "duplicate name {}", info.name);
        for text in [info.meaning, info.hint] {
            assert!(!text.is_empty(), "{} lacks text", info.name);
            assert!(!text.contains('\n') && !text.contains("  "), "{}: {text:?}", info.name);
        }
        // The failure line prints the meaning in parentheses; nested ones would blur it.
        assert!(!info.meaning.contains(['(', ')']), "{}: {}", info.name, info.meaning);
    }
}

#[test]
fn every_runtime_hint_says_to_run_again() {
    for code in RuntimeCode::ALL {
        assert!(code.hint().contains("run again"), "{}: {}", code.name(), code.hint());
    }
}

#[test]
fn device_fault_codes_are_507xxx_except_507004_plus_the_memory_and_device_loss_codes() {
    let faults: Vec<i32> =
        AclCode::ALL.iter().filter(|c| c.is_device_fault()).map(|c| c.raw()).collect();
    for code in AclCode::ALL {
        let in_range = (507_000..=507_999).contains(&code.raw()) && code.raw() != 507_004;
        let named_extra = matches!(code.raw(), 107_022 | 207_001 | 207_004 | 207_018);
        assert_eq!(code.is_device_fault(), in_range || named_extra, "{code}");
    }
    assert!(faults.contains(&207_001) && faults.contains(&507_899) && faults.contains(&507_047));
    assert!(!AclCode::RtStreamNotComplete.is_device_fault());
    assert!(!AclCode::RtParamInvalid.is_device_fault());
    assert!(!AclCode::InvalidParam.is_device_fault());
    // Unnamed values follow the range rule.
    assert!(AclCode::from_raw(507_123).unwrap().is_device_fault());
    assert!(!AclCode::from_raw(107_123).unwrap().is_device_fault());
    assert!(!AclCode::from_raw(207_123).unwrap().is_device_fault());
}

#[test]
fn display_shows_the_value_and_the_name() {
    assert_eq!(RuntimeCode::InvalidArgs.to_string(), "5 INVALID_ARGS");
    assert_eq!(RuntimeCode::Unknown(-3).to_string(), "-3 UNKNOWN");
    assert_eq!(AclCode::RtEventSyncTimeout.to_string(), "507047 ACL_ERROR_RT_EVENT_SYNC_TIMEOUT");
}

#[test]
fn a_returned_value_in_the_runtime_band_is_that_latch_code_and_any_other_an_acl_code() {
    assert_eq!(ReturnCode::from_raw(0), None, "0 is success");
    assert_eq!(ReturnCode::check(0), Ok(()));
    // Every known latch code, returned negated, is that code, never an ACL value.
    for code in RuntimeCode::ALL {
        let raw = -code.value();
        assert!(RUNTIME_STATUS_BAND.contains(&raw), "{code:?}");
        assert_eq!(ReturnCode::from_raw(raw), Some(ReturnCode::Runtime(code)));
        assert_eq!(ReturnCode::Runtime(code).raw(), raw);
        assert_eq!(ReturnCode::Runtime(code).name(), code.name());
    }
    assert_eq!(ReturnCode::check(-4), Err(ReturnCode::Runtime(RuntimeCode::DepPoolOverflow)));
    // A value of the band the table does not know is an unknown runtime code, both ends
    // included.
    for raw in [-12, -999, -105] {
        assert_eq!(
            ReturnCode::from_raw(raw),
            Some(ReturnCode::Runtime(RuntimeCode::Unknown(-raw))),
            "{raw}"
        );
    }
    // Outside the band: ACL codes, named or not (an embedding's sentinels lie here).
    for raw in [-1000, -1002, -1101, 12, 107_000, 507_015] {
        let code = ReturnCode::from_raw(raw).expect("not success");
        assert_eq!(code, ReturnCode::Acl(AclCode::from_raw(raw).unwrap()), "{raw}");
        assert_eq!(code.raw(), raw);
    }
    assert_eq!(ReturnCode::from(AclCode::RtParamInvalid), ReturnCode::Acl(AclCode::RtParamInvalid));
}

#[test]
fn a_returned_code_reads_as_the_latched_code_it_negates_or_as_an_acl_code() {
    let latched = ReturnCode::from_raw(-3).expect("a code");
    assert_eq!(latched.to_string(), "runtime_status=-3 FLOW_CONTROL_DEADLOCK");
    let acl = ReturnCode::from_raw(107_000).expect("a code");
    assert_eq!(acl.to_string(), format!("ACL {}", AclCode::from_raw(107_000).unwrap()));
    assert!(acl.to_string().contains("107000"), "{acl}");
}
