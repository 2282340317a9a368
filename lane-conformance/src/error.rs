//! [`ConformanceError`]: why a backend could not run a scenario or a bench (never a
//! mismatch: those are the check's result).

use backend_sim::SimError;
use run_lane_fake_ascendcl::ControlError;
use thiserror::Error;

/// Why a run could not happen.
#[derive(Debug, Error)]
pub enum ConformanceError {
    /// The fake is not built, or its control surface refused a request.
    #[error("the fake libascendcl: {0}")]
    Fake(String),
    /// The lane's device (backend-acl's, or another device over the fake, such as a runtime's
    /// device table) could not open on the fake.
    #[error("the lane's device could not open on the fake: {0}")]
    Open(String),
    /// The workload failed: bad input, a driver error, a stuck lane, broken accounting.
    #[error(transparent)]
    Run(#[from] SimError),
    /// The scenario's profile or workload is not one the lane can run.
    #[error(transparent)]
    Input(#[from] backend_sim::InputError),
    /// The profile cannot take the scaled timeouts.
    #[error("profile: {0}")]
    Profile(#[from] lane_core::ProfileError),
    /// The lane service (real threads, host workers) failed to start or lost its lane.
    #[error("the lane service: {0}")]
    Service(String),
}

impl ConformanceError {
    /// A control-surface failure.
    pub(crate) fn control(error: ControlError) -> Self {
        Self::Fake(error.to_string())
    }
}
