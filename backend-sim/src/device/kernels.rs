//! Kernels: a run's two launches, the AICore/AICPU handshake, the run's timing and fate,
//! orphaned AICore kernels, and the writes the kernels make (the result record among them).
//! A run follows its launch context, never the order of calls; both kernels end together,
//! and a run's slot buffers are written only by its own kernels.

use std::collections::BTreeMap;

use lane_core::RunId;
use lane_core::status_latch::{
    self, AclCode, HeaderLayout, RecordSource, RecordWrite, encode_record,
};
use lane_core::stream_pair::StreamHandle;
use lane_driver::{DevicePtr, EventHandle, LaunchContext, LaunchStage, RunArgs};

use super::events::Capture;
use super::{DeviceFailure, Named, PublishedRecord, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Latched, Site};
use crate::trace::{Ending, KernelRecord, Record, Side};

/// What a run's AICPU scheduler publishes at its end.
#[derive(Clone, Copy, Debug)]
enum Publish {
    /// An ok record.
    Ok,
    /// An error record with the latched code (the header latches it too).
    Error(Latched),
    /// No record (a `silent` run): the region keeps whatever it held.
    Nothing,
}

/// The status header's error tail, the payload of a tensormap_and_ringbuffer record
/// (device-truth §2: bytes 784..848 of the 896-byte header).
const ERROR_TAIL: core::ops::Range<usize> = 784..848;

/// An AICore kernel enqueued and waiting for its AICPU partner's launch.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingCore {
    args: RunArgs,
    pub(super) stream: StreamHandle,
    enqueued: u64,
    start: Option<u64>,
    /// The run's `core_done` record, made while the kernel waits for its partner: the event
    /// and when it was recorded. Its task is enqueued behind the kernel once the kernel's end
    /// is known (at the AICPU launch).
    pub(super) core_done: Option<(EventHandle, u64)>,
}

impl SimDevice {
    /// Where the executor is in a run's launch ([`Device::launch_context`]): a context that
    /// does not continue the pending AICore kernel's launch orphans it.
    ///
    /// [`Device::launch_context`]: lane_driver::Device::launch_context
    pub(super) fn follow_launch_context(&mut self, context: Option<LaunchContext>) {
        // Only the pending kernel's own `Kernels` stage continues its launch: any other
        // context (`None`, or another launch's arm) means the launch ended without the
        // AICPU partner, so the kernel is orphaned now, whatever other threads call.
        let continues = |p: &PendingCore| {
            context.is_some_and(|c| c.run == p.args.run && c.stage == LaunchStage::Kernels)
        };
        if self.pending_core.is_some_and(|p| !continues(&p)) {
            self.orphan_pending_core();
        }
        self.launch = context;
    }

