//! Decoding and encoding the per-run result record (SPEC L-8, device-truth §2): every
//! defect and boundary the decoder tells apart, the round trip, and the payload's caps.

use status_latch::{
    RECORD_BYTES, RECORD_LAYOUT, RECORD_PAYLOAD_MAX, RECORD_PAYLOAD_OFFSET, Record, RecordDefect,
    RecordSource, RecordWrite, RuntimeCode, decode_record, encode_record, record_payload,
};

const EPOCH: u64 = 41;

/// Writes a little-endian u32 at a literal offset: the hand-built records below spell out
/// device-truth §2's offsets themselves rather than asking the layout table, so they check it.
fn put_u32(bytes: &mut [u8], offset: usize, value: u32) {
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn ok_bytes() -> [u8; RECORD_BYTES] {
    encode_record(EPOCH, &RecordWrite::Ok)
}

fn error_bytes(code: i32, source: RecordSource, payload: &[u8]) -> [u8; RECORD_BYTES] {
    encode_record(EPOCH, &RecordWrite::Error { code, source, payload })
}

#[test]
fn the_layout_table_states_the_documented_offsets_and_sizes() {
    let rows: Vec<(usize, &str, &str)> =
        RECORD_LAYOUT.iter().map(|f| (f.offset, f.ty, f.name)).collect();
    assert_eq!(
        rows,
        [
            (0, "u64", "published"),
            (8, "u32", "payload_bytes"),
            (12, "u32", "verdict"),
            (16, "i32", "completion_code"),
            (20, "u32", "code_source"),
            (24, "256 bytes", "payload"),
        ]
    );
    assert_eq!(RECORD_PAYLOAD_OFFSET, 24);
    assert_eq!(RECORD_PAYLOAD_MAX, 256);
    assert_eq!(RECORD_BYTES, RECORD_PAYLOAD_OFFSET + RECORD_PAYLOAD_MAX);
}

#[test]
fn an_ok_record_is_exactly_its_epoch_and_verdict_one_at_the_documented_offsets() {
    let mut want = [0u8; RECORD_BYTES];
    want[0..8].copy_from_slice(&EPOCH.to_le_bytes());
    put_u32(&mut want, 12, 1);
    assert_eq!(ok_bytes(), want);
    assert_eq!(decode_record(&want, EPOCH), Record::Ok);
}

#[test]
fn an_error_record_is_written_at_the_documented_offsets() {
    let bytes = error_bytes(-9, RecordSource::Shutdown, &[0xAB; 3]);
    assert_eq!(&bytes[0..8], &EPOCH.to_le_bytes());
    assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
    assert_eq!(&bytes[12..16], &2u32.to_le_bytes());
    assert_eq!(&bytes[16..20], &(-9i32).to_le_bytes());
    assert_eq!(&bytes[20..24], &3u32.to_le_bytes());
    assert_eq!(&bytes[24..27], &[0xAB; 3]);
    assert!(bytes[27..].iter().all(|&b| b == 0));
}

#[test]
fn a_payload_of_exactly_256_bytes_decodes_and_257_is_malformed() {
    let bytes = error_bytes(1, RecordSource::Header, &[7; 256]);
    assert_eq!(
        decode_record(&bytes, EPOCH),
        Record::Error {
            code: RuntimeCode::ScopeDeadlock,
            source: RecordSource::Header,
            payload_len: 256,
        }
    );
    let mut long = bytes;
    put_u32(&mut long, 8, 257);
    assert_eq!(
        decode_record(&long, EPOCH),
        Record::Malformed(RecordDefect::PayloadTooLong { bytes: 257 })
    );
    put_u32(&mut long, 8, u32::MAX);
    assert_eq!(
        decode_record(&long, EPOCH),
        Record::Malformed(RecordDefect::PayloadTooLong { bytes: u32::MAX })
    );
}

#[test]
fn a_payload_length_on_an_ok_record_is_malformed_and_over_256_says_so_first() {
    let mut bytes = ok_bytes();
    put_u32(&mut bytes, 8, 1);
    assert_eq!(
        decode_record(&bytes, EPOCH),
        Record::Malformed(RecordDefect::OkWithDetail { code: 0, source: 0, payload: 1 })
    );
    put_u32(&mut bytes, 8, 257);
    assert_eq!(
        decode_record(&bytes, EPOCH),
        Record::Malformed(RecordDefect::PayloadTooLong { bytes: 257 })
    );
}

#[test]
fn epoch_zero_is_malformed_whatever_the_bytes() {
    // A zeroed region, and even a record stamped 0 that would otherwise read as ok.
    let stamped_zero = encode_record(0, &RecordWrite::Ok);
    for bytes in [&[0u8; RECORD_BYTES][..], &stamped_zero[..], &ok_bytes()[..], &[]] {
        assert_eq!(decode_record(bytes, 0), Record::Malformed(RecordDefect::ZeroEpoch));
    }
}

#[test]
fn every_short_read_below_the_fixed_fields_is_malformed_and_24_bytes_suffice() {
    let ok = ok_bytes();
    for len in 0..RECORD_PAYLOAD_OFFSET {
        let want = Record::Malformed(RecordDefect::Short { len: u16::try_from(len).unwrap() });
        assert_eq!(decode_record(&ok[..len], EPOCH), want, "{len} bytes");
        assert_eq!(decode_record(&[0u8; RECORD_PAYLOAD_OFFSET][..len], EPOCH), want);
    }
    assert_eq!(decode_record(&ok[..RECORD_PAYLOAD_OFFSET], EPOCH), Record::Ok);
}

#[test]
fn a_buffer_longer_than_the_region_decodes_from_its_first_bytes() {
    let mut long = vec![0u8; 70_000];
    long[..RECORD_BYTES].copy_from_slice(&ok_bytes());
    assert_eq!(decode_record(&long, EPOCH), Record::Ok);
}

#[test]
fn a_record_left_by_an_earlier_run_of_the_slot_is_never_published() {
    let earlier = EPOCH - 1;
    let stale_ok = encode_record(earlier, &RecordWrite::Ok);
    assert_eq!(decode_record(&stale_ok, EPOCH), Record::NeverPublished { stamp: earlier });
    let stale_error = encode_record(
        earlier,
        &RecordWrite::Error { code: 9, source: RecordSource::ThreadReturn, payload: &[] },
    );
    assert_eq!(decode_record(&stale_error, EPOCH), Record::NeverPublished { stamp: earlier });
    // A later epoch than the run's is not its own either.
    assert_eq!(
        decode_record(&encode_record(EPOCH + 1, &RecordWrite::Ok), EPOCH),
        Record::NeverPublished { stamp: EPOCH + 1 }
    );
    assert_eq!(decode_record(&[0u8; RECORD_BYTES], EPOCH), Record::NeverPublished { stamp: 0 });
}

#[test]
fn an_unpublished_region_is_never_published_whatever_its_other_words_hold() {
    // Garbage in every field but the stamp: the stamp decides first.
    let mut bytes = [0xFFu8; RECORD_BYTES];
    bytes[0..8].copy_from_slice(&0u64.to_le_bytes());
    assert_eq!(decode_record(&bytes, EPOCH), Record::NeverPublished { stamp: 0 });
}

#[test]
fn an_error_record_decodes_with_each_source() {
    for source in RecordSource::ALL {
        let bytes = error_bytes(5, source, &[1, 2, 3]);
        assert_eq!(
            decode_record(&bytes, EPOCH),
            Record::Error { code: RuntimeCode::InvalidArgs, source, payload_len: 3 },
            "{source}"
        );
        assert_eq!(RecordSource::from_raw(source.raw()), Some(source));
    }
    assert_eq!(RecordSource::ALL.map(RecordSource::raw), [1, 2, 3], "wire values");
}

#[test]
fn an_error_record_with_source_none_or_unknown_is_malformed() {
    for raw in [0, 4, 99, u32::MAX] {
        let mut bytes = error_bytes(5, RecordSource::Header, &[]);
        put_u32(&mut bytes, 20, raw);
        assert_eq!(
            decode_record(&bytes, EPOCH),
            Record::Malformed(RecordDefect::UnknownSource { raw }),
            "source {raw}"
        );
        if raw != 0 {
            assert_eq!(RecordSource::from_raw(raw), None);
        }
    }
}

#[test]
fn an_error_record_without_a_code_is_malformed_whatever_its_source() {
    for source in [0, 1, 2, 3, 4] {
        let mut bytes = error_bytes(5, RecordSource::Header, &[]);
        put_u32(&mut bytes, 16, 0);
        put_u32(&mut bytes, 20, source);
        assert_eq!(decode_record(&bytes, EPOCH), Record::Malformed(RecordDefect::ErrorWithoutCode));
    }
}

#[test]
fn verdict_none_and_unknown_verdicts_are_malformed() {
    let mut bytes = ok_bytes();
    put_u32(&mut bytes, 12, 0);
    assert_eq!(decode_record(&bytes, EPOCH), Record::Malformed(RecordDefect::NoVerdict));
    for raw in [3, 4, 0x100, u32::MAX] {
        put_u32(&mut bytes, 12, raw);
        assert_eq!(
            decode_record(&bytes, EPOCH),
            Record::Malformed(RecordDefect::UnknownVerdict { raw }),
            "verdict {raw}"
        );
    }
}

#[test]
fn an_ok_record_with_a_code_or_a_source_is_malformed_with_what_was_read() {
    let mut with_code = ok_bytes();
    put_u32(&mut with_code, 16, u32::from_le_bytes((-9i32).to_le_bytes()));
    assert_eq!(
        decode_record(&with_code, EPOCH),
        Record::Malformed(RecordDefect::OkWithDetail { code: -9, source: 0, payload: 0 })
    );
    let mut with_source = ok_bytes();
    put_u32(&mut with_source, 20, 2);
    assert_eq!(
        decode_record(&with_source, EPOCH),
        Record::Malformed(RecordDefect::OkWithDetail { code: 0, source: 2, payload: 0 })
    );
}

#[test]
fn a_record_code_is_kept_as_the_runtime_wrote_it_and_unknown_values_stay_unknown() {
    for (raw, want) in [
        (9, RuntimeCode::ExplicitOrchFatal),
        (100, RuntimeCode::SchedulerTimeout),
        (-9, RuntimeCode::Unknown(-9)),
        (12, RuntimeCode::Unknown(12)),
        (i32::MIN, RuntimeCode::Unknown(i32::MIN)),
    ] {
        let bytes = error_bytes(raw, RecordSource::ThreadReturn, &[]);
        assert_eq!(
            decode_record(&bytes, EPOCH),
            Record::Error { code: want, source: RecordSource::ThreadReturn, payload_len: 0 },
            "code {raw}"
        );
    }
}

#[test]
fn encode_then_decode_gives_back_every_error_and_ok() {
    let codes = RuntimeCode::ALL
        .into_iter()
        .chain([RuntimeCode::Unknown(12), RuntimeCode::Unknown(i32::MAX)]);
    let payload: Vec<u8> = (0..=255u8).collect();
    for code in codes {
        for source in RecordSource::ALL {
            for len in [0, 1, 64, 255, 256] {
                let bytes = error_bytes(code.value(), source, &payload[..len]);
                assert_eq!(
                    decode_record(&bytes, EPOCH),
                    Record::Error { code, source, payload_len: u16::try_from(len).unwrap() }
                );
                assert_eq!(record_payload(&bytes), &payload[..len]);
            }
        }
    }
    assert_eq!(decode_record(&ok_bytes(), EPOCH), Record::Ok);
    assert_eq!(record_payload(&ok_bytes()), &[] as &[u8]);
}

#[test]
fn encode_cuts_a_payload_over_256_bytes() {
    let bytes = error_bytes(1, RecordSource::Header, &[3; 300]);
    assert_eq!(&bytes[8..12], &256u32.to_le_bytes());
    assert_eq!(record_payload(&bytes), &[3; 256]);
    assert!(matches!(decode_record(&bytes, EPOCH), Record::Error { payload_len: 256, .. }));
}

#[test]
fn an_error_write_with_code_zero_does_not_decode_as_an_error() {
    // The writer's contract is a non-zero code; a zero one is caught on the way back.
    let bytes = error_bytes(0, RecordSource::Header, &[]);
    assert_eq!(decode_record(&bytes, EPOCH), Record::Malformed(RecordDefect::ErrorWithoutCode));
}

#[test]
fn record_payload_is_capped_at_256_and_at_what_was_read() {
    let mut bytes = error_bytes(1, RecordSource::Header, &[5; 256]);
    put_u32(&mut bytes, 8, u32::MAX);
    assert_eq!(record_payload(&bytes).len(), RECORD_PAYLOAD_MAX);
    put_u32(&mut bytes, 8, 100);
    assert_eq!(record_payload(&bytes[..60]), &[5; 36]);
    assert_eq!(record_payload(&bytes[..RECORD_PAYLOAD_OFFSET]), &[] as &[u8]);
    for len in 0..RECORD_PAYLOAD_OFFSET {
        assert_eq!(record_payload(&bytes[..len]), &[] as &[u8], "{len} bytes");
    }
    // Longer than the region: still at most 256.
    let mut long = vec![9u8; 1024];
    long[8..12].copy_from_slice(&1000u32.to_le_bytes());
    assert_eq!(record_payload(&long).len(), RECORD_PAYLOAD_MAX);
}

#[test]
fn a_record_displays_what_was_read() {
    assert_eq!(Record::Ok.to_string(), "ok");
    assert_eq!(Record::NeverPublished { stamp: 0 }.to_string(), "never published");
    assert_eq!(
        Record::NeverPublished { stamp: 6 }.to_string(),
        "never published (holds epoch 6 of another run)"
    );
    assert_eq!(
        Record::Malformed(RecordDefect::UnknownSource { raw: 4 }).to_string(),
        "malformed: verdict error with unknown source 4"
    );
    assert_eq!(
        Record::Error {
            code: RuntimeCode::ExplicitOrchFatal,
            source: RecordSource::ThreadReturn,
            payload_len: 2,
        }
        .to_string(),
        "error 9 (EXPLICIT_ORCH_FATAL) from the thread return code, 2 payload bytes"
    );
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

#[test]
fn decode_never_panics_and_is_ok_only_for_the_exact_ok_fields() {
    let mut rng = SplitMix(0x0EC0_4D00);
    let ok = ok_bytes();
    for case in 0..20_000 {
        let len = (rng.next() % 300) as usize;
        // Start from an ok record half the time, so its near misses are reached.
        let mut bytes: Vec<u8> = if case % 2 == 0 {
            ok.iter().copied().chain(core::iter::repeat(0)).take(len).collect()
        } else {
            (0..len).map(|_| rng.next() as u8).collect()
        };
        if let Some(b) = bytes.get_mut((rng.next() % 24) as usize) {
            if case % 4 == 0 {
                *b ^= 1 << (rng.next() % 8);
            }
        }
        let epoch = if case % 3 == 0 { EPOCH } else { rng.next() % 4 };
        let record = decode_record(&bytes, epoch);
        let _ = record.to_string();
        let _ = record_payload(&bytes);
        if record == Record::Ok {
            assert_eq!(
                &bytes[..RECORD_PAYLOAD_OFFSET],
                &encode_record(epoch, &RecordWrite::Ok)[..RECORD_PAYLOAD_OFFSET],
                "case {case}"
            );
        }
    }
}
