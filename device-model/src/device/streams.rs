//! [`Device`]'s stream and event calls: creating, destroying and querying streams,
//! recording events and waiting on them.
//! Apart from [`super`] for length: the calls by what they act on, the engine apart.

use status_latch::AclCode;

use super::{
    CallError, Capture, Dead, Device, Event, EventState, Note, Phase, RecordRun, STREAM_ABORT,
    Stream, TaskKind,
};
use crate::config::Ns;
use crate::faults::Site;

impl Device {
    // ----- streams ----------------------------------------------------------------------

    /// `aclrtCreateStreamWithConfig`: stream `id` (the backend's handle), empty from `now`;
    /// returns its number (`aclrtStreamGetId`).
    ///
    /// # Errors
    ///
    /// The device fault, or a `stream-create` rule's code.
    pub fn create_stream(&mut self, id: u64, now: Ns) -> Result<i32, AclCode> {
        self.fault_now(now)?;
        self.fail_at(Site::StreamCreate, None)?;
        let number = self.next_stream_number;
        self.next_stream_number = number.saturating_add(1);
        self.streams.insert(id, Stream { number, prev_end: now, ..Stream::default() });
        Ok(number)
    }

    /// Whether stream `id` still has tasks to run (`None`: not live). A stream halted by a
    /// fault under the legacy switch has none.
    #[must_use]
    pub fn stream_busy(&self, id: u64) -> Option<bool> {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.get(&id).map(|s| !s.idle(legacy))
    }

    /// `aclrtDestroyStream(Force)`: stream `id` dies; its queued and running tasks are
    /// dropped (their runs publish nothing) and an event that captured unfinished work on it
    /// never completes. Whether to wait for its work first is the backend's.
    ///
    /// # Errors
    ///
    /// A dead stream, or a `stream-destroy` rule's code (the stream survives).
    pub fn destroy_stream(&mut self, id: u64, now: Ns) -> Result<(), CallError> {
        self.stream(id)?;
        self.fail_at(Site::StreamDestroy, None)?;
        self.remove_stream(id, now);
        Ok(())
    }

