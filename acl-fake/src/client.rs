//! [`Control`]: the test side of the fake's control surface, loaded from the built cdylib.

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::path::{Path, PathBuf};

use ascend_cl_sys::types::{ACL_RT_THREAD_LEVEL, ACL_SUCCESS, AclError, AclrtStream};
use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

use crate::{CDYLIB_FILE_NAME, ENGINE_AICORE, FakeCounters, MAX_DEVICES, Outcome, Semantics};

/// Why the fake's control surface is unusable or refused a request.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The cdylib was not built next to the running test.
    #[error(
        "{CDYLIB_FILE_NAME} not found in {searched:?}\nhint: cargo builds it with the acl-fake package; run `cargo test -p acl-fake` or `cargo build -p acl-fake`"
    )]
    NotBuilt {
        /// The folders searched.
        searched: Vec<PathBuf>,
    },
    /// dlopen or dlsym failed.
    #[error("cannot load the fake's control surface from {path}: {message}")]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// A control call returned an ACL code.
    #[error("{call} returned {code}")]
    Call {
        /// The control function.
        call: &'static str,
        /// Its code.
        code: AclError,
    },
}

/// Finds the built fake next to the running executable: a test binary lives in
/// `target/<profile>/deps/` and cargo puts the cdylib in `deps/` and in `target/<profile>/`.
///
/// # Errors
///
/// [`ControlError::NotBuilt`] naming the folders searched.
pub fn cdylib_path() -> Result<PathBuf, ControlError> {
    let exe = std::env::current_exe().unwrap_or_default();
    let searched: Vec<PathBuf> = exe.ancestors().skip(1).take(2).map(Path::to_path_buf).collect();
    searched
        .iter()
        .map(|dir| dir.join(CDYLIB_FILE_NAME))
        .find(|path| path.is_file())
        .ok_or(ControlError::NotBuilt { searched })
}

/// [`ControlError::Load`] for a loader error on `path`.
fn load_error(path: &Path) -> impl Fn(libloading::Error) -> ControlError + '_ {
    |e| ControlError::Load { path: path.to_path_buf(), message: e.to_string() }
}

macro_rules! control_table {
    ($( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        #[allow(non_snake_case)]
        struct Functions {
            $( $name: unsafe extern "C" fn($($ty),*) -> $ret, )*
        }

        impl Functions {
            fn resolve(library: &Library, path: &Path) -> Result<Self, ControlError> {
                Ok(Self {
                    $( $name: {
                        // SAFETY: the type is the export's signature, from the same table.
                        let symbol = unsafe { library.get::<unsafe extern "C" fn($($ty),*) -> $ret>(stringify!($name).as_bytes()) };
                        *symbol.map_err(load_error(path))?
                    }, )*
                })
            }
        }
    };
}

for_each_control_function!(control_table);

/// The fake's extra ACL exports beside the table (`aclrtPeekAtLastError`,
/// `aclrtGetLastError`).
struct LastError {
    peek: unsafe extern "C" fn(i32) -> AclError,
    get: unsafe extern "C" fn(i32) -> AclError,
}

impl LastError {
    fn resolve(library: &Library, path: &Path) -> Result<Self, ControlError> {
        let symbol = |name: &str| {
            // SAFETY: both exports are `extern "C" fn(i32) -> aclError` in this crate.
            let symbol =
                unsafe { library.get::<unsafe extern "C" fn(i32) -> AclError>(name.as_bytes()) };
            symbol.map(|s| *s).map_err(load_error(path))
        };
        Ok(Self { peek: symbol("aclrtPeekAtLastError")?, get: symbol("aclrtGetLastError")? })
    }
}

/// One kernel for [`Control::launch_run`]: `runlanefake_launch_run`'s arguments. The
/// pointers are keys into the fake's tables (device addresses, the handshake address), never
/// dereferenced by the caller's side.
#[derive(Clone, Copy, Debug)]
pub struct RunKernel<'a> {
    /// A stream of the calling thread's current device.
    pub stream: AclrtStream,
    /// [`ENGINE_AICORE`](crate::ENGINE_AICORE) or [`ENGINE_AICPU`](crate::ENGINE_AICPU).
    pub engine: u32,
    /// How long it runs.
    pub duration: std::time::Duration,
    /// How it ends (kernel fault rules may change it).
    pub outcome: Outcome,
    /// 16 bytes of device memory for its start and end, or NULL.
    pub timing: *mut c_void,
    /// Device memory for its status header, or NULL.
    pub header: *mut c_void,
    /// The status header it writes on a clean exit.
    pub header_bytes: &'a [u8],
    /// The run's handshake address, shared by its two kernels (NULL: a kernel alone).
    pub handshake: *mut c_void,
    /// 280 bytes of device memory for the run's result record (given with the AICPU
    /// kernel), or NULL.
    pub record: *mut c_void,
    /// The run's epoch (non-zero with a record).
    pub epoch: u64,
}

