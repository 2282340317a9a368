//! A deterministic, fault-injecting simulated Ascend device, and the `lane-sim` command.
//!
//! **Owns:** device-model's device driven in virtual time behind [`lane_driver::Device`]
//! ([`SimDevice`], with [`SimRunner`] as its `lane_driver::Runner`): host and device on one
//! virtual clock, the host's calibrated [`costs`] (the device-side ones are the model's
//! `Timing`), the trace of every call and device task, and the simulator's own invariants;
//! the device itself (streams, the AICPU/AICore handshake, events, device memory written by
//! the run's kernels, sticky errors) and its [`faults`] (rules decided by one seed) are
//! device-model's. The device sees only the calls made on it; lane steps reach the trace
//! through the driver's observer ([`SimObserver`]).
//!
//! **Map of the code:**
//!
//! | module | what it holds |
//! |---|---|
//! | [`device`] | [`SimDevice`]: the `Device` impl over device-model's `Device`, its costs, trace and invariants; [`SimRunner`] |
//! | [`observer`] | [`SimObserver`]: lane steps into the [`Journal`] (trace, stream roles, host billing) |
//! | [`costs`] | every cost with its default and the measured figure it comes from |
//! | [`faults`] | device-model's fault vocabulary, re-exported: kinds, rules, the seeded decision, swarm mixes |
//! | [`workload`] | [`SimConfig`], the runner (keep the lane full, close, liveness), [`Report`] |
//! | [`trace`] | trace records, the text trace, Chrome trace-event JSON |
//! | [`stats`] | per-run device start/end, gaps, host time; runs/s, utilisation, p99 |
//! | [`sweep`] | depth one vs queued over device times, beside the measured-figures.md §5(c) throughput model |
//! | [`workers`] | virtual host workers and the completion waiter: the runner's prepare and finalise, and every device wait, on their own tracks in virtual time |
//! | [`shared`] | [`SharedSim`]: one [`SimDevice`] shared by a lane service's lane thread and completion waiter |
//! | [`scenario`] | scenario TOML, expectations, the readable diff |
//! | [`cli`] | `lane-sim`: the depth-one vs queued comparison, `sweep`, `check`, `costs`, `faults` |
//! | [`error`] | [`InputError`] (bad input, exit 2) and [`SimError`] (a bug found, exit 1) |
//!
//! **Invariant:** determinism. The same [`SimConfig`] gives a byte-identical trace: time is
//! virtual, every random choice draws from a `ChaCha8Rng` derived from the one `u64` seed,
//! and every map is a `BTreeMap`. The driver checks `Lane::check_invariants()` after every
//! lane step; the device checks its own on the calls that could break them: a run's timing
//! buffer and status header are written only by that run's kernels, no two live runs share a
//! slot buffer, no stream is destroyed with queued work, no buffer is freed under a task that
//! still uses it, and no handle is used after it died. A violation, a deadlock (both kernels
//! of a run on one stream, an unbounded wait that can never end) or a livelock stops the run
//! with an error that ends in the one line reproducing it.
//!
//! **API boundary:** [`SimDevice`] and [`SimRunner`] are driven by `lane_driver::Driver` like
//! any backend, observed by [`SimObserver`]; it never depends on backend-acl. [`run`] is the
//! entry point for a workload; [`scenario::load`] and [`scenario::check`] for files.
//!
//! **Features:** `cli` (default: the `lane-sim` command, [`cli`], with clap) enables
//! `scenario` (the scenario files, [`scenario`], with toml); the C ABI (lane-capi) links the
//! simulated device without either.

#![forbid(unsafe_code)]

/// Trait methods that make the same call on what `|s| via` gives for `self` (a delegating
/// impl): `forward_calls! { |s| s.inner; fn now(&mut self) -> Timestamp; ... }`.
#[macro_export]
macro_rules! forward_calls {
    (|$s:ident| $via:expr; $(fn $name:ident(&mut self $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)?;)*) => {
        $(fn $name(&mut self $(, $arg: $ty)*) $(-> $ret)? {
            let $s = self;
            $via.$name($($arg),*)
        })*
    };
}

/// Implements `Runner<$device>` for `$runner` by making each call as a `Runner<SimDevice>`
/// on the runner and device that `|r, d| (runner, device)` gives; `$more` adds items.
macro_rules! runner_via {
    ($runner:ty, $device:ty, |$r:ident, $d:ident| ($runner_of:expr, $device_of:expr) $($more:tt)*) => {
        impl Runner<$device> for $runner {
            runner_via! {@calls $device, |$r, $d| ($runner_of, $device_of);
                fn prepare_run(run: RunId, slot: SlotId, diagnostics: bool) -> Result<(), PrepareError>;
                fn launch_aicore(stream: StreamHandle, args: &RunArgs) -> Result<(), ReturnCode>;
                fn launch_aicpu(stream: StreamHandle, args: &RunArgs) -> Result<(), ReturnCode>;
                fn finalise_run(run: RunId, slot: SlotId, copy_back: bool) -> Result<(), FinaliseFailure>;
                fn upload_code(code: CodeRef) -> Result<(), ReturnCode>;
            }
            $($more)*
        }
    };
    (@calls $device:ty, |$r:ident, $d:ident| ($runner_of:expr, $device_of:expr);
        $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $name(&mut self, device: &mut $device, $($arg: $ty),*) -> $ret {
            let ($r, $d) = (self, device);
            Runner::<SimDevice>::$name($runner_of, $device_of, $($arg),*)
        })*
    };
}

#[cfg(feature = "cli")]
pub mod cli;
pub mod costs;
pub mod device;
pub mod error;
pub use device_model::faults;
pub mod observer;
#[cfg(feature = "scenario")]
pub mod scenario;
pub mod shared;
pub mod stats;
pub mod sweep;
pub mod trace;
pub mod workers;
pub mod workload;

pub use device::{DeviceFailure, HostUse, PublishedRecord, RunTimes, SimDevice, SimRunner};
pub use error::{Failure, InputError, SimError};
pub use faults::{FaultKind, FaultRule, Latched, When};
pub use observer::{Journal, SimObserver};
pub use shared::SharedSim;
pub use workload::{LaneEnd, Report, SimConfig, Workload, run};
