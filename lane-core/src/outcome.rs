//! What the lane reports for each accepted item ([`Lane::poll_outcome`](crate::Lane::poll_outcome)).

use core::fmt;

use status_latch::{Class, Classification, Failure, FailureDetail, Stage, classify, failure_line};

use crate::ids::{DeviceTiming, ItemOrder, OrderKey, Overlap, PublicationId, RunId, Tag};

/// Why a run failed: the failure and its classification (through status-latch's one table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    /// What happened: a latched runtime code, an ACL code at a stage, a launch progress, a
    /// host wait timeout.
    pub failure: Failure,
    /// Its class and the documented reason for it.
    pub classification: Classification,
}

impl Cause {
    /// Classifies `failure`.
    #[must_use]
    pub fn of(failure: Failure) -> Self {
        Self { failure, classification: classify(&failure) }
    }

    /// `RunOnly` or `Poison`.
    #[must_use]
    pub const fn class(&self) -> Class {
        self.classification.class
    }

    /// Where it failed (`None` for a latched code, a host wait timeout, a validation failure).
    #[must_use]
    pub const fn stage(&self) -> Option<Stage> {
        self.failure.stage()
    }

    /// The latched runtime code or the ACL return code, as reported.
    #[must_use]
    pub const fn code(&self) -> Option<i32> {
        self.failure.code()
    }

    /// The code's name (`INVALID_ARGS`, `ACL_ERROR_RT_AICORE_EXCEPTION`, ...).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.failure.name()
    }

    /// What to change and run again.
    #[must_use]
    pub const fn hint(&self) -> &'static str {
        self.failure.hint()
    }

    /// The one stable log line for this cause (run, stage, code, name, meaning, class, hint).
    #[must_use]
    pub fn line(&self, run: RunId) -> String {
        failure_line(run.0, &self.failure).to_string()
    }

    /// The line's part after `run N failed` (stage, code, name, meaning, class, hint), for a
    /// failure that belongs to no run: a publication's upload.
    #[must_use]
    pub const fn detail(&self) -> FailureDetail {
        FailureDetail { failure: self.failure, status: None }
    }
}

/// The one final outcome of a run (SPEC §2 "verdict").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The run completed, its latch was clean and it was finalised.
    Ok,
    /// The run failed. When `cause.class()` is `Poison`, this run is the origin of a device
    /// poison: it gets its own cause and every other run taken down gets [`Verdict::Poisoned`].
    /// The exception: at stage `FaultNotice` a device fault notice took the run down before it
    /// launched (L-19); every item it took down carries that same cause.
    Failed {
        /// Why.
        cause: Cause,
    },
    /// The run was taken down by a device failure that another run caused.
    Poisoned {
        /// The origin run's cause.
        cause: Cause,
        /// The run whose failure poisoned the device.
        origin: RunId,
    },
    /// The run was never launched: the lane was closed first, or the caller cancelled it
    /// ([`Lane::cancel`](crate::Lane::cancel)).
    Cancelled,
}

impl Verdict {
    /// Whether this is `Ok`.
    #[must_use]
    pub const fn is_ok(&self) -> bool {
        matches!(self, Self::Ok)
    }

    /// The cause, for `Failed` and `Poisoned`.
    #[must_use]
    pub const fn cause(&self) -> Option<&Cause> {
        match self {
            Self::Failed { cause } | Self::Poisoned { cause, .. } => Some(cause),
            Self::Ok | Self::Cancelled => None,
        }
    }

    /// A short name for traces and tables.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Ok => "Ok",
            Self::Failed { .. } => "Failed",
            Self::Poisoned { .. } => "Poisoned",
            Self::Cancelled => "Cancelled",
        }
    }
}

/// A run's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The run.
    pub run: RunId,
    /// The caller's tag, if the request carried one.
    pub tag: Option<Tag>,
    /// The verdict.
    pub verdict: Verdict,
    /// Device start and end from the run's own timing buffer, when its status was read.
    pub timing: Option<DeviceTiming>,
    /// The run's ordering key, if the request carried one (it decides where the outcome
    /// comes, L-2 as amended).
    pub key: Option<OrderKey>,
    /// How many times the runner declined the run's launch (each time it launched again once
    /// the pair was empty); 0 for most runs.
    pub declines: u32,
}

impl RunOutcome {
    /// The run's proof of overlap ([`DeviceTiming::overlap`]); [`Overlap::Unknown`] when its
    /// status was not read.
    #[must_use]
    pub fn overlap(&self) -> Overlap {
        self.timing.map_or(Overlap::Unknown, |timing| timing.overlap)
    }
}

