//! [`SimRunner`]: the runner's calls on the device model. Preparation and finalisation cost
//! host time, finalisation releases the run's slot buffers, and a code upload makes the next
//! AICore launch load its binary again; the two kernel launches live in `kernels.rs`.

use lane_core::status_latch::ReturnCode;
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId};
use lane_driver::{PrepareError, RunArgs, Runner};

use super::{Named, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};

/// The simulation's [`Runner`]: host preparation and finalisation cost host time, and the
/// two kernel launches enqueue the run's kernels, all through the [`SimDevice`] it is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimRunner;

impl Runner<SimDevice> for SimRunner {
    fn prepare_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        diagnostics: bool,
    ) -> Result<(), PrepareError> {
        device.call(
            "prepare_run",
            Cost::Prepare,
            Named::Run(Some(run)),
            |d, _| {
                let others_live = d.live_runs.keys().any(|&r| r != run);
                match d.model.decide(Site::Prepare, Some(run.0)) {
                    Some(Injected::Fail(code)) => Err(PrepareError::Failed(code)),
                    // Only an overlapping prepare can be incompatible; alone, it always fits.
                    Some(Injected::Incompatible) if others_live => Err(PrepareError::Incompatible),
                    // The args upload is a device copy: a bad device fails it.
                    _ => d.sticky_now().map_err(PrepareError::Failed),
                }
            },
            |_| {
                let diagnostics = if diagnostics { " diagnostics" } else { "" };
                format!("run {} slot {}{diagnostics}", run.0, slot.0)
            },
        )
    }

    fn launch_aicore(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        device.run_launch_aicore(stream, args).map_err(ReturnCode::from)
    }

    fn launch_aicpu(
        &mut self,
        device: &mut SimDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        device.run_launch_aicpu(stream, args).map_err(ReturnCode::from)
    }

    fn finalise_run(
        &mut self,
        device: &mut SimDevice,
        run: RunId,
        slot: SlotId,
        copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        device.call(
            "finalise_run",
            Cost::Finalise,
            Named::Run(Some(run)),
            |d, _| {
                let result = if copy_back {
                    d.sticky_now().map_err(FinaliseFailure::Acl).and_then(|()| {
                        match d.model.decide(Site::Finalise, Some(run.0)) {
                            Some(Injected::Fail(code)) => Err(FinaliseFailure::Acl(code)),
                            Some(Injected::Validation) => Err(FinaliseFailure::Validation),
                            _ => Ok(()),
                        }
                    })
                } else {
                    Ok(())
                };
                // Finalisation releases the run's slot buffers for the next lease.
                d.live_runs.remove(&run);
                d.run_ends.remove(&run);
                d.model.retire_run(run.0);
                result
            },
            |_| {
                let copy_back = if copy_back { " copy-back" } else { "" };
                format!("run {} slot {}{copy_back}", run.0, slot.0)
            },
        )
    }

    fn upload_code(&mut self, device: &mut SimDevice, code: CodeRef) -> Result<(), ReturnCode> {
        device
            .call(
                "upload_code",
                Cost::Upload,
                Named::Run(None),
                |d, _| {
                    d.sticky_now().and_then(|()| {
                        match d.model.decide(Site::Upload, None) {
                            Some(Injected::Fail(code)) => Err(code),
                            _ => {
                                // New code: the next AICore launch loads its binary again.
                                d.binary_loaded = false;
                                Ok(())
                            }
                        }
                    })
                },
                |_| format!("code {}", code.0),
            )
            .map_err(ReturnCode::from)
    }
}
