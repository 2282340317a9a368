//! The classification policy, row by row (SPEC §5.3, §5.4).

use status_latch::{
    AclCode, Class, Failure, Latch, LatchSource, LaunchProgress, ReturnCode, Rule, RuntimeCode,
    Stage, classify, known_failures,
};

fn latched(code: RuntimeCode) -> Failure {
    Failure::Latched(Latch { source: LatchSource::Orch, code })
}

fn acl(stage: Stage, code: AclCode) -> Failure {
    Failure::Acl { stage, code }
}

fn launch(progress: LaunchProgress, code: AclCode) -> Failure {
    Failure::Launch { progress, code }
}

/// Asserts the class and the rule, and that the reason is the rule's.
fn assert_rule(failure: Failure, class: Class, rule: Rule) {
    let c = classify(&failure);
    assert_eq!((c.class, c.rule), (class, rule), "{failure:?}");
    assert_eq!(c.reason, rule.reason());
}

/// Named ACL codes that are not device faults (parameter and caller errors, 507004).
fn non_fault_codes() -> impl Iterator<Item = AclCode> {
    AclCode::ALL.into_iter().filter(|c| !c.is_device_fault())
}

#[test]
fn orchestration_and_capacity_latches_fail_only_the_run() {
    use RuntimeCode::*;
    let run_only = [
        ScopeDeadlock,
        HeapRingDeadlock,
        FlowControlDeadlock,
        DepPoolOverflow,
        InvalidArgs,
        DependencyOverflow,
        RequireSyncStartInvalid,
        ExplicitOrchFatal,
        TensormapOverflow,
        AsyncCompletionInvalid,
        AsyncWaitOverflow,
        ReadyQueueOverflow,
    ];
    for code in run_only {
        assert_rule(latched(code), Class::RunOnly, Rule::LatchedChangeAndRerun);
    }
}

#[test]
fn scheduler_and_tensor_wait_timeouts_poison() {
    for code in [RuntimeCode::SchedulerTimeout, RuntimeCode::TensorWaitTimeout] {
        assert_rule(latched(code), Class::Poison, Rule::LatchedTimeout);
    }
}

#[test]
fn runtime_internal_latches_poison() {
    for code in [RuntimeCode::ScopeTasksOverflow, RuntimeCode::AsyncRegistrationFailed] {
        assert_rule(latched(code), Class::Poison, Rule::LatchedRuntimeInternal);
    }
}

#[test]
fn unknown_latched_codes_poison() {
    for raw in [-1, 12, 99, 105, i32::MIN] {
        let code = RuntimeCode::from_value(raw).unwrap();
        assert_rule(latched(code), Class::Poison, Rule::LatchedUnknown);
    }
}

#[test]
fn the_latch_source_does_not_change_the_class() {
    for code in RuntimeCode::ALL.into_iter().chain([RuntimeCode::Unknown(7777)]) {
        let orch = classify(&latched(code));
        let sched = classify(&Failure::Latched(Latch { source: LatchSource::Sched, code }));
        assert_eq!(orch, sched, "{code}");
    }
}

#[test]
fn device_fault_codes_poison_at_every_run_and_recovery_stage_and_launch_progress() {
    let faults =
        AclCode::ALL.into_iter().chain([AclCode::Unknown(507_777)]).filter(|c| c.is_device_fault());
    for code in faults {
        for stage in Stage::ALL.into_iter().filter(|s| *s != Stage::Upload) {
            assert_rule(acl(stage, code), Class::Poison, Rule::DeviceFault);
        }
        for progress in LaunchProgress::ALL {
            assert_rule(launch(progress, code), Class::Poison, Rule::DeviceFault);
        }
    }
}

#[test]
fn memory_exhaustion_at_launch_poisons_but_a_parameter_error_fails_only_the_run() {
    let oom = launch(LaunchProgress::NotStarted, AclCode::RtMemoryAllocation);
    assert_rule(oom, Class::Poison, Rule::DeviceFault);
    for code in [AclCode::InvalidParam, AclCode::RtParamInvalid, AclCode::Unknown(107_555)] {
        assert_rule(
            launch(LaunchProgress::NotStarted, code),
            Class::RunOnly,
            Rule::LaunchNotStarted,
        );
    }
}

