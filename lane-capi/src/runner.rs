//! The runner adapter: a [`RunLaneRunner`] vtable as a `lane_driver::Runner`.
//!
//! [`CRunner`] calls the C callback, then a *model* runner: on the simulator the model is
//! `SimRunner`, so the C++ runner's bookkeeping runs and the simulated device still runs the
//! kernels; on ACL and on the runtime's device table the model is [`NoModel`] (the callbacks
//! are the real work).

use crate::api::CallbackMark;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use backend_acl::WorkerBinding;
use core::ffi::c_void;
use lane_core::status_latch::{AclCode, ReturnCode};
use lane_core::stream_pair::StreamHandle;
use lane_core::{Cause, CodeRef, FinaliseFailure, Outcome, RunId, SlotId, Verdict};
use lane_driver::{
    AicoreLaunch, Concurrency, Device, DevicePtr, HostWorker, PrepareError, RunArgs, Runner,
};
use lane_service::OutcomeCallback;

use crate::device_ops::TableBinding;
use crate::outcome::{finalise_verdict_to_c, recovery_info, to_c};
use crate::types::{
    RUN_LANE_FINALISE_VALIDATION_FAILED, RUN_LANE_LAUNCH_DECLINED, RUN_LANE_PREPARE_INCOMPATIBLE,
    RunLaneRecoveryInfo, RunLaneRunArgs, RunLaneRunInfo, RunLaneRunner,
};

/// What a submission asked for that the lane does not carry to the runner: the tag (so a
/// callback can name the runtime's dispatch before `submit` has returned the run id) and
/// copy-back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    /// The request's tag.
    pub tag: Option<u64>,
    /// Whether it collects diagnostics.
    pub diagnostics: bool,
    /// Whether to copy outputs back when the run succeeds.
    pub copy_back: bool,
    /// The submit's `user` pointer, as an address (so the table stays `Send`), exposed with
    /// its provenance at the submit and given back to every callback and the outcome.
    pub user: usize,
    /// The run's outcome was taken (`run_lane_poll`, `run_lane_wait`) while `on_outcome` had
    /// still to see it: the entry leaves once it has.
    pub taken: bool,
    /// `on_outcome` saw the run's outcome before it was taken: the entry leaves once it is.
    pub shown: bool,
}

impl Requested {
    /// The submit's `user` pointer.
    #[must_use]
    pub fn user(&self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.user)
    }
}

/// The requests of live runs, keyed by run id. A submit inserts its run's entry as the lane
/// accepts it, under the lane's lock and before any callback of the run can start, so a
/// callback never misses its run's entry (a callback reads it without the lane's lock, so the
/// two locks are only ever taken lane lock first).
pub type Requests = Arc<Mutex<RequestTable>>;

/// The live runs' requests in run-id order: the lane mints ids in increasing order and a
/// submit inserts under the lane's lock, so each entry goes at the back, and a lookup is a
/// binary search. A ring buffer rather than a tree: it allocates only when more runs are live
/// than ever before on the lane, never per run (`tests/allocations.rs`).
#[derive(Debug, Default)]
pub struct RequestTable {
    entries: VecDeque<(u64, Requested)>,
}

impl RequestTable {
    /// Records run `run`'s request. Ids come in increasing order; an id at or below the last
    /// one replaces or joins its place, so the order holds whatever the caller does.
    pub fn insert(&mut self, run: u64, requested: Requested) {
        match self.entries.back() {
            Some(&(last, _)) if last >= run => match self.position(run) {
                Ok(at) => self.entries[at].1 = requested,
                Err(at) => self.entries.insert(at, (run, requested)),
            },
            _ => self.entries.push_back((run, requested)),
        }
    }

    /// Run `run`'s request, if it is live.
    #[must_use]
    pub fn get(&self, run: u64) -> Option<Requested> {
        self.position(run).ok().map(|at| self.entries[at].1)
    }

    /// Forgets run `run`'s request (its outcome was taken); nothing if it has none.
    pub fn remove(&mut self, run: u64) {
        if let Ok(at) = self.position(run) {
            self.entries.remove(at);
        }
    }

    /// Run `run`'s outcome was taken: its request is forgotten, unless `on_outcome` (`shows`)
    /// has still to see it (it reads the run's `user` there), which then forgets it.
    pub fn taken(&mut self, run: u64, shows: bool) {
        self.settle(run, shows, |r| r.taken = true);
    }

