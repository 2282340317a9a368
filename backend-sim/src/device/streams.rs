//! Streams: FIFO queues of tasks on the virtual clock, and their sticky codes. A task
//! starts only after the stream's previous task ended (checked at every enqueue), and a
//! faulted stream keeps its code until it is destroyed or the device force-reset.

use lane_core::RunId;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;

use super::{DeviceFailure, HostTime, Named, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};
use crate::trace::Record;

/// First stream handle (AICPU and AICore handles are drawn from one counter).
pub(super) const FIRST_STREAM: u64 = 1;

/// A live stream: where its queue ends, the FIFO check's last task, its sticky code.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stream {
    /// When the last enqueued task ends; `None` = never.
    pub(super) tail: Option<u64>,
    /// Ordinal of the last enqueued task, and its start, for the FIFO check.
    last_task: Option<(u64, Option<u64>)>,
    /// From when, and with which code, the stream is sticky-faulted.
    faulted: Option<(u64, AclCode)>,
}

impl SimDevice {
    /// `aclrtCreateStreamWithConfig`: a new stream, empty from now on (refused while the
    /// device is bad).
    pub(super) fn create_stream_call(&mut self) -> Result<StreamHandle, AclCode> {
        self.call(
            "create_stream",
            Cost::StreamCreate,
            Named::Run(None),
            |d, _| {
                d.sticky_now()
                    .and_then(|()| match d.faults.decide(Site::StreamCreate, None) {
                        Some(Injected::Fail(code)) => Err(code),
                        _ => {
                            let handle = d.next_stream;
                            d.next_stream += 1;
                            d.streams.insert(
                                StreamHandle(handle),
                                Stream {
                                    tail: Some(d.host_ns),
                                    last_task: None,
                                    faulted: None,
                                },
                            );
                            Ok(StreamHandle(handle))
                        }
                    })
            },
            |result| result.map(|h| format!("-> h{}", h.0)).unwrap_or_default(),
        )
    }

