//! The notice ring under real threads (L-19): a bounded stress of writers and readers, and
//! the overwrite a slow reader meets, counted as lost and never read torn.

use std::sync::Arc;

use lane_driver::{NOTICE_CAPACITY, NoticeRead, NoticeRing, RawNotice};

fn notice(w: u32, n: u32) -> RawNotice {
    RawNotice {
        device: w,
        stream_id: n,
        code: i32::try_from(u64::from(w) * 1_000_000 + u64::from(n)).unwrap_or(0),
    }
}

fn untorn(got: RawNotice) -> bool {
    got == notice(got.device, got.stream_id)
}

#[test]
fn a_reader_more_than_a_ring_behind_counts_the_overwritten_notices_as_lost() {
    let ring = NoticeRing::new();
    let mut cursor = ring.head();
    let total = NOTICE_CAPACITY as u32 + 10;
    for n in 0..total {
        ring.push(notice(1, n));
    }
    let (mut read, mut lost) = (Vec::new(), 0);
    loop {
        match ring.read(&mut cursor) {
            NoticeRead::Notice(got) => read.push(got),
            NoticeRead::Lost { count } => lost += count,
            NoticeRead::Empty => break,
        }
    }
    assert_eq!(lost, 10);
    let expected: Vec<_> = (10..total).map(|n| notice(1, n)).collect();
    assert_eq!(read, expected, "the newest ring-full, in order");
}

#[test]
fn a_new_reader_starts_after_what_was_written_before_it() {
    let ring = NoticeRing::new();
    ring.push(notice(1, 1));
    let mut cursor = ring.head();
    assert_eq!(ring.read(&mut cursor), NoticeRead::Empty);
    ring.push(notice(1, 2));
    assert_eq!(ring.read(&mut cursor), NoticeRead::Notice(notice(1, 2)));
}

#[test]
fn under_four_writers_each_reader_gets_every_notice_once_or_counts_it_lost_never_torn() {
    const WRITERS: u32 = 4;
    const EACH: u32 = 2_000;
    let ring = Arc::new(NoticeRing::new());
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let ring = Arc::clone(&ring);
            let mut cursor = ring.head();
            std::thread::spawn(move || {
                // A guard against a hang, not a speed claim: a notice the ring hid for good
                // would keep this reader waiting forever.
                let stuck = std::time::Instant::now() + std::time::Duration::from_secs(120);
                let (mut read, mut lost) = (Vec::new(), 0_u64);
                while read.len() as u64 + lost < u64::from(WRITERS * EACH) {
                    match ring.read(&mut cursor) {
                        NoticeRead::Notice(got) => read.push(got),
                        NoticeRead::Lost { count } => lost += count,
                        NoticeRead::Empty => {
                            assert!(
                                std::time::Instant::now() < stuck,
                                "reader stuck at ticket {cursor} of {}: a notice never came",
                                ring.head()
                            );
                            std::thread::yield_now();
                        }
                    }
                }
                (read, lost)
            })
        })
        .collect();
    let writers: Vec<_> = (1..=WRITERS)
        .map(|w| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for n in 0..EACH {
                    ring.push(notice(w, n));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    for reader in readers {
        let (read, lost) = reader.join().expect("reader");
        assert!(read.iter().all(|n| untorn(*n)), "a torn notice");
        let mut ids: Vec<_> = read.iter().map(|n| (n.device, n.stream_id)).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), read.len(), "a notice read twice");
        assert_eq!(read.len() as u64 + lost, u64::from(WRITERS * EACH));
        // Each writer's notices come in its own order.
        for w in 1..=WRITERS {
            let mine: Vec<_> = read.iter().filter(|n| n.device == w).collect();
            assert!(mine.windows(2).all(|p| p[0].stream_id < p[1].stream_id));
        }
    }
}
