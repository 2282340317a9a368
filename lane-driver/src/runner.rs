//! The [`Runner`] trait: the embedding runtime's work for a run. On hardware the runtime owns
//! kernels and host buffers, so the lane asks it to prepare, launch, finalise and upload;
//! the lane's own calls are the [`Device`]'s.

use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId};

use crate::device::{Device, DevicePtr};

/// What a run's two kernels receive: its identity and its slot's device buffers (L-13),
/// three regions of the slot's one allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// The run.
    pub run: RunId,
    /// Its slot.
    pub slot: SlotId,
    /// The slot's status header (the runtime latches its codes here).
    pub status_header: DevicePtr,
    /// The slot's timing buffer: device start and end, two little-endian u64 nanoseconds.
    pub timing: DevicePtr,
    /// The slot's handshake region (AICore workers report here; the AICPU kernel waits on it).
    pub handshake: DevicePtr,
}

/// Why the runner's prepare failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrepareError {
    /// The run cannot be prepared while its predecessor runs (the C++ runtime's -3). Nothing
    /// was touched.
    Incompatible,
    /// Preparation failed with this code; the runner freed what it had allocated.
    Failed(AclCode),
}

/// The embedding runtime's work for a run: host preparation, the two kernel launches,
/// finalisation, code upload. Each method gets the device, so a runner can launch on the
/// lane's streams (the simulator's runner also advances its virtual clock through it).
pub trait Runner<D: Device + ?Sized> {
    /// Prepare `run` into `slot` (host runtime buffer, arena, args upload). Touches no stream.
    fn prepare_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError>;
    /// `rtKernelLaunchWithHandleV2` on the AICore stream: the run's AICore workers.
    fn launch_aicore(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode>;
    /// `rtsLaunchCpuKernel` on the AICPU stream: the run's scheduler, which spins until its
    /// AICore workers report through the handshake.
    fn launch_aicpu(
        &mut self,
        device: &mut D,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode>;
    /// Copy outputs back (when `copy_back`), validate, free per-run resources.
    fn finalise_run(
        &mut self,
        device: &mut D,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure>;
    /// Upload published AICore code.
    fn upload_code(&mut self, device: &mut D, code: CodeRef) -> Result<(), AclCode>;
}
