//! The lane explored exhaustively: every command and every legal and illegal backend answer,
//! in every order, for one small [`Config`].
//!
//! # Actions
//!
//! In every state ([`LaneModel::actions`]), within the configuration's bounds:
//!
//! - the commands: `submit`, `publish`, `close`, and with reservations on, `reserve`,
//!   `release` and a submit on the reservation;
//! - for every outstanding effect, in any order: success, and failure with each class of
//!   code (a plain ACL code, whose class the stage decides — run-only for a prepare, poison
//!   for a launch after the AICore kernel — and a device-fault code, poison at any stage),
//!   every launch step, the other answers (an incompatible prepare, a latched run-only and a
//!   latched timeout code, a validation failure, every completion evidence of the verdict
//!   rule: an error, unpublished, malformed or unread record, a device verdict clean, faulted
//!   or not made) and the wrong ones (a create that reports the other stream's handle, a
//!   destroy of a wrong handle);
//! - recovery succeeding or failing at the reset and at the probe;
//! - a completion deadline expiring (the clock jumps to it) and a spurious timeout call;
//! - stale answers (to effects asked before a poison), duplicated answers (the first and the
//!   last accepted event, fed again), and forged ones (a stale lease, an unknown run, a wrong
//!   recovery attempt, an unknown publication).
//!
//! # Properties
//!
//! After every action, the fuzz body's checks ([`crate::lane_sequences`]): the lane's
//! `check_invariants`, one outcome per accepted item in submission order and consistent with
//! what happened, a rejected event changing nothing, commands refused only for a reason the
//! body can see. Here in addition: a poison caused by answering a run's effect (or by its
//! deadline) names that run as its origin. In every reached state ([`LaneModel::check`]):
//! no deadlock (work pending with no effect to answer and no deadline), and liveness
//! (answering success to everything from here gives every item its outcome, and a close
//! answered the same way ends `Closed`).
//!
//! # Coverage
//!
//! Besides the run, publication and lane-state tables ([`Reached`]), every row of the
//! verdict rule (`status_latch::VerdictRule`) the lane's judgement went through, on every
//! transition: the row `judge` gives for each completion the lane accepted (its evidence,
//! judged unfenced when the run's launch was) and for each status read it accepted (that
//! evidence with the header read).

use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;

use lane_core::publication::publication_table;
use lane_core::run::run_phase_table;
use lane_core::state::lane_state_table;
use lane_core::status_latch::{
    Boundary, DeviceVerdict, Evidence, HeaderRead, VerdictChannel, VerdictRule, attribute, judge,
};
use lane_core::{Effect, Event, LaneState, LaunchStep, Profile, RunId};

use super::{Failure, Model, Stats, explore, render};
use crate::lane_sequences::{Body, Forgery, LeasePick, Op, Reply};

/// The chip profile (all have two slots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chip {
    /// [`Profile::a2a3`]: launch depth two.
    A2a3,
    /// [`Profile::depth_one`]: a2a3 at launch depth one (what this chip was while
    /// [`Profile::a5`] ran at depth one; a5 now queues two deep, like a2a3).
    DepthOne,
    /// [`Profile::a2a3`] with a prepare window of two, as with prepares on host workers:
    /// both runs may prepare at once, and their answers (held back like every answer here)
    /// come in any order (L-18).
    A2a3Window2,
    /// [`Profile::a2a3`] for a runtime without records ([`Profile::with_stream_sync`]): every
    /// run's verdict is the device verdict with the header, at launch depth one (L-3, L-8).
    StreamSync,
    /// A custom profile of three slots at launch depth three: a launch may be queued behind
    /// two runs, one of which may still fail before its boundary (L-5). Explored with the
    /// narrow answers (success and each answer that moves a run into a phase of its own): every phase of a run, with three runs in flight,
    /// in a state space `cargo test` affords.
    Depth3,
    /// [`Profile::a2a3`] with the runtime's recovery (L-24): a poison or a notice hands the
    /// device over (`OnPoison`) and the lane waits, `Unusable`, for the runtime's reset.
    RuntimeRecovery,
    /// [`Profile::depth_one`] finalising each run before its successor's launch
    /// (`FinaliseOrder::BeforeNextLaunch`).
    FinaliseFirst,
}

