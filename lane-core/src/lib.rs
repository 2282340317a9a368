//! The run lane as a pure, sans-IO state machine (SPEC §3, rules L-1..L-17).
//!
//! The lane owns admission, pipeline slots and their leases, the FIFO of runs and
//! publications, per-run verdicts, poison and device recovery, and close. It decides; a
//! backend executes. Commands (`submit`, `publish`, `close`, and the run controls `activate`
//! and `cancel`) and backend [`Event`]s go in;
//! [`Effect`]s, [`Outcome`]s and deadlines come out through polls. Time is a [`Timestamp`]
//! passed in. The same lane runs on hardware (backend-acl), in the simulator (backend-sim),
//! in `cargo test` and under `cargo fuzz`.
//!
//! **Invariant:** every accepted run and publication gets exactly one [`Outcome`], in the
//! lane's order (submission order, but for a run an earlier ordering key placed ahead of
//! staged keyed runs, L-2; [`ItemOrder`]), whatever the backend reports and in whatever order
//! ([`Lane::check_invariants`] lists the rest).
//!
//! **Run controls** (issue 45; decision 0031): a request may be held (prepared, launched only
//! after [`Lane::activate`]), keyed ([`OrderKey`]), or carry the runtime's epoch; an item that
//! has not started may be cancelled ([`Lane::cancel`], [`Lane::cancel_publication`]);
//! [`Lane::run_status`] says where a run stands. The runner may decline a queued launch
//! ([`Event::LaunchDeclined`]): the run launches again onto an empty pair, and its outcome
//! counts the declines. [`FinaliseOrder::BeforeNextLaunch`] launches a run only once every run
//! ahead of it has its verdict.
//!
//! **L-18 Overlap** (this project's addition to the SPEC; what may run at the same time once
//! runner work runs on host workers):
//!
//! 1. Runner work (a run's prepare, its finalise) of different slots may overlap each other
//!    and the lane thread's device calls.
//! 2. On one slot nothing overlaps: a slot's prepare, launch, completion, status read and
//!    finalise follow its run's phases, one at a time (at most one piece of runner work is
//!    out per slot, always for the run holding it, in the phase that asked for it).
//! 3. At most `prepare_window` runs are preparing or prepared ahead of any run that starts
//!    preparing (without ordering keys: at most `prepare_window` in all); prepares start in
//!    the lane's order and launches stay in it.
//! 4. No upload (publication) and no recovery step (drain, reset, probe) runs while runner
//!    work is out: after a poison, recovery first quiesces (`RecoveryStep::Quiesce`) until
//!    every piece of runner work handed out has answered; those answers are accepted and
//!    change nothing else.
//!
//! Runner work is out from the moment [`Lane::poll_effect`] hands out its `PrepareRun` or
//! `FinaliseRun` until its answer arrives. [`Lane::check_invariants`] checks each part as a
//! typed [`InvariantViolation`].
//!
//! **API boundary:** [`Lane`] and its value types. The phase tables in [`run`],
//! [`publication`] and [`state`] are public so their rendered tables can be reviewed and kept current in docs/.
//!
//! **Deliberately absent:** clocks, threads, IO, `HashMap` iteration, `unsafe`, and any
//! allocation per run in steady state (inline storage throughout).
//!
//! ```
//! use lane_core::testkit::Succeed;
//! use lane_core::{Lane, Outcome, Profile, RunRequest, Timestamp, Verdict};
//!
//! let mut lane = Lane::new(Profile::a2a3());
//! let t = Timestamp(0);
//! let run = lane.submit(t, RunRequest::new()).unwrap();
//! // A stand-in backend (feature `testkit`): every effect succeeds. A real backend executes
//! // each effect and feeds back the event that answers it.
//! Succeed::new().drive(&mut lane, t).unwrap();
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
mod notice;
mod outcome;
mod profile;
pub mod publication;
mod queue;
pub mod run;
pub mod state;
mod table;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use effect::{Effect, RecoveryHook};
pub use error::{
    ControlError, DeviceResetError, EpochRefusal, EventError, InvariantViolation, LeaseError,
    PublishError, SubmitError,
};
pub use event::{Event, FinaliseFailure, LaunchStep};
pub use ids::{
    CodeRef, DeviceTiming, Generation, ItemOrder, Lease, OrderKey, Overlap, PAIR_PEERS, Peers,
    PublicationId, RunId, SlotId, Tag, Timestamp, TimingSource,
};
pub use lane::{
    CloseReport, Fingerprint, Lane, PoisonRecord, RunRequest, RunState, RunStatus, StreamsLeft,
    TEARDOWN_ATTEMPTS, TeardownFailure,
};
pub use notice::FaultNotice;
pub use outcome::{
    Cause, Outcome, PublicationOutcome, PublicationResult, RunOutcome, Verdict, WithDetail,
};
pub use profile::{
    CopyPath, DEFAULT_COMPLETION_TIMEOUT_NS, DEFAULT_DEVICE_OP_TIMEOUT_NS,
    DEFAULT_DRAIN_TIMEOUT_NS, DEFAULT_RECOVERY_ATTEMPTS, FinaliseOrder, MAX_PENDING_PUBLICATIONS,
    MAX_SLOTS, Profile, ProfileError, ProfileSpec, Recovery,
};
pub use run::{RunInput, RunPhase};
pub use state::{AfterRecovery, LaneInput, LaneState, RecoveryStep};

/// Re-exported so users and backends name one version of the leaf crates.
pub use status_latch;
/// Re-exported so users and backends name one version of the leaf crates.
pub use stream_pair;
