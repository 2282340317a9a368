//! [`AclDevice`]: opening and probing a device, and the `Device` methods, one ACL call each.

mod binding;
mod calls;
mod config;
mod op_timeout;

use core::ffi::c_void;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ascend_cl_sys::{
    ACL_ERROR_INTERNAL_ERROR, ACL_ERROR_REPEAT_INITIALIZE, ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS, Acl, AclrtStream,
};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{FaultNotice, Profile, Timestamp};
use lane_driver::{Device, DevicePtr, HostPtr};

use crate::error::AclError;
use crate::issued::{self, Refused};
use crate::notice::NoticeMonitor;
use crate::soc::profile_for_soc;
use crate::stream_ids::StreamIds;

pub use self::binding::WorkerBinding;
use self::binding::{Bound, bind_calling_thread, bound, reset_count};
pub use self::config::{AclConfig, Library};
use self::op_timeout::OpTimeoutLease;
pub use self::op_timeout::op_timeout_in_force_us;

/// The optional symbol that gives event timestamps ([`Device::event_timestamps`]).
const EVENT_GET_TIMESTAMP: &str = "aclrtEventGetTimestamp";

/// One Ascend device, driven through ACL: the lane's [`Device`]. Every method binds the
/// calling thread first if it is not bound, makes its one ACL call, and on failure reads
/// `aclGetRecentErrMsg` ([`Device::recent_error_message`]).
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
    /// Pinned host allocations made since the last reset: address -> size. Only ranges
    /// inside one are touched, so a bad `HostPtr` is 100000, never undefined behaviour.
    pinned: BTreeMap<u64, usize>,
    /// Force resets of this device id by any lane of the process, shared with every
    /// [`WorkerBinding`]: a thread bound before the latest one must bind again.
    resets: Arc<AtomicU64>,
    /// The device's clock starts here ([`AclDevice::clock`]).
    epoch: Instant,
    /// The stream ids a fault notice may name and concern this device (L-19, decision 0025).
    stream_ids: StreamIds,
    /// How installing the fault notice monitor went.
    notice_monitor: NoticeMonitor,
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
    /// Opens `config.device_id`: loads the library, calls `aclInit` if asked, probes the
    /// device and its profile, binds the calling thread, and sets the device op timeout.
    /// Returns the device and the profile the lane must run with.
    ///
    /// # Errors
    ///
    /// [`AclError`], each with a hint.
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
            Ok(Probed { device_count, soc_name, profile, op_timeout_us, op_timeout }) => {
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
            return Err(AclError::OpTimeout { device_ns: actual_ns, host_ns });
        }
        Ok(Probed { device_count: count, soc_name, profile, op_timeout_us: actual_us, op_timeout })
    }

    /// The profile `config` opens with, as [`AclDevice::open`] probes it (and fails), but
    /// setting no op timeout (so it never conflicts with the one in force, L-21).
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
            .ok_or_else(|| AclError::UnknownSoc { name: soc_name.clone() })?;
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

    /// `aclrtMemcpyAsync(.., ACL_MEMCPY_DEVICE_TO_DEVICE, stream)`: device work of a known
    /// size with no kernel, ordered on `stream` (the device check's). Both ranges and the
    /// stream are looked up as every call's handles.
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
    /// device ([`StreamIds`](crate::StreamIds)' rule, decision 0025): the recently destroyed
    /// ones, then the live ones, oldest first. Empty without `aclrtStreamGetId`.
    pub fn stream_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.stream_ids_at(self.clock())
    }

    /// [`AclDevice::stream_ids`] as they will be at `now` on this device's clock
    /// ([`Device::now`]), if no stream is created or dies before then.
    pub fn stream_ids_at(&self, now: Timestamp) -> impl Iterator<Item = u32> + '_ {
        self.stream_ids.matching(now).into_iter()
    }

    /// Whether `notice`, read at `now` on this device's clock, names this device and a stream
    /// id [`AclDevice::stream_ids_at`] lists at `now` (L-19).
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

    /// Binds the calling thread (`aclrtSetDevice`, its failure's message kept) unless it is
    /// already bound since the last reset. A runner calls this before its own calls.
    pub fn bind_thread(&mut self) -> Result<(), AclCode> {
        // One thread-local read: ACL keeps one current device per thread, so two devices
        // driven from one thread each bind again when the other bound last.
        let resets = self.resets.load(Ordering::Acquire);
        if bound() == Some(Bound { device_id: self.device_id, resets }) {
            return Ok(());
        }
        self.set_device()
    }

    /// A runner's own ACL call result: `Ok` for 0; otherwise the code, with
    /// `aclGetRecentErrMsg` kept so the driver attaches it to the run's outcome, as for the
    /// device's own calls.
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
    pub fn finalize(mut self) -> Result<(), AclCode> {
        if !self.initialised_here {
            return Ok(());
        }
        // SAFETY: no arguments; this process initialised ACL in `open`.
        let code = unsafe { self.acl.aclFinalize() };
        self.check(code)
    }

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

    /// A call made on a bound thread, its code checked.
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
        let inside = self.pinned.range(..=ptr.0).next_back().is_some_and(|(&base, &size)| {
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
