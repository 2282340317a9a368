//! `lane-sim`: the run lane on a simulated Ascend device (`lane-sim --help`).
fn main() -> std::process::ExitCode {
    backend_sim::cli::main()
}
