//! Raw FFI to `libascendcl`, loaded at run time with `dlopen` (`libloading`), so building the
//! workspace needs no CANN install.
//!
//! **Owns:** the symbol table of the ACL calls a run lane makes (ascend-cl.md §5), declared
//! once in [`for_each_acl_function!`]; the library search ([`Search`]: an explicit path or
//! `RUN_LANE_ACL_LIB`, then `ASCEND_HOME_PATH`, `ASCEND_TOOLKIT_HOME`, the default install
//! prefixes, then a bare `dlopen`); per-symbol fallback from `libascendcl.so` to
//! `libacl_rt.so`; the refusal of any library under `devlib/` (CANN's stub libraries return
//! success from every call); the ACL constants ([`types`]).
//!
//! **Invariant:** an [`Acl`] exists only with every REQUIRED symbol resolved, so a missing
//! one is a [`LoadError`] naming every missing symbol (one line each, with the CANN that has
//! it where known: [`required_version`]) and the library, never a crash at the first call.
//! The calls ascend-cl.md §5 lists as optional and the copies on the streams use
//! (`aclrtMallocHost`, `aclrtFreeHost`, `aclrtMemcpyAsync`, `aclrtStreamWaitEvent`) are
//! required symbols too: every CANN the lane supports (8.0.0 or newer) exports them, so a
//! library without one is broken, not old, and is refused at load. The OPTIONAL symbols
//! ([`for_each_optional_acl_function!`]: the fault notice callback and its getters,
//! `aclrtStreamGetId`, `aclrtEventGetTimestamp`) never refuse a load:
//! [`Acl::missing_optional`] names the absent ones and each of their methods returns
//! [`Unavailable`] without calling ([`Search::hiding`] looks chosen symbols up as absent, so
//! both paths are proven on a library that has every symbol, the test fake). An empty explicit path is refused
//! ([`AttemptFailure::EmptyPath`]), as `dlopen("")` is the main program. No policy: return
//! codes are passed up raw (status-latch classifies them). `aclInit` is
//! called only by [`Acl::init`], which treats 100002 (already initialised) as success,
//! because the embedding runtime normally owns initialisation. Every `unsafe` block carries a
//! `// SAFETY:` line.
//!
//! **API boundary:** [`Acl`], whose methods are the raw ACL calls (`unsafe`, named as in C),
//! plus a few safe helpers ([`Acl::init`], [`Acl::device_count`], [`Acl::soc_name`],
//! [`Acl::recent_error_message`]); [`Search`] and its [`LoadError`]. Nothing above the ACL
//! ABI: streams, events and recovery live in backend-acl.
//!
//! The test fake (`acl-fake`, `librun_lane_fake_ascendcl.so`) exports its symbols by
//! expanding the same [`for_each_acl_function!`] and [`for_each_optional_acl_function!`]
//! tables, so the two cannot drift.

mod api;
mod loader;
mod table;
pub mod types;

pub use api::{Acl, CallError, OPTIONAL_SYMBOLS, SYMBOLS, Unavailable};
pub use loader::{
    Attempt, AttemptFailure, Candidate, ENV_EXPLICIT, ENV_HOMES, FALLBACK_LIBRARIES, LIBRARY_NAME,
    LoadError, Search, Source, is_stub_path, loaded_library, missing_symbols, required_version,
};
pub use types::*;
