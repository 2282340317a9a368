//! Feeding an event and checking what the lane then asks for: the answer it must accept,
//! each effect's order and lease, launches' predecessors and recovery steps.
//! Apart from [`super`] for length: one file per side of the body.

use lane_core::status_latch::{DeviceVerdict, Record, RecordRead, VerdictChannel};
use lane_core::{
    Effect, Event, FinaliseOrder, ItemOrder, LaneState, Lease, Peers, Recovery, RecoveryHook, RunId,
};

use super::{B, Body, Evidence, Kind, Outstanding, is_runner_work};

impl Body {
    /// Feeds one event and checks the lane accepted exactly what it should.
    pub(super) fn feed(&mut self, event: Event, kind: Kind) -> Result<(), String> {
        let answers =
            self.answerable().into_iter().find(|&at| answers(&self.outstanding[at].effect, &event));
        let result = self.lane.handle(self.now, event);
        match (&result, answers) {
            (Ok(()), Some(at)) => {
                if self.outstanding.remove(at).epoch != self.epoch {
                    self.reach(B::QuiesceAnswered);
                }
                self.record(event);
            }
            (Ok(()), None) => {
                return Err(format!("accepted {event:?}, which answers no outstanding effect"));
            }
            (Err(error), Some(_)) if kind == Kind::Right => {
                return Err(format!(
                    "refused {event:?}, the right answer to an effect it asked for: {error}"
                ));
            }
            (Err(_), _) => {}
        }
        self.after_call()
    }

    /// Remembers an accepted event: for replays, and as evidence for verdicts.
    fn record(&mut self, event: Event) {
        self.events_accepted += 1;
        if self.history.len() < 64 {
            self.history.push(event);
        }
        match event {
            Event::PrepareIncompatible { .. } => self.reach(B::Incompatible),
            Event::StreamCreateFailed { .. } | Event::StreamDestroyFailed { .. } => {
                self.reach(B::StreamFailure);
            }
            Event::Uploaded { publication } => self.uploaded.push(publication),
            // A launch made before a drain or reset is not in flight after it.
            Event::Launched { run, .. }
                if self
                    .launches
                    .iter()
                    .rev()
                    .find(|(r, _, _)| *r == run)
                    .is_some_and(|(_, _, drains)| *drains == self.drains) =>
            {
                self.on_pair.push(run);
            }
            Event::Completed { run, .. } | Event::CompletionFailed { run, .. } => {
                self.on_pair.retain(|r| *r != run);
            }
            Event::RecordsRead { .. } => self.reach(B::CoveredRead),
            _ => {}
        }
        let Some(run) = event.run() else {
            return;
        };
        let evidence = self.evidence_mut(run);
        match event {
            Event::Prepared { .. } | Event::PrepareFailed { .. } => evidence.holds_resources = true,
            Event::PrepareIncompatible { .. } => evidence.holds_resources = false,
            Event::Completed { evidence: waited, .. } => {
                evidence.completed = true;
                evidence.published_ok = waited.channel == VerdictChannel::Record
                    && waited.record == RecordRead::Read(Record::Ok);
                evidence.synchronized_clean = waited.channel == VerdictChannel::StreamSync
                    && waited.device == Some(DeviceVerdict::Clean);
            }
            // A header latch does not fail a run whose own record was published ok: the
            // record decides it (L-8's first rows), so its status read counts as clean.
            Event::StatusRead { status, timing, .. }
                if status.latched().is_none() || evidence.published_ok =>
            {
                evidence.clean_status = Some(timing);
            }
            Event::Finalised { .. } => {
                evidence.finalised = true;
                evidence.finalise_answered = true;
            }
            Event::FinaliseFailed { .. } => evidence.finalise_answered = true,
            Event::LaunchDeclined { .. } => {
                evidence.declines += 1;
                evidence.launch_asked = false;
            }
            _ => {}
        }
    }

