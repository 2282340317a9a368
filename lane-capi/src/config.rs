//! `RunLaneConfig` read and validated: the profile, the backend and the runner.

use std::ffi::CStr;
use std::path::PathBuf;

use lane_core::status_latch::HeaderLayout;
use lane_core::{FinaliseOrder, MAX_SLOTS, Profile, ProfileSpec, Recovery};

use crate::device_ops::DeviceOps;
use crate::error::Error;
use crate::runner::Vtable;
use crate::types::{
    RUN_LANE_ABI_VERSION, RUN_LANE_MAX_WORKERS, RUN_LANE_RUNNER_RESERVED,
    RUN_LANE_SIM_DEFAULT_RUN_NS, RunLaneBackend, RunLaneConcurrency, RunLaneConfig, RunLaneDrive,
    RunLaneHeaderLayout, RunLaneProfile, RunLaneRecovery, RunLaneRunner, RunLaneStatus,
    RunLaneVerdictChannel,
};

/// Which backend, with its settings.
#[derive(Clone, Debug, PartialEq)]
pub enum BackendChoice {
    /// The simulator.
    Sim {
        /// Its seed.
        seed: u64,
        /// Each run's device time.
        run_ns: u64,
    },
    /// A real NPU through libascendcl.
    Acl {
        /// `aclrtSetDevice`'s id.
        device_id: i32,
        /// The library to open, or `None` to search.
        library: Option<PathBuf>,
        /// Install the library's fault notice handler (L-19).
        notice_monitor: bool,
        /// Use the libascendcl the process already loaded, when there is one.
        prefer_loaded: bool,
    },
    /// The runtime's own device layer, through its table (L-22).
    DeviceOps {
        /// The logical device id: what fault notices name, and the lane's claim (L-25).
        device_id: i32,
        /// The table, validated.
        ops: DeviceOps,
    },
}

/// What the profile fields ask for: a named chip (overrides applied) or the device's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileChoice {
    /// This profile.
    Fixed(Profile),
    /// Probe the device, then apply `overrides`.
    Probe(Overrides),
}

/// The config's overrides of a profile (0 fields keep the profile's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overrides {
    slots: u8,
    completion_timeout_ms: u64,
    device_op_timeout_ms: u64,
    prepare_window: u8,
    /// The stream-synchronize verdict channel (and so depth one).
    stream_sync: bool,
    launch_depth: u8,
    /// Who recovers the device (L-24).
    recovery: Recovery,
    /// Each run's finalise returns before its successor's launch (and so depth one).
    finalise_first: bool,
    /// The runtime's status header layout (SPEC §5.1).
    header: HeaderLayout,
}

impl Overrides {
    /// `base` with these overrides, validated. The profile's launch depth is lowered to the
    /// slot count; an explicit `launch_depth` may be anything from 1 to the slot count.
    pub fn apply(self, base: Profile) -> Result<Profile, Error> {
        let mut spec: ProfileSpec = base.spec();
        spec.recovery = self.recovery;
        spec.header = self.header;
        if self.slots != 0 {
            spec.slots = self.slots;
            spec.launch_depth = spec.launch_depth.min(self.slots.max(1));
        }
        if self.prepare_window != 0 {
            spec.prepare_window = self.prepare_window;
        }
        if self.launch_depth != 0 {
            if self.launch_depth > spec.slots {
                return Err(invalid(format!(
                    "launch_depth {} is above the slot count {}: every launched run holds a slot; \
                     set slots to at least {} (1 to {MAX_SLOTS}), or pass launch_depth 1 to {} (0 \
                     keeps the profile's)",
                    self.launch_depth, spec.slots, self.launch_depth, spec.slots
                )));
            }
            if self.stream_sync && self.launch_depth > 1 {
                return Err(invalid(format!(
                    "launch_depth {} needs the record verdict channel: with STREAM_SYNC every \
                     run's streams are synchronized, which would wait for a queued successor \
                     too, so it runs at depth 1; pass launch_depth 0 or 1, or verdict_channel \
                     RECORD",
                    self.launch_depth
                )));
            }
            spec.launch_depth = self.launch_depth;
        }
        if self.finalise_first {
            spec.finalise = FinaliseOrder::BeforeNextLaunch;
            // Depth one unless the config asked for more, which the profile refuses.
            if self.launch_depth == 0 {
                spec.launch_depth = 1;
            }
        }
        if self.completion_timeout_ms != 0 {
            spec.completion_timeout_ns = ms_to_ns(self.completion_timeout_ms)?;
        }
        if self.device_op_timeout_ms != 0 {
            spec.device_op_timeout_ns = ms_to_ns(self.device_op_timeout_ms)?;
        }
        let profile = Profile::custom(spec)
            .map_err(|e| Error::new(RunLaneStatus::InvalidConfig, e.to_string()))?;
        Ok(if self.stream_sync { profile.with_stream_sync() } else { profile })
    }
}

