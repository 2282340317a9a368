//! [`AclDevice`]: opening and probing a device, and the `Device` methods, one ACL call each.

use core::ffi::c_void;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use ascend_cl_sys::{
    ACL_ERROR_INTERNAL_ERROR, ACL_ERROR_REPEAT_INITIALIZE, ACL_EVENT_RECORDED_STATUS_COMPLETE,
    ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE,
    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS, Acl, AclrtEvent, AclrtStream, Search,
};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, Profile, Timestamp};
use lane_driver::{
    CompletionWaiter, Device, DevicePtr, EventHandle, HostPtr, LaunchContext, PinnedCopies,
};

use crate::error::AclError;
use crate::issued::{self, Refused};
use crate::notice::NoticeMonitor;
use crate::soc::profile_for_soc;
use crate::stream_ids::StreamIds;
use crate::waiter::AclWaiter;

/// The optional symbol that gives event timestamps ([`Device::event_timestamps`]).
const EVENT_GET_TIMESTAMP: &str = "aclrtEventGetTimestamp";

/// Which library to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Library {
    /// The search a user's machine runs (`ascend_cl_sys::Search::from_env`):
    /// `RUN_LANE_ACL_LIB`, `ASCEND_HOME_PATH`, `ASCEND_TOOLKIT_HOME`, the default install
    /// prefixes, a bare `dlopen`.
    #[default]
    Search,
    /// This file and nothing else (the fake in tests, a non-standard install).
    Path(PathBuf),
    /// This file and nothing else, with the symbols `hidden` names looked up as absent
    /// (`ascend_cl_sys::Search::hiding`): the library as an older or trimmed CANN would be.
    /// A hidden required symbol refuses the open; a hidden optional one degrades what it
    /// serves (without `aclrtSetExceptionInfoCallback` or a getter the notice monitor is
    /// [`NoticeMonitor::Unavailable`]; without `aclrtStreamGetId` no stream has an id). For
    /// tests of those paths on the fake, which has every symbol, and for a process that must
    /// keep the lane off an optional call.
    PathHiding {
        /// The library.
        path: PathBuf,
        /// The symbols looked up as absent.
        hidden: Vec<String>,
    },
}

impl Library {
    /// Loads it; `prefer_loaded`: the copy the process already loaded first, if any
    /// (`ascend_cl_sys::Search::prefer_loaded`).
    fn load(&self, prefer_loaded: bool) -> Result<Acl, ascend_cl_sys::LoadError> {
        let search = Search::from_env().prefer_loaded(prefer_loaded);
        match self {
            Self::Search => search.open(),
            Self::Path(path) => search.explicit(path).open(),
            Self::PathHiding { path, hidden } => {
                search.explicit(path).hiding(hidden.iter().cloned()).open()
            }
        }
    }
}

/// How to open a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclConfig {
    /// The library.
    pub library: Library,
    /// The logical device id (`aclrtSetDevice`'s argument).
    pub device_id: i32,
    /// The profile to run with; `None` probes `aclrtGetSocName` for it.
    pub profile: Option<Profile>,
    /// Whether to call `aclInit` (the embedding runtime normally owns it; 100002, already
    /// initialised, counts as success).
    pub init: bool,
    /// Whether to install the library's device fault notice monitor (L-19): it takes the
    /// process's one callback slot (`aclrtSetExceptionInfoCallback`; the last registration
    /// wins, and HCCL or the embedding may own it). Off: the embedding forwards notices with
    /// `lane_driver::report_device_fault`.
    pub notice_monitor: bool,
    /// Use the libascendcl the process already loaded (the embedding runtime's copy) when
    /// there is one, before `library` (`ascend_cl_sys::Search::prefer_loaded`): no second
    /// copy is mapped, so the lane shares the runtime's ACL state. [`AclDevice::library_path`]
    /// names the copy used.
    pub prefer_loaded: bool,
}

impl Default for AclConfig {
    /// The default library search, device 0, the probed profile, no `aclInit`.
    fn default() -> Self {
        Self {
            library: Library::Search,
            device_id: 0,
            profile: None,
            init: false,
            notice_monitor: false,
            prefer_loaded: false,
        }
    }
}

