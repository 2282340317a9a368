//! The per-run phase machine: one table, consulted by the lane for every phase change.
//!
//! A run moves `Queued → Preparing → Prepared → Launching → Launched → Awaiting →
//! ReadingStatus → Finalising → Done`, may fall back from `Preparing` to `Queued` (an
//! incompatible prepare), and reaches `Done` early on failure, cancel or device reset. A
//! close while the prepare is out makes it `Preparing { cancel: true }`; the prepare's answer
//! then ends it (finalised without copy-back, or done if it came back incompatible).
//! [`step`] is the only place a phase changes, device resets included (`Abandon`); an input
//! it refuses is an event the lane did not ask for, and the lane rejects that event without
//! changing anything. An input the lane decided itself and `step` refuses is a lane bug,
//! reported by [`Lane::check_invariants`](crate::Lane::check_invariants).

use core::fmt::Write as _;

use status_latch::Class;

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RunPhase {
    /// Accepted with a lease; waiting for its turn to prepare.
    Queued {
        /// Its prepare came back incompatible once: it prepares again only with no
        /// unfinished run before it.
        incompatible: bool,
    },
    /// `PrepareRun` was emitted.
    Preparing {
        /// Close arrived while the prepare was out: the run is cancelled when the prepare
        /// answers (finalised without copy-back if it prepared, settled `Cancelled` if it
        /// came back incompatible).
        cancel: bool,
    },
    /// Prepared into its slot; waiting for its turn to launch.
    Prepared,
    /// `LaunchRun` was emitted; the run holds a submission on the stream pair.
    Launching,
    /// Both kernels and both completion events are enqueued.
    Launched,
    /// The oldest launched run: `AwaitCompletion` was emitted and its deadline runs.
    Awaiting,
    /// Its boundary completed and the verdict rule did not poison (its submission retired
    /// `Complete`); `ReadStatus` was emitted for its timing and the header fallback.
    ReadingStatus,
    /// The verdict is decided (pending finalisation); `FinaliseRun` was emitted.
    Finalising,
    /// Terminal: the verdict is final; the outcome is delivered in submission order.
    Done,
}

impl RunPhase {
    /// Every phase, in life order.
    pub const ALL: [Self; 11] = [
        Self::Queued {
            incompatible: false,
        },
        Self::Queued { incompatible: true },
        Self::Preparing { cancel: false },
        Self::Preparing { cancel: true },
        Self::Prepared,
        Self::Launching,
        Self::Launched,
        Self::Awaiting,
        Self::ReadingStatus,
        Self::Finalising,
        Self::Done,
    ];

    /// Whether the run holds a submission on the stream pair.
    #[must_use]
    pub const fn on_pair(self) -> bool {
        matches!(self, Self::Launching | Self::Launched | Self::Awaiting)
    }

    /// Whether the run no longer holds back its successors' preparation and launch: it has
    /// launched, or it never will (its verdict is being finalised). Not proof that it reached
    /// a stream: a run whose prepare failed is finalised without launching.
    #[must_use]
    pub const fn past_launch(self) -> bool {
        matches!(
            self,
            Self::Launching
                | Self::Launched
                | Self::Awaiting
                | Self::ReadingStatus
                | Self::Finalising
        )
    }

    /// Whether the run waits for its turn to prepare.
    #[must_use]
    pub const fn is_queued(self) -> bool {
        matches!(self, Self::Queued { .. })
    }

    /// Whether the run has its verdict.
    #[must_use]
    pub const fn is_done(self) -> bool {
        matches!(self, Self::Done)
    }
}

/// What can happen to a run: lane decisions and backend reports, with the class of a
/// failure where it decides the next phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunInput {
    /// The lane emits `PrepareRun`.
    Prepare,
    /// `Prepared` arrived.
    Prepared,
    /// `PrepareIncompatible` arrived: back to the queue, keeping place and lease.
    Incompatible,
    /// `PrepareFailed` arrived, classified.
    PrepareFailed(Class),
    /// The lane emits `LaunchRun` (the pair accepted the submission).
    Launch,
    /// Readying the pair for this run's launch failed (stream create or destroy), classified.
    StreamsFailed(Class),
    /// `Launched` arrived.
    Launched,
    /// `LaunchFailed` arrived, classified (`NotStarted` run-only, or poison).
    LaunchFailed(Class),
    /// The lane emits `AwaitCompletion` (the run became the oldest launched).
    Await,
    /// `Completed` arrived and the verdict rule, on its evidence, did not poison.
    Completed,
    /// `Completed` arrived and the verdict rule, on its evidence alone, poisons (a device
    /// verdict's code, a record error that poisons, a failed record read).
    CompletedFaulted,
    /// `CompletionFailed` arrived (always poison).
    CompletionFailed,
    /// The completion deadline passed (always poison).
    DeadlineExpired,
    /// `StatusRead` arrived and the verdict rule judged the run `Ok` (L-8).
    JudgedOk,
    /// `StatusRead` arrived and the verdict rule judged the run failed, classified.
    JudgedFailed(Class),
    /// `StatusReadFailed` arrived (always poison).
    StatusReadFailed,
    /// `Finalised` arrived.
    Finalised,
    /// `FinaliseFailed` arrived, classified.
    FinaliseFailed(Class),
    /// The lane is closing: a run that did not launch is cancelled.
    Cancel,
    /// A device poison (this run's or another's): the device is reset, the run's resources are
    /// abandoned, and it is done at once.
    Abandon,
}