fn ms_to_ns(ms: u64) -> Result<u64, Error> {
    ms.checked_mul(1_000_000).ok_or_else(|| {
        Error::new(
            RunLaneStatus::InvalidConfig,
            format!(
                "a timeout of {ms} ms does not fit in u64 nanoseconds; pass at most {} ms (0 keeps the default)",
                u64::MAX / 1_000_000
            ),
        )
    })
}

/// A validated config.
#[derive(Debug)]
pub struct Settings {
    /// The profile, or a probe.
    pub profile: ProfileChoice,
    /// The backend.
    pub backend: BackendChoice,
    /// The runner's callbacks.
    pub vtable: Vtable,
    /// Host worker threads for `prepare` and `finalise` (0: none).
    pub workers: usize,
    /// The submitting threads are bound: commands run the lane's steps on them.
    pub submitters_bound: bool,
    /// The lane checks its invariants after every step.
    pub check_invariants: bool,
    /// Who runs the lane's steps.
    pub drive: lane_service::Drive,
}

/// The defaults `run_lane_config_default` writes: a2a3 on ACL, the profile's slots and
/// timeouts, device 0, library searched, no callbacks.
pub const fn default_config() -> RunLaneConfig {
    RunLaneConfig {
        size: size_of::<RunLaneConfig>() as u32,
        abi_version: RUN_LANE_ABI_VERSION,
        profile: RunLaneProfile::A2a3 as u32,
        backend: RunLaneBackend::Acl as u32,
        slots: 0,
        completion_timeout_ms: 0,
        device_op_timeout_ms: 0,
        device_id: 0,
        acl_library_path: std::ptr::null(),
        sim_seed: 0,
        sim_run_ns: 0,
        runner: RunLaneRunner {
            user: std::ptr::null_mut(),
            prepare: None,
            launch_aicore: None,
            launch_aicpu: None,
            finalise: None,
            upload_code: None,
            on_outcome: None,
            concurrency: RunLaneConcurrency { off_lane_thread: false, prepares_at_once: 0 },
            on_poison: None,
            before_reset: None,
            after_reset: None,
            on_launched: None,
            finalise_verdict: None,
            reserved: [std::ptr::null_mut(); RUN_LANE_RUNNER_RESERVED],
        },
        workers: 0,
        prepare_window: 0,
        verdict_channel: RunLaneVerdictChannel::Record as u32,
        launch_depth: 0,
        fault_notice_monitor: false,
        submitters_bound: false,
        check_invariants: false,
        recovery: RunLaneRecovery::InPlace as u32,
        device_ops: std::ptr::null(),
        drive: RunLaneDrive::LaneThreads as u32,
        finalise_before_launch: false,
        header_layout: RunLaneHeaderLayout::TensormapAndRingbuffer as u32,
        acl_prefer_loaded: false,
    }
}

fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(RunLaneStatus::InvalidConfig, message)
}