    /// `on_outcome` saw run `run`'s outcome: its request is forgotten if the outcome was
    /// taken already.
    pub fn shown(&mut self, run: u64) {
        self.settle(run, true, |r| r.shown = true);
    }

    /// Marks run `run`'s request with `mark`; forgets it once taken and (when `shows`) shown.
    fn settle(&mut self, run: u64, shows: bool, mark: impl FnOnce(&mut Requested)) {
        let Ok(at) = self.position(run) else {
            return;
        };
        let requested = &mut self.entries[at].1;
        mark(requested);
        if requested.taken && (requested.shown || !shows) {
            self.entries.remove(at);
        }
    }

    /// Where run `run` is, or where it would go.
    fn position(&self, run: u64) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&run, |&(id, _)| id)
    }
}

/// How a thread of the lane binds to the device and reads the device's text about a failed
/// callback: through the lane's libascendcl, or through the runtime's device table (its `bind`
/// and `recent_error_message` entries).
#[derive(Clone, Debug)]
pub enum Binding {
    /// The ACL backend's library.
    Acl(WorkerBinding),
    /// The runtime's table (`RUN_LANE_BACKEND_DEVICE_OPS`).
    Table(TableBinding),
}

impl Binding {
    /// Binds the calling thread (`aclrtSetDevice`, or the table's `bind`).
    ///
    /// # Errors
    ///
    /// The bind's code.
    pub fn bind(&self) -> Result<(), AclCode> {
        match self {
            Self::Acl(binding) => binding.bind(),
            Self::Table(binding) => binding.bind(),
        }
    }

    /// The device's force resets so far: a thread bound at a lower count binds again.
    #[must_use]
    pub fn resets(&self) -> u64 {
        match self {
            Self::Acl(binding) => binding.resets(),
            Self::Table(binding) => binding.resets(),
        }
    }

    /// The device's text about the last failed call on this thread (`aclGetRecentErrMsg`, or
    /// the table's `recent_error_message`).
    #[must_use]
    pub fn recent_error_message(&self) -> Option<String> {
        match self {
            Self::Acl(binding) => binding.acl().recent_error_message(),
            Self::Table(binding) => binding.recent_error_message(),
        }
    }
}

/// The vtable, movable to the lane thread.
#[derive(Clone, Copy, Debug)]
pub struct Vtable(RunLaneRunner);

// SAFETY: the header's contract: the callbacks and `user` are called on the lane thread, and
// `prepare` and `finalise` also on worker threads when the runner declares
// `concurrency.off_lane_thread` (the caller then makes them safe to call from any thread, at
// once for different runs); moving the vtable to those threads is what the caller agreed to.
unsafe impl Send for Vtable {}

// SAFETY: shared only by the worker factory, which copies the vtable (plain function and
// `user` pointer values) into each worker; every call through it follows the `Send` contract
// above (prepare and finalise off the lane thread only when the runner declared it).
unsafe impl Sync for Vtable {}

impl Vtable {
    /// Wraps the caller's vtable.
    pub const fn new(runner: RunLaneRunner) -> Self {
        Self(runner)
    }

    /// The callbacks.
    pub const fn get(&self) -> &RunLaneRunner {
        &self.0
    }

    /// What the vtable declares of its prepare and finalise: off the lane thread or not, and
    /// how many prepares at once (0 counts as 1).
    pub const fn concurrency(&self) -> Concurrency {
        let declared = self.0.concurrency;
        Concurrency {
            off_lane_thread: declared.off_lane_thread,
            prepares_at_once: if declared.prepares_at_once == 0 {
                1
            } else {
                declared.prepares_at_once
            },
        }
    }

    /// The service's outcome callback for the vtable's `on_outcome`, if it has one: each
    /// outcome converted to its C struct (with its submit's `user`, from `requests`) and
    /// passed with `user`, by the thread running lane `serial`'s steps, marked as running its
    /// callback for the call.
    pub fn outcome_callback(self, serial: u64, requests: Requests) -> Option<OutcomeCallback> {
        let on_outcome = self.0.on_outcome?;
        // The whole vtable moves into the closure (it is `Send`; a bare `user` is not).
        let vtable = self;
        Some(Box::new(move |outcome: &Outcome| {
            let _mark = CallbackMark::enter(serial);
            let mut c = to_c(outcome);
            c.run_user = run_user(&requests, outcome);
            requests.lock().unwrap_or_else(PoisonError::into_inner).shown(outcome.seq());
            // SAFETY: the caller's callback for this signature; `c` lives across the call.
            unsafe { on_outcome(vtable.get().user, &raw const c) };
        }))
    }
}

