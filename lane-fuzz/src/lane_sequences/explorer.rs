//! What the exhaustive explorer ([`crate::explore`]) reads and does beyond the
//! operations. Apart from the body so the explorer's surface reads in one place.

use lane_core::{Effect, Event, Lane};

use super::{Accepted, Body, Kind, Reply, is_runner_work, pick_ref};

/// What the exhaustive explorer ([`crate::explore`]) reads and does beyond the operations.
impl Body {
    /// The lane under test.
    pub(crate) const fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The outstanding effects asked for since the last poison, in the order
    /// [`Op::Answer`] indexes them.
    pub(crate) fn current_effects(&self) -> Vec<Effect> {
        self.answerable().into_iter().map(|at| self.outstanding[at].effect).collect()
    }

    /// How many outstanding effects were asked for before the last poison (abandoned with
    /// the device, so their answers are stale).
    pub(crate) fn abandoned(&self) -> usize {
        self.outstanding
            .iter()
            .filter(|o| o.epoch != self.epoch && !is_runner_work(&o.effect))
            .count()
    }

    /// Feeds the success answer to the abandoned effect at `index % abandoned`: a stale
    /// answer, which the lane may accept only if it also answers a current effect.
    pub(crate) fn answer_abandoned(&mut self, index: u8) -> Result<(), String> {
        let stale: Vec<usize> = (0..self.outstanding.len())
            .filter(|&at| {
                let o = &self.outstanding[at];
                o.epoch != self.epoch && !is_runner_work(&o.effect)
            })
            .collect();
        let Some(&at) = pick_ref(&stale, index) else {
            return Ok(());
        };
        let effect = self.outstanding.remove(at).effect;
        let (event, _) = self.reply(effect, Reply::Success);
        self.feed(event, Kind::Wrong)
    }

    /// `Lane::retry_teardown` (the explorer's last-drop step), then the invariants.
    pub(crate) fn retry_teardown(&mut self) -> Result<(), String> {
        self.lane.retry_teardown(self.now);
        self.after_call()
    }

    /// [`Op::Answer`], then the same event fed again: a duplicated answer, which the lane
    /// may accept only if it also answers another outstanding effect.
    pub(crate) fn answer_twice(&mut self, index: u8, reply: Reply) -> Result<(), String> {
        let current = self.answerable();
        let Some(&at) = pick_ref(&current, index) else {
            return Ok(());
        };
        let effect = self.outstanding[at].effect;
        let (event, kind) = self.reply(effect, reply);
        self.feed(event, kind)?;
        self.feed(event, Kind::Wrong)
    }

    /// The events the lane accepted, in order (the first 64; [`Self::events_accepted`] counts
    /// them all).
    pub(crate) fn history(&self) -> &[Event] {
        &self.history
    }

    /// How many events the lane accepted so far.
    pub(crate) const fn events_accepted(&self) -> usize {
        self.events_accepted
    }

    /// How many runs and how many publications the lane accepted so far.
    pub(crate) fn accepted_counts(&self) -> (usize, usize) {
        let runs = self.accepted.iter().filter(|a| a.run.is_some()).count();
        (runs, self.accepted.len() - runs)
    }

    /// Whether `close` was called.
    pub(crate) const fn closed(&self) -> bool {
        self.closed
    }

    /// How many live reservations the body holds.
    pub(crate) fn reservations(&self) -> usize {
        self.reserved.len()
    }

    /// Whether a fault notice was acted on.
    pub(crate) const fn noticed(&self) -> bool {
        self.noticed
    }

    /// The canonical text of everything that decides what happens next: the lane's
    /// fingerprint and every record the checks read. Left out: what only names behaviours
    /// reached, the outcomes already checked, and the event history (the explorer replays
    /// only the event it just fed, in the same action).
    pub(crate) fn key_text(&self) -> String {
        let outstanding: Vec<(bool, Effect)> =
            self.outstanding.iter().map(|o| (o.epoch == self.epoch, o.effect)).collect();
        let accepted: Vec<(u64, bool, bool, bool)> =
            self.accepted.iter().map(|a| (a.seq, a.delivered, a.held, a.cancel_asked)).collect();
        format!(
            "{}|{}|{outstanding:?}|{:?}|{accepted:?}|{:?}|{:?},{:?},{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}|{:?},{}|{:?}",
            self.lane.fingerprint().as_str(),
            self.now,
            self.poisons,
            self.evidence,
            self.last_prepare,
            self.last_launch,
            self.last_await,
            (&self.on_pair, self.drains),
            self.uploaded,
            self.reserved,
            self.former_leases,
            self.next_handle,
            self.closed,
            self.noticed,
            self.runner_epochs,
            self.last_epoch,
            self.upload_asked,
        )
    }
}

impl Body {
    /// What the explorer's run controls may name: the [`Op::Cancel`] index of each pending
    /// item, and the [`Op::Activate`] index of each pending held run.
    pub(crate) fn control_targets(&self) -> (Vec<u8>, Vec<u8>) {
        let pending: Vec<&Accepted> = self.accepted.iter().filter(|a| !a.delivered).collect();
        let cancels = (0..pending.len()).filter_map(|at| u8::try_from(at).ok()).collect();
        let activates = pending
            .iter()
            .filter(|a| a.run.is_some())
            .enumerate()
            .filter(|(_, a)| a.held)
            .filter_map(|(at, _)| u8::try_from(at).ok())
            .collect();
        (cancels, activates)
    }

    /// Whether a run without its outcome was submitted held and not activated.
    pub(crate) fn holds_a_run(&self) -> bool {
        self.accepted.iter().any(|a| a.held && !a.delivered)
    }

    /// The accepted items without an outcome yet: `(seq, is a run)`, in submission order.
    pub(crate) fn pending_items(&self) -> Vec<(u64, bool)> {
        self.accepted.iter().filter(|a| !a.delivered).map(|a| (a.seq, a.run.is_some())).collect()
    }
}