#[test]
fn a_partial_launch_poisons_whatever_the_code() {
    for code in non_fault_codes() {
        assert_rule(launch(LaunchProgress::Partial, code), Class::Poison, Rule::LaunchPartial);
    }
}

#[test]
fn aicore_and_aicpu_launch_stages_classify_like_not_started_and_partial() {
    for code in AclCode::ALL.into_iter().chain([AclCode::Unknown(1), AclCode::Unknown(507_001)]) {
        for progress in LaunchProgress::ALL {
            assert_eq!(
                classify(&acl(progress.stage(), code)),
                classify(&launch(progress, code)),
                "{code} at {}",
                progress.stage()
            );
        }
    }
}

#[test]
fn stream_create_or_destroy_failure_on_the_launch_path_fails_only_the_run() {
    for stage in [Stage::StreamCreate, Stage::StreamDestroy] {
        for code in non_fault_codes() {
            assert_rule(acl(stage, code), Class::RunOnly, Rule::LaunchPathStream);
        }
    }
}

#[test]
fn an_event_record_failure_poisons() {
    for code in non_fault_codes() {
        assert_rule(acl(Stage::EventRecord, code), Class::Poison, Rule::EventRecordFailed);
    }
}

#[test]
fn an_event_wait_without_proven_completion_poisons_even_for_stream_not_complete() {
    for code in non_fault_codes() {
        assert_rule(acl(Stage::EventWait, code), Class::Poison, Rule::EventWaitUnproven);
    }
    assert_rule(
        acl(Stage::EventWait, AclCode::RtStreamNotComplete),
        Class::Poison,
        Rule::EventWaitUnproven,
    );
    // The wait timeout itself is a device-fault code, so it poisons through that row.
    assert_rule(
        acl(Stage::EventWait, AclCode::RtEventSyncTimeout),
        Class::Poison,
        Rule::DeviceFault,
    );
}

#[test]
fn stream_not_complete_outside_an_event_wait_follows_the_stage_rule() {
    let code = AclCode::RtStreamNotComplete;
    assert_rule(acl(Stage::Prepare, code), Class::RunOnly, Rule::PrepareFailed);
    assert_rule(acl(Stage::CopyBack, code), Class::RunOnly, Rule::CopyBackFailed);
    assert_rule(acl(Stage::StreamDestroy, code), Class::RunOnly, Rule::LaunchPathStream);
    assert_rule(acl(Stage::StatusRead, code), Class::Poison, Rule::StatusReadFailed);
}

#[test]
fn a_failed_status_read_poisons() {
    for code in non_fault_codes() {
        assert_rule(acl(Stage::StatusRead, code), Class::Poison, Rule::StatusReadFailed);
    }
}

#[test]
fn copy_back_fails_only_the_run_with_a_host_code_and_poisons_with_a_device_code() {
    for code in non_fault_codes() {
        assert_rule(acl(Stage::CopyBack, code), Class::RunOnly, Rule::CopyBackFailed);
    }
    assert_rule(acl(Stage::CopyBack, AclCode::RtAicoreException), Class::Poison, Rule::DeviceFault);
}

#[test]
fn a_failed_prepare_fails_only_the_run() {
    for code in non_fault_codes() {
        assert_rule(acl(Stage::Prepare, code), Class::RunOnly, Rule::PrepareFailed);
    }
}

#[test]
fn any_failure_during_drain_reset_or_probe_poisons() {
    for stage in [Stage::DeviceDrain, Stage::Reset, Stage::Probe] {
        for code in non_fault_codes() {
            assert_rule(acl(stage, code), Class::Poison, Rule::RecoveryFailed);
        }
    }
}

#[test]
fn an_upload_failure_fails_only_the_publication_even_with_a_device_code() {
    // A publication is a drain barrier with no run in flight: there is no run to name as a
    // poison origin, and the next run's own calls surface a faulted device.
    for code in AclCode::ALL.into_iter().chain([AclCode::Unknown(507_777), AclCode::Unknown(1)]) {
        assert_rule(acl(Stage::Upload, code), Class::RunOnly, Rule::UploadFailed);
    }
}

#[test]
fn a_host_wait_timeout_poisons() {
    assert_rule(Failure::HostWaitTimeout, Class::Poison, Rule::HostWaitTimeout);
}

