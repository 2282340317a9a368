//! Events: created, recorded on a stream, waited on by a stream or the host, destroyed. An
//! event completes when its stream passes the tasks it captured (a never-recorded one waits
//! as success), and a record made in a run's launch belongs to that run.

use lane_core::RunId;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{EventHandle, LaunchStage};

use super::{DeviceFailure, HostTime, Named, SimDevice};
use crate::costs::Cost;
use crate::faults::{Injected, Site};
use crate::trace::Record;

/// First event handle.
pub(super) const FIRST_EVENT: u64 = 1001;

/// What an event's last record captured: the run it belongs to, and when it completes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Capture {
    pub(super) run: Option<RunId>,
    /// When the stream passes the event; `None` = never.
    pub(super) complete_at: Option<u64>,
}

impl SimDevice {
    /// `aclrtCreateEventExWithFlag`: a new event, never recorded (refused while the device is
    /// bad).
    pub(super) fn create_event_call(&mut self) -> Result<EventHandle, AclCode> {
        self.call(
            "create_event",
            Cost::EventCreate,
            Named::Run(None),
            |d, _| {
                d.sticky_now().map(|()| {
                    let handle = d.next_event;
                    d.next_event += 1;
                    d.events.insert(EventHandle(handle), None);
                    EventHandle(handle)
                })
            },
            |result| result.map(|h| format!("-> e{}", h.0)).unwrap_or_default(),
        )
    }

    /// `aclrtRecordEvent`: the event captures the stream's tasks so far; a record in a run's
    /// `Kernels` stage is that run's.
    pub(super) fn record_event_call(
        &mut self,
        event: EventHandle,
        stream: StreamHandle,
    ) -> Result<(), AclCode> {
        // The "armed" record belongs to the arm, before its run's kernels: no run, and no
        // record fault (those name the run's fence records, as on the synchronous path).
        let armed = self.launch.is_some_and(|c| c.stage == LaunchStage::Arm);
        let run = self
            .launch
            .filter(|c| c.stage == LaunchStage::Kernels)
            .map(|c| c.run);
        self.call(
            "record_event",
            Cost::EventRecord,
            Named::Run(run),
            |d, start| {
                if !d.events.contains_key(&event) {
                    return Err(d.dead_handle("record_event", "event", event.0));
                }
                if !d.streams.contains_key(&stream) {
                    return Err(d.dead_handle("record_event", "stream", stream.0));
                }
                d.sticky_now()?;
                if !armed {
                    if let Some(Injected::Fail(code)) =
                        d.faults.decide(Site::EventRecord, run.map(|r| r.0))
                    {
                        return Err(code);
                    }
                }
                // A record on the stream of an AICore kernel waiting for its partner (only
                // ever in its launch: the launch's end orphans it) is that run's `core_done`
                // (L-5). Its task goes behind the kernel, whose end the AICPU launch decides.
                if let Some(pending) = d.pending_core.as_mut().filter(|p| p.stream == stream) {
                    pending.core_done = Some((event, start));
                    d.events.insert(
                        event,
                        Some(Capture {
                            run,
                            complete_at: None,
                        }),
                    );
                    return Ok(());
                }
                let task_start = d.task_start(stream, 0);
                let complete_at =
                    task_start.map(|s| s.saturating_add(d.costs.get(Cost::EventTask)));
                d.enqueue(stream, task_start, complete_at);
                d.events.insert(event, Some(Capture { run, complete_at }));
                d.journal.push(|| Record::EventTask {
                    stream: stream.0,
                    event: event.0,
                    run: run.map(|r| r.0),
                    recorded_ns: start,
                    complete_ns: complete_at,
                });
                Ok(())
            },
            |_| format!("e{} on h{}", event.0, stream.0),
        )
    }

