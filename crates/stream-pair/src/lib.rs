//! The AICPU + AICore stream pair shared by every run of a runner (SPEC §4, S-1..S-8).
//!
//! A pure, sans-IO state machine: it never calls a device, reads no clock and spawns no
//! thread. Creating and destroying a stream are effects it emits; their results come back
//! as inputs.
#![forbid(unsafe_code)]
