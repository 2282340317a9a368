//! A scripted backend for scenario tests: it answers every effect at once with success,
//! except completion awaits (held until the test completes the run) and the faults a test
//! installs. Each scenario then reads as "command or event in → effects out".
#![allow(dead_code, unreachable_pub)]

use lane_core::status_latch::{
    AclCode, DeviceVerdict, Evidence, Record, RecordRead, ReturnCode, RuntimeCode,
};
use lane_core::stream_pair::Role;
use lane_core::testkit::Succeed;
use lane_core::{
    CodeRef, DeviceTiming, Effect, Event, FinaliseFailure, Lane, LaneState, LaunchStep, Lease,
    Outcome, Profile, PublicationId, PublicationResult, RunId, RunOutcome, RunRequest, Timestamp,
    Verdict,
};

/// A completed run that published no record and whose device verdict is clean: the status
/// header (the fallback) decides its verdict.
pub const HEADER_DECIDES: Evidence = Evidence {
    record: RecordRead::Read(Record::NeverPublished { stamp: 0 }),
    device: Some(DeviceVerdict::Clean),
    ..Evidence::PUBLISHED_OK
};

/// A fault the scripted backend injects.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// `PrepareRun` of this run fails with the code.
    PrepareFails(u64, i32),
    /// `PrepareRun` of this run answers incompatible the first `n` times.
    PrepareIncompatible(u64, u32),
    /// The next `n` creates of this stream fail with the code.
    CreateFails(Role, i32, u32),
    /// The next `n` destroys of this stream fail with the code.
    DestroyFails(Role, i32, u32),
    /// `LaunchRun` of this run fails at the step with the code.
    LaunchFails(u64, LaunchStep, i32),
    /// The run's status header latches this code (orchestrator latch).
    Latch(u64, RuntimeCode),
    /// `ReadStatus` of this run fails with the code.
    StatusReadFails(u64, i32),
    /// `FinaliseRun` of this run fails.
    FinaliseFails(u64, FinaliseFailure),
    /// `UploadCode` of this publication fails with the code.
    UploadFails(u64, i32),
    /// The next `n` force resets fail with the code.
    ResetFails(i32, u32),
    /// The next `n` probes fail with the code.
    ProbeFails(i32, u32),
    /// `ReadRecords` reads this record for this covered run (every other covered run's
    /// record reads ok).
    CoveredRecord(u64, Record),
    /// `LaunchRun` of this run is declined by the runner the first `n` times.
    LaunchDeclined(u64, u32),
}

pub fn code(raw: i32) -> AclCode {
    AclCode::from_raw(raw).expect("non-zero code")
}

/// What a runtime call returned as `raw`: a latch code negated (-1..-999) or an ACL code.
pub fn returned(raw: i32) -> ReturnCode {
    ReturnCode::from_raw(raw).expect("non-zero code")
}

pub struct Harness {
    pub lane: Lane,
    pub now: Timestamp,
    backend: Succeed,
    /// Awaits the lane asked for and the test has not answered yet.
    pub awaiting: Vec<(RunId, Lease, Timestamp)>,
    pub outcomes: Vec<Outcome>,
    pub faults: Vec<Fault>,
    /// Every effect, rendered, since the last `take`.
    pub log: Vec<String>,
    /// Every event the lane rejected.
    pub rejected: Vec<String>,
    /// The lease of every run the lane asked to prepare.
    pub leases: Vec<(RunId, Lease)>,
}

impl Harness {
    pub fn new(profile: Profile) -> Self {
        Self {
            lane: Lane::new(profile),
            now: Timestamp(0),
            // Handles from 101, so test logs tell them from run ids.
            backend: Succeed::with_handles_after(100),
            awaiting: Vec::new(),
            outcomes: Vec::new(),
            faults: Vec::new(),
            log: Vec::new(),
            rejected: Vec::new(),
            leases: Vec::new(),
        }
    }

    /// The lease the lane gave `run` (seen in its `PrepareRun`).
    pub fn lease(&self, run: RunId) -> Lease {
        self.leases.iter().find(|(r, _)| *r == run).map(|(_, l)| *l).expect("run was prepared")
    }

    pub fn a2a3() -> Self {
        Self::new(Profile::a2a3())
    }

