//! The notice ring's seqlock (L-19), model-checked with loom: `src/notice_ring.rs` itself,
//! compiled against loom's atomics. Two driver threads push while a lane reads: the lane
//! reads each notice exactly once, never torn, and never one before it is written.
//!
//! A deliberate bug this catches (tried by hand): the done stamp stored before the fields
//! (a torn read). On a ring of one entry two writers share it, so a writer a whole ring late
//! meets a later one: the reader must account for both notices (read or lost), read neither
//! torn, and never wait on an entry for good. Two more deliberate bugs it catches (tried by
//! hand): plain stamp stores instead of the growing stamp (the late writer's stamp hides the
//! later notice from the reader for good; the real-thread stress test once hung on it), and
//! the reader not checking each field's ticket (a late writer's stores read as the later
//! notice: torn).

/// The atomics `notice_ring.rs` is written against, over loom's.
mod atomic {
    pub(crate) use loom::sync::atomic::{AtomicU64, Ordering, fence};
}

// The file's `pub` items are the library's API; here they live in a private module.
#[allow(dead_code, unreachable_pub)]
#[path = "../src/notice_ring.rs"]
mod notice_ring;

use loom::sync::Arc;
use notice_ring::{NoticeRead, NoticeRing, RawNotice};

/// Notice `n` of writer `w`: every field derived from both, so a torn read shows.
fn notice(w: u32, n: u32) -> RawNotice {
    RawNotice {
        device: w,
        stream_id: 100 * w + n,
        code: i32::try_from(500_000 + 100 * w + n).unwrap_or(0),
    }
}

fn untorn(got: RawNotice) -> bool {
    got == notice(got.device, got.stream_id.saturating_sub(100 * got.device))
}

/// Writers 1 and 2, each pushing its notice 0 on a thread of its own.
fn two_writers<const N: usize>(ring: &Arc<NoticeRing<N>>) -> Vec<loom::thread::JoinHandle<()>> {
    (1..=2)
        .map(|w| {
            let ring = Arc::clone(ring);
            loom::thread::spawn(move || ring.push(notice(w, 0)))
        })
        .collect()
}

#[test]
fn a_reader_gets_every_notice_two_writers_push_once_and_untorn() {
    loom::model(|| {
        let ring = Arc::new(NoticeRing::new());
        let writers = two_writers(&ring);
        let mut cursor = 0;
        let mut seen = Vec::new();
        // Read while the writers may still be writing.
        if let NoticeRead::Notice(got) = ring.read(&mut cursor) {
            seen.push(got);
        }
        for writer in writers {
            writer.join().expect("writer");
        }
        loop {
            match ring.read(&mut cursor) {
                NoticeRead::Notice(got) => seen.push(got),
                NoticeRead::Empty => break,
                NoticeRead::Lost { count } => panic!("{count} lost in a ring of 64"),
            }
        }
        assert!(seen.iter().all(|n| untorn(*n)), "torn: {seen:?}");
        seen.sort_by_key(|n| n.device);
        assert_eq!(seen, vec![notice(1, 0), notice(2, 0)]);
    });
}

#[test]
fn on_a_ring_of_one_two_writers_never_hide_a_notice_or_tear_one() {
    // Three preemptions keep the exploration to seconds (a late writer needs one).
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let ring = Arc::new(NoticeRing::<1>::empty());
        let writers = two_writers(&ring);
        let mut cursor = 0;
        let (mut seen, mut lost) = (Vec::new(), 0);
        // Read while the writers may still be writing.
        match ring.read(&mut cursor) {
            NoticeRead::Notice(got) => seen.push(got),
            NoticeRead::Lost { count } => lost += count,
            NoticeRead::Empty => {}
        }
        for writer in writers {
            writer.join().expect("writer");
        }
        // Both writers are done: every ticket is now read or lost, with no wait left.
        loop {
            match ring.read(&mut cursor) {
                NoticeRead::Notice(got) => seen.push(got),
                NoticeRead::Lost { count } => lost += count,
                NoticeRead::Empty => break,
            }
        }
        assert!(seen.iter().all(|n| untorn(*n)), "torn: {seen:?}");
        assert_eq!(seen.len() as u64 + lost, 2, "seen {seen:?}, lost {lost}");
        let read = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), read, "a notice read twice");
    });
}
