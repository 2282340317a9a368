//! The installed files that tell a consumer's build where the library is: the soname, the
//! pkg-config file and the CMake package files.

use std::fmt::Write as _;
use std::path::Path;

use super::{CDYLIB, STATICLIB};

/// The shared library's installed name (and soname) for ABI major `major`.
pub(super) fn soname(major: u32) -> String {
    format!("{CDYLIB}.{major}")
}

/// A prefix the generated files can name without quoting: pkg-config splits its flags at
/// whitespace, and CMake strings treat `"`, `$`, `;` and `\` specially.
pub(super) fn plain_prefix(prefix: &Path) -> Result<&str, String> {
    let text =
        prefix.to_str().ok_or_else(|| format!("the prefix {} is not UTF-8", prefix.display()))?;
    match text.chars().find(|c| c.is_whitespace() || matches!(c, '"' | '$' | ';' | '\\' | '#')) {
        Some(c) => Err(format!(
            "the prefix `{text}` holds {c:?}, which run_lane.pc and RunLaneConfig.cmake \
             cannot carry unquoted; choose another folder"
        )),
        None => Ok(text),
    }
}

/// `lib/pkgconfig/run_lane.pc`.
pub(super) fn pkg_config_file(prefix: &str, major: u32, native_static_libs: &[String]) -> String {
    format!(
        "# run_lane: the run lane's C ABI (lane-capi), installed by `cargo xtask dist`.\n\
         # Version is the ABI major (RUN_LANE_ABI_VERSION); Libs.private is what\n\
         # `rustc --print native-static-libs` names for librun_lane.a.\n\
         prefix={prefix}\n\
         libdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: run_lane\n\
         Description: The run lane: queued consecutive device runs on Ascend NPUs (C ABI)\n\
         Version: {major}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lrun_lane\n\
         Libs.private: {}\n",
        native_static_libs.join(" ")
    )
}

/// rustc's linker flags as CMake link items: `-lfoo` becomes `foo`, anything else stays a
/// flag.
pub(super) fn cmake_link_items(native_static_libs: &[String]) -> String {
    native_static_libs
        .iter()
        .map(|flag| flag.strip_prefix("-l").unwrap_or(flag))
        .collect::<Vec<_>>()
        .join(";")
}

/// `lib/cmake/RunLane/RunLaneConfig.cmake`: the imported targets, relative to its own folder
/// (so the tree may be moved).
pub(super) fn cmake_config_file(major: u32, native_static_libs: &[String]) -> String {
    let soname = soname(major);
    let links = cmake_link_items(native_static_libs);
    let mut text = String::new();
    let _ = write!(
        text,
        "\
# RunLane: the run lane's C ABI (lane-capi), installed by `cargo xtask dist`.
#
#   find_package(RunLane {major} REQUIRED)
#   target_link_libraries(app PRIVATE RunLane::run_lane)         # {soname}
#   target_link_libraries(app PRIVATE RunLane::run_lane_static)  # librun_lane.a
#
# The version is the ABI major (RUN_LANE_ABI_VERSION, also RunLane_ABI_VERSION here); the
# static target carries the system libraries `rustc --print native-static-libs` names.
get_filename_component(_run_lane_prefix \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)
set(RunLane_ABI_VERSION {major})
set(RunLane_INCLUDE_DIR \"${{_run_lane_prefix}}/include\")

if(NOT TARGET RunLane::run_lane)
  add_library(RunLane::run_lane SHARED IMPORTED)
  set_target_properties(RunLane::run_lane PROPERTIES
    IMPORTED_LOCATION \"${{_run_lane_prefix}}/lib/{soname}\"
    IMPORTED_SONAME \"{soname}\"
    INTERFACE_INCLUDE_DIRECTORIES \"${{_run_lane_prefix}}/include\")
endif()

if(NOT TARGET RunLane::run_lane_static)
  add_library(RunLane::run_lane_static STATIC IMPORTED)
  set_target_properties(RunLane::run_lane_static PROPERTIES
    IMPORTED_LOCATION \"${{_run_lane_prefix}}/lib/{STATICLIB}\"
    IMPORTED_LINK_INTERFACE_LANGUAGES \"C\"
    INTERFACE_INCLUDE_DIRECTORIES \"${{_run_lane_prefix}}/include\"
    INTERFACE_LINK_LIBRARIES \"{links}\")
endif()

unset(_run_lane_prefix)
"
    );
    text
}

/// `lib/cmake/RunLane/RunLaneConfigVersion.cmake`: version `major`, SameMajorVersion (what
/// CMake's `write_basic_package_version_file` writes for a one-number version), and the
/// pointer width the libraries were built for.
pub(super) fn cmake_version_file(major: u32, pointer_bytes: usize) -> String {
    format!(
        "\
# RunLane's version is its ABI major (RUN_LANE_ABI_VERSION), with SameMajorVersion
# compatibility: find_package(RunLane {major}) accepts this install, any other major is refused.
# Written by `cargo xtask dist`.
set(PACKAGE_VERSION \"{major}\")
set(PACKAGE_VERSION_COMPATIBLE FALSE)

if(PACKAGE_FIND_VERSION_RANGE)
  # A range accepts the ABI if it holds it.
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
      AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL \"INCLUDE\"
            AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
        OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL \"EXCLUDE\"
            AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL \"{major}\"
    AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

# The libraries are {bits}-bit: a project of another pointer width cannot link them.
if(NOT \"${{CMAKE_SIZEOF_VOID_P}}\" STREQUAL \"\" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL \"{pointer_bytes}\")
  set(PACKAGE_VERSION \"${{PACKAGE_VERSION}} ({bits}bit)\")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
",
        bits = pointer_bytes * 8
    )
}