impl Chip {
    /// The profile.
    #[must_use]
    pub fn profile(self) -> Profile {
        match self {
            Self::A2a3 => Profile::a2a3(),
            Self::DepthOne => Profile::depth_one(),
            Self::A2a3Window2 => match Profile::custom(lane_core::ProfileSpec {
                prepare_window: 2,
                ..Profile::a2a3().spec()
            }) {
                Ok(profile) => profile,
                // A window of two fits a2a3's two slots.
                Err(e) => unreachable!("a2a3 with window 2 refused: {e}"),
            },
            Self::StreamSync => Profile::a2a3().with_stream_sync(),
            Self::Depth3 => match Profile::custom(lane_core::ProfileSpec {
                slots: 3,
                launch_depth: 3,
                prepare_window: 3,
                ..Profile::a2a3().spec()
            }) {
                Ok(profile) => profile,
                // Three slots allow a depth and a window of three.
                Err(e) => unreachable!("depth three refused: {e}"),
            },
            Self::RuntimeRecovery => match Profile::custom(lane_core::ProfileSpec {
                recovery: lane_core::Recovery::Runtime,
                ..Profile::a2a3().spec()
            }) {
                Ok(profile) => profile,
                // Who recovers is not validated against anything.
                Err(e) => unreachable!("a2a3 with the runtime's recovery refused: {e}"),
            },
            Self::FinaliseFirst => match Profile::custom(lane_core::ProfileSpec {
                finalise: lane_core::FinaliseOrder::BeforeNextLaunch,
                ..Profile::depth_one().spec()
            }) {
                Ok(profile) => profile,
                // Depth one allows finalising before the next launch.
                Err(e) => unreachable!("depth one finalising first refused: {e}"),
            },
        }
    }
}

/// The bounds of one exploration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The profile.
    pub chip: Chip,
    /// Most runs the lane accepts.
    pub runs: u8,
    /// Most publications the lane accepts.
    pub publications: u8,
    /// Whether `close` is offered.
    pub close: bool,
    /// Whether `reserve`, `release` and a submit on a reservation are offered.
    pub reservations: bool,
    /// Whether one matched device fault notice is offered (L-19), at any point of a path.
    pub notices: bool,
    /// Whether the run controls are offered: a held keyed submit and an earlier-keyed submit
    /// (which passes the held one, L-2), `activate` of each held run, `cancel` of each
    /// pending item.
    pub controls: bool,
}

impl Config {
    /// The configuration `cargo test` explores for `chip`: two runs, one publication, a
    /// close, no reservations (bigger bounds run through `cargo xtask explore`).
    #[must_use]
    pub const fn test(chip: Chip) -> Self {
        Self {
            chip,
            runs: 2,
            publications: 1,
            close: true,
            reservations: false,
            notices: false,
            controls: false,
        }
    }
}

impl Config {
    /// This configuration as Rust code.
    #[must_use]
    pub fn rust(&self) -> String {
        format!(
            "Config {{ chip: Chip::{:?}, runs: {}, publications: {}, close: {}, reservations: {}, notices: {}, controls: {} }}",
            self.chip,
            self.runs,
            self.publications,
            self.close,
            self.reservations,
            self.notices,
            self.controls
        )
    }
}

/// One transition of the lane model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A fuzz operation, exactly as `lane_sequences` applies it.
    Op(Op),
    /// The success answer to the abandoned effect at `index % abandoned` (asked for
    /// before the last poison): a stale answer.
    AnswerAbandoned(u8),
    /// `Op::Answer { effect, reply }`, then the same event fed again: a duplicated answer.
    AnswerTwice {
        /// Index into the outstanding effects, as [`Op::Answer`] takes it.
        effect: u8,
        /// How to answer.
        reply: Reply,
    },
    /// `Lane::retry_teardown` on a closed lane (a driver's last-drop step): one more
    /// destroy round for a stream its teardown left; nothing for a lane that left none.
    RetryTeardown,
}

/// The lane with its driver-and-backend, within a configuration's bounds.
#[derive(Clone)]
pub struct LaneModel {
    body: Body,
    config: Config,
    /// `reserve` calls so far: each mints a generation, so they are bounded by the runs.
    reserves: u8,
    /// The verdict rule's rows any transition of this exploration went through, one bit per
    /// row of [`VerdictRule::ALL`]: shared by every state (not part of a state's key).
    rows: Rc<Cell<u16>>,
}

