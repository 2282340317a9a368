//! A run's two kernel launches (the model runs them; here the host's cost, the launch
//! context, the trace of a run's kernels and the simulator's checks of L-5 and L-13).

use std::collections::BTreeMap;

use device_model::{CallError, Engine, KernelSpec, RunKey};
use lane_core::RunId;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, EventHandle, LaunchContext, LaunchStage, RunArgs};

use super::{DeviceFailure, Named, SimDevice, TaskTrace};
use crate::costs::Cost;
use crate::trace::{KernelRecord, Record, Side};

/// An AICore kernel enqueued in its run's launch, waiting for its AICPU partner's.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingCore {
    args: RunArgs,
    pub(super) stream: StreamHandle,
    enqueued: u64,
    tag: u64,
    /// The run's `core_done` record, made while the kernel waits for its partner: the event,
    /// when it was recorded and its task's tag.
    pub(super) core_done: Option<(EventHandle, u64, u64)>,
}

/// The model's key for a run's two kernels.
const fn key(args: &RunArgs) -> RunKey {
    RunKey { handshake: args.handshake.0, epoch: args.epoch }
}

impl SimDevice {
    /// Where the executor is in a run's launch ([`Device::launch_context`]): a context that
    /// does not continue the pending AICore kernel's launch orphans it.
    ///
    /// [`Device::launch_context`]: lane_driver::Device::launch_context
    pub(super) fn follow_launch_context(&mut self, context: Option<LaunchContext>) {
        // Only the pending kernel's own `Kernels` stage continues its launch.
        let continues = |p: &PendingCore| {
            context.is_some_and(|c| c.run == p.args.run && c.stage == LaunchStage::Kernels)
        };
        if self.pending_core.is_some_and(|p| !continues(&p)) {
            self.orphan_pending_core();
        }
        self.launch = context;
    }

    /// The kernel of a run on `engine`, as the model runs it: the run's preamble and device
    /// time; the scheduler writes the timing buffer and the status header and publishes the
    /// record.
    fn run_kernel(&self, engine: Engine, args: &RunArgs, tag: u64) -> KernelSpec {
        let duration = self
            .costs
            .get(Cost::RunPreamble)
            .saturating_add(self.run_times.of(self.seed, args.run));
        let scheduler = engine == Engine::Aicpu;
        KernelSpec {
            timing: scheduler.then_some(args.timing.0),
            header: scheduler.then_some(args.status_header.0),
            header_bytes: if scheduler { self.clean_header.clone() } else { Vec::new() },
            run: Some(key(args)),
            record: scheduler.then_some(args.record.0),
            epoch: args.epoch,
            run_id: Some(args.run.0),
            tag,
            ..KernelSpec::new(engine, duration)
        }
    }

