//! The completion wait: the awaited run as a [`DeviceWait`], the drain's wait, and the
//! single-thread wait on the device itself.

use lane_core::{Effect, Timestamp};

use super::{Awaited, Executor, Wait};
use crate::device::Device;
use crate::driver::DriverError;
use crate::runner::Runner;
use crate::waiter::{DeviceWait, OnDevice, Readback, run_device_wait};

impl<D: Device, R: Runner<D>> Executor<D, R> {
    /// Keeps the status bytes a completion wait read with the run's record
    /// ([`Wait::Completed`]): the run's status read answers from them instead of a copy of
    /// its own. Bookkeeping only, no device call; a later run of the slot (another lease)
    /// never reads them.
    pub fn keep_readback(&mut self, readback: Readback) {
        if let Some(kept) = self.kept.get_mut(usize::from(readback.lease.slot.0)) {
            *kept = Some(readback);
        }
    }

    /// The awaited run's completion as a [`DeviceWait`] for a completion waiter, bounded by
    /// `deadline` (the lane's `Lane::poll_deadline`, read by the caller just before); the
    /// executor no longer awaits it (the waiter's answer is the lane's to take). `None` when
    /// nothing is awaited, or with no `deadline`: the lane awaits nothing, because a poison
    /// abandoned the awaited run while runner work was out on host workers (the drain that
    /// forgets it waits for that work, L-18, `RecoveryStep::Quiesce`), so the run is
    /// forgotten now.
    ///
    /// # Errors
    ///
    /// [`DriverError::UnrecordedEvent`]: the run's slot events were never recorded (a wait
    /// would pass at once).
    pub fn completion_wait(
        &mut self,
        deadline: Option<Timestamp>,
    ) -> Result<Option<DeviceWait>, DriverError> {
        let Some(Awaited { run, lease, channel, sync_bound_ns, unfenced }) = self.awaited.take()
        else {
            return Ok(None);
        };
        let Some(deadline) = deadline else {
            return Ok(None);
        };
        let Some(slot) = self.slots.get(usize::from(lease.slot.0)).copied().flatten() else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        // An unfenced run recorded none of its events: its wait is the device verdict alone.
        let fenced = slot.recorded == [true; 2] || unfenced.is_some();
        let (true, Some(launched)) = (fenced, slot.launched) else {
            return Err(DriverError::UnrecordedEvent { run });
        };
        Ok(Some(DeviceWait::Completion {
            run,
            lease,
            boundary: slot.boundary(),
            record: slot.record(),
            // Synchronous copies read the status with the record; on-stream copies read it
            // into pinned memory before the boundary.
            readback: slot.pinned.is_none().then(|| slot.timing()),
            epoch: launched.epoch,
            streams: launched.streams,
            channel,
            deadline,
            sync_bound_ns,
            unfenced,
        }))
    }

    /// `effect` as a [`DeviceWait`] for a completion waiter, if it is one (`DrainDevice`),
    /// with the executor's own part of it done: nothing is awaited after a poison.
    pub fn device_wait(&mut self, effect: &Effect) -> Option<DeviceWait> {
        let Effect::DrainDevice { attempt, timeout_ns } = *effect else {
            return None;
        };
        // Everything in flight was abandoned by the poison.
        self.awaited = None;
        Some(DeviceWait::Drain { attempt, timeout_ns })
    }

    /// Blocks on the awaited run's completion on this thread ([`run_device_wait`] on the
    /// device itself): both of its completion events, AICPU first (as the C++ drain does),
    /// bounded by `deadline` (see [`completion_wait`](Self::completion_wait)). The
    /// single-thread [`Driver`](crate::Driver)'s wait; lane-service hands the same
    /// [`DeviceWait`] to its completion waiter instead. Status bytes read with the record are
    /// kept here ([`Executor::keep_readback`]), so the answer is never [`Wait::Completed`].
    pub fn wait(&mut self, deadline: Option<Timestamp>) -> Result<Wait, DriverError> {
        Ok(match self.completion_wait(deadline)? {
            Some(wait) => match run_device_wait(&mut OnDevice(&mut self.device), &wait) {
                Wait::Completed { answer, readback } => {
                    self.keep_readback(readback);
                    Wait::Answered(answer)
                }
                other => other,
            },
            None => Wait::Pending,
        })
    }
}
