//! The Ascend device, modelled once: what each device call returns and what state it changes,
//! given the time, as `../shared/reference/device-truth.md` states it.
//!
//! **Owns:** streams as FIFOs of tasks and their order (kernels, event records, waits,
//! async copies); events and what they capture; sticky codes and continue-on-failure
//! (device-truth §1); the result record a run publishes (§2) and the two kernels of a run
//! (§3, the handshake); the reset generation (§5); handle validity; device memory; the
//! kernels' outcomes against the op timeout; and the fault vocabulary ([`faults`]), consulted
//! at each call's site. [`Semantics`] holds every device fact the hardware has not settled as
//! a switch, offered both ways; [`Timing`] the device-side cost of each task.
//!
//! | module | what it holds |
//! |---|---|
//! | [`device`] | [`Device`]: the state, every call on it, and the engine that moves streams forward in time |
//! | [`kernel`] | [`KernelSpec`], [`Outcome`], [`Ending`], [`RunKey`]; a run's fate and its record |
//! | [`config`] | [`Semantics`], [`Timing`], [`Engine`], [`Ns`] |
//! | [`faults`] | the one fault vocabulary: [`FaultRule`](faults::FaultRule), its parser and printer, [`Faults`](faults::Faults), the swarm |
//!
//! **Invariant:** pure and deterministic: no clock, threads, IO, `HashMap` iteration or
//! `unsafe`; time comes in as a value ([`Ns`]) and every task's start and end is a formula of
//! the calls' times, so the same calls at the same times give the same device, whichever
//! thread drives it. The model never blocks: a call that would wait tells the backend what it
//! waits for ([`Device::run_until`], [`Device::stream_next`]).
//!
//! **API boundary:** [`Device`] and the types its calls take and return. Handles and
//! addresses are the backend's (`u64`s it chooses); host memory is the backend's too
//! ([`HostMemory`]). backend-sim drives a [`Device`] in virtual time behind `SimDevice`;
//! acl-fake drives one per fake device in real time behind its C symbols.

#![forbid(unsafe_code)]

pub mod config;
pub mod device;
pub mod faults;
pub mod kernel;
mod memory;

pub use config::{Engine, Ns, OpTimeoutCodeOn, Semantics, Timing};
pub use device::{
    CallError, CopySpec, Dead, Device, EventState, HostMemory, Launched, NoHostMemory, Note, Place,
    Reclaimed, RecordRun, STREAM_ABORT, SlotRead, StreamNext,
};
pub use kernel::{Ending, KernelSpec, Outcome, RunKey};
