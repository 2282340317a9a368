//! `lane-sim`: the run lane on a simulated Ascend device (`lane-sim --help`).

#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    backend_sim::cli::main()
}
