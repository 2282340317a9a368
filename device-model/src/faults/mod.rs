//! Fault rules installed on a device, decided by one seed: the one fault vocabulary of
//! backend-sim (`--fault`, scenario files) and acl-fake (its control calls).
//!
//! A [`FaultRule`] names a [`FaultKind`] (which call or run it hits and what it does), an
//! optional code, and [`When`] it fires. The device consults the installed rules at every
//! [`Site`] in install order; the first rule that fires wins (turmoil's `Rule`/`Verdict`).
//! Rates draw from a [`ChaCha8Rng`] seeded from the run's seed, so the same seed and the
//! same rules inject the same faults, on every platform and rand version.
//!
//! [`swarm`] derives a whole fault mix (which kinds are on, their rates and codes) from a
//! seed (TigerBeetle's swarm testing); [`FaultRule`]'s `Display` prints each rule in the
//! `--fault` syntax so the mix can be printed and replayed.
//!
//! This file holds the sites, codes, rules' shape and the deciding [`Faults`]; the kinds'
//! table is in `kind`, the rule's parser and printer in `rule` (split for length).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use status_latch::{AclCode, RuntimeCode};
use thiserror::Error;

use crate::config::Engine;
use crate::kernel::Outcome;

mod kind;
mod rule;

use kind::CodeKind;
pub use kind::FaultKind;
pub use rule::{is_scheduler_code, parse_rate, rate_to_ppm};

/// Parts per million: rates are integers so they print and compare exactly.
const PPM: u64 = 1_000_000;

/// Where the device consults its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Site {
    /// `create_stream` (also the probe's create).
    StreamCreate,
    /// `destroy_stream`.
    StreamDestroy,
    /// `launch_aicore`.
    AicoreLaunch,
    /// `launch_aicpu`.
    AicpuLaunch,
    /// `record_event`.
    EventRecord,
    /// `synchronize_event` / `query_event`.
    EventWait,
    /// The status header's device-to-host read.
    StatusRead,
    /// `malloc`.
    Malloc,
    /// The runner's `prepare_run`.
    Prepare,
    /// The runner's `finalise_run`.
    Finalise,
    /// The runner's `upload_code`.
    Upload,
    /// `reset_device_force`.
    Reset,
    /// `set_device`, the first call of the probe after a reset.
    Probe,
    /// A run's kernels, decided when both are enqueued.
    Run,
    /// The slot's arm: a host-to-device copy, synchronous or its async enqueue.
    Arm,
    /// The result record's device-to-host read (the completion waiter's, right after the
    /// run's boundary).
    RecordRead,
    /// One kernel's launch on this engine, a run's or alone (the kernel rules).
    Kernel(Engine),
    /// An async copy's task, when its stream reaches it.
    Copy,
    /// A call of a named function (the `call` rules, [`Faults::decide_call`]).
    Call,
}

/// The code a rule injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultCode {
    /// The kind takes no code.
    None,
    /// An ACL/RT return code.
    Acl(AclCode),
    /// A runtime latch code.
    Runtime(RuntimeCode),
    /// A raw return value (a `call` rule's, 0 included).
    Raw(i32),
}

/// When a rule fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    /// Every time its site is consulted.
    Always,
    /// The n-th consultations of its site, counting from 1 over the whole simulation.
    Calls(Vec<u64>),
    /// Consultations about these runs (by run id).
    Runs(Vec<u64>),
    /// Each consultation with this probability, in parts per million, drawn from the seed.
    Rate(u32),
    /// The consultations `first..=last` (`None`: every one from `first`), counting from 1.
    CallSpan {
        /// The first selected.
        first: u64,
        /// The last selected, if any.
        last: Option<u64>,
    },
}

/// What the device does when a rule fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The call returns this code.
    Fail(AclCode),
    /// The prepare reports incompatible.
    Incompatible,
    /// Validation fails.
    Validation,
    /// The run ends with a device exception.
    Exception(AclCode),
    /// The run's AICore kernel hangs until the device op timeout.
    Hang,
    /// The run's AICPU scheduler hangs until the device op timeout.
    HangAicpu,
    /// The run exits with clean streams and publishes no record.
    Silent,
    /// The run never ends.
    Stuck,
    /// The run latches this code.
    Latch(Latched),
    /// One kernel ends so: its outcome, and for a latch the latch to write (in the layout of
    /// its own header) or the header bytes themselves.
    Kernel(Outcome, KernelHeader),
    /// A named call returns this raw value.
    Call(i32),
}

/// The header a `kernel-latch` rule writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelHeader {
    /// The kernel's own.
    Own,
    /// Its own layout, with this latch.
    Latched(Latched),
    /// These bytes.
    Bytes(Vec<u8>),
}

/// What a latch fault writes: the code, and for a scheduler code (100 and above) which
/// scheduler threads reported it. Every reporting thread sets its bit in the bitmap; the
/// first writer's code and thread are the ones kept (SPEC §5.1, first-writer-wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latched {
    /// The first writer's code.
    pub code: RuntimeCode,
    /// The first writer's thread.
    pub first_thread: u8,
    /// Every thread that reported, one bit each.
    pub bitmap: u32,
}