/// The result of a publication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicationResult {
    /// The code is on the device; the next launch runs on a fresh AICore stream.
    Uploaded,
    /// The upload failed; the AICore stream is stale anyway and is replaced before the next
    /// launch. Publish again to retry.
    Failed {
        /// Why.
        cause: Cause,
    },
    /// The lane was closed before the upload started; nothing was uploaded.
    Cancelled,
    /// A device poison took the publication down before it uploaded; the device was reset,
    /// so every callable must be published again after recovery.
    Poisoned {
        /// The origin run's cause.
        cause: Cause,
        /// The run whose failure poisoned the device.
        origin: RunId,
    },
}

/// A publication's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicationOutcome {
    /// The publication.
    pub publication: PublicationId,
    /// What happened.
    pub result: PublicationResult,
}

/// One outcome per accepted run or publication, delivered in submission order (L-2, L-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A run's verdict.
    Run(RunOutcome),
    /// A publication's result.
    Publication(PublicationOutcome),
}

impl Outcome {
    /// The sequence number of the item (runs and publications share one sequence).
    #[must_use]
    pub const fn seq(&self) -> u64 {
        match self {
            Self::Run(r) => r.run.0,
            Self::Publication(p) => p.publication.0,
        }
    }

    /// Where the item stood in the lane's order (L-2 as amended): outcomes come in that
    /// order, so each one [may precede](ItemOrder::may_precede) every later one.
    #[must_use]
    pub const fn order(&self) -> ItemOrder {
        match self {
            Self::Run(r) => ItemOrder { seq: r.run.0, key: r.key },
            Self::Publication(p) => ItemOrder { seq: p.publication.0, key: None },
        }
    }
}

impl Outcome {
    /// The item whose failure this outcome reports: the run itself when it `Failed`, the
    /// origin when it was `Poisoned`, the publication when its upload failed; `None` for an
    /// outcome without a cause. A backend's text about the failed call belongs to that item.
    #[must_use]
    pub const fn cause_item(&self) -> Option<u64> {
        match self {
            Self::Run(r) => match &r.verdict {
                Verdict::Failed { .. } => Some(r.run.0),
                Verdict::Poisoned { origin, .. } => Some(origin.0),
                Verdict::Ok | Verdict::Cancelled => None,
            },
            Self::Publication(p) => match &p.result {
                PublicationResult::Failed { .. } => Some(p.publication.0),
                PublicationResult::Poisoned { origin, .. } => Some(origin.0),
                PublicationResult::Uploaded | PublicationResult::Cancelled => None,
            },
        }
    }

    /// The stable line, followed by `; device: <text>` when the backend had text about the
    /// failed call (ACL's `aclGetRecentErrMsg`), on one line (line breaks in the text become
    /// spaces). Outcomes without a cause ignore the detail.
    #[must_use]
    pub const fn with_detail<'a>(&'a self, detail: Option<&'a str>) -> WithDetail<'a> {
        WithDetail { outcome: self, detail }
    }
}

/// An outcome's stable line with the backend's text about the failed call
/// ([`Outcome::with_detail`]).
#[derive(Clone, Copy, Debug)]
pub struct WithDetail<'a> {
    outcome: &'a Outcome,
    detail: Option<&'a str>,
}

