//! The per-publication phase machine: one table, consulted by the lane for every phase
//! change of a publication.
//!
//! A publication waits until every earlier item has its outcome, uploads, and is done; it
//! is done early when the lane closes before its upload or a device poison takes it down.

use core::fmt::Write as _;

use crate::outcome::{Cause, PublicationResult};

/// Where a publication is in its life, with its result once it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicationPhase {
    /// Accepted; waiting until every earlier item has its outcome.
    Waiting,
    /// At the front: `UploadCode` was emitted.
    Uploading,
    /// Terminal: the result is final; the outcome is delivered in submission order.
    Done {
        /// The final result.
        result: PublicationResult,
    },
}

impl PublicationPhase {
    /// One value of every phase shape, in life order: the rows of the rendered table.
    pub const ALL: [Self; 3] =
        [Self::Waiting, Self::Uploading, Self::Done { result: PublicationResult::Uploaded }];

    /// Whether the publication has its result.
    #[must_use]
    pub const fn is_done(self) -> bool {
        matches!(self, Self::Done { .. })
    }

    /// The phase as the rendered [`publication_table`] labels it (its first column): `Done`
    /// is one row whatever its result.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Waiting => "Waiting",
            Self::Uploading => "Uploading",
            Self::Done { .. } => "Done",
        }
    }

    /// The label of a phase a transition leads to: `Done` with the kind of its result.
    fn next_label(self) -> String {
        match self {
            Self::Done { result } => format!("Done {{ result: {} }}", result_kind(result)),
            other => other.label().to_owned(),
        }
    }
}

/// The kind of a result, for the table.
const fn result_kind(result: PublicationResult) -> &'static str {
    match result {
        PublicationResult::Uploaded => "Uploaded",
        PublicationResult::Failed { .. } => "Failed",
        PublicationResult::Cancelled => "Cancelled",
        PublicationResult::Poisoned { .. } => "Poisoned",
    }
}

/// What can happen to a publication, with the data its next phase holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicationInput {
    /// The lane emits `UploadCode` (every earlier item has its outcome).
    Upload,
    /// `Uploaded` arrived.
    Uploaded,
    /// `UploadFailed` arrived, with its cause.
    UploadFailed(Cause),
    /// The lane is closing: a publication that did not start uploading is cancelled.
    Cancel,
    /// A device poison or a fault notice: the reset wipes published code, the publication is
    /// done at once with this result.
    Abandon(PublicationResult),
}

impl PublicationInput {
    /// One value of every input shape (data from [`run::representative`](crate::run::representative)),
    /// in table order.
    #[must_use]
    pub fn all() -> [Self; 5] {
        use crate::run::representative as rep;
        [
            Self::Upload,
            Self::Uploaded,
            Self::UploadFailed(rep::run_only()),
            Self::Cancel,
            Self::Abandon(PublicationResult::Poisoned {
                cause: rep::poison(),
                origin: crate::RunId(1),
            }),
        ]
    }

    /// The input as the rendered table labels it: its shape.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Upload => "Upload",
            Self::Uploaded => "Uploaded",
            Self::UploadFailed(_) => "UploadFailed",
            Self::Cancel => "Cancel",
            Self::Abandon(_) => "Abandon",
        }
    }
}

/// What the lane does with a publication's transition, besides changing its phase: the one
/// value [`step`] returns with the next phase, performed in one place by the lane, and the
/// effects column of the rendered table ([`describe`](Self::describe)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PublicationAction {
    /// Nothing.
    None,
    /// Emit `UploadCode`.
    Upload,
    /// The upload answered: uploaded or not, cores may hold instructions from the replaced
    /// code, so the AICore stream is stale and the next launch replaces it (L-12).
    MarkStale,
}

impl PublicationAction {
    /// What the lane does, as the table's effects column shows it.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Upload => "`UploadCode`",
            Self::MarkStale => "AICore stream marked stale",
        }
    }
}

/// Why [`step`] refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PublicationRefusal {
    /// The publication is not in a phase where this input can happen.
    NotExpected,
    /// The publication is done; nothing changes it any more.
    AlreadyDone,
}

impl PublicationRefusal {
    /// A one-line reason for tables and errors.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self {
            Self::NotExpected => "not expected in this phase",
            Self::AlreadyDone => "the publication is done",
        }
    }
}

/// The one transition function of a publication: the next phase and what the lane does with
/// it, or why the input is refused.
pub const fn step(
    phase: PublicationPhase,
    input: PublicationInput,
) -> Result<(PublicationPhase, PublicationAction), PublicationRefusal> {
    use PublicationAction as A;
    use PublicationInput as I;
    use PublicationPhase as P;
    let next = match (phase, input) {
        (P::Done { .. }, _) => return Err(PublicationRefusal::AlreadyDone),
        (_, I::Abandon(result)) => (P::Done { result }, A::None),
        (P::Waiting, I::Cancel) => (P::Done { result: PublicationResult::Cancelled }, A::None),
        (P::Waiting, I::Upload) => (P::Uploading, A::Upload),
        (P::Uploading, I::Uploaded) => {
            (P::Done { result: PublicationResult::Uploaded }, A::MarkStale)
        }
        (P::Uploading, I::UploadFailed(cause)) => {
            (P::Done { result: PublicationResult::Failed { cause } }, A::MarkStale)
        }
        _ => return Err(PublicationRefusal::NotExpected),
    };
    Ok(next)
}

/// The publication machine as a Markdown table: a row per accepted (phase, input) pair with
/// its next phase and what the lane does with the transition
/// ([`PublicationAction::describe`]), and per phase one row of what it refuses and why.
#[must_use]
pub fn publication_table() -> String {
    let mut out = String::new();
    out.push_str("# Publication machine\n\n");
    out.push_str(
        "Rendered from `lane_core::publication::step`, the only place a publication's phase \
         changes. One row per input a phase accepts: the next phase (`Done` with its result's \
         kind) and what the lane does with the transition, generated from the \
         `PublicationAction` the step returns; then one `*refuses*` row: why the phase refuses \
         the others, `every other input` being those it has no row or group for. A refused input is an event the lane did not \
         ask for: the lane rejects it with a typed error and changes nothing.\n\n",
    );
    out.push_str("| phase | input | next phase | effects |\n|---|---|---|---|\n");
    let inputs = PublicationInput::all();
    for phase in PublicationPhase::ALL {
        let mut refused = Vec::new();
        for input in inputs {
            // Every accepted input moves a publication on (the machine has no self-loop),
            // so no row says "unchanged".
            match step(phase, input) {
                Ok((next, action)) => {
                    let _ = writeln!(
                        out,
                        "| {} | {} | **{}** | {} |",
                        phase.label(),
                        input.label(),
                        next.next_label(),
                        action.describe()
                    );
                }
                Err(refusal) => refused.push((input.label().to_owned(), refusal.reason())),
            }
        }
        crate::table::write_refusals(&mut out, phase.label(), &refused, inputs.len());
    }
    out
}
