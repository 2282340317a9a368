//! The fuzz bodies: operation sequences driven into the pure machines and checked after
//! every step, shared by the cargo-fuzz targets in `fuzz/` and by `cargo test`.
//!
//! # What it owns
//!
//! One module per fuzz target. Each exposes a derived-[`Arbitrary`]
//! `Input`, `run(&Input) -> Result<Reached, Finding>` (the body) and `run_bytes(&[u8])`
//! (builds the input with [`arbitrary::Unstructured`] exactly as libFuzzer's typed
//! `fuzz_target!` does, then runs the body). The fuzz targets, the replay test that feeds every
//! committed seed and regression, the seeded smoke run and the named regression tests all call
//! these same functions, so nothing is duplicated.
//!
//! - [`stream_pair_orderings`]: submissions, withdrawals, retirements, publications, stream
//!   results and teardowns on a [`stream_pair::StreamPair`], compared after every step with
//!   a small reference model and `check_invariants()`.
//! - [`lane_sequences`]: commands and backend events, legal or not, on a [`lane_core::Lane`],
//!   with the lane's invariants after every step and exactly one outcome per accepted item,
//!   in submission order, once the backend answers everything.
//! - [`status_header_decode`]: arbitrary bytes and layouts through
//!   [`status_latch::decode`], `encode`, `classify` and `failure_line`.
//! - [`result_record_decode`]: arbitrary result-record bytes and epochs through
//!   [`status_latch::decode_record`], and [`status_latch::judge`] over evidence around them.
//! - [`dispatch_orders`]: the dispatch machine in long orders of the world around it (the
//!   explorer's model of it), checked after every step.
//! - [`sim_swarm`]: a seed and option bytes into the simulator (backend-sim): a workload
//!   and a fault mix derived from the seed, with the lane's and the device's invariants
//!   after every step, then healing and draining.
//!
//! And [`explore`], not a fuzz target: the exhaustive explorer, which drives the same
//! `lane_sequences` and `stream_pair_orderings` bodies through every ordering within small
//! bounds instead of a sample.
//!
//! # Invariant
//!
//! A body never panics on its own account: any input decodes to a meaningful sequence
//! (indices are relative to what is live), and a broken property comes back as a
//! [`Finding`] naming the step and what broke. A panic while running a body is a panic in
//! the crate under test.
//!
//! # API boundary
//!
//! The pure crates stay free of `arbitrary`: every `Arbitrary` type lives here and maps onto
//! their public API. This dedicated crate is the issue's "fuzzing module behind a cfg or
//! feature" (see docs/fuzzing.md).
#![forbid(unsafe_code)]

use core::fmt;

use arbitrary::{Arbitrary, Unstructured};

/// Declares a target's behaviours: a private enum whose variants index a [`Reached`] set,
/// and the public list of their names, in the same order.
macro_rules! behaviours {
    ($(#[$doc:meta])* $names:ident; $($variant:ident => $name:literal,)+) => {
        /// What an input reached: one bit per behaviour in the target's name list.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        enum B {
            $($variant,)+
        }

        $(#[$doc])*
        pub const $names: &[&str] = &[$($name,)+];

        impl B {
            const fn bit(self) -> u32 {
                self as u32
            }
        }
    };
}

pub mod dispatch_orders;
pub mod explore;
pub mod lane_sequences;
pub mod result_record_decode;
pub mod sim_swarm;
pub mod status_header_decode;
pub mod stream_pair_orderings;

/// A broken property: the target, the operation it broke at, and what broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The target whose check failed.
    pub target: &'static str,
    /// The index of the operation after which the check failed; `None` for the checks run
    /// after the last operation (the final drain, the outcome count).
    pub step: Option<usize>,
    /// What broke, with the state and the operation, for a reader.
    pub message: String,
}

impl Finding {
    pub(crate) fn new(target: &'static str, step: Option<usize>, message: String) -> Self {
        Self { target, step, message }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(step) => write!(f, "{}: at operation {step}: {}", self.target, self.message),
            None => write!(f, "{}: after the last operation: {}", self.target, self.message),
        }
    }
}