impl RunInput {
    /// Every input with representative classes, in table order.
    pub const ALL: [Self; 25] = [
        Self::Prepare,
        Self::Prepared,
        Self::Incompatible,
        Self::PrepareFailed(Class::RunOnly),
        Self::PrepareFailed(Class::Poison),
        Self::Launch,
        Self::StreamsFailed(Class::RunOnly),
        Self::StreamsFailed(Class::Poison),
        Self::Launched,
        Self::LaunchFailed(Class::RunOnly),
        Self::LaunchFailed(Class::Poison),
        Self::Await,
        Self::Completed,
        Self::CompletedFaulted,
        Self::CompletionFailed,
        Self::DeadlineExpired,
        Self::JudgedOk,
        Self::JudgedFailed(Class::RunOnly),
        Self::JudgedFailed(Class::Poison),
        Self::StatusReadFailed,
        Self::Finalised,
        Self::FinaliseFailed(Class::RunOnly),
        Self::FinaliseFailed(Class::Poison),
        Self::Cancel,
        Self::Abandon,
    ];
}

/// Why [`step`] refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The run is not in a phase where this input can happen (the lane did not ask for it,
    /// or it was already answered).
    NotExpected,
    /// A launched run is never cancelled: it finishes, and close waits for it.
    LaunchedRunsFinish,
    /// The run is done; nothing changes it any more.
    AlreadyDone,
}

impl Refusal {
    /// A one-line reason for tables and errors.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self {
            Self::NotExpected => "not expected in this phase",
            Self::LaunchedRunsFinish => "launched runs finish; close waits for them",
            Self::AlreadyDone => "the run is done",
        }
    }
}

/// The one transition function of a run: the next phase, or why the input is refused.
///
/// A poison-class failure leads to `Done` directly: the device is reset, so no further
/// effect is issued for the run (its resources are abandoned with the device's).
pub const fn step(phase: RunPhase, input: RunInput) -> Result<RunPhase, Refusal> {
    use RunInput as I;
    use RunPhase as P;
    let next = match (phase, input) {
        (P::Done, _) => return Err(Refusal::AlreadyDone),
        (_, I::Abandon) => P::Done,

        (P::Queued { .. }, I::Prepare) => P::Preparing { cancel: false },
        (P::Queued { .. }, I::Cancel) => P::Done,

        (P::Preparing { cancel: false }, I::Prepared) => P::Prepared,
        (P::Preparing { cancel: false }, I::Incompatible) => P::Queued { incompatible: true },
        // Cancel while the prepare is out: the run is cancelled when the prepare answers.
        (P::Preparing { cancel: false }, I::Cancel) => P::Preparing { cancel: true },
        (P::Preparing { cancel: true }, I::Cancel) => phase,
        // Cancelled while preparing: prepared, it is finalised without copy-back; back
        // incompatible, nothing was touched and it is done.
        (P::Preparing { cancel: true }, I::Prepared) => P::Finalising,
        (P::Preparing { cancel: true }, I::Incompatible) => P::Done,
        // A failed prepare keeps its own verdict, cancelled or not.
        (P::Preparing { .. }, I::PrepareFailed(Class::RunOnly)) => P::Finalising,
        (P::Preparing { .. }, I::PrepareFailed(Class::Poison)) => P::Done,

        (P::Prepared, I::Launch) => P::Launching,
        (P::Prepared, I::StreamsFailed(Class::RunOnly)) => P::Finalising,
        (P::Prepared, I::StreamsFailed(Class::Poison)) => P::Done,
        (P::Prepared, I::Cancel) => P::Finalising,

        (P::Launching, I::Launched) => P::Launched,
        (P::Launching, I::LaunchFailed(Class::RunOnly)) => P::Finalising,
        (P::Launching, I::LaunchFailed(Class::Poison)) => P::Done,

        (P::Launched, I::Await) => P::Awaiting,

        (P::Awaiting, I::Completed) => P::ReadingStatus,
        (P::Awaiting, I::CompletedFaulted | I::CompletionFailed | I::DeadlineExpired) => P::Done,

        (P::ReadingStatus, I::JudgedOk | I::JudgedFailed(Class::RunOnly)) => P::Finalising,
        (P::ReadingStatus, I::JudgedFailed(Class::Poison) | I::StatusReadFailed) => P::Done,

        (P::Finalising, I::Finalised | I::FinaliseFailed(_)) => P::Done,

        (
            P::Launching | P::Launched | P::Awaiting | P::ReadingStatus | P::Finalising,
            I::Cancel,
        ) => {
            return Err(Refusal::LaunchedRunsFinish);
        }
        _ => return Err(Refusal::NotExpected),
    };
    Ok(next)
}

