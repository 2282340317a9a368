//! The run lane as a pure, sans-IO state machine (SPEC §3, rules L-1..L-17).
//!
//! The lane owns admission, pipeline slots and their leases, the FIFO of runs and
//! publications, per-run verdicts, poison and device recovery, and close. It decides; a
//! backend executes. Commands (`submit`, `publish`, `close`) and backend [`Event`]s go in;
//! [`Effect`]s, [`Outcome`]s and deadlines come out through polls. Time is a [`Timestamp`]
//! passed in. The same lane runs on hardware (backend-acl), in the simulator (backend-sim),
//! in `cargo test` and under `cargo fuzz`.
//!
//! **Invariant:** every accepted run and publication gets exactly one [`Outcome`], in
//! submission order, whatever the backend reports and in whatever order
//! ([`Lane::check_invariants`] lists the rest).
//!
//! **API boundary:** [`Lane`] and its value types. The phase tables in [`run`] and
//! [`state`] are public so their rendered tables can be reviewed and snapshot-tested.
//!
//! **Deliberately absent:** clocks, threads, IO, `HashMap` iteration, `unsafe`, and any
//! allocation per run in steady state (inline storage throughout).
//!
//! ```
//! use lane_core::{Effect, Event, Lane, Outcome, Profile, RunRequest, Timestamp, Verdict};
//! use lane_core::status_latch::Status;
//! use lane_core::stream_pair::StreamHandle;
//!
//! let mut lane = Lane::new(Profile::a2a3());
//! let t = Timestamp(0);
//! let run = lane.submit(t, RunRequest::new()).unwrap();
//! let mut next_handle = 0;
//! // A toy backend: answer every effect with success.
//! while let Some(effect) = lane.poll_effect() {
//!     let event = match effect {
//!         Effect::PrepareRun { run, lease, .. } => Event::Prepared { run, lease },
//!         Effect::CreateStream { role } => {
//!             next_handle += 1;
//!             Event::StreamCreated { role, handle: StreamHandle(next_handle) }
//!         }
//!         Effect::LaunchRun { run, lease, .. } => Event::Launched { run, lease },
//!         Effect::AwaitCompletion { run, lease, .. } => Event::Completed { run, lease },
//!         Effect::ReadStatus { run, lease, layout } => Event::StatusRead {
//!             run,
//!             lease,
//!             status: Status::clean(layout),
//!             timing: Default::default(),
//!         },
//!         Effect::FinaliseRun { run, lease, .. } => Event::Finalised { run, lease },
//!         other => panic!("not expected here: {other:?}"),
//!     };
//!     lane.handle(t, event).unwrap();
//! }
//! match lane.poll_outcome() {
//!     Some(Outcome::Run(outcome)) => {
//!         assert_eq!(outcome.run, run);
//!         assert_eq!(outcome.verdict, Verdict::Ok);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```
#![forbid(unsafe_code)]

mod effect;
mod error;
mod event;
mod ids;
mod lane;
mod outcome;
mod profile;
mod queue;
pub mod run;
pub mod state;

pub use effect::Effect;
pub use error::{EventError, InvariantViolation, LeaseError, PublishError, SubmitError};
pub use event::{Event, FinaliseFailure, LaunchStep};
pub use ids::{
    CodeRef, DeviceTiming, Generation, Lease, PublicationId, RunId, SlotId, Tag, Timestamp,
};
pub use lane::{CloseReport, Lane, PoisonRecord, RunRequest, TeardownFailure};
pub use outcome::{Cause, Outcome, PublicationOutcome, PublicationResult, RunOutcome, Verdict};
pub use profile::{
    DEFAULT_COMPLETION_TIMEOUT_NS, DEFAULT_DEVICE_OP_TIMEOUT_NS, DEFAULT_DRAIN_TIMEOUT_NS,
    DEFAULT_RECOVERY_ATTEMPTS, MAX_PENDING_PUBLICATIONS, MAX_SLOTS, Profile, ProfileError,
    ProfileSpec,
};
pub use run::{RunInput, RunPhase};
pub use state::{AfterRecovery, LaneInput, LaneState, RecoveryStep};

/// Re-exported so users and backends name one version of the leaf crates.
pub use status_latch;
/// Re-exported so users and backends name one version of the leaf crates.
pub use stream_pair;
