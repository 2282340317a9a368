//! The engine that moves [`Device`]'s streams forward in time: enqueueing, each task's
//! start and end, and what a kernel's ending publishes ([`Device::advance`],
//! [`Device::run_until`]; the time rules are in [`super`]'s docs).
//! Apart from the calls so the time rules read in one place.

use status_latch::AclCode;

use super::{
    Capture, CopySpec, Device, Head, HostMemory, Note, Phase, Place, RunKernel, STREAM_ABORT,
    Stream, StreamNext, Task, TaskKind,
};
use crate::config::{Engine, Ns, OpTimeoutCodeOn};
use crate::kernel::{Contribution, Ending, KernelSpec, Outcome, RunKey, planned_end};

impl Device {
    // ----- the engine -------------------------------------------------------------------

    pub(super) fn enqueue(
        &mut self,
        stream: u64,
        kind: TaskKind,
        tag: u64,
        watched: bool,
        now: Ns,
    ) -> u64 {
        let Some(s) = self.streams.get_mut(&stream) else {
            return 0;
        };
        s.after_arm = matches!(&kind, TaskKind::Copy(c)
            if matches!((c.copy.src, c.copy.dst), (Place::Host { .. }, Place::Device(_))));
        s.submitted += 1;
        let seq = s.submitted;
        s.queue.push_back(Task { seq, enqueued: now, tag, watched, kind });
        seq
    }

    /// When the front task of a stream with no running task starts.
    fn ready(&self, s: &Stream, task: &Task) -> Ns {
        let t = &self.timing;
        let (switch, latency) = match task.kind {
            TaskKind::Wait(_) => return s.prev_end,
            TaskKind::Kernel(_) => (t.task_switch, t.kernel_start_latency),
            TaskKind::Record { .. } | TaskKind::Copy(_) => (t.task_switch, 0),
        };
        s.prev_end.saturating_add(switch).max(task.enqueued.saturating_add(latency))
    }

    fn next_of(&self, s: &Stream) -> Option<Ns> {
        match &s.head {
            Some(head) => match head.phase {
                Phase::Working { end, .. } => end,
                Phase::Spinning { killed_at } => killed_at,
                Phase::Waiting => None,
            },
            None if self.semantics.legacy_event_faults && s.sticky.is_some() => None,
            None => s.queue.front().map(|task| self.ready(s, task)),
        }
    }

    /// The earliest transition due on any stream, and its stream.
    fn next_transition(&self) -> Option<(Ns, u64)> {
        self.streams.iter().filter_map(|(&id, s)| self.next_of(s).map(|t| (t, id))).min()
    }

    /// What stream `id`'s worker should do next.
    #[must_use]
    pub fn stream_next(&self, id: u64) -> StreamNext {
        let Some(s) = self.streams.get(&id) else {
            return StreamNext::Gone;
        };
        if s.head.is_none()
            && (s.queue.is_empty() || (self.semantics.legacy_event_faults && s.sticky.is_some()))
        {
            return StreamNext::Idle;
        }
        self.next_of(s).map_or(StreamNext::Blocked, StreamNext::At)
    }

    /// Applies every transition due by `now`, in time order; returns how many.
    pub fn advance(&mut self, now: Ns, host: &mut dyn HostMemory) -> usize {
        let mut applied = 0;
        while let Some((t, id)) = self.next_transition().filter(|(t, _)| *t <= now) {
            self.step(id, t, host);
            applied += 1;
        }
        applied
    }

    /// Applies transitions in time order until `done` holds, up to `deadline` (`None`: no
    /// limit). Returns when `done` came to hold (the transition's time), or `None` when it did
    /// not by the deadline (every transition due by then applied) or never can.
    pub fn run_until(
        &mut self,
        deadline: Option<Ns>,
        host: &mut dyn HostMemory,
        done: impl Fn(&Self) -> bool,
    ) -> Option<Ns> {
        loop {
            let (t, id) =
                self.next_transition().filter(|(t, _)| deadline.is_none_or(|d| *t <= d))?;
            self.step(id, t, host);
            if done(self) {
                return Some(t);
            }
        }
    }

