//! The lane-level machine: admission, poison and recovery, close.
//!
//! [`lane_step`] is the only place the lane's state changes; the lane consults it for every
//! command and every recovery event, so the rendered [`lane_state_table`] is exactly what
//! the lane does.

use core::fmt::Write as _;

use status_latch::AclCode;
use stream_pair::Role;

use crate::lane::StreamsLeft;
use crate::profile::Recovery;

/// A step of device recovery (SPEC §5.3): a bounded drain, a force reset, a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecoveryStep {
    /// Waiting for runner work that was out at the poison (a prepare or finalise handed to a
    /// host worker) to answer: no drain, reset or probe runs while it is out (L-18). Left at
    /// once when nothing is out.
    Quiesce,
    /// `DrainDevice` was emitted.
    Drain,
    /// `ForceReset` was emitted.
    Reset,
    /// `Probe` was emitted.
    Probe,
}

/// What the lane does once recovery is confirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AfterRecovery {
    /// Reopen for submissions (fresh streams at the next launch).
    Reopen,
    /// `close` was called meanwhile: finish closing.
    Close,
}

/// The lane's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneState {
    /// Accepting runs and publications.
    Open,
    /// A device fault notice named this lane's device and stream (L-19): nothing new is
    /// admitted, prepared or launched; launched runs get their own verdicts, then recovery
    /// starts.
    Suspect {
        /// What follows a confirmed recovery.
        then: AfterRecovery,
    },
    /// A run poisoned the device: every live item has its verdict, handles are abandoned,
    /// and recovery runs. Submissions are refused until it is confirmed.
    Recovering {
        /// The step in flight.
        step: RecoveryStep,
        /// The attempt, from 1.
        attempt: u8,
        /// What follows a confirmed recovery.
        then: AfterRecovery,
    },
    /// The runtime owns recovery (L-24) and a poison or a fault notice handed the device to
    /// it: every item has its verdict, the runner was told once, and the lane makes no device
    /// call until the runtime reports its reset ([`Lane::device_reset`](crate::Lane::device_reset)),
    /// which reopens it on fresh streams. Submits are refused as unusable; a close ends the
    /// lane at once (there is nothing left to finish and nothing it may destroy).
    Unusable,
    /// Recovery failed every attempt: the device could not be proven usable. Every submit
    /// is refused; the lane can only be closed, to `Closed { device_lost: true }`. (If close
    /// was called during the recovery, the lane goes straight there.)
    Lost,
    /// `close` was called: admission is stopped, launched runs finish, the rest are cancelled.
    Closing,
    /// Every item has its outcome; the stream pair is being destroyed, in rounds: a round
    /// destroys every live stream (the first) or each stream whose destroy failed (S-7).
    ReleasingStreams {
        /// Destroy rounds emitted so far (0: none yet, while a stream create or destroy
        /// result is still out).
        round: u8,
        /// The most rounds this teardown emits: [`TEARDOWN_ATTEMPTS`](crate::TEARDOWN_ATTEMPTS)
        /// for a close's teardown (a destroy and one retry), 1 for
        /// [`Lane::retry_teardown`](crate::Lane::retry_teardown).
        rounds: u8,
        /// Each stream whose last destroy failed, with its code.
        left: StreamsLeft,
    },
    /// Closed: nothing more happens (but [`Lane::retry_teardown`](crate::Lane::retry_teardown)
    /// on streams a teardown left).
    Closed {
        /// Recovery failed every attempt before the lane closed (it was `Lost`, or a close
        /// came during the recovery): the device must be reset outside the lane, and it is
        /// never touched again.
        device_lost: bool,
        /// The streams the teardown left alive, each with its last destroy's code (S-7);
        /// reported by the close report.
        left: StreamsLeft,
    },
}