#[test]
fn a_copy_back_validation_failure_fails_only_the_run() {
    assert_rule(Failure::CopyBackValidation, Class::RunOnly, Rule::CopyBackValidation);
}

#[test]
fn every_rule_is_reached_by_some_known_failure() {
    let failures = known_failures();
    for rule in Rule::ALL {
        assert!(
            failures.iter().any(|f| classify(f).rule == rule),
            "no known failure reaches {rule}"
        );
    }
}

#[test]
fn rule_names_are_unique_and_every_rule_has_a_reason() {
    let mut names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Rule::ALL.len());
    for rule in Rule::ALL {
        assert!(!rule.reason().is_empty(), "{rule}");
    }
}

#[test]
fn a_failure_names_its_stage_code_name_and_hint() {
    let latched = Failure::Latched(status_latch::Latch {
        source: status_latch::LatchSource::Sched,
        code: status_latch::RuntimeCode::InvalidArgs,
    });
    assert_eq!(latched.stage(), None);
    assert_eq!(latched.code(), Some(5));
    assert_eq!(latched.name(), "INVALID_ARGS");
    assert_eq!(latched.hint(), status_latch::RuntimeCode::InvalidArgs.hint());

    let wait = acl(Stage::EventWait, AclCode::from_raw(507_047).unwrap());
    assert_eq!(wait.stage(), Some(Stage::EventWait));
    assert_eq!(wait.code(), Some(507_047));
    assert_eq!(wait.name(), AclCode::from_raw(507_047).unwrap().name());

    let partial = launch(LaunchProgress::Partial, AclCode::from_raw(107_000).unwrap());
    assert_eq!(partial.stage(), Some(Stage::AicpuLaunch));

    for codeless in [Failure::HostWaitTimeout, Failure::CopyBackValidation] {
        assert_eq!((codeless.stage(), codeless.code()), (None, None));
        assert!(!codeless.name().is_empty() && !codeless.hint().is_empty());
        assert!(status_latch::failure_line(1, &codeless).to_string().ends_with(codeless.hint()));
    }
}

#[test]
fn a_record_error_classifies_exactly_as_the_same_code_latched() {
    let codes = RuntimeCode::ALL.into_iter().chain([
        RuntimeCode::Unknown(-9),
        RuntimeCode::Unknown(12),
        RuntimeCode::Unknown(i32::MIN),
    ]);
    for code in codes {
        for source in status_latch::RecordSource::ALL {
            let record = Failure::Record { code, source };
            for latch_source in [LatchSource::Orch, LatchSource::Sched] {
                let latched = Failure::Latched(Latch { source: latch_source, code });
                assert_eq!(classify(&record), classify(&latched), "{code} from {source}");
            }
            assert_eq!(record.code(), Some(code.value()));
            assert_eq!(record.name(), code.name());
            assert_eq!(record.hint(), code.hint());
            assert_eq!(record.stage(), None);
        }
    }
}

#[test]
fn no_record_and_a_malformed_record_fail_only_the_run() {
    assert_rule(Failure::NoRecord, Class::RunOnly, Rule::NoResultRecord);
    for defect in [
        status_latch::RecordDefect::ZeroEpoch,
        status_latch::RecordDefect::Short { len: 0 },
        status_latch::RecordDefect::PayloadTooLong { bytes: 257 },
        status_latch::RecordDefect::NoVerdict,
        status_latch::RecordDefect::UnknownVerdict { raw: u32::MAX },
        status_latch::RecordDefect::OkWithDetail { code: 1, source: 1, payload: 1 },
        status_latch::RecordDefect::ErrorWithoutCode,
        status_latch::RecordDefect::UnknownSource { raw: 4 },
    ] {
        assert_rule(Failure::MalformedRecord(defect), Class::RunOnly, Rule::MalformedRecord);
    }
    assert_eq!(Failure::NoRecord.code(), None);
    assert_eq!(Failure::NoRecord.name(), "NO_RESULT_RECORD");
}

#[test]
fn a_failed_record_read_or_device_verdict_poisons_at_every_code() {
    for code in AclCode::ALL.into_iter().chain([AclCode::Unknown(999_999)]) {
        let device = code.is_device_fault();
        assert_rule(
            acl(Stage::RecordRead, code),
            Class::Poison,
            if device { Rule::DeviceFault } else { Rule::RecordReadFailed },
        );
        assert_rule(
            acl(Stage::StreamSync, code),
            Class::Poison,
            if device { Rule::DeviceFault } else { Rule::DeviceVerdictFailed },
        );
    }
}

