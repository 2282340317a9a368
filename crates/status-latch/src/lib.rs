//! The runtime status header, the code tables and the failure classification (SPEC §5).
//!
//! Pure: decodes bytes the backend read, names codes, and maps every failure to
//! `RunOnly` or `Poison` through one table.
#![forbid(unsafe_code)]