    /// L-5 for a launch's `after`: the predecessors it names, newest first, are launches of
    /// earlier runs (never its own, or a successor's), and with a launched run still in
    /// flight the newest named is that run or a later one launched before it (the executor
    /// waits on the newest whose boundary it recorded). With none in flight it may name none.
    fn check_after(&self, run: RunId, after: Peers<Lease>) -> Result<(), String> {
        // Where each named lease's last launch stands among the launches asked: launches are
        // in the lane's order, so a predecessor's launch comes first (by key a predecessor may
        // carry a larger id than its successor, L-2).
        let mut named: Vec<(usize, RunId)> = Vec::new();
        for lease in after.iter() {
            let Some((at, &(r, _, _))) =
                self.launches.iter().enumerate().rev().find(|(_, (_, l, _))| *l == lease)
            else {
                return Err(format!(
                    "{run}'s launch waits on {lease}, a lease no launch was asked for"
                ));
            };
            if r == run {
                return Err(format!("{run}'s launch waits on its own boundary"));
            }
            if named.last().is_some_and(|(newer, _)| *newer <= at) {
                return Err(format!("{run}'s predecessors {after:?} are not newest first"));
            }
            named.push((at, r));
        }
        let launched_at =
            |r: RunId| self.launches.iter().rposition(|(launched, _, _)| *launched == r);
        match (self.on_pair.last(), named.first()) {
            (Some(latest), None) => Err(format!(
                "{run}'s launch waits on no boundary while {latest} is still in flight"
            )),
            (Some(latest), Some((newest_at, newest)))
                if launched_at(*latest).is_some_and(|latest_at| *newest_at < latest_at) =>
            {
                Err(format!(
                    "{run}'s launch waits on {newest}'s boundary, behind which {latest} is still in flight"
                ))
            }
            _ => Ok(()),
        }
    }

    pub(super) fn evidence_mut(&mut self, run: RunId) -> &mut Evidence {
        let at = match self.evidence.iter().position(|(r, _)| *r == run) {
            Some(at) => at,
            None => {
                self.evidence.push((run, Evidence::default()));
                self.evidence.len() - 1
            }
        };
        &mut self.evidence[at].1
    }

    /// One effect as it is polled: runs are prepared, launched and awaited in submission
    /// order (L-2), an upload waits for every earlier outcome (L-12), a run is finalised at
    /// most once and copies back only after a clean status read (L-7, L-8).
    fn asked(&mut self, effect: Effect) -> Result<(), String> {
        self.check_recovery_effect(effect)?;
        if matches!(
            effect,
            Effect::DrainDevice { .. }
                | Effect::ForceReset { .. }
                | Effect::Hook(RecoveryHook::OnPoison { .. })
        ) {
            // Nothing launched before it is in flight after it (effects run in order).
            self.drains += 1;
            self.on_pair.clear();
        }
        // Each comes in the lane's order (L-2): submission order, but for a keyed run placed
        // ahead of keyed runs with a greater key; `again`: the same run may come twice.
        let in_order = |last: &mut Option<ItemOrder>, this: ItemOrder, again: bool| {
            let ok = last.is_none_or(|l| l.may_precede(this) || (again && l.seq == this.seq));
            *last = Some(this);
            ok
        };
        let ordered = match effect {
            Effect::PrepareRun { run, .. } => {
                // Prepares start in the lane's order; a run answered incompatible prepares
                // again later, possibly after a successor started (prepare window > 1).
                let order = self.order_of(run);
                let evidence = self.evidence_mut(run);
                let again = evidence.prepare_asked;
                evidence.prepare_asked = true;
                again || in_order(&mut self.last_prepare, order, false)
            }
            Effect::LaunchRun { run, lease, aicpu, aicore, after, epoch } => {
                if aicpu == aicore {
                    return Err(format!("{effect:?} launches both kernels on one stream"));
                }
                self.check_launch(run, after, epoch)?;
                self.check_after(run, after)?;
                self.launches.push((run, lease, self.drains));
                let order = self.order_of(run);
                let evidence = self.evidence_mut(run);
                // A declined launch goes again (and only onto an empty pair).
                let again = evidence.declines > 0;
                evidence.launch_asked = true;
                in_order(&mut self.last_launch, order, again)
            }
            Effect::AwaitCompletion { run, .. } => {
                let order = self.order_of(run);
                in_order(&mut self.last_await, order, false)
            }
            Effect::ReadStatus { run, .. } => {
                self.evidence_mut(run).status_asked = true;
                true
            }
            Effect::FinaliseRun { run, copy_back, .. } => {
                let evidence = self.evidence_mut(run);
                evidence.finalise_asked += 1;
                if evidence.finalise_asked > 1 {
                    return Err(format!("{run} asked to finalise twice"));
                }
                if copy_back && evidence.clean_status.is_none() {
                    return Err(format!("{run} asked to copy back without a clean status read"));
                }
                true
            }
            Effect::UploadCode { publication, .. } => {
                self.upload_asked.push(publication.0);
                if let Some(earlier) =
                    self.accepted.iter().find(|a| a.seq < publication.0 && !a.delivered)
                {
                    return Err(format!(
                        "{publication} uploads before item {} has its outcome",
                        earlier.seq
                    ));
                }
                true
            }
            _ => true,
        };
        if ordered { Ok(()) } else { Err(format!("{effect:?} is out of the lane's order")) }
    }

