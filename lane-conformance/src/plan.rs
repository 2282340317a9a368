//! The simulator's fault rules mapped onto the fake's: where a rule has a counterpart, the
//! same scenario injects the same fault on both backends.
//!
//! | simulator kind | selector | on the fake |
//! |---|---|---|
//! | `stream-create`, `malloc`, `reset` | `calls`, `always` | a fail-call rule on `aclrtCreateStreamWithConfig`, `aclrtMalloc`, `aclrtResetDeviceForce` |
//! | `aicore-launch`, `aicpu-launch` | `runs`, `always` | a fail-call rule on that run's launch |
//! | `exception` (507015, 507018) | `runs`, `always` | a kernel rule: an exception on the AICore (507015) or AICPU (507018) kernel |
//! | `hang` | `runs`, `always` | a kernel rule: the AICore kernel hangs until the device op timeout (507014; the fake has no handshake, so the scheduler ends on its own, and the host meets the AICore code as the simulator's status read does) |
//! | `latch` | `runs`, `always` | a kernel rule: the AICPU kernel writes the latched header |
//! | `prepare`, `prepare-incompatible`, `copy-back`, `validation` | `runs`, `always` | the runner's own failure (the embedding runtime's work) |
//! | `upload` | `calls`, `always` | the runner's own failure |
//!
//! No counterpart: any `rate` (the simulator's seeded draws), `calls` of a run-bound kind,
//! `stream-destroy` (one simulator site, two ACL calls), `event-record`, `event-wait`,
//! `status-read` and `probe` (the fake cannot tell which run or which caller a call is for),
//! an `exception` with a timeout code (507014, 507017: that is a hang), and `stuck` (the
//! fake's kernels always end at the device op timeout). A scenario with
//! one of these runs on the simulator alone (`backends = ["sim"]`).

use backend_sim::faults::{FaultCode, Injected};
use backend_sim::{FaultKind, FaultRule, When};
use lane_core::status_latch::AclCode;
use run_lane_fake_ascendcl::{ControlError, DeviceControl};
use thiserror::Error;

use crate::fake_runner::{Engine, RunFault, RunPlan, RunSelect};

/// A simulator fault rule the fake cannot express.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "fault `{rule}` has no counterpart on the fake: {why}; run the scenario on the simulator alone (backends = [\"sim\"] with a backends_reason)"
)]
pub struct NoCounterpart {
    /// The rule, in the `--fault` syntax.
    pub rule: String,
    /// Why.
    pub why: &'static str,
}

/// A fail-call rule on one exported symbol of the fake: after `skip` calls, the next `count`
/// return `code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRule {
    /// The ACL symbol.
    pub symbol: &'static str,
    /// The code it returns.
    pub code: i32,
    /// Calls let through first.
    pub skip: u32,
    /// Calls failed.
    pub count: u32,
}

/// A scenario's faults on the fake: rules installed once, before the workload, and the
/// runner's per-run plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakePlan {
    /// Fail-call rules, in install order.
    pub calls: Vec<CallRule>,
    /// What the runner arms per run (and its own failures).
    pub runs: RunPlan,
}

impl FakePlan {
    /// Maps every rule, in install order.
    ///
    /// # Errors
    ///
    /// [`NoCounterpart`] for the first rule the fake cannot express.
    pub fn of(rules: &[FaultRule]) -> Result<Self, NoCounterpart> {
        let mut plan = Self::default();
        for rule in rules {
            plan.add(rule)?;
        }
        Ok(plan)
    }

    /// Installs the fail-call rules on one device of the fake (the lane's: `control.device(id)`).
    ///
    /// # Errors
    ///
    /// [`ControlError`] if the fake refused one.
    pub fn install(&self, control: DeviceControl<'_>) -> Result<(), ControlError> {
        for rule in &self.calls {
            control.fail_call(rule.symbol, rule.code, rule.skip, rule.count)?;
        }
        Ok(())
    }