/// An input to the lane-level machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneInput {
    /// A `submit` (or `reserve`).
    Submit,
    /// A `publish`.
    Publish,
    /// A `close`.
    Close,
    /// A failure classified `Poison`.
    Poison,
    /// Every piece of runner work that was out at the poison has answered.
    Quiesced,
    /// `DeviceDrained` arrived.
    Drained,
    /// `ResetDone` arrived.
    ResetDone,
    /// `ResetFailed` arrived.
    ResetFailed,
    /// `ProbePassed` arrived.
    ProbePassed,
    /// `ProbeFailed` arrived.
    ProbeFailed,
    /// Every accepted item has its outcome.
    Idle,
    /// A device fault notice named this lane's device and one of its streams (L-19).
    FaultNotice,
    /// Suspect, and every run that launched has its verdict: recovery can start.
    LaunchedDone,
    /// The runtime reported that it reset the device (L-24).
    DeviceReset,
    /// A stream's destroy failed during the teardown, with its code.
    DestroyFailed {
        /// Which stream.
        role: Role,
        /// The destroy's code.
        code: AclCode,
    },
    /// Every stream of the pair is destroyed (or none was live).
    StreamsReleased,
    /// The teardown ended with these streams alive, their every destroy failed (the first
    /// and its retry): they are left, and reported (`CloseReport::streams_left`).
    StreamsLeft(StreamsLeft),
    /// `Lane::retry_teardown` on a closed lane with a stream left: destroy it once more.
    RetryTeardown,
    /// The teardown emits a destroy round: no stream result is out, and this is its first
    /// round or a stream's destroy failed.
    DestroyRound,
}

impl LaneInput {
    /// Every input shape (data: a failed AICore destroy), in table order.
    pub const ALL: [Self; 19] = [
        Self::Submit,
        Self::Publish,
        Self::Close,
        Self::Poison,
        Self::Quiesced,
        Self::Drained,
        Self::ResetDone,
        Self::ResetFailed,
        Self::ProbePassed,
        Self::ProbeFailed,
        Self::Idle,
        Self::FaultNotice,
        Self::LaunchedDone,
        Self::DeviceReset,
        Self::DestroyFailed { role: Role::Aicore, code: TABLE_DESTROY_CODE },
        Self::StreamsReleased,
        Self::StreamsLeft(TABLE_LEFT),
        Self::RetryTeardown,
        Self::DestroyRound,
    ];

    /// The input as the rendered table labels it: its shape, without the stream and code
    /// it carries.
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Self::DestroyFailed { .. } => "DestroyFailed".to_owned(),
            Self::StreamsLeft(_) => "StreamsLeft".to_owned(),
            other => format!("{other:?}"),
        }
    }
}

/// The destroy code the table's `DestroyFailed` and streams-left rows carry.
const TABLE_DESTROY_CODE: AclCode = AclCode::RtParamInvalid;

/// The streams a teardown left, in the table's rows: the AICore stream.
const TABLE_LEFT: StreamsLeft = StreamsLeft { aicpu: None, aicore: Some(TABLE_DESTROY_CODE) };

/// What the lane does with a transition of its state, besides changing it: the one value
/// [`lane_step`] returns with the next state, performed in one place by the lane, and the
/// effects column of the rendered table ([`describe`](Self::describe)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneAction {
    /// Nothing.
    None,
    /// Close: cancel every item that has not launched.
    CancelUnlaunched,
    /// A close that waits for the recovery a fault notice asked for: every reservation goes
    /// back at once (no submit can use it any more); the unlaunched items go down with the
    /// recovery.
    ReleaseReservations,
    /// Recovery starts: wait for the runner work out at the poison (L-18), then drain.
    Quiesce,
    /// In-place recovery starts (L-24): emit the runner's `BeforeReset` hook, then
    /// `DrainDevice` for the first attempt.
    BeginReset,
    /// Emit `DrainDevice` for the attempt.
    Drain,
    /// Emit `ForceReset` for the attempt.
    Reset,
    /// Emit `Probe` for the attempt.
    Probe,
    /// In-place recovery ended: emit the runner's `AfterReset` hook, recovered or not.
    AfterReset {
        /// Whether the probe proved the device usable.
        recovered: bool,
    },
    /// The runtime's recovery (L-24): emit the runner's `OnPoison` hook, the last thing the
    /// lane does with the device until the runtime's reset.
    HandOver,
    /// The runtime reset the device: emit `AdoptReset` (the backend forgets every handle and
    /// binding, with no device call).
    AdoptReset,
    /// The teardown starts: its first destroy round at once, or once the stream result out
    /// arrives.
    TearDown,
    /// Emit a `DestroyStream` for each live stream of the pair.
    DestroyRound,
}

