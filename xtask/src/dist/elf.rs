//! What readelf says of a built or installed binary: its dynamic section and its section names.

use std::path::Path;
use std::process::Command;

use super::BITCODE_SECTIONS;
use super::install::binutils;

/// What `readelf -d` says about a binary's dynamic section.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Dynamic {
    pub(super) soname: Option<String>,
    pub(super) needed: Vec<String>,
}

/// Parses `readelf -d` output: the bracketed names of its SONAME and NEEDED entries.
pub(super) fn parse_dynamic(readelf: &str) -> Dynamic {
    let mut dynamic = Dynamic::default();
    for line in readelf.lines() {
        let name = line
            .split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(name, _)| name.to_owned());
        if let Some(name) = name {
            if line.contains("(SONAME)") {
                dynamic.soname = Some(name);
            } else if line.contains("(NEEDED)") {
                dynamic.needed.push(name);
            }
        }
    }
    dynamic
}

/// `readelf -d BINARY`, parsed.
pub(super) fn dynamic_section(binary: &Path) -> Result<Dynamic, String> {
    let output =
        Command::new("readelf").arg("-d").arg(binary).output().map_err(|e| {
            format!("could not run `readelf -d` (binutils, installed with gcc): {e}")
        })?;
    if !output.status.success() {
        return Err(format!(
            "`readelf -d {}` failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(parse_dynamic(&String::from_utf8_lossy(&output.stdout)))
}

/// The section names of `readelf -S -W` output (of every member, for an archive).
pub(super) fn parse_section_names(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('['))
        .filter_map(|rest| rest.split_once(']'))
        .filter(|(index, _)| index.trim().parse::<u32>().is_ok())
        .filter_map(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The first of [`BITCODE_SECTIONS`] among `sections`, if any.
pub(super) fn bitcode_section(sections: &[String]) -> Option<&'static str> {
    BITCODE_SECTIONS.into_iter().find(|bitcode| sections.iter().any(|s| s == bitcode))
}

/// `readelf -S -W FILE`'s section names.
pub(super) fn section_names(file: &Path) -> Result<Vec<String>, String> {
    let output = binutils(Command::new("readelf").args(["-S", "-W"]).arg(file))?;
    Ok(parse_section_names(&String::from_utf8_lossy(&output.stdout)))
}

/// The string at offset 0 of `readelf -p SECTION` output: for `.gnu_debuglink`, the debug
/// file's name (the CRC follows it, after its NUL).
pub(super) fn first_string(readelf: &str) -> Option<String> {
    readelf
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix('['))
        .filter_map(|rest| rest.split_once(']'))
        .find(|(offset, _)| offset.trim() == "0")
        .map(|(_, name)| name.trim().to_owned())
}