    fn add(&mut self, rule: &FaultRule) -> Result<(), NoCounterpart> {
        let none = |why| NoCounterpart {
            rule: rule.to_string(),
            why,
        };
        let acl = match rule.code {
            FaultCode::Acl(code) => Some(code),
            FaultCode::None | FaultCode::Runtime(_) | FaultCode::Raw(_) => None,
        };
        let symbol = match rule.kind {
            FaultKind::StreamCreate => Some("aclrtCreateStreamWithConfig"),
            FaultKind::Malloc => Some("aclrtMalloc"),
            FaultKind::Reset => Some("aclrtResetDeviceForce"),
            _ => None,
        };
        if let (Some(symbol), Some(code)) = (symbol, acl) {
            let calls = call_rules(&rule.when).ok_or_else(|| {
                none("only `calls` and `always` select calls of the fake's exports")
            })?;
            self.calls
                .extend(calls.into_iter().map(|(skip, count)| CallRule {
                    symbol,
                    code: code.raw(),
                    skip,
                    count,
                }));
            return Ok(());
        }
        if rule.kind == FaultKind::Upload {
            let code = acl.ok_or_else(|| none("an upload failure needs a code"))?;
            match &rule.when {
                When::Always => self.runs.upload_failures.push((None, code)),
                When::Calls(calls) => self
                    .runs
                    .upload_failures
                    .extend(calls.iter().map(|n| (Some(*n), code))),
                _ => return Err(none("only `calls` and `always` select uploads")),
            }
            return Ok(());
        }
        let fault = match (rule.kind, rule.injected()) {
            (FaultKind::AicoreLaunch, Injected::Fail(code)) => {
                RunFault::LaunchRefused(Engine::Aicore, code)
            }
            (FaultKind::AicpuLaunch, Injected::Fail(code)) => {
                RunFault::LaunchRefused(Engine::Aicpu, code)
            }
            (FaultKind::Prepare, Injected::Fail(code)) => RunFault::Prepare(code),
            (FaultKind::PrepareIncompatible, _) => RunFault::PrepareIncompatible,
            (FaultKind::CopyBack, Injected::Fail(code)) => RunFault::CopyBack(code),
            (FaultKind::Validation, _) => RunFault::Validation,
            (FaultKind::Exception, Injected::Exception(AclCode::RtAicoreException)) => {
                RunFault::Exception(Engine::Aicore)
            }
            (FaultKind::Exception, Injected::Exception(AclCode::RtAicpuException)) => {
                RunFault::Exception(Engine::Aicpu)
            }
            (FaultKind::Exception, _) => {
                return Err(none(
                    "the fake's kernels raise 507015 (AICore) or 507018 (AICPU); a timeout code is a hang",
                ));
            }
            (FaultKind::Hang, _) => RunFault::Hang(Engine::Aicore),
            (FaultKind::HangAicpu, _) => RunFault::Hang(Engine::Aicpu),
            (FaultKind::Silent, _) => RunFault::Silent,
            (FaultKind::Stuck, _) => {
                return Err(none(
                    "the fake's kernels always end at the device op timeout backend-acl programs",
                ));
            }
            (FaultKind::Latch, Injected::Latch(latched)) => RunFault::Latch(latched),
            _ => {
                return Err(none(
                    "the fake cannot tell which run or caller this call is for",
                ));
            }
        };
        let select = match &rule.when {
            When::Always => RunSelect::All,
            When::Runs(runs) => RunSelect::Runs(runs.clone()),
            When::Calls(_) => {
                return Err(none(
                    "a run-bound fault is selected by run on the fake, not by call count",
                ));
            }
            When::Rate(_) => {
                return Err(none("a rate is the simulator's seeded draw"));
            }
            When::CallSpan { .. } => {
                return Err(none(
                    "a run-bound fault is selected by run on the fake, not by call count",
                ));
            }
        };
        self.runs.faults.push((select, fault));
        Ok(())
    }
}

/// `calls`/`always` as fail-call rules `(skip, count)`: the fake consults the first rule for
/// a symbol and counts its skip down, so consecutive rules for one symbol compose. `None`
/// for any other selector.
fn call_rules(when: &When) -> Option<Vec<(u32, u32)>> {
    match when {
        When::Always => Some(vec![(0, u32::MAX)]),
        When::Calls(calls) => {
            let mut sorted = calls.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let mut rules: Vec<(u32, u32)> = Vec::new();
            let mut after = 0_u64;
            for call in sorted {
                let skip = u32::try_from(call - after - 1).ok()?;
                match rules.last_mut() {
                    // Adjacent calls extend the previous rule.
                    Some((_, count)) if skip == 0 => *count += 1,
                    _ => rules.push((skip, 1)),
                }
                after = call;
            }
            Some(rules)
        }
        When::Runs(_) | When::Rate(_) | When::CallSpan { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(spec: &str) -> FaultRule {
        FaultRule::parse(spec).unwrap()
    }

    #[test]
    fn call_counts_become_skip_and_count_pairs() {
        assert_eq!(call_rules(&When::Calls(vec![2])), Some(vec![(1, 1)]));
        assert_eq!(
            call_rules(&When::Calls(vec![5, 2, 3])),
            Some(vec![(1, 2), (1, 1)])
        );
        assert_eq!(call_rules(&When::Always), Some(vec![(0, u32::MAX)]));
        assert_eq!(call_rules(&When::Rate(5)), None);
    }

    #[test]
    fn the_scenario_fault_kinds_map_onto_the_fake() {
        let plan = FakePlan::of(&[
            rule("stream-create=207008@call:2"),
            rule("reset=507899@always"),
            rule("exception=ACL_ERROR_RT_AICORE_EXCEPTION@run:3"),
            rule("hang@run:2"),
            rule("aicpu-launch=107000@run:2"),
            rule("latch=SCOPE_DEADLOCK@run:2"),
        ])
        .unwrap();
        assert_eq!(plan.calls.len(), 2);
        assert_eq!(plan.calls[0].symbol, "aclrtCreateStreamWithConfig");
        assert_eq!((plan.calls[0].skip, plan.calls[0].count), (1, 1));
        assert_eq!(plan.runs.faults.len(), 4);
        assert_eq!(
            plan.runs.faults[0],
            (
                RunSelect::Runs(vec![3]),
                RunFault::Exception(Engine::Aicore)
            )
        );
    }

    #[test]
    fn a_rule_without_a_counterpart_says_so_and_how_to_mark_the_scenario() {
        for spec in [
            "hang@rate:0.5",
            "event-wait@run:2",
            "exception=507014@run:1",
        ] {
            let err = FakePlan::of(&[rule(spec)]).unwrap_err().to_string();
            assert!(err.contains("no counterpart on the fake"), "{spec}: {err}");
            assert!(err.contains("backends = [\"sim\"]"), "{spec}: {err}");
        }
    }
}
