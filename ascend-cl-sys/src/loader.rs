//! Finding and opening `libascendcl.so`: the search order, the devlib refusal, per-symbol
//! fallback, and an error that lists every candidate tried.

use std::ffi::{CStr, OsString};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LAZY, RTLD_NOW};

use crate::api::Acl;

/// The library a search looks for.
pub const LIBRARY_NAME: &str = "libascendcl.so";
/// Where a symbol missing from `libascendcl.so` is looked up next (ascend-cl.md §1.1).
pub const FALLBACK_LIBRARIES: &[&str] = &["libacl_rt.so"];
/// The variable naming an explicit library (the fake, a non-standard install).
pub const ENV_EXPLICIT: &str = "RUN_LANE_ACL_LIB";
/// The install variables `set_env.sh` sets, in the order they are consulted.
pub const ENV_HOMES: &[&str] = &["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"];
/// Library folders under an install home, newest layout first (ascend-cl.md §1.2).
const HOME_SUBDIRS: &[&str] = &["lib64", "{arch}-linux/lib64", "runtime/lib64", "acllib/lib64"];

/// Where a candidate came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The constructor's path.
    Explicit,
    /// An environment variable (`RUN_LANE_ACL_LIB`, `ASCEND_HOME_PATH`, `ASCEND_TOOLKIT_HOME`).
    Env(&'static str),
    /// A default install prefix.
    Prefix,
    /// A bare `dlopen("libascendcl.so")`: the loader's own search (`LD_LIBRARY_PATH`, cache).
    Bare,
    /// The copy the process already loaded ([`Search::prefer_loaded`], [`loaded_library`]):
    /// reopened with `RTLD_NOLOAD`, so no second copy is mapped.
    Loaded,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Explicit => f.write_str("explicit path"),
            Self::Env(var) => write!(f, "${var}"),
            Self::Prefix => f.write_str("default install prefix"),
            Self::Bare => f.write_str("bare dlopen"),
            Self::Loaded => f.write_str("already loaded"),
        }
    }
}

/// A library path the search will try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The path handed to `dlopen` (a bare name for [`Source::Bare`]).
    pub path: PathBuf,
    /// Why it is a candidate.
    pub source: Source,
}

/// Why one candidate was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptFailure {
    /// No file at that path.
    NotFound,
    /// The path (or the file `dladdr` resolved) lies under a `devlib/` folder: CANN's stub
    /// libraries, which return success from every call.
    StubLibrary {
        /// The stub's path.
        path: PathBuf,
    },
    /// `dlopen` failed with this message.
    Open(String),
    /// The path is empty. Refused, as C's `dlopen("")` would hand back the main program
    /// (whose own symbols, a test's linked fake among them, would then pass for ACL's).
    EmptyPath,
    /// The library (and its fallbacks) lacks one or more REQUIRED symbols of the table
    /// (a missing optional symbol never fails a load).
    MissingSymbol {
        /// The first missing symbol, in declaration order.
        symbol: &'static str,
        /// Every missing required symbol, in declaration order (`symbol` first).
        missing: Vec<&'static str>,
        /// The library opened first.
        library: PathBuf,
        /// The fallback libraries also searched.
        fallbacks: Vec<PathBuf>,
    },
}

/// The oldest CANN (and why) that exports `symbol`, where the lane knows a version that
/// lacks it (device-truth §6); `None` for a symbol every supported CANN has.
#[must_use]
pub fn required_version(symbol: &str) -> Option<&'static str> {
    match symbol {
        "aclrtSynchronizeDeviceWithTimeout" | "aclrtSetOpExecuteTimeOutV2" => {
            Some("CANN 8.0.0 or newer (ACL 1.10.0, the CANN of August 2024, lacks it)")
        }
        _ => None,
    }
}

/// One line per missing symbol, each with the version that has it where known.
fn missing_lines(missing: &[&'static str]) -> String {
    missing
        .iter()
        .map(|symbol| match required_version(symbol) {
            Some(version) => format!("\n      `{symbol}`: needs {version}"),
            None => format!("\n      `{symbol}`"),
        })
        .collect()
}

impl fmt::Display for AttemptFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("no such file"),
            Self::StubLibrary { path } => write!(
                f,
                "refused: {} is under devlib/, CANN's stub library that returns success from every call (a lane on it would run on nothing)",
                path.display()
            ),
            Self::Open(message) => write!(f, "dlopen failed: {message}"),
            Self::EmptyPath => f.write_str(
                "refused: an empty path (dlopen would return the main program, not a library)",
            ),
            Self::MissingSymbol { symbol, missing, library, fallbacks } => {
                let listed: &[&'static str] =
                    if missing.is_empty() { core::slice::from_ref(symbol) } else { missing };
                let count = listed.len();
                let noun = if count == 1 { "symbol" } else { "symbols" };
                write!(f, "{count} required {noun} missing from {}", library.display())?;
                for fallback in fallbacks {
                    write!(f, " and {}", fallback.display())?;
                }
                write!(f, ":{}", missing_lines(listed))
            }
        }
    }
}

