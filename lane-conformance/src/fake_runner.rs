//! [`FakeRunner`]: the embedding runtime's side of a run on the fake libascendcl. It launches
//! each run's AICore and AICPU kernels on the lane's streams through the fake's control
//! surface (`runlanefake_launch`), and does the host-side prepare, finalise and upload.
//!
//! A kernel runs for the run's device time in real time on the stream's worker thread. The
//! AICPU kernel (the scheduler, which latches codes) writes the slot's timing buffer (device
//! start and end) and its status header: a clean header encoded with status-latch, or, for a
//! run the plan latches, the latched one, at the `RunArgs` pointers. Faults the plan names
//! for a run are armed as the fake's own fault rules right before the launch they hit
//! (`runlanefake_fail_call` for a refused launch, `runlanefake_fault_kernel` for a device
//! exception, a hang or a latch), so the fake decides them exactly as it would any other
//! rule.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use backend_sim::{Latched, RunTimes};
use lane_core::status_latch::{self, AclCode, HeaderLayout, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId};
use lane_driver::{Concurrency, Device, HostWorker, PrepareError, RunArgs, Runner};
use run_lane_fake_ascendcl::{
    Control, ControlError, ENGINE_AICORE, ENGINE_AICPU, Outcome as KernelOutcome, RunKernel,
};

/// The symbol the fake's launch failures are injected on.
const LAUNCH_SYMBOL: &str = "runlanefake_launch_run";

/// Which engine a kernel fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The AICore workers.
    Aicore,
    /// The AICPU scheduler.
    Aicpu,
}

impl Engine {
    const fn raw(self) -> u32 {
        match self {
            Self::Aicore => ENGINE_AICORE,
            Self::Aicpu => ENGINE_AICPU,
        }
    }
}

/// A fault the runner applies to one run (or, with [`RunSelect::All`], to every run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFault {
    /// Prepare fails with this code (the runtime's own failure: nothing reaches the fake).
    Prepare(AclCode),
    /// Prepare reports "incompatible while the predecessor runs" (only while another run is
    /// launched and not finalised, as the simulator decides it).
    PrepareIncompatible,
    /// The fake refuses this launch with the code (a fail-call rule on the launch).
    LaunchRefused(Engine, AclCode),
    /// The kernel on this engine ends in a device exception (507015 AICore, 507018 AICPU).
    Exception(Engine),
    /// The kernel on this engine hangs until the device op timeout (507014 or 507017).
    Hang(Engine),
    /// The scheduler exits cleanly with this latch in the status header.
    Latch(Latched),
    /// The scheduler exits cleanly but publishes no result record (it left its normal path
    /// while its streams stay clean).
    Silent,
    /// Copy-back fails with this code.
    CopyBack(AclCode),
    /// Host validation of the output fails.
    Validation,
}

/// Which runs a [`RunFault`] hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunSelect {
    /// Every run.
    All,
    /// These run ids.
    Runs(Vec<u64>),
}

impl RunSelect {
    fn contains(&self, run: RunId) -> bool {
        match self {
            Self::All => true,
            Self::Runs(runs) => runs.contains(&run.0),
        }
    }
}

/// The faults a [`FakeRunner`] applies, in install order (for each site, the first rule that
/// selects the run wins, as in the simulator).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunPlan {
    /// `(which runs, what)`.
    pub faults: Vec<(RunSelect, RunFault)>,
    /// Code uploads that fail: the n-th upload (from 1) with the code, or every one (`None`).
    pub upload_failures: Vec<(Option<u64>, AclCode)>,
}

impl RunPlan {
    /// The first fault for `run` that `site` accepts.
    fn find<T>(&self, run: RunId, site: impl Fn(RunFault) -> Option<T>) -> Option<T> {
        self.faults
            .iter()
            .filter(|(select, _)| select.contains(run))
            .find_map(|(_, fault)| site(*fault))
    }
}

/// Turns the plan's faults off (liveness: the runner then runs every run clean). Cloned out
/// of the runner before the driver takes it; shared with its host workers.
#[derive(Clone, Debug, Default)]
pub struct Healer(Arc<AtomicBool>);