    /// `aclrtStreamWaitEvent`: the stream's later tasks start once the event's capture has
    /// completed.
    pub(super) fn stream_wait_event_call(
        &mut self,
        stream: StreamHandle,
        event: EventHandle,
    ) -> Result<(), AclCode> {
        self.call(
            "stream_wait_event",
            Cost::StreamWait,
            Named::Effect,
            |d, start| match d.events.get(&event).copied() {
                None => Err(d.dead_handle("stream_wait_event", "event", event.0)),
                Some(capture) => match d.streams.get(&stream).copied() {
                    None => Err(d.dead_handle("stream_wait_event", "stream", stream.0)),
                    Some(st) => d.sticky_now().map(|()| {
                        // Later tasks start after the capture completes (never, if it never
                        // does); a never-recorded event is no wait at all.
                        let after = capture.map_or(Some(start), |c| c.complete_at);
                        let tail = st.tail.zip(after).map(|(t, a)| t.max(a));
                        if let Some(s) = d.streams.get_mut(&stream) {
                            s.tail = tail;
                        }
                    }),
                },
            },
            |_| format!("h{} waits e{}", stream.0, event.0),
        )
    }

    /// `aclrtSynchronizeEventWithTimeout`: the host blocks until the event's capture completes;
    /// never the device's sticky error.
    pub(super) fn synchronize_event_call(
        &mut self,
        event: EventHandle,
        timeout_ms: i32,
    ) -> Result<(), AclCode> {
        // The wait's host time is billed to the run whose launch recorded the event.
        let capture = self.events.get(&event).copied();
        let run = capture.flatten().and_then(|c| c.run);
        self.call(
            "synchronize_event",
            HostTime::ByOutcome,
            Named::Run(run),
            |d, _| match capture {
                None => {
                    d.spend_ns(d.costs.get(Cost::EventQuery), run);
                    Err(d.dead_handle("synchronize_event", "event", event.0))
                }
                Some(_) if timeout_ms == 0 || timeout_ms < -1 => {
                    d.spend_ns(d.costs.get(Cost::EventQuery), run);
                    Err(AclCode::RtParamInvalid)
                }
                Some(capture) => {
                    if let Some(Injected::Fail(code)) =
                        d.faults.decide(Site::EventWait, run.map(|r| r.0))
                    {
                        d.spend_ns(d.costs.get(Cost::EventQuery), run);
                        Err(code)
                    } else {
                        d.wait_for_capture(event, capture, timeout_ms, run)
                    }
                }
            },
            |_| format!("e{} timeout {timeout_ms} ms", event.0),
        )
    }

    /// Blocks on an event's capture for at most `timeout_ms`.
    fn wait_for_capture(
        &mut self,
        event: EventHandle,
        capture: Option<Capture>,
        timeout_ms: i32,
        run: Option<RunId>,
    ) -> Result<(), AclCode> {
        let now = self.host_ns;
        let complete_at = match capture {
            // Never recorded: success at once (ascend-cl.md §2.4). The driver tracks records.
            None => Some(now),
            Some(c) => c.complete_at,
        };
        let timeout_ns = if timeout_ms == -1 {
            None
        } else {
            Some(
                u64::try_from(timeout_ms)
                    .unwrap_or(0)
                    .saturating_mul(1_000_000),
            )
        };
        match (complete_at, timeout_ns) {
            (Some(t), _) if t <= now => {
                self.spend_ns(self.costs.get(Cost::EventQuery), run);
                Ok(())
            }
            (Some(t), None) => {
                self.block_ns(t - now, run);
                self.spend_ns(self.costs.get(Cost::HostWakeup), run);
                Ok(())
            }
            (Some(t), Some(limit)) if t - now <= limit => {
                self.block_ns(t - now, run);
                self.spend_ns(self.costs.get(Cost::HostWakeup), run);
                Ok(())
            }
            (_, Some(limit)) => {
                self.block_ns(limit, run);
                Err(AclCode::RtEventSyncTimeout)
            }
            (None, None) => {
                self.fail(DeviceFailure::Deadlock(format!(
                    "the host waits without a timeout on event e{} whose stream never passes it",
                    event.0
                )));
                Err(AclCode::RtEventSyncTimeout)
            }
        }
    }

    /// `aclrtDestroyEvent`.
    pub(super) fn destroy_event_call(&mut self, event: EventHandle) -> Result<(), AclCode> {
        self.call(
            "destroy_event",
            Cost::EventDestroy,
            Named::Run(None),
            |d, _| {
                if d.events.remove(&event).is_some() {
                    Ok(())
                } else {
                    Err(d.dead_handle("destroy_event", "event", event.0))
                }
            },
            |_| format!("e{}", event.0),
        )
    }
}