/// One candidate and why it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The candidate.
    pub candidate: Candidate,
    /// Why it was not used.
    pub failure: AttemptFailure,
}

/// No candidate produced a usable library.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// Every candidate failed; each is listed with its reason, in search order.
    #[error("no usable {LIBRARY_NAME}:{}\nhint: {}", list(attempts), hint(attempts))]
    NotLoaded {
        /// Every candidate tried, in search order.
        attempts: Vec<Attempt>,
    },
}

impl LoadError {
    /// Every candidate tried, in search order.
    #[must_use]
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Self::NotLoaded { attempts } => attempts,
        }
    }
}

fn list(attempts: &[Attempt]) -> String {
    attempts
        .iter()
        .map(|a| {
            format!("\n  - {} ({}): {}", a.candidate.path.display(), a.candidate.source, a.failure)
        })
        .collect()
}

fn hint(attempts: &[Attempt]) -> &'static str {
    let any = |f: fn(&AttemptFailure) -> bool| attempts.iter().any(|a| f(&a.failure));
    if any(|f| matches!(f, AttemptFailure::StubLibrary { .. })) {
        "point at the real lib64 of a CANN install on a machine with the NPU driver, not at devlib/"
    } else if any(|f| {
        matches!(f, AttemptFailure::MissingSymbol { missing, .. }
            if !missing.is_empty() && missing.iter().all(|s| required_version(s).is_some()))
    }) {
        "its CANN is too old: the lane needs CANN 8.0.0 or newer; `source` a newer install's set_env.sh"
    } else if any(|f| matches!(f, AttemptFailure::MissingSymbol { .. })) {
        "the library is not libascendcl, or its CANN is older than 8.0.0, the oldest the lane supports"
    } else if any(|f| matches!(f, AttemptFailure::EmptyPath)) {
        "name the library by a non-empty path"
    } else {
        "install CANN and `source <cann>/set_env.sh`, or name the library in RUN_LANE_ACL_LIB"
    }
}

/// Reads one environment variable.
type EnvLookup = Box<dyn Fn(&str) -> Option<OsString>>;

/// Where to look for the library, in order: an explicit path (exclusive: a mistyped explicit
/// path must not silently load some other library), `ASCEND_HOME_PATH`,
/// `ASCEND_TOOLKIT_HOME`, the default install prefixes, then a bare `dlopen`.
///
/// The environment is read through a closure, so tests can check the order without touching
/// the process environment.
pub struct Search {
    explicit: Option<PathBuf>,
    env: EnvLookup,
    prefixes: Option<Vec<PathBuf>>,
    bare: bool,
    /// Symbols looked up as absent ([`Search::hiding`]).
    hidden: Vec<String>,
    /// Try the copy the process already loaded first ([`Search::prefer_loaded`]).
    prefer_loaded: bool,
}

impl fmt::Debug for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Search")
            .field("candidates", &self.candidates())
            .field("hidden", &self.hidden)
            .finish()
    }
}

impl Search {
    /// The search a user's machine runs: the process environment, the default prefixes.
    #[must_use]
    pub fn from_env() -> Self {
        Self::with_env(|name| std::env::var_os(name))
    }

    /// A search reading its variables through `env` (`RUN_LANE_ACL_LIB`, the homes, `HOME`).
    #[must_use]
    pub fn with_env(env: impl Fn(&str) -> Option<OsString> + 'static) -> Self {
        Self {
            explicit: None,
            env: Box::new(env),
            prefixes: None,
            bare: true,
            hidden: Vec::new(),
            prefer_loaded: false,
        }
    }

    /// Use this library and nothing else (takes precedence over `RUN_LANE_ACL_LIB`).
    #[must_use]
    pub fn explicit(mut self, path: impl Into<PathBuf>) -> Self {
        self.explicit = Some(path.into());
        self
    }

    /// Replace the default install prefixes.
    #[must_use]
    pub fn prefixes(mut self, prefixes: Vec<PathBuf>) -> Self {
        self.prefixes = Some(prefixes);
        self
    }

