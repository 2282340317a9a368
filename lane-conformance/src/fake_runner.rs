//! [`FakeRunner`]: the embedding runtime's side of a run on the fake libascendcl. It launches
//! each run's AICore and AICPU kernels on the lane's streams through the fake's control
//! surface (`runlanefake_launch_run_id`, naming the run), and does the host-side prepare,
//! finalise and upload. A kernel runs for the run's device time in real time; the AICPU
//! kernel (the scheduler) writes the slot's timing buffer and clean status header and
//! publishes the run's record. Faults are the device model's rules
//! ([`FakeRunner::with_faults`]): the fake's device decides the device sites as the
//! simulator's does, and the runner its own (prepare, finalise, upload).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use backend_sim::{Latched, RunTimes};
use device_model::faults::{FaultRule, Faults, Injected, Site};
use lane_core::status_latch::{self, AclCode, HeaderLayout, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId};
use lane_driver::{Concurrency, Device, HostWorker, PrepareError, RunArgs, Runner};
use run_lane_fake_ascendcl::{
    Control, ControlError, ENGINE_AICORE, ENGINE_AICPU, Outcome as KernelOutcome, RunKernel,
    Semantics,
};

/// Turns the rules off (liveness: the runner then runs every run clean). Cloned out of the
/// runner before the driver takes it; shared with its host workers.
#[derive(Clone, Debug)]
pub struct Healer(Arc<Mutex<Faults>>);

impl Healer {
    /// From now on the runner applies no fault.
    pub fn heal(&self) {
        locked(&self.0).heal();
    }
}

/// `mutex` locked, whatever a panic under it left (the rules and live runs stay usable).
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The host side of the runner that its host workers share with it: the rules for the
/// runner's own sites, and the runs launched and not finalised (prepare-incompatible overlaps
/// only these).
#[derive(Clone, Debug)]
struct HostSide {
    faults: Arc<Mutex<Faults>>,
    live: Arc<Mutex<Vec<RunId>>>,
}

impl HostSide {
    fn decide(&self, site: Site, run: Option<RunId>) -> Option<Injected> {
        locked(&self.faults).decide(site, run.map(|r| r.0))
    }

    fn live(&self) -> MutexGuard<'_, Vec<RunId>> {
        locked(&self.live)
    }

    fn prepare_run(&self, run: RunId) -> Result<(), PrepareError> {
        let others_live = self.live().iter().any(|r| *r != run);
        match self.decide(Site::Prepare, Some(run)) {
            Some(Injected::Fail(code)) => Err(PrepareError::Failed(code)),
            // Only an overlapping prepare can be incompatible; alone, it always fits.
            Some(Injected::Incompatible) if others_live => Err(PrepareError::Incompatible),
            _ => Ok(()),
        }
    }

    fn finalise_run(&self, run: RunId, copy_back: bool) -> Result<(), FinaliseFailure> {
        self.live().retain(|r| *r != run);
        if !copy_back {
            return Ok(());
        }
        match self.decide(Site::Finalise, Some(run)) {
            Some(Injected::Fail(code)) => Err(FinaliseFailure::Acl(code)),
            Some(Injected::Validation) => Err(FinaliseFailure::Validation),
            _ => Ok(()),
        }
    }
}

/// A [`FakeRunner`]'s prepare and finalise on a host worker thread
/// ([`FakeRunner::host_worker`]): the same rules and live runs as the runner.
/// Host work only: it touches no stream and needs no binding on the fake.
#[derive(Clone, Debug)]
pub struct FakeWorker {
    host: HostSide,
}

impl HostWorker for FakeWorker {
    fn prepare_run(
        &mut self,
        run: RunId,
        _slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        self.host.prepare_run(run)
    }

    fn finalise_run(
        &mut self,
        run: RunId,
        _slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.host.finalise_run(run, copy_back)
    }
}

/// The embedding runtime's work for a run on the fake libascendcl: a
/// [`Runner`](lane_driver::Runner) for any device whose streams are the fake's (backend-acl's
/// `AclDevice` loaded from the fake).
#[derive(Debug)]
pub struct FakeRunner {
    control: Arc<Control>,
    /// The fake device the lane runs on: its rules decide the device's faults.
    device_id: i32,
    seed: u64,
    times: RunTimes,
    host: HostSide,
    concurrency: Concurrency,
    /// The clean status header, encoded once.
    clean_header: Vec<u8>,
}

impl FakeRunner {
    /// A runner launching kernels through `control` for a lane on the fake's device 0: each
    /// run's device time is `times.of(seed, run)`, as on the simulator, and headers use
    /// `layout`.
    pub fn new(control: Arc<Control>, layout: HeaderLayout, seed: u64, times: RunTimes) -> Self {
        Self {
            control,
            device_id: 0,
            seed,
            times,
            host: HostSide {
                faults: Arc::new(Mutex::new(Faults::new(seed))),
                live: Arc::default(),
            },
            concurrency: Concurrency::LANE_THREAD,
            clean_header: status_latch::encode(layout, &Latched::status(None, layout)),
        }
    }