/// Reads `config`.
///
/// # Safety
///
/// `config.acl_library_path` is NULL or a NUL-terminated string readable for this call;
/// `config.device_ops` is NULL or points to a readable `RunLaneDeviceOps` of the `size` its
/// first field states (read only for `RUN_LANE_BACKEND_DEVICE_OPS`).
pub unsafe fn read(config: &RunLaneConfig) -> Result<Settings, Error> {
    if config.abi_version != RUN_LANE_ABI_VERSION {
        return Err(Error::new(
            RunLaneStatus::AbiMismatch,
            format!(
                "the config says ABI version {}, this library is version {RUN_LANE_ABI_VERSION}; \
                 rebuild against this library's run_lane.h and fill the config with run_lane_config_default",
                config.abi_version
            ),
        ));
    }
    if let Some(entry) = config.runner.reserved.iter().position(|e| !e.is_null()) {
        return Err(invalid(format!(
            "runner.reserved[{entry}] is not NULL: the client sets a runner callback this \
             library (ABI {RUN_LANE_ABI_VERSION}) does not know; link the library its run_lane.h \
             came with (or a newer one), or leave the reserved entries NULL"
        )));
    }
    if config.workers > RUN_LANE_MAX_WORKERS {
        return Err(invalid(format!(
            "workers {} is above RUN_LANE_MAX_WORKERS ({RUN_LANE_MAX_WORKERS}): a lane has at \
             most one prepare or finalise out per slot; pass 0 to {RUN_LANE_MAX_WORKERS}",
            config.workers
        )));
    }
    let drive = match config.drive {
        d if d == RunLaneDrive::LaneThreads as u32 => lane_service::Drive::LaneThreads,
        d if d == RunLaneDrive::Caller as u32 => lane_service::Drive::Caller,
        other => {
            return Err(invalid(format!(
                "drive {other} is not a RunLaneDrive (LANE_THREADS = 0, CALLER = 1)"
            )));
        }
    };
    let stream_sync = match config.verdict_channel {
        c if c == RunLaneVerdictChannel::Record as u32 => false,
        c if c == RunLaneVerdictChannel::StreamSync as u32 => true,
        other => {
            return Err(invalid(format!(
                "verdict_channel {other} is not a RunLaneVerdictChannel (RECORD = 0, STREAM_SYNC = 1)"
            )));
        }
    };
    let recovery = match config.recovery {
        r if r == RunLaneRecovery::InPlace as u32 => Recovery::InPlace,
        r if r == RunLaneRecovery::Runtime as u32 => Recovery::Runtime,
        other => {
            return Err(invalid(format!(
                "recovery {other} is not a RunLaneRecovery (IN_PLACE = 0: the lane resets the \
                 device; RUNTIME = 1: the runtime does, told by on_poison)"
            )));
        }
    };
    let header = match config.header_layout {
        h if h == RunLaneHeaderLayout::TensormapAndRingbuffer as u32 => {
            HeaderLayout::TensormapAndRingbuffer
        }
        h if h == RunLaneHeaderLayout::HostBuildGraph as u32 => HeaderLayout::HostBuildGraph,
        other => {
            return Err(invalid(format!(
                "header_layout {other} is not a RunLaneHeaderLayout: pass the runtime's, \
                 TENSORMAP_AND_RINGBUFFER = 0 (896 bytes, the default) or HOST_BUILD_GRAPH = 1 \
                 (256 bytes)"
            )));
        }
    };
    let overrides = Overrides {
        header,
        slots: config.slots,
        completion_timeout_ms: config.completion_timeout_ms,
        device_op_timeout_ms: config.device_op_timeout_ms,
        prepare_window: config.prepare_window,
        stream_sync,
        launch_depth: config.launch_depth,
        recovery,
        finalise_first: config.finalise_before_launch,
    };
    let profile = match config.profile {
        p if p == RunLaneProfile::A2a3 as u32 => {
            ProfileChoice::Fixed(overrides.apply(Profile::a2a3())?)
        }
        p if p == RunLaneProfile::A5 as u32 => {
            ProfileChoice::Fixed(overrides.apply(Profile::a5())?)
        }
        p if p == RunLaneProfile::Probe as u32 => ProfileChoice::Probe(overrides),
        other => {
            return Err(invalid(format!(
                "profile {other} is not a RunLaneProfile (A2A3 = 0, A5 = 1, PROBE = 2)"
            )));
        }
    };
    let backend = match config.backend {
        b if b == RunLaneBackend::Sim as u32 => BackendChoice::Sim {
            seed: config.sim_seed,
            run_ns: if config.sim_run_ns == 0 {
                RUN_LANE_SIM_DEFAULT_RUN_NS
            } else {
                config.sim_run_ns
            },
        },
        b if b == RunLaneBackend::Acl as u32 => {
            let library = if config.acl_library_path.is_null() {
                None
            } else {
                // SAFETY: the caller guarantees a NUL-terminated string (this function's contract).
                let path = unsafe { CStr::from_ptr(config.acl_library_path) };
                let path = path
                    .to_str()
                    .map_err(|_| invalid("acl_library_path is not UTF-8; pass a UTF-8 path"))?;
                // The loader would be handed an empty name, and dlopen("") answers with
                // the program itself: a lane on whatever libascendcl it happens to have.
                if path.is_empty() {
                    return Err(invalid(
                        "acl_library_path is \"\" (an empty path); pass NULL to search for \
                         libascendcl (RUN_LANE_ACL_LIB, ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, the \
                         default prefixes) or the path to the library",
                    ));
                }
                Some(PathBuf::from(path))
            };
            if config.runner.launch_aicore.is_none() || config.runner.launch_aicpu.is_none() {
                return Err(invalid(
                    "the ACL backend needs the launch_aicore and launch_aicpu callbacks (nothing \
                     else launches the run's kernels); set both, or use RUN_LANE_BACKEND_SIM",
                ));
            }
            BackendChoice::Acl {
                device_id: config.device_id,
                library,
                notice_monitor: config.fault_notice_monitor,
                prefer_loaded: config.acl_prefer_loaded,
            }
        }
        b if b == RunLaneBackend::DeviceOps as u32 => {
            if config.device_ops.is_null() {
                return Err(invalid(
                    "RUN_LANE_BACKEND_DEVICE_OPS needs device_ops: point it at the runtime's \
                     RunLaneDeviceOps (every entry the header marks Required set)",
                ));
            }
            // SAFETY: non-NULL; a table `size` bytes long (this function's contract).
            let table = unsafe { crate::sized::read_in(config.device_ops) }?;
            device_ops_backend(config, &table, (&profile, recovery))?
        }
        other => {
            return Err(invalid(format!(
                "backend {other} is not a RunLaneBackend (ACL = 0, SIM = 1, DEVICE_OPS = 2)"
            )));
        }
    };
    Ok(Settings {
        profile,
        backend,
        vtable: Vtable::new(config.runner),
        workers: usize::try_from(config.workers).unwrap_or(usize::MAX),
        submitters_bound: config.submitters_bound,
        check_invariants: config.check_invariants,
        drive,
    })
}