/// One Ascend device, driven through ACL: the lane's [`Device`].
///
/// Every method binds the calling thread first if it is not bound (a new thread, or any
/// thread after a reset), makes its one ACL call, and on failure reads `aclGetRecentErrMsg`
/// (the driver takes it with [`Device::recent_error_message`]).
pub struct AclDevice {
    /// Shared with every [`WorkerBinding`], so a worker thread binds through the same library.
    acl: Arc<Acl>,
    device_id: i32,
    /// How many devices the library saw at open.
    device_count: u32,
    soc_name: Option<String>,
    /// The device op timeout the device accepted (µs, after its rounding).
    op_timeout_us: u64,
    /// This device's use of the process's one op timeout (L-21), given back on drop.
    _op_timeout: OpTimeoutLease,
    /// Whether `open` called `aclInit` and got 0 (not 100002), so [`AclDevice::finalize`]
    /// may undo it.
    initialised_here: bool,
    /// `aclGetRecentErrMsg` after the last call, when that call failed.
    message: Option<String>,
    /// Pinned host allocations made since the last reset (`aclrtMallocHost`): address ->
    /// size. `write_host`, `read_host` and the async copies touch only ranges inside one, so
    /// a bad `HostPtr` is 100000, never undefined behaviour; a reset forgets them all.
    pinned: BTreeMap<u64, usize>,
    /// Force resets made on this device id so far by any lane of the process (a force reset
    /// unbinds every thread from the device, whichever lane made it), shared with every
    /// [`WorkerBinding`]: a thread bound before the latest one must bind again.
    resets: Arc<AtomicU64>,
    /// The device's clock starts here ([`AclDevice::clock`]).
    epoch: Instant,
    /// The ids (`aclrtStreamGetId`) of this device's live streams and of those that died
    /// less than [`LATE_NOTICE_BOUND_NS`](crate::LATE_NOTICE_BOUND_NS) ago, taken while each
    /// handle was live: which a fault notice may name and concern this device (L-19,
    /// decision 0025).
    stream_ids: StreamIds,
    /// How installing the fault notice monitor went.
    notice_monitor: NoticeMonitor,
}

/// What a host worker thread needs to bind itself to the lane's device: a `Clone + Send +
/// Sync` value from [`AclDevice::worker_binding`].
///
/// ACL binds a device per thread (`aclrtSetDevice`, ascend-cl.md §2.1), and the lane's
/// [`AclDevice`] tracks only the thread it runs on. A worker that runs the runner's prepare or
/// finalise off the lane thread calls [`WorkerBinding::bind`] before its first runner call,
/// and again once [`WorkerBinding::resets`] has moved past the count it bound at (a force
/// reset unbinds every thread).
#[derive(Clone, Debug)]
pub struct WorkerBinding {
    acl: Arc<Acl>,
    device_id: i32,
    resets: Arc<AtomicU64>,
}

impl WorkerBinding {
    /// `aclrtSetDevice(device_id)` on the calling thread.
    ///
    /// # Errors
    ///
    /// `aclrtSetDevice`'s code.
    pub fn bind(&self) -> Result<(), AclCode> {
        let code = set_device(&self.acl, self.device_id, &self.resets);
        AclCode::from_raw(code).map_or(Ok(()), Err)
    }

    /// The loaded library, for the runner's own calls on the worker thread.
    #[must_use]
    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// The lane's logical device id.
    #[must_use]
    pub const fn device_id(&self) -> i32 {
        self.device_id
    }

    /// How many force resets the lane's device id has had in this process (by any lane): a
    /// worker that bound when this was lower must bind again before its next call.
    #[must_use]
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for AclDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclDevice")
            .field("library", &self.acl.path())
            .field("device_id", &self.device_id)
            .field("soc_name", &self.soc_name)
            .field("op_timeout_us", &self.op_timeout_us)
            .finish_non_exhaustive()
    }
}

impl AclDevice {
    /// Opens `config.device_id`: loads the library, calls `aclInit` if asked, probes (a
    /// device count above 0, the id in range, the SoC's profile unless `config.profile`
    /// names one), binds the calling thread, and sets the device op timeout from the
    /// profile. Returns the device and the profile the lane must run with.
    ///
    /// # Errors
    ///
    /// [`AclError`], each with a hint: no usable library (missing, a stub, a missing
    /// symbol), a failed `aclInit`, no device, a bad device id, an unknown SoC without an
    /// explicit profile, an op timeout not below the host wait, or a failed call.
    pub fn open(config: AclConfig) -> Result<(Self, Profile), AclError> {
        let acl = config.library.load(config.prefer_loaded)?;
        let initialised_here = if config.init {
            // SAFETY: a NULL config path is allowed (ascend-cl.md §2.1).
            let code = unsafe { acl.aclInit(core::ptr::null()) };
            if code != ACL_ERROR_REPEAT_INITIALIZE {
                acl.check("aclInit", code).map_err(AclError::Init)?;
            }
            code == ACL_SUCCESS
        } else {
            false
        };
        let resets = reset_count(config.device_id);
        match Self::probe(&acl, &config, &resets) {
            Ok(Probed {
                device_count,
                soc_name,
                profile,
                op_timeout_us,
                op_timeout,
            }) => {
                let acl = Arc::new(acl);
                let notice_monitor = if config.notice_monitor {
                    crate::notice::install(&acl)
                } else {
                    NoticeMonitor::NotAsked
                };
                let device = Self {
                    acl,
                    device_id: config.device_id,
                    device_count,
                    soc_name,
                    op_timeout_us,
                    _op_timeout: op_timeout,
                    initialised_here,
                    message: None,
                    pinned: BTreeMap::new(),
                    resets,
                    epoch: Instant::now(),
                    stream_ids: StreamIds::default(),
                    notice_monitor,
                };
                Ok((device, profile))
            }
            Err(error) => {
                if initialised_here {
                    // Undo only our own init; its code changes nothing about the error.
                    // SAFETY: no arguments; this process initialised ACL above.
                    let _ = unsafe { acl.aclFinalize() };
                }
                Err(error)
            }
        }
    }