    /// Whether to use the libascendcl the process already loaded (the embedding runtime's
    /// copy) before any other candidate, the explicit path included (default: no). Found by
    /// its soname (`dlopen("libascendcl.so", RTLD_NOLOAD)`) or, failing that, as a loaded
    /// object whose file is named `libascendcl.so*` ([`loaded_library`]); reopened with
    /// `RTLD_NOLOAD`, so no second copy is mapped and the lane shares the runtime's ACL state.
    /// [`Acl::path`] names the copy used. When none is loaded the search goes on as usual.
    #[must_use]
    pub fn prefer_loaded(mut self, prefer: bool) -> Self {
        self.prefer_loaded = prefer;
        self
    }

    /// Whether to end with a bare `dlopen` (default: yes).
    #[must_use]
    pub fn bare_dlopen(mut self, bare: bool) -> Self {
        self.bare = bare;
        self
    }

    /// Looks each of `symbols` up as absent, in the library and its fallbacks alike: the
    /// library loads as an older or trimmed CANN's would. A hidden REQUIRED symbol refuses
    /// the load ([`AttemptFailure::MissingSymbol`] names it), a hidden OPTIONAL one is listed
    /// by [`Acl::missing_optional`] and its method returns
    /// [`Unavailable`](crate::Unavailable) without calling. What it is for: proving, on a
    /// library that has every symbol (the test fake), the refusal and the degrade paths a
    /// real older CANN takes; and keeping a process off an optional call it must not make.
    /// Names that are not ACL symbols of the table change nothing.
    #[must_use]
    pub fn hiding<S: Into<String>>(mut self, symbols: impl IntoIterator<Item = S>) -> Self {
        self.hidden.extend(symbols.into_iter().map(Into::into));
        self
    }

    /// The symbols [`Search::hiding`] looks up as absent, in the order given.
    #[must_use]
    pub fn hidden(&self) -> &[String] {
        &self.hidden
    }