    pub fn depth_one() -> Self {
        Self::new(Profile::depth_one())
    }

    pub fn fault(&mut self, fault: Fault) -> &mut Self {
        self.faults.push(fault);
        self
    }

    /// Advances the clock.
    pub fn tick(&mut self, ns: u64) {
        self.now = self.now.after_ns(ns);
    }

    /// Submits and pumps; panics on refusal.
    pub fn submit(&mut self, request: RunRequest) -> RunId {
        let run = self.lane.submit(self.now, request).expect("submit accepted");
        self.pump();
        run
    }

    pub fn run(&mut self) -> RunId {
        self.submit(RunRequest::new())
    }

    pub fn publish(&mut self, code: u64) -> PublicationId {
        let publication = self.lane.publish(self.now, CodeRef(code)).expect("publish accepted");
        self.pump();
        publication
    }

    /// Feeds a fault notice the backend matched to this lane, and pumps; returns whether
    /// the lane acted on it.
    pub fn notice(&mut self, notice: lane_core::FaultNotice) -> bool {
        let acted = self.lane.fault_notice(self.now, notice);
        self.pump();
        acted
    }

    pub fn close(&mut self) -> lane_core::CloseReport {
        let report = self.lane.close(self.now);
        self.pump();
        report
    }

    /// The effects seen since the last call, rendered, and clears them.
    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Feeds an event directly (for robustness tests); returns whether it was accepted.
    pub fn feed(&mut self, event: Event) -> Result<(), lane_core::EventError> {
        let result = self.lane.handle(self.now, event);
        self.lane.check_invariants().expect("invariants after an event");
        self.pump();
        result
    }

    /// Answers the held await of `run` with `Completed`: its record is ok, or, for a run the
    /// test latches ([`Fault::Latch`]), no record and a clean device verdict, so the latch
    /// in the status header decides (the header fallback, as a runtime without records).
    pub fn complete(&mut self, run: RunId) {
        let latched = self.faults.iter().any(|f| matches!(*f, Fault::Latch(r, _) if r == run.0));
        let evidence = if latched { HEADER_DECIDES } else { Evidence::PUBLISHED_OK };
        self.complete_with(run, evidence);
    }

    /// Answers the held await of `run` with `Completed` carrying `evidence` (what the
    /// completion waiter learned: the record, the device verdict).
    pub fn complete_with(&mut self, run: RunId, evidence: Evidence) {
        let idx = self
            .awaiting
            .iter()
            .position(|(r, _, _)| *r == run)
            .unwrap_or_else(|| panic!("{run} is not awaited; awaiting {:?}", self.awaiting));
        let (run, lease, _) = self.awaiting.remove(idx);
        self.answer(Event::Completed { run, lease, evidence });
        self.pump();
    }

    /// Answers the oldest held await with `Completed` (the header decides) without pumping:
    /// the lane's next effect is the test's to answer. The run and its lease.
    pub fn complete_unpumped(&mut self) -> (RunId, Lease) {
        let (run, lease, _) = self.awaiting.remove(0);
        self.lane
            .handle(self.now, Event::Completed { run, lease, evidence: HEADER_DECIDES })
            .unwrap();
        (run, lease)
    }

    /// Answers the held await of `run` with `CompletionFailed`.
    pub fn fail_completion(&mut self, run: RunId, raw: i32) {
        let idx = self.awaiting.iter().position(|(r, _, _)| *r == run).expect("awaited");
        let (run, lease, _) = self.awaiting.remove(idx);
        self.answer(Event::CompletionFailed { run, lease, code: code(raw) });
        self.pump();
    }

    /// Completes awaited runs until none is awaited.
    pub fn complete_all(&mut self) {
        while let Some(&(run, _, _)) = self.awaiting.first() {
            self.complete(run);
        }
    }

    /// The lane's deadline passes.
    pub fn expire(&mut self) {
        let deadline = self.lane.poll_deadline().expect("a deadline");
        self.now = deadline;
        self.lane.handle_timeout(self.now);
        self.lane.check_invariants().expect("invariants after a timeout");
        self.awaiting.clear();
        self.pump();
    }

