//! The body's commands to the lane (submit, publish, notices, resets, cancels,
//! activations, reservations, timeouts), each checked against what the body can see.
//! Apart from [`super`] for length: one file per side of the body.

use lane_core::status_latch::AclCode;
use lane_core::{
    CodeRef, ControlError, Effect, ItemOrder, LaneState, PublicationId, PublishError, RunId,
    RunRequest, SubmitError, Tag,
};

use super::{Accepted, B, Body};
use crate::pick;

impl Body {
    pub(super) fn submit(&mut self, request: RunRequest) -> Result<(), String> {
        let state = self.lane.state();
        let slots = usize::from(self.lane.profile().slots());
        let held = self.undelivered(true) + self.reserved.len();
        let reservation =
            request.lease.and_then(|lease| self.reserved.iter().position(|l| *l == lease));
        let tag_holder = request.tag.and_then(|tag| {
            self.accepted.iter().find(|a| !a.delivered && a.run == Some(Some(tag))).map(|a| a.seq)
        });
        // The epoch rule (L-8): non-zero, above the last accepted, never mixed.
        let epoch_refused =
            self.runner_epochs.is_some_and(|carried| carried != request.epoch.is_some())
                || request.epoch.is_some_and(|e| e == 0 || e <= self.last_epoch);
        let result = self.lane.submit(self.now, request);
        match result {
            Ok(run) => {
                if state != LaneState::Open {
                    return Err(format!("accepted {run} in state {state:?}"));
                }
                if epoch_refused {
                    return Err(format!("accepted {run} with epoch {:?}", request.epoch));
                }
                self.runner_epochs = Some(request.epoch.is_some());
                if let Some(epoch) = request.epoch {
                    self.last_epoch = epoch;
                }
                if let Some(lease) = request.lease {
                    let Some(at) = reservation else {
                        return Err(format!("accepted {run} on {lease}, not a live reservation"));
                    };
                    self.reserved.remove(at);
                    self.former_leases.push(lease);
                    self.reach(B::ReservedUsed);
                } else if held >= slots {
                    return Err(format!(
                        "accepted {run} holding {held} runs and reservations on {slots} slots"
                    ));
                }
                self.accept(run.0, Some(request.tag), request.diagnostics)?;
                if let Some(accepted) = self.accepted.last_mut() {
                    accepted.key = request.key;
                    accepted.held = request.held;
                    accepted.was_held = request.held;
                    accepted.epoch = request.epoch;
                }
            }
            Err(error) => {
                let consistent = match error {
                    SubmitError::Full { .. } => {
                        self.reach(B::RefusedFull);
                        request.lease.is_none() && held >= slots
                    }
                    SubmitError::Closed => {
                        self.reach(B::RefusedClosed);
                        self.closed
                            || matches!(
                                state,
                                LaneState::ReleasingStreams { .. } | LaneState::Closed { .. }
                            )
                    }
                    SubmitError::Poisoned { .. } | SubmitError::Lost { .. } => {
                        self.reach(B::RefusedPoisoned);
                        matches!(state, LaneState::Recovering { .. } | LaneState::Lost)
                    }
                    SubmitError::Suspect { notice } => {
                        self.reach(B::RefusedPoisoned);
                        self.lane.notice() == Some(notice)
                            && matches!(
                                state,
                                LaneState::Suspect { .. } | LaneState::Recovering { .. }
                            )
                    }
                    SubmitError::LostAfterNotice { notice } => {
                        self.reach(B::RefusedPoisoned);
                        self.lane.notice() == Some(notice) && state == LaneState::Lost
                    }
                    SubmitError::Unusable { origin, .. } => {
                        self.reach(B::RefusedUnusable);
                        state == LaneState::Unusable
                            && self.lane.poison().map(|p| p.origin) == Some(origin)
                    }
                    SubmitError::UnusableAfterNotice { notice } => {
                        self.reach(B::RefusedUnusable);
                        state == LaneState::Unusable && self.lane.notice() == Some(notice)
                    }
                    SubmitError::StaleLease { lease } => {
                        self.reach(B::RefusedStaleLease);
                        request.lease == Some(lease) && reservation.is_none()
                    }
                    SubmitError::Epoch { epoch, .. } => {
                        self.reach(B::RefusedEpoch);
                        epoch_refused && epoch == request.epoch.unwrap_or(0)
                    }
                    SubmitError::DuplicateRun { tag, run } => {
                        self.reach(B::RefusedDuplicate);
                        request.tag == Some(tag)
                            && self
                                .accepted
                                .iter()
                                .any(|a| a.seq == run.0 && !a.delivered && a.run == Some(Some(tag)))
                    }
                };
                if !consistent {
                    return Err(format!("submit refused with {error:?} ({error})"));
                }
                let fits = match request.lease {
                    None => held < slots,
                    Some(_) => reservation.is_some(),
                };
                if state == LaneState::Open
                    && !self.closed
                    && fits
                    && tag_holder.is_none()
                    && !epoch_refused
                {
                    return Err(format!("an open lane with room refused {request:?}: {error:?}"));
                }
            }
        }
        self.after_call()
    }

