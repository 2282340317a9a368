//! Scenario files: a workload, a fault plan and the expected outcome of each run, in TOML.
//! `lane-sim check FILE...` runs them and prints a readable diff when an expectation fails.
//!
//! ```toml
//! name = "run-only failure, successor continues"
//! rules = ["L-9"]               # the SPEC rules it shows
//! profile = "a2a3"              # "a5" or "depth-one"; optional `depth = 1`
//! copies = "on-stream"          # optional: "sync" (default) or "on-stream" (CopyPath)
//! header = "host_build_graph"   # optional: the runtime's header layout (default
//!                               # "tensormap_and_ringbuffer", SPEC §5.1)
//! seed = 1
//! backends = ["sim"]            # optional: the backends that can express it (default: all)
//! backends_reason = "..."       # required when `backends` leaves one out: why
//!
//! [workload]
//! runs = 3                      # required
//! device_us = 250.0             # default 250
//! jitter_pct = 0.0              # default 0
//! publish_after = [2]           # publish right after submitting the 2nd run
//! diagnostics = []              # runs (by submission position) with diagnostics
//! close_after = 3               # close right after the 3rd run (default: after the last)
//!
//! [costs]                       # optional overrides, in us
//! prepare = 70.0
//!
//! [[fault]]                     # rules, in install order; the first that fires wins
//! kind = "latch"                # `lane-sim faults` lists the kinds
//! code = "SCOPE_DEADLOCK"       # or 1; optional (each kind has a default)
//! runs = [2]                    # or calls = [1], rate = 0.05, always = true
//! threads = [3, 1]              # a scheduler code's latching threads, first writer first
//!
//! [expect]                      # every key is optional
//! lane = "closed"               # or "lost": recovery failed before close
//! aicore_streams_created = 1
//! queued_launches = 2           # launches that found an earlier run still on the device
//! resets = 0
//! not_accepted = 0              # runs and publications refused (lane closed or lost)
//! outcomes = [                  # one per accepted item, by id (runs and publications
//!   "run 1: ok",                # share one id sequence)
//!   "run 2: failed (latched-change-and-rerun: SCOPE_DEADLOCK)",
//!   "publication 3: uploaded",
//!   "run 4: poisoned by run 2 (device-fault)",
//! ]
//! latches = [                   # every status header read that latched a code, in order
//!   "run 2: orch_error_code=1",   # (a scheduler code reads `sched_error_code=100
//! ]                             # sched_error_thread=3 sched_error_bitmap=0xa`)
//! ```
//!
//! An outcome line is `run N: ok | cancelled | failed [(CAUSE)] | poisoned by run M
//! [(CAUSE)]` or `publication N: uploaded | cancelled | failed [(CAUSE)] | poisoned by run
//! M [(CAUSE)]`. CAUSE is the classification rule's name (`device-fault`), optionally
//! followed by `: ` and the code's name (`device-fault: ACL_ERROR_RT_AICORE_EXCEPTION`); a
//! left-out part is not compared.
//!
//! **Backends.** The conformance suite (lane-conformance) runs every scenario on each
//! [`BackendName`] against the same expectations. A scenario only some can express (a rate,
//! a figure only virtual time makes exact) lists them in `backends`, with `backends_reason`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use lane_core::status_latch::{HeaderLayout, Status};
use lane_core::{CopyPath, Outcome, PublicationResult, RunId, Verdict};
use serde::Deserialize;

use crate::costs::Cost;
use crate::error::{InputError, SimError};
use crate::faults::{FaultKind, FaultRule, When, parse_rate};
use crate::stats::us_to_ns;
use crate::workload::{
    LaneEnd, Origin, Points, ProfileName, Report, SimConfig, Workload, copies_name, run,
};

