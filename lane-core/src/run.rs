//! The per-run phase machine: one table, consulted by the lane for every phase change.
//!
//! A run moves `Queued → Preparing → Prepared → Launching → Launched → Awaiting →
//! ReadingStatus → Finalising → Done`, may fall back from `Preparing` to `Queued` (an
//! incompatible prepare), passes through `Attributing` when its device verdict returned a
//! code and runs queued behind it were covered (L-8a), and reaches `Done` early on failure,
//! cancel or device reset.
//!
//! Each phase holds its own data: the cancel that waits for a prepare's answer, the pair
//! readying for a launch, an unfenced launch's code, the completion deadline, the evidence
//! the status read is judged with, and the verdict being finalised or final. [`step`] is the
//! only place a phase changes, device resets included (`Abandon`): it returns the next phase
//! and one [`RunAction`], which the lane performs in one place and the rendered table's
//! effects column describes. An input it refuses is an event the lane did not ask for, and
//! the lane rejects that event without changing anything. An input the lane decided itself
//! and `step` refuses is a lane bug, reported by
//! [`Lane::check_invariants`](crate::Lane::check_invariants).

use core::fmt::Write as _;

use status_latch::{AclCode, Boundary, Class, Evidence, Failure, RecordRead};

use crate::ids::{RunId, Timestamp};
use crate::outcome::{Cause, Verdict};

/// Where a run is in its life, with the data that phase holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    Prepared {
        /// Its turn came and the pair asked for stream results first (a create, or a
        /// replacement destroy): the run launches when they arrive, and fails with them if
        /// they fail.
        readying_pair: bool,
    },
    /// `LaunchRun` was emitted; the run holds a submission on the stream pair.
    Launching,
    /// Both kernels are enqueued, and both completion events unless `unfenced`.
    Launched {
        /// The code of the fence call (core_done, the AICPU stream's wait, the boundary)
        /// that failed after a kernel was accepted: nothing of the run's own can prove it
        /// done, so it is awaited through the device verdict alone and holds back every later
        /// launch (L-5, L-8).
        unfenced: Option<AclCode>,
    },
    /// The oldest launched run: `AwaitCompletion` was emitted.
    Awaiting {
        /// When the wait fails the run (and poisons): the await's start plus the profile's
        /// completion timeout (SPEC §5.4).
        deadline: Timestamp,
        /// As in `Launched`.
        unfenced: Option<AclCode>,
    },
    /// Its device verdict returned a code and runs queued behind it were on the pair:
    /// `ReadRecords` was emitted for their records, by which the lane charges the code (L-8a).
    /// The run still holds its submission.
    Attributing {
        /// What the completion waiter answered, the synchronize's codes not yet attributed.
        evidence: Evidence,
    },
    /// Its boundary completed and the verdict rule did not poison on the evidence alone (its
    /// submission retired `Complete`); `ReadStatus` was emitted for its timing and the header
    /// fallback.
    ReadingStatus {
        /// What the completion proved, judged again with the header (L-8).
        evidence: Evidence,
    },
    /// The verdict is decided pending finalisation; `FinaliseRun` was emitted, with copy-back
    /// only for `Ok`.
    Finalising {
        /// The verdict the finalise's answer makes final (a failed finalise fails an `Ok`
        /// run; an earlier failure or a cancel stands).
        verdict: Verdict,
    },
    /// Terminal: the verdict is final; the outcome is delivered in submission order.
    Done {
        /// The final verdict.
        verdict: Verdict,
    },
}

/// Representative values for the rendered table and the exhaustive checks: a cause of each
/// class, a deadline, the evidence of a clean run, the code of a failed fence.
pub mod representative {
    use super::{AclCode, Boundary, Cause, Evidence, Failure, RecordRead, RunId, Timestamp};
    use crate::outcome::Verdict;
    use status_latch::{DeviceVerdict, Record, VerdictChannel};

    /// A run-only cause (a copy-back that failed validation).
    #[must_use]
    pub fn run_only() -> Cause {
        Cause::of(Failure::CopyBackValidation)
    }

