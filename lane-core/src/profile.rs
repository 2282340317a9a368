//! Per-chip capabilities as data (SPEC §2 "profile", L-3): depth is never a code path.

use status_latch::{HeaderLayout, VerdictChannel};
use stream_pair::LaunchDepth;
use thiserror::Error;

/// Most pipeline slots a lane supports (inline storage is sized for it).
pub const MAX_SLOTS: u8 = 4;

/// Most publications that may wait in the lane at once; the next `publish` is refused with
/// [`PublishError::Full`](crate::PublishError::Full).
pub const MAX_PENDING_PUBLICATIONS: usize = 2;

/// Host completion wait default: 50 s (SPEC L-6), above the 45 s device op timeout so the
/// device's own timeout fires first and the host sees the real code.
pub const DEFAULT_COMPLETION_TIMEOUT_NS: u64 = 50_000_000_000;

/// Device op-execute timeout default: 45 s (SPEC L-6), below the host wait.
pub const DEFAULT_DEVICE_OP_TIMEOUT_NS: u64 = 45_000_000_000;

/// Bounded device drain before a force reset (SPEC §5.3); its return code proves nothing.
pub const DEFAULT_DRAIN_TIMEOUT_NS: u64 = 10_000_000_000;

/// Force-reset + probe attempts before the lane is declared lost (SPEC §5.3).
pub const DEFAULT_RECOVERY_ATTEMPTS: u8 = 3;

/// How a launch arms its slot and a status read reads it back (issue 13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyPath {
    /// Two synchronous `aclrtMemcpy` calls per run on the lane thread: the arm before the
    /// launch, the read after completion (~9.5 us each). For runtimes that cannot pin memory.
    Sync,
    /// Both copies queued on the run's streams from pinned host memory (`aclrtMallocHost`,
    /// `aclrtMemcpyAsync`): the arm before the kernels, the read after them and before the
    /// completion events, so a passed event proves the header is already in host memory.
    OnStream,
}

/// Who recovers the device after a poison or a fault notice (SPEC L-24): the embedding
/// chooses. A reset destroys everything on the device, the runtime's own streams, kernels
/// and buffers included, so a runtime that owns those may want the reset for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recovery {
    /// The lane recovers in place (SPEC §5.3: drain, force reset, probe, reopen), and tells
    /// the runner before the reset and after it, so the runtime can quiesce its own device
    /// users and rebuild what the reset destroyed.
    InPlace,
    /// The runtime recovers: the lane gives every item its verdict, tells the runner once,
    /// and then makes no device call until the runtime reports its reset
    /// ([`Lane::device_reset`](crate::Lane::device_reset)); submits meanwhile are refused as
    /// unusable. The lane then reopens on fresh streams.
    Runtime,
}

/// When a run's finalise may run relative to its successor's launch (issue 45). The runtime
/// releases runner-wide state (its collectors) in a run's finalise, which some runtimes need
/// done before the next run's kernels are launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FinaliseOrder {
    /// A run's finalise may come after its successor's launch (the default): the successor
    /// queues on the pair while the run executes.
    Overlapped,
    /// `finalise(N)` returns before `launch(N+1)` begins: a run launches only once every run
    /// before it has its verdict, so the profile runs at launch depth one (N+1 may still be
    /// prepared while N runs).
    BeforeNextLaunch,
}

/// What a chip and runtime can do, as data.
///
/// Build one with [`Profile::a2a3`], [`Profile::a5`] or [`Profile::custom`]; every field is
/// validated once there, so the lane never meets an impossible profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    name: &'static str,
    slots: u8,
    launch_depth: LaunchDepth,
    concurrent_prepare: bool,
    prepare_window: u8,
    copies: CopyPath,
    verdict: VerdictChannel,
    header: HeaderLayout,
    completion_timeout_ns: u64,
    device_op_timeout_ns: u64,
    drain_timeout_ns: u64,
    recovery_attempts: u8,
    recovery: Recovery,
    finalise: FinaliseOrder,
}

