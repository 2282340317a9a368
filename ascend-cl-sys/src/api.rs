//! [`Acl`]: the resolved symbol table, its call methods (generated from
//! [`for_each_acl_function!`](crate::for_each_acl_function)) and a few safe helpers.

use core::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};

use libloading::os::unix::Library;

use crate::loader::{AttemptFailure, Libraries};
use crate::types::{ACL_ERROR_REPEAT_INITIALIZE, ACL_SUCCESS, AclError};

/// An ACL call that returned a non-zero code. The code is not interpreted here
/// (status-latch classifies codes); `message` is `aclGetRecentErrMsg` right after the failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed with ACL code {code}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
pub struct CallError {
    /// The ACL symbol called.
    pub call: &'static str,
    /// The code it returned.
    pub code: AclError,
    /// `aclGetRecentErrMsg` read right after the failure, if it had one.
    pub message: Option<String>,
}

/// An optional ACL call the loaded library does not export: nothing was called. What it
/// degrades is the caller's to say (docs/hardware.md lists it for the lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{symbol} is not available in the loaded ACL library (an optional call: needs a newer CANN)"
)]
pub struct Unavailable {
    /// The optional symbol.
    pub symbol: &'static str,
}

/// A loaded ACL library: every required symbol of the table resolved (each optional one
/// resolved or listed by [`Acl::missing_optional`]), the libraries kept open for as
/// long as this value lives.
///
/// Methods named after the ACL functions call them directly (`unsafe`: the caller upholds
/// each call's C contract). Build one with [`Acl::open`], [`Acl::load`] or
/// [`Search::open`](crate::Search::open).
pub struct Acl {
    functions: Functions,
    optional: OptionalFunctions,
    missing_optional: Vec<&'static str>,
    path: PathBuf,
    // Dropped after `functions` (declaration order), so no pointer outlives its library.
    _libraries: Vec<Library>,
}

impl std::fmt::Debug for Acl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acl")
            .field("path", &self.path)
            .field("missing_optional", &self.missing_optional)
            .finish_non_exhaustive()
    }
}

