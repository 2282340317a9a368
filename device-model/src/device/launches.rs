//! [`Device`]'s kernel launches, their fates and retirement, and the force reset.
//! Apart from [`super`] for length: the calls by what they act on, the engine apart.

use status_latch::{AclCode, RECORD_BYTES};

use super::{CallError, Device, Launched, LiveRun, Reclaimed, RunKernel, TaskKind};
use crate::config::{Engine, Ns};
use crate::faults::{Injected, KernelHeader, Site};
use crate::kernel::{KernelSpec, RunKey, fate, latched_header};

impl Device {
    // ----- kernels ----------------------------------------------------------------------

    /// Launches a kernel on `stream`.
    ///
    /// Checks, in order: the stream; the buffers (107000: a range outside its allocation, a
    /// record with epoch 0, a second kernel of one engine in a run); the device fault; a
    /// refused enqueue; the `aicore-launch`/`aicpu-launch` rule (with its run id). Then the
    /// kernel rules may change its outcome, and an AICPU kernel with a run id decides its
    /// run's fate (the `run` site) for both kernels.
    ///
    /// # Errors
    ///
    /// The first check that fails.
    pub fn launch(
        &mut self,
        stream: u64,
        spec: KernelSpec,
        now: Ns,
    ) -> Result<Launched, CallError> {
        let mut spec = spec;
        self.stream(stream)?;
        let fits =
            |at: Option<u64>, len: usize| at.is_none_or(|a| self.memory.bytes(a, len).is_some());
        if !fits(spec.timing, 16)
            || !fits(spec.header, spec.header_bytes.len())
            || !fits(spec.record, RECORD_BYTES)
            || (spec.record.is_some() && spec.epoch == 0)
        {
            return Err(AclCode::RtParamInvalid.into());
        }
        if let Some(key) = spec.run {
            let taken =
                self.runs.get(&key).is_some_and(|run| run.kernels[spec.engine.index()].is_some());
            if taken {
                return Err(AclCode::RtParamInvalid.into());
            }
        }
        self.fault_now(now)?;
        self.refuse_enqueue(stream)?;
        let site = match spec.engine {
            Engine::Aicore => Site::AicoreLaunch,
            Engine::Aicpu => Site::AicpuLaunch,
        };
        self.fail_at(site, spec.run_id)?;
        if let Some(Injected::Kernel(outcome, header)) =
            self.faults.decide(Site::Kernel(spec.engine), spec.run_id)
        {
            spec.outcome = outcome;
            match header {
                KernelHeader::Own => {}
                KernelHeader::Latched(latched) => {
                    spec.header_bytes = latched_header(latched, &spec.header_bytes);
                }
                KernelHeader::Bytes(bytes) => spec.header_bytes = bytes,
            }
        }
        let queued = self.streams.get(&stream).is_some_and(|s| s.kernels_out > 0);
        let (engine, run, run_id, record, header) =
            (spec.engine, spec.run, spec.run_id, spec.record, spec.header);
        let tag = spec.tag;
        let seq = self.enqueue(stream, TaskKind::Kernel(Box::new(spec)), tag, false, now);
        if let Some(s) = self.streams.get_mut(&stream) {
            s.kernels_out += 1;
            s.last_run = run_id;
        }
        if let Some(key) = run {
            let r = self.runs.entry(key).or_default();
            r.id = r.id.or(run_id);
            r.kernels[engine.index()] =
                Some(RunKernel { stream, seq, spinning: None, working: false });
            if record.is_some() {
                r.record = record;
            }
            let live = self.live.entry(key.handshake).or_default();
            if live.id != run_id && run_id.is_some() {
                *live = LiveRun::default();
            }
            live.id = run_id.or(live.id);
            live.header = header.or(live.header);
            live.record = record.or(live.record);
            if engine == Engine::Aicpu && run_id.is_some() {
                let fate = self.faults.decide(Site::Run, run_id);
                if let Some(injected) = &fate {
                    self.apply_fate(key, injected);
                }
                return Ok(Launched { queued, fate });
            }
        }
        Ok(Launched { queued, fate: None })
    }

    /// Applies a run's fate to each of its kernels that has not started to work.
    fn apply_fate(&mut self, key: RunKey, injected: &Injected) {
        let Some(run) = self.runs.get(&key) else {
            return;
        };
        let kernels = run.kernels;
        for engine in Engine::BOTH {
            let Some(k) = kernels[engine.index()].filter(|k| !k.working) else {
                continue;
            };
            let Some(kernel) = self.queued_kernel_mut(k.stream, k.seq) else {
                continue;
            };
            if let Some((outcome, header)) = fate(injected, engine, &kernel.header_bytes) {
                kernel.outcome = outcome;
                if let Some(header) = header {
                    kernel.header_bytes = header;
                }
            }
        }
    }

    /// The kernel task `seq` of `stream`, queued or spinning at its front.
    fn queued_kernel_mut(&mut self, stream: u64, seq: u64) -> Option<&mut KernelSpec> {
        let s = self.streams.get_mut(&stream)?;
        let task = match s.head.as_mut() {
            Some(head) if head.task.seq == seq => &mut head.task,
            _ => s.queue.iter_mut().find(|t| t.seq == seq)?,
        };
        match &mut task.kind {
            TaskKind::Kernel(kernel) => Some(kernel),
            _ => None,
        }
    }

    /// The lane finalised run `id`: its slot buffers are no longer its (a read of them is no
    /// longer its status or record read).
    pub fn retire_run(&mut self, id: u64) {
        self.live.retain(|_, run| run.id != Some(id));
    }

    // ----- recovery ---------------------------------------------------------------------

    /// `aclrtResetDeviceForce`: every stream (its work dropped), event and allocation dies,
    /// the device fault clears, a new context generation starts. Fault rules and switches
    /// stay; the stream numbering too, unless
    /// [`Semantics::reset_restarts_stream_numbering`](crate::Semantics::reset_restarts_stream_numbering).
    ///
    /// # Errors
    ///
    /// A `reset` rule's code (nothing is reset).
    pub fn force_reset(&mut self, now: Ns) -> Result<Reclaimed, AclCode> {
        self.fail_at(Site::Reset, None)?;
        let (streams, events, allocations) = self.live_counts();
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            self.remove_stream(id, now);
        }
        self.events.clear();
        self.memory.clear();
        self.runs.clear();
        self.live.clear();
        self.results.clear();
        self.fault = None;
        self.generation += 1;
        if self.semantics.reset_restarts_stream_numbering {
            self.next_stream_number = 1;
        }
        Ok(Reclaimed { streams, events, allocations })
    }
}