    /// The default install prefixes (ascend-cl.md §1.2), `$HOME` read through the closure.
    #[must_use]
    pub fn default_prefixes(&self) -> Vec<PathBuf> {
        let mut out = vec![PathBuf::from("/usr/local/Ascend/cann")];
        let home = (self.env)("HOME").map(PathBuf::from);
        if let Some(home) = &home {
            out.push(home.join("Ascend/cann"));
        }
        out.push(PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest"));
        if let Some(home) = &home {
            out.push(home.join("Ascend/ascend-toolkit/latest"));
        }
        out
    }

    /// Every candidate, in the order [`Search::open`] tries them, without duplicates.
    #[must_use]
    pub fn candidates(&self) -> Vec<Candidate> {
        if let Some(path) = &self.explicit {
            return vec![Candidate { path: path.clone(), source: Source::Explicit }];
        }
        if let Some(path) = (self.env)(ENV_EXPLICIT).filter(|p| !p.is_empty()) {
            return vec![Candidate { path: path.into(), source: Source::Env(ENV_EXPLICIT) }];
        }
        let mut out: Vec<Candidate> = Vec::new();
        let mut push = |path: PathBuf, source: Source| {
            if !out.iter().any(|c| c.path == path) {
                out.push(Candidate { path, source });
            }
        };
        for var in ENV_HOMES {
            if let Some(home) = (self.env)(var).filter(|p| !p.is_empty()) {
                for path in library_paths(Path::new(&home)) {
                    push(path, Source::Env(var));
                }
            }
        }
        let prefixes = self.prefixes.clone().unwrap_or_else(|| self.default_prefixes());
        for prefix in prefixes {
            for path in library_paths(&prefix) {
                push(path, Source::Prefix);
            }
        }
        if self.bare {
            push(PathBuf::from(LIBRARY_NAME), Source::Bare);
        }
        out
    }

    /// Tries every candidate in order and returns the first that loads with every symbol.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotLoaded`] listing each candidate and why it failed.
    pub fn open(&self) -> Result<Acl, LoadError> {
        let mut attempts = Vec::new();
        let loaded = self.prefer_loaded.then(loaded_library).flatten();
        let loaded = loaded.map(|path| Candidate { path, source: Source::Loaded });
        for candidate in loaded.into_iter().chain(self.candidates()) {
            match open_candidate(&candidate, &self.hidden) {
                Ok(acl) => return Ok(acl),
                Err(failure) => attempts.push(Attempt { candidate, failure }),
            }
        }
        Err(LoadError::NotLoaded { attempts })
    }
}

/// `<home>/lib64/libascendcl.so` and the older layouts.
fn library_paths(home: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    HOME_SUBDIRS
        .iter()
        .map(move |sub| home.join(sub.replace("{arch}", std::env::consts::ARCH)).join(LIBRARY_NAME))
}

/// Whether `path`, or the file it resolves to through symlinks, lies under a `devlib`
/// folder (CANN's stub libraries).
#[must_use]
pub fn is_stub_path(path: &Path) -> bool {
    let under_devlib =
        |p: &Path| p.components().any(|c| matches!(c, Component::Normal(name) if name == "devlib"));
    under_devlib(path) || std::fs::canonicalize(path).is_ok_and(|real| under_devlib(&real))
}

/// Whether `dlopen` would search for this name itself (no directory part).
fn is_bare(path: &Path) -> bool {
    path.parent().is_none_or(|p| p.as_os_str().is_empty())
}

fn open_candidate(candidate: &Candidate, hidden: &[String]) -> Result<Acl, AttemptFailure> {
    let path = &candidate.path;
    if path.as_os_str().is_empty() {
        return Err(AttemptFailure::EmptyPath);
    }
    if is_stub_path(path) {
        return Err(AttemptFailure::StubLibrary { path: path.clone() });
    }
    // The copy already loaded is reopened by the name the loader knows it by, which may be
    // relative, or a file deleted or replaced since (an in-place CANN upgrade): looking for the
    // file would skip it and map a second copy.
    if candidate.source != Source::Loaded && !is_bare(path) && !path.exists() {
        return Err(AttemptFailure::NotFound);
    }
    let mut libraries = Libraries::open(path, hidden, candidate.source == Source::Loaded)?;
    let acl = Acl::resolve(path.clone(), &mut libraries)?;
    // The name given may be a bare name or a symlink: ask the loader which file it mapped.
    let resolved = mapped_file(acl.init_address()).unwrap_or_else(|| path.clone());
    if is_stub_path(&resolved) {
        return Err(AttemptFailure::StubLibrary { path: resolved });
    }
    Ok(acl.with_path(resolved))
}

/// The file the dynamic loader mapped `address` from (`dladdr`).
fn mapped_file(address: *const core::ffi::c_void) -> Option<PathBuf> {
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `address` is a function pointer resolved from a loaded library; `info` is a
    // writable Dl_info; dladdr only writes to it.
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr returned non-zero, so it filled `info`.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader, alive while the
    // library stays loaded (it is: `Acl` holds it).
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

/// The primary library and the fallbacks opened on demand when it lacks a symbol.
pub(crate) struct Libraries {
    primary_path: PathBuf,
    opened: Vec<Library>,
    fallbacks_opened: bool,
    fallback_paths: Vec<PathBuf>,
    /// Symbols looked up as absent ([`Search::hiding`]).
    hidden: Vec<String>,
}

impl Libraries {
    /// Opens the primary library at `path`; `loaded`: only a copy already loaded
    /// (`RTLD_NOLOAD`), never a new one, and without `RTLD_GLOBAL`: that would promote a copy
    /// the runtime loaded `RTLD_LOCAL` into the global scope for good (glibc keeps it there
    /// past our `dlclose`). Symbols are looked up in this handle, so none is needed globally.
    fn open(path: &Path, hidden: &[String], loaded: bool) -> Result<Self, AttemptFailure> {
        let primary =
            if loaded { dlopen_flags(path, RTLD_LAZY | libc::RTLD_NOLOAD)? } else { dlopen(path)? };
        Ok(Self {
            primary_path: path.to_path_buf(),
            opened: vec![primary],
            fallbacks_opened: false,
            fallback_paths: Vec::new(),
            hidden: hidden.to_vec(),
        })
    }

    /// Opens the fallback libraries next to the primary (or bare, when it was bare); one that
    /// is missing, under devlib/ or fails to open is skipped.
    fn open_fallbacks(&mut self) {
        if self.fallbacks_opened {
            return;
        }
        self.fallbacks_opened = true;
        for name in FALLBACK_LIBRARIES {
            let path = if is_bare(&self.primary_path) {
                PathBuf::from(name)
            } else {
                match self.primary_path.parent() {
                    Some(dir) => dir.join(name),
                    None => continue,
                }
            };
            if is_stub_path(&path) || (!is_bare(&path) && !path.exists()) {
                continue;
            }
            if let Ok(library) = dlopen(&path) {
                self.opened.push(library);
                self.fallback_paths.push(path);
            }
        }
    }

    /// Resolves `name`, first in the primary library, then in each fallback; `None` when no
    /// library has it, or when the search hides it ([`Search::hiding`]).
    ///
    /// # Safety
    ///
    /// `T` is the symbol's C prototype as a function-pointer type.
    pub(crate) unsafe fn symbol<T: Copy>(&mut self, name: &'static str) -> Option<T> {
        if self.hidden.iter().any(|hidden| hidden == name) {
            return None;
        }
        let lookup = |library: &Library| {
            // SAFETY: `T` is the symbol's prototype (caller's contract); the value is copied
            // out and only called while `Acl` keeps the library loaded.
            unsafe { library.get::<T>(name.as_bytes()) }.ok().map(|symbol| *symbol)
        };
        if let Some(found) = lookup(&self.opened[0]) {
            return Some(found);
        }
        self.open_fallbacks();
        self.opened[1..].iter().find_map(lookup)
    }

    /// The refusal for these missing required symbols (at least one), in declaration order.
    pub(crate) fn missing(&self, missing: Vec<&'static str>) -> AttemptFailure {
        missing_symbols(missing, self.primary_path.clone(), self.fallback_paths.clone())
    }

    pub(crate) fn take(&mut self) -> Vec<Library> {
        std::mem::take(&mut self.opened)
    }
}

fn dlopen(path: &Path) -> Result<Library, AttemptFailure> {
    dlopen_flags(path, RTLD_NOW | RTLD_GLOBAL)
}

/// `dlopen(path, flags)`: RTLD_NOW makes a broken library fail here, not at its first call,
/// and RTLD_GLOBAL is how CANN's own loaders open it (ascend-cl.md §1.1); RTLD_NOLOAD, where
/// given, only reopens a copy already loaded (with RTLD_LAZY: it is relocated already).
fn dlopen_flags(path: &Path, flags: core::ffi::c_int) -> Result<Library, AttemptFailure> {
    // SAFETY: opening a library runs its initialisers. CANN's and the fake's are sound to run
    // on any thread (and a copy already loaded runs none again).
    unsafe { Library::open(Some(path.as_os_str()), flags) }
        .map_err(|e| AttemptFailure::Open(e.to_string()))
}

/// The file of the libascendcl the process already loaded, if any: the object the dynamic
/// loader knows by the soname `libascendcl.so` (the file `dladdr` names for its `aclInit`),
/// else the first loaded object whose file is named `libascendcl.so` or `libascendcl.so.*`.
/// Loads nothing.
#[must_use]
pub fn loaded_library() -> Option<PathBuf> {
    by_soname().or_else(by_file_name)
}

/// The loaded object whose soname is `libascendcl.so`, by the file `dladdr` names for its
/// `aclInit`.
fn by_soname() -> Option<PathBuf> {
    let name = std::ffi::CString::new(LIBRARY_NAME).ok()?;
    // SAFETY: RTLD_NOLOAD loads nothing and runs no initialiser: it returns a handle (one
    // more reference) to an object already loaded, or NULL.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a live handle; the name is NUL-terminated.
    let init = unsafe { libc::dlsym(handle, c"aclInit".as_ptr()) };
    let path = if init.is_null() { None } else { mapped_file(init.cast_const()) };
    // SAFETY: drops the reference this function's dlopen took; the object stays loaded by
    // whoever loaded it first.
    unsafe { libc::dlclose(handle) };
    path
}

/// The first loaded object whose file is named `libascendcl.so` or `libascendcl.so.*`
/// (`dl_iterate_phdr`).
fn by_file_name() -> Option<PathBuf> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut core::ffi::c_void,
    ) -> core::ffi::c_int {
        // SAFETY: the loader passes a valid `info` for the call; `data` is the
        // `Option<PathBuf>` below, borrowed mutably for the iteration only.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Option<PathBuf>>()) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated name owned by the loader, valid during the call.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) };
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
        let matches = path.file_name().is_some_and(|file| {
            let file = file.as_bytes();
            file == LIBRARY_NAME.as_bytes()
                || file.starts_with(format!("{LIBRARY_NAME}.").as_bytes())
        });
        if matches {
            *found = Some(path.to_path_buf());
            return 1;
        }
        0
    }
    let mut found: Option<PathBuf> = None;
    // SAFETY: `visit` matches the callback's prototype and only reads what the loader passes;
    // `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast()) };
    found
}

/// [`AttemptFailure::MissingSymbol`] for `missing` (non-empty, declaration order) from
/// `library` and its `fallbacks`: what the loader reports, built from a list so its message
/// can be checked without a library that lacks the symbols.
#[must_use]
pub fn missing_symbols(
    missing: Vec<&'static str>,
    library: PathBuf,
    fallbacks: Vec<PathBuf>,
) -> AttemptFailure {
    AttemptFailure::MissingSymbol {
        symbol: missing.first().copied().unwrap_or(""),
        missing,
        library,
        fallbacks,
    }
}