impl std::error::Error for Finding {}

/// The behaviours an input reached, one bit each (names in the target's `BEHAVIOURS`). Used
/// to pick seeds that cover the machine and to prove the smoke run is not degenerate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached(u64);

impl Reached {
    fn insert(&mut self, bit: u32) {
        self.0 |= 1 << bit;
    }

    /// Whether the behaviour at index `bit` was reached.
    #[must_use]
    pub const fn contains(self, bit: usize) -> bool {
        bit < 64 && self.0 & (1 << bit) != 0
    }

    /// Both sets together.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// How many behaviours were reached.
    #[must_use]
    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// The names (from `names`, a target's `BEHAVIOURS`) of the behaviours not reached.
    #[must_use]
    pub fn missing(self, names: &[&'static str]) -> Vec<&'static str> {
        names
            .iter()
            .enumerate()
            .filter(|(bit, _)| !self.contains(*bit))
            .map(|(_, name)| *name)
            .collect()
    }
}

/// One fuzz target: its name (the cargo-fuzz target, and the directory under `fuzz/seeds/`
/// and `fuzz/regressions/`), its body over raw bytes, and its behaviour names.
#[derive(Clone, Copy)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Builds the target's input from raw bytes and runs the body.
    pub run_bytes: fn(&[u8]) -> Result<Reached, Finding>,
    /// The names of the bits of the [`Reached`] the body returns.
    pub behaviours: &'static [&'static str],
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target").field("name", &self.name).finish()
    }
}

/// A target module's entry: its `NAME`, `run_bytes` and `BEHAVIOURS`.
macro_rules! target {
    ($module:ident) => {
        Target {
            name: $module::NAME,
            run_bytes: $module::run_bytes,
            behaviours: $module::BEHAVIOURS,
        }
    };
}

/// Every target, in the order `cargo xtask fuzz-all` runs them.
pub const TARGETS: &[Target] = &[
    target!(stream_pair_orderings),
    target!(lane_sequences),
    target!(status_header_decode),
    target!(result_record_decode),
    target!(dispatch_orders),
    target!(sim_swarm),
];

/// The target with this name.
#[must_use]
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Builds `T` from the whole of `data` the way libFuzzer's typed `fuzz_target!` does, so a
/// crash file replays here exactly as it crashed there. `None` when the bytes cannot build
/// one (libFuzzer skips such inputs too).
fn decode<T: for<'a> Arbitrary<'a>>(data: &[u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// Every remaining byte as a sequence of `T`: the one way each target's `Input` reads its
/// last field (operations, or raw bytes), through `#[arbitrary(with = crate::dense)]`. The
/// standard `Vec` reads a continuation byte before each element, so random bytes would mean
/// two or three operations; here every byte belongs to an operation. For `T = u8` this is
/// the rest of the bytes as they are.
fn dense<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> arbitrary::Result<Vec<T>> {
    let mut items = Vec::new();
    while !u.is_empty() {
        let before = u.len();
        items.push(T::arbitrary(u)?);
        if u.len() == before {
            break;
        }
    }
    Ok(items)
}

/// `items[pick % len]`, or `None` when empty: relative indices make most inputs meaningful.
fn pick<T: Copy>(items: &[T], pick: u8) -> Option<T> {
    match items.len() {
        0 => None,
        len => items.get(usize::from(pick) % len).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_reads_every_remaining_byte_as_it_is() {
        let data = [7, 0, 255, 1];
        let mut u = Unstructured::new(&data);
        assert_eq!(dense::<u8>(&mut u), Ok(data.to_vec()));
        assert!(u.is_empty(), "bytes left behind");
    }

    #[test]
    fn a_target_input_reads_its_operations_from_every_byte_after_its_head() {
        // Depth byte, then three four-byte operation choices: three operations, where the
        // standard `Vec` would have read continuation bytes and stopped after fewer.
        let data = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let input: stream_pair_orderings::Input = decode(&data).expect("decodes");
        assert_eq!(input.depth, 1);
        assert_eq!(input.ops.len(), 3);
    }
}