    /// The run controls at a launch: a held run is never launched before its activation,
    /// a declined one only onto an empty pair, the request's epoch is the launch's, and with
    /// `FinaliseOrder::BeforeNextLaunch` every other run launched since the last drain has
    /// its finalise answered.
    fn check_launch(
        &mut self,
        run: RunId,
        after: Peers<Lease>,
        epoch: Option<u64>,
    ) -> Result<(), String> {
        let Some(item) = self.accepted_item(run.0).copied() else {
            return Err(format!("{run} launched, never accepted"));
        };
        if item.held {
            return Err(format!("{run} launched while held"));
        }
        if item.was_held {
            self.reach(B::HeldLaunched);
        }
        if epoch != item.epoch {
            return Err(format!(
                "{run} launched with epoch {epoch:?}, its request's {:?}",
                item.epoch
            ));
        }
        let evidence = *self.evidence_mut(run);
        if evidence.declines > 0 {
            if !after.is_empty() {
                return Err(format!(
                    "{run}'s launch was declined, yet it launches behind {after:?}"
                ));
            }
            self.reach(B::DeclinedRelaunched);
        }
        if self.lane.profile().finalise_order() == FinaliseOrder::BeforeNextLaunch {
            let drains = self.drains;
            let unfinished = self.launches.iter().find(|(r, _, d)| {
                *d == drains
                    && *r != run
                    && self
                        .evidence
                        .iter()
                        .any(|(e_run, e)| e_run == r && e.launch_asked && !e.finalise_answered)
            });
            if let Some((r, _, _)) = unfinished {
                return Err(format!(
                    "{run} launched before {r}'s finalise returned (finalise before next launch)"
                ));
            }
            if self.evidence.iter().any(|(r, e)| *r != run && e.finalise_answered && e.launch_asked)
            {
                self.reach(B::FinaliseFirst);
            }
        }
        Ok(())
    }

    /// L-24: the runner hears of a recovery as the setting says, and once handed over the
    /// lane asks nothing of the device until the runtime's reset is adopted.
    fn check_recovery_effect(&mut self, effect: Effect) -> Result<(), String> {
        let runtime = self.lane.profile().recovery() == Recovery::Runtime;
        if self.handed_over && !matches!(effect, Effect::AdoptReset) {
            return Err(format!("{effect:?} asked after the device was handed over"));
        }
        match effect {
            Effect::Hook(RecoveryHook::OnPoison { .. }) => {
                if !runtime {
                    return Err("OnPoison with in-place recovery".to_owned());
                }
                // L-24 with L-18: no runner work of the lane is out when the runtime may reset.
                if let Some(at) = self
                    .answerable()
                    .into_iter()
                    .find(|&at| is_runner_work(&self.outstanding[at].effect))
                {
                    return Err(format!(
                        "handed over with {:?} still out",
                        self.outstanding[at].effect
                    ));
                }
                self.handed_over = true;
                self.reach(B::HandedOver);
            }
            Effect::Hook(RecoveryHook::BeforeReset { .. } | RecoveryHook::AfterReset { .. })
            | Effect::DrainDevice { .. }
            | Effect::ForceReset { .. }
            | Effect::Probe { .. }
                if runtime =>
            {
                return Err(format!("{effect:?} with the runtime's recovery"));
            }
            Effect::AdoptReset => {
                if !self.handed_over {
                    return Err("AdoptReset without a hand-over".to_owned());
                }
                self.adopt_asked = true;
            }
            _ => {}
        }
        Ok(())
    }

