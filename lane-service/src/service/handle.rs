//! The [`LaneHandle`]: the commands, the outcome and report polls, and the waits, from any
//! thread.

use lane_core::{
    CloseReport, CodeRef, Outcome, PublicationId, RunId, RunRequest, RunState, RunStatus, Timestamp,
};
use lane_driver::dispatch::Here;
use lane_driver::{DriverError, LaneSteps, Report};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{LostCause, ServiceError, WaitError};
use crate::mailbox::Mailbox;

use super::engine::How;
use super::{Drive, Inner, ItemId, Shared, Shutdown, lost, sleep_until};

/// A handle on a lane service: `Send + Sync + Clone`, usable from any thread. Every method
/// but [`wait`](Self::wait) returns without waiting for a device wait (L-16). Dropping the
/// last clone closes the lane, lets launched runs finish, and joins the lane's threads.
#[derive(Clone)]
pub struct LaneHandle {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for LaneHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaneHandle")
            .field("drive", &self.inner.drive)
            .field("lost", &self.inner.mailbox.lost())
            .finish_non_exhaustive()
    }
}

impl LaneHandle {
    fn mailbox(&self) -> &Mailbox<Shared> {
        &self.inner.mailbox
    }

    /// Posts a command, then runs the lane's steps on this thread where the caller drives
    /// or submitters are bound, unless another thread runs them.
    fn command<T>(
        &self,
        apply: impl FnOnce(&mut Shared) -> Result<(T, Option<u64>), LostCause>,
    ) -> Result<T, LostCause> {
        let inner = &*self.inner;
        let caller = inner.drive == Drive::Caller;
        let result = self.mailbox().command(!caller && !inner.steps_here, apply)?;
        // A loss here is the lane's, recorded in the mailbox: the next call reports it.
        if caller {
            let _ = inner.engine.run_steps(Here::Own);
            // A deadline passed while no call was made, or a recovery's drain: made now.
            if inner.engine.make_offered(How::Due) {
                let _ = inner.engine.run_steps(Here::Own);
            }
        } else if inner.steps_here {
            let _ = inner.engine.run_steps(Here::Submitter);
        }
        Ok(result)
    }

    /// A lane step through [`command`](Self::command): its result, or the lane's refusal
    /// (`seq` names the item it accepted).
    fn lane_command<T, E>(
        &self,
        step: impl FnOnce(&mut LaneSteps, Timestamp) -> Result<Result<T, E>, DriverError>,
        seq: impl FnOnce(&T) -> Option<u64>,
    ) -> Result<T, ServiceError>
    where
        ServiceError: From<E>,
    {
        let result = self.command(|shared| {
            let result = step(&mut shared.steps, shared.now).map_err(|e| lost(&e))?;
            let accepted = result.as_ref().ok().and_then(seq);
            Ok((result, accepted))
        });
        Ok(result.map_err(ServiceError::Lost)??)
    }

    /// Submits a run: its id, or the lane's refusal, at once (after its prepare and launch
    /// where this thread runs the steps: bound submitters, or the caller drives).
    pub fn submit(&self, request: RunRequest) -> Result<RunId, ServiceError> {
        self.submit_noting(request, |_| {})
    }

    /// As [`submit`](Self::submit), and calls `accepted` with the run's id before any of the
    /// run's runner callbacks can start (to record per-run data for them). It runs under the
    /// lane's lock, so it must not call the lane.
    pub fn submit_noting(
        &self,
        request: RunRequest,
        accepted: impl FnOnce(RunId),
    ) -> Result<RunId, ServiceError> {
        self.lane_command(
            |steps, now| {
                let result = steps.submit(now, request)?;
                if let Ok(run) = &result {
                    accepted(*run);
                }
                Ok(result)
            },
            |run| Some(run.0),
        )
    }

    /// Publishes code: the publication's id, or the lane's refusal, at once.
    pub fn publish(&self, code: CodeRef) -> Result<PublicationId, ServiceError> {
        self.lane_command(|steps, now| steps.publish(now, code), |p| Some(p.0))
    }

    /// Reports that the runtime reset the device (L-24): the lane forgets its handles and
    /// reopens on fresh streams, at once; [`ServiceError::DeviceReset`] if it awaits none.
    pub fn device_reset(&self) -> Result<(), ServiceError> {
        self.lane_command(|steps, now| steps.device_reset(now), |_| None)
    }

    /// Activates a run submitted held (`RunRequest::held`): it launches once its turn comes.
    /// At once; [`ServiceError::Control`] for a run not held, finished or unknown.
    pub fn activate(&self, run: RunId) -> Result<(), ServiceError> {
        self.lane_command(|steps, now| steps.activate(now, run), |_| None)
    }

    /// Cancels a run before its launch or a publication before its upload: it gets a
    /// `Cancelled` outcome in its turn (L-2; a prepared run is finalised without copy-back
    /// first, L-7). At once.
    ///
    /// # Errors
    ///
    /// [`ServiceError::Control`]: a launched run (it finishes), an upload that started, an
    /// item with another outcome decided, or an unknown one; [`ServiceError::Lost`].
    pub fn cancel(&self, item: impl Into<ItemId>) -> Result<(), ServiceError> {
        let item = item.into();
        let run = matches!(item, ItemId::Run(_));
        self.lane_command(|steps, now| steps.cancel(now, item.seq(), run), |_| None)
    }

    /// Where an accepted run stands (`Lane::run_status`, or done while its outcome waits to
    /// be taken); `None` once taken, or for an unknown id. Never blocks behind the device.
    #[must_use]
    pub fn run_status(&self, run: RunId) -> Option<RunStatus> {
        self.mailbox().status(|shared, ready| {
            shared.steps.lane().run_status(run).or_else(|| {
                ready.iter().find_map(|report: &Report| match report.outcome {
                    Outcome::Run(outcome) if outcome.run == run => Some(RunStatus {
                        state: RunState::Done,
                        held: false,
                        declines: outcome.declines,
                        key: outcome.key,
                    }),
                    _ => None,
                })
            })
        })
    }