/// The `DEVICE_OPS` backend of `config`, whose table is `table`: the table validated
/// (`reset_device_force` required unless the runtime owns `recovery`), a named profile
/// (nothing to probe a SoC through), both launch callbacks, and the library's notice monitor
/// left alone (it is ACL's callback slot; the runtime forwards notices).
fn device_ops_backend(
    config: &RunLaneConfig,
    table: &crate::types::RunLaneDeviceOps,
    (profile, recovery): (&ProfileChoice, Recovery),
) -> Result<BackendChoice, Error> {
    let ops = DeviceOps::new(table, recovery == Recovery::Runtime)?;
    if matches!(profile, ProfileChoice::Probe(_)) {
        return Err(invalid(PROBE_WITH_DEVICE_OPS));
    }
    if config.runner.launch_aicore.is_none() || config.runner.launch_aicpu.is_none() {
        return Err(invalid(
            "RUN_LANE_BACKEND_DEVICE_OPS needs the launch_aicore and launch_aicpu callbacks \
             (nothing else launches the run's kernels); set both",
        ));
    }
    if config.fault_notice_monitor {
        return Err(invalid(
            "fault_notice_monitor installs the library's handler in libascendcl's callback slot, \
             which RUN_LANE_BACKEND_DEVICE_OPS does not load: leave it false and forward the \
             runtime's notices with run_lane_report_device_fault",
        ));
    }
    Ok(BackendChoice::DeviceOps { device_id: config.device_id, ops })
}