    pub(super) fn publish(&mut self, code: CodeRef) -> Result<(), String> {
        let state = self.lane.state();
        match self.lane.publish(self.now, code) {
            Ok(publication) => {
                if state != LaneState::Open {
                    return Err(format!("accepted {publication} in state {state:?}"));
                }
                self.accept(publication.0, None, false)?;
            }
            Err(PublishError::Full) if self.undelivered(false) >= 2 => {}
            Err(PublishError::Closed) if state != LaneState::Open => {}
            Err(PublishError::Poisoned { .. } | PublishError::Lost { .. })
                if matches!(state, LaneState::Recovering { .. } | LaneState::Lost) => {}
            Err(PublishError::Suspect { .. })
                if matches!(state, LaneState::Suspect { .. } | LaneState::Recovering { .. }) => {}
            Err(PublishError::LostAfterNotice { .. }) if state == LaneState::Lost => {}
            Err(PublishError::Unusable { .. } | PublishError::UnusableAfterNotice { .. })
                if state == LaneState::Unusable => {}
            Err(error) => return Err(format!("publish refused with {error:?} in state {state:?}")),
        }
        self.after_call()
    }

    /// A matched fault notice: an open or closing lane becomes suspect; any other ignores it.
    pub(super) fn notice(&mut self, n: u8) -> Result<(), String> {
        let state = self.lane.state();
        let raw = [507_015, 507_018, 107_000][usize::from(n % 3)];
        let notice = lane_core::FaultNotice {
            device: 0,
            stream_id: u32::from(n),
            code: AclCode::from_raw(raw).unwrap_or(AclCode::Unknown(raw)),
        };
        let acted = self.lane.fault_notice(self.now, notice);
        let expected = matches!(state, LaneState::Open | LaneState::Closing);
        if acted != expected {
            return Err(format!("a fault notice in state {state:?} acted: {acted}"));
        }
        if acted {
            self.noticed = true;
            self.reach(B::Suspected);
        }
        self.after_call()
    }

    /// The runtime's report of its reset (L-24): accepted exactly when the lane awaits it,
    /// which then reopens (and asks the backend to forget every handle).
    pub(super) fn device_reset(&mut self) -> Result<(), String> {
        let state = self.lane.state();
        let result = self.lane.device_reset(self.now);
        match (result, state) {
            (Ok(()), LaneState::Unusable) => {
                if self.lane.state() != LaneState::Open {
                    return Err(format!("reopened into {:?}", self.lane.state()));
                }
                self.reach(B::ResetAdopted);
            }
            (Ok(()), other) => return Err(format!("a reset report was accepted in {other:?}")),
            (Err(_), LaneState::Unusable) => {
                return Err("the reset report the lane awaits was refused".to_owned());
            }
            (Err(_), _) => return self.after_call(),
        }
        // The adopted reset is asked in this call, while the lane still counts as handed over.
        self.after_call()?;
        if !self.adopt_asked {
            return Err("the runtime's reset was adopted without AdoptReset".to_owned());
        }
        self.handed_over = false;
        self.adopt_asked = false;
        Ok(())
    }

    fn accept(
        &mut self,
        seq: u64,
        run: Option<Option<Tag>>,
        diagnostics: bool,
    ) -> Result<(), String> {
        if let Some(last) = self.accepted.last() {
            if seq <= last.seq {
                return Err(format!("minted id {seq} after {}", last.seq));
            }
        }
        self.accepted.push(Accepted {
            seq,
            run,
            diagnostics,
            delivered: false,
            key: None,
            held: false,
            was_held: false,
            epoch: None,
            cancel_asked: false,
        });
        Ok(())
    }

    /// Where `run` stands in the lane's order.
    pub(super) fn order_of(&self, run: RunId) -> ItemOrder {
        ItemOrder { seq: run.0, key: self.accepted_item(run.0).and_then(|a| a.key) }
    }

    /// The accepted item with sequence number `seq`.
    pub(super) fn accepted_item(&self, seq: u64) -> Option<&Accepted> {
        self.accepted.iter().find(|a| a.seq == seq)
    }

    /// An accepted item for a control, runs only with `runs`: with the top bit of `index`
    /// clear a pending one (`index % pending`), set a delivered one; either way the other
    /// when there is none.
    fn pick_item(&self, index: u8, runs: bool) -> Option<Accepted> {
        let of = |delivered: bool| -> Vec<Accepted> {
            self.accepted
                .iter()
                .filter(|a| a.delivered == delivered && (!runs || a.run.is_some()))
                .copied()
                .collect()
        };
        let (first, second) =
            if index & 0x80 == 0 { (of(false), of(true)) } else { (of(true), of(false)) };
        pick(&first, index & 0x7F).or_else(|| pick(&second, index & 0x7F))
    }

