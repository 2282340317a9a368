//! Passes the target triple to the tests, which build the C++ example with `cc` (outside a
//! build script `cc` needs it named).

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=RUN_LANE_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