    /// The probe, the thread binding and the op timeout, after the library loaded: the SoC
    /// name, the profile and the op timeout the device accepted (µs).
    fn probe(acl: &Acl, config: &AclConfig, resets: &AtomicU64) -> Result<Probed, AclError> {
        let (count, soc_name, profile) = Self::identify(acl, config)?;
        let device_id = config.device_id;
        let host_ns = profile.completion_timeout_ns();
        let device_ns = profile.device_op_timeout_ns();
        if device_ns >= host_ns {
            return Err(AclError::OpTimeout { device_ns, host_ns });
        }
        bind_calling_thread(acl, device_id, resets)?;
        // The device counts in µs; round up so the timeout is never shorter than asked.
        let timeout_us = device_ns.div_ceil(1_000).max(1);
        let (op_timeout, actual_us) = OpTimeoutLease::take(acl, timeout_us)?;
        let actual_ns = actual_us.saturating_mul(1_000);
        if actual_ns >= host_ns {
            return Err(AclError::OpTimeout {
                device_ns: actual_ns,
                host_ns,
            });
        }
        Ok(Probed {
            device_count: count,
            soc_name,
            profile,
            op_timeout_us: actual_us,
            op_timeout,
        })
    }

    /// The profile `config` opens with, without opening a lane's device: loads the library,
    /// checks the device count and id, reads the SoC (unless `config.profile` names the
    /// profile) and binds the calling thread, but sets no op timeout (so it never conflicts
    /// with the one in force, L-21).
    ///
    /// # Errors
    ///
    /// As [`AclDevice::open`], but for the op timeout.
    pub fn probe_profile(config: &AclConfig) -> Result<Profile, AclError> {
        let acl = config.library.load(config.prefer_loaded)?;
        let (_, _, profile) = Self::identify(&acl, config)?;
        bind_calling_thread(&acl, config.device_id, &reset_count(config.device_id))?;
        Ok(profile)
    }

    /// The device count, the SoC name and the profile (`config.profile`, else the SoC's).
    fn identify(acl: &Acl, config: &AclConfig) -> Result<(u32, Option<String>, Profile), AclError> {
        let count = match acl.device_count() {
            Ok(0) => return Err(AclError::NoDevice),
            Ok(count) => count,
            Err(e) => return Err(AclError::DeviceCount(e)),
        };
        let device_id = config.device_id;
        if u32::try_from(device_id).map_or(true, |id| id >= count) {
            return Err(AclError::BadDeviceId { device_id, count });
        }
        let soc_name = acl.soc_name();
        let profile = config
            .profile
            .or_else(|| soc_name.as_deref().and_then(profile_for_soc))
            .ok_or_else(|| AclError::UnknownSoc {
                name: soc_name.clone(),
            })?;
        Ok((count, soc_name, profile))
    }

    /// The loaded library, so the embedding runtime's runner can launch on the lane's
    /// streams (see [`AclDevice::check`] for its own failures).
    #[must_use]
    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// The libascendcl this device runs on: the file the dynamic loader mapped (the copy the
    /// process already loaded, with [`AclConfig::prefer_loaded`] and one loaded).
    #[must_use]
    pub fn library_path(&self) -> &std::path::Path {
        self.acl.path()
    }

    /// The logical device id.
    #[must_use]
    pub const fn device_id(&self) -> i32 {
        self.device_id
    }

    /// How installing the fault notice monitor went ([`AclConfig::notice_monitor`]); its
    /// `Display` is the message for a monitor that could not be installed.
    #[must_use]
    pub const fn notice_monitor(&self) -> &NoticeMonitor {
        &self.notice_monitor
    }

    /// `aclrtMemcpyAsync(dst, len, src, len, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)`: device
    /// work of a known size with no kernel, ordered on `stream` (the device check queues it
    /// to outlast a wait's timeout). Both ranges and the stream are checked as every call's.
    ///
    /// # Errors
    ///
    /// The call's code, or the code of a range or stream this device does not hold.
    pub fn memcpy_device_async(
        &mut self,
        dst: DevicePtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        let lookup = |id| {
            Ok((
                issued::range(id, dst, len)?,
                issued::range(id, src, len)?,
                issued::stream(id, stream)?,
            ))
        };
        self.bound_call_with(lookup, |acl, (dst, src, stream)| {
            // SAFETY: both ranges lie inside allocations live on this device id and the stream
            // is live on it (all looked up); the caller keeps them alive until the stream is
            // synchronized.
            unsafe {
                acl.aclrtMemcpyAsync(
                    dst,
                    len,
                    src.cast_const(),
                    len,
                    ACL_MEMCPY_DEVICE_TO_DEVICE,
                    stream,
                )
            }
        })
    }

