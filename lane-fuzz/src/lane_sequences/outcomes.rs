//! Checking each outcome the lane delivers against what happened, and the final drain
//! that answers everything until the lane asks for nothing more.
//! Apart from [`super`] for length: one file per side of the body.

use lane_core::status_latch::Class;
use lane_core::{ItemOrder, Outcome, PublicationResult, Verdict};

use super::{B, Body, FINAL_ANSWERS_MAX, Reply, is_runner_work, recorded};

impl Body {
    /// One outcome: an accepted item's without one, ahead of every other such item in the
    /// lane's order (L-2: submission order, but for a keyed run placed ahead of keyed runs
    /// with a greater key), consistent with what happened.
    pub(super) fn delivered(&mut self, outcome: Outcome) -> Result<(), String> {
        let Some(at) = self.accepted.iter().position(|a| !a.delivered && a.seq == outcome.seq())
        else {
            return Err(format!(
                "{outcome} delivered, but it is no accepted item without its outcome"
            ));
        };
        let order = ItemOrder { seq: outcome.seq(), key: self.accepted[at].key };
        if outcome.order() != order {
            return Err(format!("{outcome} carries {:?}, not {order:?}", outcome.order()));
        }
        if let Some(behind) = self
            .accepted
            .iter()
            .find(|a| !a.delivered && a.seq != order.seq && !order.may_precede(a.order()))
        {
            return Err(format!(
                "{outcome} delivered while item {} stands ahead of it in the lane's order",
                behind.seq
            ));
        }
        if self.accepted.iter().any(|a| !a.delivered && a.seq < order.seq) {
            self.reach(B::PassedStaged);
        }
        self.accepted[at].delivered = true;
        let item = self.accepted[at];
        match outcome {
            // L-26: the outcome frees the run's state, so no callback for it is still out.
            Outcome::Run(r)
                if self
                    .outstanding
                    .iter()
                    .any(|o| is_runner_work(&o.effect) && o.effect.run() == Some(r.run)) =>
            {
                return Err(format!(
                    "{} delivered while its prepare or finalise is still out",
                    r.run
                ));
            }
            Outcome::Run(r) => {
                if item.run != Some(r.tag) {
                    return Err(format!("{} delivered with tag {:?}", r.run, r.tag));
                }
                let evidence = *self.evidence_mut(r.run);
                if r.declines != evidence.declines {
                    return Err(format!(
                        "{} counts {} declined launches, {} were accepted",
                        r.run, r.declines, evidence.declines
                    ));
                }
                let poison_path = match r.verdict {
                    Verdict::Poisoned { .. } => true,
                    Verdict::Failed { cause } => cause.class() == Class::Poison,
                    Verdict::Ok | Verdict::Cancelled => false,
                };
                // L-7: every run that may hold per-run resources is finalised, on every
                // terminal path but a device reset.
                if !poison_path && evidence.holds_resources && evidence.finalise_asked != 1 {
                    return Err(format!(
                        "{} ended {} but was asked to finalise {} times",
                        r.run,
                        r.verdict.name(),
                        evidence.finalise_asked
                    ));
                }
                // L-8: every completed run's status is read before its verdict.
                if !poison_path && evidence.completed && !evidence.status_asked {
                    return Err(format!("{} completed but its status was never read", r.run));
                }
                match r.verdict {
                    Verdict::Ok => {
                        let timing = evidence.clean_status;
                        if !(evidence.completed && timing.is_some() && evidence.finalised) {
                            return Err(format!("{} is Ok with evidence {evidence:?}", r.run));
                        }
                        // L-8: no run is Ok without its own published ok record (or, on the
                        // stream-synchronize channel, a clean device verdict).
                        if !(evidence.published_ok || evidence.synchronized_clean) {
                            return Err(format!(
                                "{} is Ok without a published ok record ({evidence:?})",
                                r.run
                            ));
                        }
                        // L-17: the verdict carries the run's own timing.
                        if r.timing != timing {
                            return Err(format!(
                                "{} carries timing {:?}, its status read {timing:?}",
                                r.run, r.timing
                            ));
                        }
                        self.reach(B::VerdictOk);
                        if item.diagnostics {
                            self.reach(B::Diagnostics);
                        }
                    }
                    Verdict::Failed { cause } => {
                        if cause == lane_core::run::declined_alone() && evidence.declines > 0 {
                            self.reach(B::DeclinedAlone);
                        }
                        if cause.class() == Class::Poison {
                            let by_notice = self.noticed
                                && cause.stage()
                                    == Some(lane_core::status_latch::Stage::FaultNotice);
                            if !by_notice && !recorded(&self.poisons, cause, r.run) {
                                return Err(format!(
                                    "{} failed with a poison no one recorded",
                                    r.run
                                ));
                            }
                            self.reach(B::VerdictOrigin);
                        } else {
                            self.reach(B::VerdictRunOnly);
                        }
                    }
                    Verdict::Poisoned { cause, origin } => {
                        if !recorded(&self.poisons, cause, origin) {
                            return Err(format!("{} poisoned by unrecorded {origin}", r.run));
                        }
                        self.reach(B::VerdictPoisoned);
                    }
                    Verdict::Cancelled => {
                        if !self.closed && !item.cancel_asked {
                            return Err(format!(
                                "{} cancelled but neither close nor its cancel was called",
                                r.run
                            ));
                        }
                        if item.cancel_asked && !self.closed {
                            self.reach(B::CancelledByCaller);
                        }
                        self.reach(B::VerdictCancelled);
                    }
                }
            }
            Outcome::Publication(p) => {
                if item.run.is_some() {
                    return Err(format!("{} delivered for a run", p.publication));
                }
                match p.result {
                    PublicationResult::Uploaded => {
                        if !self.uploaded.contains(&p.publication) {
                            return Err(format!("{} uploaded without Uploaded", p.publication));
                        }
                        self.reach(B::PublicationUploaded);
                    }
                    PublicationResult::Failed { .. } => self.reach(B::PublicationFailed),
                    PublicationResult::Cancelled => {
                        if !self.closed && !item.cancel_asked {
                            return Err(format!("{} cancelled without close", p.publication));
                        }
                        self.reach(B::PublicationCancelled);
                    }
                    PublicationResult::Poisoned { cause, origin } => {
                        if !recorded(&self.poisons, cause, origin) {
                            return Err(format!(
                                "{} poisoned by unrecorded {origin}",
                                p.publication
                            ));
                        }
                        self.reach(B::PublicationPoisoned);
                    }
                }
            }
        }
        self.outcomes.push(outcome);
        Ok(())
    }