impl LaneAction {
    /// What the lane emits, as the table's effects column shows it; `state` is the state the
    /// transition leaves (a teardown's first round destroys every stream, a later one the
    /// streams whose destroy failed).
    #[must_use]
    pub const fn describe(self, state: LaneState) -> &'static str {
        match self {
            Self::None => "none",
            Self::CancelUnlaunched => {
                "`FinaliseRun` (no copy-back) for each prepared run; queued runs and waiting publications cancelled"
            }
            Self::ReleaseReservations => {
                "every reservation released (unlaunched items go down with the recovery)"
            }
            Self::Quiesce => {
                "none while runner work is out (each answer is accepted, then ignored); `Quiesced` at once when none is"
            }
            Self::BeginReset => "`Hook(BeforeReset)`, then `DrainDevice`",
            Self::AfterReset { recovered: true } => "`Hook(AfterReset)`, recovered",
            Self::AfterReset { recovered: false } => "`Hook(AfterReset)`, not recovered",
            Self::HandOver => "`Hook(OnPoison)`; no device call until the runtime's reset",
            Self::AdoptReset => "`AdoptReset` (every handle forgotten, no device call)",
            Self::Drain => "`DrainDevice`",
            Self::Reset => "`ForceReset`",
            Self::Probe => "`Probe`",
            Self::TearDown => match state {
                // A closed lane has no stream create outstanding to wait for.
                LaneState::Closed { .. } => "none; `DestroyRound` follows at once",
                _ => "none; `DestroyRound` follows at once, or when the stream result out arrives",
            },
            Self::DestroyRound => match state {
                LaneState::ReleasingStreams { round: 0, .. } => {
                    "`DestroyStream` for each live stream"
                }
                _ => "`DestroyStream` again for each stream whose destroy failed",
            },
        }
    }
}

/// Why [`lane_step`] refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneRefusal {
    /// The lane is closing or closed.
    Closed,
    /// The lane is recovering the device.
    Recovering,
    /// A device fault notice made the device suspect; recovery follows.
    Suspect,
    /// The lane is lost.
    Lost,
    /// The device is the runtime's to reset (L-24).
    Unusable,
    /// The input cannot happen in this state (an event the lane did not ask for).
    NotExpected,
}

impl LaneRefusal {
    /// A one-line reason for tables and errors.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self {
            Self::Closed => "the lane is closed",
            Self::Recovering => "the lane is recovering the device",
            Self::Suspect => "the device is suspect after a fault notice",
            Self::Lost => "the lane is lost",
            Self::Unusable => "the device is unusable until the runtime reports its reset",
            Self::NotExpected => "not expected in this state",
        }
    }
}

