//! The fake stays mapped once loaded (`-z nodelete`), as a real driver library does: its
//! thread-locals (each thread's error text and last error, its bound device) have
//! destructors that run when a thread that called it ends, which may be after the last
//! `dlclose` of it (a test's `Control` dropped, a refused lane's library closed).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