    /// The stream ids (`aclrtStreamGetId`) a fault notice may name now and concern this
    /// device (L-19, decision 0025): those of the streams destroyed since the last force reset
    /// less than [`LATE_NOTICE_BOUND_NS`](crate::LATE_NOTICE_BOUND_NS) ago, oldest first, then
    /// the live streams', oldest first; each once. An id a stream had when it died at or
    /// before the last force reset is left out for that bound, even where a live stream has
    /// taken the number. Empty on a library without `aclrtStreamGetId`.
    pub fn stream_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.stream_ids_at(self.clock())
    }

    /// [`AclDevice::stream_ids`] as they will be at `now` on this device's clock
    /// ([`Device::now`]), if no stream is created or dies before then.
    pub fn stream_ids_at(&self, now: Timestamp) -> impl Iterator<Item = u32> + '_ {
        self.stream_ids.matching(now).into_iter()
    }

    /// Whether `notice`, read at `now` on this device's clock ([`Device::now`]), concerns
    /// this device (L-19, decision 0025): it names this device and a stream id
    /// [`AclDevice::stream_ids_at`] lists at `now`. [`Device::notice_concerns`] is this at
    /// the clock's reading.
    #[must_use]
    pub fn notice_concerns_at(&self, notice: &FaultNotice, now: Timestamp) -> bool {
        u32::try_from(self.device_id).is_ok_and(|device| device == notice.device)
            && self.stream_ids.concerns(notice.stream_id, now)
    }

    /// The device's clock: nanoseconds since the device was opened. [`Device::now`] reads
    /// it; so does the notice matching, which holds the device only shared.
    fn clock(&self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Takes a new stream's id while its handle is live (the number outlives the handle);
    /// without `aclrtStreamGetId`, or on a failed call, the stream has none.
    fn take_stream_id(&mut self, raw: AclrtStream, stream: StreamHandle) {
        let mut id: i32 = -1;
        // SAFETY: `raw` was just created by this library; `id` is a writable int32_t.
        let got = unsafe { self.acl.aclrtStreamGetId(raw, &mut id) };
        let Ok(ACL_SUCCESS) = got else {
            return;
        };
        let Ok(id) = u32::try_from(id) else {
            return;
        };
        let now = self.clock();
        self.stream_ids.created(stream, id, now);
    }

    /// How many devices the library saw at open.
    #[must_use]
    pub const fn device_count(&self) -> u32 {
        self.device_count
    }

    /// What `aclrtGetSocName` returned at open (`None` for NULL).
    #[must_use]
    pub fn soc_name(&self) -> Option<&str> {
        self.soc_name.as_deref()
    }

    /// The device op timeout in force, in µs, as the device rounded it.
    #[must_use]
    pub const fn op_timeout_us(&self) -> u64 {
        self.op_timeout_us
    }

    /// A handle a host worker thread binds itself with ([`WorkerBinding::bind`]) before it
    /// makes the runner's calls off the lane thread.
    #[must_use]
    pub fn worker_binding(&self) -> WorkerBinding {
        WorkerBinding {
            acl: Arc::clone(&self.acl),
            device_id: self.device_id,
            resets: Arc::clone(&self.resets),
        }
    }

    /// Binds the calling thread (`aclrtSetDevice`) unless it is already bound since the last
    /// reset. A runner calls this before its own calls on a thread of its choosing.
    ///
    /// # Errors
    ///
    /// `aclrtSetDevice`'s code (its message is kept, as for every failure).
    pub fn bind_thread(&mut self) -> Result<(), AclCode> {
        // Bound since the device id's last reset, and no other device bound on this thread
        // since: ACL keeps one current device per thread, so two devices driven from one
        // thread each bind again when the other bound last. One thread-local read: nothing
        // per thread is kept in the device, so threads that come and go cost nothing.
        let resets = self.resets.load(Ordering::Acquire);
        if bound()
            == Some(Bound {
                device_id: self.device_id,
                resets,
            })
        {
            return Ok(());
        }
        self.set_device()
    }

    /// A runner's own ACL call result: `Ok` for 0; otherwise the code, with
    /// `aclGetRecentErrMsg` kept so the driver attaches it to the run's outcome, as for the
    /// device's own calls.
    ///
    /// # Errors
    ///
    /// The non-zero `code`.
    pub fn check(&mut self, code: i32) -> Result<(), AclCode> {
        match AclCode::from_raw(code) {
            None => {
                self.message = None;
                Ok(())
            }
            Some(failure) => {
                self.message = self.acl.recent_error_message();
                Err(failure)
            }
        }
    }

    /// `aclFinalize`, if [`AclDevice::open`] initialised ACL (never from a destructor: ACL's
    /// teardown order at exit is undefined, ascend-cl.md §2.1). Handles must be released
    /// first.
    ///
    /// # Errors
    ///
    /// `aclFinalize`'s code.
    pub fn finalize(mut self) -> Result<(), AclCode> {
        if !self.initialised_here {
            return Ok(());
        }
        // SAFETY: no arguments; this process initialised ACL in `open`.
        let code = unsafe { self.acl.aclFinalize() };
        self.check(code)
    }

    /// A call made on a bound thread, its code checked.
    /// What follows a force reset of this device id, the lane's or the runtime's: every
    /// thread must bind again before its next call, and every handle is forgotten (never
    /// destroyed, freed or touched), pinned allocations included.
    fn forget_after_reset(&mut self) {
        // The count moves: every thread's binding to this device id is stale from now on.
        self.resets.fetch_add(1, Ordering::AcqRel);
        self.pinned.clear();
        // Every handle on this device id is dead, whichever lane made it: refused from now on.
        issued::retire_device(self.device_id);
        // Every live stream died with the reset: for the late-notice bound its number names a
        // stream the reset already recovered, whatever stream takes it next (decision 0025).
        let now = self.clock();
        self.stream_ids.reset(now);
        crate::notice::register_again(&self.acl);
    }

    fn bound_call(&mut self, call: impl FnOnce(&Acl) -> i32) -> Result<(), AclCode> {
        self.bind_thread()?;
        let code = call(&self.acl);
        self.check(code)
    }

    /// A call on a bound thread whose handles `lookup` resolves first ([`issued`]): a handle
    /// no device of this process holds live on this device id is refused with its code and a
    /// message, and ACL is never called with it.
    fn bound_call_with<T>(
        &mut self,
        lookup: impl FnOnce(i32) -> Result<T, Refused>,
        call: impl FnOnce(&Acl, T) -> i32,
    ) -> Result<(), AclCode> {
        self.bind_thread()?;
        let raw = lookup(self.device_id).map_err(|refused| self.refuse(refused))?;
        let code = call(&self.acl, raw);
        self.check(code)
    }

    /// Keeps a refusal's message (for [`Device::recent_error_message`]) and answers its code.
    fn refuse(&mut self, refused: Refused) -> AclCode {
        self.message = Some(refused.message);
        refused.code
    }

    /// `[ptr, ptr + len)` as a host pointer when it lies inside one pinned allocation made
    /// since the last reset; otherwise 100000 (`ACL_ERROR_INVALID_PARAM`), with a message, and
    /// nothing touched.
    fn pinned_range(&mut self, ptr: HostPtr, len: usize) -> Result<*mut u8, AclCode> {
        let inside = self
            .pinned
            .range(..=ptr.0)
            .next_back()
            .is_some_and(|(&base, &size)| {
                usize::try_from(ptr.0 - base)
                    .ok()
                    .and_then(|offset| offset.checked_add(len))
                    .is_some_and(|end| end <= size)
            });
        if inside {
            return Ok(ptr.0 as usize as *mut u8);
        }
        self.message = Some(format!(
            "host range {:#x}+{len} is not inside pinned memory from aclrtMallocHost",
            ptr.0
        ));
        Err(AclCode::InvalidParam)
    }

    /// `aclrtMemcpyAsync` between a device range and a checked pinned range.
    fn memcpy_async(
        &mut self,
        host: HostPtr,
        device: DevicePtr,
        len: usize,
        kind: i32,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        let host = self.pinned_range(host, len)?.cast::<c_void>();
        let lookup = |id| Ok((issued::range(id, device, len)?, issued::stream(id, stream)?));
        self.bound_call_with(lookup, |acl, (device, stream)| {
            let (dst, src) = if kind == ACL_MEMCPY_HOST_TO_DEVICE {
                (device, host.cast_const())
            } else {
                (host, device.cast_const())
            };
            // SAFETY: the host side lies inside a live pinned allocation (checked above) that
            // stays alive until freed, and the caller frees it only after an event proved the
            // copy finished; the device side lies inside a live allocation of this device id
            // and the stream is live on it (both looked up).
            unsafe { acl.aclrtMemcpyAsync(dst, len, src, len, kind, stream) }
        })
    }

    /// A call that returned success but no handle: a broken library (a stub passes every
    /// call), reported as an internal error so the lane never holds a NULL handle.
    fn null_handle(&mut self, call: &str) -> AclCode {
        self.message = Some(format!("{call} returned success and a NULL handle"));
        AclCode::from_raw(ACL_ERROR_INTERNAL_ERROR).unwrap_or(AclCode::Unknown(-1))
    }
}

