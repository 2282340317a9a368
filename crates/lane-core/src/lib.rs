//! The run lane as a pure, sans-IO state machine (SPEC §3, L-1..L-17).
#![forbid(unsafe_code)]
