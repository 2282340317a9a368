//! A run as the callbacks see it, the submit request, and a run's state (`run_lane_run_state`).

use core::ffi::c_void;

/// A run as a callback sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunInfo {
    /// The run id `run_lane_submit` returned. A callback may come before the submitting
    /// thread sees that id; match on `tag` instead.
    pub run: u64,
    /// The run's pipeline slot (its device buffers are the slot's).
    pub slot: u8,
    /// Whether the request carried a tag.
    pub has_tag: bool,
    /// The request's tag (the runtime's dispatch id).
    pub tag: u64,
    /// Whether the run collects diagnostics (it runs alone, at depth one).
    pub diagnostics: bool,
    /// The submit's `user` (ABI 11): the runtime's per-run state, passed back unchanged.
    pub user: *mut c_void,
}

/// What the two launch callbacks receive: the run and its slot's device buffers. On ACL the
/// pointers are device addresses; on the simulator they are simulator addresses that must
/// not be dereferenced.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunArgs {
    /// The run.
    pub info: RunLaneRunInfo,
    /// The slot's status header: the runtime latches its codes here.
    pub status_header: *mut c_void,
    /// The slot's timing buffer: device start and end, two little-endian u64 nanoseconds.
    pub timing: *mut c_void,
    /// The slot's handshake region: AICore workers report here; the AICPU kernel waits on it.
    pub handshake: *mut c_void,
    /// The slot's result record region, 280 bytes (ABI 4): the runtime's device side
    /// publishes the run's terminal record here, stamped with `epoch`, writing the
    /// `published` word last (docs/embedding.md). A run is success only on its own published
    /// ok record.
    pub record: *mut c_void,
    /// The run's epoch (ABI 4): process-unique, never 0. The record counts only when its
    /// `published` word equals it. The submit's own `epoch` when it set `has_epoch` (ABI 11).
    pub epoch: u64,
    /// The launch is queued behind a run still on the pair (ABI 11): only such a launch may
    /// be declined (`RUN_LANE_LAUNCH_DECLINED`).
    pub queued: bool,
}

/// One run to submit. `RUN_LANE_INIT(submit)` (zeroed, `size` set) is a plain run; a zeroed
/// struct without its size is refused (ABI 13).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneSubmit {
    /// `sizeof(RunLaneSubmit)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library reads only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Whether `tag` is set.
    pub has_tag: bool,
    /// The runtime's dispatch id; two live runs may not share one. Callbacks receive it.
    pub tag: u64,
    /// Collect diagnostics: the run runs alone, at depth one.
    pub diagnostics: bool,
    /// Copy the outputs back when the run succeeds (passed to `finalise`).
    pub copy_back: bool,
    /// Whether `key` is set (ABI 11).
    pub has_key: bool,
    /// The run's ordering key (ABI 11; the runtime's dispatch order): the run goes ahead of
    /// the unlaunched keyed runs with a greater key already in the lane, so it is prepared,
    /// launched and delivered before them. It never passes a launched run, a run without a
    /// key or a publication; equal keys keep submission order.
    pub key: u64,
    /// Submit held (ABI 11): the run is prepared as usual and launched only after
    /// `run_lane_activate`; the runs behind it wait behind it.
    pub held: bool,
    /// Whether `epoch` is set (ABI 11).
    pub has_epoch: bool,
    /// The runtime's own epoch for the run's result record (ABI 11), passed to the launch
    /// callbacks as `RunLaneRunArgs::epoch`. Refused (`REFUSED`) when 0, when not above the
    /// last epoch the lane accepted (a repeat included), and when a lane's runs mix their own
    /// epochs with the lane's: set it for every run of a lane or for none.
    pub epoch: u64,
    /// The runtime's per-run state (ABI 11): given back in every callback's
    /// `RunLaneRunInfo::user` and in the run's outcome (`RunLaneOutcome::run_user`).
    pub user: *mut c_void,
}

impl Default for RunLaneSubmit {
    /// A plain run, `size` set.
    fn default() -> Self {
        Self {
            size: size_of::<Self>() as u32,
            has_tag: false,
            tag: 0,
            diagnostics: false,
            copy_back: false,
            has_key: false,
            key: 0,
            held: false,
            has_epoch: false,
            epoch: 0,
            user: core::ptr::null_mut(),
        }
    }
}

/// Where a run stands (`RunLaneRunStatus::state`, ABI 11).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLaneRunState {
    /// Waiting for its turn to prepare.
    Queued = 0,
    /// Its `prepare` was called and has not returned an answer the lane took.
    Preparing = 1,
    /// Prepared, not launched: waiting for its turn, its activation (held), or an empty pair
    /// (its launch declined); also while an unlaunched run is finalised (cancelled, failed).
    Prepared = 2,
    /// Its launch was made: it finishes and gets its own verdict (a cancel is `STARTED`).
    Launched = 3,
    /// Its outcome is decided: waiting for its turn, or ready to take.
    Done = 4,
}

/// What `run_lane_run_state` reports (ABI 11).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLaneRunStatus {
    /// `sizeof(RunLaneRunStatus)` as the caller's header declares it (ABI 13; `RUN_LANE_INIT` sets it): the library writes only that many bytes. See "Sizes" in docs/embedding.md.
    pub size: u32,
    /// Where the run stands.
    pub state: RunLaneRunState,
    /// Submitted held and not activated yet.
    pub held: bool,
    /// How many times `launch_aicore` declined its launch.
    pub declines: u32,
    /// Whether `key` is set.
    pub has_key: bool,
    /// Its ordering key.
    pub key: u64,
}