impl LaneModel {
    /// A fresh lane for `config`.
    #[must_use]
    pub fn new(config: Config) -> Self {
        Self {
            body: Body::with_profile(config.chip.profile()),
            config,
            reserves: 0,
            rows: Rc::new(Cell::new(0)),
        }
    }

    /// Notes the verdict rows the events the lane accepted since `since` (a count of
    /// accepted events) took it through; `sticky` is the pair's sticky mark before them.
    fn note_rows(&self, since: usize, sticky: Option<u64>) -> Result<(), String> {
        let history = self.body.history();
        if self.body.events_accepted() != history.len() {
            return Err(format!(
                "a path of more than {} accepted events: its verdict rows are not tracked; \
                 lower the bounds",
                history.len()
            ));
        }
        let mut bits = self.rows.get();
        for at in since..history.len() {
            if let Some(rule) = rows_of(history, at, sticky) {
                bits |= row_bit(rule);
            }
        }
        self.rows.set(bits);
        Ok(())
    }

    /// The run an action answers for (an answer to its effect, or its deadline expiring):
    /// a poison it causes must name that run.
    fn run_of(&self, action: Action) -> Option<RunId> {
        match action {
            Action::Op(Op::Answer { effect, .. }) | Action::AnswerTwice { effect, .. } => {
                self.body.current_effects().get(usize::from(effect)).and_then(Effect::run)
            }
            Action::Op(Op::Expire) => {
                let deadline = self.body.lane().poll_deadline()?;
                self.body.current_effects().iter().find_map(|e| match *e {
                    Effect::AwaitCompletion { run, deadline: d, .. } if d == deadline => Some(run),
                    _ => None,
                })
            }
            _ => None,
        }
    }

    /// The states of the three tables this state is in, as the tables label them.
    fn table_states(&self, seen: &mut Reached) {
        let lane = self.body.lane();
        seen.lane.insert(LaneState::label(lane.state()));
        for (seq, is_run) in self.body.pending_items() {
            if is_run {
                if let Some(phase) = lane.phase_of(RunId(seq)) {
                    seen.run.insert(phase.label());
                }
            } else if let Some(phase) = lane.publication_phase(lane_core::PublicationId(seq)) {
                seen.publication.insert(phase.label().to_owned());
            }
        }
    }
}

/// The verdict row the lane's judgement goes through on accepting `history[at]`, as the lane
/// judges them: a completion by its evidence alone (unfenced when the run's launch was: an
/// accepted `LaunchFailed` at the fence records), a failed completion wait as a failed
/// boundary, the covered records by the completion's evidence with the code attributed
/// (`sticky`: the pair's mark before the event), a status read by the completion's evidence
/// with the header read (a returned code read as another run's: only an explained code goes
/// on to a status read).
fn rows_of(history: &[Event], at: usize, sticky: Option<u64>) -> Option<VerdictRule> {
    let event = history.get(at)?;
    let before = history.get(..at).unwrap_or_default();
    let judged = |run: RunId, evidence: Evidence| {
        let unfenced = before.iter().rev().find_map(|e| match *e {
            Event::LaunchFailed { run: r, step: LaunchStep::RecordEvent, code, .. } if r == run => {
                Some(code.as_acl())
            }
            _ => None,
        });
        match unfenced {
            Some(code) => Evidence { boundary: Boundary::Unfenced(code), ..evidence },
            None => evidence,
        }
    };
    let completed = |run: RunId| {
        before.iter().rev().find_map(|e| match *e {
            Event::Completed { run: r, evidence, .. } if r == run => Some(evidence),
            _ => None,
        })
    };
    let (evidence, header) = match *event {
        Event::Completed { run, evidence, .. } => (judged(run, evidence), HeaderRead::Unread),
        Event::RecordsRead { run, records, .. } => {
            let mut evidence = judged(run, completed(run)?);
            if let Some(DeviceVerdict::Returned { aicpu, aicore }) = evidence.device {
                let covered: Vec<_> = records.iter().collect();
                evidence.device = Some(attribute(aicpu, aicore, sticky, &covered).1);
            }
            (evidence, HeaderRead::Unread)
        }
        Event::CompletionFailed { code, .. } => (
            Evidence {
                channel: VerdictChannel::Record,
                boundary: Boundary::Failed(code),
                record: lane_core::status_latch::RecordRead::NotRead,
                device: None,
            },
            HeaderRead::Unread,
        ),
        Event::StatusRead { run, status, .. } => {
            let mut evidence = completed(run)?;
            if let Some(DeviceVerdict::Returned { aicpu: Some(code), .. }) = evidence.device {
                evidence.device = Some(DeviceVerdict::LeftBy { code, left_by: 0 });
            }
            let header = status.latched().map_or(HeaderRead::Clean, HeaderRead::Latched);
            (judged(run, evidence), header)
        }
        _ => return None,
    };
    Some(judge(&evidence, header).0)
}