    pub(super) fn remove_stream(&mut self, id: u64, now: Ns) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        for task in stream.tasks() {
            let tag = task.tag;
            self.note(|| Note::Dropped { tag, at: now });
        }
        // A run with a kernel on this stream can no longer publish.
        self.runs.retain(|_, run| run.kernels.iter().flatten().all(|k| k.stream != id));
        let abort = |capture: &mut Capture| {
            if matches!(*capture, Capture::Pending { stream, .. } if stream == id) {
                *capture = Capture::Aborted;
            }
        };
        for event in self.events.values_mut() {
            abort(&mut event.capture);
        }
        let mut aborted_heads = Vec::new();
        for (&other, s) in &mut self.streams {
            for task in &mut s.queue {
                if let TaskKind::Wait(capture) = &mut task.kind {
                    abort(capture);
                }
            }
            if let Some(head) = s.head.as_mut() {
                if let TaskKind::Wait(capture) = &mut head.task.kind {
                    abort(capture);
                    if *capture == Capture::Aborted && matches!(head.phase, Phase::Waiting) {
                        aborted_heads.push(other);
                    }
                }
            }
        }
        for other in aborted_heads {
            self.end_wait(other, now, Some(AclCode::Unknown(STREAM_ABORT)));
        }
    }

    /// Stream `id`'s number (`aclrtStreamGetId`).
    #[must_use]
    pub fn stream_number(&self, id: u64) -> Option<i32> {
        self.streams.get(&id).map(|s| s.number)
    }

    /// The live streams' handles and numbers, in handle order.
    pub fn stream_numbers(&self) -> impl Iterator<Item = (u64, i32)> + '_ {
        self.streams.iter().map(|(&id, s)| (id, s.number))
    }

    /// Whether stream `id` is live.
    #[must_use]
    pub fn has_stream(&self, id: u64) -> bool {
        self.streams.contains_key(&id)
    }

    /// The tasks submitted to stream `id` so far (what a synchronize waits for).
    #[must_use]
    pub fn stream_submitted(&self, id: u64) -> Option<u64> {
        self.streams.get(&id).map(|s| s.submitted)
    }

    /// Whether stream `id` has completed its first `upto` tasks (under the legacy switch, or
    /// halted by a fault). `true` for a stream that is gone.
    #[must_use]
    pub fn stream_reached(&self, id: u64, upto: u64) -> bool {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.get(&id).is_none_or(|s| s.completed >= upto || (legacy && s.sticky.is_some()))
    }

    /// Stream `id`'s sticky code as of `now` (`Ok(None)`: clean).
    ///
    /// # Errors
    ///
    /// A dead stream.
    pub fn stream_sticky(&self, id: u64, now: Ns) -> Result<Option<AclCode>, CallError> {
        Ok(self.stream(id)?.sticky.filter(|(since, _)| *since <= now).map(|(_, code)| code))
    }

    /// Whether every stream is idle (drained, or halted by a fault under the legacy switch).
    #[must_use]
    pub fn all_idle(&self) -> bool {
        let legacy = self.semantics.legacy_event_faults;
        self.streams.values().all(|s| s.idle(legacy))
    }

    /// Streams, events and device allocations alive now.
    #[must_use]
    pub fn live_counts(&self) -> (u64, u64, u64) {
        let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
        (n(self.streams.len()), n(self.events.len()), n(self.memory.len()))
    }

    // ----- events -----------------------------------------------------------------------

    /// `aclrtCreateEventExWithFlag`: event `id` (the backend's handle), never recorded;
    /// `sync` with `ACL_EVENT_SYNC` (another stream may wait on it).
    ///
    /// # Errors
    ///
    /// The device fault.
    pub fn create_event(&mut self, id: u64, sync: bool, now: Ns) -> Result<(), AclCode> {
        self.fault_now(now)?;
        self.events.insert(id, Event { capture: Capture::Never, sync, run: None });
        Ok(())
    }

    /// Whether event `id` is live.
    #[must_use]
    pub fn has_event(&self, id: u64) -> bool {
        self.events.contains_key(&id)
    }

    /// `aclrtDestroyEvent`: `false` if it was not live.
    pub fn destroy_event(&mut self, id: u64) -> bool {
        self.events.remove(&id).is_some()
    }

    /// `aclrtRecordEvent`: a task on `stream` that passes once every task before it has; the
    /// event captures it (a later record moves the event, not a wait already queued on it).
    ///
    /// # Errors
    ///
    /// A dead stream or event, the device fault, a refused enqueue, an `event-record` rule's
    /// code.
    pub fn record_event(
        &mut self,
        event: u64,
        stream: u64,
        run: RecordRun,
        tag: u64,
        now: Ns,
    ) -> Result<(), CallError> {
        let (last_run, after_arm) = {
            let s = self.stream(stream)?;
            (s.last_run, s.after_arm)
        };
        if !self.events.contains_key(&event) {
            return Err(CallError::Dead(Dead::Event(event)));
        }
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        let run = match run {
            RecordRun::Armed => None,
            RecordRun::Known(run) => {
                self.fail_at(Site::EventRecord, run)?;
                run
            }
            RecordRun::LastKernel if after_arm => None,
            RecordRun::LastKernel => {
                self.fail_at(Site::EventRecord, last_run)?;
                last_run
            }
        };
        let seq = self.enqueue(stream, TaskKind::Record { event }, tag, false, now);
        if let Some(e) = self.events.get_mut(&event) {
            e.capture = Capture::Pending { stream, seq };
            e.run = run;
        }
        Ok(())
    }

    /// The run whose launch recorded event `id` last.
    #[must_use]
    pub fn event_run(&self, id: u64) -> Option<u64> {
        self.events.get(&id).and_then(|e| e.run)
    }

    /// `aclrtStreamWaitEvent`: `stream`'s later tasks start once the tasks the event captured
    /// now have completed (a never-recorded event: no wait).
    ///
    /// # Errors
    ///
    /// A dead event or stream, 207000 for an event without `ACL_EVENT_SYNC`, the device fault,
    /// a refused enqueue.
    pub fn stream_wait_event(
        &mut self,
        stream: u64,
        event: u64,
        tag: u64,
        now: Ns,
    ) -> Result<(), CallError> {
        let Some(e) = self.events.get(&event) else {
            return Err(CallError::Dead(Dead::Event(event)));
        };
        if !e.sync {
            return Err(AclCode::RtFeatureNotSupport.into());
        }
        let capture = e.capture;
        self.stream(stream)?;
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        self.enqueue(stream, TaskKind::Wait(capture), tag, false, now);
        Ok(())
    }

    /// What event `id`'s capture amounts to now (`None`: not live).
    #[must_use]
    pub fn event_state(&self, id: u64) -> Option<EventState> {
        let event = self.events.get(&id)?;
        Some(match event.capture {
            Capture::Never | Capture::Done(_) => EventState::Complete,
            Capture::Aborted => EventState::Failed(AclCode::Unknown(STREAM_ABORT)),
            Capture::Pending { stream, .. } => match self.streams.get(&stream) {
                None => EventState::Failed(AclCode::Unknown(STREAM_ABORT)),
                Some(s) if self.semantics.legacy_event_faults => {
                    s.sticky.map_or(EventState::NotReady, |(_, code)| EventState::Failed(code))
                }
                Some(_) => EventState::NotReady,
            },
        })
    }

    /// When event `id` completed: `Some(None)` never recorded, `Some(Some(t))` passed at `t`,
    /// `None` not passed (or not live).
    #[must_use]
    pub fn event_passed(&self, id: u64) -> Option<Option<Ns>> {
        match self.events.get(&id)?.capture {
            Capture::Never => Some(None),
            Capture::Done(at) => Some(Some(at)),
            Capture::Pending { .. } | Capture::Aborted => None,
        }
    }
}