    /// After every lane call: invariants, poison bookkeeping, then drain effects and
    /// outcomes, checking each.
    pub(super) fn after_call(&mut self) -> Result<(), String> {
        if let Err(violation) = self.lane.check_invariants() {
            return Err(violation.to_string());
        }
        let mut taken_down = false;
        if let Some(poison) = self.lane.poison() {
            if self.poisons.last() != Some(&poison) {
                self.poisons.push(poison);
                taken_down = true;
            }
        }
        // A recovery entered without a new poison was entered from a fault notice (L-19):
        // it takes the unlaunched items down just the same. With the runtime's recovery
        // (L-24) the lane may pass through it within the call: its hand-over says so.
        let recovering =
            matches!(self.lane.state(), LaneState::Recovering { .. } | LaneState::Unusable);
        taken_down |= recovering && !self.was_recovering;
        // The driver's order: effects, then outcomes (checked below, in that order).
        let mut effects = Vec::new();
        while let Some(effect) = self.lane.poll_effect() {
            effects.push(effect);
        }
        taken_down |=
            effects.iter().any(|e| matches!(e, Effect::Hook(RecoveryHook::OnPoison { .. })))
                && !self.was_recovering;
        if taken_down {
            // Everything asked for before is abandoned with the device.
            self.epoch += 1;
            self.drop_reservations();
        }
        match self.lane.state() {
            LaneState::Recovering { .. } | LaneState::Unusable => self.was_recovering = true,
            LaneState::Open if self.was_recovering => {
                self.was_recovering = false;
                self.reach(B::Reopened);
            }
            LaneState::Lost => self.reach(B::Lost),
            LaneState::Closed { .. } => self.reach(B::Closed),
            _ => {}
        }
        if self.lane.pair().submissions().len() >= 2 {
            self.reach(B::TwoOnPair);
        }
        let preparing = self
            .current()
            .into_iter()
            .filter(|&at| matches!(self.outstanding[at].effect, Effect::PrepareRun { .. }))
            .count();
        if preparing >= 2 {
            self.reach(B::TwoPreparing);
        }
        // Effects are checked after the outcomes of the same call are in, since an upload
        // may follow an outcome delivered with it.
        while let Some(outcome) = self.lane.poll_outcome() {
            self.delivered(outcome)?;
        }
        for effect in effects {
            self.asked(effect)?;
            // A hook and an adopted reset ask nothing back.
            if matches!(effect, Effect::Hook(_) | Effect::AdoptReset) {
                continue;
            }
            self.outstanding.push(Outstanding { effect, epoch: self.epoch });
        }
        if let Some(deadline) = self.lane.poll_deadline() {
            let awaited = self.current().into_iter().any(|at| {
                matches!(self.outstanding[at].effect, Effect::AwaitCompletion { deadline: d, .. } if d == deadline)
            });
            if !awaited {
                return Err(format!("deadline {deadline} with no outstanding completion await"));
            }
        }
        Ok(())
    }
}

/// Whether `event` is an answer to `effect`: the same run and lease, stream role (and
/// handle), publication, or recovery attempt.
fn answers(effect: &Effect, event: &Event) -> bool {
    match (*effect, *event) {
        (
            Effect::PrepareRun { run, lease, .. },
            Event::Prepared { run: r, lease: l }
            | Event::PrepareIncompatible { run: r, lease: l }
            | Event::PrepareFailed { run: r, lease: l, .. },
        )
        | (
            Effect::LaunchRun { run, lease, .. },
            Event::Launched { run: r, lease: l }
            | Event::LaunchDeclined { run: r, lease: l }
            | Event::LaunchFailed { run: r, lease: l, .. },
        )
        | (
            Effect::AwaitCompletion { run, lease, .. },
            Event::Completed { run: r, lease: l, .. }
            | Event::CompletionFailed { run: r, lease: l, .. },
        )
        | (Effect::ReadRecords { run, lease, .. }, Event::RecordsRead { run: r, lease: l, .. })
        | (
            Effect::ReadStatus { run, lease, .. },
            Event::StatusRead { run: r, lease: l, .. }
            | Event::StatusReadFailed { run: r, lease: l, .. },
        )
        | (
            Effect::FinaliseRun { run, lease, .. },
            Event::Finalised { run: r, lease: l } | Event::FinaliseFailed { run: r, lease: l, .. },
        ) => run == r && lease == l,
        (
            Effect::CreateStream { role },
            Event::StreamCreated { role: r, .. } | Event::StreamCreateFailed { role: r, .. },
        ) => role == r,
        (
            Effect::DestroyStream { role, handle, .. },
            Event::StreamDestroyed { role: r, handle: h }
            | Event::StreamDestroyFailed { role: r, handle: h, .. },
        ) => role == r && handle == h,
        (
            Effect::UploadCode { publication, .. },
            Event::Uploaded { publication: p } | Event::UploadFailed { publication: p, .. },
        ) => publication == p,
        (Effect::DrainDevice { attempt, .. }, Event::DeviceDrained { attempt: a })
        | (
            Effect::ForceReset { attempt },
            Event::ResetDone { attempt: a } | Event::ResetFailed { attempt: a, .. },
        )
        | (
            Effect::Probe { attempt },
            Event::ProbePassed { attempt: a } | Event::ProbeFailed { attempt: a, .. },
        ) => attempt == a,
        _ => false,
    }
}
