//! Decoding and encoding the status header of both layouts.

use status_latch::{
    DecodeError, EncodeError, HeaderField, HeaderLayout, Latch, LatchSource, RuntimeCode, Stall,
    StallDetail, Status, decode, encode, encode_into,
};

const TMR: HeaderLayout = HeaderLayout::TensormapAndRingbuffer;
const HBG: HeaderLayout = HeaderLayout::HostBuildGraph;

/// Writes `bytes` at a literal offset: the hand-built headers below spell out SPEC §5.1's
/// offsets themselves rather than asking the layout table, so they check the table.
fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

#[test]
fn decode_reads_every_tensormap_and_ringbuffer_field_at_its_documented_offset() {
    let mut buf = vec![0u8; 896];
    put(&mut buf, 784, &5i32.to_le_bytes());
    put(&mut buf, 788, &0x8000_0005u32.to_le_bytes());
    put(&mut buf, 792, &100i32.to_le_bytes());
    put(&mut buf, 796, &3i32.to_le_bytes());
    put(&mut buf, 800, &4i32.to_le_bytes());
    put(&mut buf, 804, &11u32.to_le_bytes());
    put(&mut buf, 808, &12u32.to_le_bytes());
    put(&mut buf, 812, &13u32.to_le_bytes());
    put(&mut buf, 816, &14u32.to_le_bytes());
    put(&mut buf, 820, &15u32.to_le_bytes());
    put(&mut buf, 824, &1u32.to_le_bytes());
    put(&mut buf, 832, &0x0102_0304_0506_0708i64.to_le_bytes());
    put(&mut buf, 840, &(-7i32).to_le_bytes());

    let status = decode(TMR, &buf).unwrap();
    assert_eq!(
        status,
        Status {
            orch: Some(RuntimeCode::InvalidArgs),
            sched: Some(RuntimeCode::SchedulerTimeout),
            sched_thread: 3,
            sched_bitmap: 0x8000_0005,
            stall: Some(Stall {
                detail: Some(StallDetail::DepDeadlock),
                completed: 11,
                total: 12,
                running: 13,
                ready: 14,
                waiting: 15,
                orch_done: 1,
                task_id: 0x0102_0304_0506_0708,
                core: -7,
            }),
        }
    );
}

#[test]
fn decode_reads_every_host_build_graph_field_at_its_documented_offset_and_has_no_stall() {
    let mut buf = vec![0u8; 256];
    put(&mut buf, 208, &9i32.to_le_bytes());
    put(&mut buf, 212, &0b1010u32.to_le_bytes());
    put(&mut buf, 216, &104i32.to_le_bytes());
    put(&mut buf, 220, &2i32.to_le_bytes());

    let status = decode(HBG, &buf).unwrap();
    assert_eq!(
        status,
        Status {
            orch: Some(RuntimeCode::ExplicitOrchFatal),
            sched: Some(RuntimeCode::ReadyQueueOverflow),
            sched_thread: 2,
            sched_bitmap: 0b1010,
            stall: None,
        }
    );
}

#[test]
fn decode_reads_nothing_outside_the_layouts_fields() {
    for layout in HeaderLayout::ALL {
        // Every byte that is not a field holds garbage; the fields hold 0.
        let mut buf = vec![0xA5u8; layout.size() + 64];
        for spec in layout.fields() {
            buf[spec.offset..spec.offset + spec.ty.width()].fill(0);
        }
        assert_eq!(decode(layout, &buf).unwrap(), Status::clean(layout), "{layout}");
    }
}

#[test]
fn layout_tables_state_the_documented_sizes_and_offsets() {
    assert_eq!(TMR.size(), 896);
    assert_eq!(HBG.size(), 256);
    let offsets = |layout: HeaderLayout| -> Vec<(&str, usize, usize)> {
        layout.fields().iter().map(|f| (f.field.name(), f.offset, f.ty.width())).collect()
    };
    assert_eq!(
        offsets(HBG),
        [
            ("orch_error_code", 208, 4),
            ("sched_error_bitmap", 212, 4),
            ("sched_error_code", 216, 4),
            ("sched_error_thread", 220, 4),
        ]
    );
    assert_eq!(
        TMR.field(HeaderField::StallTaskId).map(|f| (f.offset, f.ty.width())),
        Some((832, 8))
    );
    assert_eq!(TMR.field(HeaderField::StallCore).map(|f| f.offset), Some(840));
    assert!(TMR.has_stall());
    assert!(!HBG.has_stall());
    assert_eq!(HBG.field(HeaderField::StallDetail), None);
}