/// Bytes a scenario file may have (a guard against pointing `check` at the wrong file).
const MAX_FILE_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    rules: Vec<String>,
    description: Option<String>,
    #[serde(default = "default_profile")]
    profile: String,
    depth: Option<u8>,
    /// `"sync"` (the default) or `"on-stream"`.
    copies: Option<String>,
    /// `"tensormap_and_ringbuffer"` (the default) or `"host_build_graph"`.
    header: Option<String>,
    #[serde(default = "default_seed")]
    seed: u64,
    backends: Option<Vec<String>>,
    backends_reason: Option<String>,
    workload: WorkloadSection,
    #[serde(default)]
    costs: BTreeMap<String, f64>,
    #[serde(default)]
    fault: Vec<FaultSection>,
    #[serde(default)]
    expect: Expect,
}

fn default_profile() -> String {
    "a2a3".to_owned()
}

const fn default_seed() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadSection {
    runs: u32,
    #[serde(default = "default_device_us")]
    device_us: f64,
    #[serde(default)]
    jitter_pct: f64,
    #[serde(default)]
    publish_after: Vec<u32>,
    #[serde(default)]
    diagnostics: Vec<u32>,
    close_after: Option<u32>,
}

/// The built-in workload's device time (see [`Workload::default`]).
const fn default_device_us() -> f64 {
    250.0
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum CodeValue {
    Number(i64),
    Name(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultSection {
    kind: String,
    code: Option<CodeValue>,
    runs: Option<Vec<u64>>,
    calls: Option<Vec<u64>>,
    rate: Option<f64>,
    always: Option<bool>,
    threads: Option<Vec<u8>>,
}

/// What a scenario expects; every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    lane: Option<String>,
    aicore_streams_created: Option<u64>,
    queued_launches: Option<u64>,
    resets: Option<u64>,
    not_accepted: Option<u32>,
    outcomes: Option<Vec<String>>,
    latches: Option<Vec<String>>,
}

/// A backend the conformance suite runs scenarios on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BackendName {
    /// The simulator (virtual time).
    Sim,
    /// backend-acl on the fake libascendcl (real time).
    Acl,
}

impl BackendName {
    /// Every backend, in the order the suite runs them.
    pub const ALL: [Self; 2] = [Self::Sim, Self::Acl];

    /// `sim` or `acl`, as scenario files write it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sim => "sim",
            Self::Acl => "acl",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// What a run produced, as far as a scenario's expectations compare it: the figures every
/// backend can report.
#[derive(Clone, Debug)]
pub struct Observed {
    /// How the lane ended.
    pub end: LaneEnd,
    /// Every outcome, in submission order.
    pub outcomes: Vec<Outcome>,
    /// Runs and publications refused (lane closed or lost).
    pub not_accepted: u32,
    /// AICore streams the lane created.
    pub aicore_streams_created: u64,
    /// Launches queued behind an earlier run still on the device.
    pub queued_launches: u64,
    /// Force resets that succeeded.
    pub resets: u64,
    /// Every status header read that latched a code, by run, in read order.
    pub latches: Vec<(RunId, Status)>,
}

impl Observed {
    /// The figures of a simulator report.
    pub fn of(report: &Report) -> Self {
        Self {
            end: report.end,
            outcomes: report.outcomes.clone(),
            not_accepted: report.not_accepted,
            aicore_streams_created: report.aicore_streams_created,
            queued_launches: report.queued_launches,
            resets: report.resets,
            latches: report.latches.clone(),
        }
    }
}

/// A parsed scenario: the simulation to run and what it must produce.
#[derive(Debug)]
pub struct Scenario {
    /// The file.
    pub path: String,
    /// Its one-line name.
    pub name: String,
    /// The SPEC rules it shows.
    pub rules: Vec<String>,
    /// What it shows and why, in a few sentences.
    pub description: Option<String>,
    /// What to simulate.
    pub config: SimConfig,
    /// The backends that can express it (every backend unless the file says otherwise).
    pub backends: Vec<BackendName>,
    /// Why it runs on fewer than every backend.
    pub backends_reason: Option<String>,
    expect: Expect,
    expected_outcomes: Option<Vec<ExpectedOutcome>>,
}

/// The result of checking one scenario.
#[derive(Debug)]
pub struct Checked {
    /// The scenario.
    pub scenario: Scenario,
    /// What the simulation produced.
    pub report: Report,
    /// One readable block per failed expectation (empty: it passed).
    pub mismatches: Vec<String>,
}

impl Checked {
    /// Whether every expectation held.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// A readable report: `ok` with the name, or `FAIL` with every mismatch.
    pub fn render(&self) -> String {
        self.scenario.render(None, &self.mismatches)
    }
}

impl Scenario {
    /// Whether the file lets `backend` run it.
    pub fn runs_on(&self, backend: BackendName) -> bool {
        self.backends.contains(&backend)
    }

    /// A readable report of a check: `ok` with the name (and the backend, if given), or
    /// `FAIL` with every mismatch and the line that reproduces it.
    pub fn render(&self, backend: Option<BackendName>, mismatches: &[String]) -> String {
        let rules = if self.rules.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.rules.join(", "))
        };
        let on = backend.map_or_else(String::new, |b| format!(" [{}]", b.name()));
        if mismatches.is_empty() {
            return format!("ok    {}{on}  {}{rules}\n", self.path, self.name);
        }
        let mut out = format!(
            "FAIL  {}{on}  {}{rules}: {} expectation{} differ\n",
            self.path,
            self.name,
            mismatches.len(),
            if mismatches.len() == 1 { "" } else { "s" }
        );
        for m in mismatches {
            for line in m.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        let _ = writeln!(out, "  reproduce: {}", self.config.repro());
        out
    }

    /// Compares what a run produced with the expectations: one readable block per failed
    /// expectation (empty: every expectation held).
    pub fn compare(&self, got: &Observed) -> Vec<String> {
        let mut mismatches = Vec::new();
        let e = &self.expect;
        if let Some(lane) = &e.lane {
            if got.end.name() != lane {
                mismatches.push(format!("lane: expected {lane}, got {}", got.end.name()));
            }
        }
        let numbers = [
            ("aicore_streams_created", e.aicore_streams_created, got.aicore_streams_created),
            ("queued_launches", e.queued_launches, got.queued_launches),
            ("resets", e.resets, got.resets),
            ("not_accepted", e.not_accepted.map(u64::from), u64::from(got.not_accepted)),
        ];
        for (name, expected, got) in numbers {
            if let Some(expected) = expected {
                if expected != got {
                    mismatches.push(format!("{name}: expected {expected}, got {got}"));
                }
            }
        }
        if let Some(expected) = &self.expected_outcomes {
            let got: Vec<GotOutcome> = got.outcomes.iter().map(GotOutcome::of).collect();
            if let Some(diff) = diff_outcomes(expected, &got) {
                mismatches.push(diff);
            }
        }
        if let Some(expected) = &e.latches {
            let got: Vec<String> =
                got.latches.iter().map(|(run, status)| latch_line(*run, status)).collect();
            if *expected != got {
                let mut diff = String::from("latches (- expected, + got):\n");
                for line in expected {
                    let _ = writeln!(diff, "  - {line}");
                }
                for line in &got {
                    let _ = writeln!(diff, "  + {line}");
                }
                mismatches.push(diff.trim_end().to_owned());
            }
        }
        mismatches
    }
}

fn bad(path: &str, message: impl Into<String>) -> InputError {
    InputError::Scenario { path: path.to_owned(), message: message.into() }
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, InputError> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| InputError::Io {
        path: shown.clone(),
        message: format!("cannot read it: {e}; check the path"),
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(bad(
            &shown,
            format!("{size} bytes is too large for a scenario; is this the right file?"),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse(&shown, &text)
}

/// Parses a scenario from its text (`path` names it in errors and the repro line).
pub fn parse(path: &str, text: &str) -> Result<Scenario, InputError> {
    let file: File = toml::from_str(text).map_err(|e| {
        bad(
            path,
            format!(
                "not a valid scenario: {}; fix the file (the format is in backend-sim's scenario module doc)",
                e.to_string().trim_end()
            ),
        )
    })?;
    let profile = ProfileName::parse(&file.profile).map_err(|e| bad(path, e.to_string()))?;
    let copies = file.copies.as_deref().map(|name| {
        [CopyPath::Sync, CopyPath::OnStream]
            .into_iter()
            .find(|c| copies_name(*c) == name)
            .ok_or_else(|| {
                let fix = "give \"sync\" or \"on-stream\"";
                bad(path, format!("copies = \"{name}\" is not a copy path; {fix}"))
            })
    });
    let header = file.header.as_deref().map(|name| {
        HeaderLayout::ALL.into_iter().find(|layout| layout.name() == name).ok_or_else(|| {
            let fix = "give \"tensormap_and_ringbuffer\" or \"host_build_graph\"";
            bad(path, format!("header = \"{name}\" is not a header layout; {fix}"))
        })
    });
    let (copies, header) = (copies.transpose()?, header.transpose()?);
    let w = &file.workload;
    if !w.device_us.is_finite() || w.device_us <= 0.0 {
        return Err(bad(
            path,
            format!(
                "workload.device_us = {} is not a positive time; give microseconds, e.g. 100.0",
                w.device_us
            ),
        ));
    }
    let workload = Workload {
        runs: w.runs,
        device_ns: us_to_ns(w.device_us),
        jitter_ppm: Workload::jitter_from_pct(w.jitter_pct)
            .map_err(|e| bad(path, e.to_string()))?,
        publish_after: Points { every: None, at: w.publish_after.clone() },
        diagnostics: Points { every: None, at: w.diagnostics.clone() },
        close_after: w.close_after,
    };
    let mut costs = Vec::new();
    for (name, us) in &file.costs {
        let cost = Cost::from_name(name).ok_or_else(|| {
            bad(path, format!("unknown cost '{name}' in [costs]; `lane-sim costs` lists the names"))
        })?;
        if !us.is_finite() || *us < 0.0 {
            return Err(bad(
                path,
                format!("cost {name} = {us} is not a time in us; give 0 or more"),
            ));
        }
        costs.push((cost, us_to_ns(*us)));
    }
    let mut faults = Vec::new();
    for (i, f) in file.fault.iter().enumerate() {
        faults.push(fault_rule(f).map_err(|e| bad(path, format!("[[fault]] #{}: {e}", i + 1)))?);
    }
    let config = SimConfig {
        profile,
        depth: file.depth,
        copies,
        header,
        seed: file.seed,
        workload,
        faults,
        swarm: false,
        costs,
        liveness: false,
        trace: false,
        origin: Origin::Scenario(path.to_owned()),
        ..SimConfig::default()
    };
    let lane_profile = config.lane_profile().map_err(|e| bad(path, e.to_string()))?;
    config.workload.validate(&lane_profile).map_err(|e| bad(path, e.to_string()))?;
    if let Some(lane) = &file.expect.lane {
        if lane != "closed" && lane != "lost" {
            return Err(bad(path, format!("expect.lane = '{lane}'; use \"closed\" or \"lost\"")));
        }
    }
    let backends = parse_backends(path, file.backends.as_deref(), file.backends_reason.as_ref())?;
    let expected_outcomes = file.expect.outcomes.as_ref().map(|lines| {
        lines
            .iter()
            .map(|l| ExpectedOutcome::parse(l).map_err(|e| bad(path, e)))
            .collect::<Result<Vec<_>, _>>()
    });
    let expected_outcomes = expected_outcomes.transpose()?;
    Ok(Scenario {
        path: path.to_owned(),
        name: file.name,
        rules: file.rules,
        description: file.description,
        config,
        backends,
        backends_reason: file.backends_reason,
        expect: file.expect,
        expected_outcomes,
    })
}

/// The `backends` key: known names, none twice, at least one, and a reason whenever one is
/// left out (a scenario that silently skips a backend would hide a divergence).
fn parse_backends(
    path: &str,
    names: Option<&[String]>,
    reason: Option<&String>,
) -> Result<Vec<BackendName>, InputError> {
    let Some(names) = names else {
        if reason.is_some() {
            return Err(bad(
                path,
                "backends_reason without backends; list the backends it runs on, or drop the reason",
            ));
        }
        return Ok(BackendName::ALL.to_vec());
    };
    let all: Vec<&str> = BackendName::ALL.iter().map(|b| b.name()).collect();
    let mut backends = Vec::new();
    for name in names {
        let backend = BackendName::parse(name).ok_or_else(|| {
            bad(path, format!("unknown backend '{name}' in backends; use {}", all.join(" or ")))
        })?;
        if backends.contains(&backend) {
            return Err(bad(path, format!("backend '{name}' is listed twice in backends")));
        }
        backends.push(backend);
    }
    if backends.is_empty() {
        return Err(bad(
            path,
            "backends = [] runs the scenario nowhere; list at least one backend or drop the key",
        ));
    }
    backends.sort();
    if backends.len() < BackendName::ALL.len() && reason.is_none_or(|r| r.trim().is_empty()) {
        return Err(bad(
            path,
            "backends leaves a backend out; say why in backends_reason (what it cannot express)",
        ));
    }
    Ok(backends)
}

fn fault_rule(f: &FaultSection) -> Result<FaultRule, String> {
    let kind = FaultKind::from_name(&f.kind).map_err(|e| e.to_string())?;
    let mut selectors = Vec::new();
    if let Some(runs) = &f.runs {
        selectors.push(When::Runs(runs.clone()));
    }
    if let Some(calls) = &f.calls {
        selectors.push(When::Calls(calls.clone()));
    }
    if let Some(rate) = f.rate {
        selectors.push(When::Rate(parse_rate(&rate.to_string()).map_err(|e| e.to_string())?));
    }
    if f.always == Some(true) {
        selectors.push(When::Always);
    }
    if selectors.len() > 1 {
        return Err(crate::faults::FaultError::TwoSelectors { kind: kind.name() }.to_string());
    }
    let when = selectors.pop().unwrap_or(When::Always);
    let code = f.code.as_ref().map(|c| match c {
        CodeValue::Number(n) => n.to_string(),
        CodeValue::Name(s) => s.clone(),
    });
    let rule = FaultRule::new(kind, code.as_deref(), when).map_err(|e| e.to_string())?;
    match &f.threads {
        None => Ok(rule),
        Some(threads) => rule.with_threads(threads.clone()).map_err(|e| e.to_string()),
    }
}

/// One expected outcome line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ExpectedOutcome {
    line: String,
    publication: bool,
    id: u64,
    verdict: String,
    origin: Option<u64>,
    rule: Option<String>,
    code: Option<String>,
}

impl ExpectedOutcome {
    fn parse(line: &str) -> Result<Self, String> {
        let fix = || {
            format!(
                "expect.outcomes entry '{line}' is not an outcome line; write e.g. \"run 2: ok\", \
                 \"run 3: failed (device-fault)\", \"run 4: poisoned by run 3\" or \"publication 5: uploaded\""
            )
        };
        let (head, tail) = line.split_once(':').ok_or_else(fix)?;
        let mut head_words = head.split_whitespace();
        let publication = match head_words.next() {
            Some("run") => false,
            Some("publication") => true,
            _ => return Err(fix()),
        };
        let id = head_words.next().and_then(|n| n.parse::<u64>().ok()).ok_or_else(fix)?;
        if head_words.next().is_some() {
            return Err(fix());
        }
        let (body, cause) = match tail.split_once('(') {
            Some((body, rest)) => (body, Some(rest.strip_suffix(')').ok_or_else(fix)?.trim())),
            None => (tail, None),
        };
        let mut words = body.split_whitespace();
        let verdict = words.next().ok_or_else(fix)?.to_owned();
        let allowed: &[&str] = if publication {
            &["uploaded", "cancelled", "failed", "poisoned"]
        } else {
            &["ok", "cancelled", "failed", "poisoned"]
        };
        if !allowed.contains(&verdict.as_str()) {
            return Err(format!("{}; the verdict must be one of {}", fix(), allowed.join(", ")));
        }
        let origin = match (words.next(), words.next(), words.next()) {
            (Some("by"), Some("run"), Some(n)) if verdict == "poisoned" => {
                Some(n.parse::<u64>().map_err(|_| fix())?)
            }
            (None, _, _) => None,
            _ => return Err(fix()),
        };
        if words.next().is_some() {
            return Err(fix());
        }
        let (rule, code) = match cause {
            None => (None, None),
            Some(c) => match c.split_once(':') {
                Some((r, code)) => (Some(r.trim().to_owned()), Some(code.trim().to_owned())),
                None => (Some(c.to_owned()), None),
            },
        };
        Ok(Self { line: line.trim().to_owned(), publication, id, verdict, origin, rule, code })
    }

    fn matches(&self, got: &GotOutcome) -> bool {
        self.publication == got.publication
            && self.id == got.id
            && self.verdict == got.verdict
            && self.origin.is_none_or(|o| got.origin == Some(o))
            && self.rule.as_ref().is_none_or(|r| got.rule.as_ref() == Some(r))
            && self.code.as_ref().is_none_or(|c| got.code.as_ref() == Some(c))
    }
}

/// An outcome in the scenario grammar.
#[derive(Clone, Debug)]
struct GotOutcome {
    publication: bool,
    id: u64,
    verdict: &'static str,
    origin: Option<u64>,
    rule: Option<String>,
    code: Option<String>,
}

impl GotOutcome {
    fn of(outcome: &Outcome) -> Self {
        let (publication, id, (verdict, cause, origin)) = match outcome {
            Outcome::Run(r) => (
                false,
                r.run.0,
                match r.verdict {
                    Verdict::Ok => ("ok", None, None),
                    Verdict::Cancelled => ("cancelled", None, None),
                    Verdict::Failed { cause } => ("failed", Some(cause), None),
                    Verdict::Poisoned { cause, origin } => {
                        ("poisoned", Some(cause), Some(origin.0))
                    }
                },
            ),
            Outcome::Publication(p) => (
                true,
                p.publication.0,
                match p.result {
                    PublicationResult::Uploaded => ("uploaded", None, None),
                    PublicationResult::Cancelled => ("cancelled", None, None),
                    PublicationResult::Failed { cause } => ("failed", Some(cause), None),
                    PublicationResult::Poisoned { cause, origin } => {
                        ("poisoned", Some(cause), Some(origin.0))
                    }
                },
            ),
        };
        Self {
            publication,
            id,
            verdict,
            origin,
            rule: cause.map(|c| c.classification.rule.name().to_owned()),
            code: cause.map(|c| c.name().to_owned()),
        }
    }

    fn line(&self) -> String {
        let mut line = format!(
            "{} {}: {}",
            if self.publication { "publication" } else { "run" },
            self.id,
            self.verdict
        );
        if let Some(origin) = self.origin {
            let _ = write!(line, " by run {origin}");
        }
        match (&self.rule, &self.code) {
            (Some(rule), Some(code)) => {
                let _ = write!(line, " ({rule}: {code})");
            }
            (Some(rule), None) => {
                let _ = write!(line, " ({rule})");
            }
            _ => {}
        }
        line
    }
}

/// The outcome lines of a report, in the scenario grammar (what `expect.outcomes` would
/// say to match exactly).
pub fn outcome_lines(report: &Report) -> Vec<String> {
    lines_of(&report.outcomes)
}

/// Outcomes as lines in the scenario grammar.
fn lines_of(outcomes: &[Outcome]) -> Vec<String> {
    outcomes.iter().map(|o| GotOutcome::of(o).line()).collect()
}

impl Observed {
    /// The outcome lines, in the scenario grammar (cause and code included), so two
    /// backends' runs compare line by line.
    pub fn outcome_lines(&self) -> Vec<String> {
        lines_of(&self.outcomes)
    }
}

/// Runs a scenario on the simulator and compares its report with the expectations.
pub fn check(scenario: Scenario) -> Result<Checked, SimError> {
    let report = run(&scenario.config, &mut |_, _| {})?;
    let mismatches = scenario.compare(&Observed::of(&report));
    Ok(Checked { scenario, report, mismatches })
}

/// A line diff of expected against got outcomes, `None` when they match.
fn diff_outcomes(expected: &[ExpectedOutcome], got: &[GotOutcome]) -> Option<String> {
    let all_match =
        expected.len() == got.len() && expected.iter().zip(got).all(|(e, g)| e.matches(g));
    if all_match {
        return None;
    }
    let mut out = String::from("outcomes (- expected, + got):\n");
    for i in 0..expected.len().max(got.len()) {
        match (expected.get(i), got.get(i)) {
            (Some(e), Some(g)) if e.matches(g) => {
                let _ = writeln!(out, "    {}", g.line());
            }
            (e, g) => {
                if let Some(e) = e {
                    let _ = writeln!(out, "  - {}", e.line);
                }
                if let Some(g) = g {
                    let _ = writeln!(out, "  + {}", g.line());
                }
            }
        }
    }
    Some(out.trim_end().to_owned())
}

/// A latched status header as a scenario's `latches` line: the run, then the header's latch
/// fields (the orchestrator's code, or the schedulers' code, first thread and bitmap).
pub fn latch_line(run: RunId, status: &Status) -> String {
    match (status.orch, status.sched) {
        (Some(orch), _) => format!("{run}: orch_error_code={}", orch.value()),
        (None, Some(sched)) => format!(
            "{run}: sched_error_code={} sched_error_thread={} sched_error_bitmap={:#x}",
            sched.value(),
            status.sched_thread,
            status.sched_bitmap
        ),
        (None, None) => format!("{run}: clean"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_names_its_header_layout_or_is_refused_with_the_two_names() {
        let file = |header: &str| format!("name = \"x\"\n{header}[workload]\nruns = 1\n");
        let default = parse("x.toml", &file("")).unwrap();
        assert_eq!(default.config.header, None);
        assert_eq!(
            default.config.lane_profile().unwrap().header(),
            HeaderLayout::TensormapAndRingbuffer
        );
        let hbg = parse("x.toml", &file("header = \"host_build_graph\"\n")).unwrap();
        assert_eq!(hbg.config.header, Some(HeaderLayout::HostBuildGraph));
        assert_eq!(hbg.config.lane_profile().unwrap().header(), HeaderLayout::HostBuildGraph);
        let err = parse("x.toml", &file("header = \"tmr\"\n")).unwrap_err().to_string();
        assert!(err.contains("\"tensormap_and_ringbuffer\" or \"host_build_graph\""), "{err}");
    }

    #[test]
    fn outcome_lines_parse_with_and_without_cause() {
        let e = ExpectedOutcome::parse("run 4: poisoned by run 3 (device-fault)").unwrap();
        assert_eq!((e.id, e.origin, e.rule.as_deref()), (4, Some(3), Some("device-fault")));
        let e = ExpectedOutcome::parse("run 2: failed (latched-change-and-rerun: SCOPE_DEADLOCK)")
            .unwrap();
        assert_eq!(e.code.as_deref(), Some("SCOPE_DEADLOCK"));
        assert!(ExpectedOutcome::parse("publication 3: uploaded").unwrap().publication);
    }

    #[test]
    fn malformed_outcome_lines_say_how_to_write_one() {
        for bad in ["2: ok", "run two: ok", "run 2: fine", "run 2 ok", "publication 3: ok"] {
            let err = ExpectedOutcome::parse(bad).unwrap_err();
            assert!(err.contains("write e.g. \"run 2: ok\""), "{bad}: {err}");
        }
    }
}