    /// The runner's AICore launch: the kernel is enqueued and spins until its AICPU partner
    /// starts.
    pub(super) fn run_launch_aicore(
        &mut self,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        self.call(
            "launch_aicore",
            Cost::KernelLaunch,
            Named::Run(Some(args.run)),
            |d, _| {
                if let Some(waiting) = d.pending_core.map(|p| p.args.run) {
                    // Only a launch's end leaves a kernel without its partner; a second
                    // AICore kernel within one launch breaks L-5's order.
                    d.violation(format!(
                        "run {}'s AICore kernel was launched while run {}'s still waited for its AICPU partner (L-5)",
                        args.run.0, waiting.0
                    ));
                    d.orphan_pending_core();
                }
                if !d.binary_loaded {
                    d.spend(Cost::FirstAicoreLaunch);
                }
                let args = *args;
                let now = d.host_ns;
                let queued = d.run_ends.values().any(|end| end.is_none_or(|e| e > now));
                let tag = d.new_tag();
                let spec = d.run_kernel(Engine::Aicore, &args, tag);
                d.model
                    .launch(stream.0, spec, now)
                    .map_err(|e| d.refused_launch("launch_aicore", stream, e))?;
                d.binary_loaded = true;
                if queued {
                    d.queued_launches += 1;
                }
                d.live_runs.insert(args.run, args);
                d.journal.note_epoch(args.epoch, args.run);
                d.check_device_invariants();
                d.tasks.insert(tag, TaskTrace::kernel(args.run, Side::Aicore));
                d.pending_core = Some(PendingCore {
                    args,
                    stream,
                    enqueued: now,
                    tag,
                    core_done: None,
                });
                Ok(())
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    fn refused_launch(&mut self, call: &str, stream: StreamHandle, error: CallError) -> AclCode {
        match error {
            CallError::Code(code) => code,
            CallError::Dead(_) => self.dead_handle(call, "stream", stream.0),
        }
    }

    /// The runner's AICPU launch: with its AICore kernel waiting in this launch, the run's two
    /// kernels are on the device (its fate decided now) and go into the trace.
    pub(super) fn run_launch_aicpu(
        &mut self,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), AclCode> {
        let args = *args;
        self.call(
            "launch_aicpu",
            Cost::KernelLaunch,
            Named::Run(Some(args.run)),
            |d, _| {
                if !d.model.has_stream(stream.0) {
                    return Err(d.dead_handle("launch_aicpu", "stream", stream.0));
                }
                let run = args.run;
                let Some(core) = d.pending_core.filter(|p| p.args.run == run) else {
                    d.violation(format!(
                        "run {}'s AICPU kernel was launched without its AICore kernel waiting for it in its launch (L-5)",
                        run.0
                    ));
                    return Ok(());
                };
                if core.stream == stream {
                    d.fail(DeviceFailure::Deadlock(format!(
                        "run {} has both kernels on stream h{}: the AICPU scheduler queues behind AICore \
                         workers that wait for it forever (the pair must be two streams)",
                        run.0, stream.0
                    )));
                }
                let now = d.host_ns;
                let tag = d.new_tag();
                let spec = d.run_kernel(Engine::Aicpu, &args, tag);
                // A refused AICPU launch leaves the AICore kernel enqueued, spinning: orphaned
                // when its launch ends ([`Device::launch_context`]).
                let launched = d
                    .model
                    .launch(stream.0, spec, now)
                    .map_err(|e| d.refused_launch("launch_aicpu", stream, e))?;
                d.pending_core = None;
                d.run_ends.insert(run, None);
                d.tasks.insert(tag, TaskTrace::kernel(run, Side::Aicpu));
                if let Some(task) = d.tasks.get_mut(&core.tag) {
                    task.fate.clone_from(&launched.fate);
                }
                if let Some(task) = d.tasks.get_mut(&tag) {
                    task.fate = launched.fate;
                }
                if let Some((event, recorded_ns, done_tag)) = core.core_done {
                    d.record_event_task(core.stream, event, Some(run), recorded_ns, done_tag);
                }
                d.record_kernel(core.tag, run, Side::Aicore, core.stream, core.enqueued);
                d.record_kernel(tag, run, Side::Aicpu, stream, now);
                Ok(())
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    /// A kernel's trace record, completed as the model reports its start and end.
    fn record_kernel(
        &mut self,
        tag: u64,
        run: RunId,
        side: Side,
        stream: StreamHandle,
        enqueued_ns: u64,
    ) {
        let task = self.tasks.get(&tag).cloned().unwrap_or_default();
        self.push_task(tag, |_| {
            Record::Kernel(KernelRecord {
                run: run.0,
                side,
                stream: stream.0,
                enqueued_ns,
                start_ns: task.started,
                end_ns: task.ended.map(|(at, _)| at),
                ending: task.ending(),
                killed_ns: None,
            })
        });
    }

    /// The pending AICore kernel's launch ended without its AICPU partner: it spins until the
    /// op timeout kills it (a partial launch orphans it).
    fn orphan_pending_core(&mut self) {
        let Some(pending) = self.pending_core.take() else {
            return;
        };
        let run = pending.args.run;
        self.run_ends.insert(run, None);
        if let Some((event, recorded_ns, tag)) = pending.core_done {
            // Behind a kernel that never works, it completes only after the kill.
            self.record_event_task(pending.stream, event, Some(run), recorded_ns, tag);
        }
        if let Some(task) = self.tasks.get_mut(&pending.tag) {
            task.orphaned = true;
        }
        self.record_kernel(pending.tag, run, Side::Aicore, pending.stream, pending.enqueued);
    }

    /// Device invariants that can be checked at any step (the others are checked where
    /// they could break: writes, launches, destroys, frees).
    fn check_device_invariants(&mut self) {
        let mut seen: BTreeMap<DevicePtr, RunId> = BTreeMap::new();
        let mut clash = None;
        for args in self.live_runs.values() {
            for ptr in [args.status_header, args.timing, args.handshake, args.record] {
                if let Some(other) = seen.insert(ptr, args.run) {
                    clash = Some((ptr.0, other.0, args.run.0));
                }
            }
        }
        if let Some((ptr, a, b)) = clash {
            self.violation(format!("live runs {a} and {b} share the slot buffer {ptr:#x} (L-13)"));
        }
    }

    /// The run's timing buffer was written by no run's kernels but its own (L-13, L-17).
    pub(super) fn check_timing_writer(&mut self, run: RunId) {
        let Some(args) = self.live_runs.get(&run).copied() else {
            return;
        };
        let writer = self.model.kernel_writer(args.timing.0).map(RunId);
        if let Some(writer) = writer.filter(|w| *w != run) {
            self.violation(format!(
                "run {}'s timing buffer {:#x} was last written by run {}'s kernels (L-13)",
                run.0, args.timing.0, writer.0
            ));
        }
    }
}