/// The one transition function of the lane: the next state and what the lane does with it,
/// or why the input is refused. `attempts` is the profile's recovery budget, `recovery` who
/// recovers (L-24): it decides only where a quiesced poison goes.
///
/// Entering a recovery step emits that step's effect; a close of an open lane cancels what
/// has not launched; an idle closing lane (or a retry on a closed one) starts the teardown,
/// whose rounds destroy the pair.
pub fn lane_step(
    state: LaneState,
    input: LaneInput,
    attempts: u8,
    recovery: Recovery,
) -> Result<(LaneState, LaneAction), LaneRefusal> {
    use LaneAction as A;
    use LaneInput as I;
    use LaneState as S;
    use RecoveryStep as R;
    let recovering = |step, attempt, then| S::Recovering { step, attempt, then };
    let closed = |device_lost, left| S::Closed { device_lost, left };
    let next = match (state, input) {
        (S::Open, I::Submit | I::Publish | I::Idle) => (S::Open, A::None),
        (S::Open, I::Close) => (S::Closing, A::CancelUnlaunched),
        (S::Open, I::Poison) => (recovering(R::Quiesce, 1, AfterRecovery::Reopen), A::Quiesce),

        // A notice changes the device's standing only where something still trusts it.
        (S::Open, I::FaultNotice) => (S::Suspect { then: AfterRecovery::Reopen }, A::None),
        (S::Closing, I::FaultNotice) => (S::Suspect { then: AfterRecovery::Close }, A::None),
        (S::Suspect { .. }, I::Submit | I::Publish) => return Err(LaneRefusal::Suspect),
        // The close itself waits for the recovery, but a reservation is useless from now on
        // (every later submit is refused): it goes back now, as an open lane's close does.
        (S::Suspect { then: AfterRecovery::Reopen }, I::Close) => {
            (S::Suspect { then: AfterRecovery::Close }, A::ReleaseReservations)
        }
        (S::Suspect { then: AfterRecovery::Close }, I::Close) => (state, A::None),
        (S::Suspect { .. }, I::FaultNotice | I::Idle) => (state, A::None),
        (S::Suspect { then }, I::LaunchedDone | I::Poison) => {
            (recovering(R::Quiesce, 1, then), A::Quiesce)
        }
        (
            S::Recovering { .. } | S::Lost | S::ReleasingStreams { .. } | S::Closed { .. },
            I::FaultNotice,
        ) => (state, A::None),

        (S::Recovering { .. }, I::Submit | I::Publish) => return Err(LaneRefusal::Recovering),
        (S::Recovering { step, attempt, .. }, I::Close) => {
            (recovering(step, attempt, AfterRecovery::Close), A::None)
        }
        (S::Recovering { step: R::Quiesce, attempt, then }, I::Quiesced) => {
            match (recovery, then) {
                (Recovery::InPlace, _) => (recovering(R::Drain, attempt, then), A::BeginReset),
                // The runtime resets: nothing is left for the lane to do with the device.
                (Recovery::Runtime, AfterRecovery::Reopen) => (S::Unusable, A::HandOver),
                (Recovery::Runtime, AfterRecovery::Close) => {
                    (closed(false, StreamsLeft::NONE), A::HandOver)
                }
            }
        }
        (S::Recovering { step: R::Drain, attempt, then }, I::Drained) => {
            (recovering(R::Reset, attempt, then), A::Reset)
        }
        (S::Recovering { step: R::Reset, attempt, then }, I::ResetDone) => {
            (recovering(R::Probe, attempt, then), A::Probe)
        }
        (S::Recovering { step: R::Reset, attempt, then }, I::ResetFailed)
        | (S::Recovering { step: R::Probe, attempt, then }, I::ProbeFailed) => {
            if attempt < attempts {
                (recovering(R::Drain, attempt + 1, then), A::Drain)
            } else {
                let given_up = A::AfterReset { recovered: false };
                match then {
                    AfterRecovery::Reopen => (S::Lost, given_up),
                    // Close was asked for meanwhile: nothing is left to finish, and a lost
                    // device is never touched again (its handles are abandoned).
                    AfterRecovery::Close => (closed(true, StreamsLeft::NONE), given_up),
                }
            }
        }
        // Confirmed: every handle was abandoned at poison time, so the next launch creates a
        // fresh pair (L-10).
        (S::Recovering { step: R::Probe, then: AfterRecovery::Reopen, .. }, I::ProbePassed) => {
            (S::Open, A::AfterReset { recovered: true })
        }
        (S::Recovering { step: R::Probe, then: AfterRecovery::Close, .. }, I::ProbePassed) => {
            (S::Closing, A::AfterReset { recovered: true })
        }

        (S::Unusable, I::Submit | I::Publish) => return Err(LaneRefusal::Unusable),
        // Every item has its verdict and the handles are the runtime's to reset: closed.
        (S::Unusable, I::Close) => (closed(false, StreamsLeft::NONE), A::None),
        (S::Unusable, I::FaultNotice | I::Idle) => (state, A::None),
        // Fresh streams at the next launch, as after an in-place recovery.
        (S::Unusable, I::DeviceReset) => (S::Open, A::AdoptReset),

        (S::Lost, I::Submit | I::Publish) => return Err(LaneRefusal::Lost),
        (S::Lost, I::Close) => (closed(true, StreamsLeft::NONE), A::None),
        (S::Lost, I::Idle) => (S::Lost, A::None),

        (S::Closing | S::ReleasingStreams { .. } | S::Closed { .. }, I::Submit | I::Publish) => {
            return Err(LaneRefusal::Closed);
        }
        (S::Closing, I::Close) => (S::Closing, A::None),
        (S::Closing, I::Poison) => (recovering(R::Quiesce, 1, AfterRecovery::Close), A::Quiesce),
        (S::Closing, I::Idle) => (
            S::ReleasingStreams {
                round: 0,
                rounds: crate::lane::TEARDOWN_ATTEMPTS,
                left: StreamsLeft::NONE,
            },
            A::TearDown,
        ),
        (S::ReleasingStreams { .. }, I::Close | I::Idle) => (state, A::None),
        (S::ReleasingStreams { round, rounds, left }, I::DestroyRound) if round < rounds => {
            (S::ReleasingStreams { round: round + 1, rounds, left }, A::DestroyRound)
        }
        // Recorded for the round that follows, or reported as left.
        (S::ReleasingStreams { round, rounds, mut left }, I::DestroyFailed { role, code }) => {
            left.set(role, Some(code));
            (S::ReleasingStreams { round, rounds, left }, A::None)
        }
        (S::ReleasingStreams { .. }, I::StreamsReleased) => {
            (closed(false, StreamsLeft::NONE), A::None)
        }
        (S::ReleasingStreams { .. }, I::StreamsLeft(left)) if !left.is_empty() => {
            (closed(false, left), A::None)
        }
        (S::Closed { .. }, I::Close | I::Idle) => (state, A::None),
        // One more destroy round for the streams left.
        (S::Closed { device_lost: false, left }, I::RetryTeardown) if !left.is_empty() => {
            (S::ReleasingStreams { round: 0, rounds: 1, left }, A::TearDown)
        }
        // A lost device's handles were abandoned with it: there is nothing to destroy again.
        (S::Closed { device_lost: true, .. }, I::RetryTeardown) => return Err(LaneRefusal::Lost),
        _ => return Err(LaneRefusal::NotExpected),
    };
    Ok(next)
}