/// Why a custom profile was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ProfileError {
    /// Slots must be between 1 and [`MAX_SLOTS`].
    #[error("a profile needs 1..={max} slots, got {got}; use 2 for a2a3 and a5", max = MAX_SLOTS)]
    Slots {
        /// The refused value.
        got: u8,
    },
    /// Launch depth must be between 1 and the slot count (every launched run holds a slot).
    #[error(
        "launch depth {depth} is outside 1..={slots} (the slot count); lower the depth or add slots"
    )]
    Depth {
        /// The refused depth.
        depth: u8,
        /// The profile's slot count.
        slots: u8,
    },
    /// The device op timeout must be below the host completion timeout (SPEC L-6), or a hung
    /// kernel keeps running after the host gives up and the host never sees the real code.
    #[error(
        "device op timeout {device_ns}ns must be below the host completion timeout {host_ns}ns; lower the op timeout"
    )]
    Timeouts {
        /// Device op timeout.
        device_ns: u64,
        /// Host completion timeout.
        host_ns: u64,
    },
    /// The prepare window must be between 1 and the slot count (every preparing run holds a
    /// slot).
    #[error(
        "prepare window {window} is outside 1..={slots} (the slot count); lower the window or add slots"
    )]
    PrepareWindow {
        /// The refused window.
        window: u8,
        /// The profile's slot count.
        slots: u8,
    },
    /// A profile whose verdict channel is the stream synchronize runs at depth one: the
    /// synchronize of a run's streams would wait for a queued successor too (device-truth §1).
    #[error(
        "launch depth {depth} needs the record verdict channel; the stream-synchronize channel runs at depth 1"
    )]
    SyncChannelDepth {
        /// The refused depth.
        depth: u8,
    },
    /// A profile that finalises each run before its successor's launch runs at depth one: the
    /// successor cannot queue behind a run that has not finished.
    #[error(
        "launch depth {depth} needs FinaliseOrder::Overlapped; finalise before the next launch runs at depth 1"
    )]
    FinaliseOrderDepth {
        /// The refused depth.
        depth: u8,
    },
    /// At least one recovery attempt is needed.
    #[error("recovery needs at least one attempt; the default is {default}", default = DEFAULT_RECOVERY_ATTEMPTS)]
    RecoveryAttempts,
}

/// The fields of a custom profile, so a call site names what it sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileSpec {
    /// Shown in traces and reports.
    pub name: &'static str,
    /// Pipeline slots (1..=[`MAX_SLOTS`]).
    pub slots: u8,
    /// Runs launched on the pair at once (1..=slots).
    pub launch_depth: u8,
    /// Whether a successor may be prepared while its predecessor runs.
    pub concurrent_prepare: bool,
    /// Most runs preparing or prepared but not yet launched at once (1..=slots). 1 is
    /// today's lane: a run prepares only once every earlier run launched. More pays only when
    /// prepares run on host workers (lane-service), each on its own slot: prepares then start
    /// in submission order, their answers may come in any order, and launches stay in
    /// submission order (L-18 Overlap). Each run in the window holds a slot, so give the
    /// profile slots for the window plus the launch depth plus one finalising run.
    pub prepare_window: u8,
    /// How a launch arms its slot and a status read reads it back.
    pub copies: CopyPath,
    /// How a run gets its verdict (SPEC L-8): the runtime's result record (the default), or
    /// a stream synchronize of every run (a runtime that publishes no record; depth one).
    pub verdict: VerdictChannel,
    /// The runtime's status header layout.
    pub header: HeaderLayout,
    /// Host wait for one run's completion, from when it became the oldest in flight.
    pub completion_timeout_ns: u64,
    /// Device op-execute timeout the backend programs (below the host wait).
    pub device_op_timeout_ns: u64,
    /// Bounded device drain before a force reset.
    pub drain_timeout_ns: u64,
    /// Force-reset + probe attempts before the lane is lost (in-place recovery).
    pub recovery_attempts: u8,
    /// Who recovers the device (L-24); in place by default.
    pub recovery: Recovery,
    /// Whether a run's finalise returns before its successor's launch begins; overlapped by
    /// default ([`FinaliseOrder::BeforeNextLaunch`] needs launch depth 1).
    pub finalise: FinaliseOrder,
}

