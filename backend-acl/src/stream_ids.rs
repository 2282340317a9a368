//! Which stream ids a device fault notice may name and still concern the device (L-19,
//! decision 0025). Pure: the time comes in as a value (the device's clock, `Device::now`).
//!
//! - A live stream's id matches.
//! - A destroyed stream's id matches for [`LATE_NOTICE_BOUND_NS`] after its destroy: a late
//!   notice may name it, and no reset has recovered the device since.
//! - An id of a stream a force reset killed, or destroyed before one, matches nothing for
//!   [`LATE_NOTICE_BOUND_NS`] after it died, even when a live stream has taken the number:
//!   the reset already recovered whatever such a notice reports.
//! - Past the bound a dead stream's id is forgotten; only a live stream's matches.

use std::collections::VecDeque;

use lane_core::Timestamp;
use lane_core::stream_pair::StreamHandle;

/// How late the lane takes a device fault notice to be, at most (decision 0025): 32 s, twice
/// the 16 s measured (device-truth §4): how long a dead stream's id is remembered.
pub const LATE_NOTICE_BOUND_NS: u64 = 32_000_000_000;

/// The most dead stream ids a device remembers within [`LATE_NOTICE_BOUND_NS`]: past it,
/// the oldest is forgotten early. A lane kills two streams a recovery, and its probe one
/// stream an attempt, so this is never reached in practice.
pub const RECENT_STREAM_IDS: usize = 64;

/// A stream that died: its id, when, and the device's force reset count then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dead {
    id: u32,
    at: Timestamp,
    /// [`StreamIds::resets`] when it died: below the count now, it died before (or at) the
    /// last force reset.
    resets: u64,
}

/// One device's stream ids: the live streams', and those of the streams that died less than
/// [`LATE_NOTICE_BOUND_NS`] ago. Public so that a device the runtime supplies (L-22: lane-capi's
/// table of device operations) matches notices by the same rule as [`AclDevice`](crate::AclDevice).
#[derive(Debug, Default)]
pub struct StreamIds {
    /// Live streams with an id, oldest first.
    live: Vec<(StreamHandle, u32)>,
    /// Dead streams' ids, oldest first, at most [`RECENT_STREAM_IDS`].
    dead: VecDeque<Dead>,
    /// Force resets of this device so far.
    resets: u64,
}

impl StreamIds {
    /// A stream was created with `id` (`aclrtStreamGetId`).
    pub fn created(&mut self, stream: StreamHandle, id: u32, now: Timestamp) {
        self.forget_expired(now);
        self.live.push((stream, id));
    }

    /// `stream` was destroyed at `now` (a stream with no id is not here: nothing happens).
    pub fn destroyed(&mut self, stream: StreamHandle, now: Timestamp) {
        self.forget_expired(now);
        if let Some(index) = self.live.iter().position(|(s, _)| *s == stream) {
            let (_, id) = self.live.remove(index);
            self.died(id, now);
        }
    }

    /// The device was force-reset at `now`: every live stream died with it.
    pub fn reset(&mut self, now: Timestamp) {
        self.forget_expired(now);
        for (_, id) in std::mem::take(&mut self.live) {
            self.died(id, now);
        }
        self.resets = self.resets.saturating_add(1);
    }

    /// Whether a notice naming `id`, read at `now`, concerns this device.
    pub fn concerns(&self, id: u32, now: Timestamp) -> bool {
        let recent = |d: &&Dead| d.id == id && now.since(d.at) < LATE_NOTICE_BOUND_NS;
        let mut dead = self.dead.iter().filter(recent);
        if dead.clone().any(|d| d.resets < self.resets) {
            // Killed by or before the last reset: that reset recovered the device already.
            return false;
        }
        dead.next().is_some() || self.live.iter().any(|(_, i)| *i == id)
    }

    /// The ids a notice read at `now` may name and concern this device: the recently
    /// destroyed ones, oldest first, then the live ones, oldest first; each once.
    pub fn matching(&self, now: Timestamp) -> Vec<u32> {
        let candidates = self
            .dead
            .iter()
            .filter(|d| d.resets == self.resets && now.since(d.at) < LATE_NOTICE_BOUND_NS)
            .map(|d| d.id);
        let mut ids = Vec::new();
        for id in candidates.chain(self.live.iter().map(|(_, id)| *id)) {
            if !ids.contains(&id) && self.concerns(id, now) {
                ids.push(id);
            }
        }
        ids
    }

    fn died(&mut self, id: u32, at: Timestamp) {
        if self.dead.len() == RECENT_STREAM_IDS {
            self.dead.pop_front();
        }
        self.dead.push_back(Dead { id, at, resets: self.resets });
    }

