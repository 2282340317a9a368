//! The runner adapter: a [`RunLaneRunner`] vtable as a `lane_driver::Runner`.
//!
//! [`CRunner`] calls the C callback, then a *model* runner: on the simulator the model is
//! `SimRunner`, so the C++ runner's bookkeeping runs and the simulated device still runs the
//! kernels; on ACL the model is [`NoModel`] (the callbacks are the real work).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use core::ffi::c_void;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, Outcome, RunId, SlotId};
use lane_driver::{Device, DevicePtr, PrepareError, RunArgs, Runner};
use lane_service::OutcomeCallback;

use crate::outcome::to_c;
use crate::types::{
    RUN_LANE_FINALISE_VALIDATION_FAILED, RUN_LANE_PREPARE_INCOMPATIBLE, RunLaneRunArgs,
    RunLaneRunInfo, RunLaneRunner,
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
}

/// The requests of live runs, keyed by run id. The submitting thread holds the lock across
/// the lane's `submit` and the insert, and the lane thread takes it before reading, so a
/// callback never misses its run's entry (the lane lock is never held by the lane thread
/// during a callback, so the two locks never wait on each other).
pub type Requests = Arc<Mutex<BTreeMap<u64, Requested>>>;

/// The vtable, movable to the lane thread.
#[derive(Clone, Copy, Debug)]
pub struct Vtable(RunLaneRunner);

// SAFETY: the header's contract: every callback and `user` are used on the lane thread only
// (and never concurrently), so moving them there once is what the caller agreed to.
unsafe impl Send for Vtable {}

impl Vtable {
    /// Wraps the caller's vtable.
    pub const fn new(runner: RunLaneRunner) -> Self {
        Self(runner)
    }

    /// The callbacks.
    pub const fn get(&self) -> &RunLaneRunner {
        &self.0
    }

    /// The service's outcome callback for the vtable's `on_outcome`, if it has one: each
    /// outcome converted to its C struct and passed with `user`, on the lane thread.
    pub fn outcome_callback(self) -> Option<OutcomeCallback> {
        let on_outcome = self.0.on_outcome?;
        // The whole vtable moves into the closure (it is `Send`; a bare `user` is not).
        let vtable = self;
        Some(Box::new(move |outcome: &Outcome| {
            let c = to_c(outcome);
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

    fn launch_aicore(&mut self, _: &mut D, _: StreamHandle, _: &RunArgs) -> Result<(), AclCode> {
        Ok(())
    }

    fn launch_aicpu(&mut self, _: &mut D, _: StreamHandle, _: &RunArgs) -> Result<(), AclCode> {
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

    fn upload_code(&mut self, _: &mut D, _: CodeRef) -> Result<(), AclCode> {
        Ok(())
    }
}

/// The C vtable as a `Runner`, followed by the `model` runner's own work.
#[derive(Debug)]
pub struct CRunner<M> {
    vtable: Vtable,
    requests: Requests,
    model: M,
}

impl<M> CRunner<M> {
    /// Calls `vtable`'s callbacks, then `model`'s methods; reads each run's request from
    /// `requests`.
    pub const fn new(vtable: Vtable, requests: Requests, model: M) -> Self {
        Self {
            vtable,
            requests,
            model,
        }
    }

    fn requested(&self, run: RunId) -> Requested {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&run.0)
            .copied()
            .unwrap_or_default()
    }

    fn info(&self, run: RunId, slot: SlotId) -> RunLaneRunInfo {
        let requested = self.requested(run);
        RunLaneRunInfo {
            run: run.0,
            slot: slot.0,
            has_tag: requested.tag.is_some(),
            tag: requested.tag.unwrap_or(0),
            diagnostics: requested.diagnostics,
        }
    }

    fn args(&self, args: &RunArgs) -> RunLaneRunArgs {
        RunLaneRunArgs {
            info: self.info(args.run, args.slot),
            status_header: address(args.status_header),
            timing: address(args.timing),
            handshake: address(args.handshake),
        }
    }

    /// Calls a launch callback with the raw stream and the slot's buffers.
    fn launch<D: Device>(
        &self,
        device: &mut D,
        callback: Option<
            unsafe extern "C" fn(*mut c_void, *mut c_void, *const RunLaneRunArgs) -> i32,
        >,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        let Some(callback) = callback else {
            return Ok(());
        };
        let c_args = self.args(args);
        // SAFETY: the caller supplied the callback for exactly this signature; `c_args` lives
        // across the call; the stream value is the backend's handle (an `aclrtStream` on ACL).
        let code = unsafe {
            callback(
                self.vtable.get().user,
                std::ptr::with_exposed_provenance_mut(stream.0 as usize),
                &raw const c_args,
            )
        };
        checked(device, code)
    }
}

/// A callback's return as a result; on a failure the device keeps its own text about it
/// (`aclGetRecentErrMsg` on ACL), so the outcome's line carries it.
fn checked<D: Device>(device: &mut D, code: i32) -> Result<(), AclCode> {
    AclCode::check(code).inspect_err(|_| device.capture_error_message())
}

/// A device address as the `void *` C expects.
fn address(ptr: DevicePtr) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(ptr.0 as usize)
}

impl<D: Device, M: Runner<D>> Runner<D> for CRunner<M> {
    fn prepare_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        if let Some(prepare) = self.vtable.get().prepare {
            let info = RunLaneRunInfo {
                diagnostics,
                ..self.info(run, slot)
            };
            // SAFETY: the caller's callback for this signature; `info` lives across the call.
            let code = unsafe { prepare(self.vtable.get().user, &raw const info) };
            if code == RUN_LANE_PREPARE_INCOMPATIBLE {
                return Err(PrepareError::Incompatible);
            }
            checked(device, code).map_err(PrepareError::Failed)?;
        }
        self.model.prepare_run(device, run, slot, diagnostics)
    }

    fn launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        self.launch(device, self.vtable.get().launch_aicore, stream, args)?;
        self.model.launch_aicore(device, stream, args)
    }

    fn launch_aicpu(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        self.launch(device, self.vtable.get().launch_aicpu, stream, args)?;
        self.model.launch_aicpu(device, stream, args)
    }

    fn finalise_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        // The lane asks for copy-back only for a successful run; the request may decline it.
        let copy_back = copy_back && self.requested(run).copy_back;
        let ours = match self.vtable.get().finalise {
            None => Ok(()),
            Some(finalise) => {
                let info = self.info(run, slot);
                // SAFETY: the caller's callback for this signature; `info` lives across it.
                let code = unsafe { finalise(self.vtable.get().user, &raw const info, copy_back) };
                if code == RUN_LANE_FINALISE_VALIDATION_FAILED {
                    Err(FinaliseFailure::Validation)
                } else {
                    checked(device, code).map_err(FinaliseFailure::Acl)
                }
            }
        };
        // The model frees its per-run state whatever the callback said (finalise is the one
        // release of a prepared run), and the callback's failure is the one reported.
        let model = self.model.finalise_run(device, run, slot, copy_back);
        ours.and(model)
    }

    fn upload_code(&mut self, device: &mut D, code: CodeRef) -> Result<(), AclCode> {
        if let Some(upload) = self.vtable.get().upload_code {
            // SAFETY: the caller's callback for this signature.
            checked(device, unsafe { upload(self.vtable.get().user, code.0) })?;
        }
        self.model.upload_code(device, code)
    }
}
