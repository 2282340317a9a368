//! On the simulator with host workers, `CRunner` catches its model (`SimRunner`) up on the
//! workers' prepares and finalises on the lane thread before a run's AICore launch, never
//! between its AICore and AICPU launches: a model call there is the simulated device's next
//! call after the AICore launch, which orphans that kernel (a lane that calls anything else
//! never launched its AICPU partner), and the run ended in a host wait timeout. Found by
//! `create_destroy_cycles` (about 1 simulator lane with workers in 100).

mod common;

use backend_sim::costs::Costs;
use backend_sim::{RunTimes, SharedSim, SimDevice, SimRunner};
use lane_core::status_latch::HeaderLayout;
use lane_core::{RunId, SlotId};
use lane_driver::{Device, RunArgs, Runner};
use run_lane::runner::{CRunner, ModelWork, Requests, Vtable, deferred};
use run_lane::{RunLaneConcurrency, RunLaneRunner};

fn args(device: &mut SharedSim, run: u64, slot: u8) -> RunArgs {
    RunArgs {
        run: RunId(run),
        slot: SlotId(slot),
        status_header: device.malloc(1024).unwrap(),
        timing: device.malloc(16).unwrap(),
        handshake: device.malloc(64).unwrap(),
        record: device.malloc(280).unwrap(),
        epoch: lane_driver::next_epoch(),
        queued: false,
    }
}

#[test]
fn a_workers_prepare_deferred_between_a_runs_two_launches_is_caught_up_after_them() {
    let mut device = SharedSim::new(SimDevice::new(
        Costs::default(),
        HeaderLayout::TensormapAndRingbuffer,
        1,
        RunTimes { device_ns: 100_000, jitter_ppm: 0 },
    ));
    let vtable = Vtable::new(RunLaneRunner {
        concurrency: RunLaneConcurrency { off_lane_thread: true, prepares_at_once: 2 },
        ..common::default_config().runner
    });
    let deferred = deferred();
    let queue = deferred.clone().expect("a queue");
    let mut runner = CRunner::new(vtable, Requests::default(), SimRunner, deferred, 0);
    let (aicpu, aicore) = (device.create_stream(), device.create_stream());
    let (aicpu, aicore) = (aicpu.unwrap(), aicore.unwrap());
    let events = [(); 2].map(|()| device.create_event().unwrap());
    let (first, second) = (args(&mut device, 1, 0), args(&mut device, 2, 1));

    // A worker prepared run 1 (its model share deferred); the lane thread launches it, and
    // meanwhile a second worker finishes preparing run 2.
    let prepared = |run, slot| ModelWork::Prepare(RunId(run), SlotId(slot), false);
    queue.lock().unwrap().push_back(prepared(1, 0));
    runner.launch_aicore(&mut device, aicore, &first).unwrap();
    queue.lock().unwrap().push_back(prepared(2, 1));
    runner.launch_aicpu(&mut device, aicpu, &first).unwrap();
    device.record_event(events[0], aicpu).unwrap();
    device.record_event(events[1], aicore).unwrap();
    for event in events {
        assert_eq!(device.synchronize_event(event, 50_000), Ok(()), "run 1 ran");
    }
    let deferred = queue.lock().unwrap().len();
    assert_eq!(deferred, 1, "run 2's prepare still deferred");
    // Run 2's launch catches the model up first.
    runner.launch_aicore(&mut device, aicore, &second).unwrap();
    assert!(queue.lock().unwrap().is_empty());
    runner.launch_aicpu(&mut device, aicpu, &second).unwrap();
    assert_eq!(device.lock().failure(), None);
}