    /// A poison cause (the host's completion deadline passed).
    #[must_use]
    pub fn poison() -> Cause {
        Cause::of(Failure::HostWaitTimeout)
    }

    /// A completion deadline.
    pub const DEADLINE: Timestamp = Timestamp(50_000_000_000);

    /// The code of a fence call that failed after a kernel was accepted.
    pub const UNFENCED: AclCode = AclCode::RtParamInvalid;

    /// What a clean run's completion proves (its own ok record).
    pub const EVIDENCE: Evidence = Evidence::PUBLISHED_OK;

    /// What an unfenced run's completion proves: nothing of its own.
    pub const UNFENCED_EVIDENCE: Evidence = Evidence {
        channel: VerdictChannel::Record,
        boundary: Boundary::Unfenced(UNFENCED),
        record: RecordRead::NotRead,
        device: None,
    };

    /// What a run that published no record learned when its synchronize returned a code
    /// (AICPU 507018), not attributed yet (L-8a).
    pub const RETURNED_EVIDENCE: Evidence = Evidence {
        channel: VerdictChannel::Record,
        boundary: Boundary::Complete,
        record: RecordRead::Read(Record::NeverPublished { stamp: 0 }),
        device: Some(DeviceVerdict::Returned {
            aicpu: Some(AclCode::RtAicpuException),
            aicore: None,
        }),
    };

    /// The verdict a run taken down by another run's poison gets.
    #[must_use]
    pub fn poisoned() -> Verdict {
        Verdict::Poisoned { cause: poison(), origin: RunId(1) }
    }
}

impl RunPhase {
    /// One value of every phase shape, in life order (data from [`representative`]): the
    /// rows of the rendered table.
    #[must_use]
    pub fn all() -> [Self; 17] {
        use representative as rep;
        [
            Self::Queued { incompatible: false },
            Self::Queued { incompatible: true },
            Self::Preparing { cancel: false },
            Self::Preparing { cancel: true },
            Self::Prepared { readying_pair: false },
            Self::Prepared { readying_pair: true },
            Self::Launching,
            Self::Launched { unfenced: None },
            Self::Launched { unfenced: Some(rep::UNFENCED) },
            Self::Awaiting { deadline: rep::DEADLINE, unfenced: None },
            Self::Awaiting { deadline: rep::DEADLINE, unfenced: Some(rep::UNFENCED) },
            Self::Attributing { evidence: rep::RETURNED_EVIDENCE },
            Self::ReadingStatus { evidence: rep::EVIDENCE },
            Self::Finalising { verdict: Verdict::Ok },
            Self::Finalising { verdict: Verdict::Failed { cause: rep::run_only() } },
            Self::Finalising { verdict: Verdict::Cancelled },
            // One row set: `Done` refuses every input whatever its verdict.
            Self::Done { verdict: Verdict::Ok },
        ]
    }

    /// Whether the run holds a submission on the stream pair.
    #[must_use]
    pub const fn on_pair(self) -> bool {
        matches!(
            self,
            Self::Launching
                | Self::Launched { .. }
                | Self::Awaiting { .. }
                | Self::Attributing { .. }
        )
    }

    /// Whether the run no longer holds back its successors' preparation and launch: it has
    /// launched, or it never will (its verdict is being finalised). Not proof that it reached
    /// a stream: a run whose prepare failed is finalised without launching.
    #[must_use]
    pub const fn past_launch(self) -> bool {
        matches!(
            self,
            Self::Launching
                | Self::Launched { .. }
                | Self::Awaiting { .. }
                | Self::Attributing { .. }
                | Self::ReadingStatus { .. }
                | Self::Finalising { .. }
        )
    }

    /// Whether the run waits for its turn to prepare.
    #[must_use]
    pub const fn is_queued(self) -> bool {
        matches!(self, Self::Queued { .. })
    }

    /// Whether the run is prepared and not launched yet (readying the pair or not).
    #[must_use]
    pub const fn is_prepared(self) -> bool {
        matches!(self, Self::Prepared { .. })
    }

