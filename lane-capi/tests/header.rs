//! `include/run_lane.h` is what cbindgen generates from the source today.

use std::path::Path;

/// Regenerates the header; with `RUN_LANE_BLESS=1` rewrites the committed one instead of
/// failing on a difference.
#[test]
fn header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = crate_dir.join("include/run_lane.h");
    if std::env::var_os("RUN_LANE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale; regenerate it with `RUN_LANE_BLESS=1 cargo test -p lane-capi --test header` \
         and commit it",
        path.display()
    );
}

/// The build script's reading of `RUN_LANE_ABI_VERSION` (the soname's number,
/// `librun_lane.so.<N>`) is the constant itself.
#[test]
fn the_soname_major_is_the_abi_version() {
    assert_eq!(
        env!("RUN_LANE_SONAME_ABI"),
        run_lane::RUN_LANE_ABI_VERSION.to_string(),
        "build.rs read another ABI major from src/types.rs than the constant"
    );
}