macro_rules! define_acl {
    ($( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        /// Every REQUIRED ACL symbol the table binds, in declaration order.
        pub const SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        #[allow(non_snake_case)]
        struct Functions {
            $( $name: unsafe extern "C" fn($($ty),*) -> $ret, )*
        }

        impl Functions {
            /// Every symbol resolved, or the refusal naming every one that is missing.
            #[allow(non_snake_case)]
            fn resolve(libraries: &mut Libraries) -> Result<Self, AttemptFailure> {
                let mut missing = Vec::new();
                $(
                    // SAFETY: the type is this symbol's C prototype (ascend-cl.md §2), as
                    // declared once in `for_each_acl_function!`.
                    let $name = unsafe { libraries.symbol::<unsafe extern "C" fn($($ty),*) -> $ret>(stringify!($name)) };
                    if $name.is_none() {
                        missing.push(stringify!($name));
                    }
                )*
                match ($($name,)*) {
                    ($(Some($name),)*) => Ok(Self { $($name,)* }),
                    _ => Err(libraries.missing(missing)),
                }
            }
        }

        #[allow(non_snake_case)]
        impl Acl {
            $(
                $(#[doc = $doc])*
                ///
                /// # Safety
                ///
                /// The call's C contract: pointer arguments valid for the reads and writes the
                /// call makes, handles created by this library and not yet destroyed.
                pub unsafe fn $name(&self, $($arg: $ty),*) -> $ret {
                    // SAFETY: the pointer was resolved from a library `self` keeps loaded, with
                    // its C prototype; the caller upholds the call's contract.
                    unsafe { (self.functions.$name)($($arg),*) }
                }
            )*
        }
    };
}

macro_rules! define_optional_acl {
    ($( $(#[doc = $doc:literal])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty; )*) => {
        /// Every OPTIONAL ACL symbol the table binds, in declaration order: a library may lack
        /// any of them ([`Acl::missing_optional`]).
        pub const OPTIONAL_SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        #[allow(non_snake_case)]
        struct OptionalFunctions {
            $( $name: Option<unsafe extern "C" fn($($ty),*) -> $ret>, )*
        }

        impl OptionalFunctions {
            /// Each symbol the libraries have; the names of those they lack, in order.
            fn resolve(libraries: &mut Libraries) -> (Self, Vec<&'static str>) {
                let functions = Self {
                    $( $name: {
                        // SAFETY: the type is this symbol's C prototype, as declared once in
                        // `for_each_optional_acl_function!`.
                        unsafe { libraries.symbol::<unsafe extern "C" fn($($ty),*) -> $ret>(stringify!($name)) }
                    }, )*
                };
                let mut missing = Vec::new();
                $(
                    if functions.$name.is_none() {
                        missing.push(stringify!($name));
                    }
                )*
                (functions, missing)
            }
        }

        #[allow(non_snake_case)]
        impl Acl {
            $(
                $(#[doc = $doc])*
                ///
                /// Optional: [`Unavailable`] (nothing called) when the library lacks it.
                ///
                /// # Errors
                ///
                /// [`Unavailable`] naming the symbol when the loaded library does not export it.
                ///
                /// # Safety
                ///
                /// The call's C contract: pointer arguments valid for the reads and writes the
                /// call makes, handles created by this library and not yet destroyed.
                pub unsafe fn $name(&self, $($arg: $ty),*) -> Result<$ret, Unavailable> {
                    let function = self
                        .optional
                        .$name
                        .ok_or(Unavailable { symbol: stringify!($name) })?;
                    // SAFETY: the pointer was resolved from a library `self` keeps loaded, with
                    // its C prototype; the caller upholds the call's contract.
                    Ok(unsafe { function($($arg),*) })
                }
            )*
        }
    };
}

crate::for_each_acl_function!(define_acl);
crate::for_each_optional_acl_function!(define_optional_acl);

impl Acl {
    /// Loads the library at `path` (nothing else is tried; `RUN_LANE_ACL_LIB` is ignored).
    ///
    /// # Errors
    ///
    /// [`LoadError`](crate::LoadError) when the path is empty, the file is missing, cannot be
    /// opened, lies under `devlib/` or lacks a required symbol (every missing one is named).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, crate::LoadError> {
        crate::Search::from_env().explicit(path).open()
    }

    /// Searches for the library as a user's machine would ([`Search::from_env`](crate::Search::from_env)).
    ///
    /// # Errors
    ///
    /// [`LoadError`](crate::LoadError) listing every candidate tried and why it failed.
    pub fn load() -> Result<Self, crate::LoadError> {
        crate::Search::from_env().open()
    }

    pub(crate) fn resolve(
        path: PathBuf,
        libraries: &mut Libraries,
    ) -> Result<Self, AttemptFailure> {
        let functions = Functions::resolve(libraries)?;
        let (optional, missing_optional) = OptionalFunctions::resolve(libraries);
        Ok(Self { functions, optional, missing_optional, path, _libraries: libraries.take() })
    }

    /// The same library, reporting `path` as where it was loaded from.
    pub(crate) fn with_path(mut self, path: PathBuf) -> Self {
        self.path = path;
        self
    }

    /// The address of `aclInit` in the loaded library, for `dladdr`.
    pub(crate) fn init_address(&self) -> *const core::ffi::c_void {
        self.functions.aclInit as *const core::ffi::c_void
    }

    /// The optional symbols ([`OPTIONAL_SYMBOLS`]) the loaded library lacks, in declaration
    /// order: each one's method returns [`Unavailable`]. Empty on every CANN that has them.
    #[must_use]
    pub fn missing_optional(&self) -> &[&'static str] {
        &self.missing_optional
    }

    /// Whether the optional symbol `name` was resolved (`false` too for a name that is not an
    /// optional symbol of the table).
    #[must_use]
    pub fn has_optional(&self, name: &str) -> bool {
        OPTIONAL_SYMBOLS.contains(&name) && !self.missing_optional.contains(&name)
    }

    /// The library that was opened (the file `dladdr` names, when it could tell).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `aclInit(NULL)`, for a process whose embedding runtime did not initialise ACL. A repeat
    /// (100002) counts as success.
    ///
    /// # Errors
    ///
    /// [`CallError`] with any other non-zero code.
    pub fn init(&self) -> Result<(), CallError> {
        // SAFETY: a NULL config path is allowed (ascend-cl.md §2.1).
        let code = unsafe { self.aclInit(core::ptr::null()) };
        if code == ACL_ERROR_REPEAT_INITIALIZE {
            return Ok(());
        }
        self.check("aclInit", code)
    }

    /// `Ok` for 0; otherwise a [`CallError`] carrying the code and `aclGetRecentErrMsg`.
    ///
    /// # Errors
    ///
    /// [`CallError`] when `code` is not 0.
    pub fn check(&self, call: &'static str, code: AclError) -> Result<(), CallError> {
        if code == ACL_SUCCESS {
            Ok(())
        } else {
            Err(CallError { call, code, message: self.recent_error_message() })
        }
    }

    /// `aclGetRecentErrMsg`, copied out (the library's buffer is valid only until its next call).
    #[must_use]
    pub fn recent_error_message(&self) -> Option<String> {
        // SAFETY: no arguments; the result is NULL or a NUL-terminated string.
        let text = unsafe { self.aclGetRecentErrMsg() };
        // SAFETY: non-NULL results are NUL-terminated and valid until the next call, which
        // cannot happen before the copy below returns (same thread).
        unsafe { copy_c_string(text) }
    }

    /// `aclrtGetSocName`, copied out; `None` when the library returns NULL.
    #[must_use]
    pub fn soc_name(&self) -> Option<String> {
        // SAFETY: no arguments; the result is NULL or a NUL-terminated static string.
        let name = unsafe { self.aclrtGetSocName() };
        // SAFETY: as above.
        unsafe { copy_c_string(name) }
    }

    /// `aclrtGetDeviceCount`.
    ///
    /// # Errors
    ///
    /// [`CallError`] with the call's code.
    pub fn device_count(&self) -> Result<u32, CallError> {
        let mut count = 0_u32;
        // SAFETY: `count` is a valid, writable u32.
        let code = unsafe { self.aclrtGetDeviceCount(&mut count) };
        self.check("aclrtGetDeviceCount", code).map(|()| count)
    }
}

/// Copies a C string out, `None` for NULL.
///
/// # Safety
///
/// `text` is NULL or points to a NUL-terminated string valid for the duration of the call.
unsafe fn copy_c_string(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}