/// A model runner that does nothing: on ACL the callbacks are the whole work.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoModel;

impl<D: Device> Runner<D> for NoModel {
    fn prepare_run(&mut self, _: &mut D, _: RunId, _: SlotId, _: bool) -> Result<(), PrepareError> {
        Ok(())
    }

    fn launch_aicore(&mut self, _: &mut D, _: StreamHandle, _: &RunArgs) -> Result<(), ReturnCode> {
        Ok(())
    }

    fn launch_aicpu(&mut self, _: &mut D, _: StreamHandle, _: &RunArgs) -> Result<(), ReturnCode> {
        Ok(())
    }

    fn finalise_run(
        &mut self,
        _: &mut D,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), FinaliseFailure> {
        Ok(())
    }

    fn upload_code(&mut self, _: &mut D, _: CodeRef) -> Result<(), ReturnCode> {
        Ok(())
    }
}

/// The C vtable as a `Runner`, followed by the `model` runner's own work.
#[derive(Debug)]
pub struct CRunner<M> {
    vtable: Vtable,
    requests: Requests,
    model: M,
    /// The model's share of the host work the workers did, not caught up yet.
    deferred: Deferred,
    /// The lane's serial: a thread is marked as this lane's while a callback runs on it.
    serial: u64,
    /// Where a failed callback's text is read (`None` on the simulator: no text).
    text_from: Option<Binding>,
    /// The device's text about the latest failed callback (`aclGetRecentErrMsg`, read on the
    /// calling thread right after it), until the executor takes it.
    message: Option<String>,
}

impl<M> CRunner<M> {
    /// Calls `vtable`'s callbacks, then `model`'s methods; reads each run's request from
    /// `requests`; catches the model up on `deferred` (the workers' host work); marks the
    /// thread a callback runs on as lane `serial`'s while it runs.
    pub const fn new(
        vtable: Vtable,
        requests: Requests,
        model: M,
        deferred: Deferred,
        serial: u64,
    ) -> Self {
        Self { vtable, requests, model, deferred, serial, text_from: None, message: None }
    }

    /// Reads a failed callback's text (`aclGetRecentErrMsg`, or the table's
    /// `recent_error_message`) through `binding`, on the thread the callback ran on, so the
    /// run's outcome carries it.
    #[must_use]
    pub fn reading_text_from(mut self, binding: Binding) -> Self {
        self.text_from = Some(binding);
        self
    }

    /// A callback's return as a result (one of the runtime's latch codes negated, or an ACL
    /// code); on an ACL code, the device's text about it, read now (ACL keeps it per thread,
    /// and the next call replaces it).
    fn checked(&mut self, code: i32) -> Result<(), ReturnCode> {
        ReturnCode::check(code).inspect_err(|e| {
            if matches!(e, ReturnCode::Acl(_)) {
                self.capture_text();
            }
        })
    }

    /// Keeps the device's text about the callback that just failed on this thread.
    fn capture_text(&mut self) {
        self.message = self.text_from.as_ref().and_then(Binding::recent_error_message);
    }

    /// Runs the model's share of the prepares and finalises the workers did, in the order
    /// they did them, before every other runner call of the lane thread but `launch_aicpu`:
    /// so a run's model prepare precedes its launch (its `Prepared` answer was given after
    /// the push), and nothing comes between a run's two launches (on the simulator a model
    /// call there orphans the AICore kernel just launched). The model's results are not the
    /// run's: the callback's were, on the worker.
    fn catch_up<D: Device>(&mut self, device: &mut D)
    where
        M: Runner<D>,
    {
        let Some(deferred) = &self.deferred else {
            return;
        };
        loop {
            let next = deferred.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
            match next {
                Some(ModelWork::Prepare(run, slot, diagnostics)) => {
                    let _ = self.model.prepare_run(device, run, slot, diagnostics);
                }
                Some(ModelWork::Finalise(run, slot, copy_back)) => {
                    let _ = self.model.finalise_run(device, run, slot, copy_back);
                }
                None => return,
            }
        }
    }

