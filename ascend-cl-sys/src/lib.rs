//! Raw FFI to `libascendcl`, loaded at run time with `dlopen` (`libloading`), so building the
//! workspace needs no CANN install.
//!
//! **Owns:** the symbol table of the ACL calls a run lane makes (ascend-cl.md §5), declared
//! once in [`for_each_acl_function!`] (the test fake, `acl-fake`, exports its symbols from the
//! same tables, so the two cannot drift); the library search ([`Search`]); per-symbol
//! fallback from `libascendcl.so` to `libacl_rt.so`; the refusal of any library under
//! `devlib/` (CANN's stub libraries return success from every call); the ACL constants
//! ([`types`]).
//!
//! **Invariant:** an [`Acl`] exists only with every REQUIRED symbol resolved, so a missing
//! one is a [`LoadError`] naming every missing symbol (with the CANN that has it:
//! [`required_version`]), never a crash at the first call. The stream copies'
//! `aclrtMallocHost`, `aclrtFreeHost`, `aclrtMemcpyAsync` and `aclrtStreamWaitEvent` are
//! required too: every supported CANN (8.0.0 or newer) exports them, so a library without
//! one is broken, not old. The OPTIONAL symbols ([`for_each_optional_acl_function!`]) never
//! refuse a load: [`Acl::missing_optional`] names the absent ones and their methods return
//! [`Unavailable`] ([`Search::hiding`] proves that path on the fake). No policy: codes are
//! passed up raw (status-latch classifies them). `aclInit` is called only by [`Acl::init`],
//! which treats 100002 (already initialised) as success, because the embedding runtime
//! normally owns initialisation. Every `unsafe` block carries a `// SAFETY:` line.
//!
//! **API boundary:** [`Acl`], whose methods are the raw ACL calls (`unsafe`, named as in C),
//! plus a few safe helpers ([`Acl::init`], [`Acl::device_count`], [`Acl::soc_name`],
//! [`Acl::recent_error_message`]); [`Search`] and its [`LoadError`]. Nothing above the ACL
//! ABI: streams, events and recovery live in backend-acl.

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
