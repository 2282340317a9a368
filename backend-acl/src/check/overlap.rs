//! The device check's overlap step (issue 45 item 7): the lane at launch depth one, then at
//! depth two, in one process on one device, each arm's runs timed by event timestamps.
//!
//! The check has no runtime's kernels, so a stand-in runner ([`CopyKernels`]) launches async
//! copies on the run's streams instead: the AICore "kernel" is a device-to-device copy big
//! enough to take measurable device time, and the AICPU "kernel" copies a clean status header
//! and an ok result record stamped with the run's epoch from pinned host memory into the
//! slot's buffers, so the lane reads a clean run. The gaps between runs then come from the
//! lane's own start and boundary events.

use std::collections::HashMap;

use lane_core::status_latch::{
    self, HeaderLayout, RECORD_BYTES, RecordWrite, ReturnCode, Status, encode_record,
};
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    CodeRef, DeviceTiming, FinaliseFailure, Outcome, Profile, ProfileSpec, RunId, RunRequest,
    SlotId,
};
use lane_driver::{
    Device, DevicePtr, Driver, HostPtr, PinnedCopies, PrepareError, Report, RunArgs, Runner,
};

use super::{Verdict, failed};
use crate::device::AclDevice;

/// One launch-depth arm: its depth and each run's device timing, in submission order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlapArm {
    /// The arm's launch depth.
    pub depth: u8,
    /// Each run's timing, in submission order.
    pub timings: Vec<DeviceTiming>,
}

/// The stand-in runner: copies on the run's streams instead of kernels.
struct CopyKernels {
    layout: HeaderLayout,
    /// The AICore copy's source and destination, `bytes` each.
    src: DevicePtr,
    dst: DevicePtr,
    bytes: usize,
    /// Each slot's pinned host staging: the header, then the record. A slot is reused only
    /// once its run ended, so the copies out of it have finished.
    staging: HashMap<SlotId, HostPtr>,
}

impl CopyKernels {
    fn staging(&mut self, d: &mut AclDevice, slot: SlotId) -> Result<HostPtr, ReturnCode> {
        if let Some(&ptr) = self.staging.get(&slot) {
            return Ok(ptr);
        }
        let ptr = d.malloc_host(self.layout.size() + RECORD_BYTES)?;
        self.staging.insert(slot, ptr);
        Ok(ptr)
    }

    /// Gives back the pinned staging.
    fn free(self, d: &mut AclDevice) -> Result<(), String> {
        let mut result = Ok(());
        for ptr in self.staging.into_values() {
            if let Err(code) = d.free_host(ptr) {
                result = Err(failed(d, "aclrtFreeHost", code));
            }
        }
        result
    }
}

impl Runner<AclDevice> for CopyKernels {
    fn prepare_run(
        &mut self,
        _: &mut AclDevice,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), PrepareError> {
        Ok(())
    }

    fn launch_aicore(
        &mut self,
        d: &mut AclDevice,
        stream: StreamHandle,
        _: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.bind_thread()?;
        d.memcpy_device_async(self.dst, self.src, self.bytes, stream)?;
        Ok(())
    }

    fn launch_aicpu(
        &mut self,
        d: &mut AclDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.bind_thread()?;
        let header_bytes = self.layout.size();
        let mut bytes = vec![0; header_bytes + RECORD_BYTES];
        // A clean header always encodes into its own layout's size.
        let _ = status_latch::encode_into(
            self.layout,
            &Status::clean(self.layout),
            &mut bytes[..header_bytes],
        );
        bytes[header_bytes..].copy_from_slice(&encode_record(args.epoch, &RecordWrite::Ok));
        let staging = self.staging(d, args.slot)?;
        d.write_host(staging, &bytes)?;
        d.memcpy_to_device_async(args.status_header, staging, header_bytes, stream)?;
        d.memcpy_to_device_async(
            args.record,
            HostPtr(staging.0 + header_bytes as u64),
            RECORD_BYTES,
            stream,
        )?;
        Ok(())
    }

    fn finalise_run(
        &mut self,
        _: &mut AclDevice,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), FinaliseFailure> {
        Ok(())
    }

    fn upload_code(&mut self, _: &mut AclDevice, _: CodeRef) -> Result<(), ReturnCode> {
        Ok(())
    }
}