    fn step(&mut self, id: u64, t: Ns, host: &mut dyn HostMemory) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        match s.head.as_ref().map(|h| h.phase) {
            None => self.start_front(id, t),
            Some(Phase::Working { .. }) => self.finish(id, t, host),
            Some(Phase::Spinning { .. }) => self.kill_spinning(id, t),
            Some(Phase::Waiting) => {}
        }
    }

    fn start_front(&mut self, id: u64, t: Ns) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(task) = s.queue.pop_front() else {
            return;
        };
        let timing = self.timing;
        let (phase, fail) = match &task.kind {
            TaskKind::Record { .. } => (working(t.saturating_add(timing.event_task), t), None),
            TaskKind::Copy(copy) => {
                let kib = u64::try_from(copy.copy.len).unwrap_or(u64::MAX) / 1024;
                let moving = kib.saturating_mul(timing.copy_ns_per_kib);
                (working(t.saturating_add(timing.copy_task).saturating_add(moving), t), None)
            }
            TaskKind::Wait(capture) => match *capture {
                Capture::Never => (working(t.max(task.enqueued), t), None),
                Capture::Done(at) => (working(t.max(at), t), None),
                Capture::Aborted => (working(t, t), Some(AclCode::Unknown(STREAM_ABORT))),
                Capture::Pending { .. } => (Phase::Waiting, None),
            },
            TaskKind::Kernel(_) => (Phase::Waiting, None),
        };
        let kernel = match &task.kind {
            TaskKind::Kernel(k) => Some((k.run, k.engine, task.tag)),
            _ => None,
        };
        s.head = Some(Head { task, start: t, phase, fail });
        if let Some((run, engine, tag)) = kernel {
            self.note(|| Note::KernelStarted { tag, at: t });
            self.start_kernel(id, t, run, engine);
        }
    }

    /// A kernel at the front of stream `id` since `t`: it works at once, or (the handshake)
    /// spins until its partner has started too, and then both work.
    fn start_kernel(&mut self, id: u64, t: Ns, run: Option<RunKey>, engine: Engine) {
        let paired = run.filter(|_| self.semantics.handshake);
        let Some(key) = paired else {
            self.begin_work(id, t);
            return;
        };
        let partner = self.runs.get(&key).and_then(|r| r.kernels[engine.partner().index()]);
        match partner.filter(|p| p.spinning.is_some()) {
            Some(p) => {
                self.begin_work(p.stream, t);
                self.begin_work(id, t);
                self.couple(key, t);
            }
            None => {
                let killed_at = self.op_timeout.map(|o| t.saturating_add(o));
                if let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) {
                    head.phase = Phase::Spinning { killed_at };
                }
                if let Some(k) =
                    self.runs.get_mut(&key).and_then(|r| r.kernels[engine.index()].as_mut())
                {
                    k.spinning = Some(t);
                }
            }
        }
    }

    /// The scheduler ends no earlier than its workers (the handshake): the AICPU kernel of a
    /// run whose kernels began together at `t` ends with the later of the two.
    fn couple(&mut self, key: RunKey, t: Ns) {
        let Some(run) = self.runs.get(&key) else {
            return;
        };
        let [Some(core), Some(cpu)] = run.kernels else {
            return;
        };
        let end_of = |d: &Self, k: RunKernel| match d.streams.get(&k.stream)?.head.as_ref()?.phase {
            Phase::Working { end, work_start, .. } if work_start == t => Some(end),
            _ => None,
        };
        let (Some(core_end), Some(cpu_end)) = (end_of(self, core), end_of(self, cpu)) else {
            return;
        };
        let coupled = core_end.zip(cpu_end).map(|(a, b)| a.max(b));
        if let Some(Phase::Working { end, .. }) =
            self.streams.get_mut(&cpu.stream).and_then(|s| s.head.as_mut()).map(|h| &mut h.phase)
        {
            *end = coupled;
        }
    }

    /// The kernel at the front of stream `id` starts its work at `t`: its end is planned and
    /// its timing buffer's start written.
    fn begin_work(&mut self, id: u64, t: Ns) {
        let op_timeout = self.op_timeout;
        let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) else {
            return;
        };
        let TaskKind::Kernel(spec) = &head.task.kind else {
            return;
        };
        let (end, ending) = planned_end(spec.outcome, spec.engine, spec.duration, t, op_timeout);
        head.phase = Phase::Working { end, work_start: t, ending };
        let (run, run_id, engine, timing) = (spec.run, spec.run_id, spec.engine, spec.timing);
        if let Some(k) = run
            .and_then(|key| self.runs.get_mut(&key))
            .and_then(|r| r.kernels[engine.index()].as_mut())
        {
            k.spinning = None;
            k.working = true;
        }
        if let Some(at) = timing {
            self.kernel_write(run_id, at, &t.to_le_bytes());
        }
    }

    fn kernel_write(&mut self, run: Option<u64>, addr: u64, bytes: &[u8]) -> bool {
        let landed = self.memory.write(addr, bytes, run);
        let len = bytes.len();
        self.note(|| Note::KernelWrote { run, addr, len, landed });
        landed
    }

    /// A kernel spinning for a partner that never started is killed by the op timeout.
    fn kill_spinning(&mut self, id: u64, t: Ns) {
        let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) else {
            return;
        };
        let TaskKind::Kernel(kernel) = &head.task.kind else {
            return;
        };
        let code = kernel.engine.timeout_code();
        head.phase = Phase::Working { end: Some(t), work_start: t, ending: Ending::Killed(code) };
        // It never worked: no timing, no header.
        self.end_kernel(id, t, false);
    }

    fn finish(&mut self, id: u64, t: Ns, host: &mut dyn HostMemory) {
        let Some(head) = self.streams.get(&id).and_then(|s| s.head.as_ref()) else {
            return;
        };
        match &head.task.kind {
            TaskKind::Kernel(_) => self.end_kernel(id, t, true),
            TaskKind::Record { event } => {
                let (event, seq) = (*event, head.task.seq);
                self.pass_record(id, seq, event, t);
                self.complete(id, t, Ok(()));
            }
            TaskKind::Copy(copy) => {
                let copy = copy.clone();
                let result = match copy.fail {
                    Some(code) => Err(code),
                    None => self.run_copy(copy.copy, host),
                };
                self.complete(id, t, result);
            }
            TaskKind::Wait(_) => {
                let result = head.fail.map_or(Ok(()), Err);
                self.complete(id, t, result);
            }
        }
    }

    fn run_copy(&mut self, copy: CopySpec, host: &mut dyn HostMemory) -> Result<(), AclCode> {
        let bytes = match copy.src {
            Place::Device(addr) => {
                self.memory.bytes(addr, copy.len).ok_or(AclCode::RtParamInvalid)?.to_vec()
            }
            Place::Host { addr, pinned } => host.read(addr, copy.len, pinned)?,
        };
        match copy.dst {
            Place::Device(addr) => {
                if self.memory.write(addr, &bytes, None) {
                    Ok(())
                } else {
                    Err(AclCode::RtParamInvalid)
                }
            }
            Place::Host { addr, pinned } => host.write(addr, &bytes, pinned),
        }
    }

    /// The record task `seq` of stream `id` passed at `t`: the events and waits that captured
    /// it complete.
    fn pass_record(&mut self, id: u64, seq: u64, event: u64, t: Ns) {
        let pending = Capture::Pending { stream: id, seq };
        if let Some(e) = self.events.get_mut(&event) {
            if e.capture == pending {
                e.capture = Capture::Done(t);
            }
        }
        let mut released = Vec::new();
        for (&other, s) in &mut self.streams {
            for task in &mut s.queue {
                if let TaskKind::Wait(capture) = &mut task.kind {
                    if *capture == pending {
                        *capture = Capture::Done(t);
                    }
                }
            }
            if let Some(head) = s.head.as_mut() {
                if let TaskKind::Wait(capture) = &mut head.task.kind {
                    if *capture == pending {
                        *capture = Capture::Done(t);
                        if matches!(head.phase, Phase::Waiting) {
                            released.push(other);
                        }
                    }
                }
            }
        }
        for other in released {
            self.end_wait(other, t, None);
        }
    }

    /// The wait at the front of stream `id` ends at `max(its start, t)`.
    pub(super) fn end_wait(&mut self, id: u64, t: Ns, fail: Option<AclCode>) {
        if let Some(head) = self.streams.get_mut(&id).and_then(|s| s.head.as_mut()) {
            let end = head.start.max(t);
            head.phase = working(end, head.start);
            head.fail = fail;
        }
    }

    /// The kernel at the front of stream `id` ends at `t` as planned: its writes (when it
    /// worked), its stream's result, the op-timeout code's placement, the device fault, and
    /// its run's record.
    fn end_kernel(&mut self, id: u64, t: Ns, worked: bool) {
        let Some(head) = self.streams.get(&id).and_then(|s| s.head.as_ref()) else {
            return;
        };
        let (TaskKind::Kernel(kernel), Phase::Working { ending, work_start, .. }) =
            (&head.task.kind, head.phase)
        else {
            return;
        };
        let spec = KernelSpec::clone(kernel);
        let tag = head.task.tag;
        let mut ending = ending;
        if worked {
            if let Some(at) = spec.timing {
                self.kernel_write(spec.run_id, at.saturating_add(8), &t.to_le_bytes());
            }
            if ending == Ending::Clean {
                if let Some(at) = spec.header.filter(|_| !spec.header_bytes.is_empty()) {
                    // The header was checked at launch; an allocation freed since is a bad
                    // address.
                    if !self.kernel_write(spec.run_id, at, &spec.header_bytes) {
                        ending = Ending::Fault(spec.engine.exception_code());
                    }
                }
            }
            // A latched AICPU kernel returns a fatal status (device-truth §1).
            let fatal = spec.outcome == Outcome::Latch
                && spec.engine == Engine::Aicpu
                && self.semantics.latch_faults_stream
                && !self.semantics.legacy_event_faults;
            if fatal && ending == Ending::Clean {
                ending = Ending::Fatal(AclCode::RtAicpuException);
            }
        }
        let work_start = worked.then_some(work_start);
        self.note(|| Note::KernelEnded { tag, work_start, at: t, ending });
        let result = match ending {
            Ending::Clean => Ok(()),
            Ending::Fault(code) | Ending::Fatal(code) => Err(code),
            Ending::Killed(code) => self.place_timeout_code(id, &spec, code, t),
        };
        if matches!(ending, Ending::Fault(_) | Ending::Killed(_))
            && self.semantics.device_fault_fails_calls
        {
            let code = match ending {
                Ending::Fault(code) | Ending::Killed(code) => code,
                Ending::Clean | Ending::Fatal(_) => AclCode::RtInternalError,
            };
            self.fault.get_or_insert((t, code));
        }
        self.settle_run(&spec, ending);
        if let Some(s) = self.streams.get_mut(&id) {
            s.kernels_out = s.kernels_out.saturating_sub(1);
        }
        self.complete(id, t, result);
    }

    /// Where an op-timeout kill leaves its code: this stream's result, and the partner's
    /// sticky code ([`Semantics::op_timeout_code_on`]).
    fn place_timeout_code(
        &mut self,
        id: u64,
        spec: &KernelSpec,
        code: AclCode,
        t: Ns,
    ) -> Result<(), AclCode> {
        let mode = self.semantics.op_timeout_code_on;
        let partner = (mode != OpTimeoutCodeOn::OwnStream)
            .then(|| {
                let run = self.runs.get(&spec.run?)?;
                run.kernels[spec.engine.partner().index()]
                    .map(|k| k.stream)
                    .filter(|s| *s != id && self.streams.contains_key(s))
            })
            .flatten();
        let Some(partner) = partner else {
            return Err(code);
        };
        if let Some(p) = self.streams.get_mut(&partner) {
            p.sticky.get_or_insert((t, code));
        }
        if mode == OpTimeoutCodeOn::PartnerStream { Ok(()) } else { Err(code) }
    }

    /// Settles a kernel's ending on its run, publishing the run's record when it is the run's
    /// last kernel to end (before its task completes, so an event recorded after it sees the
    /// record); a kernel alone publishes by its own ending.
    fn settle_run(&mut self, spec: &KernelSpec, ending: Ending) {
        let aicpu = spec.engine == Engine::Aicpu;
        let Some(key) = spec.run else {
            if let Some(record) = spec.record {
                let contribution = Contribution::of(spec.outcome, &spec.header_bytes, ending, true);
                self.publish(record, spec.epoch, spec.run_id, &contribution);
            }
            return;
        };
        let Some(run) = self.runs.get_mut(&key) else {
            return;
        };
        run.ends[spec.engine.index()] =
            Some(Contribution::of(spec.outcome, &spec.header_bytes, ending, aicpu));
        let both_ended =
            run.kernels.iter().all(Option::is_some) && run.ends.iter().all(Option::is_some);
        if !both_ended {
            return;
        }
        let Some(run) = self.runs.remove(&key) else {
            return;
        };
        let [Some(core), Some(cpu)] = run.ends else {
            return;
        };
        if let (Contribution::Ok, Some(record)) = (core, run.record) {
            self.publish(record, key.epoch, run.id.or(spec.run_id), &cpu);
        }
    }

    fn publish(&mut self, record: u64, epoch: u64, run: Option<u64>, contribution: &Contribution) {
        let Some(bytes) = contribution.record(epoch) else {
            return;
        };
        if self.kernel_write(run, record, &bytes) {
            let error = matches!(contribution, Contribution::Error { .. });
            self.note(|| Note::Published { run, error });
        }
    }

    /// The task at the front of stream `id` completes at `t` with `result`: a failure is
    /// sticky (continue-on-failure: the next task runs; legacy: nothing more runs).
    fn complete(&mut self, id: u64, t: Ns, result: Result<(), AclCode>) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(head) = s.head.take() else {
            return;
        };
        s.completed += 1;
        s.prev_end = t;
        if let Err(code) = result {
            s.sticky.get_or_insert((t, code));
        }
        if head.task.watched {
            self.results.insert((id, head.task.seq), result);
        }
        if !matches!(head.task.kind, TaskKind::Kernel(_)) {
            let (tag, start) = (head.task.tag, head.start);
            self.note(|| Note::TaskRan { tag, start, end: t, result });
        }
    }
}

const fn working(end: Ns, start: Ns) -> Phase {
    Phase::Working { end: Some(end), work_start: start, ending: Ending::Clean }
}
