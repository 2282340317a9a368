//! The per-publication phase machine: one table, consulted by the lane for every phase
//! change of a publication.
//!
//! A publication waits until every earlier item has its outcome, uploads, and is done; it
//! is done early when the lane closes before its upload or a device poison takes it down.

use core::fmt::Write as _;

/// Where a publication is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PublicationPhase {
    /// Accepted; waiting until every earlier item has its outcome.
    Waiting,
    /// At the front: `UploadCode` was emitted.
    Uploading,
    /// Terminal: the result is final; the outcome is delivered in submission order.
    Done,
}

impl PublicationPhase {
    /// Every phase, in life order.
    pub const ALL: [Self; 3] = [Self::Waiting, Self::Uploading, Self::Done];
}

/// What can happen to a publication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PublicationInput {
    /// The lane emits `UploadCode` (every earlier item has its outcome).
    Upload,
    /// `Uploaded` arrived.
    Uploaded,
    /// `UploadFailed` arrived.
    UploadFailed,
    /// The lane is closing: a publication that did not start uploading is cancelled.
    Cancel,
    /// A device poison: the reset wipes published code, the publication is done at once.
    Abandon,
}

impl PublicationInput {
    /// Every input, in table order.
    pub const ALL: [Self; 5] = [
        Self::Upload,
        Self::Uploaded,
        Self::UploadFailed,
        Self::Cancel,
        Self::Abandon,
    ];
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

/// The one transition function of a publication: the next phase, or why the input is
/// refused.
pub const fn step(
    phase: PublicationPhase,
    input: PublicationInput,
) -> Result<PublicationPhase, PublicationRefusal> {
    use PublicationInput as I;
    use PublicationPhase as P;
    let next = match (phase, input) {
        (P::Done, _) => return Err(PublicationRefusal::AlreadyDone),
        (_, I::Abandon) | (P::Waiting, I::Cancel) => P::Done,
        (P::Waiting, I::Upload) => P::Uploading,
        (P::Uploading, I::Uploaded | I::UploadFailed) => P::Done,
        _ => return Err(PublicationRefusal::NotExpected),
    };
    Ok(next)
}

/// What the lane emits with a transition (the backend's work it starts), for the table.
#[must_use]
pub const fn effects(input: PublicationInput) -> &'static str {
    match input {
        PublicationInput::Upload => "`UploadCode`",
        // Uploaded or not, the AICore stream is stale: the next launch replaces it (L-12).
        PublicationInput::Uploaded | PublicationInput::UploadFailed => "AICore stream marked stale",
        PublicationInput::Cancel | PublicationInput::Abandon => "none",
    }
}

/// The publication machine as a Markdown table: every (phase, input) pair with its next
/// phase and effects.
#[must_use]
pub fn publication_table() -> String {
    let mut out = String::new();
    out.push_str("# Publication machine\n\n");
    out.push_str(
        "Rendered from `lane_core::publication::step`, the only place a publication's phase \
         changes. One row per (phase, input) pair: the next phase and what the lane emits \
         with the transition. A refused input is an event the lane did not ask for: the \
         lane rejects it with a typed error and changes nothing.\n\n",
    );
    out.push_str("| phase | input | next phase | effects |\n|---|---|---|---|\n");
    for phase in PublicationPhase::ALL {
        for input in PublicationInput::ALL {
            let (next, effects) = match step(phase, input) {
                Ok(next) if next == phase => (format!("{next:?} (unchanged)"), effects(input)),
                Ok(next) => (format!("**{next:?}**"), effects(input)),
                Err(refusal) => (format!("refused: {}", refusal.reason()), "none"),
            };
            let _ = writeln!(out, "| {phase:?} | {input:?} | {next} | {effects} |");
        }
    }
    out
}
