//! [`FaultRule`]'s constructors, its `--fault` parser and its `Display` (the same syntax),
//! with the rate and code parsers they share. Apart from [`super`] for length.

use core::fmt;
use status_latch::{AclCode, RuntimeCode};

use super::kind::CodeKind;
use super::{
    FaultCode, FaultError, FaultKind, FaultRule, Injected, KernelHeader, Latched, PPM,
    SCHED_THREADS, Site, When,
};
use crate::config::Engine;
use crate::kernel::Outcome;

impl FaultRule {
    /// A validated rule. `code` is the code's number or name (`None` takes the kind's
    /// default code).
    pub fn new(kind: FaultKind, code: Option<&str>, when: When) -> Result<Self, FaultError> {
        let (name, _, code_kind, defaults, _) = kind.row();
        let default = || defaults.first().copied().unwrap_or(0).to_string();
        let code = match (code_kind, code) {
            (CodeKind::None, None) | (CodeKind::OptionalAcl | CodeKind::OptionalRuntime, None) => {
                FaultCode::None
            }
            (CodeKind::None, Some(code)) => {
                return Err(FaultError::UnexpectedCode { kind: name, code: code.to_owned() });
            }
            (CodeKind::Acl | CodeKind::OptionalAcl, given) => {
                let value = given.map_or_else(default, str::to_owned);
                FaultCode::Acl(parse_acl(name, &value)?)
            }
            (CodeKind::Runtime | CodeKind::OptionalRuntime, given) => {
                let value = given.map_or_else(default, str::to_owned);
                FaultCode::Runtime(parse_runtime(name, &value)?)
            }
            (CodeKind::Raw, given) => {
                let value = given.map_or_else(default, str::to_owned);
                let raw = value
                    .parse::<i32>()
                    .ok()
                    .or_else(|| parse_acl(name, &value).ok().map(AclCode::raw))
                    .ok_or_else(|| FaultError::BadCode {
                        kind: name,
                        code: value.clone(),
                        what: "return value",
                        example: "507899, 0 or ACL_ERROR_RT_DRV_INTERNAL_ERROR",
                    })?;
                FaultCode::Raw(raw)
            }
        };
        match &when {
            When::Runs(runs) if !kind.is_run_bound() && !runs.is_empty() => {
                return Err(FaultError::NotRunBound { kind: name });
            }
            When::Runs(list) | When::Calls(list) if list.is_empty() || list.contains(&0) => {
                let (what, short) =
                    if matches!(when, When::Runs(_)) { ("runs", "run") } else { ("calls", "call") };
                return Err(FaultError::EmptySelection { kind: name, what, short });
            }
            When::CallSpan { first, last }
                if *first == 0 || last.is_some_and(|last| last < *first) =>
            {
                return Err(FaultError::EmptySelection {
                    kind: name,
                    what: "calls",
                    short: "call",
                });
            }
            _ => {}
        }
        Ok(Self { kind, code, when, threads: Vec::new(), call: None, engine: None, header: None })
    }

    /// A `call` rule: calls of `symbol` selected by `when` return `code` (any value, 0
    /// included) instead of running.
    #[must_use]
    pub fn call(symbol: &str, code: i32, when: When) -> Self {
        Self {
            kind: FaultKind::Call,
            code: FaultCode::Raw(code),
            when,
            threads: Vec::new(),
            call: Some(symbol.to_owned()),
            engine: None,
            header: None,
        }
    }

    /// The same rule for one engine's kernels only (a `kernel-*` rule).
    #[must_use]
    pub const fn on_engine(mut self, engine: Option<Engine>) -> Self {
        self.engine = engine;
        self
    }

    /// The same `kernel-latch` rule writing these header bytes as they are.
    #[must_use]
    pub fn with_header(mut self, header: Vec<u8>) -> Self {
        self.header = Some(header);
        self
    }

    /// The same rule, latched by these scheduler threads (the first writer first). Only a
    /// latch of a scheduler code names threads.
    pub fn with_threads(mut self, threads: Vec<u8>) -> Result<Self, FaultError> {
        let scheduler_latch = matches!(
            (self.kind, self.code),
            (FaultKind::Latch | FaultKind::KernelLatch, FaultCode::Runtime(code)) if is_scheduler_code(code)
        );
        if !scheduler_latch {
            return Err(FaultError::ThreadsWithoutSchedulerLatch { kind: self.kind.name() });
        }
        let distinct = threads
            .iter()
            .enumerate()
            .all(|(i, t)| !threads.get(..i).is_some_and(|before| before.contains(t)));
        if threads.is_empty() || !distinct || threads.iter().any(|t| *t >= SCHED_THREADS) {
            return Err(FaultError::BadThreads { got: threads });
        }
        self.threads = threads;
        Ok(self)
    }