#[test]
fn decode_of_a_short_buffer_says_how_many_bytes_are_needed() {
    for layout in HeaderLayout::ALL {
        for len in [0, 1, layout.size() / 2, layout.size() - 1] {
            let err = decode(layout, &vec![0; len]).unwrap_err();
            assert_eq!(err, DecodeError::TooShort { layout, needed: layout.size(), got: len });
            let message = err.to_string();
            assert!(message.contains(&layout.size().to_string()), "{message}");
            assert!(message.contains(&format!("got {len}")), "{message}");
        }
    }
}

#[test]
fn a_short_buffer_error_names_the_layout_by_the_runtimes_name() {
    for (layout, name) in [(TMR, "tensormap_and_ringbuffer"), (HBG, "host_build_graph")] {
        assert_eq!(layout.to_string(), name);
        let message = decode(layout, &[]).unwrap_err().to_string();
        assert!(message.starts_with(&format!("{name} status header")), "{message}");
    }
}

#[test]
fn bytes_past_the_header_are_ignored() {
    for layout in HeaderLayout::ALL {
        let status = Status {
            sched: Some(RuntimeCode::AsyncWaitOverflow),
            sched_thread: 1,
            sched_bitmap: 2,
            ..Status::clean(layout)
        };
        let mut long = encode(layout, &status);
        long.extend(std::iter::repeat_n(0xFF, 4096));
        assert_eq!(decode(layout, &long).unwrap(), status);
    }
}

#[test]
fn orch_code_wins_when_both_latches_are_set() {
    for layout in HeaderLayout::ALL {
        let status = Status {
            orch: Some(RuntimeCode::InvalidArgs),
            sched: Some(RuntimeCode::SchedulerTimeout),
            ..Status::clean(layout)
        };
        let decoded = decode(layout, &encode(layout, &status)).unwrap();
        assert_eq!(
            decoded.latched(),
            Some(Latch { source: LatchSource::Orch, code: RuntimeCode::InvalidArgs })
        );
        assert_eq!(decoded.runtime_status(), -5);
    }
}

#[test]
fn sched_code_latches_when_the_orch_latch_is_clear() {
    for layout in HeaderLayout::ALL {
        let status = Status {
            sched: Some(RuntimeCode::SchedulerTimeout),
            sched_thread: 2,
            sched_bitmap: 0b100,
            ..Status::clean(layout)
        };
        let decoded = decode(layout, &encode(layout, &status)).unwrap();
        assert_eq!(
            decoded.latched(),
            Some(Latch { source: LatchSource::Sched, code: RuntimeCode::SchedulerTimeout })
        );
        assert_eq!(decoded.runtime_status(), -100);
    }
}

#[test]
fn an_all_zero_header_is_clean_with_runtime_status_zero() {
    for layout in HeaderLayout::ALL {
        let status = decode(layout, &vec![0; layout.size()]).unwrap();
        assert_eq!(status, Status::clean(layout));
        assert_eq!(status.latched(), None);
        assert_eq!(status.runtime_status(), 0);
    }
}

#[test]
fn negative_and_garbage_codes_decode_as_unknown_values() {
    for (raw, runtime_status) in
        [(-5, 5), (12, -12), (0x7FFF_FFFF, -0x7FFF_FFFF), (i32::MIN, i32::MIN)]
    {
        let mut buf = vec![0u8; 256];
        put(&mut buf, 208, &raw.to_le_bytes());
        put(&mut buf, 216, &raw.to_le_bytes());
        let status = decode(HBG, &buf).unwrap();
        assert_eq!(status.orch, Some(RuntimeCode::Unknown(raw)));
        assert_eq!(status.sched, Some(RuntimeCode::Unknown(raw)));
        assert_eq!(status.runtime_status(), runtime_status, "raw {raw}");
        assert_ne!(status.runtime_status(), 0, "a garbage code must still read as a failure");
    }
}

#[test]
fn stall_detail_values_decode_and_unknown_values_are_kept() {
    let cases = [
        (0, None),
        (1, Some(StallDetail::RunningStalled)),
        (2, Some(StallDetail::Unknown(2))),
        (3, Some(StallDetail::ReadyIdle)),
        (4, Some(StallDetail::DepDeadlock)),
        (5, Some(StallDetail::OrchStarvation)),
        (99, Some(StallDetail::Unclassified)),
        (-1, Some(StallDetail::Unknown(-1))),
    ];
    for (raw, want) in cases {
        let mut buf = vec![0u8; 896];
        put(&mut buf, 800, &i32::to_le_bytes(raw));
        let stall = decode(TMR, &buf).unwrap().stall.unwrap();
        assert_eq!(stall.detail, want, "raw {raw}");
        assert_eq!(stall.detail.map_or(0, StallDetail::value), raw);
    }
}