impl<'a> RunKernel<'a> {
    /// An [`Outcome::Ok`] kernel on `stream` and `engine`, no duration, no buffers, no run.
    #[must_use]
    pub const fn new(stream: AclrtStream, engine: u32) -> Self {
        Self {
            stream,
            engine,
            duration: std::time::Duration::ZERO,
            outcome: Outcome::Ok,
            timing: std::ptr::null_mut(),
            header: std::ptr::null_mut(),
            header_bytes: &[],
            handshake: std::ptr::null_mut(),
            record: std::ptr::null_mut(),
            epoch: 0,
        }
    }
}

impl Default for RunKernel<'_> {
    fn default() -> Self {
        Self::new(std::ptr::null_mut(), ENGINE_AICORE)
    }
}

/// The fake's control surface, resolved from the cdylib the test also loads through
/// ascend-cl-sys (`dlopen` of the same path returns the same library, so both see the same
/// devices).
///
/// The fault and counter methods here act on device 0 (as before the fake served several
/// devices); [`Control::device`] gives the same methods for any device.
pub struct Control {
    functions: Functions,
    last_error: LastError,
    _library: Library,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").finish_non_exhaustive()
    }
}

fn check(call: &'static str, code: AclError) -> Result<(), ControlError> {
    if code == ACL_SUCCESS { Ok(()) } else { Err(ControlError::Call { call, code }) }
}

impl Control {
    /// Loads the control functions from the fake at `path`.
    ///
    /// # Errors
    ///
    /// [`ControlError::Load`] when the library or a control symbol is missing.
    pub fn open(path: &Path) -> Result<Self, ControlError> {
        // SAFETY: the fake's initialisers are Rust statics with const initialisers; nothing
        // runs at load time.
        let library = unsafe { Library::open(Some(path.as_os_str()), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(load_error(path))?;
        let functions = Functions::resolve(&library, path)?;
        let last_error = LastError::resolve(&library, path)?;
        Ok(Self { functions, last_error, _library: library })
    }

    /// `runlanefake_reset`: back to a fresh process, every device at once.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn reset(&self) -> Result<(), ControlError> {
        // SAFETY: no arguments.
        check("runlanefake_reset", unsafe { (self.functions.runlanefake_reset)() })
    }

    /// Resets the fake ([`reset`](Self::reset)) and returns a [`Session`] that, when dropped at
    /// the end of the test, fails it if any force reset was made while a thread was inside a
    /// device wait since (L-20: on real ACL a use-after-free). Every fake-backed test of the
    /// workspace starts through it, so the one check covers them all.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused the reset.
    pub fn session(&self) -> Result<Session<'_>, ControlError> {
        self.reset()?;
        Ok(Session { control: self, hazard_expected: core::cell::Cell::new(false) })
    }

