//! `cargo xtask device-check [--lib PATH] [--device N] [--overrun-mib N]`: backend-acl's device
//! check, printed. `--overrun-mib` sizes the copies the event-wait overrun step queues.

use std::path::PathBuf;

use backend_acl::Library;
use backend_acl::check::{self, CheckOptions};

/// Parses the arguments, runs the check and prints its report. A machine without CANN or
/// without a device gets one line (the error), and every failure exits non-zero.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let options = parse(args)?;
    let report = check::run(&options);
    if let Some(reason) = &report.unavailable {
        return Err(format!("device-check: {reason}"));
    }
    print!("{report}");
    if report.passed() {
        Ok(())
    } else {
        Err("device-check: a check failed (see FAIL above)".to_owned())
    }
}

fn parse(args: &[&str]) -> Result<CheckOptions, String> {
    let mut options = CheckOptions::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--lib" => {
                let path = rest.next().ok_or("--lib needs a path")?;
                options.library = Library::Path(PathBuf::from(path));
            }
            "--overrun-mib" => {
                let mib = rest.next().ok_or("--overrun-mib needs a size in MiB")?;
                let mib: usize = mib.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                    format!("--overrun-mib takes a size in MiB (256, ...), not `{mib}`")
                })?;
                options.overrun_copy_bytes = mib << 20;
            }
            "--device" => {
                let id = rest.next().ok_or("--device needs an id")?;
                options.device_id = id
                    .parse()
                    .map_err(|_| format!("--device takes a device id (0, 1, ...), not `{id}`"))?;
            }
            other => {
                return Err(format!(
                    "device-check: unknown argument `{other}`; usage: device-check [--lib PATH] [--device N] [--overrun-mib N]"
                ));
            }
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_the_library_and_the_device() {
        let options = parse(&["--lib", "/x/libascendcl.so", "--device", "3"]).unwrap();
        assert_eq!(
            options.library,
            Library::Path(PathBuf::from("/x/libascendcl.so"))
        );
        assert_eq!(options.device_id, 3);
        assert_eq!(parse(&[]).unwrap(), CheckOptions::default());
    }

    #[test]
    fn bad_arguments_are_refused_with_the_usage() {
        assert!(parse(&["--device", "x"]).unwrap_err().contains("device id"));
        assert!(parse(&["--lib"]).unwrap_err().contains("needs a path"));
        assert!(parse(&["--fast"]).unwrap_err().contains("usage"));
    }
}
