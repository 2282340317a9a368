//! The tests of `cargo xtask dist`: its arguments, readelf's and cargo's outputs as read,
//! the installed files' text and the objcopy flags.

use super::build_files::{
    cmake_config_file, cmake_link_items, cmake_version_file, pkg_config_file, plain_prefix, soname,
};
use super::check::check_static_size;
use super::elf::{Dynamic, bitcode_section, first_string, parse_dynamic, parse_section_names};
use super::install::{debug_file, static_objcopy_flags};
use std::fs;
use std::path::Path;

use crate::testkit::assert_contains;

use super::*;

fn flags() -> Vec<String> {
    ["-ldl", "-lgcc_s", "-lpthread", "-lc"].map(str::to_owned).to_vec()
}

#[test]
fn arguments_are_a_prefix_or_check() {
    assert_eq!(parse(&["--prefix", "/opt/lane"]), Ok(Mode::Install(PathBuf::from("/opt/lane"))));
    assert_eq!(parse(&["--check"]), Ok(Mode::Check));
    let error = |args: &[&str]| parse(args).unwrap_err();
    assert!(error(&["--prefix"]).contains("needs a folder"));
    assert!(error(&["--prefix", ""]).contains("needs a folder"));
    assert!(error(&[]).contains("usage"));
    assert!(error(&["--check", "x"]).contains("unknown"));
}

#[test]
fn the_major_comes_from_the_header_define() {
    assert_eq!(abi_major("/* x */\n#define RUN_LANE_ABI_VERSION 7\n#define X 1\n"), Ok(7));
    let error = |header| abi_major(header).unwrap_err();
    assert!(error("#define X 1\n").contains("no `#define"));
    assert!(error("#define RUN_LANE_ABI_VERSION two\n").contains("not a version"));
    // The committed header has one, so the install tree always has a major.
    let header = fs::read_to_string(project_root().join(HEADER)).unwrap();
    assert!(abi_major(&header).is_ok());
}

#[test]
fn cargo_messages_give_the_artifacts_and_the_native_libraries() {
    let lines = [
        r#"{"reason":"compiler-message","message":{"level":"note","message":"native-static-libs: -ldl -lgcc_s -lc","rendered":"note: ..."}}"#,
        r#"{"reason":"compiler-artifact","filenames":["/t/release/librun_lane.so","/t/release/librun_lane.a"]}"#,
        r#"{"reason":"build-finished","success":true}"#,
    ];
    let messages: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(artifact(&messages, STATICLIB), Ok(PathBuf::from("/t/release/librun_lane.a")));
    assert!(artifact(&messages, FAKE_CDYLIB).is_err());
    assert_eq!(
        native_static_libs(&messages),
        Some(["-ldl", "-lgcc_s", "-lc"].map(str::to_owned).to_vec())
    );
    assert_eq!(native_static_libs(&messages[1..]), None);
}

#[test]
fn readelf_output_gives_the_soname_and_the_needed_libraries() {
    let readelf = "\
Dynamic section at offset 0x1 contains 3 entries:
  Tag        Type                         Name/Value
 0x0000000000000001 (NEEDED)             Shared library: [librun_lane.so.2]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
 0x000000000000000e (SONAME)             Library soname: [librun_lane.so.2]
 0x000000000000001d (RUNPATH)            Library runpath: [/opt/lane/lib]
";
    assert_eq!(
        parse_dynamic(readelf),
        Dynamic {
            soname: Some("librun_lane.so.2".to_owned()),
            needed: vec!["librun_lane.so.2".to_owned(), "libc.so.6".to_owned()],
        }
    );
    assert_eq!(parse_dynamic(""), Dynamic::default());
}

#[test]
fn readelf_output_gives_the_section_names_and_the_debuglink() {
    let sections = "\
File: librun_lane.a(a.o)
There are 4 section headers, starting at offset 0x1:

Section Headers:
  [Nr] Name              Type            Address          Off    Size   ES Flg Lk Inf Al
  [ 0]                   NULL            0000000000000000 000000 000000 00      0   0  0
  [ 1] .text             PROGBITS        0000000000000000 000040 000010 00  AX  0   0 16
  [ 2] .debug_info       PROGBITS        0000000000000000 000050 000020 00   C  0   0  1
Key to Flags:
  W (write), A (alloc), X (execute), M (merge), S (strings), I (info),
";
    let names = parse_section_names(sections);
    assert_eq!(names, ["NULL", ".text", ".debug_info"]);
    assert!(parse_section_names("").is_empty());

    let dump = "\nString dump of section '.gnu_debuglink':\n  [     0]  librun_lane.so.3.debug\n  [    18]  Z!x\n\n";
    assert_eq!(first_string(dump), Some("librun_lane.so.3.debug".to_owned()));
    assert_eq!(first_string("readelf: Warning: no section\n"), None);
}