/// What the lane emits with a run's transition from `input` to `next` (for the table).
///
/// A run-only failure is finalised without copy-back; a poison-class failure ends the run at
/// once and starts recovery with `DrainDevice` (its resources go with the device reset).
#[must_use]
pub const fn effects(input: RunInput, next: RunPhase) -> &'static str {
    use RunInput as I;
    match (input, next) {
        (I::Prepare, _) => "`PrepareRun`",
        (I::Launch, _) => "`LaunchRun`",
        (I::Await, _) => "`AwaitCompletion`",
        (I::Completed, _) => "`ReadStatus`",
        (I::JudgedOk, _) => "`FinaliseRun` with copy-back",
        (_, RunPhase::Finalising) => "`FinaliseRun`, no copy-back",
        (I::Abandon, _) => "none (abandoned with the device)",
        (I::Cancel, RunPhase::Preparing { .. }) => "none: cancelled when the prepare answers",
        (I::Incompatible, RunPhase::Queued { .. }) => {
            "none: prepared again once no unfinished run is before it"
        }
        (I::Incompatible, RunPhase::Done) => "none: settled `Cancelled` (nothing was touched)",
        (
            I::PrepareFailed(Class::Poison)
            | I::StreamsFailed(Class::Poison)
            | I::LaunchFailed(Class::Poison)
            | I::CompletedFaulted
            | I::CompletionFailed
            | I::DeadlineExpired
            | I::JudgedFailed(Class::Poison)
            | I::StatusReadFailed
            | I::FinaliseFailed(Class::Poison),
            _,
        ) => "poison: `DrainDevice`",
        _ => "none",
    }
}

/// The per-run phase machine as a Markdown table: every (phase, input) pair with its next
/// phase and what the lane emits with the transition.
#[must_use]
pub fn run_phase_table() -> String {
    let mut out = String::new();
    out.push_str("# Run phase machine\n\n");
    out.push_str(
        "Rendered from `lane_core::run::step`, the only place a run's phase changes. One row \
         per (phase, input) pair. `RunOnly`/`Poison` is the class status-latch gives the \
         failure. `effects` is what the lane emits with the transition (SPEC §6: state x event \
         -> next state + effects). A refused input is an event the lane did not ask for: the \
         lane rejects it with a typed error and changes nothing.\n\n",
    );
    out.push_str("| phase | input | next phase | effects |\n|---|---|---|---|\n");
    for phase in RunPhase::ALL {
        for input in RunInput::ALL {
            let (next, effects) = match step(phase, input) {
                Ok(next) if next == phase => (format!("{next:?} (unchanged)"), "none"),
                Ok(next) => (format!("**{next:?}**"), effects(input, next)),
                Err(refusal) => (format!("refused: {}", refusal.reason()), "none"),
            };
            let _ = writeln!(
                out,
                "| {phase:?} | {} | {next} | {effects} |",
                input_label(input)
            );
        }
    }
    out
}

fn input_label(input: RunInput) -> String {
    match input {
        RunInput::PrepareFailed(c) => format!("PrepareFailed({c:?})"),
        RunInput::StreamsFailed(c) => format!("StreamsFailed({c:?})"),
        RunInput::LaunchFailed(c) => format!("LaunchFailed({c:?})"),
        RunInput::JudgedFailed(c) => format!("JudgedFailed({c:?})"),
        RunInput::FinaliseFailed(c) => format!("FinaliseFailed({c:?})"),
        other => format!("{other:?}"),
    }
}