impl Profile {
    /// Ascend 910B/910C: two slots, launch depth two (run N+1 is launched while N executes),
    /// concurrent prepare, tensormap_and_ringbuffer header.
    ///
    /// Two slots are enough while one thread does every host step: a run holds its slot from
    /// prepare to finalise, and with a window of one only the runs on the pair and one run
    /// preparing or finalising need one. Three or more pay when prepares run on host workers
    /// with a wider [`prepare_window`](Self::prepare_window) (lane-service with a runner that
    /// allows it): then slots are needed at once for the runs preparing (up to the window),
    /// the runs on the pair (the launch depth) and the run being finalised, so a window of
    /// two at depth two wants four slots (a custom profile with `slots: 4`,
    /// `prepare_window: 2`); with fewer, a prepare waits for a slot and the window does not
    /// fill. The preset stays at two slots and a window of one, today's behaviour.
    #[must_use]
    pub fn a2a3() -> Self {
        Self::from_valid(ProfileSpec {
            name: "a2a3",
            slots: 2,
            launch_depth: 2,
            ..Self::default_spec()
        })
    }

    /// Ascend 950: two slots, launch depth two on the record verdict channel, concurrent
    /// prepare, tensormap_and_ringbuffer header (set `header` for host_build_graph).
    ///
    /// Which runtimes queue: both. host_build_graph and tensormap_and_ringbuffer runs are
    /// launched at depth two on a5, as the peer runtime's newest code queues them there
    /// (`Worker(launch_depth=2)` on a5 for both: embedding-fit.md, "what the peer's newest
    /// code added"); the header layout changes where the latch is read, never the depth.
    /// Depth two rests on the result record (L-3, L-8): a run is `Ok` only on its own
    /// published record, never on its boundary's completion, which matters on a5, where an
    /// AICore retirement may latch "completed" before its fatal flag is published (the
    /// peer's open #2387).
    ///
    /// What is measured and what is not: nothing of a5 queueing has been measured by this
    /// project; the queued gap, the verdicts under #2387 and the record's publication order on
    /// a5 silicon are unmeasured (the lane's figures are a2a3's and the fake's,
    /// docs/performance.md). What the lane checks on a5 is what it checks everywhere: the
    /// record's epoch, and a stream synchronize whenever the record does not decide. A runtime
    /// that publishes no record runs at depth one ([`with_stream_sync`](Self::with_stream_sync)).
    #[must_use]
    pub fn a5() -> Self {
        Self::from_valid(ProfileSpec {
            name: "a5",
            slots: 2,
            launch_depth: 2,
            ..Self::default_spec()
        })
    }

    /// a2a3 at launch depth one on the record channel: run N+1 may be prepared while N runs
    /// and launches only once N retired (the lane's host-synchronised baseline, and what a
    /// runner with diagnostics gets per run).
    #[must_use]
    pub fn depth_one() -> Self {
        Self::from_valid(ProfileSpec {
            name: "depth-one",
            slots: 2,
            launch_depth: 1,
            ..Self::default_spec()
        })
    }

    /// This profile for a runtime that publishes no result record: its verdict channel is the
    /// stream synchronize of every run (SPEC L-8), so it runs at launch depth one (L-3); every
    /// other field is kept.
    #[must_use]
    pub const fn with_stream_sync(mut self) -> Self {
        self.verdict = VerdictChannel::StreamSync;
        self.launch_depth = LaunchDepth::ONE;
        self
    }