    /// The verdict of `run`, once delivered.
    pub fn verdict(&self, run: RunId) -> Option<Verdict> {
        self.outcomes.iter().find_map(|o| match o {
            Outcome::Run(RunOutcome { run: r, verdict, .. }) if *r == run => Some(*verdict),
            _ => None,
        })
    }

    pub fn run_outcome(&self, run: RunId) -> Option<RunOutcome> {
        self.outcomes.iter().find_map(|o| match o {
            Outcome::Run(outcome) if outcome.run == run => Some(*outcome),
            _ => None,
        })
    }

    pub fn publication(&self, publication: PublicationId) -> Option<PublicationResult> {
        self.outcomes.iter().find_map(|o| match o {
            Outcome::Publication(p) if p.publication == publication => Some(p.result),
            _ => None,
        })
    }

    /// Sequence numbers of the outcomes delivered so far, in delivery order.
    pub fn outcome_order(&self) -> Vec<u64> {
        self.outcomes.iter().map(Outcome::seq).collect()
    }

    pub fn state(&self) -> LaneState {
        self.lane.state()
    }

    /// Executes every effect the lane has (answering all but awaits), until none is left.
    pub fn pump(&mut self) {
        let mut executed = 0;
        while let Some(effect) = self.lane.poll_effect() {
            // A lane that never stops asking is a failure, not a hang.
            executed += 1;
            assert!(executed <= 100_000, "livelock: still asking ({effect})");
            self.log.push(effect.to_string());
            if let Some(event) = self.respond(effect) {
                self.answer(event);
            }
        }
        while let Some(outcome) = self.lane.poll_outcome() {
            self.outcomes.push(outcome);
        }
        self.lane.check_invariants().expect("invariants after a pump");
    }

    fn answer(&mut self, event: Event) {
        if let Err(e) = self.lane.handle(self.now, event) {
            self.rejected.push(e.to_string());
        }
        self.lane.check_invariants().expect("invariants after an event");
    }

    fn take_fault(&mut self, pick: impl Fn(&Fault) -> bool) -> Option<Fault> {
        let idx = self.faults.iter().position(pick)?;
        Some(self.faults[idx])
    }

    /// Decrements a counted fault; removes it at zero.
    fn use_counted(&mut self, pick: impl Fn(&Fault) -> bool) -> Option<i32> {
        let idx = self.faults.iter().position(pick)?;
        let (raw, left) = match &mut self.faults[idx] {
            Fault::CreateFails(_, raw, n)
            | Fault::DestroyFails(_, raw, n)
            | Fault::ResetFails(raw, n)
            | Fault::ProbeFails(raw, n) => {
                *n -= 1;
                (*raw, *n)
            }
            _ => return None,
        };
        if left == 0 {
            self.faults.remove(idx);
        }
        Some(raw)
    }

    /// The event answering `effect`: the installed fault if one applies, else success
    /// (`testkit::Succeed`); `None` for an await, which the test answers.
    fn respond(&mut self, effect: Effect) -> Option<Event> {
        if let Effect::AwaitCompletion { run, lease, deadline, .. } = effect {
            self.awaiting.push((run, lease, deadline));
            return None;
        }
        if let Some(fault) = self.inject(effect) {
            return Some(fault);
        }
        let mut event = self.backend.answer(effect)?;
        if let Event::StatusRead { run, ref mut status, ref mut timing, .. } = event {
            if let Some(Fault::Latch(_, latched)) =
                self.take_fault(|f| matches!(f, Fault::Latch(r, _) if *r == run.0))
            {
                status.orch = Some(latched);
            }
            // Device time: each run "ran" 100 us ending at its id's millisecond.
            let end_ns = run.0 * 1_000_000;
            *timing = DeviceTiming { start_ns: end_ns - 100_000, end_ns, ..Default::default() };
        }
        Some(event)
    }