#[test]
fn encode_then_decode_gives_back_the_status() {
    let stall = Stall {
        detail: Some(StallDetail::Unknown(-42)),
        completed: u32::MAX,
        total: 7,
        running: 6,
        ready: 5,
        waiting: 4,
        orch_done: 3,
        task_id: i64::MIN,
        core: -1,
    };
    let statuses = [
        Status::clean(TMR),
        Status {
            orch: Some(RuntimeCode::Unknown(-9)),
            sched: Some(RuntimeCode::TensorWaitTimeout),
            sched_thread: i32::MIN,
            sched_bitmap: u32::MAX,
            stall: Some(stall),
        },
    ];
    for status in statuses {
        assert_eq!(decode(TMR, &encode(TMR, &status)).unwrap(), status);
        let hbg = Status { stall: None, ..status };
        assert_eq!(decode(HBG, &encode(HBG, &hbg)).unwrap(), hbg);
    }
}

#[test]
fn encode_into_writes_only_the_layouts_fields() {
    for layout in HeaderLayout::ALL {
        let mut buf = vec![0xEEu8; layout.size() + 8];
        encode_into(layout, &Status::clean(layout), &mut buf).unwrap();
        let mut field_bytes = vec![false; buf.len()];
        for spec in layout.fields() {
            field_bytes[spec.offset..spec.offset + spec.ty.width()].fill(true);
        }
        for (i, (&byte, &is_field)) in buf.iter().zip(&field_bytes).enumerate() {
            let want = if is_field { 0 } else { 0xEE };
            assert_eq!(byte, want, "{layout} byte {i}");
        }
    }
}

#[test]
fn encode_into_a_short_buffer_is_refused_and_writes_nothing() {
    for layout in HeaderLayout::ALL {
        let mut buf = vec![0xEEu8; layout.size() - 1];
        let status = Status { orch: Some(RuntimeCode::ScopeDeadlock), ..Status::clean(layout) };
        assert_eq!(
            encode_into(layout, &status, &mut buf),
            Err(EncodeError::TooShort { layout, needed: layout.size(), got: layout.size() - 1 })
        );
        assert!(buf.iter().all(|&b| b == 0xEE));
    }
}

/// splitmix64: a tiny deterministic PRNG, so the test needs no dependency and always
/// checks the same inputs.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Random bytes, or random words drawn from values the decoder treats specially (known
/// codes, 0, the extremes), so the known-code paths are reached too.
fn fill(rng: &mut SplitMix, buf: &mut [u8]) {
    const WORDS: [i32; 12] = [0, 1, 5, 8, 10, 99, 100, 103, 104, -1, i32::MIN, i32::MAX];
    let words = rng.next() % 2 == 0;
    for chunk in buf.chunks_mut(4) {
        let r = rng.next();
        let bytes = if words {
            WORDS[(r % WORDS.len() as u64) as usize].to_le_bytes()
        } else {
            (r as u32).to_le_bytes()
        };
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Decodes, and drives everything downstream of a decoded status, checking that a
/// buffer decodes exactly when it holds the whole header.
fn decode_and_use(layout: HeaderLayout, buf: &[u8]) {
    match decode(layout, buf) {
        Ok(status) => {
            assert!(buf.len() >= layout.size());
            let runtime_status = status.runtime_status();
            match status.latched() {
                Some(latch) => {
                    assert_eq!(runtime_status, latch.code.value().wrapping_neg());
                    let failure = status_latch::Failure::Latched(latch);
                    let _ = status_latch::classify(&failure);
                    let line =
                        status_latch::failure_line(1, &failure).with_status(status).to_string();
                    assert!(!line.contains('\n'), "{line}");
                }
                None => assert_eq!(runtime_status, 0),
            }
            assert_eq!(decode(layout, &encode(layout, &status)), Ok(status));
        }
        Err(DecodeError::TooShort { needed, got, .. }) => {
            assert_eq!((needed, got), (layout.size(), buf.len()));
            assert!(got < needed);
        }
    }
}

#[test]
fn decode_never_panics_on_any_bytes_of_any_length() {
    let mut rng = SplitMix(0x5EED_1A7C);
    let mut buf = vec![0u8; 1000];
    for layout in HeaderLayout::ALL {
        for len in 0..=1000 {
            for pattern in [0x00, 0xFF, 0x80] {
                decode_and_use(layout, &vec![pattern; len]);
            }
            for _ in 0..24 {
                fill(&mut rng, &mut buf[..len]);
                decode_and_use(layout, &buf[..len]);
            }
        }
    }
}