    /// Parses the `--fault` syntax: `KIND[=CODE][@SELECTOR][/QUALIFIER...]`, where the
    /// selector is `always` (the default), `run:1,3`, `call:2` (or a span, `call:2-4`,
    /// `call:2-`) or `rate:0.05` (also `rate:5%`), and a qualifier is `threads:T,..` (a latch
    /// of a scheduler code: the scheduler threads that latched it, the first writer first),
    /// `engine:aicore|aicpu` (a `kernel-*` rule) or `header:HEX` (a `kernel-latch` rule's
    /// header bytes). A `call` rule names its function in its kind: `call:aclrtMalloc=207001`.
    pub fn parse(spec: &str) -> Result<Self, FaultError> {
        let mut parts = spec.split('/');
        let rule = parts.next().unwrap_or_default();
        let mut parsed = Self::parse_rule(rule)?;
        let bad =
            |got: &str| FaultError::BadSelector { spec: spec.to_owned(), got: got.to_owned() };
        for qualifier in parts {
            let (what, value) = qualifier.split_once(':').ok_or_else(|| bad(qualifier))?;
            match what {
                "threads" => {
                    let threads = value
                        .split(',')
                        .map(|t| t.trim().parse::<u8>())
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|_| bad(qualifier))?;
                    parsed = parsed.with_threads(threads)?;
                }
                "engine" if parsed.kind.is_kernel() => {
                    parsed.engine = Some(match value {
                        "aicore" => Engine::Aicore,
                        "aicpu" => Engine::Aicpu,
                        _ => return Err(bad(qualifier)),
                    });
                }
                "header" if parsed.kind == FaultKind::KernelLatch => {
                    parsed.header = Some(parse_hex(value).ok_or_else(|| bad(qualifier))?);
                }
                _ => return Err(bad(qualifier)),
            }
        }
        Ok(parsed)
    }

    /// `KIND[=CODE][@SELECTOR]`.
    fn parse_rule(spec: &str) -> Result<Self, FaultError> {
        let (head, selector) = match spec.split_once('@') {
            Some((head, sel)) => (head, Some(sel)),
            None => (spec, None),
        };
        let (kind, code) = match head.split_once('=') {
            Some((kind, code)) => (kind, Some(code)),
            None => (head, None),
        };
        let (kind, call) = match kind.trim().split_once(':') {
            Some(("call", symbol)) if !symbol.is_empty() => (FaultKind::Call, Some(symbol)),
            _ => (FaultKind::from_name(kind.trim())?, None),
        };
        let bad = || FaultError::BadSelector {
            spec: spec.to_owned(),
            got: selector.unwrap_or_default().to_owned(),
        };
        let when = match selector.map(str::trim) {
            None | Some("always") => When::Always,
            Some(sel) => {
                let (what, list) = sel.split_once(':').ok_or_else(bad)?;
                match what {
                    "run" | "runs" => When::Runs(parse_list(list).ok_or_else(bad)?),
                    "call" | "calls" => match list.split_once('-') {
                        Some((first, last)) => When::CallSpan {
                            first: first.trim().parse().map_err(|_| bad())?,
                            last: match last.trim() {
                                "" => None,
                                last => Some(last.parse().map_err(|_| bad())?),
                            },
                        },
                        None => When::Calls(parse_list(list).ok_or_else(bad)?),
                    },
                    "rate" => When::Rate(parse_rate(list)?),
                    _ => return Err(bad()),
                }
            }
        };
        let mut rule = Self::new(kind, code.map(str::trim), when)?;
        rule.call = call.map(str::to_owned);
        Ok(rule)
    }

    /// What the device does when this rule fires.
    pub fn injected(&self) -> Injected {
        let latched = |code| Latched {
            code,
            first_thread: self.threads.first().copied().unwrap_or(0),
            bitmap: if self.threads.is_empty() {
                1
            } else {
                self.threads
                    .iter()
                    .fold(0, |bits, t| bits | 1_u32.checked_shl(u32::from(*t)).unwrap_or(0))
            },
        };
        match (self.kind, self.code) {
            (FaultKind::PrepareIncompatible, _) => Injected::Incompatible,
            (FaultKind::Validation, _) => Injected::Validation,
            (FaultKind::Hang, _) => Injected::Hang,
            (FaultKind::HangAicpu, _) => Injected::HangAicpu,
            (FaultKind::Silent, _) => Injected::Silent,
            (FaultKind::Stuck, _) => Injected::Stuck,
            (FaultKind::Latch, FaultCode::Runtime(code)) => Injected::Latch(latched(code)),
            (FaultKind::Exception, FaultCode::Acl(code)) => Injected::Exception(code),
            (FaultKind::Call, FaultCode::Raw(code)) => Injected::Call(code),
            (FaultKind::KernelException, code) => Injected::Kernel(
                Outcome::Exception(match code {
                    FaultCode::Acl(code) => Some(code),
                    _ => None,
                }),
                KernelHeader::Own,
            ),
            (FaultKind::KernelHang, _) => Injected::Kernel(Outcome::Hang, KernelHeader::Own),
            (FaultKind::KernelStuck, _) => Injected::Kernel(Outcome::Stuck, KernelHeader::Own),
            (FaultKind::KernelSilent, _) => Injected::Kernel(Outcome::Silent, KernelHeader::Own),
            (FaultKind::KernelOk, _) => Injected::Kernel(Outcome::Ok, KernelHeader::Own),
            (FaultKind::KernelLatch, code) => Injected::Kernel(
                Outcome::Latch,
                match (&self.header, code) {
                    (Some(bytes), _) => KernelHeader::Bytes(bytes.clone()),
                    (None, FaultCode::Runtime(code)) => KernelHeader::Latched(latched(code)),
                    (None, _) => KernelHeader::Own,
                },
            ),
            (_, FaultCode::Acl(code)) => Injected::Fail(code),
            // `new` gives every other kind an ACL code; a hand-built odd rule still fails.
            (_, _) => Injected::Fail(AclCode::RtInternalError),
        }
    }

    /// Whether a consultation at `site` is one this rule counts.
    pub(super) fn counts_at(&self, site: Site) -> bool {
        match site {
            Site::Kernel(engine) => {
                self.kind.is_kernel() && self.engine.is_none_or(|e| e == engine)
            }
            site => !self.kind.is_kernel() && self.kind.site() == site,
        }
    }
}