    /// The failure event of an installed fault that applies to `effect`, if any.
    fn inject(&mut self, effect: Effect) -> Option<Event> {
        match effect {
            Effect::PrepareRun { run, lease, .. } => {
                self.leases.push((run, lease));
                if let Some(Fault::PrepareFails(_, raw)) =
                    self.take_fault(|f| matches!(f, Fault::PrepareFails(r, _) if *r == run.0))
                {
                    return Some(Event::PrepareFailed { run, lease, code: returned(raw) });
                }
                let idx = self.faults.iter().position(
                    |f| matches!(f, Fault::PrepareIncompatible(r, n) if *r == run.0 && *n > 0),
                )?;
                if let Fault::PrepareIncompatible(_, n) = &mut self.faults[idx] {
                    *n -= 1;
                }
                Some(Event::PrepareIncompatible { run, lease })
            }
            Effect::CreateStream { role } => self
                .use_counted(|f| matches!(f, Fault::CreateFails(r, _, _) if *r == role))
                .map(|raw| Event::StreamCreateFailed { role, code: code(raw) }),
            Effect::DestroyStream { role, handle, .. } => self
                .use_counted(|f| matches!(f, Fault::DestroyFails(r, _, _) if *r == role))
                .map(|raw| Event::StreamDestroyFailed { role, handle, code: code(raw) }),
            Effect::LaunchRun { run, lease, .. } => {
                if let Some(idx) = self
                    .faults
                    .iter()
                    .position(|f| matches!(f, Fault::LaunchDeclined(r, n) if *r == run.0 && *n > 0))
                {
                    if let Fault::LaunchDeclined(_, n) = &mut self.faults[idx] {
                        *n -= 1;
                    }
                    return Some(Event::LaunchDeclined { run, lease });
                }
                match self.take_fault(|f| matches!(f, Fault::LaunchFails(r, _, _) if *r == run.0)) {
                    Some(Fault::LaunchFails(_, step, raw)) => {
                        Some(Event::LaunchFailed { run, lease, step, code: returned(raw) })
                    }
                    _ => None,
                }
            }
            Effect::ReadStatus { run, lease, .. } => match self
                .take_fault(|f| matches!(f, Fault::StatusReadFails(r, _) if *r == run.0))
            {
                Some(Fault::StatusReadFails(_, raw)) => {
                    Some(Event::StatusReadFailed { run, lease, code: code(raw) })
                }
                _ => None,
            },
            Effect::FinaliseRun { run, lease, .. } => {
                match self.take_fault(|f| matches!(f, Fault::FinaliseFails(r, _) if *r == run.0)) {
                    Some(Fault::FinaliseFails(_, failure)) => {
                        Some(Event::FinaliseFailed { run, lease, failure })
                    }
                    _ => None,
                }
            }
            Effect::UploadCode { publication, .. } => match self
                .take_fault(|f| matches!(f, Fault::UploadFails(p, _) if *p == publication.0))
            {
                Some(Fault::UploadFails(_, raw)) => {
                    Some(Event::UploadFailed { publication, code: returned(raw) })
                }
                _ => None,
            },
            // Recorded in the log; nothing answers them.
            Effect::Hook(_) | Effect::AdoptReset => None,
            Effect::ForceReset { attempt } => {
                // A reset kills every outstanding await.
                self.awaiting.clear();
                self.use_counted(|f| matches!(f, Fault::ResetFails(..)))
                    .map(|raw| Event::ResetFailed { attempt, code: code(raw) })
            }
            Effect::Probe { attempt } => self
                .use_counted(|f| matches!(f, Fault::ProbeFails(..)))
                .map(|raw| Event::ProbeFailed { attempt, code: code(raw) }),
            Effect::ReadRecords { run, lease, behind } => {
                let records = behind
                    .iter()
                    .map(|(covered, _)| {
                        let record = match self.take_fault(
                            |f| matches!(f, Fault::CoveredRecord(r, _) if *r == covered.0),
                        ) {
                            Some(Fault::CoveredRecord(_, record)) => record,
                            _ => Record::Ok,
                        };
                        lane_core::status_latch::CoveredRead {
                            run: covered.0,
                            record: RecordRead::Read(record),
                        }
                    })
                    .collect();
                Some(Event::RecordsRead { run, lease, records })
            }
            Effect::AwaitCompletion { .. } | Effect::DrainDevice { .. } => None,
        }
    }
}

/// Whether a rendered log contains an effect starting with `prefix`.
pub fn has(log: &[String], prefix: &str) -> bool {
    log.iter().any(|line| line.starts_with(prefix))
}