/// A thread's binding: the device it bound last through this library (`aclrtSetDevice` makes
/// it the thread's one current device) and that device id's force reset count when it did.
/// Keyed by device id alone: a process drives one ACL library, whose current device is per
/// thread for the whole process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bound {
    device_id: i32,
    resets: u64,
}

thread_local! {
    /// This thread's binding; `None` before its first bind. A force reset leaves it stale
    /// (its count is behind), which every check sees.
    static BOUND: core::cell::Cell<Option<Bound>> = const { core::cell::Cell::new(None) };
}

fn bound() -> Option<Bound> {
    BOUND.with(core::cell::Cell::get)
}

fn set_bound(bound: Option<Bound>) {
    BOUND.with(|cell| cell.set(bound));
}

/// `aclrtSetDevice(device_id)` at open, the binding noted for the calling thread.
fn bind_calling_thread(acl: &Acl, device_id: i32, resets: &AtomicU64) -> Result<(), AclError> {
    let code = set_device(acl, device_id, resets);
    acl.check("aclrtSetDevice", code)
        .map_err(|source| AclError::SetDevice { device_id, source })
}

/// `aclrtSetDevice(device_id)` on the calling thread, its raw code; on success the thread's
/// binding is noted with the count `resets` had before the call (a reset made meanwhile
/// leaves the binding stale, so the next call binds again).
fn set_device(acl: &Acl, device_id: i32, resets: &AtomicU64) -> i32 {
    let resets = resets.load(Ordering::Acquire);
    // SAFETY: plain value.
    let code = unsafe { acl.aclrtSetDevice(device_id) };
    if code == ACL_SUCCESS {
        set_bound(Some(Bound { device_id, resets }));
    }
    code
}