/// Why `RUN_LANE_PROFILE_PROBE` is refused on the device-ops backend.
pub const PROBE_WITH_DEVICE_OPS: &str = "RUN_LANE_PROFILE_PROBE reads the SoC through libascendcl, which \
     RUN_LANE_BACKEND_DEVICE_OPS does not load: name the chip's profile (RUN_LANE_PROFILE_A2A3 or \
     RUN_LANE_PROFILE_A5)";

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> RunLaneConfig {
        RunLaneConfig { backend: RunLaneBackend::Sim as u32, ..default_config() }
    }

    fn read_ok(config: &RunLaneConfig) -> Settings {
        // SAFETY: no library path.
        unsafe { read(config) }.unwrap()
    }

    fn read_err(config: &RunLaneConfig) -> Error {
        // SAFETY: no library path.
        unsafe { read(config) }.unwrap_err()
    }

    /// `config` is refused as `INVALID_CONFIG` with a message containing `words`.
    fn assert_invalid(config: &RunLaneConfig, words: &str) {
        let refused = read_err(config);
        assert_eq!(refused.status, RunLaneStatus::InvalidConfig, "{words}");
        assert!(refused.message.contains(words), "{}", refused.message);
    }

    #[test]
    fn the_defaults_on_the_simulator_give_a2a3() {
        let settings = read_ok(&sim());
        assert_eq!(settings.profile, ProfileChoice::Fixed(Profile::a2a3()));
        assert_eq!(
            settings.backend,
            BackendChoice::Sim { seed: 0, run_ns: RUN_LANE_SIM_DEFAULT_RUN_NS }
        );
    }

    #[test]
    fn invariant_checks_are_off_by_default_and_the_config_turns_them_on() {
        assert!(!default_config().check_invariants);
        assert!(!read_ok(&sim()).check_invariants);
        let on = read_ok(&RunLaneConfig { check_invariants: true, ..sim() });
        assert!(on.check_invariants);
    }

    #[test]
    fn the_lanes_own_threads_drive_it_by_default_and_the_config_hands_it_to_the_caller() {
        assert_eq!(read_ok(&sim()).drive, lane_service::Drive::LaneThreads);
        let caller = read_ok(&RunLaneConfig { drive: RunLaneDrive::Caller as u32, ..sim() });
        assert_eq!(caller.drive, lane_service::Drive::Caller);
        assert_invalid(&RunLaneConfig { drive: 7, ..sim() }, "RunLaneDrive");
    }

    #[test]
    fn one_slot_lowers_a2a3s_depth_to_one() {
        let settings = read_ok(&RunLaneConfig { slots: 1, ..sim() });
        let ProfileChoice::Fixed(profile) = settings.profile else { panic!("fixed") };
        assert_eq!(profile.slots(), 1);
        assert_eq!(profile.launch_depth().get(), 1);
    }

    fn fixed(config: &RunLaneConfig) -> Profile {
        match read_ok(config).profile {
            ProfileChoice::Fixed(profile) => profile,
            ProfileChoice::Probe(_) => panic!("a named profile"),
        }
    }

    #[test]
    fn header_layout_chooses_the_profiles_layout_and_the_default_is_tensormap_and_ringbuffer() {
        assert_eq!(fixed(&sim()).header(), HeaderLayout::TensormapAndRingbuffer);
        for profile in [RunLaneProfile::A2a3, RunLaneProfile::A5] {
            let hbg = fixed(&RunLaneConfig {
                profile: profile as u32,
                header_layout: RunLaneHeaderLayout::HostBuildGraph as u32,
                ..sim()
            });
            assert_eq!(hbg.header(), HeaderLayout::HostBuildGraph, "{profile:?}");
            assert_eq!(hbg.launch_depth().get(), 2, "{profile:?}: it queues");
        }
        let refused = RunLaneConfig { header_layout: 2, ..sim() };
        assert_invalid(&refused, "HOST_BUILD_GRAPH = 1");
    }

    #[test]
    fn launch_depth_goes_up_to_the_slot_count_and_no_further() {
        for (slots, depth) in [(3, 3), (4, 4), (4, 2)] {
            let profile = fixed(&RunLaneConfig { slots, launch_depth: depth, ..sim() });
            assert_eq!(profile.launch_depth().get(), depth, "slots {slots}");
        }
        // No depth keeps the profile's two, lowered to the slots.
        let kept = fixed(&RunLaneConfig { slots: 4, ..sim() });
        assert_eq!(kept.launch_depth().get(), 2);
        for (slots, depth) in [(0, 3), (3, 4), (4, 5)] {
            let refused = RunLaneConfig { slots, launch_depth: depth, ..sim() };
            assert_invalid(&refused, "above the slot count");
        }
    }

    #[test]
    fn a_wrong_abi_version_is_refused() {
        let error = read_err(&RunLaneConfig { abi_version: RUN_LANE_ABI_VERSION + 1, ..sim() });
        assert_eq!(error.status, RunLaneStatus::AbiMismatch);
    }

    #[test]
    fn out_of_range_enums_and_bad_profiles_are_refused() {
        for config in [
            RunLaneConfig { profile: 9, ..sim() },
            RunLaneConfig { backend: 9, ..sim() },
            RunLaneConfig { drive: 2, ..sim() },
            RunLaneConfig { slots: 5, ..sim() },
            RunLaneConfig { workers: RUN_LANE_MAX_WORKERS + 1, ..sim() },
            RunLaneConfig { prepare_window: 3, ..sim() },
            RunLaneConfig { completion_timeout_ms: 1_000, device_op_timeout_ms: 2_000, ..sim() },
        ] {
            assert_eq!(read_err(&config).status, RunLaneStatus::InvalidConfig);
        }
    }

    #[test]
    fn an_empty_library_path_is_refused_with_what_to_pass_instead() {
        unsafe extern "C" fn launch(
            _: *mut core::ffi::c_void,
            _: *mut core::ffi::c_void,
            _: *const crate::types::RunLaneRunArgs,
        ) -> i32 {
            0
        }
        let mut config = default_config();
        config.runner.launch_aicore = Some(launch);
        config.runner.launch_aicpu = Some(launch);
        config.acl_library_path = c"".as_ptr();
        // SAFETY: a NUL-terminated (empty) path.
        let error = unsafe { read(&config) }.unwrap_err();
        assert_eq!(error.status, RunLaneStatus::InvalidConfig);
        assert!(
            error.message.contains("acl_library_path") && error.message.contains("pass NULL"),
            "{}",
            error.message
        );
        config.acl_library_path = c"/opt/libascendcl.so".as_ptr();
        // SAFETY: a NUL-terminated path.
        let settings = unsafe { read(&config) }.unwrap();
        assert_eq!(
            settings.backend,
            BackendChoice::Acl {
                device_id: 0,
                library: Some(PathBuf::from("/opt/libascendcl.so")),
                notice_monitor: false,
                prefer_loaded: false,
            }
        );
    }

    #[test]
    fn acl_without_launch_callbacks_is_refused() {
        assert_eq!(read_err(&default_config()).status, RunLaneStatus::InvalidConfig);
    }
}
