//! The process-wide ring of device fault notices (L-19): written by the driver's callback
//! thread (or an embedding that forwards its own notices), read by every lane.
//!
//! A write takes a ticket, then publishes the entry under a per-entry sequence stamp (a
//! seqlock): no lock, no allocation, no wait. The stamp only grows, so a writer delayed past
//! a whole ring of later writes can neither hide a later notice nor pass its own off as one.
//! Readers keep their own cursor; an overwritten entry is counted lost, never read torn.
//! Written against [`atomic`] so the loom model test checks this very file.

use super::atomic::{AtomicU64, Ordering, fence};

/// Entries the ring holds: notices come rarely (one per device fault, per stream), and a
/// lane reads them at its next step.
pub const NOTICE_CAPACITY: usize = 64;

/// One notice as the ring stores it: the device and stream id packed in one word, the code
/// in another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawNotice {
    /// The logical device id.
    pub device: u32,
    /// The stream id (`aclrtStreamGetId`'s number).
    pub stream_id: u32,
    /// The fault's code.
    pub code: i32,
}

/// What a read at a cursor found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeRead {
    /// The next notice; the cursor moved past it.
    Notice(RawNotice),
    /// `count` notices were overwritten before this reader came to them; the cursor moved
    /// past them.
    Lost {
        /// How many.
        count: u64,
    },
    /// Nothing new (or the next entry is still being written).
    Empty,
}

struct Entry {
    /// `2 * ticket + 1` while ticket's write is in progress, `2 * ticket + 2` once done, 0
    /// before the first write. It only grows: a writer claims the entry only from an older
    /// ticket's stamp, and finishes only if no later ticket took the entry over meanwhile.
    stamp: AtomicU64,
    /// The fields, each beside the low half of its writer's ticket: a stale writer's stores
    /// that land after a later ticket took the entry over are told apart, never read as its.
    device: AtomicU64,
    stream_id: AtomicU64,
    code: AtomicU64,
}

/// The ring, of `N` entries (the process's one has [`NOTICE_CAPACITY`]; the model test
/// checks a ring of one or two). One lives for the whole process ([`notices`](crate::notices)).
pub struct NoticeRing<const N: usize = NOTICE_CAPACITY> {
    head: AtomicU64,
    entries: [Entry; N],
}

impl<const N: usize> std::fmt::Debug for NoticeRing<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoticeRing").field("written", &self.head()).finish_non_exhaustive()
    }
}

impl Default for NoticeRing {
    fn default() -> Self {
        Self::new()
    }
}

impl NoticeRing {
    /// An empty ring of [`NOTICE_CAPACITY`] entries.
    #[must_use]
    pub fn new() -> Self {
        Self::empty()
    }
}

impl<const N: usize> NoticeRing<N> {
    /// An empty ring of `N` entries.
    #[must_use]
    pub fn empty() -> Self {
        Self {
            head: AtomicU64::new(0),
            entries: std::array::from_fn(|_| Entry {
                stamp: AtomicU64::new(0),
                device: AtomicU64::new(0),
                stream_id: AtomicU64::new(0),
                code: AtomicU64::new(0),
            }),
        }
    }

    /// How many notices were ever written: a new reader starts here, so it reads only the
    /// notices that come after it.
    #[must_use]
    pub fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Records a notice: lock-free and allocation-free, as a driver callback must be. A
    /// writer so late that a later ticket already took its entry drops its notice (it is a
    /// ring-full old; readers count it lost).
    pub fn push(&self, notice: RawNotice) {
        let ticket = self.head.fetch_add(1, Ordering::AcqRel);
        let entry = &self.entries[slot::<N>(ticket)];
        let writing = 2 * ticket + 1;
        let mut current = entry.stamp.load(Ordering::Relaxed);
        loop {
            if current >= writing {
                return;
            }
            match entry.stamp.compare_exchange(
                current,
                writing,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        // The odd stamp is visible before any field changes.
        fence(Ordering::Release);
        let tag = u64::from(low_word(ticket)) << 32;
        entry.device.store(tag | u64::from(notice.device), Ordering::Relaxed);
        entry.stream_id.store(tag | u64::from(notice.stream_id), Ordering::Relaxed);
        // The code's bits as they are: the sign survives the round trip.
        let code = u32::from_ne_bytes(notice.code.to_ne_bytes());
        entry.code.store(tag | u64::from(code), Ordering::Relaxed);
        // Done, unless a later ticket took the entry over meanwhile: its stamp stays.
        let _ = entry.stamp.compare_exchange(
            writing,
            writing + 1,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// The notice at `cursor`, if it is there, moving the cursor past what it returns.
    pub fn read(&self, cursor: &mut u64) -> NoticeRead {
        let head = self.head();
        if *cursor >= head {
            return NoticeRead::Empty;
        }
        // More than a ring behind: the oldest of them are gone for sure.
        let oldest = head.saturating_sub(N as u64);
        if *cursor < oldest {
            let count = oldest - *cursor;
            *cursor = oldest;
            return NoticeRead::Lost { count };
        }
        let ticket = *cursor;
        let entry = &self.entries[slot::<N>(ticket)];
        let done = 2 * ticket + 2;
        let before = entry.stamp.load(Ordering::Acquire);
        if before < done {
            // Taken but not written yet: its writer finishes, or a later ticket takes the
            // entry (the stamp passes `done`). Read it at the next step.
            return NoticeRead::Empty;
        }
        if before == done {
            let words = [
                entry.device.load(Ordering::Relaxed),
                entry.stream_id.load(Ordering::Relaxed),
                entry.code.load(Ordering::Relaxed),
            ];
            // The fields are read before the stamp is read again.
            fence(Ordering::Acquire);
            let tag = low_word(ticket);
            if entry.stamp.load(Ordering::Relaxed) == done
                && words.iter().all(|word| low_word(word >> 32) == tag)
            {
                *cursor += 1;
                return NoticeRead::Notice(RawNotice {
                    device: low_word(words[0]),
                    stream_id: low_word(words[1]),
                    code: i32::from_ne_bytes(low_word(words[2]).to_ne_bytes()),
                });
            }
        }
        // A later ticket wrote over this entry, or an earlier one's late stores did.
        *cursor += 1;
        NoticeRead::Lost { count: 1 }
    }
}

/// The entry a ticket writes.
fn slot<const N: usize>(ticket: u64) -> usize {
    // The remainder is below N, so it fits.
    usize::try_from(ticket % N as u64).unwrap_or(0)
}

/// The low 32 bits of a word.
fn low_word(word: u64) -> u32 {
    u32::try_from(word & u64::from(u32::MAX)).unwrap_or(0)
}
