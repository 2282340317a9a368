//! The stream pair explored alone, with deeper bounds than inside the lane: every
//! operation of `stream_pair_orderings` in every order, compared after each with the
//! reference model and `check_invariants`.
//!
//! Handles, owners, publications and abandons are bounded by the [`PairConfig`]; within
//! them every action is offered in every state: `ready`, a fresh submission and a duplicate
//! one, withdrawals and retirements (`Complete` and `Unproven`) of every queued owner and of
//! a former one, a publication, right and wrong create and destroy results for each stream
//! (a fresh handle, the other stream's, an earlier one), failures, the close teardown and an
//! abandon.

use stream_pair::Role;

use super::{Failure, Model, Stats, explore, render};
use crate::stream_pair_orderings::{Body, How, Op, Pick, Side, Who};

/// The bounds of one exploration of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairConfig {
    /// The launch depth (`1..=MAX_DEPTH`).
    pub depth: u8,
    /// Most fresh owners submitted.
    pub owners: u8,
    /// Most publications (`mark_stale`).
    pub publications: u8,
    /// Most stream handles handed out, and most `Created` results fed (a teardown followed
    /// by `ready` creates again, so creations need a bound of their own).
    pub handles: u8,
    /// Most abandons (device resets).
    pub abandons: u8,
}

impl PairConfig {
    /// The configuration `cargo test` explores at `depth`.
    #[must_use]
    pub const fn test(depth: u8) -> Self {
        Self { depth, owners: 2, publications: 1, handles: 3, abandons: 1 }
    }
}

impl PairConfig {
    /// The default of `cargo xtask explore` at `depth`: more owners and creates than the
    /// test bounds.
    #[must_use]
    pub const fn deep(depth: u8) -> Self {
        Self { depth, owners: 3, publications: 1, handles: 4, abandons: 1 }
    }
}

/// The pair with its reference model, within a configuration's bounds.
#[derive(Clone)]
pub struct PairModel {
    body: Body,
    config: PairConfig,
    publications: u8,
    abandons: u8,
    creates: u8,
}

impl PairModel {
    /// A cold pair for `config`.
    #[must_use]
    pub fn new(config: PairConfig) -> Self {
        // `Body::new` takes the depth as `1 + depth % MAX_DEPTH`.
        Self {
            body: Body::new(config.depth.saturating_sub(1)),
            config,
            publications: 0,
            abandons: 0,
            creates: 0,
        }
    }
}

impl Model for PairModel {
    type Action = Op;

    fn actions(&self) -> Vec<Op> {
        let config = self.config;
        // `Who::Queued` and `Who::Former` hand out a fresh owner when there is none to
        // pick, so they are offered only when there is one: the fresh owners stay bounded.
        let mut ops = vec![Op::Ready, Op::DestroyAll];
        if self.body.fresh_owners() < u64::from(config.owners) {
            ops.push(Op::Submit(Who::Fresh));
        }
        if self.body.queued() > 0 {
            ops.push(Op::Submit(Who::Queued(0)));
        }
        for at in 0..self.body.queued() {
            let at = u8::try_from(at).unwrap_or(u8::MAX);
            ops.push(Op::Withdraw(Who::Queued(at)));
            ops.push(Op::Retire(Who::Queued(at), How::Complete));
            ops.push(Op::Retire(Who::Queued(at), How::Unproven));
        }
        if self.body.former_owners() > 0 {
            ops.push(Op::Withdraw(Who::Former(0)));
            ops.push(Op::Retire(Who::Former(0), How::Complete));
        }
        if self.publications < config.publications {
            ops.push(Op::Publish);
        }
        if self.abandons < config.abandons {
            ops.push(Op::Abandon);
        }
        let room = self.body.handles_handed_out() < usize::from(config.handles);
        let some = self.body.handles_handed_out() > 0;
        for side in [Side::Aicpu, Side::Aicore] {
            let role = match side {
                Side::Aicpu => Role::Aicpu,
                Side::Aicore => Role::Aicore,
            };
            // Picks that may hand out a fresh handle are offered while there is room.
            if self.creates < config.handles {
                ops.push(Op::Created { role: side, handle: Pick::Right });
                ops.push(Op::Created { role: side, handle: Pick::Other });
                if some {
                    ops.push(Op::Created { role: side, handle: Pick::Earlier(0) });
                }
            }
            ops.push(Op::CreateFailed { role: side, code: -1 });
            if room || self.body.holds(role) {
                ops.push(Op::Destroyed { role: side, handle: Pick::Right });
                ops.push(Op::DestroyFailed { role: side, handle: Pick::Right, code: -2 });
            }
            if room {
                ops.push(Op::Destroyed { role: side, handle: Pick::Other });
            }
        }
        ops
    }

    fn step(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Publish => self.publications += 1,
            Op::Abandon => self.abandons += 1,
            Op::Created { .. } => self.creates += 1,
            _ => {}
        }
        self.body
            .op(op)
            .and_then(|()| self.body.compare())
            .map_err(|m| format!("{op:?}: {m}\n{}", self.body.describe()))
    }

    fn key(&self) -> String {
        format!("{}|{}|{}|{}", self.body.key_text(), self.publications, self.abandons, self.creates)
    }

    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    fn rust(op: Op) -> String {
        let who = |w: Who| match w {
            Who::Fresh => "Who::Fresh".to_owned(),
            other => format!("Who::{other:?}"),
        };
        match op {
            Op::Submit(w) => format!("Op::Submit({})", who(w)),
            Op::Withdraw(w) => format!("Op::Withdraw({})", who(w)),
            Op::Retire(w, how) => format!("Op::Retire({}, How::{how:?})", who(w)),
            Op::Created { role, handle } => {
                format!("Op::Created {{ role: Side::{role:?}, handle: Pick::{handle:?} }}")
            }
            Op::CreateFailed { role, code } => {
                format!("Op::CreateFailed {{ role: Side::{role:?}, code: {code} }}")
            }
            Op::Destroyed { role, handle } => {
                format!("Op::Destroyed {{ role: Side::{role:?}, handle: Pick::{handle:?} }}")
            }
            Op::DestroyFailed { role, handle, code } => format!(
                "Op::DestroyFailed {{ role: Side::{role:?}, handle: Pick::{handle:?}, code: {code} }}"
            ),
            other => format!("Op::{other:?}"),
        }
    }
}

/// Explores `config` exhaustively (at most `limit` distinct states). A violation comes back
/// rendered: the message and the shortest trace as Rust code (the operations of
/// `stream_pair_orderings`, replayed by its `run` with `depth: config.depth - 1`).
pub fn run(config: PairConfig, limit: usize) -> Result<Stats, String> {
    explore(PairModel::new(config), limit, |_| {}).map_err(|failure| match failure {
        Failure::Violation(v) => render::<PairModel>(
            &v,
            &format!(
                "lane_fuzz::stream_pair_orderings::run(&Input {{ depth: {}, ops: vec![",
                config.depth.saturating_sub(1)
            ),
            "] })",
        ),
        Failure::TooManyStates { limit } => {
            format!("{config:?}: more than {limit} states; lower the bounds")
        }
    })
}
