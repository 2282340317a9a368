//! One conformance suite over both backends, the fake libascendcl's runner, and the
//! real-time depth-one vs queued bench.
//!
//! **Owns:** [`FakeRunner`], the embedding runtime's side of a run on the fake, for any
//! `Device` whose streams are the fake's, faulted by the simulator's rules; [`FakeSession`],
//! exclusive, reset use of the whole fake per process; the [`suite`] ([`Backend`], [`Sim`],
//! [`AclOnFake`], [`check`], [`on_fake`] for other devices over the fake) that runs every
//! scenario file on each backend against the same expectations; [`Tally`], the figures a
//! scenario compares, counted from the driver's observations; and [`bench`](mod@bench), depth
//! one against queued depth two on the fake in real time (the `fake-bench` binary).
//!
//! **Why a crate of its own:** the suite needs both backends, and backend-sim and
//! backend-acl never depend on each other; the runner for the fake is test support, not
//! product code, so it stays out of backend-acl (whose runner is the embedding runtime's).
//!
//! **Invariant:** real-time checks assert outcomes and orderings of lane steps, never
//! timings; every wait is bounded by a generous timeout ([`FakeTimeouts`]), and nothing
//! sleeps to synchronise.
//!
//! **API boundary:** the items re-exported here and the [`suite`] and [`bench`](mod@bench) modules.

#![forbid(unsafe_code)]

pub mod bench;
mod error;
mod fake;
mod fake_runner;
pub mod suite;
mod tally;

pub use error::ConformanceError;
pub use fake::{FakeSession, FakeTimeouts};
pub use fake_runner::{FakeRunner, FakeWorker, Healer};
pub use suite::{AclOnFake, Backend, Sim, SimWithCopies, SimWithHeader, check, leaks, on_fake};
pub use tally::Tally;