/// `rule`'s bit: its place in [`VerdictRule::ALL`].
fn row_bit(rule: VerdictRule) -> u16 {
    VerdictRule::ALL.iter().position(|r| *r == rule).map_or(0, |at| 1 << at)
}

/// The answers offered to `effect`.
fn replies(effect: &Effect) -> &'static [Reply] {
    // Code index 0 is ACL_ERROR_INVALID_PARAM (its class follows the stage); 7 is
    // ACL_ERROR_RT_DEVICE_TASK_ABORT (a device fault: poison at every stage). As a latch
    // (`Other`), 0 is SCOPE_DEADLOCK (run-only) and 7 is TENSOR_WAIT_TIMEOUT (poison).
    const PLAIN: Reply = Reply::Failure { code: 0, step: 0 };
    const FAULT: Reply = Reply::Failure { code: 7, step: 0 };
    const OTHER: Reply = Reply::Other { code: 0 };
    match effect {
        Effect::PrepareRun { .. }
        | Effect::CreateStream { .. }
        | Effect::DestroyStream { .. }
        | Effect::FinaliseRun { .. } => &[Reply::Success, PLAIN, FAULT, OTHER],
        Effect::LaunchRun { .. } => &[
            Reply::Success,
            Reply::Failure { code: 0, step: 0 },
            Reply::Failure { code: 0, step: 1 },
            Reply::Failure { code: 0, step: 2 },
            Reply::Failure { code: 0, step: 3 },
            Reply::Failure { code: 0, step: 4 },
            Reply::Failure { code: 7, step: 1 },
            Reply::Decline,
        ],
        // A completion also answers with evidence that is no published ok record (L-8), one
        // reply per row of the verdict rule past `record-ok` (`completion_evidence`): an
        // error record (`code: 0`), a record never published with a clean device verdict
        // (`1`: `no-record`, run-only), with a device fault (`2`: poison), a record read
        // that failed (`3`), a malformed record with a clean device verdict (`4`:
        // `malformed-record`, run-only), a record never published with no device verdict
        // made (`5`: a backend that did not synchronize; poison), and with a code the
        // synchronize returned for the lane to attribute (L-8a): the AICPU stream's (`6`), or
        // the AICore stream's (`7`).
        Effect::AwaitCompletion { channel: VerdictChannel::Record, .. } => &[
            Reply::Success,
            PLAIN,
            FAULT,
            Reply::Other { code: 0 },
            Reply::Other { code: 1 },
            Reply::Other { code: 2 },
            Reply::Other { code: 3 },
            Reply::Other { code: 4 },
            Reply::Other { code: 5 },
            Reply::Other { code: 6 },
            Reply::Other { code: 7 },
        ],
        // The covered runs' records (L-8a): all their own ok, or the first one's an error
        // (`code: 0`) or never published (`1`).
        Effect::ReadRecords { .. } => {
            &[Reply::Success, Reply::Other { code: 0 }, Reply::Other { code: 1 }]
        }
        // On the stream-synchronize channel: the device verdict clean (success), faulted
        // (`code: 0`) or not made (`1`).
        Effect::AwaitCompletion { channel: VerdictChannel::StreamSync, .. } => {
            &[Reply::Success, PLAIN, FAULT, Reply::Other { code: 0 }, Reply::Other { code: 1 }]
        }
        Effect::UploadCode { .. } => &[Reply::Success, PLAIN, FAULT],
        Effect::ReadStatus { .. } => &[Reply::Success, PLAIN, OTHER, Reply::Other { code: 7 }],
        Effect::DrainDevice { .. } => &[Reply::Success],
        Effect::ForceReset { .. } | Effect::Probe { .. } => &[Reply::Success, PLAIN],
        // Never outstanding: nothing answers them.
        Effect::Hook(_) | Effect::AdoptReset => &[],
    }
}