    /// Calls `on_poison` or `before_reset`, if any, with what took the device down.
    fn recovery(&self, callback: Option<RecoveryFn>, origin: Option<RunId>, cause: &Cause) {
        if let Some(callback) = callback {
            let info = recovery_info(origin, cause);
            // SAFETY: the caller's callback for this signature; `info` lives across the call.
            unsafe { callback(self.vtable.get().user, &raw const info) };
        }
    }

    fn args(&self, args: &RunArgs) -> RunLaneRunArgs {
        RunLaneRunArgs {
            info: info(&self.requests, args.run, args.slot),
            status_header: address(args.status_header),
            timing: address(args.timing),
            handshake: address(args.handshake),
            record: address(args.record),
            epoch: args.epoch,
            queued: args.queued,
        }
    }

    /// Calls `launch_aicore`: `Declined` when it returned `RUN_LANE_LAUNCH_DECLINED`.
    fn launch_aicore_c(
        &mut self,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<AicoreLaunch, ReturnCode> {
        let Some(callback) = self.vtable.get().launch_aicore else {
            return Ok(AicoreLaunch::Launched);
        };
        let _trace = crate::trace::callback(self.serial, "launch_aicore", args.run.0);
        match self.call_launch(callback, stream, args) {
            RUN_LANE_LAUNCH_DECLINED => Ok(AicoreLaunch::Declined),
            code => self.checked(code).map(|()| AicoreLaunch::Launched),
        }
    }

    /// Calls a launch callback, if any, with the raw stream and the slot's buffers.
    fn launch(
        &mut self,
        callback: Option<LaunchFn>,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        callback.map_or(Ok(()), |callback| {
            let code = self.call_launch(callback, stream, args);
            self.checked(code)
        })
    }

    /// Calls `callback` with the raw stream and the slot's buffers; its return code.
    fn call_launch(&self, callback: LaunchFn, stream: StreamHandle, args: &RunArgs) -> i32 {
        let c_args = self.args(args);
        // SAFETY: the caller supplied the callback for exactly this signature; `c_args` lives
        // across the call; the stream value is the backend's handle (an `aclrtStream` on ACL).
        unsafe {
            callback(
                self.vtable.get().user,
                std::ptr::with_exposed_provenance_mut(stream.0 as usize),
                &raw const c_args,
            )
        }
    }
}

/// `on_poison` or `before_reset`.
type RecoveryFn = unsafe extern "C" fn(*mut c_void, *const RunLaneRecoveryInfo);

/// A launch callback of the vtable.
type LaunchFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const RunLaneRunArgs) -> i32;

/// The verdict told to `finalise_verdict` for a caller that has only `copy_back`.
const fn verdict_of(copy_back: bool) -> Verdict {
    if copy_back { Verdict::Ok } else { Verdict::Cancelled }
}

/// A device address as the `void *` C expects.
fn address(ptr: DevicePtr) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(ptr.0 as usize)
}

/// A run's request, or the default when it has none.
fn requested(requests: &Requests, run: RunId) -> Requested {
    requests.lock().unwrap_or_else(PoisonError::into_inner).get(run.0).unwrap_or_default()
}

/// A run as a callback sees it.
fn info(requests: &Requests, run: RunId, slot: SlotId) -> RunLaneRunInfo {
    let requested = requested(requests, run);
    RunLaneRunInfo {
        run: run.0,
        slot: slot.0,
        has_tag: requested.tag.is_some(),
        tag: requested.tag.unwrap_or(0),
        diagnostics: requested.diagnostics,
        user: requested.user(),
    }
}

/// The submit's `user` of an outcome's run (NULL for a publication, or a run whose request
/// is gone).
#[must_use]
pub fn run_user(requests: &Requests, outcome: &Outcome) -> *mut c_void {
    match outcome {
        Outcome::Run(run) => requested(requests, run.run).user(),
        Outcome::Publication(_) => std::ptr::null_mut(),
    }
}

/// The `prepare` callback's answer (success without one): the lane's sentinel
/// `RUN_LANE_PREPARE_INCOMPATIBLE` (outside the runtime's band), one of the runtime's latch
/// codes negated (its latched failure, terminal), or an ACL code.
fn call_prepare(vtable: &Vtable, info: &RunLaneRunInfo) -> Result<(), PrepareError> {
    let Some(prepare) = vtable.get().prepare else {
        return Ok(());
    };
    let _trace = crate::trace::callback(crate::api::callback_lane(), "prepare", info.run);
    // SAFETY: the caller's callback for this signature; `info` lives across the call.
    let code = unsafe { prepare(vtable.get().user, &raw const *info) };
    if code == RUN_LANE_PREPARE_INCOMPATIBLE {
        return Err(PrepareError::Incompatible);
    }
    ReturnCode::check(code).map_err(PrepareError::from)
}