impl Healer {
    /// From now on the runner applies no fault.
    pub fn heal(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn healed(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The host side of the runner that its host workers share with it: the fault plan, the
/// healer, and the runs launched and not finalised (prepare-incompatible overlaps only
/// these).
#[derive(Clone, Debug, Default)]
struct HostSide {
    plan: Arc<RunPlan>,
    healed: Healer,
    live: Arc<Mutex<Vec<RunId>>>,
}

impl HostSide {
    fn fault<T>(&self, run: RunId, site: impl Fn(RunFault) -> Option<T>) -> Option<T> {
        if self.healed.healed() {
            return None;
        }
        self.plan.find(run, site)
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<RunId>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn prepare_run(&self, run: RunId) -> Result<(), PrepareError> {
        let others_live = self.live().iter().any(|r| *r != run);
        match self.fault(run, |f| match f {
            RunFault::Prepare(code) => Some(Some(code)),
            RunFault::PrepareIncompatible => Some(None),
            _ => None,
        }) {
            Some(Some(code)) => Err(PrepareError::Failed(code)),
            // Only an overlapping prepare can be incompatible; alone, it always fits.
            Some(None) if others_live => Err(PrepareError::Incompatible),
            _ => Ok(()),
        }
    }

    fn finalise_run(&self, run: RunId, copy_back: bool) -> Result<(), FinaliseFailure> {
        self.live().retain(|r| *r != run);
        if !copy_back {
            return Ok(());
        }
        match self.fault(run, |f| match f {
            RunFault::CopyBack(code) => Some(Some(code)),
            RunFault::Validation => Some(None),
            _ => None,
        }) {
            Some(Some(code)) => Err(FinaliseFailure::Acl(code)),
            Some(None) => Err(FinaliseFailure::Validation),
            None => Ok(()),
        }
    }
}

/// A [`FakeRunner`]'s prepare and finalise on a host worker thread
/// ([`FakeRunner::host_worker`]): the same fault plan, healer and live runs as the runner.
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
    /// The device whose kernel and launch rules a run's faults are armed on (the lane's).
    device_id: i32,
    layout: HeaderLayout,
    seed: u64,
    times: RunTimes,
    host: HostSide,
    concurrency: Concurrency,
    uploads: u64,
    /// The clean status header, encoded once.
    clean_header: Vec<u8>,
}

impl FakeRunner {
    /// A runner launching kernels through `control` for a lane on the fake's device 0 (see
    /// [`on_device`](Self::on_device)): each run's device time is `times.of(seed, run)` (the
    /// simulator's own function, so a jittered workload runs the same kernels on both
    /// backends), and headers use `layout`.
    pub fn new(control: Arc<Control>, layout: HeaderLayout, seed: u64, times: RunTimes) -> Self {
        Self {
            control,
            device_id: 0,
            layout,
            seed,
            times,
            host: HostSide::default(),
            concurrency: Concurrency::LANE_THREAD,
            uploads: 0,
            clean_header: status_latch::encode(layout, &Latched::status(None, layout)),
        }
    }

    /// The same runner for a lane on the fake's device `device_id`: a run's faults are armed
    /// as that device's rules. (Its kernels go to the lane's streams whatever the id: the
    /// launch acts on the calling thread's device, the lane's.)
    #[must_use]
    pub const fn on_device(mut self, device_id: i32) -> Self {
        self.device_id = device_id;
        self
    }

    /// The same runner applying `plan`.
    #[must_use]
    pub fn with_plan(mut self, plan: RunPlan) -> Self {
        self.host.plan = Arc::new(plan);
        self
    }

    /// The same runner declaring that its prepare and finalise may run on host workers
    /// ([`host_worker`](Self::host_worker)), `prepares_at_once` at a time.
    #[must_use]
    pub const fn with_workers(mut self, prepares_at_once: u8) -> Self {
        self.concurrency = Concurrency {
            off_lane_thread: true,
            prepares_at_once,
        };
        self
    }

    /// A host worker sharing this runner's fault plan, healer and live runs.
    #[must_use]
    pub fn host_worker(&self) -> FakeWorker {
        FakeWorker {
            host: self.host.clone(),
        }
    }

    /// A handle that turns the plan off.
    pub fn healer(&self) -> Healer {
        self.host.healed.clone()
    }

    fn fault<T>(&self, run: RunId, site: impl Fn(RunFault) -> Option<T>) -> Option<T> {
        self.host.fault(run, site)
    }

    /// Arms the fake's rule for this launch (the plan's first fault for this run and
    /// engine), then launches the kernel.
    fn launch(&self, engine: Engine, stream: StreamHandle, args: &RunArgs) -> Result<(), AclCode> {
        let armed = self.fault(args.run, |f| match f {
            RunFault::LaunchRefused(e, code) if e == engine => Some(Armed::Refused(code)),
            RunFault::Exception(e) if e == engine => {
                Some(Armed::Kernel(KernelOutcome::Exception, None))
            }
            RunFault::Hang(e) if e == engine => Some(Armed::Kernel(KernelOutcome::Hang, None)),
            RunFault::Latch(latched) if engine == Engine::Aicpu => {
                Some(Armed::Kernel(KernelOutcome::Latch, Some(latched)))
            }
            RunFault::Silent if engine == Engine::Aicpu => {
                Some(Armed::Kernel(KernelOutcome::Silent, None))
            }
            _ => None,
        });
        let rules = self.control.device(self.device_id);
        match armed {
            None => {}
            Some(Armed::Refused(code)) => rules
                .fail_call(LAUNCH_SYMBOL, code.raw(), 0, 1)
                .map_err(control_code)?,
            Some(Armed::Kernel(outcome, latched)) => {
                let header = latched.map_or_else(Vec::new, |l| {
                    status_latch::encode(self.layout, &Latched::status(Some(l), self.layout))
                });
                rules
                    .fault_kernel(outcome, engine.raw(), 0, 1, &header)
                    .map_err(control_code)?;
            }
        }
        let duration = Duration::from_nanos(self.times.of(self.seed, args.run));
        // The scheduler writes the run's timing buffer and status header; the workers
        // write nothing the host reads.
        let (timing, header, bytes): (*mut core::ffi::c_void, _, &[u8]) = match engine {
            Engine::Aicpu => (
                device_address(args.timing.0),
                device_address(args.status_header.0),
                &self.clean_header,
            ),
            Engine::Aicore => (core::ptr::null_mut(), core::ptr::null_mut(), &[]),
        };
        // The run's two kernels are linked by the slot's handshake and the run's epoch; the
        // scheduler publishes the run's result record when both end on their normal path.
        let record = match engine {
            Engine::Aicpu => device_address(args.record.0),
            Engine::Aicore => core::ptr::null_mut(),
        };
        self.control
            .launch_run(&RunKernel {
                stream: device_address(stream.0),
                engine: engine.raw(),
                duration,
                outcome: KernelOutcome::Ok,
                timing,
                header,
                header_bytes: bytes,
                handshake: device_address(args.handshake.0),
                record,
                epoch: args.epoch,
            })
            .map_err(control_code)
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
        self.launch(Engine::Aicore, stream, args)?;
        self.host.live().push(args.run);
        Ok(())
    }

    fn launch_aicpu(
        &mut self,
        _device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        self.launch(Engine::Aicpu, stream, args)
            .map_err(ReturnCode::from)
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
        self.uploads += 1;
        if self.host.healed.healed() {
            return Ok(());
        }
        let n = self.uploads;
        match self
            .host
            .plan
            .upload_failures
            .iter()
            .find(|(which, _)| which.is_none_or(|k| k == n))
        {
            Some((_, code)) => Err((*code).into()),
            None => Ok(()),
        }
    }
}

/// The fake rule armed for one launch.
enum Armed {
    Refused(AclCode),
    Kernel(KernelOutcome, Option<Latched>),
}