    /// The a2a3 defaults as a spec to start a custom profile from.
    #[must_use]
    pub const fn default_spec() -> ProfileSpec {
        ProfileSpec {
            name: "custom",
            slots: 2,
            launch_depth: 2,
            concurrent_prepare: true,
            prepare_window: 1,
            copies: CopyPath::Sync,
            verdict: VerdictChannel::Record,
            header: HeaderLayout::TensormapAndRingbuffer,
            completion_timeout_ns: DEFAULT_COMPLETION_TIMEOUT_NS,
            device_op_timeout_ns: DEFAULT_DEVICE_OP_TIMEOUT_NS,
            drain_timeout_ns: DEFAULT_DRAIN_TIMEOUT_NS,
            recovery_attempts: DEFAULT_RECOVERY_ATTEMPTS,
            recovery: Recovery::InPlace,
            finalise: FinaliseOrder::Overlapped,
        }
    }

    /// A validated custom profile.
    pub fn custom(spec: ProfileSpec) -> Result<Self, ProfileError> {
        if spec.slots == 0 || spec.slots > MAX_SLOTS {
            return Err(ProfileError::Slots { got: spec.slots });
        }
        if spec.launch_depth == 0 || spec.launch_depth > spec.slots {
            return Err(ProfileError::Depth { depth: spec.launch_depth, slots: spec.slots });
        }
        if spec.prepare_window == 0 || spec.prepare_window > spec.slots {
            return Err(ProfileError::PrepareWindow {
                window: spec.prepare_window,
                slots: spec.slots,
            });
        }
        if spec.device_op_timeout_ns >= spec.completion_timeout_ns {
            return Err(ProfileError::Timeouts {
                device_ns: spec.device_op_timeout_ns,
                host_ns: spec.completion_timeout_ns,
            });
        }
        if spec.verdict == VerdictChannel::StreamSync && spec.launch_depth > 1 {
            return Err(ProfileError::SyncChannelDepth { depth: spec.launch_depth });
        }
        if spec.finalise == FinaliseOrder::BeforeNextLaunch && spec.launch_depth > 1 {
            return Err(ProfileError::FinaliseOrderDepth { depth: spec.launch_depth });
        }
        if spec.recovery_attempts == 0 {
            return Err(ProfileError::RecoveryAttempts);
        }
        let launch_depth = LaunchDepth::new(spec.launch_depth)
            .map_err(|_| ProfileError::Depth { depth: spec.launch_depth, slots: spec.slots })?;
        Ok(Self {
            name: spec.name,
            slots: spec.slots,
            launch_depth,
            concurrent_prepare: spec.concurrent_prepare,
            prepare_window: spec.prepare_window,
            copies: spec.copies,
            verdict: spec.verdict,
            header: spec.header,
            completion_timeout_ns: spec.completion_timeout_ns,
            device_op_timeout_ns: spec.device_op_timeout_ns,
            drain_timeout_ns: spec.drain_timeout_ns,
            recovery_attempts: spec.recovery_attempts,
            recovery: spec.recovery,
            finalise: spec.finalise,
        })
    }

    fn from_valid(spec: ProfileSpec) -> Self {
        match Self::custom(spec) {
            Ok(profile) => profile,
            // The presets are constants checked by `presets_are_valid` in the tests.
            Err(e) => unreachable!("preset profile {} is invalid: {e}", spec.name),
        }
    }

    /// This profile as a spec, to derive a variant (e.g. a shorter timeout in a test).
    #[must_use]
    pub const fn spec(&self) -> ProfileSpec {
        ProfileSpec {
            name: self.name,
            slots: self.slots,
            launch_depth: self.launch_depth.get(),
            concurrent_prepare: self.concurrent_prepare,
            prepare_window: self.prepare_window,
            copies: self.copies,
            verdict: self.verdict,
            header: self.header,
            completion_timeout_ns: self.completion_timeout_ns,
            device_op_timeout_ns: self.device_op_timeout_ns,
            drain_timeout_ns: self.drain_timeout_ns,
            recovery_attempts: self.recovery_attempts,
            recovery: self.recovery,
            finalise: self.finalise,
        }
    }

