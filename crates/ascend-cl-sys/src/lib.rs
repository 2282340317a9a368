//! Raw FFI to libascendcl, loaded at run time.
