//! Status header decode plus classification: what the lane pays per completed run to turn
//! the bytes it read into a verdict.
#![allow(missing_docs)]

use divan::black_box;
use status_latch::{Failure, HeaderLayout, RuntimeCode, Status, classify, decode, encode};

fn main() {
    divan::main();
}

fn header(layout: HeaderLayout, latched: Option<RuntimeCode>) -> Vec<u8> {
    let mut status = Status::clean(layout);
    status.orch = latched;
    encode(layout, &status)
}

/// A clean tensormap_and_ringbuffer header (the common case): decode, find no latch.
#[divan::bench(sample_size = 200, sample_count = 1000)]
fn decode_clean_tensormap_header(bencher: divan::Bencher<'_, '_>) {
    let bytes = header(HeaderLayout::TensormapAndRingbuffer, None);
    bencher.bench_local(|| {
        let status = decode(HeaderLayout::TensormapAndRingbuffer, black_box(&bytes));
        black_box(status.map(|s| s.latched().is_none()))
    });
}

/// A latched header: decode, then classify the latch through the policy table.
#[divan::bench(
    args = [HeaderLayout::TensormapAndRingbuffer, HeaderLayout::HostBuildGraph],
    sample_size = 200,
    sample_count = 1000
)]
fn decode_and_classify_latched_header(bencher: divan::Bencher<'_, '_>, layout: HeaderLayout) {
    let bytes = header(layout, Some(RuntimeCode::SchedulerTimeout));
    bencher.bench_local(|| {
        let class = decode(layout, black_box(&bytes))
            .ok()
            .and_then(|s| s.latched())
            .map(|latch| classify(&Failure::Latched(latch)).class);
        black_box(class)
    });
}
