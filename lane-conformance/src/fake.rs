//! The fake libascendcl for a test or a bench: loaded once per process through
//! ascend-cl-sys's loader by explicit path (as a user's machine loads the real library), one
//! user at a time (the fake's sixteen devices are process-wide state), reset before each use.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use backend_acl::{AclConfig, AclDevice, Library};
use lane_core::{Profile, ProfileError, ProfileSpec};
use run_lane_fake_ascendcl::{CDYLIB_FILE_NAME, Control, cdylib_path};

use crate::error::ConformanceError;

/// The timeouts a profile runs with on the fake, scaled from tens of seconds to what a test
/// can afford and still generous for a loaded 2-core machine; a hung kernel ends at the
/// device op timeout, well before the host wait gives up (SPEC L-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FakeTimeouts {
    /// Host wait for one run's completion.
    pub completion_ns: u64,
    /// Device op timeout (below the completion wait; backend-acl programs it at open).
    pub device_op_ns: u64,
    /// Bounded drain before a force reset.
    pub drain_ns: u64,
}

impl Default for FakeTimeouts {
    /// 10 s host wait, 1 s device op timeout, 2 s drain.
    fn default() -> Self {
        Self { completion_ns: 10_000_000_000, device_op_ns: 1_000_000_000, drain_ns: 2_000_000_000 }
    }
}

impl FakeTimeouts {
    /// `profile` with these timeouts (everything else unchanged).
    ///
    /// # Errors
    ///
    /// [`ProfileError`] if the op timeout is not below the completion wait.
    pub fn scale(&self, profile: Profile) -> Result<Profile, ProfileError> {
        Profile::custom(ProfileSpec {
            completion_timeout_ns: self.completion_ns,
            device_op_timeout_ns: self.device_op_ns,
            drain_timeout_ns: self.drain_ns,
            ..profile.spec()
        })
    }
}

/// The built fake: its path and its control surface.
#[derive(Debug)]
struct Loaded {
    path: PathBuf,
    control: Arc<Control>,
}

fn loaded() -> Result<&'static Loaded, ConformanceError> {
    static FAKE: OnceLock<Result<Loaded, String>> = OnceLock::new();
    FAKE.get_or_init(|| {
        let path =
            cdylib_path().or_else(|e| beside_a_binary().ok_or(e)).map_err(|e| e.to_string())?;
        let control = Control::open(&path).map_err(|e| e.to_string())?;
        Ok(Loaded { path, control: Arc::new(control) })
    })
    .as_ref()
    .map_err(|e| ConformanceError::Fake(e.clone()))
}

/// Where cargo puts the fake for a binary (`target/<profile>/fake-bench` finds it in
/// `target/<profile>/deps/`); `cdylib_path` covers test binaries, which live in `deps/`.
fn beside_a_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("deps").join(CDYLIB_FILE_NAME);
    path.is_file().then_some(path)
}

/// Exclusive use of the whole fake (every device), reset to a fresh process's state. Held for
/// as long as a device opened from it is in use.
#[derive(Debug)]
pub struct FakeSession {
    /// The shared L-20 check when the session ends (no force reset under a device wait);
    /// dropped before the lock.
    _checked: run_lane_fake_ascendcl::Session<'static>,
    _serial: MutexGuard<'static, ()>,
    fake: &'static Loaded,
}

impl FakeSession {
    /// Waits for the fake, then resets it (every stream, event, allocation and fault rule
    /// dropped, counters zeroed).
    ///
    /// # Errors
    ///
    /// [`ConformanceError::Fake`] if the fake was not built or refused the reset.
    pub fn start() -> Result<Self, ConformanceError> {
        static SERIAL: Mutex<()> = Mutex::new(());
        let serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let fake = loaded()?;
        let checked = fake.control.session().map_err(ConformanceError::control)?;
        Ok(Self { _checked: checked, _serial: serial, fake })
    }

    /// The fake's control surface.
    pub fn control(&self) -> &Arc<Control> {
        &self.fake.control
    }

    /// [`open_on`](Self::open_on) device 0.
    ///
    /// # Errors
    ///
    /// [`ConformanceError::Open`] with backend-acl's error.
    pub fn open(&self, profile: Profile) -> Result<AclDevice, ConformanceError> {
        self.open_on(0, profile)
    }

    /// Opens device `device_id` of the fake (0 to 15) with backend-acl and `profile`, as a
    /// user opens an NPU; the calling thread, bound to it, is the lane thread.
    ///
    /// # Errors
    ///
    /// [`ConformanceError::Open`] with backend-acl's error.
    pub fn open_on(&self, device_id: i32, profile: Profile) -> Result<AclDevice, ConformanceError> {
        let (device, _) = AclDevice::open(AclConfig {
            library: Library::Path(self.fake.path.clone()),
            device_id,
            profile: Some(profile),
            init: false,
            notice_monitor: false,
            prefer_loaded: false,
        })
        .map_err(|e| ConformanceError::Open(e.to_string()))?;
        Ok(device)
    }
}