    /// Whether the run is the one awaited.
    #[must_use]
    pub const fn is_awaiting(self) -> bool {
        matches!(self, Self::Awaiting { .. })
    }

    /// Whether the run has its verdict.
    #[must_use]
    pub const fn is_done(self) -> bool {
        matches!(self, Self::Done { .. })
    }

    /// The code of the fence call that left the run unfenced, while it is on the pair.
    #[must_use]
    pub const fn unfenced(self) -> Option<AclCode> {
        match self {
            Self::Launched { unfenced } | Self::Awaiting { unfenced, .. } => unfenced,
            Self::Attributing { evidence: Evidence { boundary: Boundary::Unfenced(code), .. } } => {
                Some(code)
            }
            _ => None,
        }
    }

    /// The verdict decided so far: pending while finalising, final once done.
    #[must_use]
    pub const fn verdict(self) -> Option<Verdict> {
        match self {
            Self::Finalising { verdict } | Self::Done { verdict } => Some(verdict),
            _ => None,
        }
    }

    /// The phase as the rendered [`run_phase_table`] labels it (its first column): its shape,
    /// without the values it holds (the deadline, the evidence, the codes), and for
    /// `Finalising` the verdict's kind; `Done` is one row whatever its verdict.
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Self::Queued { incompatible } => format!("Queued {{ incompatible: {incompatible} }}"),
            Self::Preparing { cancel } => format!("Preparing {{ cancel: {cancel} }}"),
            Self::Prepared { readying_pair } => {
                format!("Prepared {{ readying_pair: {readying_pair} }}")
            }
            Self::Launching => "Launching".to_owned(),
            Self::Launched { unfenced } => {
                format!("Launched {{ unfenced: {} }}", unfenced.is_some())
            }
            Self::Awaiting { unfenced, .. } => {
                format!("Awaiting {{ deadline, unfenced: {} }}", unfenced.is_some())
            }
            Self::Attributing { .. } => "Attributing { evidence }".to_owned(),
            Self::ReadingStatus { .. } => "ReadingStatus { evidence }".to_owned(),
            Self::Finalising { verdict } => format!("Finalising {{ verdict: {} }}", verdict.name()),
            Self::Done { .. } => "Done".to_owned(),
        }
    }

    /// The label of a phase a transition leads to: [`label`](Self::label), and for `Done` the
    /// verdict's kind it ends with.
    fn next_label(self) -> String {
        match self {
            Self::Done { verdict } => format!("Done {{ verdict: {} }}", verdict.name()),
            other => other.label(),
        }
    }
}