/// The force reset count of `device_id`, one per device id for the whole process: a force
/// reset unbinds every thread from its device, whichever lane made it (ascend-cl.md §2.1).
fn reset_count(device_id: i32) -> Arc<AtomicU64> {
    static COUNTS: Mutex<BTreeMap<i32, Arc<AtomicU64>>> = Mutex::new(BTreeMap::new());
    let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(counts.entry(device_id).or_default())
}

/// What the probe found.
struct Probed {
    device_count: u32,
    soc_name: Option<String>,
    profile: Profile,
    /// The op timeout the device accepted, µs.
    op_timeout_us: u64,
    /// The device's use of the process's op timeout.
    op_timeout: OpTimeoutLease,
}

/// The device op timeout in force in this process (L-21): `aclrtSetOpExecuteTimeOutV2` is
/// process-wide on real ACL (device-truth §5), so every lane of a process uses one value. The
/// first device opened sets it; the others count themselves as users of it.
#[derive(Debug)]
struct OpTimeoutInForce {
    /// What was asked (µs).
    asked_us: u64,
    /// What the device accepted (µs, after its rounding).
    actual_us: u64,
    /// Open devices using it.
    users: usize,
}

static OP_TIMEOUT: std::sync::Mutex<Option<OpTimeoutInForce>> = std::sync::Mutex::new(None);

/// The device op timeout in force in this process (µs, as asked), if a device is open (L-21):
/// a lane asking for another value is refused until every device using it is closed.
#[must_use]
pub fn op_timeout_in_force_us() -> Option<u64> {
    OP_TIMEOUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .map(|current| current.asked_us)
}

/// One open device's use of the process's op timeout; the last one given back lets the
/// next device set another value.
#[derive(Debug)]
struct OpTimeoutLease;

impl OpTimeoutLease {
    /// Uses the op timeout in force if it is `timeout_us`, or sets it when none is: the
    /// lease and the value the device accepted (µs).
    fn take(acl: &Acl, timeout_us: u64) -> Result<(Self, u64), AclError> {
        let mut in_force = OP_TIMEOUT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(current) = in_force.as_mut() {
            if current.asked_us != timeout_us {
                return Err(AclError::OpTimeoutInForce {
                    asked_us: timeout_us,
                    in_force_us: current.asked_us,
                });
            }
            current.users += 1;
            return Ok((Self, current.actual_us));
        }
        let mut actual_us = 0_u64;
        // SAFETY: `actual_us` is a writable u64.
        let code = unsafe { acl.aclrtSetOpExecuteTimeOutV2(timeout_us, &mut actual_us) };
        acl.check("aclrtSetOpExecuteTimeOutV2", code)
            .map_err(AclError::SetOpTimeout)?;
        // The device rounds up to its interval: the rounded value must still be below the
        // host wait (checked by the caller).
        let actual_us = if actual_us == 0 {
            timeout_us
        } else {
            actual_us
        };
        *in_force = Some(OpTimeoutInForce {
            asked_us: timeout_us,
            actual_us,
            users: 1,
        });
        Ok((Self, actual_us))
    }
}

impl Drop for OpTimeoutLease {
    fn drop(&mut self) {
        let mut in_force = OP_TIMEOUT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(current) = in_force.as_mut() {
            current.users = current.users.saturating_sub(1);
            if current.users == 0 {
                *in_force = None;
            }
        }
    }
}

impl Device for AclDevice {
    /// [`AclDevice::notice_concerns_at`] at the clock's reading.
    fn notice_concerns(&self, notice: &FaultNotice) -> bool {
        self.notice_concerns_at(notice, self.clock())
    }

    fn now(&mut self) -> Timestamp {
        self.clock()
    }

    /// ACL attributes nothing to runs: ignored.
    fn launch_context(&mut self, _context: Option<LaunchContext>) {}

