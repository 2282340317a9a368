//! The Ascend device, modelled once.
//!
//! **Owns:** the fault vocabulary ([`faults`]): what a rule injects, where and when, decided
//! by one seed.
//!
//! **Invariant:** pure: no clock, threads, IO or `HashMap` iteration; time comes in as a
//! value.
//!
//! **API boundary:** [`faults`].

#![forbid(unsafe_code)]

pub mod faults;