/// What can happen to a run: lane decisions and backend reports, with the cause of a failure
/// (its class decides the next phase) and the data the next phase holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunInput {
    /// The lane emits `PrepareRun`.
    Prepare,
    /// `Prepared` arrived.
    Prepared,
    /// `PrepareIncompatible` arrived: back to the queue, keeping place and lease.
    Incompatible,
    /// `PrepareFailed` arrived, with its cause.
    PrepareFailed(Cause),
    /// The run's turn to launch came and the pair asked for stream results first.
    ReadyPair,
    /// The lane emits `LaunchRun` (the pair accepted the submission).
    Launch,
    /// Readying the pair for this run's launch failed (stream create or destroy).
    StreamsFailed(Cause),
    /// `Launched` arrived.
    Launched,
    /// `LaunchFailed` at a fence record or wait arrived, with its code: the kernels may run
    /// and the run is launched unfenced (L-5).
    LaunchedUnfenced(AclCode),
    /// `LaunchFailed` before or at a kernel arrived (`NotStarted` is run-only, `Partial`
    /// poisons).
    LaunchFailed(Cause),
    /// `LaunchDeclined` arrived: the runner declined the launch before anything of the run
    /// reached a kernel. `queued`: the launch was queued behind a run on the pair, so the run
    /// waits and launches again once the pair is empty; a launch with nothing ahead of it
    /// cannot be deferred, and its decline fails the run (`NotStarted`, 207000).
    LaunchDeclined {
        /// Whether the declined launch was queued behind a run on the pair.
        queued: bool,
    },
    /// The lane emits `AwaitCompletion` (the run became the oldest launched), with its
    /// deadline.
    Await(Timestamp),
    /// `Completed` arrived with a code the synchronize returned, and runs queued behind were
    /// on the pair: their records decide whose code it is (L-8a).
    Attribute(Evidence),
    /// `Completed` (or, attributing, `RecordsRead`) arrived and the verdict rule, on its
    /// evidence, did not poison.
    Completed(Evidence),
    /// `Completed` arrived and the verdict rule, on its evidence alone, poisons (a device
    /// verdict's code, a record error that poisons, a failed record read, an unfenced run).
    CompletedFaulted(Cause),
    /// `CompletionFailed` arrived (always poison).
    CompletionFailed(Cause),
    /// The completion deadline passed (always poison: the work may still be running).
    DeadlineExpired,
    /// `StatusRead` arrived and the verdict rule judged the run `Ok` (L-8).
    JudgedOk,
    /// `StatusRead` arrived and the verdict rule judged the run failed.
    JudgedFailed(Cause),
    /// `StatusReadFailed` arrived (always poison).
    StatusReadFailed(Cause),
    /// `Finalised` arrived.
    Finalised,
    /// `FinaliseFailed` arrived.
    FinaliseFailed(Cause),
    /// The lane is closing: a run that did not launch is cancelled.
    Cancel,
    /// A device poison (another run's) or a fault notice: the device is reset, the run's
    /// resources are abandoned, and it is done at once with this verdict.
    Abandon(Verdict),
}

impl RunInput {
    /// One value of every input shape, failures with a cause of each class that decides
    /// (data from [`representative`]), in table order.
    #[must_use]
    pub fn all() -> [Self; 30] {
        use representative as rep;
        let (run_only, poison) = (rep::run_only(), rep::poison());
        [
            Self::Prepare,
            Self::Prepared,
            Self::Incompatible,
            Self::PrepareFailed(run_only),
            Self::PrepareFailed(poison),
            Self::ReadyPair,
            Self::Launch,
            Self::StreamsFailed(run_only),
            Self::StreamsFailed(poison),
            Self::Launched,
            Self::LaunchedUnfenced(rep::UNFENCED),
            Self::LaunchFailed(run_only),
            Self::LaunchFailed(poison),
            Self::LaunchDeclined { queued: true },
            Self::LaunchDeclined { queued: false },
            Self::Await(rep::DEADLINE),
            Self::Attribute(rep::RETURNED_EVIDENCE),
            Self::Completed(rep::EVIDENCE),
            Self::CompletedFaulted(poison),
            Self::CompletionFailed(poison),
            Self::DeadlineExpired,
            Self::JudgedOk,
            Self::JudgedFailed(run_only),
            Self::JudgedFailed(poison),
            Self::StatusReadFailed(poison),
            Self::Finalised,
            Self::FinaliseFailed(run_only),
            Self::FinaliseFailed(poison),
            Self::Cancel,
            Self::Abandon(rep::poisoned()),
        ]
    }

    /// The input as the rendered table labels it: its shape, with the class of its cause
    /// where the class decides the next phase.
    #[must_use]
    pub fn label(self) -> String {
        let class = |cause: Cause| format!("{:?}", cause.class());
        match self {
            Self::PrepareFailed(c) => format!("PrepareFailed({})", class(c)),
            Self::StreamsFailed(c) => format!("StreamsFailed({})", class(c)),
            Self::LaunchFailed(c) => format!("LaunchFailed({})", class(c)),
            Self::JudgedFailed(c) => format!("JudgedFailed({})", class(c)),
            Self::FinaliseFailed(c) => format!("FinaliseFailed({})", class(c)),
            Self::CompletedFaulted(_) => "CompletedFaulted".to_owned(),
            Self::CompletionFailed(_) => "CompletionFailed".to_owned(),
            Self::StatusReadFailed(_) => "StatusReadFailed".to_owned(),
            Self::LaunchedUnfenced(_) => "LaunchedUnfenced".to_owned(),
            Self::Await(_) => "Await".to_owned(),
            Self::Attribute(_) => "Attribute".to_owned(),
            Self::Completed(_) => "Completed".to_owned(),
            Self::Abandon(_) => "Abandon".to_owned(),
            Self::LaunchDeclined { queued: true } => "LaunchDeclined(Queued)".to_owned(),
            Self::LaunchDeclined { queued: false } => "LaunchDeclined(Alone)".to_owned(),
            other => format!("{other:?}"),
        }
    }
}

