//! Exhaustive exploration: every ordering of commands and backend answers, not a sample,
//! for small configurations of the lane ([`lane`]) and of the stream pair alone ([`pair`]).
//!
//! # How
//!
//! A hand-written breadth-first search with state deduplication ([`explore`]). Each state
//! is a fuzz body (the same driver-and-backend the fuzz targets run, with every check they
//! make after every step), each transition one action, and each reached state is identified
//! by a canonical text ([`lane_core::Lane::fingerprint`] plus the body's records) kept as a
//! 128-bit hash.
//!
//! Why not `stateright`: its checker would wrap the same bodies and the same fingerprint, so
//! what it adds is its search and its web explorer. The search we need is forty lines (a
//! queue, a visited set, a parent link per state), it gives the shortest trace by
//! construction (breadth first), the states it must hash are ours to make canonical either
//! way, and it keeps lane-fuzz free of a dependency tree (stateright pulls in a web server
//! and a thread pool) that `cargo fuzz` and `cargo test` would both build. The search is
//! single-threaded: the test machines have two cores, shared.
//!
//! # Properties
//!
//! The body's checks after every step (see [`crate::lane_sequences`]), then, in every
//! reached state, the model's [`Model::check`]. A violation comes back as the shortest
//! action sequence that reaches it ([`Violation`]), printed as Rust code a test can paste
//! and replay.

pub mod dispatch;
pub mod lane;
pub mod pair;

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};

/// A system to explore: a state with its actions.
pub trait Model: Clone {
    /// One transition.
    type Action: Copy + fmt::Debug;

    /// The actions offered in this state (all of them; the bounds of the configuration
    /// live in the model).
    fn actions(&self) -> Vec<Self::Action>;

    /// Applies `action`; `Err` names a broken property.
    fn step(&mut self, action: Self::Action) -> Result<(), String>;

    /// The canonical text of this state: equal texts behave alike from here on.
    fn key(&self) -> String;

    /// The properties of a reached state (deadlock, liveness); `Err` names the broken one.
    fn check(&self) -> Result<(), String>;

    /// `action` as Rust code (for a replayable trace).
    fn rust(action: Self::Action) -> String;
}

/// What an exploration covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Distinct states reached.
    pub states: usize,
    /// Actions applied (transitions, including those back to a known state).
    pub transitions: usize,
    /// The longest shortest path: the deepest breadth-first layer.
    pub depth: usize,
}

/// A broken property and the shortest action sequence that reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation<A> {
    /// The actions from the initial state, in order; the last one broke the property (or
    /// reached the state that breaks it).
    pub trace: Vec<A>,
    /// What broke.
    pub message: String,
}

/// Why an exploration ended without covering everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure<A> {
    /// A property broke.
    Violation(Violation<A>),
    /// More distinct states than the limit: the bounds are too big for this run.
    TooManyStates {
        /// The limit.
        limit: usize,
    },
}

impl<A> Failure<A> {
    /// The violation, if this is one.
    pub fn violation(&self) -> Option<&Violation<A>> {
        match self {
            Self::Violation(v) => Some(v),
            Self::TooManyStates { .. } => None,
        }
    }
}

/// A 128-bit hash of a state's canonical text: two SipHash passes under different prefixes.
/// At a million states a collision (which would drop a state unexplored) has odds near
/// 10^-27.
fn digest(text: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        text.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

/// Breadth-first search from `initial` over every action of every reached state, visiting
/// each distinct state once (`visit` sees each). Stops at the first violation, with the
/// shortest trace to it, or after `limit` distinct states.
pub fn explore<M: Model>(
    initial: M,
    limit: usize,
    mut visit: impl FnMut(&M),
) -> Result<Stats, Failure<M::Action>> {
    // Per state: its parent and the action from there (the root has none).
    let mut parents: Vec<Option<(u32, M::Action)>> = vec![None];
    let mut seen: HashSet<u128> = HashSet::new();
    let mut queue: VecDeque<(M, u32, usize)> = VecDeque::new();
    let mut stats = Stats::default();
    let trace = |parents: &[Option<(u32, M::Action)>], mut at: u32| {
        let mut actions = Vec::new();
        while let Some(Some((parent, action))) = parents.get(at as usize) {
            actions.push(*action);
            at = *parent;
        }
        actions.reverse();
        actions
    };
    let fail =
        |trace: Vec<M::Action>, message: String| Failure::Violation(Violation { trace, message });

    initial.check().map_err(|m| fail(Vec::new(), m))?;
    seen.insert(digest(&initial.key()));
    visit(&initial);
    queue.push_back((initial, 0, 0));
    while let Some((state, id, depth)) = queue.pop_front() {
        stats.depth = stats.depth.max(depth);
        for action in state.actions() {
            stats.transitions += 1;
            let mut next = state.clone();
            if let Err(message) = next.step(action) {
                let mut actions = trace(&parents, id);
                actions.push(action);
                return Err(fail(actions, message));
            }
            if !seen.insert(digest(&next.key())) {
                continue;
            }
            if seen.len() > limit {
                return Err(Failure::TooManyStates { limit });
            }
            let next_id = u32::try_from(parents.len())
                .map_err(|_| Failure::TooManyStates { limit: u32::MAX as usize })?;
            parents.push(Some((id, action)));
            if let Err(message) = next.check() {
                return Err(fail(trace(&parents, next_id), message));
            }
            visit(&next);
            queue.push_back((next, next_id, depth + 1));
        }
    }
    stats.states = seen.len();
    Ok(stats)
}

/// A violation as a report: the message, then the trace as Rust code (one action a line)
/// between `open` and `close` (the caller's replay call).
pub fn render<M: Model>(violation: &Violation<M::Action>, open: &str, close: &str) -> String {
    let mut out = format!(
        "{}\nshortest trace ({} actions), replay with:\n{open}\n",
        violation.message,
        violation.trace.len()
    );
    for action in &violation.trace {
        out.push_str("    ");
        out.push_str(&M::rust(*action));
        out.push_str(",\n");
    }
    out.push_str(close);
    out
}