/// The answers offered to `effect` at depth three: each that moves a run into a phase of its
/// own (success, an incompatible or failed prepare, a launch that reached no stream or left
/// the run unfenced, a failed wait, an error record, a code the synchronize returned and its
/// covered records, a failed validation), and recovery succeeding. Every other answer's
/// handling does not depend on the depth; the other chips offer them all.
fn narrow_replies(effect: &Effect) -> &'static [Reply] {
    const PLAIN: Reply = Reply::Failure { code: 0, step: 0 };
    match effect {
        Effect::PrepareRun { .. } => &[Reply::Success, PLAIN, Reply::Other { code: 0 }],
        Effect::LaunchRun { .. } => &[
            Reply::Success,
            Reply::Failure { code: 0, step: 0 },
            Reply::Failure { code: 0, step: 3 },
        ],
        Effect::AwaitCompletion { .. } => {
            &[Reply::Success, PLAIN, Reply::Other { code: 0 }, Reply::Other { code: 6 }]
        }
        Effect::ReadRecords { .. } => &[Reply::Success, Reply::Other { code: 0 }],
        Effect::FinaliseRun { .. } => &[Reply::Success, Reply::Other { code: 0 }],
        Effect::CreateStream { .. }
        | Effect::DestroyStream { .. }
        | Effect::ReadStatus { .. }
        | Effect::UploadCode { .. }
        | Effect::DrainDevice { .. }
        | Effect::ForceReset { .. }
        | Effect::Probe { .. } => &[Reply::Success],
        // Never outstanding: nothing answers them.
        Effect::Hook(_) | Effect::AdoptReset => &[],
    }
}

/// The answers offered to `effect` with the run controls on: success, and the answers that
/// meet a control (an incompatible prepare puts a run back in the queue, a held or passed
/// one among them; a declined launch). Every other answer's handling does not depend on the
/// controls; the other configurations offer them all.
fn control_replies(effect: &Effect) -> &'static [Reply] {
    match effect {
        Effect::PrepareRun { .. } => &[Reply::Success, Reply::Other { code: 0 }],
        Effect::LaunchRun { .. } => &[Reply::Success, Reply::Decline],
        Effect::CreateStream { .. }
        | Effect::DestroyStream { .. }
        | Effect::AwaitCompletion { .. }
        | Effect::ReadRecords { .. }
        | Effect::ReadStatus { .. }
        | Effect::FinaliseRun { .. }
        | Effect::UploadCode { .. }
        | Effect::DrainDevice { .. }
        | Effect::ForceReset { .. }
        | Effect::Probe { .. } => &[Reply::Success],
        // Never outstanding: nothing answers them.
        Effect::Hook(_) | Effect::AdoptReset => &[],
    }
}

impl Model for LaneModel {
    type Action = Action;