    /// The runner's AICore launch: the kernel is enqueued and waits for its AICPU partner,
    /// whose launch decides its end.
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
                if d.streams.contains_key(&stream) {
                    d.sticky_now().and_then(|()| {
                        if let Some(Injected::Fail(code)) =
                            d.faults.decide(Site::AicoreLaunch, Some(args.run.0))
                        {
                            return Err(code);
                        }
                        d.binary_loaded = true;
                        let now = d.host_ns;
                        if d.run_ends.values().any(|end| end.is_none_or(|e| e > now)) {
                            d.queued_launches += 1;
                        }
                        d.live_runs.insert(args.run, args);
                        d.journal.note_epoch(args.epoch, args.run);
                        d.check_device_invariants();
                        let start_ns = d.task_start(stream, d.costs.get(Cost::KernelStartLatency));
                        // The AICore kernel's end is known once its scheduler is enqueued.
                        d.enqueue(stream, start_ns, None);
                        d.pending_core = Some(PendingCore {
                            args,
                            stream,
                            enqueued: now,
                            start: start_ns,
                            core_done: None,
                        });
                        Ok(())
                    })
                } else {
                    Err(d.dead_handle("launch_aicore", "stream", stream.0))
                }
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    /// The runner's AICPU launch: with its AICore kernel waiting in this launch, the run
    /// starts ([`Self::start_run`]).
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
                if !d.streams.contains_key(&stream) {
                    return Err(d.dead_handle("launch_aicpu", "stream", stream.0));
                }
                d.sticky_now()?;
                if let Some(Injected::Fail(code)) =
                    d.faults.decide(Site::AicpuLaunch, Some(args.run.0))
                {
                    // The AICore kernel stays enqueued, spinning: orphaned when its launch
                    // ends ([`Device::launch_context`]).
                    return Err(code);
                }
                d.start_run(stream, args);
                Ok(())
            },
            |_| format!("run {} on h{}", args.run.0, stream.0),
        )
    }

    /// Both kernels of `args.run` are enqueued (AICore pending, AICPU on `aicpu`): decide
    /// the run's fate, compute its device times and schedule its writes.
    fn start_run(&mut self, aicpu: StreamHandle, args: RunArgs) {
        let run = args.run;
        let now = self.host_ns;
        let Some(core) = self.pending_core.take().filter(|p| p.args.run == run) else {
            self.violation(format!(
                "run {}'s AICPU kernel was launched without its AICore kernel waiting for it in its launch (L-5)",
                run.0
            ));
            return;
        };
        if core.stream == aicpu {
            self.fail(DeviceFailure::Deadlock(format!(
                "run {} has both kernels on stream h{}: the AICPU scheduler queues behind AICore \
                 workers that wait for it forever (the pair must be two streams)",
                run.0, aicpu.0
            )));
            self.enqueue(aicpu, None, None);
            self.run_ends.insert(run, None);
            return;
        }
        let latency = self.costs.get(Cost::KernelStartLatency);
        let aicpu_start = self.task_start(aicpu, latency);
        let both_start = core.start.zip(aicpu_start).map(|(c, p)| c.max(p));
        let injected = self.faults.decide(Site::Run, Some(run.0));
        let device_ns = self.run_times.of(self.seed, run);
        let preamble = self.costs.get(Cost::RunPreamble);
        // Each kernel's ending, `[aicore, aicpu]`. Continue-on-failure (device-truth §1): a
        // run behind a faulted task still runs, whatever its stream's sticky code.
        let (end, endings) = match both_start {
            None => (None, [Ending::Blocked; 2]),
            Some(s) => {
                let normal_end = s.saturating_add(preamble).saturating_add(device_ns);
                let killed_at = s.saturating_add(self.op_timeout_ns);
                match injected {
                    Some(Injected::Hang) => {
                        // The op timeout (SPEC L-6) kills the hung AICore kernel before the
                        // host's deadline; its scheduler, the workers gone, exits unpublished.
                        self.fault_streams(killed_at, &[(core.stream, AclCode::RtAicoreTimeout)]);
                        (
                            Some(killed_at),
                            [Ending::OpTimeout(AclCode::RtAicoreTimeout), Ending::Silent],
                        )
                    }
                    Some(Injected::HangAicpu) => {
                        self.fault_streams(
                            killed_at,
                            &[
                                (aicpu, AclCode::RtAicpuTimeout),
                                (core.stream, AclCode::RtAicoreTimeout),
                            ],
                        );
                        (
                            Some(killed_at),
                            [
                                Ending::OpTimeout(AclCode::RtAicoreTimeout),
                                Ending::OpTimeout(AclCode::RtAicpuTimeout),
                            ],
                        )
                    }
                    Some(Injected::Stuck) => (None, [Ending::Hang; 2]),
                    Some(Injected::Exception(code)) => {
                        // The kernels fault as they would have ended, so a queued successor
                        // has been launched before the device turns bad. The code names the
                        // engine whose stream it faults.
                        let code = match code {
                            AclCode::RtAicoreException | AclCode::RtAicoreTimeout => {
                                self.fault_streams(normal_end, &[(core.stream, code)])
                            }
                            AclCode::RtAicpuException | AclCode::RtAicpuTimeout => {
                                self.fault_streams(normal_end, &[(aicpu, code)])
                            }
                            _ => self
                                .fault_streams(normal_end, &[(core.stream, code), (aicpu, code)]),
                        };
                        (Some(normal_end), [Ending::Exception(code); 2])
                    }
                    Some(Injected::Latch(latched)) => {
                        // The AICPU kernel returns a fatal status: 507018 stays on its stream
                        // (device-truth §1), read by any later synchronize of it. The device
                        // is not made bad: later enqueues still run (as acl-fake's default).
                        self.fault_stream_only(normal_end, aicpu, AclCode::RtAicpuException);
                        (Some(normal_end), [Ending::Latched(latched); 2])
                    }
                    Some(Injected::Silent) => (Some(normal_end), [Ending::Silent; 2]),
                    _ => (Some(normal_end), [Ending::Clean; 2]),
                }
            }
        };
        // Both kernels end with the run; each stream's tail is the run's end.
        if let Some(st) = self.streams.get_mut(&core.stream) {
            st.tail = end;
        }
        if let Some((event, recorded_ns)) = core.core_done {
            // `core_done` behind the AICore kernel (it never completes behind one that never
            // ends).
            let task_start = self.task_start(core.stream, 0);
            let complete_at = task_start.map(|s| s.saturating_add(self.costs.get(Cost::EventTask)));
            self.enqueue(core.stream, task_start, complete_at);
            self.events.insert(
                event,
                Some(Capture {
                    run: Some(run),
                    complete_at,
                }),
            );
            self.journal.push(|| Record::EventTask {
                stream: core.stream.0,
                event: event.0,
                run: Some(run.0),
                recorded_ns,
                complete_ns: complete_at,
            });
        }
        self.enqueue(aicpu, aicpu_start, end);
        self.run_ends.insert(run, end);
        self.run_streams.insert(run, [core.stream, aicpu]);
        if let (Some(s), Some(e)) = (both_start, end) {
            let writes = match endings[1] {
                Ending::Clean => Some(Publish::Ok),
                Ending::Latched(code) => Some(Publish::Error(code)),
                Ending::Silent if endings[0] == Ending::Silent => Some(Publish::Nothing),
                _ => None,
            };
            if let Some(publish) = writes {
                self.schedule_run_writes(args, s, e, publish);
            }
        }
        let enqueued = [core.enqueued, now];
        let starts = [core.start, aicpu_start];
        for (i, (side, stream)) in [(Side::Aicore, core.stream), (Side::Aicpu, aicpu)]
            .into_iter()
            .enumerate()
        {
            let record = KernelRecord {
                run: run.0,
                side,
                stream: stream.0,
                enqueued_ns: enqueued.get(i).copied().unwrap_or(now),
                start_ns: starts.get(i).copied().flatten(),
                end_ns: end,
                ending: endings.get(i).copied().unwrap_or(Ending::Clean),
                killed_ns: None,
            };
            self.journal.push(|| Record::Kernel(record));
        }
    }

    /// The kernels' writes: the handshake when the workers report, the timing buffer and
    /// the status header when the run ends, and the result record the AICPU scheduler
    /// publishes at its end (before the run's boundary can complete), stamped with the
    /// run's epoch.
    fn schedule_run_writes(&mut self, args: RunArgs, start: u64, end: u64, publish: Publish) {
        let run = args.run;
        self.write_later(start, run, args.handshake, run.0.to_le_bytes().to_vec());
        let mut timing = start.to_le_bytes().to_vec();
        timing.extend_from_slice(&end.to_le_bytes());
        self.write_later(end, run, args.timing, timing);
        let latched = match publish {
            Publish::Error(latched) => Some(latched),
            Publish::Ok | Publish::Nothing => None,
        };
        let status = Latched::status(latched, self.layout);
        let mut header = vec![0; self.layout.size()];
        if status_latch::encode_into(self.layout, &status, &mut header).is_err() {
            self.violation("status header layout larger than its buffer".to_owned());
        }
        let record = match publish {
            Publish::Nothing => None,
            Publish::Ok => Some(encode_record(args.epoch, &RecordWrite::Ok)),
            Publish::Error(latched) => {
                // tensormap_and_ringbuffer's payload is its header's error tail; host_build_graph
                // has none.
                let payload = match self.layout {
                    HeaderLayout::TensormapAndRingbuffer => {
                        header.get(ERROR_TAIL).unwrap_or_default()
                    }
                    HeaderLayout::HostBuildGraph => &[],
                };
                Some(encode_record(
                    args.epoch,
                    &RecordWrite::Error {
                        code: latched.code.value(),
                        source: RecordSource::Header,
                        payload,
                    },
                ))
            }
        };
        self.write_later(end, run, args.status_header, header);
        if let Some(bytes) = record {
            self.write_later(end, run, args.record, bytes.to_vec());
            if let Some(write) = self.pending_writes.last_mut() {
                write.record = Some(match publish {
                    Publish::Error(_) => PublishedRecord::Error,
                    Publish::Ok | Publish::Nothing => PublishedRecord::Ok,
                });
            }
        }
    }

    /// The pending AICore kernel's launch ended without its AICPU partner: it spins forever
    /// (a partial launch orphans it).
    fn orphan_pending_core(&mut self) {
        let Some(pending) = self.pending_core.take() else {
            return;
        };
        if let Some(stream) = self.streams.get_mut(&pending.stream) {
            stream.tail = None;
        }
        self.run_ends.insert(pending.args.run, None);
        if let Some((event, recorded_ns)) = pending.core_done {
            // Behind a kernel that never ends: the event never completes.
            self.journal.push(|| Record::EventTask {
                stream: pending.stream.0,
                event: event.0,
                run: Some(pending.args.run.0),
                recorded_ns,
                complete_ns: None,
            });
        }
        self.journal.push(|| {
            Record::Kernel(KernelRecord {
                run: pending.args.run.0,
                side: Side::Aicore,
                stream: pending.stream.0,
                enqueued_ns: pending.enqueued,
                start_ns: pending.start,
                end_ns: None,
                ending: Ending::Orphaned,
                killed_ns: None,
            })
        });
    }

    /// Device invariants that can be checked at any step (the others are checked where
    /// they could break: enqueue, writes, launches, destroys).
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
            self.violation(format!(
                "live runs {a} and {b} share the slot buffer {ptr:#x} (L-13)"
            ));
        }
    }

    /// The run's timing buffer was written by no run's kernels but its own (L-13, L-17).
    pub(super) fn check_timing_writer(&mut self, run: RunId) {
        let Some(args) = self.live_runs.get(&run).copied() else {
            return;
        };
        let writer = self
            .locate(args.timing)
            .and_then(|(base, _)| self.memory.get(&base))
            .and_then(|a| a.kernel_writer);
        if let Some(writer) = writer.filter(|w| *w != run) {
            self.violation(format!(
                "run {}'s timing buffer {:#x} was last written by run {}'s kernels (L-13)",
                run.0, args.timing.0, writer.0
            ));
        }
    }
}