    /// The backend answers every outstanding effect with success until the lane asks for
    /// nothing more; then every accepted item must have its outcome. Then a close, answered
    /// the same way, must end `Closed`.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        self.answer_everything()?;
        if self.lane.pending_items() > 0 {
            return Err(format!(
                "stuck: {} items pending with no effect to answer",
                self.lane.pending_items()
            ));
        }
        if let Some(missing) = self.accepted.iter().find(|a| !a.delivered) {
            return Err(format!("item {} never got an outcome", missing.seq));
        }
        let _ = self.lane.close(self.now);
        self.closed = true;
        self.drop_reservations();
        self.after_call()?;
        self.answer_everything()?;
        if !self.lane.state().is_closed() {
            return Err(format!("close, answered in full, left the lane {:?}", self.lane.state()));
        }
        Ok(())
    }

    fn answer_everything(&mut self) -> Result<(), String> {
        for _ in 0..FINAL_ANSWERS_MAX {
            let epoch = self.epoch;
            self.outstanding.retain(|o| o.epoch == epoch || is_runner_work(&o.effect));
            let Some(first) = self.outstanding.first() else {
                // The caller activates what it holds: a held run launches only then.
                let Some(held) = self.accepted.iter().find(|a| a.held && !a.delivered) else {
                    return Ok(());
                };
                let seq = held.seq;
                let index = self
                    .accepted
                    .iter()
                    .filter(|a| a.run.is_some() && !a.delivered)
                    .position(|a| a.seq == seq)
                    .and_then(|at| u8::try_from(at).ok())
                    .unwrap_or(0);
                self.activate(index)?;
                // Activated (or refused as finished): either way it is held no longer here.
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == seq) {
                    a.held = false;
                }
                continue;
            };
            let (event, kind) = self.reply(first.effect, Reply::Success);
            self.feed(event, kind)?;
        }
        Err(format!("livelock: still asking after {FINAL_ANSWERS_MAX} answers"))
    }
}
