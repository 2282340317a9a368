//! The libascendcl a runtime loaded `RTLD_LOCAL` and whose file went away since (an in-place
//! CANN upgrade), reopened by the search preferring the loaded copy: it is still that copy
//! (no second one is mapped), and the reopen leaves it out of the global scope. Its own test
//! binary, so no other test's copy of the fake is loaded in this process.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ascend_cl_sys::Search;
use run_lane_fake_ascendcl::cdylib_path;

/// Whether `path` (canonical) is mapped in this process (`/proc/self/maps`), deleted or not.
fn mapped(path: &Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let path = path.to_string_lossy();
    maps.lines()
        .any(|line| line.ends_with(path.as_ref()) || line.ends_with(&format!("{path} (deleted)")))
}

/// A copy of the fake named `libascendcl.so` in a fresh folder `name`.
fn copy_of_the_fake(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "run-lane-loaded-local-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("libascendcl.so");
    std::fs::copy(cdylib_path().unwrap_or_else(|e| panic!("{e}")), &path).expect("copy the fake");
    path.canonicalize().expect("its canonical path")
}

/// Whether `aclInit` is in the process's global scope.
fn global() -> bool {
    // SAFETY: looks a symbol up; loads and runs nothing.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"aclInit".as_ptr()) }.is_null()
}

#[test]
fn a_loaded_copy_whose_file_is_gone_is_reopened_and_stays_out_of_the_global_scope() {
    let first = copy_of_the_fake("first");
    let second = copy_of_the_fake("second");
    let name = CString::new(first.as_os_str().as_bytes()).expect("no NUL");
    // The runtime loaded its libascendcl privately.
    // SAFETY: opens the fake, whose initialisers are sound on any thread; never closed.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "the fake opens");
    assert!(
        !global(),
        "a copy loaded RTLD_LOCAL is not in the global scope"
    );
    // An in-place upgrade removes the file the loader mapped.
    std::fs::remove_file(&first).expect("remove the mapped file");
    let acl = Search::with_env(|_| None)
        .explicit(&second)
        .prefer_loaded(true)
        .open()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(acl.path(), first, "the copy already loaded is used");
    assert!(!mapped(&second), "no second copy was mapped");
    drop(acl);
    assert!(
        !global(),
        "reopening the loaded copy did not promote it to the global scope"
    );
    let _ = std::fs::remove_file(&second);
}