    /// [`runlanefake_launch`](crate::runlanefake_launch): the pointers are only keys.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with the launch's ACL code (107017 unknown stream, 107003 a
    /// stream of another device, 107000 bad range or engine, 107002 thread not bound, an
    /// injected code).
    // The pointers are keys into the fake's tables, never dereferenced, so this is safe.
    #[allow(clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]
    pub fn launch(
        &self,
        stream: AclrtStream,
        engine: u32,
        duration: std::time::Duration,
        outcome: Outcome,
        timing: *mut c_void,
        header: *mut c_void,
        header_bytes: &[u8],
    ) -> Result<(), ControlError> {
        let duration_ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: `header_bytes` is a live slice of `len` bytes; the handles are only keys.
        let code = unsafe {
            (self.functions.runlanefake_launch)(
                stream,
                engine,
                duration_ns,
                outcome as u32,
                timing,
                header,
                header_bytes.as_ptr(),
                header_bytes.len(),
            )
        };
        check("runlanefake_launch", code)
    }

    /// [`runlanefake_launch_run`](crate::runlanefake_launch_run): one kernel of a run.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with the launch's ACL code (as [`Control::launch`]; 107000
    /// also for a bad record range, a record with epoch 0, or a second kernel of one engine
    /// in a run; 100000 a NULL stream; 507899 a refused enqueue).
    pub fn launch_run(&self, kernel: &RunKernel<'_>) -> Result<(), ControlError> {
        self.launch_lane_run(kernel, 0)
    }

    /// [`runlanefake_launch_run_id`](crate::runlanefake_launch_run_id): [`Control::launch_run`]
    /// for run `run` of a lane (0: none, through `runlanefake_launch_run`).
    ///
    /// # Errors
    ///
    /// As [`Control::launch_run`].
    pub fn launch_lane_run(&self, kernel: &RunKernel<'_>, run: u64) -> Result<(), ControlError> {
        let duration_ns = u64::try_from(kernel.duration.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: `header_bytes` is a live slice of `len` bytes; the rest are only keys.
        let code = unsafe {
            if run == 0 {
                (self.functions.runlanefake_launch_run)(
                    kernel.stream,
                    kernel.engine,
                    duration_ns,
                    kernel.outcome as u32,
                    kernel.timing,
                    kernel.header,
                    kernel.header_bytes.as_ptr(),
                    kernel.header_bytes.len(),
                    kernel.handshake,
                    kernel.record,
                    kernel.epoch,
                )
            } else {
                (self.functions.runlanefake_launch_run_id)(
                    kernel.stream,
                    kernel.engine,
                    duration_ns,
                    kernel.outcome as u32,
                    kernel.timing,
                    kernel.header,
                    kernel.header_bytes.as_ptr(),
                    kernel.header_bytes.len(),
                    kernel.handshake,
                    kernel.record,
                    kernel.epoch,
                    run,
                )
            }
        };
        check("runlanefake_launch_run", code)
    }

    /// `runlanefake_set_semantics`: one switch, on every device.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn set_semantics(&self, semantics: Semantics) -> Result<(), ControlError> {
        let (switch, value) = semantics.raw();
        self.set_semantics_raw(switch, value)
    }

    /// `runlanefake_set_semantics` with a raw switch and value (for a test of the refusal of
    /// unknown ones; [`Control::set_semantics`] cannot make them).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with 107000 for an unknown switch or value.
    pub fn set_semantics_raw(&self, switch: u32, value: u32) -> Result<(), ControlError> {
        // SAFETY: plain values.
        check("runlanefake_set_semantics", unsafe {
            (self.functions.runlanefake_set_semantics)(switch, value)
        })
    }

    /// `aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL)` on the calling thread: its last error,
    /// not cleared.
    #[must_use]
    pub fn peek_at_last_error(&self) -> AclError {
        self.last_error_at(ACL_RT_THREAD_LEVEL, false)
    }

    /// `aclrtGetLastError(ACL_RT_THREAD_LEVEL)` on the calling thread: its last error,
    /// cleared.
    #[must_use]
    pub fn get_last_error(&self) -> AclError {
        self.last_error_at(ACL_RT_THREAD_LEVEL, true)
    }

