//! The process-wide ring of device fault notices (L-19): written by the driver's callback
//! thread (or an embedding that forwards its own notices), read by every lane.
//!
//! A write takes a ticket, then publishes the entry under a per-entry sequence stamp (a
//! seqlock): no lock, no allocation, no wait, so the callback records and returns. Readers
//! keep their own cursor; an entry overwritten before a reader came to it is counted lost,
//! never read torn. Written against [`atomic`] so the loom model test checks this very file.

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
    /// before the first write.
    stamp: AtomicU64,
    place: AtomicU64,
    code: AtomicU64,
}

/// The ring. One lives for the whole process ([`notices`](crate::notices)).
pub struct NoticeRing {
    head: AtomicU64,
    entries: [Entry; NOTICE_CAPACITY],
}

impl std::fmt::Debug for NoticeRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoticeRing")
            .field("written", &self.head())
            .finish_non_exhaustive()
    }
}

impl Default for NoticeRing {
    fn default() -> Self {
        Self::new()
    }
}

impl NoticeRing {
    /// An empty ring.
    #[must_use]
    pub fn new() -> Self {
        Self {
            head: AtomicU64::new(0),
            entries: std::array::from_fn(|_| Entry {
                stamp: AtomicU64::new(0),
                place: AtomicU64::new(0),
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

    /// Records a notice: lock-free, allocation-free and wait-free, as a driver callback must
    /// be.
    pub fn push(&self, notice: RawNotice) {
        let ticket = self.head.fetch_add(1, Ordering::AcqRel);
        let entry = &self.entries[slot(ticket)];
        entry.stamp.store(2 * ticket + 1, Ordering::Relaxed);
        // The odd stamp is visible before any field changes.
        fence(Ordering::Release);
        let place = (u64::from(notice.device) << 32) | u64::from(notice.stream_id);
        entry.place.store(place, Ordering::Relaxed);
        // The code's bits as they are: the sign survives the round trip.
        entry.code.store(
            u64::from(u32::from_ne_bytes(notice.code.to_ne_bytes())),
            Ordering::Relaxed,
        );
        entry.stamp.store(2 * ticket + 2, Ordering::Release);
    }

    /// The notice at `cursor`, if it is there, moving the cursor past what it returns.
    pub fn read(&self, cursor: &mut u64) -> NoticeRead {
        let head = self.head();
        if *cursor >= head {
            return NoticeRead::Empty;
        }
        // More than a ring behind: the oldest of them are gone for sure.
        let oldest = head.saturating_sub(NOTICE_CAPACITY as u64);
        if *cursor < oldest {
            let count = oldest - *cursor;
            *cursor = oldest;
            return NoticeRead::Lost { count };
        }
        let ticket = *cursor;
        let entry = &self.entries[slot(ticket)];
        let done = 2 * ticket + 2;
        let before = entry.stamp.load(Ordering::Acquire);
        if before < done {
            // Taken but not written yet: read it at the next step.
            return NoticeRead::Empty;
        }
        if before == done {
            let place = entry.place.load(Ordering::Relaxed);
            let code = entry.code.load(Ordering::Relaxed);
            // The fields are read before the stamp is read again.
            fence(Ordering::Acquire);
            if entry.stamp.load(Ordering::Relaxed) == done {
                *cursor += 1;
                return NoticeRead::Notice(RawNotice {
                    device: low_word(place >> 32),
                    stream_id: low_word(place),
                    code: i32::from_ne_bytes(low_word(code).to_ne_bytes()),
                });
            }
        }
        // A later ticket wrote over this entry.
        *cursor += 1;
        NoticeRead::Lost { count: 1 }
    }
}

/// The entry a ticket writes.
fn slot(ticket: u64) -> usize {
    // The remainder is below NOTICE_CAPACITY, so it fits.
    usize::try_from(ticket % NOTICE_CAPACITY as u64).unwrap_or(0)
}

/// The low 32 bits of a word.
fn low_word(word: u64) -> u32 {
    u32::try_from(word & u64::from(u32::MAX)).unwrap_or(0)
}
