//! Sets the shared library's soname to `librun_lane.so.<ABI major>` (on Linux), the major
//! read from `RUN_LANE_ABI_VERSION` in `src/types.rs`, the one place it is written; passes
//! that major (`RUN_LANE_SONAME_ABI`, checked equal to the constant by a test) and the target
//! triple (the tests build the C++ example with `cc`, which outside a build script needs it
//! named) to the crate.

use std::path::Path;

/// The file that defines `RUN_LANE_ABI_VERSION`.
const TYPES_RS: &str = "src/types.rs";
/// The definition's text up to the number.
const DEFINITION: &str = "pub const RUN_LANE_ABI_VERSION: u32 =";

/// The number in `pub const RUN_LANE_ABI_VERSION: u32 = N;`, or why there is none.
fn abi_major(source: &str) -> Result<u32, String> {
    let mut found = source.lines().filter_map(|line| line.trim().strip_prefix(DEFINITION));
    let value = found.next().ok_or_else(|| format!("no line `{DEFINITION} N;`"))?;
    if found.next().is_some() {
        return Err(format!("more than one line `{DEFINITION} N;`"));
    }
    let number = value
        .trim()
        .strip_suffix(';')
        .ok_or_else(|| format!("`{DEFINITION}{value}` does not end with `;`"))?
        .trim()
        .replace('_', "");
    number.parse().map_err(|e| format!("`{number}` is not a u32 literal ({e})"))
}

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=RUN_LANE_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={TYPES_RS}");

    let path = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(TYPES_RS);
    let major = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|source| abi_major(&source))
        .unwrap_or_else(|e| {
            panic!(
                "lane-capi's build script reads the ABI major (the soname's number) from {}: {e}",
                path.display()
            )
        });
    println!("cargo:rustc-env=RUN_LANE_SONAME_ABI={major}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librun_lane.so.{major}");
    }
}