    /// `aclrtPeekAtLastError(level)` / `aclrtGetLastError(level)` with any level (`clear`
    /// picks Get): 107000 for a level other than `ACL_RT_THREAD_LEVEL`.
    #[must_use]
    pub fn last_error_at(&self, level: i32, clear: bool) -> AclError {
        let call = if clear { self.last_error.get } else { self.last_error.peek };
        // SAFETY: a plain value.
        unsafe { call(level) }
    }

    /// Device `device_id`'s view: its fault rules and counters (any id below
    /// [`MAX_DEVICES`], served or not; a call for an id outside that range fails with 107001).
    #[must_use]
    pub const fn device(&self, device_id: i32) -> DeviceControl<'_> {
        DeviceControl { control: self, device_id }
    }

    /// [`DeviceControl::fail_call`] on device 0.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a name with a NUL or a zero count.
    pub fn fail_call(
        &self,
        name: &str,
        code: AclError,
        skip: u32,
        count: u32,
    ) -> Result<(), ControlError> {
        self.device(0).fail_call(name, code, skip, count)
    }

    /// [`DeviceControl::fault_kernel`] on device 0.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a bad engine or a zero count.
    pub fn fault_kernel(
        &self,
        outcome: Outcome,
        engine: u32,
        skip: u32,
        count: u32,
        header_bytes: &[u8],
    ) -> Result<(), ControlError> {
        self.device(0).fault_kernel(outcome, engine, skip, count, header_bytes)
    }

    /// [`DeviceControl::fault_copy`] on device 0.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a code of 0 or a zero count.
    pub fn fault_copy(&self, code: AclError, skip: u32, count: u32) -> Result<(), ControlError> {
        self.device(0).fault_copy(code, skip, count)
    }

    /// [`DeviceControl::clear_faults`] on device 0 (other devices' rules stay).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn clear_faults(&self) -> Result<(), ControlError> {
        self.device(0).clear_faults()
    }

    /// `runlanefake_set_soc_name` (`None`: the probe gets NULL).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a name with a NUL.
    pub fn set_soc_name(&self, name: Option<&str>) -> Result<(), ControlError> {
        let name = name
            .map(CString::new)
            .transpose()
            .map_err(|_| ControlError::Call { call: "runlanefake_set_soc_name", code: 100_000 })?;
        let pointer: *const c_char = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        // SAFETY: NULL or a NUL-terminated string alive for the call (the fake copies it).
        check("runlanefake_set_soc_name", unsafe {
            (self.functions.runlanefake_set_soc_name)(pointer)
        })
    }

    /// `runlanefake_set_device_count`: the count the probe reports and the ids
    /// `aclrtSetDevice` accepts (16 after a reset).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] above [`MAX_DEVICES`].
    pub fn set_device_count(&self, count: u32) -> Result<(), ControlError> {
        // SAFETY: plain value.
        check("runlanefake_set_device_count", unsafe {
            (self.functions.runlanefake_set_device_count)(count)
        })
    }

    /// [`DeviceControl::counters`] of device 0.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn counters(&self) -> Result<FakeCounters, ControlError> {
        self.device(0).counters()
    }

    /// [`runlanefake_raise_notice`](crate::runlanefake_raise_notice).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with 107001 for a device id outside 0 to [`MAX_DEVICES`] - 1.
    pub fn raise_notice(
        &self,
        device_id: i32,
        stream_id: i32,
        code: AclError,
        delay: std::time::Duration,
    ) -> Result<(), ControlError> {
        let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: plain values.
        check("runlanefake_raise_notice", unsafe {
            (self.functions.runlanefake_raise_notice)(device_id, stream_id, code, delay_ns)
        })
    }

    /// [`runlanefake_live_stream_ids`](crate::runlanefake_live_stream_ids) (16 at most).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with 107001 for a device id outside 0 to [`MAX_DEVICES`] - 1.
    pub fn live_stream_ids(&self, device_id: i32) -> Result<Vec<i32>, ControlError> {
        let mut ids = [0_i32; 16];
        let mut count = 0_u32;
        let capacity = u32::try_from(ids.len()).unwrap_or(0);
        // SAFETY: `ids` has room for `capacity` ids; `count` is writable.
        check("runlanefake_live_stream_ids", unsafe {
            (self.functions.runlanefake_live_stream_ids)(
                device_id,
                ids.as_mut_ptr(),
                capacity,
                &mut count,
            )
        })?;
        let count = usize::try_from(count).unwrap_or(usize::MAX).min(ids.len());
        Ok(ids[..count].to_vec())
    }

    /// `runlanefake_notice_counts`: (delivered, dropped) notices since the last reset.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn notice_counts(&self) -> Result<(u64, u64), ControlError> {
        let (mut delivered, mut dropped) = (0, 0);
        // SAFETY: both are writable u64s.
        check("runlanefake_notice_counts", unsafe {
            (self.functions.runlanefake_notice_counts)(&mut delivered, &mut dropped)
        })?;
        Ok((delivered, dropped))
    }

    /// Notices raised with no callback registered when they came due, since the last reset.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn notices_dropped(&self) -> Result<u64, ControlError> {
        self.notice_counts().map(|(_, dropped)| dropped)
    }

    /// [`runlanefake_resets_under_wait`](crate::runlanefake_resets_under_wait): must stay 0
    /// (SPEC L-20); `u64::MAX` if the fake refused the query (never reads as 0).
    #[must_use]
    pub fn resets_under_wait(&self) -> u64 {
        let mut total = 0;
        // SAFETY: `total` is a writable u64.
        let code = unsafe { (self.functions.runlanefake_resets_under_wait)(&mut total) };
        if code == ACL_SUCCESS { total } else { u64::MAX }
    }

    /// [`runlanefake_device_clock_ns`](crate::runlanefake_device_clock_ns).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn device_clock_ns(&self) -> Result<u64, ControlError> {
        let mut now = 0;
        // SAFETY: `now` is a writable u64.
        check("runlanefake_device_clock_ns", unsafe {
            (self.functions.runlanefake_device_clock_ns)(&mut now)
        })?;
        Ok(now)
    }

    /// Every device's counters summed (all [`MAX_DEVICES`], served or not): `balanced()` on
    /// it proves nothing leaked on any device.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] if the fake refused.
    pub fn total_counters(&self) -> Result<FakeCounters, ControlError> {
        (0..MAX_DEVICES).try_fold(FakeCounters::ZERO, |total, id| {
            let id = i32::try_from(id).unwrap_or(i32::MAX);
            Ok(total.plus(self.device(id).counters()?))
        })
    }
}