    fn actions(&self) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut twice = Vec::new();
        let mut op = |op: Op| actions.push(Action::Op(op));
        let config = self.config;
        let (runs, publications) = self.body.accepted_counts();
        let reserved = self.body.reservations();
        let submit = |lease| Op::Submit { tag: None, diagnostics: false, lease };
        if runs + reserved < usize::from(config.runs) {
            op(submit(LeasePick::None));
            if config.reservations && self.reserves < config.runs {
                op(Op::Reserve);
            }
        }
        if reserved > 0 {
            op(submit(LeasePick::Reserved(0)));
            op(Op::Release(LeasePick::Reserved(0)));
        }
        if config.controls {
            if runs + reserved < usize::from(config.runs) {
                // A held run with key 1, and a run with key 0, which passes it while it is
                // unlaunched (L-2).
                op(Op::SubmitWith { key: Some(1), held: true, epoch: None });
                op(Op::SubmitWith { key: Some(0), held: false, epoch: None });
            }
            let (cancels, activates) = self.body.control_targets();
            for index in cancels {
                op(Op::Cancel(index));
            }
            for index in activates {
                op(Op::Activate(index));
            }
        }
        if publications < usize::from(config.publications) {
            op(Op::Publish(0));
        }
        if config.close && !self.body.closed() {
            op(Op::Close);
        }
        if config.notices
            && !self.body.noticed()
            && matches!(self.body.lane().state(), LaneState::Open | LaneState::Closing)
        {
            op(Op::Notice(0));
        }
        // The runtime's report of its reset: accepted when the lane awaits it, refused (and
        // changing nothing) anywhere else.
        if config.chip == Chip::RuntimeRecovery {
            op(Op::DeviceReset);
        }
        let current = self.body.current_effects();
        for (at, effect) in current.iter().enumerate() {
            let Ok(effect_index) = u8::try_from(at) else {
                break;
            };
            let narrow =
                matches!(config.chip, Chip::Depth3 | Chip::FinaliseFirst) || config.controls;
            let offered = if config.controls {
                control_replies(effect)
            } else if narrow {
                narrow_replies(effect)
            } else {
                replies(effect)
            };
            for &reply in offered {
                op(Op::Answer { effect: effect_index, reply });
            }
            // Duplicates of the success and the first failure answer.
            for &reply in offered.iter().take(if narrow { 0 } else { 2 }) {
                twice.push(Action::AnswerTwice { effect: effect_index, reply });
            }
        }
        if self.body.lane().poll_deadline().is_some() {
            op(Op::Expire);
            op(Op::Timeout);
        }
        if current.iter().any(|e| e.run().is_some()) {
            op(Op::Forge(Forgery::StaleLease(0)));
        }
        op(Op::Forge(Forgery::UnknownRun(0)));
        op(Op::Forge(Forgery::UnknownRun(1)));
        op(Op::Forge(Forgery::UnknownPublication(0)));
        if matches!(self.body.lane().state(), LaneState::Recovering { .. }) {
            op(Op::Forge(Forgery::WrongAttempt(0)));
        }
        actions.append(&mut twice);
        for at in 0..self.body.abandoned() {
            actions.push(Action::AnswerAbandoned(u8::try_from(at).unwrap_or(u8::MAX)));
        }
        if self.body.lane().state().is_closed() {
            actions.push(Action::RetryTeardown);
        }
        actions
    }

    fn step(&mut self, action: Action) -> Result<(), String> {
        let before = self.body.lane().poison();
        let sticky = self.body.lane().pair().sticky().map(|owner| owner.0);
        let accepted = self.body.events_accepted();
        let run = self.run_of(action);
        if action == Action::Op(Op::Reserve) {
            self.reserves += 1;
        }
        match action {
            Action::Op(op) => self.body.op(op),
            Action::AnswerAbandoned(index) => self.body.answer_abandoned(index),
            Action::AnswerTwice { effect, reply } => self.body.answer_twice(effect, reply),
            Action::RetryTeardown => self.body.retry_teardown(),
        }
        .map_err(|m| format!("{m}\n{}", self.body.describe()))?;
        self.note_rows(accepted, sticky)?;
        let after = self.body.lane().poison();
        if after != before {
            if let (Some(poison), Some(run)) = (after, run) {
                if poison.origin != run {
                    return Err(format!(
                        "{action:?} failed {run}, but the poison names {} as its origin",
                        poison.origin
                    ));
                }
            }
        }
        Ok(())
    }

    fn key(&self) -> String {
        format!("{}|{}", self.body.key_text(), self.reserves)
    }

    fn check(&self) -> Result<(), String> {
        let lane = self.body.lane();
        let busy = lane.pending_items() > 0
            || matches!(
                lane.state(),
                LaneState::Closing
                    | LaneState::ReleasingStreams { .. }
                    | LaneState::Recovering { .. }
            );
        // A held run waits for its activation, the caller's to give: not a deadlock.
        if busy
            && self.body.current_effects().is_empty()
            && lane.poll_deadline().is_none()
            && !self.body.holds_a_run()
        {
            return Err(format!(
                "deadlock: {:?} with {} items pending, no effect to answer and no deadline\n{}",
                lane.state(),
                lane.pending_items(),
                self.body.describe()
            ));
        }
        let mut healthy = self.body.clone();
        healthy.finish().map_err(|m| {
            format!(
                "liveness: answering success to everything from here fails: {m}\n{}",
                self.body.describe()
            )
        })
    }

    fn rust(action: Action) -> String {
        match action {
            Action::Op(op) => format!("Action::Op({})", rust_op(op)),
            Action::AnswerAbandoned(i) => format!("Action::AnswerAbandoned({i})"),
            Action::AnswerTwice { effect, reply } => {
                format!("Action::AnswerTwice {{ effect: {effect}, reply: {} }}", rust_reply(reply))
            }
            Action::RetryTeardown => "Action::RetryTeardown".to_owned(),
        }
    }
}