    /// The profile's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }
    /// Pipeline slots.
    #[must_use]
    pub const fn slots(&self) -> u8 {
        self.slots
    }
    /// Runs launched on the pair at once.
    #[must_use]
    pub const fn launch_depth(&self) -> LaunchDepth {
        self.launch_depth
    }
    /// Whether a successor may be prepared while its predecessor runs.
    #[must_use]
    pub const fn concurrent_prepare(&self) -> bool {
        self.concurrent_prepare
    }
    /// Most runs preparing or prepared but not yet launched at once.
    #[must_use]
    pub const fn prepare_window(&self) -> u8 {
        self.prepare_window
    }
    /// How a launch arms its slot and a status read reads it back.
    #[must_use]
    pub const fn copies(&self) -> CopyPath {
        self.copies
    }
    /// How a run gets its verdict (SPEC L-8).
    #[must_use]
    pub const fn verdict(&self) -> VerdictChannel {
        self.verdict
    }
    /// The runtime's status header layout.
    #[must_use]
    pub const fn header(&self) -> HeaderLayout {
        self.header
    }
    /// Host wait for one run's completion.
    #[must_use]
    pub const fn completion_timeout_ns(&self) -> u64 {
        self.completion_timeout_ns
    }
    /// Device op-execute timeout.
    #[must_use]
    pub const fn device_op_timeout_ns(&self) -> u64 {
        self.device_op_timeout_ns
    }
    /// Bounded device drain before a force reset.
    #[must_use]
    pub const fn drain_timeout_ns(&self) -> u64 {
        self.drain_timeout_ns
    }
    /// Force-reset + probe attempts before the lane is lost.
    #[must_use]
    pub const fn recovery_attempts(&self) -> u8 {
        self.recovery_attempts
    }
    /// Who recovers the device after a poison (L-24).
    #[must_use]
    pub const fn recovery(&self) -> Recovery {
        self.recovery
    }
    /// Whether a run's finalise returns before its successor's launch begins.
    #[must_use]
    pub const fn finalise_order(&self) -> FinaliseOrder {
        self.finalise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_differ_only_in_depth() {
        let a2a3 = Profile::a2a3();
        let a5 = Profile::a5();
        assert_eq!(Profile::custom(a2a3.spec()), Ok(a2a3));
        assert_eq!(Profile::custom(a5.spec()), Ok(a5));
        assert_eq!(a2a3.launch_depth().get(), 2);
        assert_eq!(a5.launch_depth().get(), 2);
        assert_eq!((a2a3.slots(), a5.slots()), (2, 2));
        assert!(a2a3.device_op_timeout_ns() < a2a3.completion_timeout_ns());
    }

    #[test]
    fn a5_queues_at_depth_two_with_either_runtimes_header() {
        for header in [HeaderLayout::TensormapAndRingbuffer, HeaderLayout::HostBuildGraph] {
            let spec = ProfileSpec { header, ..Profile::a5().spec() };
            let profile = Profile::custom(spec).expect("a5 with either header is valid");
            assert_eq!(profile.header(), header);
            assert_eq!(profile.launch_depth().get(), 2, "{header:?} queues on a5");
            assert_eq!(profile.verdict(), VerdictChannel::Record);
        }
    }

    #[test]
    fn each_profile_carries_its_name_for_traces_and_reports() {
        assert_eq!(Profile::a2a3().name(), "a2a3");
        assert_eq!(Profile::a5().name(), "a5");
        assert_eq!(Profile::default_spec().name, "custom");
        let spec = ProfileSpec { name: "bench", ..Profile::default_spec() };
        assert_eq!(Profile::custom(spec).map(|p| p.name()), Ok("bench"));
        assert_eq!(Profile::a5().spec().name, "a5");
    }

    #[test]
    fn presets_carry_the_default_timeouts_and_budget() {
        for profile in [Profile::a2a3(), Profile::a5()] {
            assert_eq!(profile.completion_timeout_ns(), DEFAULT_COMPLETION_TIMEOUT_NS);
            assert_eq!(profile.device_op_timeout_ns(), DEFAULT_DEVICE_OP_TIMEOUT_NS);
            assert_eq!(profile.drain_timeout_ns(), DEFAULT_DRAIN_TIMEOUT_NS);
            assert_eq!(profile.recovery_attempts(), DEFAULT_RECOVERY_ATTEMPTS);
        }
    }

    #[test]
    fn custom_profile_refuses_depth_above_slots() {
        let spec = ProfileSpec { slots: 2, launch_depth: 3, ..Profile::default_spec() };
        assert_eq!(Profile::custom(spec), Err(ProfileError::Depth { depth: 3, slots: 2 }));
    }

    #[test]
    fn custom_profile_refuses_zero_or_too_many_slots() {
        for slots in [0, MAX_SLOTS + 1] {
            let spec = ProfileSpec { slots, launch_depth: 1, ..Profile::default_spec() };
            assert_eq!(Profile::custom(spec), Err(ProfileError::Slots { got: slots }));
        }
    }

    #[test]
    fn custom_profile_refuses_device_timeout_at_or_above_host_wait() {
        let spec = ProfileSpec {
            device_op_timeout_ns: 50,
            completion_timeout_ns: 50,
            ..Profile::default_spec()
        };
        assert!(matches!(Profile::custom(spec), Err(ProfileError::Timeouts { .. })));
    }

    #[test]
    fn custom_profile_refuses_a_prepare_window_of_zero_or_above_the_slots() {
        for window in [0, 3] {
            let spec = ProfileSpec { slots: 2, prepare_window: window, ..Profile::default_spec() };
            assert_eq!(
                Profile::custom(spec),
                Err(ProfileError::PrepareWindow { window, slots: 2 })
            );
        }
    }

    #[test]
    fn custom_profile_refuses_finalise_before_the_next_launch_above_depth_one() {
        let spec =
            ProfileSpec { finalise: FinaliseOrder::BeforeNextLaunch, ..Profile::default_spec() };
        assert_eq!(Profile::custom(spec), Err(ProfileError::FinaliseOrderDepth { depth: 2 }));
        let depth_one = ProfileSpec { launch_depth: 1, ..spec };
        assert_eq!(
            Profile::custom(depth_one).map(|p| p.finalise_order()),
            Ok(FinaliseOrder::BeforeNextLaunch)
        );
    }

    #[test]
    fn the_depth_one_preset_is_named_depth_one() {
        assert_eq!(Profile::depth_one().name(), "depth-one");
        assert_eq!(Profile::depth_one().spec().name, "depth-one");
        assert_eq!(Profile::depth_one().launch_depth().get(), 1);
    }

    #[test]
    fn custom_profile_on_stream_sync_is_refused_above_depth_one_and_accepted_at_one() {
        for depth in [2, 3] {
            let spec = ProfileSpec {
                slots: 3,
                launch_depth: depth,
                verdict: VerdictChannel::StreamSync,
                ..Profile::default_spec()
            };
            assert_eq!(
                Profile::custom(spec),
                Err(ProfileError::SyncChannelDepth { depth }),
                "depth {depth}"
            );
        }
        let spec = ProfileSpec {
            slots: 3,
            launch_depth: 1,
            verdict: VerdictChannel::StreamSync,
            ..Profile::default_spec()
        };
        let profile = Profile::custom(spec).expect("stream sync at depth one is valid");
        assert_eq!(profile.verdict(), VerdictChannel::StreamSync);
        assert_eq!(profile.launch_depth().get(), 1);
    }

    #[test]
    fn custom_profile_refuses_zero_recovery_attempts() {
        let spec = ProfileSpec { recovery_attempts: 0, ..Profile::default_spec() };
        assert_eq!(Profile::custom(spec), Err(ProfileError::RecoveryAttempts));
    }
}