    /// `activate` (a run control): accepted exactly for a held run not activated yet whose
    /// verdict is not decided; a run with its outcome delivered is unknown.
    pub(super) fn activate(&mut self, index: u8) -> Result<(), String> {
        let Some(item) = self.pick_item(index, true) else {
            return Ok(());
        };
        let run = RunId(item.seq);
        match self.lane.activate(self.now, run) {
            Ok(()) => {
                if item.delivered || !item.held {
                    return Err(format!("activated {run}, which is not held ({item:?})"));
                }
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == item.seq) {
                    a.held = false;
                }
            }
            Err(error) => {
                self.reach(B::ControlRefused);
                let consistent = match error {
                    ControlError::Unknown { item: i } => i == item.seq && item.delivered,
                    ControlError::NotHeld { run: r } => r == run && !item.held && !item.delivered,
                    // Its verdict is decided: the body sees it only once delivered.
                    ControlError::Finished { item: i, .. } => i == item.seq && !item.delivered,
                    ControlError::Launched { .. } | ControlError::Uploading { .. } => false,
                };
                if !consistent {
                    return Err(format!("activate of {run} refused: {error} ({item:?})"));
                }
            }
        }
        self.after_call()
    }

    /// `cancel` of a run or `cancel_publication` (a run control): a run is cancelled only
    /// before its launch was asked, refused as launched only after; a publication is refused
    /// only once its upload was asked.
    pub(super) fn cancel(&mut self, index: u8) -> Result<(), String> {
        let Some(item) = self.pick_item(index, false) else {
            return Ok(());
        };
        let launched = self.evidence.iter().any(|(r, e)| r.0 == item.seq && e.launch_asked);
        let uploading = self.outstanding.iter().any(|o| {
            matches!(o.effect, Effect::UploadCode { publication, .. } if publication.0 == item.seq)
        });
        let result = if item.run.is_some() {
            self.lane.cancel(self.now, RunId(item.seq))
        } else {
            self.lane.cancel_publication(self.now, PublicationId(item.seq))
        };
        match result {
            Ok(()) => {
                if item.delivered || launched || uploading {
                    return Err(format!("cancelled {}, past its start ({item:?})", item.seq));
                }
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == item.seq) {
                    a.cancel_asked = true;
                }
            }
            Err(error) => {
                self.reach(B::ControlRefused);
                let consistent = match error {
                    ControlError::Unknown { item: i } => i == item.seq && item.delivered,
                    ControlError::Launched { run } => run.0 == item.seq && launched,
                    ControlError::Uploading { publication } => {
                        publication.0 == item.seq && self.uploaded_or_uploading(item.seq)
                    }
                    // Its outcome is decided (a failed prepare, finalising, taken down): not
                    // delivered yet.
                    ControlError::Finished { item: i, .. } => i == item.seq && !item.delivered,
                    ControlError::NotHeld { .. } => false,
                };
                if !consistent {
                    return Err(format!("cancel of {} refused: {error} ({item:?})", item.seq));
                }
            }
        }
        self.after_call()
    }

    /// Whether the upload of publication `seq` was asked (answered or not).
    fn uploaded_or_uploading(&self, seq: u64) -> bool {
        self.upload_asked.contains(&seq)
    }

    pub(super) fn reserve(&mut self) -> Result<(), String> {
        let slots = usize::from(self.lane.profile().slots());
        let held = self.undelivered(true) + self.reserved.len();
        let state = self.lane.state();
        match self.lane.reserve(self.now) {
            Ok(lease) => {
                if held >= slots || state != LaneState::Open {
                    return Err(format!(
                        "reserved {lease} holding {held} of {slots} slots in state {state:?}"
                    ));
                }
                if usize::from(lease.slot.0) >= slots
                    || self.reserved.iter().any(|l| l.slot == lease.slot)
                {
                    return Err(format!("reserved {lease}, a slot that is not free"));
                }
                self.reserved.push(lease);
            }
            Err(SubmitError::Full { .. }) if held >= slots => {}
            Err(_) if state != LaneState::Open => {}
            Err(error) => return Err(format!("reserve refused with {error:?}")),
        }
        self.after_call()
    }

    pub(super) fn drop_reservations(&mut self) {
        self.former_leases.append(&mut self.reserved);
    }

    pub(super) fn timeout(&mut self) -> Result<(), String> {
        if self.lane.poll_deadline().is_some_and(|d| d <= self.now) {
            self.reach(B::DeadlineExpired);
        }
        self.lane.handle_timeout(self.now);
        self.after_call()?;
        if let Some(deadline) = self.lane.poll_deadline() {
            if deadline <= self.now {
                return Err(format!(
                    "handle_timeout({}) left a run awaited past its deadline {deadline}",
                    self.now
                ));
            }
        }
        Ok(())
    }
}