/// An operation as Rust code (every path spelled out, so it compiles as it is pasted).
fn rust_op(op: Op) -> String {
    let lease = |l: LeasePick| match l {
        LeasePick::None => "LeasePick::None".to_owned(),
        LeasePick::Reserved(i) => format!("LeasePick::Reserved({i})"),
        LeasePick::Former(i) => format!("LeasePick::Former({i})"),
        LeasePick::Forged { slot, generation } => {
            format!("LeasePick::Forged {{ slot: {slot}, generation: {generation} }}")
        }
    };
    match op {
        Op::Submit { tag, diagnostics, lease: l } => format!(
            "Op::Submit {{ tag: {tag:?}, diagnostics: {diagnostics}, lease: {} }}",
            lease(l)
        ),
        Op::Publish(code) => format!("Op::Publish({code})"),
        Op::Close => "Op::Close".to_owned(),
        Op::Reserve => "Op::Reserve".to_owned(),
        Op::Release(l) => format!("Op::Release({})", lease(l)),
        Op::Answer { effect, reply } => {
            format!("Op::Answer {{ effect: {effect}, reply: {} }}", rust_reply(reply))
        }
        Op::Pump => "Op::Pump".to_owned(),
        Op::PumpDevice => "Op::PumpDevice".to_owned(),
        Op::Forge(forgery) => format!("Op::Forge(Forgery::{forgery:?})"),
        Op::Tick(us) => format!("Op::Tick({us})"),
        Op::Timeout => "Op::Timeout".to_owned(),
        Op::Expire => "Op::Expire".to_owned(),
        Op::Notice(n) => format!("Op::Notice({n})"),
        Op::DeviceReset => "Op::DeviceReset".to_owned(),
        Op::SubmitWith { key, held, epoch } => {
            format!("Op::SubmitWith {{ key: {key:?}, held: {held}, epoch: {epoch:?} }}")
        }
        Op::Activate(i) => format!("Op::Activate({i})"),
        Op::Cancel(i) => format!("Op::Cancel({i})"),
    }
}

/// A reply as Rust code.
fn rust_reply(reply: Reply) -> String {
    match reply {
        Reply::Success => "Reply::Success".to_owned(),
        Reply::Failure { code, step } => format!("Reply::Failure {{ code: {code}, step: {step} }}"),
        Reply::Other { code } => format!("Reply::Other {{ code: {code} }}"),
        Reply::Decline => "Reply::Decline".to_owned(),
    }
}

/// The table states an exploration reached, by table, as the tables label them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// Run phases.
    pub run: BTreeSet<String>,
    /// Publication phases.
    pub publication: BTreeSet<String>,
    /// Lane states.
    pub lane: BTreeSet<String>,
    /// Rows of the verdict rule the lane's judgement went through, by name
    /// ([`VerdictRule::name`]).
    pub verdict: BTreeSet<String>,
}

/// The states a rendered table lists: its first column. A state has a row per input it
/// accepts and one `*refuses*` row for the rest, so a state that accepts nothing (`Done`)
/// is listed too; lane-core's tests check that every (state, input) pair is rendered once.
fn rows(table: &str) -> BTreeSet<String> {
    table
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|rest| rest.split(" | ").next())
        .filter(|state| !matches!(*state, "state" | "phase" | "---"))
        .map(str::to_owned)
        .collect()
}

/// How the reached states compare with the tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableCheck {
    /// Reached but not in the table: the table is missing a state (a finding).
    pub unlisted: Vec<String>,
    /// In a table but never reached within these bounds (reported; some need bigger
    /// bounds, such as the third recovery attempt).
    pub unreached: Vec<String>,
}

impl Reached {
    /// Compares with the rendered run, publication and lane-state tables, and with the rows
    /// of the verdict rule.
    #[must_use]
    pub fn against_tables(&self) -> TableCheck {
        let mut check = TableCheck::default();
        for (name, reached, table) in [
            ("run phase", &self.run, run_phase_table()),
            ("publication phase", &self.publication, publication_table()),
            ("lane state", &self.lane, lane_state_table()),
        ] {
            let listed = rows(&table);
            check.unlisted.extend(reached.difference(&listed).map(|s| format!("{name} {s}")));
            check.unreached.extend(listed.difference(reached).map(|s| format!("{name} {s}")));
        }
        let rows: BTreeSet<String> = VerdictRule::ALL.iter().map(|r| r.name().to_owned()).collect();
        check.unlisted.extend(self.verdict.difference(&rows).map(|s| format!("verdict row {s}")));
        check.unreached.extend(rows.difference(&self.verdict).map(|s| format!("verdict row {s}")));
        check
    }