impl Latched {
    /// The status header this latch writes: a scheduler code (100 and above) on the
    /// scheduler side with its first thread and bitmap, any other code on the orchestrator.
    /// `None` is a clean header. Every backend's runner writes headers through this one
    /// function, so they latch alike.
    pub fn status(
        latched: Option<Self>,
        layout: status_latch::HeaderLayout,
    ) -> status_latch::Status {
        let mut status = status_latch::Status::clean(layout);
        match latched {
            Some(latched) if is_scheduler_code(latched.code) => {
                status.sched = Some(latched.code);
                status.sched_thread = i32::from(latched.first_thread);
                status.sched_bitmap = latched.bitmap;
            }
            Some(latched) => status.orch = Some(latched.code),
            None => {}
        }
        status
    }
}

/// Scheduler threads a header's bitmap can name (one bit each of a u32).
pub const SCHED_THREADS: u8 = 32;

/// One installed rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// What it injects.
    pub kind: FaultKind,
    /// With which code.
    pub code: FaultCode,
    /// When.
    pub when: When,
    /// For a latch of a scheduler code: the scheduler threads that latched it, the first
    /// writer first. Empty: thread 0 alone.
    pub threads: Vec<u8>,
    /// A `call` rule's function name.
    pub call: Option<String>,
    /// A `kernel-*` rule's engine (`None`: either).
    pub engine: Option<Engine>,
    /// A `kernel-latch` rule's header bytes, written as they are.
    pub header: Option<Vec<u8>>,
}

/// Why a fault rule was refused. Each message names the problem and the fix.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FaultError {
    /// The kind is not one the simulator knows.
    #[error("unknown fault kind '{got}'; use one of: {}", FaultKind::names())]
    UnknownKind {
        /// What was given.
        got: String,
    },
    /// A code was given to a kind that takes none.
    #[error("fault '{kind}' takes no code; drop '={code}'")]
    UnexpectedCode {
        /// The kind.
        kind: &'static str,
        /// The code given.
        code: String,
    },
    /// The code is not a valid code for the kind.
    #[error(
        "fault '{kind}': '{code}' is not a {what}; give a non-zero number or a name such as {example}"
    )]
    BadCode {
        /// The kind.
        kind: &'static str,
        /// The code given.
        code: String,
        /// "runtime latch code" or "ACL return code".
        what: &'static str,
        /// An example name.
        example: &'static str,
    },
    /// Runs were named for a kind that is not about a run.
    #[error(
        "fault '{kind}' does not happen to a run, so 'runs' cannot select it; use calls (e.g. @call:1) or a rate"
    )]
    NotRunBound {
        /// The kind.
        kind: &'static str,
    },
    /// The selector is malformed.
    #[error(
        "bad selector '{got}' in fault '{spec}': use @always, @run:1,3, @call:2 or @rate:0.05 (also 5%)"
    )]
    BadSelector {
        /// The whole spec.
        spec: String,
        /// The selector part.
        got: String,
    },
    /// A rate outside 0..=1.
    #[error("fault rate {got} is outside 0..=1; give a probability such as 0.05 or 5%")]
    BadRate {
        /// What was given.
        got: String,
    },
    /// An empty or zero list of calls or runs.
    #[error(
        "fault '{kind}' selects no {what}; list numbers from 1, e.g. {what} = [2] or @{short}:2"
    )]
    EmptySelection {
        /// The kind.
        kind: &'static str,
        /// "runs" or "calls".
        what: &'static str,
        /// "run" or "call".
        short: &'static str,
    },
    /// Threads were named for a fault that is not a latch of a scheduler code.
    #[error(
        "fault '{kind}': only a latch of a scheduler code (100 and above, e.g. SCHEDULER_TIMEOUT) \
         names scheduler threads; drop the threads or latch a scheduler code"
    )]
    ThreadsWithoutSchedulerLatch {
        /// The kind.
        kind: &'static str,
    },
    /// The thread list is empty, repeats a thread or names one the bitmap cannot hold.
    #[error(
        "fault threads {got:?}: list distinct scheduler threads from 0 to {}, the first writer first",
        SCHED_THREADS - 1
    )]
    BadThreads {
        /// What was given.
        got: Vec<u8>,
    },
    /// More than one selector in a scenario rule.
    #[error(
        "fault '{kind}' has more than one of runs, calls, rate, always; keep one (one rule per selector)"
    )]
    TwoSelectors {
        /// The kind.
        kind: &'static str,
    },
}

/// splitmix64: derives independent child seeds from one seed (a fixed, version-stable
/// function, so derivations never change under us).
pub const fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Child-seed streams, one per component that draws from the seed.
pub mod streams {
    /// Fault rate draws.
    pub const FAULTS: u64 = 1;
    /// The swarm mix.
    pub const SWARM: u64 = 2;
    /// Per-run device time jitter.
    pub const JITTER: u64 = 3;
}

/// A ChaCha8 generator for one component of the simulation.
pub fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(mix_seed(seed, stream))
}