    fn set_device(&mut self) -> Result<(), AclCode> {
        let code = set_device(&self.acl, self.device_id, &self.resets);
        self.check(code)
    }

    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        // SAFETY: plain value.
        self.bound_call(|acl| unsafe { acl.aclrtSynchronizeDeviceWithTimeout(timeout_ms) })
    }

    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        let id = self.device_id;
        // No bind first: the reset names its device, and a poisoned device may refuse the
        // bind. Never a plain reset, before or after (ascend-cl.md §2.1: 507007).
        // SAFETY: plain value.
        let code = unsafe { self.acl.aclrtResetDeviceForce(id) };
        // Whatever it returned, every handle and binding is gone.
        self.forget_after_reset();
        self.check(code)
    }

    fn adopt_reset(&mut self) {
        // The runtime reset the device (L-24): the same as after the lane's own reset.
        self.forget_after_reset();
    }

    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        let mut stream: AclrtStream = core::ptr::null_mut();
        // SAFETY: `stream` is a writable aclrtStream; priority 0 and flag 0 (an ordinary
        // stream: PERSISTENT and friends make sync return at once, ascend-cl.md §2.3).
        self.bound_call(|acl| unsafe { acl.aclrtCreateStreamWithConfig(&mut stream, 0, 0) })?;
        if stream.is_null() {
            return Err(self.null_handle("aclrtCreateStreamWithConfig"));
        }
        let handle = issued::issue_stream(self.device_id, stream);
        self.take_stream_id(stream, handle);
        Ok(handle)
    }

    fn destroy_stream(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up).
            |acl, s| unsafe { acl.aclrtDestroyStream(s) },
        )?;
        issued::retire_stream(stream);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn destroy_stream_force(&mut self, stream: StreamHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up).
            |acl, s| unsafe { acl.aclrtDestroyStreamForce(s) },
        )?;
        issued::retire_stream(stream);
        let now = self.clock();
        self.stream_ids.destroyed(stream, now);
        Ok(())
    }

    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        let mut event: AclrtEvent = core::ptr::null_mut();
        // Where the library gives timestamps every event records them: the boundary and the
        // start event need them, and the driver makes both through this one call.
        let flag = if self.event_timestamps() {
            ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE
        } else {
            ACL_EVENT_SYNC
        };
        // SAFETY: `event` is a writable aclrtEvent; the flag is non-zero (0 is 107000).
        self.bound_call(|acl| unsafe { acl.aclrtCreateEventExWithFlag(&mut event, flag) })?;
        if event.is_null() {
            return Err(self.null_handle("aclrtCreateEventExWithFlag"));
        }
        Ok(issued::issue_event(self.device_id, event))
    }

    fn record_event(&mut self, event: EventHandle, stream: StreamHandle) -> Result<(), AclCode> {
        let lookup = |id| Ok((issued::event(id, event)?, issued::stream(id, stream)?));
        // SAFETY: an event and a stream live on this device id (looked up).
        self.bound_call_with(lookup, |acl, (e, s)| unsafe { acl.aclrtRecordEvent(e, s) })
    }

    fn synchronize_event(&mut self, event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); the timeout is the driver's.
            |acl, e| unsafe { acl.aclrtSynchronizeEventWithTimeout(e, timeout_ms) },
        )
    }

    fn query_event(&mut self, event: EventHandle) -> Result<bool, AclCode> {
        let mut status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); `status` is a writable slot.
            |acl, e| unsafe { acl.aclrtQueryEventStatus(e, &mut status) },
        )?;
        Ok(status == ACL_EVENT_RECORDED_STATUS_COMPLETE)
    }

    /// `true` when the library exports `aclrtEventGetTimestamp` (an optional symbol; a
    /// [`Library::PathHiding`] that hides it turns timestamps off).
    fn event_timestamps(&self) -> bool {
        self.acl.has_optional(EVENT_GET_TIMESTAMP)
    }

    fn event_timestamp(&mut self, event: EventHandle) -> Result<u64, AclCode> {
        let mut us = 0_u64;
        let mut unavailable = false;
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up); `us` is a writable u64.
            |acl, e| match unsafe { acl.aclrtEventGetTimestamp(e, &mut us) } {
                Ok(code) => code,
                Err(_) => {
                    unavailable = true;
                    ACL_SUCCESS
                }
            },
        )?;
        if unavailable {
            self.message = Some(format!(
                "{EVENT_GET_TIMESTAMP} is not in the loaded library"
            ));
            return Err(AclCode::RtFeatureNotSupport);
        }
        // ACL gives microseconds of the device clock.
        Ok(us.saturating_mul(1_000))
    }

    fn synchronize_stream(&mut self, stream: StreamHandle, timeout_ms: i32) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::stream(id, stream),
            // SAFETY: a stream live on this device id (looked up); the timeout is the driver's.
            |acl, s| unsafe { acl.aclrtSynchronizeStreamWithTimeout(s, timeout_ms) },
        )
    }

    fn destroy_event(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::event(id, event),
            // SAFETY: an event live on this device id (looked up).
            |acl, e| unsafe { acl.aclrtDestroyEvent(e) },
        )?;
        issued::retire_event(event);
        Ok(())
    }

    fn malloc(&mut self, size: usize) -> Result<DevicePtr, AclCode> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a writable pointer slot.
        self.bound_call(|acl| unsafe {
            acl.aclrtMalloc(&mut ptr, size, ACL_MEM_MALLOC_HUGE_FIRST)
        })?;
        if ptr.is_null() {
            return Err(self.null_handle("aclrtMalloc"));
        }
        Ok(issued::issue_allocation(self.device_id, ptr, size))
    }

    fn free(&mut self, ptr: DevicePtr) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::allocation(id, ptr),
            // SAFETY: an allocation live on this device id (looked up: its start).
            |acl, p| unsafe { acl.aclrtFree(p) },
        )?;
        issued::retire_allocation(ptr);
        Ok(())
    }

    fn memcpy_to_device(&mut self, dst: DevicePtr, src: &[u8]) -> Result<(), AclCode> {
        self.bound_call_with(
            |id| issued::range(id, dst, src.len()),
            // SAFETY: `src` is readable for its length; `[dst, dst + src.len())` lies inside an
            // allocation live on this device id (looked up).
            |acl, dst| unsafe {
                acl.aclrtMemcpy(
                    dst,
                    src.len(),
                    src.as_ptr().cast(),
                    src.len(),
                    ACL_MEMCPY_HOST_TO_DEVICE,
                )
            },
        )
    }

    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        let len = dst.len();
        self.bound_call_with(
            |id| issued::range(id, src, len),
            // SAFETY: `dst` is writable for its length; `[src, src + len)` lies inside an
            // allocation live on this device id (looked up).
            |acl, src| unsafe {
                acl.aclrtMemcpy(
                    dst.as_mut_ptr().cast(),
                    len,
                    src,
                    len,
                    ACL_MEMCPY_DEVICE_TO_HOST,
                )
            },
        )
    }

    fn stream_wait_event(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        let lookup = |id| Ok((issued::stream(id, stream)?, issued::event(id, event)?));
        // SAFETY: a stream and an event (created with ACL_EVENT_SYNC) live on this device id
        // (looked up).
        self.bound_call_with(lookup, |acl, (s, e)| unsafe {
            acl.aclrtStreamWaitEvent(s, e)
        })
    }

    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take()
    }

    /// A waiter sharing this device's library, device id, reset count and clock: it binds
    /// its own thread before its first wait and after every force reset.
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        Ok(Box::new(AclWaiter::new(self, self.epoch)))
    }

    fn pinned_copies(&mut self) -> Option<&mut dyn PinnedCopies> {
        Some(self)
    }
}

