//! The runner's steps on its `Drive`: each driver call checked against the device, the
//! lane kept full, drained and closed, and the liveness phase. Apart from [`super`] (the
//! workload, its configuration and the entry points) for length.

use lane_core::{
    CloseReport, CodeRef, LaneState, Outcome, PublicationId, PublishError, RunId, RunRequest,
    SubmitError, Verdict,
};
use lane_driver::{Device, Driver, DriverError, Observer, Runner, Turn};

use super::{Drive, Harness, LIVENESS_RUNS};
use crate::error::{Failure, SimError};
use crate::workers::{HostTracks, WorkerLoop};

impl<D: Device, R: Runner<D>, O: Observer, H: Harness<D, R, O>> Drive<'_, D, R, O, H> {
    /// One driver call: through the worker loop when there is one, else on the driver.
    fn route<T>(
        &mut self,
        on_workers: impl FnOnce(&mut WorkerLoop, &mut Driver<D, R, O>, &mut dyn HostTracks<D>) -> T,
        plain: impl FnOnce(&mut Driver<D, R, O>) -> T,
    ) -> T {
        match (&mut self.workers, self.harness.host_tracks()) {
            (Some(workers), Some(tracks)) => on_workers(workers, &mut self.driver, tracks),
            _ => plain(&mut self.driver),
        }
    }

    fn submit_once(&mut self, run: RunRequest) -> Result<Result<RunId, SubmitError>, DriverError> {
        self.route(|w, d, t| w.submit(d, t, run), |d| d.submit(run))
    }

    fn publish_once(
        &mut self,
        code: CodeRef,
    ) -> Result<Result<PublicationId, PublishError>, DriverError> {
        self.route(|w, d, t| w.publish(d, t, code), |d| d.publish(code))
    }

    fn close_once(&mut self) -> Result<CloseReport, DriverError> {
        self.route(|w, d, t| w.close(d, t), Driver::close)
    }

    fn turn_once(&mut self) -> Result<Turn, DriverError> {
        self.route(|w, d, t| w.turn(d, t), Driver::turn)
    }

    pub(super) fn failed(&self, failure: Failure) -> SimError {
        SimError::Failed { failure: Box::new(failure), repro: self.repro.clone() }
    }

    /// After every driver call: a driver error or a device failure stops the simulation;
    /// outcomes are collected.
    fn check<T>(&mut self, result: Result<T, DriverError>) -> Result<T, SimError> {
        let value = result.map_err(|e| self.failed(Failure::Driver(e)))?;
        if let Some(failure) = self.harness.failure(&self.driver) {
            return Err(self.failed(failure));
        }
        // Lost, or lost while closing (the lane then ends Closed but says the device is lost).
        if self.driver.lane().device_lost() {
            self.was_lost = true;
        }
        while let Some(outcome) = self.driver.poll_outcome() {
            if matches!(outcome, Outcome::Run(_)) {
                self.last_run_outcome_ns = self.driver.device_mut().now().0;
            }
            if let Some(failure) = self.harness.outcome_failure(&mut self.driver, &outcome) {
                return Err(self.failed(failure));
            }
            self.outcomes.push(outcome);
        }
        Ok(value)
    }

    fn turn(&mut self, why: &str) -> Result<(), SimError> {
        self.turns += 1;
        if self.turns > self.turn_budget {
            return Err(self.failed(Failure::Stuck(format!(
                "{} turns without finishing ({why})",
                self.turns - 1
            ))));
        }
        let result = self.turn_once();
        if self.check(result)? == Turn::Idle {
            return Err(self.failed(Failure::Stuck(format!(
                "{why}, but the lane is idle in state {:?}",
                self.driver.lane().state()
            ))));
        }
        Ok(())
    }

    /// Submits one run, turning while the lane is full; `None` once the lane refuses for
    /// good (lost or closed).
    pub(super) fn submit(&mut self, request: RunRequest) -> Result<Option<u64>, SimError> {
        loop {
            let result = self.submit_once(request);
            match self.check(result)? {
                Ok(id) => {
                    self.accepted.push(id.0);
                    return Ok(Some(id.0));
                }
                Err(SubmitError::Full { .. }) => self.turn("submit was refused as full")?,
                Err(SubmitError::Poisoned { .. } | SubmitError::Suspect { .. }) => {
                    self.turn("submit was refused while recovering")?;
                }
                // The workload has no runtime to reset the device (L-24): unusable stays so.
                Err(
                    SubmitError::Lost { .. }
                    | SubmitError::LostAfterNotice { .. }
                    | SubmitError::Unusable { .. }
                    | SubmitError::UnusableAfterNotice { .. }
                    | SubmitError::Closed,
                ) => return Ok(None),
                Err(
                    e @ (SubmitError::StaleLease { .. }
                    | SubmitError::DuplicateRun { .. }
                    | SubmitError::Epoch { .. }),
                ) => {
                    return Err(
                        self.failed(Failure::Stuck(format!("a plain submit was refused: {e}")))
                    );
                }
            }
        }
    }

    /// Publishes, turning while publications are full; false if refused for good.
    pub(super) fn publish(&mut self, code: CodeRef) -> Result<bool, SimError> {
        loop {
            let result = self.publish_once(code);
            match self.check(result)? {
                Ok(id) => {
                    self.accepted.push(id.0);
                    return Ok(true);
                }
                Err(PublishError::Full) => self.turn("publish was refused as full")?,
                Err(PublishError::Poisoned { .. } | PublishError::Suspect { .. }) => {
                    self.turn("publish was refused while recovering")?;
                }
                Err(
                    PublishError::Lost { .. }
                    | PublishError::LostAfterNotice { .. }
                    | PublishError::Unusable { .. }
                    | PublishError::UnusableAfterNotice { .. }
                    | PublishError::Closed,
                ) => return Ok(false),
            }
        }
    }

    /// Turns until every accepted item has its outcome.
    pub(super) fn drain(&mut self) -> Result<(), SimError> {
        loop {
            self.turns += 1;
            if self.turns > self.turn_budget {
                return Err(self.failed(Failure::Stuck(format!(
                    "{} turns without the lane draining",
                    self.turns - 1
                ))));
            }
            let result = self.turn_once();
            if self.check(result)? == Turn::Idle {
                return Ok(());
            }
        }
    }

    pub(super) fn close(&mut self) -> Result<(), SimError> {
        let result = self.close_once();
        self.check(result)?;
        self.drain()?;
        Ok(())
    }

    /// Heal every fault, drain, then fresh runs must succeed unless the lane is lost.
    pub(super) fn liveness(&mut self) -> Result<(), SimError> {
        self.harness.heal(&mut self.driver);
        self.drain()?;
        let state = self.driver.lane().state();
        if state == LaneState::Lost {
            return match self.submit_once(RunRequest::new()) {
                Ok(Err(SubmitError::Lost { .. })) => Ok(()),
                other => Err(self.failed(Failure::Liveness(format!(
                    "the lane is lost but a submit returned {other:?}"
                )))),
            };
        }
        if state != LaneState::Open {
            return Err(self.failed(Failure::Liveness(format!(
                "after healing and draining the lane is {state:?}, not Open"
            ))));
        }
        let mut fresh = Vec::new();
        for _ in 0..LIVENESS_RUNS {
            match self.submit(RunRequest::new())? {
                Some(id) => fresh.push(id),
                None => {
                    return Err(self.failed(Failure::Liveness(format!(
                        "a fresh run was refused after healing (lane {:?})",
                        self.driver.lane().state()
                    ))));
                }
            }
        }
        self.drain()?;
        for id in fresh {
            let verdict = self.outcomes.iter().find_map(|o| match o {
                Outcome::Run(r) if r.run.0 == id => Some(r.verdict),
                _ => None,
            });
            if verdict != Some(Verdict::Ok) {
                let got = self
                    .outcomes
                    .iter()
                    .find(|o| o.seq() == id)
                    .map_or_else(|| "no outcome".to_owned(), ToString::to_string);
                return Err(self.failed(Failure::Liveness(format!(
                    "fresh run {id} after healing did not succeed: {got}"
                ))));
            }
        }
        Ok(())
    }

    /// Every accepted item has exactly one outcome, in submission order.
    pub(super) fn check_accounting(&self) -> Result<(), SimError> {
        let got: Vec<u64> = self.outcomes.iter().map(Outcome::seq).collect();
        if got != self.accepted {
            return Err(self.failed(Failure::Accounting(format!(
                "accepted items {:?} but outcomes for {:?}",
                short(&self.accepted),
                short(&got)
            ))));
        }
        Ok(())
    }
}

fn short(ids: &[u64]) -> String {
    if ids.len() <= 12 {
        format!("{ids:?}")
    } else {
        format!("{} items from {:?} to {:?}", ids.len(), ids.first(), ids.last())
    }
}