/// The finalise callback's answer (success without one): `finalise_verdict` with the
/// verdict when the vtable has it, else `finalise` with `copy_back`. It is the lane's sentinel
/// `RUN_LANE_FINALISE_VALIDATION_FAILED` (outside the runtime's band), one of the runtime's
/// latch codes negated (its latched failure), or an ACL code.
fn call_finalise(
    vtable: &Vtable,
    info: &RunLaneRunInfo,
    verdict: &Verdict,
    copy_back: bool,
) -> Result<(), FinaliseFailure> {
    let _trace = crate::trace::callback(crate::api::callback_lane(), "finalise", info.run);
    let code = if let Some(finalise_verdict) = vtable.get().finalise_verdict {
        let told = finalise_verdict_to_c(verdict, copy_back);
        // SAFETY: the caller's callback for this signature; `info` and `told` live across the
        // call.
        unsafe { finalise_verdict(vtable.get().user, &raw const *info, &raw const told) }
    } else if let Some(finalise) = vtable.get().finalise {
        // SAFETY: the caller's callback for this signature; `info` lives across the call.
        unsafe { finalise(vtable.get().user, &raw const *info, copy_back) }
    } else {
        return Ok(());
    };
    if code == RUN_LANE_FINALISE_VALIDATION_FAILED {
        return Err(FinaliseFailure::Validation);
    }
    ReturnCode::check(code).map_err(FinaliseFailure::from)
}

/// A model runner's share of host work a worker did: prepare (run, slot, diagnostics) or
/// finalise (run, slot, copy-back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelWork {
    /// A prepare.
    Prepare(RunId, SlotId, bool),
    /// A finalise.
    Finalise(RunId, SlotId, bool),
}

/// Where workers leave the model's share of their work for the lane thread (the simulator's
/// runner keeps its bookkeeping in the simulated device, which lives on the lane thread);
/// `None` when the model has none (ACL). Allocated once, with room for one job per slot.
pub type Deferred = Option<Arc<Mutex<VecDeque<ModelWork>>>>;

/// A queue for [`Deferred`] with room for every job a lane can have out.
#[must_use]
pub fn deferred() -> Deferred {
    Some(Arc::new(Mutex::new(VecDeque::with_capacity(usize::from(lane_core::MAX_SLOTS)))))
}

/// The C vtable's prepare and finalise on a host worker thread (the runner declared
/// `concurrency.off_lane_thread` and the config asked for workers).
#[derive(Debug)]
pub struct CWorker {
    vtable: Vtable,
    requests: Requests,
    deferred: Deferred,
    /// The device's binding (`None` on the simulator: nothing to bind), and the reset count
    /// this thread bound at.
    binding: Option<(Binding, u64)>,
    /// The device's text about the latest failed callback (`aclGetRecentErrMsg`, read on this
    /// thread right after it), until the service takes it.
    message: Option<String>,
}

impl CWorker {
    /// A worker calling `vtable`'s prepare and finalise; leaves the model's share in
    /// `deferred`. On ACL and on the runtime's table it binds the calling thread now
    /// (`aclrtSetDevice`, the table's `bind`), so it is made on its worker thread.
    ///
    /// # Errors
    ///
    /// The bind's code.
    pub fn new(
        vtable: Vtable,
        requests: Requests,
        deferred: Deferred,
        binding: Option<Binding>,
    ) -> Result<Self, AclCode> {
        let binding = binding
            .map(|binding| {
                let resets = binding.resets();
                binding.bind().map(|()| (binding, resets))
            })
            .transpose()?;
        Ok(Self { vtable, requests, deferred, binding, message: None })
    }

    /// A callback failed with an ACL code: keep the device's text about it, read now on this
    /// thread (ACL keeps it per thread) before another call replaces it. Nothing on the
    /// simulator.
    fn capture_text(&mut self) {
        if let Some((binding, _)) = &self.binding {
            self.message = binding.recent_error_message();
        }
    }

