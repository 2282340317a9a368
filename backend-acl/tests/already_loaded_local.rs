//! The libascendcl a runtime loaded `RTLD_LOCAL` and whose file went away since (an in-place
//! CANN upgrade), reopened by the search preferring the loaded copy: it is still that copy
//! (no second one is mapped), and the reopen leaves it out of the global scope. Its own test
//! binary, so no other test's copy of the fake is loaded in this process.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use ascend_cl_sys::Search;

/// Whether `aclInit` is in the process's global scope.
fn global() -> bool {
    // SAFETY: looks a symbol up; loads and runs nothing.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"aclInit".as_ptr()) }.is_null()
}

#[test]
fn a_loaded_copy_whose_file_is_gone_is_reopened_and_stays_out_of_the_global_scope() {
    let first = common::copy_of_the_fake("first");
    let second = common::copy_of_the_fake("second");
    let name = CString::new(first.as_os_str().as_bytes()).expect("no NUL");
    // The runtime loaded its libascendcl privately.
    // SAFETY: opens the fake, whose initialisers are sound on any thread; never closed.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "the fake opens");
    assert!(!global(), "a copy loaded RTLD_LOCAL is not in the global scope");
    // An in-place upgrade removes the file the loader mapped.
    std::fs::remove_file(&first).expect("remove the mapped file");
    let acl = Search::with_env(|_| None)
        .explicit(&second)
        .prefer_loaded(true)
        .open()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(acl.path(), first, "the copy already loaded is used");
    assert!(!common::mapped(&second), "no second copy was mapped");
    drop(acl);
    assert!(!global(), "reopening the loaded copy did not promote it to the global scope");
    let _ = std::fs::remove_file(&second);
}