impl PinnedCopies for AclDevice {
    fn malloc_host(&mut self, size: usize) -> Result<HostPtr, AclCode> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is a writable pointer slot.
        self.bound_call(|acl| unsafe { acl.aclrtMallocHost(&mut ptr, size) })?;
        if ptr.is_null() {
            return Err(self.null_handle("aclrtMallocHost"));
        }
        let address = ptr as usize as u64;
        self.pinned.insert(address, size);
        Ok(HostPtr(address))
    }

    fn free_host(&mut self, ptr: HostPtr) -> Result<(), AclCode> {
        if !self.pinned.contains_key(&ptr.0) {
            self.message = Some(format!(
                "{:#x} is not a pinned allocation made since the last reset",
                ptr.0
            ));
            return Err(AclCode::InvalidParam);
        }
        // SAFETY: an allocation this library made since the last reset, not yet freed.
        self.bound_call(|acl| unsafe { acl.aclrtFreeHost(ptr.0 as usize as *mut c_void) })?;
        self.pinned.remove(&ptr.0);
        Ok(())
    }

    fn memcpy_to_device_async(
        &mut self,
        dst: DevicePtr,
        src: HostPtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async(src, dst, len, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    }

    fn memcpy_from_device_async(
        &mut self,
        dst: HostPtr,
        src: DevicePtr,
        len: usize,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        self.memcpy_async(dst, src, len, ACL_MEMCPY_DEVICE_TO_HOST, stream)
    }

    fn write_host(&mut self, dst: HostPtr, src: &[u8]) -> Result<(), AclCode> {
        let dst = self.pinned_range(dst, src.len())?;
        // SAFETY: `dst` is inside a live pinned allocation for `src.len()` bytes (checked),
        // which no Rust reference aliases; no copy into it is in flight (the driver writes
        // only before it enqueues the copies that use it).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn read_host(&mut self, dst: &mut [u8], src: HostPtr) -> Result<(), AclCode> {
        let src = self.pinned_range(src, dst.len())?;
        // SAFETY: `src` is inside a live pinned allocation for `dst.len()` bytes (checked);
        // the driver reads only after an event proved the copy into it finished.
        unsafe { core::ptr::copy_nonoverlapping(src.cast_const(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}