/// Every state the lane can be in with a recovery budget of `attempts`, in table order:
/// every step of every recovery attempt, toward either end. The exhaustive explorer
/// (lane-fuzz) checks that each state it reaches has its rows here.
pub(crate) fn table_states(attempts: u8) -> Vec<LaneState> {
    let mut states = vec![LaneState::Open];
    for then in [AfterRecovery::Reopen, AfterRecovery::Close] {
        states.push(LaneState::Suspect { then });
    }
    for then in [AfterRecovery::Reopen, AfterRecovery::Close] {
        // Only a poison or a notice enters `Quiesce`, and only at the first attempt: a retry starts with
        // nothing out (no run prepares or finalises during a recovery).
        states.push(LaneState::Recovering { step: RecoveryStep::Quiesce, attempt: 1, then });
        for attempt in 1..=attempts {
            for step in [RecoveryStep::Drain, RecoveryStep::Reset, RecoveryStep::Probe] {
                states.push(LaneState::Recovering { step, attempt, then });
            }
        }
    }
    states.extend([LaneState::Unusable, LaneState::Lost, LaneState::Closing]);
    for rounds in [crate::lane::TEARDOWN_ATTEMPTS, 1] {
        for round in 0..=rounds {
            states.push(LaneState::ReleasingStreams { round, rounds, left: StreamsLeft::NONE });
        }
    }
    states.extend([
        LaneState::Closed { device_lost: false, left: StreamsLeft::NONE },
        LaneState::Closed { device_lost: false, left: TABLE_LEFT },
        LaneState::Closed { device_lost: true, left: StreamsLeft::NONE },
    ]);
    states
}

fn state_label(state: LaneState) -> String {
    state.label()
}

impl LaneState {
    /// Whether the lane is `Closed`, whatever it holds.
    #[must_use]
    pub const fn is_closed(self) -> bool {
        matches!(self, Self::Closed { .. })
    }

    /// The state as the rendered [`lane_state_table`] labels it (its first column).
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Self::Recovering { step, attempt, then } => {
                format!("Recovering({step:?}, attempt {attempt}, then {then:?})")
            }
            Self::Suspect { then } => format!("Suspect(then {then:?})"),
            // The streams whose destroy failed are values, not rows.
            Self::ReleasingStreams { round, rounds, .. } => {
                format!("ReleasingStreams(round {round} of {rounds})")
            }
            Self::Closed { device_lost: true, .. } => "Closed(device lost)".to_owned(),
            Self::Closed { left, .. } if left.is_empty() => "Closed".to_owned(),
            Self::Closed { .. } => "Closed(streams left)".to_owned(),
            other => format!("{other:?}"),
        }
    }
}