/// What the lane does with a run's transition, besides changing its phase: the one value
/// [`step`] returns with the next phase, performed in one place by the lane, and the
/// effects column of the rendered table ([`describe`](Self::describe)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunAction {
    /// Nothing: the run waits for its next input.
    Wait,
    /// Emit `PrepareRun`.
    Prepare,
    /// Emit `LaunchRun` on the pair's streams.
    Launch,
    /// The launch was declined while queued: its submission leaves the pair (S-2 withdraw,
    /// nothing stale), and the run launches again once the pair is empty (depth one behind
    /// its retired predecessor).
    Defer,
    /// Emit `AwaitCompletion` with the phase's deadline (unfenced: the device verdict alone).
    Await,
    /// Emit `ReadRecords` for the runs on the pair behind this one (L-8a).
    ReadCovered,
    /// Emit `ReadStatus`.
    ReadStatus,
    /// Emit `FinaliseRun` for the phase's verdict: with copy-back only for `Ok`.
    Finalise,
    /// The verdict is final: free the run's slot (the outcome waits its turn).
    Settle,
    /// The run poisoned the device with its verdict's cause: every other item is taken down
    /// and recovery starts (L-10).
    Poison,
}

impl RunAction {
    /// What the lane emits, as the table's effects column shows it; `next` is the phase the
    /// transition leads to (a finalise copies back only for `Ok`).
    #[must_use]
    pub const fn describe(self, next: RunPhase) -> &'static str {
        match self {
            Self::Wait => "none",
            Self::Prepare => "`PrepareRun`",
            Self::Launch => "`LaunchRun`",
            Self::Defer => "none: withdrawn from the pair; launches again once the pair is empty",
            Self::Await => "`AwaitCompletion`",
            Self::ReadCovered => "`ReadRecords` for the runs queued behind",
            Self::ReadStatus => "`ReadStatus`",
            Self::Finalise => match next {
                RunPhase::Finalising { verdict: Verdict::Ok } => "`FinaliseRun` with copy-back",
                _ => "`FinaliseRun`, no copy-back",
            },
            Self::Settle => "none: the verdict is final, the slot is freed",
            Self::Poison => "poison: every other item taken down; recovery (`DrainDevice`)",
        }
    }
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