/// One device's part of the fake's control surface, from [`Control::device`]: its fault rules
/// and counters.
#[derive(Clone, Copy, Debug)]
pub struct DeviceControl<'a> {
    control: &'a Control,
    device_id: i32,
}

impl DeviceControl<'_> {
    /// The device this view acts on.
    #[must_use]
    pub const fn device_id(&self) -> i32 {
        self.device_id
    }

    /// [`runlanefake_fail_call_on`](crate::runlanefake_fail_call_on): after `skip` calls of
    /// `name` made on this device, fail the next `count` with `code`.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a name with a NUL, a zero count or a bad device id.
    pub fn fail_call(
        &self,
        name: &str,
        code: AclError,
        skip: u32,
        count: u32,
    ) -> Result<(), ControlError> {
        let name = CString::new(name)
            .map_err(|_| ControlError::Call { call: "runlanefake_fail_call_on", code: 100_000 })?;
        // SAFETY: `name` is a NUL-terminated string alive for the call.
        check("runlanefake_fail_call_on", unsafe {
            (self.control.functions.runlanefake_fail_call_on)(
                self.device_id,
                name.as_ptr(),
                code,
                skip,
                count,
            )
        })
    }

    /// `runlanefake_fault_kernel_on`: after `skip` launches on this device and `engine`, end
    /// the next `count` with `outcome` (a latch writes `header_bytes`).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a bad engine, a zero count or a bad device id.
    pub fn fault_kernel(
        &self,
        outcome: Outcome,
        engine: u32,
        skip: u32,
        count: u32,
        header_bytes: &[u8],
    ) -> Result<(), ControlError> {
        // SAFETY: `header_bytes` is a live slice of `len` bytes.
        let code = unsafe {
            (self.control.functions.runlanefake_fault_kernel_on)(
                self.device_id,
                outcome as u32,
                engine,
                skip,
                count,
                header_bytes.as_ptr(),
                header_bytes.len(),
            )
        };
        check("runlanefake_fault_kernel_on", code)
    }

    /// [`runlanefake_fault_copy_on`](crate::runlanefake_fault_copy_on).
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a code of 0, a zero count or a bad device id.
    pub fn fault_copy(&self, code: AclError, skip: u32, count: u32) -> Result<(), ControlError> {
        // SAFETY: plain values.
        check("runlanefake_fault_copy_on", unsafe {
            (self.control.functions.runlanefake_fault_copy_on)(self.device_id, code, skip, count)
        })
    }

    /// [`runlanefake_install_fault`](crate::runlanefake_install_fault) on this device.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] with 107000 for a spec that does not parse (or has a NUL), 107001
    /// for a bad device id.
    pub fn install_fault(&self, spec: &str) -> Result<(), ControlError> {
        let spec = CString::new(spec)
            .map_err(|_| ControlError::Call { call: "runlanefake_install_fault", code: 107_000 })?;
        // SAFETY: `spec` is a NUL-terminated string alive for the call.
        check("runlanefake_install_fault", unsafe {
            (self.control.functions.runlanefake_install_fault)(self.device_id, spec.as_ptr())
        })
    }

    /// `runlanefake_clear_faults_on`: this device's rules removed.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a bad device id.
    pub fn clear_faults(&self) -> Result<(), ControlError> {
        // SAFETY: plain value.
        check("runlanefake_clear_faults_on", unsafe {
            (self.control.functions.runlanefake_clear_faults_on)(self.device_id)
        })
    }

    /// `runlanefake_set_semantics_on`: one switch, on this device only.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a bad device id.
    pub fn set_semantics(&self, semantics: Semantics) -> Result<(), ControlError> {
        let (switch, value) = semantics.raw();
        // SAFETY: plain values.
        check("runlanefake_set_semantics_on", unsafe {
            (self.control.functions.runlanefake_set_semantics_on)(self.device_id, switch, value)
        })
    }

    /// `runlanefake_counters_on`: this device's counters.
    ///
    /// # Errors
    ///
    /// [`ControlError::Call`] for a bad device id.
    pub fn counters(&self) -> Result<FakeCounters, ControlError> {
        let mut counters = FakeCounters::ZERO;
        // SAFETY: `counters` is a writable FakeCounters.
        check("runlanefake_counters_on", unsafe {
            (self.control.functions.runlanefake_counters_on)(self.device_id, &mut counters)
        })?;
        Ok(counters)
    }
}

/// A test's use of the fake from a reset on ([`Control::session`]): dropping it checks that
/// no force reset was made under a device wait (the fake's `resets_under_wait` counters),
/// the hazard L-20 forbids. A test that makes one on purpose says so with
/// [`expect_resets_under_wait`](Self::expect_resets_under_wait).
#[derive(Debug)]
pub struct Session<'a> {
    control: &'a Control,
    hazard_expected: core::cell::Cell<bool>,
}

impl Session<'_> {
    /// The test makes a force reset under a wait on purpose: the drop check is skipped.
    pub fn expect_resets_under_wait(&self) {
        self.hazard_expected.set(true);
    }

    /// Force resets made under a device wait since the session began, on every device.
    #[must_use]
    pub fn resets_under_wait(&self) -> u64 {
        self.control.total_counters().map_or(u64::MAX, |c| c.resets_under_wait)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.hazard_expected.get() || std::thread::panicking() {
            return;
        }
        let count = self.resets_under_wait();
        assert_eq!(
            count, 0,
            "{count} force reset(s) were made while a thread was inside a device wait (L-20: a \
             use-after-free on real ACL)"
        );
    }
}