/// The lane-level machine as a Markdown table, with the default recovery budget of 3
/// attempts: a row per accepted (state, input) pair, and per state one row of what it
/// refuses and why.
#[must_use]
pub fn lane_state_table() -> String {
    let attempts = crate::profile::DEFAULT_RECOVERY_ATTEMPTS;
    let mut out = String::new();
    out.push_str("# Lane state machine\n\n");
    out.push_str(
        "Rendered from `lane_core::state::lane_step`, the only place the lane's state \
         changes, with the default recovery budget of 3 attempts. One row per input a state \
         accepts, then one `*refuses*` row: why it refuses the others, `every other input` \
         being those it has no row or group for. `Submit`/`Publish`/`Close` \
         are commands; `Poison` is any failure status-latch classifies `Poison`; `Quiesced` means \
         the runner work out at the poison has answered (L-18); the other recovery \
         inputs are backend events answering `DrainDevice`, `ForceReset` and `Probe`; `Idle` \
         means every accepted item has its outcome; `StreamsReleased` means the pair is \
         destroyed; `DestroyFailed` is a stream's failed destroy during the teardown (recorded in the \
         state with its code: the state's streams left are values, shown only for `Closed`); \
         `StreamsLeft` means a stream survived its destroy and its retry (it is \
         reported in the close report); `DestroyRound` is the teardown emitting a round of \
         destroys (the first, or one for the streams whose destroy failed); `RetryTeardown` is \
         `Lane::retry_teardown`, which \
         destroys the streams left once more; `FaultNotice` is a device fault notice that \
         names this lane's device and stream (L-19), and `LaunchedDone` means every run that \
         launched while the device was suspect has its verdict (what had not launched then \
         fails with the notice). `effects` is generated from the `LaneAction` the step returns, which the lane \
         performs in one place (SPEC §6: state x event -> next state + effects). A refused command returns a typed error; a refused \
         event is rejected and changes nothing.\n\n",
    );
    out.push_str("| state | input | next state | effects |\n|---|---|---|---|\n");
    render_rows(&mut out, attempts, Recovery::InPlace, |_, _| true);
    out.push_str(
        "\n## With the runtime's recovery (L-24)\n\nThe rows that differ when the runtime \
         owns recovery (`Recovery::Runtime`): a quiesced poison hands the device over instead \
         of draining it. Every other row is the table's above.\n\n",
    );
    out.push_str("| state | input | next state | effects |\n|---|---|---|---|\n");
    render_rows(&mut out, attempts, Recovery::Runtime, |state, input| {
        lane_step(state, input, attempts, Recovery::Runtime)
            != lane_step(state, input, attempts, Recovery::InPlace)
    });
    out
}

/// Appends the rows of the lane's table under `recovery` that `shown` keeps.
fn render_rows(
    out: &mut String,
    attempts: u8,
    recovery: Recovery,
    shown: impl Fn(LaneState, LaneInput) -> bool,
) {
    for state in table_states(attempts) {
        let mut refused = Vec::new();
        for input in LaneInput::ALL {
            if !shown(state, input) {
                continue;
            }
            let (next, effects) = match lane_step(state, input, attempts, recovery) {
                Ok((next, _)) if next == state => {
                    (format!("{} (unchanged)", state_label(next)), "none")
                }
                // The values a state holds changed (a failed destroy recorded), not its row.
                Ok((next, action)) if state_label(next) == state_label(state) => {
                    (format!("{} (value recorded)", state_label(next)), action.describe(state))
                }
                Ok((next, action)) => {
                    (format!("**{}**", state_label(next)), action.describe(state))
                }
                Err(refusal) => {
                    refused.push((input.label(), refusal.reason()));
                    continue;
                }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {next} | {effects} |",
                state_label(state),
                input.label()
            );
        }
        // The runtime's section lists only rows that differ, refusals among them.
        if recovery == Recovery::InPlace {
            crate::table::write_refusals(out, &state_label(state), &refused, LaneInput::ALL.len());
        } else {
            for (input, reason) in refused {
                let _ = writeln!(
                    out,
                    "| {} | {input} | refused: {reason} | none |",
                    state_label(state)
                );
            }
        }
    }
}