/// The one transition function of a run: the next phase and what the lane does with it, or
/// why the input is refused.
///
/// A run-only failure is finalised without copy-back; a poison-class failure ends the run at
/// once with its cause and poisons (its resources go with the device reset).
// Inlined into the lane's few callers, where the input is often a constant: the hot path
// of every run.
#[inline(always)]
pub fn step(phase: RunPhase, input: RunInput) -> Result<(RunPhase, RunAction), Refusal> {
    use RunAction as A;
    use RunInput as I;
    use RunPhase as P;
    // A failure: finalised (run-only) or the device poisoned (poison).
    let failed = |cause: Cause| {
        let verdict = Verdict::Failed { cause };
        match cause.class() {
            Class::RunOnly => (P::Finalising { verdict }, A::Finalise),
            Class::Poison => (P::Done { verdict }, A::Poison),
        }
    };
    // A failure that poisons whatever its class: completion was not proven.
    let poisoned = |cause: Cause| (P::Done { verdict: Verdict::Failed { cause } }, A::Poison);
    let next = match (phase, input) {
        (P::Done { .. }, _) => return Err(Refusal::AlreadyDone),
        (_, I::Abandon(verdict)) => (P::Done { verdict }, A::Settle),

        (P::Queued { .. }, I::Prepare) => (P::Preparing { cancel: false }, A::Prepare),
        (P::Queued { .. }, I::Cancel) => (P::Done { verdict: Verdict::Cancelled }, A::Settle),

        (P::Preparing { cancel: false }, I::Prepared) => {
            (P::Prepared { readying_pair: false }, A::Wait)
        }
        (P::Preparing { cancel: false }, I::Incompatible) => {
            (P::Queued { incompatible: true }, A::Wait)
        }
        // Close while the prepare is out: the run is cancelled when the prepare answers.
        (P::Preparing { .. }, I::Cancel) => (P::Preparing { cancel: true }, A::Wait),
        // Cancelled while preparing: prepared, it is finalised without copy-back; back
        // incompatible, nothing was touched and it is done.
        (P::Preparing { cancel: true }, I::Prepared) => {
            (P::Finalising { verdict: Verdict::Cancelled }, A::Finalise)
        }
        (P::Preparing { cancel: true }, I::Incompatible) => {
            (P::Done { verdict: Verdict::Cancelled }, A::Settle)
        }
        // A failed prepare keeps its own verdict, cancelled or not.
        (P::Preparing { .. }, I::PrepareFailed(cause)) => failed(cause),

        (P::Prepared { .. }, I::ReadyPair) => (P::Prepared { readying_pair: true }, A::Wait),
        (P::Prepared { .. }, I::Launch) => (P::Launching, A::Launch),
        (P::Prepared { readying_pair: true }, I::StreamsFailed(cause)) => failed(cause),
        (P::Prepared { .. }, I::Cancel) => {
            (P::Finalising { verdict: Verdict::Cancelled }, A::Finalise)
        }

        (P::Launching, I::Launched) => (P::Launched { unfenced: None }, A::Wait),
        // Unfenced (L-5): the kernels may run, and nothing of the run's own can prove them
        // done. It stays on the pair as launched, awaited through the device verdict alone
        // (L-8), and holds back every later launch.
        (P::Launching, I::LaunchedUnfenced(code)) => {
            (P::Launched { unfenced: Some(code) }, A::Wait)
        }
        (P::Launching, I::LaunchFailed(cause)) => failed(cause),
        // The runner declined a launch queued behind a run: not a failure, the run waits for
        // the pair to empty. With nothing ahead there is nothing to wait for.
        (P::Launching, I::LaunchDeclined { queued: true }) => {
            (P::Prepared { readying_pair: false }, A::Defer)
        }
        (P::Launching, I::LaunchDeclined { queued: false }) => failed(declined_alone()),

        (P::Launched { unfenced }, I::Await(deadline)) => {
            (P::Awaiting { deadline, unfenced }, A::Await)
        }

        // An unfenced run's completion proves nothing of its own: the verdict rule poisons it
        // on its evidence alone (`CompletedFaulted`), never through a status read.
        (P::Awaiting { unfenced: None, .. }, I::Completed(evidence)) => {
            (P::ReadingStatus { evidence }, A::ReadStatus)
        }
        (P::Awaiting { .. }, I::CompletedFaulted(cause) | I::CompletionFailed(cause)) => {
            poisoned(cause)
        }
        // L-8a: the synchronize returned a code and covered runs queued behind: their records
        // say whose code it is. The run keeps its submission meanwhile.
        (P::Awaiting { .. }, I::Attribute(evidence)) => {
            (P::Attributing { evidence }, A::ReadCovered)
        }
        // Attributed: another run's code is judged as a clean device verdict (a fenced run
        // goes on to its status read); this run's own poisons.
        (
            P::Attributing { evidence: Evidence { boundary: Boundary::Complete, .. } },
            I::Completed(evidence),
        ) => (P::ReadingStatus { evidence }, A::ReadStatus),
        (P::Attributing { .. }, I::CompletedFaulted(cause)) => poisoned(cause),
        (P::Awaiting { .. }, I::DeadlineExpired) => poisoned(Cause::of(Failure::HostWaitTimeout)),

        (P::ReadingStatus { .. }, I::JudgedOk) => {
            (P::Finalising { verdict: Verdict::Ok }, A::Finalise)
        }
        (P::ReadingStatus { .. }, I::JudgedFailed(cause)) => failed(cause),
        (P::ReadingStatus { .. }, I::StatusReadFailed(cause)) => poisoned(cause),

        (P::Finalising { verdict }, I::Finalised) => (P::Done { verdict }, A::Settle),
        // The first failure wins: a run that already failed (or was cancelled) keeps its
        // verdict; an `Ok` run fails with the finalise's cause.
        (P::Finalising { verdict }, I::FinaliseFailed(cause)) => match cause.class() {
            Class::RunOnly => {
                let verdict = match verdict {
                    Verdict::Ok => Verdict::Failed { cause },
                    earlier => earlier,
                };
                (P::Done { verdict }, A::Settle)
            }
            Class::Poison => poisoned(cause),
        },

        (
            P::Launching
            | P::Launched { .. }
            | P::Awaiting { .. }
            | P::Attributing { .. }
            | P::ReadingStatus { .. }
            | P::Finalising { .. },
            I::Cancel,
        ) => {
            return Err(Refusal::LaunchedRunsFinish);
        }
        _ => return Err(Refusal::NotExpected),
    };
    Ok(next)
}