/// Runs `runs` runs at `depth` on `device` (given back, the lane closed) and returns each
/// run's timing; a run that did not end ok, or has no timing, is an error.
fn arm(
    device: AclDevice,
    profile: Profile,
    runner: CopyKernels,
    depth: u8,
    runs: usize,
) -> (AclDevice, CopyKernels, Result<OverlapArm, String>) {
    let profile = Profile::custom(ProfileSpec { launch_depth: depth, ..profile.spec() });
    let profile = match profile {
        Ok(profile) => profile,
        Err(e) => return (device, runner, Err(format!("depth {depth}: {e:?}"))),
    };
    let mut driver = Driver::new(profile, device, runner);
    let mut reports: Vec<Report> = Vec::new();
    let mut driven = (|| {
        let mut submitted = 0;
        while submitted < runs {
            match driver.submit(RunRequest::new())? {
                Ok(_) => submitted += 1,
                Err(_) => {
                    driver.turn()?;
                }
            }
            reports.extend(std::iter::from_fn(|| driver.poll_report()));
        }
        driver.run_until_idle()
    })()
    .map_err(|e| format!("depth {depth}: the lane: {e}"));
    let closed = driver
        .close()
        .and_then(|_| driver.run_until_idle())
        .map_err(|e| format!("depth {depth}: closing the lane: {e}"));
    driven = driven.and(closed);
    reports.extend(std::iter::from_fn(|| driver.poll_report()));
    let (device, runner, _) = driver.into_parts();
    let result = driven.and_then(|()| {
        let timings = reports
            .iter()
            .filter_map(|report| match &report.outcome {
                Outcome::Run(r) if r.verdict.is_ok() => Some(
                    r.timing.ok_or_else(|| format!("depth {depth}: {report} has no device timing")),
                ),
                Outcome::Run(_) => Some(Err(format!("depth {depth}: {report}"))),
                _ => None,
            })
            .collect::<Result<Vec<_>, _>>()?;
        if timings.len() == runs {
            Ok(OverlapArm { depth, timings })
        } else {
            Err(format!("depth {depth}: {} of {runs} runs reported", timings.len()))
        }
    });
    (device, runner, result)
}

/// The step: depth one, then depth two, `runs` runs each, each AICore stand-in a copy of
/// `copy_bytes`. Not checked without event timestamps (the library lacks
/// `aclrtEventGetTimestamp`): the runs could not be timed on one clock.
pub(super) fn check_overlap(
    device: AclDevice,
    profile: Profile,
    runs: usize,
    copy_bytes: usize,
) -> (AclDevice, Verdict, String, Vec<OverlapArm>) {
    let mut d = device;
    if !d.event_timestamps() {
        return (
            d,
            Verdict::NotChecked,
            "the library lacks aclrtEventGetTimestamp: no device timestamps to measure the gap \
             between runs"
                .to_owned(),
            Vec::new(),
        );
    }
    let bytes = copy_bytes.max(1);
    let src = match d.malloc(bytes) {
        Ok(src) => src,
        Err(code) => {
            let detail = failed(&mut d, "aclrtMalloc", code);
            return (d, Verdict::Failed, detail, Vec::new());
        }
    };
    let dst = match d.malloc(bytes) {
        Ok(dst) => dst,
        Err(code) => {
            let detail = failed(&mut d, "aclrtMalloc", code);
            let _ = d.free(src);
            return (d, Verdict::Failed, detail, Vec::new());
        }
    };
    let mut runner =
        CopyKernels { layout: profile.header(), src, dst, bytes, staging: HashMap::new() };
    let mut arms = Vec::new();
    let mut result = Ok(());
    for depth in [1, 2] {
        let (back, back_runner, measured) = arm(d, profile, runner, depth, runs);
        d = back;
        runner = back_runner;
        match measured {
            Ok(measured) => arms.push(measured),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let freed = runner.free(&mut d);
    let freed_device = d.free(dst).and(d.free(src)).map_err(|c| failed(&mut d, "aclrtFree", c));
    let (verdict, detail) = match result.and(freed).and(freed_device) {
        Ok(()) => (
            Verdict::Passed,
            format!(
                "depth one, then depth two, {runs} runs each on one device, every run ok; each \
                 AICore kernel a {bytes}-byte device-to-device copy, each AICPU kernel the \
                 copies of a clean header and record (each arm's gaps below)"
            ),
        ),
        Err(detail) => (Verdict::Failed, detail),
    };
    (d, verdict, detail, arms)
}