    /// Adds what `other` reached.
    pub fn union(&mut self, other: &Self) {
        self.run.extend(other.run.iter().cloned());
        self.publication.extend(other.publication.iter().cloned());
        self.lane.extend(other.lane.iter().cloned());
        self.verdict.extend(other.verdict.iter().cloned());
    }
}

/// What one configuration's exploration found.
#[derive(Clone, Debug)]
pub struct Explored {
    /// The configuration.
    pub config: Config,
    /// States, transitions, depth.
    pub stats: Stats,
    /// The table states reached.
    pub reached: Reached,
}

/// Explores `config` exhaustively (at most `limit` distinct states). A violation comes back
/// rendered: the message and the shortest trace as Rust code for [`replay`].
pub fn run(config: Config, limit: usize) -> Result<Explored, String> {
    let mut reached = Reached::default();
    let initial = LaneModel::new(config);
    let rows = Rc::clone(&initial.rows);
    let stats = explore(initial, limit, |m: &LaneModel| {
        m.table_states(&mut reached);
    })
    .map_err(|failure| match failure {
        Failure::Violation(v) => render::<LaneModel>(
            &v,
            &format!("lane_fuzz::explore::lane::replay({}, &[", config.rust()),
            "])",
        ),
        Failure::TooManyStates { limit } => {
            format!("{config:?}: more than {limit} states; lower the bounds")
        }
    })?;
    reached.verdict = VerdictRule::ALL
        .iter()
        .filter(|r| rows.get() & row_bit(**r) != 0)
        .map(|r| r.name().to_owned())
        .collect();
    Ok(Explored { config, stats, reached })
}

/// Explores every configuration in `configs` and merges the table states they reached.
pub fn run_all(configs: &[Config], limit: usize) -> Result<(Vec<Explored>, Reached), String> {
    let mut all = Reached::default();
    let mut explored = Vec::new();
    for &config in configs {
        let one = run(config, limit)?;
        all.union(&one.reached);
        explored.push(one);
    }
    Ok((explored, all))
}

/// Replays a trace an exploration printed: applies each action from a fresh lane with the
/// same checks. `Err` is the property that broke, with the index of the action.
pub fn replay(config: Config, actions: &[Action]) -> Result<(), String> {
    let mut model = LaneModel::new(config);
    model.check().map_err(|m| format!("initial state: {m}"))?;
    for (at, &action) in actions.iter().enumerate() {
        model
            .step(action)
            .and_then(|()| model.check())
            .map_err(|m| format!("action {at} ({action:?}): {m}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use lane_core::RunPhase;
    use lane_core::publication::PublicationPhase;

    use super::*;

    #[test]
    fn rows_lists_every_state_of_a_table_those_that_accept_nothing_too() {
        let run: BTreeSet<String> = RunPhase::all().into_iter().map(RunPhase::label).collect();
        assert_eq!(rows(&run_phase_table()), run);
        let publication: BTreeSet<String> =
            PublicationPhase::ALL.into_iter().map(|phase| phase.label().to_owned()).collect();
        assert_eq!(rows(&publication_table()), publication);
        // The lane's states have no public list: every state a row leads to is listed.
        let table = lane_state_table();
        let lane = rows(&table);
        let next = table
            .lines()
            .filter_map(|line| line.split(" | ").nth(2))
            .filter(|next| !next.contains(": "))
            .map(|next| {
                next.trim_matches('*')
                    .trim_end_matches(" (unchanged)")
                    .trim_end_matches(" (value recorded)")
            });
        let mut led_to = 0;
        for state in next.filter(|next| *next != "next state") {
            assert!(lane.contains(state), "{state} is not listed: {lane:?}");
            led_to += 1;
        }
        assert!(led_to > lane.len(), "{led_to} rows");
        for state in ["Lost", "Closed(device lost)", "ReleasingStreams(round 0 of 1)"] {
            assert!(lane.contains(state), "{state} is not listed: {lane:?}");
        }
    }
}
