//! The fake libascendcl's own exports, reached as an embedding reaches the library the lanes
//! load: its exception-info callback slot and getters.

use core::ffi::c_void;

use super::fake_path;

unsafe extern "C" {
    fn dlopen(
        filename: *const core::ffi::c_char,
        flags: core::ffi::c_int,
    ) -> *mut core::ffi::c_void;
    fn dlsym(
        handle: *mut core::ffi::c_void,
        symbol: *const core::ffi::c_char,
    ) -> *mut core::ffi::c_void;
}

/// The fake's exported `name`, as an embedding reaches the libascendcl the lanes load (the
/// fake is already loaded by the control surface: this takes another reference to it).
pub(crate) fn fake_symbol(name: &core::ffi::CStr) -> *mut c_void {
    const RTLD_NOW: core::ffi::c_int = 2;
    // SAFETY: the fake's path, NUL-terminated.
    let library = unsafe { dlopen(fake_path().as_ptr(), RTLD_NOW) };
    assert!(!library.is_null(), "dlopen the fake");
    // SAFETY: a live handle and a NUL-terminated name.
    let symbol = unsafe { dlsym(library, name.as_ptr()) };
    assert!(!symbol.is_null(), "the fake has {name:?}");
    symbol
}

/// ACL's exception-info callback as an embedding writes one (`aclrtExceptionInfo *`).
pub(crate) type ExceptionCallback = unsafe extern "C" fn(*mut c_void);

/// Registers `callback` in the fake's one callback slot, as an embedding (or HCCL) does with
/// `aclrtSetExceptionInfoCallback` of the library the lanes load.
pub(crate) fn register_exception_callback(callback: ExceptionCallback) {
    type SetCallback = unsafe extern "C" fn(Option<ExceptionCallback>) -> i32;
    let symbol = fake_symbol(c"aclrtSetExceptionInfoCallback");
    // SAFETY: the symbol is ACL's `aclError aclrtSetExceptionInfoCallback(callback)`.
    let set = unsafe { std::mem::transmute::<*mut c_void, SetCallback>(symbol) };
    // SAFETY: a valid callback that outlives the process's notices.
    assert_eq!(unsafe { set(Some(callback)) }, 0);
}

/// One of the fake's `aclrtGet*FromExceptionInfo` getters, as an embedding's handler calls
/// them: `uint32_t getter(const aclrtExceptionInfo *)`.
pub(crate) fn exception_info_getter(
    name: &core::ffi::CStr,
) -> unsafe extern "C" fn(*const c_void) -> u32 {
    let symbol = fake_symbol(name);
    // SAFETY: the getters are ACL's `uint32_t aclrtGet...FromExceptionInfo(info)`.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_void) -> u32>(symbol)
    }
}