#[test]
fn both_copies_of_the_static_library_lose_the_bitcode_and_only_one_its_debug_sections() {
    let removed = [".llvmbc", ".llvmcmd"].map(|s| format!("--remove-section={s}"));
    let installed = static_objcopy_flags(false);
    let debug = static_objcopy_flags(true);
    for flags in [&installed, &debug] {
        for remove in &removed {
            assert!(flags.contains(remove), "{flags:?}");
        }
    }
    assert!(installed.contains(&"--strip-debug".to_owned()));
    assert!(!debug.iter().any(|flag| flag.starts_with("--strip")));
    assert!(debug.contains(&"--compress-debug-sections=zlib".to_owned()));

    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(bitcode_section(&names(&[".text", ".llvmcmd"])), Some(".llvmcmd"));
    assert_eq!(bitcode_section(&names(&[".llvmbc", ".text"])), Some(".llvmbc"));
    assert_eq!(bitcode_section(&names(&[".text", ".debug_info"])), None);
}

#[test]
fn a_static_library_above_20_mib_fails_the_check_naming_its_size_and_the_bound() {
    assert_eq!(MAX_STATICLIB_BYTES, 20 * 1024 * 1024);
    assert!(check_static_size(0).is_ok());
    assert!(check_static_size(12_135_054).is_ok());
    assert!(check_static_size(MAX_STATICLIB_BYTES).is_ok());
    let error = check_static_size(MAX_STATICLIB_BYTES + 1).unwrap_err();
    assert_contains(&error, &["20971521 bytes", "bound of 20971520 bytes (20 MiB)"]);
    // The size before bitcode was removed.
    let error = check_static_size(51_823_094).unwrap_err();
    assert!(error.contains("49.4 MiB"), "{error}");
}

#[test]
fn the_debug_files_lie_in_libs_debug_folder() {
    let lib = Path::new("/opt/lane/lib");
    assert_eq!(
        debug_file(lib, &soname(3)),
        Path::new("/opt/lane/lib/.debug/librun_lane.so.3.debug")
    );
    assert_eq!(debug_file(lib, STATICLIB), Path::new("/opt/lane/lib/.debug/librun_lane.a"));
}

#[test]
fn the_pc_file_carries_the_major_and_rustcs_libraries() {
    let pc = pkg_config_file("/opt/lane", 3, &flags());
    assert!(pc.contains("prefix=/opt/lane\n"), "{pc}");
    assert!(pc.contains("\nVersion: 3\n"), "{pc}");
    assert!(pc.contains("\nLibs: -L${libdir} -lrun_lane\n"), "{pc}");
    assert!(pc.contains("\nLibs.private: -ldl -lgcc_s -lpthread -lc\n"));
    assert!(pc.contains("\nCflags: -I${includedir}\n"), "{pc}");
}

#[test]
fn the_cmake_config_names_both_targets_and_the_soname() {
    let config = cmake_config_file(3, &flags());
    assert!(config.contains("add_library(RunLane::run_lane SHARED IMPORTED)"));
    assert!(config.contains("add_library(RunLane::run_lane_static STATIC IMPORTED)"));
    assert!(config.contains("/lib/librun_lane.so.3\""), "{config}");
    assert!(config.contains("IMPORTED_SONAME \"librun_lane.so.3\""));
    assert!(config.contains("/lib/librun_lane.a\""));
    assert!(config.contains("INTERFACE_LINK_LIBRARIES \"dl;gcc_s;pthread;c\""));
    assert!(config.contains("set(RunLane_ABI_VERSION 3)"));
    assert_eq!(cmake_link_items(&["-lm".to_owned(), "-Wl,-x".to_owned()]), "m;-Wl,-x");
}

#[test]
fn the_cmake_version_is_the_major_with_same_major_compatibility() {
    let version = cmake_version_file(3, 8);
    assert!(version.contains("set(PACKAGE_VERSION \"3\")"));
    assert!(version.contains("PACKAGE_FIND_VERSION_MAJOR STREQUAL \"3\""));
    assert!(version.contains("CMAKE_SIZEOF_VOID_P STREQUAL \"8\""));
    assert!(version.contains("(64bit)"));
}

#[test]
fn a_prefix_the_files_cannot_carry_is_refused() {
    assert_eq!(plain_prefix(Path::new("/opt/run-lane")), Ok("/opt/run-lane"));
    for bad in ["/opt/run lane", "/opt/a;b", "/opt/$x", "/opt/\"q"] {
        let error = plain_prefix(Path::new(bad)).unwrap_err();
        assert!(error.contains("cannot carry"), "{bad}: {error}");
    }
}

#[test]
fn the_example_and_the_guide_ask_for_the_current_abi_major() {
    // The consumers pin the major they were written for; after an ABI bump they must be
    // reviewed and the number raised with them.
    let root = project_root();
    let major = abi_major(&fs::read_to_string(root.join(HEADER)).unwrap()).unwrap();
    let want = format!("find_package(RunLane {major} REQUIRED)");
    for file in [format!("{EXAMPLES}/CMakeLists.txt"), "docs/embedding.md".to_owned()] {
        let text = fs::read_to_string(root.join(&file)).unwrap();
        let asks: Vec<&str> = text
            .match_indices("find_package(RunLane ")
            .map(|(at, _)| text[at..].split(')').next().unwrap_or_default())
            .collect();
        assert!(!asks.is_empty(), "{file} has no find_package(RunLane N ...)");
        for ask in asks {
            assert!(
                want.starts_with(ask),
                "{file} asks `{ask})`; the ABI major is {major}: review it and write `{want}`"
            );
        }
    }
}