    /// Drops the dead ids past the bound at `now`.
    fn forget_expired(&mut self, now: Timestamp) {
        while self.dead.front().is_some_and(|d| now.since(d.at) >= LATE_NOTICE_BOUND_NS) {
            self.dead.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUND: u64 = LATE_NOTICE_BOUND_NS;
    const S1: StreamHandle = StreamHandle(0x10);
    const S2: StreamHandle = StreamHandle(0x20);

    const fn at(ns: u64) -> Timestamp {
        Timestamp(ns)
    }

    #[test]
    fn a_live_id_matches_at_any_time_and_an_unknown_one_never() {
        let mut ids = StreamIds::default();
        ids.created(S1, 7, at(0));
        assert!(ids.concerns(7, at(0)));
        assert!(ids.concerns(7, at(100 * BOUND)));
        assert!(!ids.concerns(8, at(0)));
        assert_eq!(ids.matching(at(5)), vec![7]);
    }

    #[test]
    fn a_destroyed_id_matches_for_the_bound_after_its_destroy_then_never() {
        let mut ids = StreamIds::default();
        ids.created(S1, 7, at(0));
        ids.destroyed(S1, at(1_000));
        assert!(ids.concerns(7, at(1_000)));
        assert!(ids.concerns(7, at(1_000 + BOUND - 1)));
        assert!(!ids.concerns(7, at(1_000 + BOUND)));
        assert_eq!(ids.matching(at(1_000 + BOUND)), Vec::<u32>::new());
        // Forgotten at the next change past the bound.
        ids.created(S2, 8, at(1_000 + BOUND));
        assert!(ids.dead.is_empty());
    }

    #[test]
    fn a_destroy_of_a_stream_without_an_id_changes_nothing() {
        let mut ids = StreamIds::default();
        ids.created(S1, 7, at(0));
        ids.destroyed(S2, at(1));
        assert_eq!(ids.matching(at(2)), vec![7]);
        assert!(ids.dead.is_empty());
    }

    #[test]
    fn an_id_killed_by_a_reset_matches_nothing_for_the_bound_even_on_a_live_stream() {
        let mut ids = StreamIds::default();
        ids.created(S1, 1, at(0));
        ids.created(S2, 2, at(0));
        ids.destroyed(S2, at(10));
        ids.reset(at(20));
        assert!(!ids.concerns(1, at(20)), "killed by the reset");
        assert!(!ids.concerns(2, at(20)), "destroyed before the reset");
        // The device reuses the numbers.
        ids.created(StreamHandle(0x30), 1, at(30));
        ids.created(StreamHandle(0x40), 2, at(30));
        assert!(!ids.concerns(1, at(20 + BOUND - 1)), "shadowed");
        assert!(!ids.concerns(2, at(10 + BOUND - 1)), "shadowed");
        assert!(ids.concerns(2, at(10 + BOUND)), "the live stream's alone");
        assert!(ids.concerns(1, at(20 + BOUND)), "the live stream's alone");
        assert_eq!(ids.matching(at(20 + BOUND)), vec![1, 2]);
    }

    #[test]
    fn a_reused_id_destroyed_after_the_reset_is_still_shadowed_by_the_older_death() {
        let mut ids = StreamIds::default();
        ids.created(S1, 1, at(0));
        ids.reset(at(10));
        ids.created(S2, 1, at(20));
        ids.destroyed(S2, at(30));
        assert!(!ids.concerns(1, at(31)), "the pre-reset stream's notice may be it");
        assert!(
            ids.concerns(1, at(10 + BOUND)),
            "then the destroyed stream of this generation's, until its own bound"
        );
        assert!(!ids.concerns(1, at(30 + BOUND)));
    }

    #[test]
    fn a_live_id_with_no_reset_since_a_destroy_of_the_same_number_matches() {
        let mut ids = StreamIds::default();
        ids.created(S1, 1, at(0));
        ids.destroyed(S1, at(10));
        ids.created(S2, 1, at(20));
        assert!(ids.concerns(1, at(20)));
        assert!(ids.concerns(1, at(10 + BOUND)));
        assert_eq!(ids.matching(at(20)), vec![1]);
    }

    #[test]
    fn a_second_reset_keeps_the_first_resets_ids_shadowed_until_their_bound() {
        let mut ids = StreamIds::default();
        ids.created(S1, 1, at(0));
        ids.reset(at(10));
        ids.reset(at(20));
        ids.created(S2, 1, at(30));
        assert!(!ids.concerns(1, at(10 + BOUND - 1)));
        assert!(ids.concerns(1, at(10 + BOUND)));
    }

    #[test]
    fn past_the_cap_the_oldest_dead_id_is_forgotten_first() {
        let mut ids = StreamIds::default();
        for n in 0..=RECENT_STREAM_IDS as u64 {
            let id = u32::try_from(n).unwrap_or(u32::MAX);
            ids.created(StreamHandle(n), id, at(n));
            ids.destroyed(StreamHandle(n), at(n));
        }
        assert_eq!(ids.dead.len(), RECENT_STREAM_IDS);
        assert!(!ids.concerns(0, at(100)), "the oldest went first");
        assert!(ids.concerns(1, at(100)));
    }
}