    /// Binds this thread again after a force reset unbound every thread.
    fn rebind(&mut self) -> Result<(), AclCode> {
        let Some((binding, bound_at)) = &mut self.binding else {
            return Ok(());
        };
        let resets = binding.resets();
        if resets != *bound_at {
            binding.bind()?;
            *bound_at = resets;
        }
        Ok(())
    }

    fn defer(&self, work: ModelWork) {
        if let Some(deferred) = &self.deferred {
            deferred.lock().unwrap_or_else(PoisonError::into_inner).push_back(work);
        }
    }
}

impl HostWorker for CWorker {
    /// Binds again after a force reset; a failure hands the job to the lane thread.
    fn bind(&mut self) -> Result<(), AclCode> {
        self.rebind()
    }

    fn prepare_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        let info = RunLaneRunInfo { diagnostics, ..info(&self.requests, run, slot) };
        call_prepare(&self.vtable, &info).inspect_err(|e| {
            if matches!(e, PrepareError::Failed(_)) {
                self.capture_text();
            }
        })?;
        self.defer(ModelWork::Prepare(run, slot, diagnostics));
        Ok(())
    }

    fn finalise_run(
        &mut self,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.finalise_verdict(run, slot, verdict_of(copy_back))
    }

    fn finalise_verdict(
        &mut self,
        run: RunId,
        slot: SlotId,
        verdict: Verdict,
    ) -> Result<(), FinaliseFailure> {
        let copy_back = verdict.is_ok() && requested(&self.requests, run).copy_back;
        let info = info(&self.requests, run, slot);
        let ours = call_finalise(&self.vtable, &info, &verdict, copy_back).inspect_err(|e| {
            if matches!(e, FinaliseFailure::Acl(_)) {
                self.capture_text();
            }
        });
        // The model frees its per-run state whatever the callback said.
        self.defer(ModelWork::Finalise(run, slot, copy_back));
        ours
    }

    /// The device's text read on this worker's thread right after its latest failed callback
    /// (`aclGetRecentErrMsg`), taken.
    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take()
    }
}