    /// `aclrtDestroyStream` (`force` false: queued work is a violation) or
    /// `aclrtDestroyStreamForce` (`force` true: queued work is dropped with the stream).
    pub(super) fn destroy_stream_call(
        &mut self,
        stream: StreamHandle,
        force: bool,
    ) -> Result<(), AclCode> {
        let name = if force {
            "destroy_stream_force"
        } else {
            "destroy_stream"
        };
        self.call(
            name,
            Cost::StreamDestroy,
            Named::Run(None),
            |d, start| match d.streams.get(&stream).copied() {
                None => Err(d.dead_handle(name, "stream", stream.0)),
                Some(s) => match d.faults.decide(Site::StreamDestroy, None) {
                    Some(Injected::Fail(code)) => Err(code),
                    _ => {
                        let queued = s.tail.is_none_or(|t| t > start);
                        if queued && !force {
                            let when = s
                                .tail
                                .map_or_else(|| "never ends".to_owned(), |t| format!("ends at {t} ns"));
                            d.violation(format!(
                                "stream h{} destroyed at {start} ns with queued work (its last task {when})",
                                stream.0
                            ));
                        }
                        if queued && force {
                            // The stream's queued kernels never write their slot buffers.
                            let dropped: Vec<RunId> = d
                                .run_streams
                                .iter()
                                .filter(|(_, streams)| streams.contains(&stream))
                                .map(|(run, _)| *run)
                                .collect();
                            d.pending_writes.retain(|w| !dropped.contains(&w.run));
                            d.pending_copies.retain(|c| c.stream != stream);
                            d.journal.push(|| Record::Note {
                                at_ns: start,
                                text: format!(
                                    "stream h{} force-destroyed: its queued work dropped",
                                    stream.0
                                ),
                            });
                        }
                        d.streams.remove(&stream);
                        Ok(())
                    }
                },
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// `aclrtStreamQuery`: whether every task on the stream has finished. As on hardware it
    /// reports no error, not even a faulted stream's sticky code (device-truth §1: a query of a
    /// drained faulted stream returns 0); [`Device::synchronize_stream`] is the call that
    /// materializes it.
    ///
    /// [`Device::synchronize_stream`]: lane_driver::Device::synchronize_stream
    pub fn query_stream(&mut self, stream: StreamHandle) -> Result<bool, AclCode> {
        self.call(
            "query_stream",
            Cost::EventQuery,
            Named::Run(None),
            |d, start| match d.streams.get(&stream) {
                None => Err(d.dead_handle("query_stream", "stream", stream.0)),
                Some(s) => Ok(s.tail.is_some_and(|t| t <= start)),
            },
            |_| format!("h{}", stream.0),
        )
    }

    /// `aclrtSynchronizeStreamWithTimeout`: waits for the stream's tasks to end, then returns
    /// its sticky code; 507046 if they do not end in time.
    pub(super) fn synchronize_stream_call(
        &mut self,
        stream: StreamHandle,
        timeout_ms: i32,
    ) -> Result<(), AclCode> {
        self.call(
            "synchronize_stream",
            HostTime::ByOutcome,
            Named::Effect,
            |d, _| match d.streams.get(&stream).copied() {
                None => {
                    d.spend(Cost::EventQuery);
                    Err(d.dead_handle("synchronize_stream", "stream", stream.0))
                }
                // A zero timeout is refused (device-truth §1), as is any negative but -1
                // (forever).
                Some(_) if timeout_ms == 0 || timeout_ms < -1 => {
                    d.spend(Cost::EventQuery);
                    Err(AclCode::RtParamInvalid)
                }
                Some(st) => {
                    d.spend(Cost::SynchronizeDevice);
                    let now = d.host_ns;
                    let limit = u64::try_from(timeout_ms)
                        .ok()
                        .map(|ms| ms.saturating_mul(1_000_000));
                    match (st.tail, limit) {
                        (Some(t), limit) if limit.is_none_or(|l| t.saturating_sub(now) <= l) => {
                            if t > now {
                                d.block_ns(t - now, None);
                                d.spend(Cost::HostWakeup);
                            }
                            // The stream's sticky code, once its tasks have ended.
                            match st.faulted {
                                Some((since, code)) if since <= d.host_ns => Err(code),
                                _ => Ok(()),
                            }
                        }
                        (_, Some(limit)) => {
                            d.block_ns(limit, None);
                            Err(AclCode::RtStreamSyncTimeout)
                        }
                        (_, None) => {
                            d.fail(DeviceFailure::Deadlock(format!(
                                "the host synchronizes stream h{} without a timeout and its tasks never end",
                                stream.0
                            )));
                            Err(AclCode::RtStreamSyncTimeout)
                        }
                    }
                }
            },
            |_| format!("h{} timeout {timeout_ms} ms", stream.0),
        )
    }

    /// Appends a task to a stream, checking FIFO order (a device invariant).
    pub(super) fn enqueue(&mut self, stream: StreamHandle, start: Option<u64>, end: Option<u64>) {
        self.tasks_enqueued += 1;
        let seq = self.tasks_enqueued;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let order_ok = match (s.last_task, start) {
            (Some((prev_seq, _)), _) if prev_seq >= seq => false,
            (Some(_), Some(start)) => s.tail.is_some_and(|t| t <= start),
            _ => true,
        };
        s.last_task = Some((seq, start));
        s.tail = end;
        if !order_ok {
            self.violation(format!(
                "task {seq} on stream h{} would start before its predecessor ended",
                stream.0
            ));
        }
    }

    /// When a task enqueued now on `stream` starts: after the kernel start latency, and
    /// after the stream's previous task plus a task switch. `None` if that never ends.
    pub(super) fn task_start(&self, stream: StreamHandle, latency: u64) -> Option<u64> {
        let tail = self.streams.get(&stream)?.tail?;
        let after_tail = tail.saturating_add(self.costs.get(Cost::TaskSwitch));
        Some(after_tail.max(self.host_ns.saturating_add(latency)))
    }

    /// Faults `stream` alone with `code` at `at` (sticky until the stream is destroyed or the
    /// device force-reset), leaving the device good: what an AICPU kernel's fatal status
    /// leaves (a latch). An earlier code on the stream stays.
    pub(super) fn fault_stream_only(&mut self, at: u64, stream: StreamHandle, code: AclCode) {
        if let Some(st) = self.streams.get_mut(&stream) {
            st.faulted.get_or_insert((at, code));
        }
    }

    /// Faults each stream with its code at `at` (sticky until the stream is destroyed or the
    /// device force-reset; later tasks still run) and makes the device bad from the earliest
    /// fault on; returns the device's sticky code (the first fault's).
    pub(super) fn fault_streams(&mut self, at: u64, faults: &[(StreamHandle, AclCode)]) -> AclCode {
        for &(stream, code) in faults {
            if let Some(st) = self.streams.get_mut(&stream) {
                st.faulted.get_or_insert((at, code));
            }
        }
        let first = faults.first().map_or(AclCode::RtInternalError, |f| f.1);
        let earliest = self.sticky.map_or(at, |(since, _)| since.min(at));
        let code = self.sticky.map_or(first, |(_, c)| c);
        self.sticky = Some((earliest, code));
        code
    }
}
