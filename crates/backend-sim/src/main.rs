//! `lane-sim`: the simulator demo.
fn main() {}
