//! `fake-bench`: three arms on the fake libascendcl in real time: depth one, queued depth
//! two, and queued with copies on the streams and runner work on host workers.
//!
//! ```text
//! fake-bench [--runs N] [--device-us A,B,..] [--write FILE]
//! ```
//!
//! Prints the markdown section (or, with `--write`, puts it into FILE between its markers,
//! replacing the previous one, and leaves the rest of the file alone).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use lane_conformance::bench::{self, BenchConfig};

/// Where the section starts and ends in docs/performance.md.
const BEGIN: &str = "<!-- fake-bench: begin (written by `cargo xtask fake-bench`) -->";
const END: &str = "<!-- fake-bench: end -->";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fake-bench: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut config = BenchConfig::default();
    let mut write = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} takes a value; see the usage in the source doc"))
        };
        match arg.as_str() {
            "--runs" => {
                config.runs = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n > config.skip + 1)
                    .ok_or_else(|| format!("--runs takes a count above {}", config.skip + 1))?;
            }
            "--device-us" => {
                config.device_ns = value()?
                    .split(',')
                    .map(|us| us.trim().parse::<u64>().ok().filter(|us| *us > 0))
                    .map(|us| us.map(|us| us * 1_000))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("--device-us takes positive microseconds, e.g. 100,250,1000")?;
            }
            "--write" => write = Some(value()?.clone()),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --runs N, --device-us A,B or --write FILE"
                ));
            }
        }
    }
    let load_before = load_average();
    let arms = bench::run(&config).map_err(|e| e.to_string())?;
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let machine = format!(
        "{cpus} logical CPUs, load average {load_before} before, {} after",
        load_average()
    );
    let section = bench::markdown(&config, &arms, &machine);
    match write {
        None => print!("{section}"),
        Some(path) => {
            let old =
                std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
            let new = splice(&old, &section);
            std::fs::write(&path, new).map_err(|e| format!("cannot write {path}: {e}"))?;
            println!("wrote the fake-bench section of {path}");
        }
    }
    Ok(())
}

/// `old` with the section between the markers replaced by `section` (appended, with its
/// markers, when there is none yet). Text after the block stays one blank line below it, as
/// `cargo xtask bench` writes the file, so the two writers never disagree about the file.
fn splice(old: &str, section: &str) -> String {
    let block = format!("{BEGIN}\n\n{section}\n{END}\n");
    match (old.find(BEGIN), old.find(END)) {
        (Some(start), Some(end)) if end > start => {
            let rest = old[end + END.len()..].trim_start_matches('\n');
            let gap = if rest.is_empty() { "" } else { "\n" };
            format!("{}{block}{gap}{rest}", &old[..start])
        }
        _ => format!("{}\n\n{block}", old.trim_end()),
    }
}

/// The 1-minute load average, or `?` where /proc/loadavg is not readable.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_appended_once_then_replaced_in_place() {
        let once = splice("# Performance\n\nbody\n", "first\n");
        assert!(once.starts_with("# Performance\n\nbody\n\n"));
        assert!(once.contains("first"));
        let twice = splice(&format!("{once}\n## Later\n"), "second\n");
        assert!(!twice.contains("first") && twice.contains("second"));
        assert!(twice.contains("## Later"), "text after the block stays");
        assert_eq!(twice.matches(BEGIN).count(), 1);
    }

    #[test]
    fn text_after_the_section_stays_one_blank_line_below_it() {
        let doc = format!("# P\n\n{BEGIN}\n\nold\n{END}\n\n<!-- next -->\n");
        let spliced = splice(&doc, "new\n");
        assert!(
            spliced.contains(&format!("{END}\n\n<!-- next -->\n")),
            "{spliced}"
        );
        assert_eq!(
            splice(&spliced, "new\n"),
            spliced,
            "splicing the same section changes nothing"
        );
    }
}