impl fmt::Display for FaultRule {
    /// The rule in `--fault` syntax (parses back to the same rule).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(call) = &self.call {
            write!(f, ":{call}")?;
        }
        match self.code {
            FaultCode::None => {}
            FaultCode::Acl(code) => write!(f, "={}", code.raw())?,
            FaultCode::Runtime(code) => write!(f, "={}", code.value())?,
            FaultCode::Raw(code) => write!(f, "={code}")?,
        }
        let list = |l: &[u64]| l.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        match &self.when {
            When::Always => Ok(()),
            When::Calls(l) => write!(f, "@call:{}", list(l)),
            When::Runs(l) => write!(f, "@run:{}", list(l)),
            When::Rate(ppm) => write!(f, "@rate:{}", fmt_rate(*ppm)),
            When::CallSpan { first, last } => match last {
                Some(last) => write!(f, "@call:{first}-{last}"),
                None => write!(f, "@call:{first}-"),
            },
        }?;
        if !self.threads.is_empty() {
            let threads: Vec<String> = self.threads.iter().map(u8::to_string).collect();
            write!(f, "/threads:{}", threads.join(","))?;
        }
        match self.engine {
            Some(Engine::Aicore) => f.write_str("/engine:aicore")?,
            Some(Engine::Aicpu) => f.write_str("/engine:aicpu")?,
            None => {}
        }
        if let Some(header) = &self.header {
            f.write_str("/header:")?;
            for byte in header {
                write!(f, "{byte:02x}")?;
            }
        }
        Ok(())
    }
}

/// Bytes from hex digits (`ee0102`).
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Whether a runtime code is latched by the schedulers (100 and above, SPEC §5.2) rather
/// than the orchestrator.
pub const fn is_scheduler_code(code: RuntimeCode) -> bool {
    code.value() >= 100
}

/// A rate in ppm as a short decimal probability (`0.05`, `0.0025`).
fn fmt_rate(ppm: u32) -> String {
    let s = format!("{}.{:06}", u64::from(ppm) / PPM, u64::from(ppm) % PPM);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').map_or_else(|| s.to_owned(), str::to_owned)
}

fn parse_list(list: &str) -> Option<Vec<u64>> {
    list.split(',').map(|n| n.trim().parse::<u64>().ok()).collect()
}

/// Parses a probability (`0.05` or `5%`) into parts per million.
pub fn parse_rate(text: &str) -> Result<u32, FaultError> {
    let bad = || FaultError::BadRate { got: text.to_owned() };
    let trimmed = text.trim();
    let value: f64 = match trimmed.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => trimmed.parse::<f64>().map_err(|_| bad())?,
    };
    rate_to_ppm(value).ok_or_else(bad)
}

/// A probability in 0..=1 as parts per million.
pub fn rate_to_ppm(value: f64) -> Option<u32> {
    if !value.is_finite() || !(0.0..=1.0).contains(&value) {
        return None;
    }
    // In range, so the cast neither truncates nor wraps.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ppm = (value * 1_000_000.0).round() as u32;
    Some(ppm)
}

fn parse_acl(kind: &'static str, text: &str) -> Result<AclCode, FaultError> {
    let bad = || FaultError::BadCode {
        kind,
        code: text.to_owned(),
        what: "ACL return code",
        example: "507015 or ACL_ERROR_RT_AICORE_EXCEPTION",
    };
    if let Ok(value) = text.parse::<i32>() {
        return AclCode::from_raw(value).ok_or_else(bad);
    }
    AclCode::ALL.into_iter().find(|c| c.name() == text).ok_or_else(bad)
}

fn parse_runtime(kind: &'static str, text: &str) -> Result<RuntimeCode, FaultError> {
    let bad = || FaultError::BadCode {
        kind,
        code: text.to_owned(),
        what: "runtime latch code",
        example: "1 or SCOPE_DEADLOCK",
    };
    if let Ok(value) = text.parse::<i32>() {
        return RuntimeCode::from_value(value).ok_or_else(bad);
    }
    RuntimeCode::ALL.into_iter().find(|c| c.name() == text).ok_or_else(bad)
}