/// Derives a whole fault mix from `seed`: each kind is on with probability 1/3, at a rate
/// between 0.5% and 10% (recovery faults between 10% and 60%, so some mixes exhaust the
/// recovery attempts and end lost), with one of its codes. Print it with [`describe`].
pub fn swarm(seed: u64) -> Vec<FaultRule> {
    const RATES_PPM: [u32; 5] = [5_000, 10_000, 20_000, 50_000, 100_000];
    const RECOVERY_RATES_PPM: [u32; 5] = [100_000, 200_000, 300_000, 450_000, 600_000];
    let mut rng = rng_for(seed, streams::SWARM);
    let mut pick = |n: usize| -> usize {
        let n = u64::try_from(n).unwrap_or(1).max(1);
        usize::try_from(rng.next_u64() % n).unwrap_or(0)
    };
    let mut rules = Vec::new();
    // The arm kind came after the swarm's mixes were fixed: drawing it would change them.
    for kind in FaultKind::ALL.into_iter().filter(|k| *k != FaultKind::Arm) {
        if pick(3) != 0 {
            continue;
        }
        let rates = if matches!(kind, FaultKind::Reset | FaultKind::Probe) {
            &RECOVERY_RATES_PPM
        } else {
            &RATES_PPM
        };
        let rate = rates.get(pick(rates.len())).copied().unwrap_or(10_000);
        let codes = kind.default_codes();
        let code = if codes.is_empty() {
            FaultCode::None
        } else {
            let raw = codes.get(pick(codes.len())).copied().unwrap_or(0);
            match kind.row().2 {
                CodeKind::Runtime => {
                    RuntimeCode::from_value(raw).map_or(FaultCode::None, FaultCode::Runtime)
                }
                _ => AclCode::from_raw(raw).map_or(FaultCode::None, FaultCode::Acl),
            }
        };
        rules.push(FaultRule {
            kind,
            code,
            when: When::Rate(rate),
            threads: Vec::new(),
            call: None,
            engine: None,
            header: None,
        });
    }
    rules
}

/// The rules, one per line, in `--fault` syntax.
pub fn describe(rules: &[FaultRule]) -> String {
    if rules.is_empty() {
        return "  (no faults)".to_owned();
    }
    rules.iter().map(|r| format!("  --fault {r}")).collect::<Vec<_>>().join("\n")
}

/// The installed rules, what each has counted, and the generator their rates draw from.
#[derive(Clone, Debug)]
pub struct Faults {
    rules: Vec<FaultRule>,
    /// Per rule: the consultations it has counted since it was installed.
    seen: Vec<u64>,
    rng: ChaCha8Rng,
    injected: u64,
}

impl Faults {
    /// No rules; rates (once rules are installed) draw from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rules: Vec::new(),
            seen: Vec::new(),
            rng: rng_for(seed, streams::FAULTS),
            injected: 0,
        }
    }

    /// Installs a rule after the existing ones (earlier rules win). Its `calls` count the
    /// consultations of its site from now.
    pub fn install(&mut self, rule: FaultRule) {
        self.rules.push(rule);
        self.seen.push(0);
    }

    /// Removes every rule (the liveness phase: faults healed).
    pub fn heal(&mut self) {
        self.rules.clear();
        self.seen.clear();
    }

    /// How many faults fired so far.
    pub const fn injected(&self) -> u64 {
        self.injected
    }

    /// Consults the rules for one call at `site` (about `run`, when it is about one). Every
    /// rule of the site counts the consultation; the first that fires wins; rates draw only
    /// when their rule is reached.
    pub fn decide(&mut self, site: Site, run: Option<u64>) -> Option<Injected> {
        self.first_firing(|rule| rule.counts_at(site), run)
    }

    /// Consults the `call` rules for a call of `symbol`: the value it returns, if one fires.
    pub fn decide_call(&mut self, symbol: &str) -> Option<i32> {
        let injected = self.first_firing(
            |rule| rule.kind == FaultKind::Call && rule.call.as_deref() == Some(symbol),
            None,
        );
        match injected {
            Some(Injected::Call(raw)) => Some(raw),
            _ => None,
        }
    }

    fn first_firing(
        &mut self,
        counts: impl Fn(&FaultRule) -> bool,
        run: Option<u64>,
    ) -> Option<Injected> {
        let mut fired = None;
        for (rule, seen) in self.rules.iter().zip(self.seen.iter_mut()) {
            if !counts(rule) {
                continue;
            }
            *seen += 1;
            let nth = *seen;
            if fired.is_some() {
                continue;
            }
            let fires = match &rule.when {
                When::Always => true,
                When::Calls(calls) => calls.contains(&nth),
                When::CallSpan { first, last } => {
                    nth >= *first && last.is_none_or(|last| nth <= last)
                }
                When::Runs(runs) => run.is_some_and(|r| runs.contains(&r)),
                When::Rate(ppm) => self.rng.next_u64() % PPM < u64::from(*ppm),
            };
            if fires {
                fired = Some(rule.injected());
            }
        }
        if fired.is_some() {
            self.injected += 1;
        }
        fired
    }
}

#[cfg(test)]
mod tests;
