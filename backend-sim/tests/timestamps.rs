//! Event timestamps on the simulator (issue 45 item 7): with them on, each run's device start
//! and end are its start event's and its boundary's completion times in virtual time; at
//! depth one a run starts only after its predecessor ended, at depth two runs queue behind
//! each other and their overlap is proven.

use backend_sim::costs::Costs;
use backend_sim::{RunTimes, SimConfig, SimDevice, SimRunner, Workload};
use lane_core::status_latch::HeaderLayout;
use lane_core::{DeviceTiming, Outcome, Overlap, RunRequest, TimingSource};
use lane_driver::{Device, Driver};

const DEVICE_NS: u64 = 100_000;

/// Each run's timing, in report order, for `runs` runs of `device_ns` at `depth` with
/// timestamps `on`.
fn timings(depth: u8, on: bool, runs: usize, device_ns: u64) -> Vec<DeviceTiming> {
    let profile =
        SimConfig { depth: Some(depth), workload: Workload::default(), ..SimConfig::default() }
            .lane_profile()
            .unwrap();
    let device = SimDevice::new(
        Costs::default(),
        HeaderLayout::TensormapAndRingbuffer,
        1,
        RunTimes { device_ns, jitter_ppm: 0 },
    )
    .with_event_timestamps(on);
    assert_eq!(device.event_timestamps(), on);
    let mut d = Driver::new(profile, device, SimRunner);
    let mut submitted = 0;
    let mut reports = Vec::new();
    while submitted < runs {
        match d.submit(RunRequest::new()).unwrap() {
            Ok(_) => submitted += 1,
            Err(_) => {
                d.turn().unwrap();
            }
        }
        reports.extend(std::iter::from_fn(|| d.poll_report()));
    }
    d.run_until_idle().unwrap();
    reports.extend(std::iter::from_fn(|| d.poll_report()));
    reports
        .iter()
        .map(|report| match report.outcome {
            Outcome::Run(r) => {
                assert!(r.verdict.is_ok(), "{report}");
                r.timing.expect("a timing")
            }
            Outcome::Publication(p) => panic!("unexpected {p:?}"),
        })
        .collect()
}

#[test]
fn with_event_timestamps_at_depth_one_each_run_starts_in_virtual_time_after_the_previous_ended() {
    let timings = timings(1, true, 6, DEVICE_NS);
    assert_eq!(timings.len(), 6);
    for t in &timings {
        assert_eq!(t.source, TimingSource::EventTimestamps, "{t:?}");
        assert!(t.end_ns - t.start_ns >= DEVICE_NS, "{t:?}");
        assert_eq!(t.overlap, Overlap::NotQueued, "{t:?}");
    }
    for pair in timings.windows(2) {
        assert!(pair[1].start_ns >= pair[0].end_ns, "{pair:?}");
    }
}

#[test]
fn with_event_timestamps_at_depth_two_queued_runs_are_proven_to_overlap_and_start_at_their_predecessors_end()
 {
    // Runs long against the host's per-run work, so each launch lands while its predecessor
    // still runs.
    let timings = timings(2, true, 6, 50 * DEVICE_NS);
    for t in &timings {
        assert_eq!(t.source, TimingSource::EventTimestamps, "{t:?}");
        assert!(t.start_ns <= t.end_ns, "{t:?}");
    }
    assert!(timings.iter().skip(1).any(|t| t.overlap == Overlap::Proven), "{timings:?}");
    for pair in timings.windows(2) {
        // The start event waits behind the predecessor's boundary on the AICore stream.
        assert!(pair[1].start_ns >= pair[0].end_ns, "{pair:?}");
    }
}

#[test]
fn without_event_timestamps_the_simulator_times_runs_from_their_timing_buffers() {
    for t in timings(2, false, 3, DEVICE_NS) {
        assert_eq!(t.source, TimingSource::TimingBuffer, "{t:?}");
    }
}
