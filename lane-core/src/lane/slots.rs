//! Slots and leases: which pipeline slot each run or reservation holds, under which
//! generation. The one place a [`SlotId`] indexes storage and the one capacity check.

use core::num::NonZeroU64;

use crate::error::InvariantViolation;
use crate::ids::{Generation, Lease, RunId, SlotId};
use crate::profile::MAX_SLOTS;

/// What one slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotState {
    Free,
    /// Taken by [`Lane::reserve`](crate::Lane::reserve), not yet used by a run.
    Reserved(Generation),
    /// Leased to a live run.
    Leased {
        generation: Generation,
        run: RunId,
    },
}

/// The profile's slots and the generations minted for them.
///
/// **Invariant** ([`check`](Self::check)): no slot beyond the profile's count is in use, and
/// every slot in use carries its own generation, minted by this table.
#[derive(Clone, Debug)]
pub(super) struct SlotTable {
    slots: [SlotState; MAX_SLOTS as usize],
    /// The profile's slot count (`<= MAX_SLOTS`).
    count: u8,
    generations_minted: u64,
}

impl SlotTable {
    /// `count` free slots.
    pub(super) const fn new(count: u8) -> Self {
        Self { slots: [SlotState::Free; MAX_SLOTS as usize], count, generations_minted: 0 }
    }

    /// The storage index of `slot`, if it is within the profile.
    #[inline]
    fn index(&self, slot: SlotId) -> Option<usize> {
        (slot.0 < self.count).then_some(usize::from(slot.0))
    }

    /// What `slot` holds (`None` beyond the profile).
    #[inline]
    pub(super) fn get(&self, slot: SlotId) -> Option<SlotState> {
        self.index(slot).map(|i| self.slots[i])
    }

    /// The one capacity rule (L-1): how many more runs fit with `held_runs` runs held by the
    /// lane and the reservations in the table. `None` when more are held than there are
    /// slots (a broken invariant).
    pub(super) fn room(&self, held_runs: usize) -> Option<usize> {
        usize::from(self.count).checked_sub(held_runs + self.reserved())
    }

    /// With `held_runs` runs held by the lane, takes the lowest free slot under a freshly
    /// minted generation and reserves it. `None` when the lane is full.
    pub(super) fn reserve(&mut self, held_runs: usize) -> Option<Lease> {
        if self.room(held_runs).unwrap_or(0) == 0 {
            return None;
        }
        let idx =
            self.slots[..usize::from(self.count)].iter().position(|s| *s == SlotState::Free)?;
        let generation = Generation(NonZeroU64::new(self.generations_minted + 1)?);
        self.generations_minted += 1;
        self.slots[idx] = SlotState::Reserved(generation);
        Some(Lease { slot: SlotId(u8::try_from(idx).ok()?), generation })
    }

    /// Whether `lease` is a live reservation.
    pub(super) fn is_reserved(&self, lease: Lease) -> bool {
        self.get(lease.slot) == Some(SlotState::Reserved(lease.generation))
    }

    /// Frees a live reservation; `false` if `lease` is not one.
    pub(super) fn release(&mut self, lease: Lease) -> bool {
        if !self.is_reserved(lease) {
            return false;
        }
        self.set(lease.slot, SlotState::Free);
        true
    }

    /// Leases a reserved slot to `run`.
    pub(super) fn assign(&mut self, lease: Lease, run: RunId) {
        self.set(lease.slot, SlotState::Leased { generation: lease.generation, run });
    }

    /// Whether `lease` is leased to `run`.
    pub(super) fn is_leased_to(&self, lease: Lease, run: RunId) -> bool {
        self.get(lease.slot) == Some(SlotState::Leased { generation: lease.generation, run })
    }

    /// Frees the slot if `run` still holds it under `lease`.
    pub(super) fn free_if_held(&mut self, lease: Lease, run: RunId) {
        if self.is_leased_to(lease, run) {
            self.set(lease.slot, SlotState::Free);
        }
    }

    /// Frees every reservation (a close).
    pub(super) fn clear_reservations(&mut self) {
        for slot in &mut self.slots {
            if matches!(slot, SlotState::Reserved(_)) {
                *slot = SlotState::Free;
            }
        }
    }

    /// Frees every slot (a device reset drops every lease).
    pub(super) fn clear(&mut self) {
        self.slots = [SlotState::Free; MAX_SLOTS as usize];
    }

    /// How many slots are reserved.
    pub(super) fn reserved(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, SlotState::Reserved(_))).count()
    }

    /// The slots in use, with their ids.
    pub(super) fn leased(&self) -> impl Iterator<Item = (SlotId, Generation, RunId)> + '_ {
        self.in_use().filter_map(|(slot, state)| match state {
            SlotState::Leased { generation, run } => Some((slot, generation, run)),
            _ => None,
        })
    }

    fn in_use(&self) -> impl Iterator<Item = (SlotId, SlotState)> + '_ {
        (0..MAX_SLOTS)
            .zip(self.slots)
            .filter(|(_, s)| *s != SlotState::Free)
            .map(|(i, s)| (SlotId(i), s))
    }

    /// The table's own invariant.
    // A violation is a lane bug, found once: its size (a run's phase and input) costs
    // nothing on the path that finds none.
    #[allow(clippy::result_large_err)]
    pub(super) fn check(&self) -> Result<(), InvariantViolation> {
        let generation = |s: SlotState| match s {
            SlotState::Reserved(g) | SlotState::Leased { generation: g, .. } => Some(g),
            SlotState::Free => None,
        };
        for (slot, state) in self.in_use() {
            if slot.0 >= self.count {
                return Err(InvariantViolation::SlotBeyondProfile { slot });
            }
            let g = generation(state);
            let shared = self.in_use().any(|(other, s)| other != slot && generation(s) == g);
            if g.is_some_and(|g| g.get() > self.generations_minted) || shared {
                return Err(InvariantViolation::SlotGeneration { slot });
            }
        }
        Ok(())
    }

    fn set(&mut self, slot: SlotId, state: SlotState) {
        if let Some(i) = self.index(slot) {
            self.slots[i] = state;
        }
    }

    /// Test access: overwrite a slot as a corruption would.
    #[cfg(test)]
    pub(super) fn corrupt(&mut self, slot: SlotId, state: SlotState) {
        self.slots[usize::from(slot.0)] = state;
    }
}
