//! The smallest runner over the fake, shared by the lane-level tests: [`FakeKernels`], a
//! driver on it, and the submit loop.

use std::time::Duration;

use backend_acl::{AclConfig, AclDevice};
use lane_core::status_latch::{self, AclCode, HeaderLayout, ReturnCode, Status};
use lane_core::stream_pair::StreamHandle;
use lane_core::{
    Cause, CodeRef, FinaliseFailure, Outcome, Profile, ProfileSpec, RunId, RunRequest, SlotId,
    Verdict,
};
use lane_driver::{Driver, PrepareError, Report, RunArgs, Runner};
use run_lane_fake_ascendcl::{
    Control, ControlError, ENGINE_AICORE, ENGINE_AICPU, Outcome as Kernel,
};

/// Each fake kernel's duration: short, but long enough that queued runs overlap.
pub const KERNEL: Duration = Duration::from_millis(5);

/// The smallest runner: each launch queues one fake kernel on the lane's stream; the AICPU
/// kernel writes the run's timing buffer and a clean status header. `hang` names runs whose
/// AICore kernel hangs until the device op timeout; `faults` names a run, an engine and how
/// that engine's kernel ends (a latch writes SCOPE_DEADLOCK into the header).
pub struct FakeKernels {
    control: &'static Control,
    layout: HeaderLayout,
    hang: Vec<u64>,
    /// `(run, engine, ending)`: how that run's kernel on that engine ends instead of `Ok`.
    pub faults: Vec<(u64, u32, Kernel)>,
    /// `(run, length)`: that run's kernels last `length` instead of [`KERNEL`].
    pub lengths: Vec<(u64, Duration)>,
    /// `(run, code)`: right after that run's AICore launch, the fake's next
    /// `aclrtRecordEvent` (the AICore kernel's own event) fails with `code`.
    pub fail_core_done: Option<(u64, i32)>,
}

impl FakeKernels {
    fn length(&self, run: RunId) -> Duration {
        self.lengths.iter().find(|(r, _)| *r == run.0).map_or(KERNEL, |(_, length)| *length)
    }

    fn outcome(&self, run: RunId, engine: u32) -> Kernel {
        if engine == ENGINE_AICORE && self.hang.contains(&run.0) {
            return Kernel::Hang;
        }
        self.faults
            .iter()
            .find(|(r, e, _)| *r == run.0 && *e == engine)
            .map_or(Kernel::Ok, |(_, _, outcome)| *outcome)
    }
}

fn launch_code(result: Result<(), ControlError>) -> Result<(), AclCode> {
    match result {
        Ok(()) => Ok(()),
        Err(ControlError::Call { code, .. }) => {
            Err(AclCode::from_raw(code).unwrap_or(AclCode::Unknown(code)))
        }
        Err(other) => panic!("{other}"),
    }
}

impl Runner<AclDevice> for FakeKernels {
    fn prepare_run(
        &mut self,
        _: &mut AclDevice,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), PrepareError> {
        Ok(())
    }

    fn launch_aicore(
        &mut self,
        d: &mut AclDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.bind_thread()?;
        let outcome = self.outcome(args.run, ENGINE_AICORE);
        let launched = launch_code(super::launch_run_kernel(
            self.control,
            stream,
            ENGINE_AICORE,
            self.length(args.run),
            outcome,
            args,
            &[],
        ));
        if let Some((run, code)) = self.fail_core_done {
            if run == args.run.0 {
                self.control.fail_call("aclrtRecordEvent", code, 0, 1).expect("a fail-call rule");
            }
        }
        launched.map_err(ReturnCode::from)
    }

    fn launch_aicpu(
        &mut self,
        d: &mut AclDevice,
        stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        d.bind_thread()?;
        let outcome = self.outcome(args.run, ENGINE_AICPU);
        let mut status = Status::clean(self.layout);
        if outcome == Kernel::Latch {
            status.orch = Some(status_latch::RuntimeCode::ScopeDeadlock);
        }
        let mut header = vec![0; self.layout.size()];
        status_latch::encode_into(self.layout, &status, &mut header).expect("a header encodes");
        launch_code(super::launch_run_kernel(
            self.control,
            stream,
            ENGINE_AICPU,
            self.length(args.run),
            outcome,
            args,
            &header,
        ))
        .map_err(ReturnCode::from)
    }

    fn finalise_run(
        &mut self,
        _: &mut AclDevice,
        _: RunId,
        _: SlotId,
        _: bool,
    ) -> Result<(), FinaliseFailure> {
        Ok(())
    }

    fn upload_code(&mut self, _: &mut AclDevice, _: CodeRef) -> Result<(), ReturnCode> {
        Ok(())
    }
}

pub type FakeDriver = Driver<AclDevice, FakeKernels>;

pub fn driver(fake: &super::Fake, config: AclConfig, hang: Vec<u64>) -> FakeDriver {
    let (device, profile) = AclDevice::open(config).unwrap_or_else(|e| panic!("{e}"));
    let runner = FakeKernels {
        control: fake.control,
        layout: profile.header(),
        hang,
        faults: Vec::new(),
        lengths: Vec::new(),
        fail_core_done: None,
    };
    Driver::new(profile, device, runner)
}

/// Submits `runs` runs (waiting for room when the lane is full), closes, and returns every
/// report.
pub fn run_lane(d: &mut FakeDriver, runs: usize) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut submitted = 0;
    while submitted < runs {
        match d.submit(RunRequest::new()).expect("driver") {
            Ok(_) => submitted += 1,
            Err(_) => {
                d.turn().expect("driver");
            }
        }
        reports.extend(std::iter::from_fn(|| d.poll_report()));
    }
    d.run_until_idle().expect("driver");
    d.close().expect("driver");
    d.run_until_idle().expect("driver");
    reports.extend(std::iter::from_fn(|| d.poll_report()));
    reports
}

/// A run's verdict (no publication is reported here).
pub fn verdict(report: &Report) -> Verdict {
    match report.outcome {
        Outcome::Run(r) => r.verdict,
        Outcome::Publication(p) => panic!("unexpected {p:?}"),
    }
}

/// The cause of a run's `Failed` verdict.
pub fn failed(report: &Report) -> Cause {
    match verdict(report) {
        Verdict::Failed { cause } => cause,
        other => panic!("expected Failed, got {other:?}: {report}"),
    }
}

/// Asserts run `n` (from 1) was poisoned by run `origin`, in `case`.
pub fn assert_poisoned_by(case: &str, reports: &[Report], n: usize, origin: u64) {
    assert!(
        matches!(verdict(&reports[n - 1]), Verdict::Poisoned { origin: o, .. } if o == RunId(origin)),
        "{case}: {}",
        reports[n - 1]
    );
}

/// `config` with the fake's probed profile, changed by `spec`.
pub fn with_spec(
    fake: &super::Fake,
    config: AclConfig,
    spec: impl FnOnce(&mut ProfileSpec),
) -> AclConfig {
    let mut changed = fake.open().1.spec();
    spec(&mut changed);
    AclConfig { profile: Some(Profile::custom(changed).expect("a valid profile")), ..config }
}
