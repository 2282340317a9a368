//! Raw FFI to `libascendcl`, loaded at run time with `dlopen`, so building the workspace
//! needs no CANN install. A later issue fills it; today it is a documented placeholder.
//!
//! **Will own:** a symbol table of the ACL calls a run lane needs (ascend-cl.md §5: device
//! set/reset/force-reset and bounded synchronise, stream create/destroy, event
//! create/record/query/synchronize-with-timeout/destroy, malloc/free, memcpy both ways,
//! `aclGetRecentErrMsg`, plus the RT kernel-launch calls), resolved from `libascendcl.so`
//! with per-symbol fallback to `libacl_rt.so` and `libruntime.so`; the library search
//! (`ASCEND_HOME_PATH`, `ASCEND_TOOLKIT_HOME`, the default install prefixes, then a bare
//! `dlopen`); a refusal of any path under `/devlib/` (CANN's stub libraries return success
//! from every call); and a probe (`aclrtGetDeviceCount` > 0, `aclrtGetSocName` non-null)
//! that tells a2a3 (`Ascend910B*`, `Ascend910_93*`) from a5 (`Ascend950*`).
//!
//! **Invariant:** no policy and no interpretation of return codes (status-latch does that);
//! every `unsafe` block carries a `// SAFETY:` line (clippy's `undocumented_unsafe_blocks`
//! is denied workspace-wide). This crate and backend-acl are the only places `unsafe` may
//! appear; a tidy test enforces it.
//!
//! **API boundary:** raw `extern "C"` function-pointer types and a loader returning them;
//! nothing above the ACL ABI.
