//! The fake libascendcl for backend-acl's tests: process-wide state (sixteen devices), so
//! every test holds [`Fake`] (a lock) for its whole length and starts from a reset fake.

#![allow(dead_code, unreachable_pub)]

pub mod kernels;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use ascend_cl_sys::types::AclrtStream;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{Device, DevicePtr, EventHandle, HostPtr, PinnedCopies};

use backend_acl::{AclConfig, AclDevice, Library};
use lane_core::Profile;
use run_lane_fake_ascendcl::{
    Control, ControlError, ENGINE_AICORE, FakeCounters, Outcome, RunKernel, cdylib_path,
};

/// The fake, reset, held by this test until dropped.
pub struct Fake {
    /// The L-20 check at the test's end (declared first: dropped before the lock).
    session: run_lane_fake_ascendcl::Session<'static>,
    _serial: MutexGuard<'static, ()>,
    /// The fake's control surface.
    pub control: &'static Control,
    /// The fake's file.
    pub path: PathBuf,
}

fn loaded() -> &'static (Control, PathBuf) {
    static LOADED: OnceLock<(Control, PathBuf)> = OnceLock::new();
    LOADED.get_or_init(|| {
        let path = cdylib_path().unwrap_or_else(|e| panic!("{e}"));
        let control = Control::open(&path).unwrap_or_else(|e| panic!("{e}"));
        (control, path)
    })
}

/// Whether `path` (canonical) is mapped in this process (`/proc/self/maps`), deleted or not.
pub fn mapped(path: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let path = path.to_string_lossy();
    maps.lines()
        .any(|line| line.ends_with(path.as_ref()) || line.ends_with(&format!("{path} (deleted)")))
}

/// A copy of the fake named `libascendcl.so` in a fresh folder `name`.
pub fn copy_of_the_fake(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("run-lane-loaded-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("libascendcl.so");
    std::fs::copy(cdylib_path().unwrap_or_else(|e| panic!("{e}")), &path).expect("copy the fake");
    path.canonicalize().expect("its canonical path")
}

/// Takes the fake for this test and resets it (16 devices, "Ascend910B1", nothing alive).
pub fn fake() -> Fake {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (control, path) = loaded();
    let session = control.session().expect("reset the fake");
    Fake { session, _serial: serial, control, path: path.clone() }
}

/// Takes the fake and opens its device 0 with the probed profile (the device goes first).
pub fn opened() -> (Fake, AclDevice) {
    let fake = fake();
    let (device, _) = fake.open();
    (fake, device)
}

impl Fake {
    /// This test makes a force reset under a wait on purpose (the shared L-20 check is off).
    pub fn expect_resets_under_wait(&self) {
        self.session.expect_resets_under_wait();
    }

    /// A config opening the fake's device 0 with the probed profile.
    pub fn config(&self) -> AclConfig {
        AclConfig { library: Library::Path(self.path.clone()), ..AclConfig::default() }
    }

    /// A config opening the fake's device `device_id` with the probed profile.
    pub fn config_on(&self, device_id: i32) -> AclConfig {
        AclConfig { device_id, ..self.config() }
    }

    /// A config opening the fake's device 0 with `profile`.
    pub fn config_with(&self, profile: Profile) -> AclConfig {
        AclConfig { profile: Some(profile), ..self.config() }
    }

    /// Opens device 0 with the probed profile.
    pub fn open(&self) -> (AclDevice, Profile) {
        AclDevice::open(self.config()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fake's counters.
    pub fn counters(&self) -> FakeCounters {
        self.control.counters().expect("counters")
    }

    /// Asserts every stream, event and allocation was destroyed, freed or reclaimed.
    pub fn assert_balanced(&self) {
        let c = self.counters();
        assert!(c.balanced(), "the fake holds leaked resources: {c:#?}");
    }
}

/// Live handles on a device: a stream, an event, 64 bytes of device memory and 32 of pinned
/// host memory.
#[derive(Clone, Copy)]
pub struct Handles {
    pub stream: StreamHandle,
    pub event: EventHandle,
    pub ptr: DevicePtr,
    pub host: HostPtr,
}

impl Handles {
    pub fn live(d: &mut AclDevice) -> Self {
        Self {
            stream: d.create_stream().unwrap(),
            event: d.create_event().unwrap(),
            ptr: d.malloc(64).unwrap(),
            host: d.malloc_host(32).unwrap(),
        }
    }

    /// Gives back what [`Handles::live`] made.
    pub fn release(self, d: &mut AclDevice) {
        d.destroy_event(self.event).unwrap();
        d.destroy_stream(self.stream).unwrap();
        d.free(self.ptr).unwrap();
        d.free_host(self.host).unwrap();
    }
}

/// The `aclrtStream` a lane handle stands for.
pub fn raw_stream(stream: StreamHandle) -> AclrtStream {
    stream.0 as usize as AclrtStream
}

/// Queues one kernel of a lane run on `stream`: linked to its sibling by the slot's
/// handshake and the run's epoch, and (the AICPU kernel) publishing the run's result record
/// when both kernels ended on their normal path (acl-fake's run model).
pub fn launch_run_kernel(
    control: &Control,
    stream: StreamHandle,
    engine: u32,
    duration: Duration,
    outcome: Outcome,
    args: &lane_driver::RunArgs,
    header: &[u8],
) -> Result<(), ControlError> {
    let ptr = |p: lane_driver::DevicePtr| p.0 as usize as *mut core::ffi::c_void;
    let aicpu = engine == run_lane_fake_ascendcl::ENGINE_AICPU;
    control.launch_run(&RunKernel {
        stream: raw_stream(stream),
        engine,
        duration,
        outcome,
        timing: if aicpu { ptr(args.timing) } else { std::ptr::null_mut() },
        header: if aicpu { ptr(args.status_header) } else { std::ptr::null_mut() },
        header_bytes: if aicpu { header } else { &[] },
        handshake: ptr(args.handshake),
        record: if aicpu { ptr(args.record) } else { std::ptr::null_mut() },
        epoch: args.epoch,
    })
}

/// Queues a fake AICore kernel on `stream` that writes no buffer.
pub fn launch_aicore(
    control: &Control,
    stream: StreamHandle,
    duration: Duration,
    outcome: Outcome,
) -> Result<(), ControlError> {
    control.launch(
        raw_stream(stream),
        ENGINE_AICORE,
        duration,
        outcome,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        &[],
    )
}