impl fmt::Display for WithDetail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.outcome)?;
        match self.detail {
            Some(text) if self.outcome.cause_item().is_some() => {
                f.write_str("; device: ")?;
                // One line, so tools that read line by line keep the whole outcome.
                for (at, part) in text.trim().lines().enumerate() {
                    if at > 0 {
                        f.write_str(" ")?;
                    }
                    f.write_str(part.trim())?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Run(r) => match &r.verdict {
                Verdict::Ok => write!(f, "{}: ok", r.run),
                Verdict::Cancelled => write!(f, "{}: cancelled", r.run),
                Verdict::Failed { cause } => write!(f, "{}", cause.line(r.run)),
                Verdict::Poisoned { cause, origin } => {
                    write!(f, "{}: poisoned by {origin}: {}", r.run, cause.line(*origin))
                }
            },
            Self::Publication(p) => match &p.result {
                PublicationResult::Uploaded => write!(f, "{}: uploaded", p.publication),
                PublicationResult::Cancelled => write!(f, "{}: cancelled", p.publication),
                PublicationResult::Failed { cause } => {
                    write!(f, "{}: upload failed{}", p.publication, cause.detail())
                }
                PublicationResult::Poisoned { cause, origin } => {
                    write!(f, "{}: poisoned by {origin}: {}", p.publication, cause.line(*origin))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every outcome line, one test each: the stable text tools grep.

    use status_latch::{AclCode, Failure, Stage};

    use super::*;

    fn acl(stage: Stage) -> Cause {
        Cause::of(Failure::Acl { stage, code: AclCode::from_raw(507_015).expect("non-zero") })
    }

    fn run(verdict: Verdict) -> String {
        Outcome::Run(RunOutcome {
            run: RunId(5),
            tag: None,
            verdict,
            timing: None,
            key: None,
            declines: 0,
        })
        .to_string()
    }

    fn publication(result: PublicationResult) -> String {
        Outcome::Publication(PublicationOutcome { publication: PublicationId(5), result })
            .to_string()
    }

    #[test]
    fn a_failed_runs_line_ends_with_the_devices_text_on_one_line() {
        let outcome = Outcome::Run(RunOutcome {
            run: RunId(5),
            tag: None,
            verdict: Verdict::Failed { cause: acl(Stage::EventWait) },
            timing: None,
            key: None,
            declines: 0,
        });
        assert_eq!(outcome.cause_item(), Some(5));
        let line =
            outcome.with_detail(Some("EZ9999: aicore timeout\n  task 3 on stream 7\n")).to_string();
        assert_eq!(line, format!("{outcome}; device: EZ9999: aicore timeout task 3 on stream 7"));
        assert_eq!(outcome.with_detail(None).to_string(), outcome.to_string());
    }

    #[test]
    fn a_poisoned_items_detail_belongs_to_its_origin() {
        let poisoned = Outcome::Publication(PublicationOutcome {
            publication: PublicationId(6),
            result: PublicationResult::Poisoned { cause: acl(Stage::StatusRead), origin: RunId(3) },
        });
        assert_eq!(poisoned.cause_item(), Some(3));
        assert!(poisoned.with_detail(Some("x")).to_string().ends_with("; device: x"));
    }

    #[test]
    fn an_outcome_without_a_cause_ignores_the_detail() {
        let ok = Outcome::Run(RunOutcome {
            run: RunId(5),
            tag: None,
            verdict: Verdict::Ok,
            timing: None,
            key: None,
            declines: 0,
        });
        assert_eq!(ok.cause_item(), None);
        assert_eq!(ok.with_detail(Some("stale text")).to_string(), "run 5: ok");
    }

    #[test]
    fn a_verdict_says_whether_it_is_ok_and_which_cause_failed_it() {
        let cause = acl(Stage::StatusRead);
        assert_eq!(cause.stage(), Some(Stage::StatusRead));
        assert!(Verdict::Ok.is_ok());
        assert_eq!(Verdict::Ok.cause(), None);
        let failed = Verdict::Failed { cause };
        assert!(!failed.is_ok());
        assert_eq!(failed.cause(), Some(&cause));
        let poisoned = Verdict::Poisoned { cause, origin: RunId(1) };
        assert!(!poisoned.is_ok());
        assert_eq!(poisoned.cause(), Some(&cause));
        assert!(!Verdict::Cancelled.is_ok());
        assert_eq!(Verdict::Cancelled.cause(), None);
    }

    #[test]
    fn an_ok_run_reads_ok() {
        assert_eq!(run(Verdict::Ok), "run 5: ok");
    }

    #[test]
    fn a_cancelled_run_reads_cancelled() {
        assert_eq!(run(Verdict::Cancelled), "run 5: cancelled");
    }

    #[test]
    fn a_failed_run_reads_its_own_failure_line() {
        let cause = acl(Stage::Prepare);
        assert_eq!(run(Verdict::Failed { cause }), cause.line(RunId(5)));
        assert!(run(Verdict::Failed { cause }).starts_with("run 5 failed at prepare: ACL 507015 "));
    }

    #[test]
    fn a_poisoned_run_names_its_origin_and_the_origins_line() {
        let cause = acl(Stage::EventWait);
        let line = run(Verdict::Poisoned { cause, origin: RunId(3) });
        assert_eq!(line, format!("run 5: poisoned by run 3: {}", cause.line(RunId(3))));
    }

    #[test]
    fn an_uploaded_publication_reads_uploaded() {
        assert_eq!(publication(PublicationResult::Uploaded), "publication 5: uploaded");
    }

    #[test]
    fn a_cancelled_publication_reads_cancelled() {
        assert_eq!(publication(PublicationResult::Cancelled), "publication 5: cancelled");
    }

    #[test]
    fn a_failed_upload_reads_as_the_publications_failure_not_a_runs() {
        let cause = acl(Stage::Upload);
        let line = publication(PublicationResult::Failed { cause });
        assert!(line.starts_with("publication 5: upload failed at upload: ACL 507015 "), "{line}");
        assert!(!line.contains("run 5"), "{line}");
        assert!(line.ends_with(&cause.line(RunId(5))["run 5 failed at upload".len()..]));
    }

    #[test]
    fn a_poisoned_publication_names_its_origin_and_the_origins_line() {
        let cause = acl(Stage::StatusRead);
        let line = publication(PublicationResult::Poisoned { cause, origin: RunId(3) });
        assert_eq!(line, format!("publication 5: poisoned by run 3: {}", cause.line(RunId(3))));
    }
}