/// The cause of a declined launch that was not queued behind a run (nothing to wait for): a
/// `NotStarted` launch failure with 207000 (`ACL_ERROR_RT_FEATURE_NOT_SUPPORT`), run-only.
#[must_use]
pub fn declined_alone() -> Cause {
    Cause::of(Failure::Launch {
        progress: status_latch::LaunchProgress::NotStarted,
        code: AclCode::RtFeatureNotSupport,
    })
}

/// The per-run phase machine as a Markdown table: a row per accepted (phase, input) pair
/// with its next phase and what the lane does with the transition
/// ([`RunAction::describe`]), and per phase one row of what it refuses and why.
#[must_use]
pub fn run_phase_table() -> String {
    let mut out = String::new();
    out.push_str("# Run phase machine\n\n");
    out.push_str(
        "Rendered from `lane_core::run::step`, the only place a run's phase changes. One row \
         per input a phase accepts, then one `*refuses*` row: why it refuses the others, \
         `every other input` being those it has no row or group for (a test checks that \
         every (phase, input) pair is exactly one of them). A phase is shown by its shape: the values it holds (the \
         deadline, the evidence, an unfenced launch's code) are not, and `Finalising` shows \
         its verdict's kind. `RunOnly`/`Poison` is the class status-latch gives the failure; \
         a failure named without a class poisons whatever its class. `effects` is generated \
         from the `RunAction` the step returns, which the lane performs in one place (SPEC \
         §6: state x event -> next state + effects). A refused input is an event the lane did \
         not ask for: the lane rejects it with a typed error and changes nothing.\n\n",
    );
    let inputs = RunInput::all();
    let labels: Vec<String> = inputs.iter().map(|input| input.label()).collect();
    out.push_str("| phase | input | next phase | effects |\n|---|---|---|---|\n");
    for phase in RunPhase::all() {
        let mut refused = Vec::new();
        for (input, label) in inputs.into_iter().zip(&labels) {
            let (next, effects) = match step(phase, input) {
                Ok((next, _)) if next == phase => (format!("{} (unchanged)", next.label()), "none"),
                Ok((next, action)) => (format!("**{}**", next.next_label()), action.describe(next)),
                Err(refusal) => {
                    refused.push((label.clone(), refusal.reason()));
                    continue;
                }
            };
            let _ = writeln!(out, "| {} | {label} | {next} | {effects} |", phase.label());
        }
        crate::table::write_refusals(&mut out, &phase.label(), &refused, labels.len());
    }
    out
}
