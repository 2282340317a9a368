//! Typed errors. [`InputError`]: bad input, named with its fix (exit code 2).
//! [`SimError::Failed`]: the simulation found a bug; it carries the one line that
//! reproduces it (exit code 1).

use lane_driver::DriverError;
use thiserror::Error;

use crate::device::DeviceFailure;
use crate::faults::FaultError;

/// Bad input: a profile, workload, fault, cost or file the simulator cannot use. Each
/// message names the problem and the fix.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum InputError {
    /// Not a profile name.
    #[error(
        "unknown profile '{got}'; use a2a3 (Ascend 910B/910C), a5 (Ascend 950) or depth-one (a2a3 at launch depth one)"
    )]
    UnknownProfile {
        /// What was given.
        got: String,
    },
    /// A launch depth the profile cannot take.
    #[error("{0}")]
    Profile(String),
    /// An impossible workload.
    #[error("impossible workload: {0}")]
    Workload(String),
    /// A bad fault rule.
    #[error("{0}")]
    Fault(#[from] FaultError),
    /// A bad cost override.
    #[error("{0}")]
    Cost(String),
    /// A scenario file is not valid TOML or does not match the format.
    #[error("{path}: {message}")]
    Scenario {
        /// The file.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The system's message and what to check.
        message: String,
    },
}

/// What broke during a simulation (never a device failure the lane handles: those become
/// verdicts).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Failure {
    /// The driver stopped: a lane invariant, a rejected event, a stuck lane.
    #[error("driver stopped: {0}")]
    Driver(DriverError),
    /// The simulated device found a broken device invariant, a deadlock or a livelock.
    #[error("{0}")]
    Device(DeviceFailure),
    /// The workload made no progress.
    #[error("stuck: {0}")]
    Stuck(String),
    /// After the faults were healed, the lane did not drain or new runs did not succeed.
    #[error("liveness: {0}")]
    Liveness(String),
    /// Outcomes do not match what was accepted.
    #[error("outcome accounting: {0}")]
    Accounting(String),
}

/// Why a simulation did not produce a report.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SimError {
    /// Bad input.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The simulation found a bug. The message ends with the line that reproduces it.
    #[error("{failure}\nreproduce: {repro}")]
    Failed {
        /// What broke (boxed: a lane invariant names a run's phase and input, which would
        /// make every `Result` of the simulator as large).
        failure: Box<Failure>,
        /// The command that reproduces it.
        repro: String,
    },
}

impl SimError {
    /// The process exit code: 2 for bad input, 1 for a failure found.
    pub const fn exit_code(&self) -> u8 {
        match self {
            Self::Input(_) => 2,
            Self::Failed { .. } => 1,
        }
    }
}