impl<D: Device, M: Runner<D>> Runner<D> for CRunner<M> {
    fn prepare_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        let _mark = CallbackMark::enter(self.serial);
        self.catch_up(device);
        let info = RunLaneRunInfo { diagnostics, ..info(&self.requests, run, slot) };
        call_prepare(&self.vtable, &info).inspect_err(|e| {
            if matches!(e, PrepareError::Failed(_)) {
                self.capture_text();
            }
        })?;
        self.model.prepare_run(device, run, slot, diagnostics)
    }

    fn launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        let _mark = CallbackMark::enter(self.serial);
        self.catch_up(device);
        let _trace = crate::trace::callback(self.serial, "launch_aicore", args.run.0);
        self.launch(self.vtable.get().launch_aicore, stream, args)?;
        self.model.launch_aicore(device, stream, args)
    }

    fn try_launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<AicoreLaunch, ReturnCode> {
        let _mark = CallbackMark::enter(self.serial);
        self.catch_up(device);
        if self.launch_aicore_c(stream, args)? == AicoreLaunch::Declined {
            // Nothing was enqueued: the model launches nothing either.
            return Ok(AicoreLaunch::Declined);
        }
        self.model.launch_aicore(device, stream, args)?;
        Ok(AicoreLaunch::Launched)
    }

    fn launch_aicpu(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        let _mark = CallbackMark::enter(self.serial);
        let _trace = crate::trace::callback(self.serial, "launch_aicpu", args.run.0);
        self.launch(self.vtable.get().launch_aicpu, stream, args)?;
        self.model.launch_aicpu(device, stream, args)
    }

    fn on_launched(&mut self, device: &mut D, args: &RunArgs) {
        let _mark = CallbackMark::enter(self.serial);
        if let Some(on_launched) = self.vtable.get().on_launched {
            let info = info(&self.requests, args.run, args.slot);
            // SAFETY: the caller's callback for this signature; `info` lives across the call.
            unsafe { on_launched(self.vtable.get().user, &raw const info) };
        }
        self.model.on_launched(device, args);
    }

    fn finalise_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.finalise_verdict(device, run, slot, verdict_of(copy_back))
    }

    fn finalise_verdict(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        verdict: Verdict,
    ) -> Result<(), FinaliseFailure> {
        let _mark = CallbackMark::enter(self.serial);
        self.catch_up(device);
        // The lane asks for copy-back only for a successful run; the request may decline it.
        let copy_back = verdict.is_ok() && requested(&self.requests, run).copy_back;
        let info = info(&self.requests, run, slot);
        let ours = call_finalise(&self.vtable, &info, &verdict, copy_back).inspect_err(|e| {
            if matches!(e, FinaliseFailure::Acl(_)) {
                self.capture_text();
            }
        });
        // The model frees its per-run state whatever the callback said (finalise is the one
        // release of a prepared run), and the callback's failure is the one reported.
        let model = self.model.finalise_run(device, run, slot, copy_back);
        ours.and(model)
    }

    fn concurrency(&self) -> Concurrency {
        self.vtable.concurrency()
    }

    /// The text read on this thread right after the latest failed callback, taken; else the
    /// model's.
    fn recent_error_message(&mut self) -> Option<String> {
        self.message.take().or_else(|| self.model.recent_error_message())
    }

    fn on_poison(&mut self, device: &mut D, origin: Option<RunId>, cause: Cause) {
        let _mark = CallbackMark::enter(self.serial);
        self.recovery(self.vtable.get().on_poison, origin, &cause);
        self.model.on_poison(device, origin, cause);
    }

    fn before_reset(&mut self, device: &mut D, origin: Option<RunId>, cause: Cause) {
        let _mark = CallbackMark::enter(self.serial);
        self.recovery(self.vtable.get().before_reset, origin, &cause);
        self.model.before_reset(device, origin, cause);
    }

    fn after_reset(&mut self, device: &mut D, recovered: bool) {
        let _mark = CallbackMark::enter(self.serial);
        if let Some(after_reset) = self.vtable.get().after_reset {
            // SAFETY: the caller's callback for this signature.
            unsafe { after_reset(self.vtable.get().user, recovered) };
        }
        self.model.after_reset(device, recovered);
    }

    fn upload_code(&mut self, device: &mut D, code: CodeRef) -> Result<(), ReturnCode> {
        let _mark = CallbackMark::enter(self.serial);
        self.catch_up(device);
        if let Some(upload) = self.vtable.get().upload_code {
            // SAFETY: the caller's callback for this signature.
            self.checked(unsafe { upload(self.vtable.get().user, code.0) })?;
        }
        self.model.upload_code(device, code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(tag: u64) -> Requested {
        Requested { tag: Some(tag), ..Requested::default() }
    }

    #[test]
    fn a_request_is_found_by_its_run_until_it_is_removed_in_any_order() {
        let mut table = RequestTable::default();
        for run in 1..=4 {
            table.insert(run, tagged(run * 10));
        }
        assert_eq!(table.get(3), Some(tagged(30)));
        // Outcomes may be taken out of order (a wait for a later run first).
        table.remove(3);
        table.remove(1);
        assert_eq!(table.get(3), None);
        assert_eq!(table.get(1), None);
        assert_eq!(table.get(2), Some(tagged(20)));
        assert_eq!(table.get(4), Some(tagged(40)));
        // A run with no entry (a publication's id) removes nothing.
        table.remove(9);
        assert_eq!(table.get(4), Some(tagged(40)));
    }

    #[test]
    fn a_request_stays_until_its_outcome_is_both_taken_and_shown_to_on_outcome() {
        let mut table = RequestTable::default();
        for run in 1..=3 {
            table.insert(run, tagged(run));
        }
        // Taken first, then shown: on_outcome still reads its user in between.
        table.taken(1, true);
        assert_eq!(table.get(1).map(|r| r.tag), Some(Some(1)));
        table.shown(1);
        assert_eq!(table.get(1), None);
        // Shown first, then taken.
        table.shown(2);
        assert!(table.get(2).is_some());
        table.taken(2, true);
        assert_eq!(table.get(2), None);
        // Without on_outcome, taking it is the end.
        table.taken(3, false);
        assert_eq!(table.get(3), None);
    }

    #[test]
    fn an_id_out_of_order_keeps_the_table_sorted() {
        let mut table = RequestTable::default();
        table.insert(5, tagged(5));
        table.insert(2, tagged(2));
        table.insert(7, tagged(7));
        table.insert(5, tagged(55));
        assert_eq!(table.get(2), Some(tagged(2)));
        assert_eq!(table.get(5), Some(tagged(55)));
        assert_eq!(table.get(7), Some(tagged(7)));
        assert_eq!(table.get(6), None);
    }
}