#[test]
fn every_stage_is_in_stage_all_once() {
    let mut names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Stage::ALL.len());
    assert!(Stage::ALL.contains(&Stage::RecordRead));
    assert!(Stage::ALL.contains(&Stage::StreamSync));
}

/// Every known latch code and two the table does not know.
fn runtime_codes() -> impl Iterator<Item = RuntimeCode> {
    RuntimeCode::ALL.into_iter().chain([RuntimeCode::Unknown(12), RuntimeCode::Unknown(999)])
}

#[test]
fn a_returned_latch_code_classifies_as_the_same_code_latched_at_prepare_aicore_launch_and_finalise()
{
    for code in runtime_codes() {
        let latched = classify(&latched(code));
        for stage in [Stage::Prepare, Stage::AicoreLaunch, Stage::CopyBack] {
            let failure = Failure::returned(stage, ReturnCode::Runtime(code));
            assert_eq!(failure, Failure::Returned { stage, code });
            let c = classify(&failure);
            assert_eq!((c.class, c.rule), (latched.class, latched.rule), "{failure:?}");
            assert_eq!(failure.name(), code.name());
            assert_eq!(failure.code(), Some(code.value()));
            assert_eq!(failure.stage(), Some(stage));
            assert_eq!(failure.hint(), code.hint());
        }
    }
    // The cases: a latched deadlock from prepare fails only the run; a -4 is
    // DEP_POOL_OVERFLOW; a -1 from finalise is the runtime's SCOPE_DEADLOCK.
    let deadlock = Failure::returned(Stage::Prepare, ReturnCode::check(-3).unwrap_err());
    assert_rule(deadlock, Class::RunOnly, Rule::LatchedChangeAndRerun);
    assert_eq!(deadlock.name(), "FLOW_CONTROL_DEADLOCK");
    let overflow = Failure::returned(Stage::Prepare, ReturnCode::check(-4).unwrap_err());
    assert_eq!(overflow.name(), "DEP_POOL_OVERFLOW");
    let finalise = Failure::returned(Stage::CopyBack, ReturnCode::check(-1).unwrap_err());
    assert_eq!(finalise.name(), "SCOPE_DEADLOCK");
    assert_ne!(finalise, Failure::CopyBackValidation);
    // A code of the band the table does not know poisons, as the same code latched does.
    let unknown = Failure::returned(Stage::Prepare, ReturnCode::check(-12).unwrap_err());
    assert_rule(unknown, Class::Poison, Rule::LatchedUnknown);
}

#[test]
fn a_returned_latch_code_after_the_aicore_kernel_poisons_and_at_an_upload_fails_only_the_publication()
 {
    for code in runtime_codes() {
        assert_rule(
            Failure::returned(Stage::AicpuLaunch, ReturnCode::Runtime(code)),
            Class::Poison,
            Rule::LaunchPartial,
        );
        assert_rule(
            Failure::launch(LaunchProgress::Partial, ReturnCode::Runtime(code)),
            Class::Poison,
            Rule::LaunchPartial,
        );
        assert_rule(
            Failure::returned(Stage::Upload, ReturnCode::Runtime(code)),
            Class::RunOnly,
            Rule::UploadFailed,
        );
    }
}

#[test]
fn a_returned_acl_code_is_the_acl_failure_of_its_stage() {
    for code in AclCode::ALL.into_iter().chain([AclCode::Unknown(-1002)]) {
        let acl_code = ReturnCode::Acl(code);
        assert_eq!(Failure::returned(Stage::Prepare, acl_code), acl(Stage::Prepare, code));
        assert_eq!(Failure::returned(Stage::CopyBack, acl_code), acl(Stage::CopyBack, code));
        assert_eq!(
            Failure::returned(Stage::AicoreLaunch, acl_code),
            launch(LaunchProgress::NotStarted, code)
        );
        assert_eq!(
            Failure::returned(Stage::AicpuLaunch, acl_code),
            launch(LaunchProgress::Partial, code)
        );
        assert_eq!(
            Failure::launch(LaunchProgress::NotStarted, acl_code),
            launch(LaunchProgress::NotStarted, code)
        );
    }
}