    /// Closes the lane (L-15) at once: launched runs still finish, queued ones get their
    /// cancelled outcomes. Closing twice is harmless.
    pub fn close(&self) -> Result<CloseReport, ServiceError> {
        self.command(|shared| {
            let report = shared.steps.close(shared.now).map_err(|e| lost(&e))?;
            Ok((report, None))
        })
        .map_err(ServiceError::Lost)
    }

    /// Takes the next outcome in the lane's order (L-2), if one is delivered and not taken
    /// yet; never blocks behind the device. After a loss the outcomes delivered before it can
    /// still be taken ([`lost`](Self::lost) tells a loss from "nothing yet"). Where the caller
    /// drives the lane it runs the steps first and looks at the awaited run's boundary without
    /// waiting: a run found complete gets its verdict here.
    pub fn poll_outcome(&self) -> Option<Outcome> {
        self.poll_report().map(|report| report.outcome)
    }

    /// Takes every delivered outcome not taken yet, without running the steps: after
    /// [`LaneHandle::shut_down`], for a destroy to report them.
    pub fn take_untaken(&self) -> Vec<Report> {
        self.mailbox().take_untaken()
    }

    /// As [`poll_outcome`](Self::poll_outcome), with the device's text about the failed call
    /// behind the outcome ([`Report`]).
    pub fn poll_report(&self) -> Option<Report> {
        let inner = &*self.inner;
        if inner.drive == Drive::Caller && !inner.on_own_thread() {
            let _ = inner.engine.run_steps(Here::Own);
            if inner.engine.make_offered(How::Look) {
                let _ = inner.engine.run_steps(Here::Own);
            }
        }
        self.mailbox().poll()
    }

    /// Blocks the caller (only) until `item` has its outcome and takes it, `timeout` passes,
    /// or the lane is lost. Where the caller drives, it makes the device wait itself, bounded
    /// by `timeout` (a wait cut short leaves the run live).
    pub fn wait(&self, item: impl Into<ItemId>, timeout: Duration) -> Result<Outcome, WaitError> {
        self.wait_report(item, timeout).map(|report| report.outcome)
    }

    /// As [`wait`](Self::wait), with the device's text about the failed call behind the
    /// outcome (see [`poll_report`](Self::poll_report)).
    pub fn wait_report(
        &self,
        item: impl Into<ItemId>,
        timeout: Duration,
    ) -> Result<Report, WaitError> {
        let deadline = Instant::now().checked_add(timeout);
        let seq = item.into().seq();
        if self.inner.drive == Drive::Caller {
            return self.drive_until(seq, deadline);
        }
        self.mailbox().wait(seq, deadline)
    }

    /// The caller-driven wait: runs the steps and makes the offered device wait on this
    /// thread until item `seq` has its outcome; sleeps while another caller is inside the
    /// device wait.
    fn drive_until(&self, seq: u64, deadline: Option<Instant>) -> Result<Report, WaitError> {
        let mailbox = self.mailbox();
        let engine = &*self.inner.engine;
        // Whether this call made a device wait: one is made even at a deadline passed already
        // (capped at it), so a wait always looks once.
        let mut made = false;
        loop {
            if let Some(taken) = mailbox.try_take(seq) {
                return taken;
            }
            let ran = engine.run_steps(Here::Own);
            if let Some(taken) = mailbox.try_take(seq) {
                return taken;
            }
            let now = Instant::now();
            let passed = deadline.is_some_and(|deadline| now >= deadline);
            if !(passed && made) && engine.make_offered(How::Block { until: deadline }) {
                made = true;
                continue;
            }
            if passed {
                return mailbox.try_take(seq).unwrap_or(Err(WaitError::TimedOut { item: seq }));
            }
            // Another caller is inside the device wait, or the steps are another thread's:
            // sleep until an outcome, the wait's end, the next timer or the deadline.
            let until = sleep_until(ran.ok(), now);
            let until = match deadline {
                Some(deadline) => deadline.min(until),
                None => until,
            };
            mailbox.caller_idle(Some(seq), Some(until));
        }
    }

    /// Why the lane ended, if it did (a panic, a driver error, a shutdown).
    #[must_use]
    pub fn lost(&self) -> Option<LostCause> {
        self.mailbox().lost()
    }

    /// Shuts the lane down whatever other clones exist, and returns its final close report:
    /// closes the lane, lets launched runs finish, destroys once more the streams its teardown
    /// left (S-7; the report's `streams_left` names what survives), and joins the lane's
    /// threads (where the caller drives, this thread runs the steps to their end). A
    /// completion waiter stuck past its bound (L-20) is left behind after about a second
    /// ([`Shutdown::left`]). Afterwards every command and wait on any clone is refused as
    /// lost; outcomes delivered before can still be polled. A second call returns the same
    /// report. Dropping the last handle does the same, without the report.
    ///
    /// # Errors
    ///
    /// [`ServiceError::OwnThread`] on one of the lane's own threads, or on a thread running
    /// its steps (the outcome callback, a host worker's runner call): it would wait for
    /// itself; the shutdown is asked for all the same.
    pub fn shut_down(&self) -> Result<Shutdown, ServiceError> {
        let Some(left) = self.inner.shut_down() else {
            return Err(ServiceError::OwnThread);
        };
        Ok(Shutdown {
            report: self.mailbox().inspect(|shared| shared.steps.lane().close_report()),
            left,
        })
    }
}
