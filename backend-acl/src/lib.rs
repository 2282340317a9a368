//! Executes lane effects with ACL on a real Ascend NPU. A later issue fills it; today it is
//! a documented placeholder.
//!
//! **Will own:** an implementation of `lane_driver::Backend` over ascend-cl-sys, one method
//! per ACL call, so the same `lane_driver::Driver` loop that runs the simulator runs the
//! device: streams created with `aclrtCreateStreamWithConfig` and destroyed without a
//! pre-destroy sync, completion events from `aclrtCreateEventExWithFlag` re-recorded per run,
//! bounded waits with `aclrtSynchronizeEventWithTimeout`, the status header read with one
//! synchronous D2H copy, recovery as bounded drain, `aclrtResetDeviceForce` and a probe
//! (never a plain reset after a force reset), `aclrtSetDevice` on every thread that touches
//! the device, and `aclGetRecentErrMsg` after every failure. Its conformance tests run the
//! simulator's scenarios against hardware when a device is present.
//!
//! **Invariant:** mechanism only: every call returns the raw code it got; lane-core decides
//! what it means. The only clock read is `Backend::now` (a monotonic clock). Never depends on
//! backend-sim.
//!
//! **API boundary:** a `Backend` implementation and its constructor (device id, runner
//! hooks for prepare, finalise and upload).