    /// The same runner for a lane on the fake's device `device_id`. (Its kernels go to the
    /// lane's streams whatever the id: the launch acts on the calling thread's device, the
    /// lane's.)
    #[must_use]
    pub const fn on_device(mut self, device_id: i32) -> Self {
        self.device_id = device_id;
        self
    }

    /// The same runner with `rules`, as the simulator takes them: each is installed on the
    /// lane's fake device (its calls count from now) for the device sites, and kept for the
    /// runner's own. The device's kernels do the handshake ([`Semantics::Handshake`]), so a
    /// run's fate, decided at its AICPU launch, reaches its AICore kernel, as on the simulator.
    ///
    /// # Errors
    ///
    /// [`ControlError`] if the fake refused a rule or the switch.
    pub fn with_faults(self, rules: &[FaultRule]) -> Result<Self, ControlError> {
        let device = self.control.device(self.device_id);
        device.set_semantics(Semantics::Handshake(true))?;
        for rule in rules {
            device.install_fault(&rule.to_string())?;
            locked(&self.host.faults).install(rule.clone());
        }
        Ok(self)
    }

    /// The same runner declaring that its prepare and finalise may run on host workers
    /// ([`host_worker`](Self::host_worker)), `prepares_at_once` at a time.
    #[must_use]
    pub const fn with_workers(mut self, prepares_at_once: u8) -> Self {
        self.concurrency = Concurrency { off_lane_thread: true, prepares_at_once };
        self
    }

    /// A host worker sharing this runner's rules and live runs.
    #[must_use]
    pub fn host_worker(&self) -> FakeWorker {
        FakeWorker { host: self.host.clone() }
    }

    /// A handle that turns the runner's rules off (the device's are the fake's to clear).
    pub fn healer(&self) -> Healer {
        Healer(Arc::clone(&self.host.faults))
    }

    /// Launches one kernel of the run: the fake's device decides its faults.
    fn launch(&self, engine: u32, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode> {
        let duration = Duration::from_nanos(self.times.of(self.seed, args.run));
        // The scheduler writes the run's timing buffer and status header and publishes its
        // record; the workers write nothing the host reads.
        let scheduler = engine == ENGINE_AICPU;
        let at = |scheduler: bool, ptr: u64| {
            if scheduler { device_address(ptr) } else { core::ptr::null_mut() }
        };
        let kernel = RunKernel {
            stream: device_address(stream.0),
            engine,
            duration,
            outcome: KernelOutcome::Ok,
            timing: at(scheduler, args.timing.0),
            header: at(scheduler, args.status_header.0),
            header_bytes: if scheduler { &self.clean_header } else { &[] },
            // The run's two kernels are linked by the slot's handshake and the run's epoch.
            handshake: device_address(args.handshake.0),
            record: at(scheduler, args.record.0),
            epoch: args.epoch,
        };
        self.control.launch_lane_run(&kernel, args.run.0).map_err(control_code)
    }
}

/// A handle or device address as the pointer the fake's C surface takes (the fake only
/// looks it up in its tables, never dereferences it).
fn device_address(value: u64) -> *mut core::ffi::c_void {
    // Handles and addresses are pointer-sized values the fake handed out.
    value as usize as *mut core::ffi::c_void
}

/// The ACL code a refused control call returned (500000, internal error, if the control
/// surface itself failed).
fn control_code(error: ControlError) -> AclCode {
    let raw = match error {
        ControlError::Call { code, .. } => code,
        ControlError::NotBuilt { .. } | ControlError::Load { .. } => 500_000,
    };
    AclCode::from_raw(raw).unwrap_or(AclCode::Unknown(raw))
}

impl<D: Device + ?Sized> Runner<D> for FakeRunner {
    fn prepare_run(
        &mut self,
        _device: &mut D,
        run: RunId,
        _slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        self.host.prepare_run(run)
    }

    fn launch_aicore(
        &mut self,
        _device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        self.launch(ENGINE_AICORE, stream, args)?;
        self.host.live().push(args.run);
        Ok(())
    }

    fn launch_aicpu(
        &mut self,
        _device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        self.launch(ENGINE_AICPU, stream, args).map_err(ReturnCode::from)
    }

    fn finalise_run(
        &mut self,
        _device: &mut D,
        run: RunId,
        _slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.host.finalise_run(run, copy_back)
    }

    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }

    fn upload_code(&mut self, _device: &mut D, _code: CodeRef) -> Result<(), ReturnCode> {
        match self.host.decide(Site::Upload, None) {
            Some(Injected::Fail(code)) => Err(code.into()),
            _ => Ok(()),
        }
    }
}
