//! The C ABI of the run lane, for the runtime's C++ onboard runners (a2a3 and a5).
//!
//! **Owns:** `include/run_lane.h` (generated from this crate by cbindgen, committed, checked
//! current by a test), `librun_lane.a` and `librun_lane.so` (soname `librun_lane.so.<N>`,
//! N = [`RUN_LANE_ABI_VERSION`], set by build.rs). A lane is an opaque handle
//! over a `lane_service` lane: one lane thread per handle, on the ACL backend, the simulator,
//! or the runtime's own device layer through its table of device operations
//! ([`RunLaneDeviceOps`], L-22), running the runner's C callbacks ([`RunLaneRunner`]) through
//! [`CRunner`].
//! docs/embedding.md is the user's guide.
//!
//! **Map of the code:**
//!
//! | module | what it holds |
//! |---|---|
//! | [`types`] | every `#[repr(C)]` type and constant of the header |
//! | `api` | the exported `run_lane_*` functions (re-exported at the root) |
//! | [`config`] | `RunLaneConfig` validated into a profile, a backend and the vtable |
//! | [`device_ops`] | the runtime's `RunLaneDeviceOps` as the lane's device (L-22): [`device_ops::TableDevice`], its waiter, its handle table |
//! | [`runner`] | [`CRunner`]: the vtable as a `lane_driver::Runner`, then a model runner |
//! | [`outcome`] | outcomes and close reports as C structs (strings in fixed buffers) |
//! | [`registry`] | live handles: opaque tokens, checked on every call |
//! | [`sized`] | size-prefixed structs (ABI 13): read and written by the caller's `size` |
//! | [`error`] | status codes, the thread-local last error, the panic guard |
//!
//! **Invariant:** nothing undefined crosses the boundary from our side. Every function
//! returns a [`RunLaneStatus`] and leaves a thread-local message when it fails; a panic is
//! caught and becomes `RUN_LANE_STATUS_PANIC`; a NULL, foreign or destroyed handle is
//! `INVALID_HANDLE` (a handle is a never-reused token looked up in a registry, never
//! dereferenced); enums written by C arrive as `uint32_t` and are range-checked; outputs
//! are copied into caller-owned structs, so no returned memory outlives a call except
//! `run_lane_last_error`'s string (valid until the thread's next call).
//!
//! **Threads:** every function may be called from any thread. The runner's callbacks run
//! on the lane's own thread, one at a time (prepare and finalise on host workers when the
//! vtable and the config ask for it). From any lane's callback the calls that return at once
//! (submit, publish, poll, close) are allowed and the ones that block (`run_lane_wait`,
//! `run_lane_destroy`, `run_lane_create`) return `WRONG_THREAD`: the header's top comment has
//! the table.
//!
//! **API boundary:** the C functions and types of `run_lane.h`; Rust users embed
//! `lane_service` directly.

mod api;
mod claims;
pub mod config;
pub mod device_ops;
pub mod error;
pub mod outcome;
pub mod registry;
pub mod runner;
pub mod sized;
mod trace;
pub mod types;

pub use api::{
    run_lane_abi_version, run_lane_acl_library, run_lane_activate, run_lane_cancel, run_lane_close,
    run_lane_config_default, run_lane_create, run_lane_destroy, run_lane_destroy_with_report,
    run_lane_device_reset, run_lane_last_error, run_lane_notice_monitor, run_lane_poll,
    run_lane_publish, run_lane_report_device_fault, run_lane_run_state, run_lane_submit,
    run_lane_trace_start, run_lane_trace_stop, run_lane_wait,
};
pub use registry::RunLane;
pub use runner::CRunner;
pub use types::*;
