//! Target `lane_sequences`: submits, publications, closes, reservations, time and backend
//! events in any order, legal or not, on a [`Lane`].
//!
//! The body plays a driver and a backend at once. After every command or event it drains
//! `poll_effect` (each effect joins the *outstanding* list, to be answered later, in any order,
//! by an operation that picks it by relative index) and `poll_outcome`, then checks. Runner
//! answers can so be held back and delivered late in any order, as host workers deliver
//! them ([`Op::PumpDevice`] answers everything else); the profile's prepare window lets
//! several runs prepare at once:
//!
//! - `check_invariants()`;
//! - every outcome is the next accepted item's, in submission order (L-2, L-14), with its own
//!   tag; an `Ok` verdict follows an accepted completion, clean status read and finalisation
//!   and carries that read's timing (L-17); a cancel follows a close; a poison names a run
//!   that failed with that cause;
//! - runs are asked to prepare, launch and be awaited in submission order; an upload waits
//!   for every earlier outcome (L-12); a run is finalised at most once, always when it may hold
//!   per-run resources and did not end in a device reset (L-7), and copies back only after a
//!   clean status read; every completed run's status is read (L-8);
//! - the lane accepts an event only if it answers an effect the lane asked for and that is
//!   still outstanding (a stale lease, an unknown run, a replayed answer to something already
//!   answered, a wrong recovery attempt must be rejected), and it accepts the right answer to
//!   every outstanding effect it asked for since the last poison;
//! - commands agree with what the body can see: a run is refused `Full` only when the lane
//!   holds as many runs and reservations as it has slots, a lease is accepted only if it is a
//!   live reservation, a duplicate tag names a run whose outcome is not delivered yet;
//! - a passed deadline, once `handle_timeout` is called, leaves no run awaited past it.
//!
//! After the last operation the backend answers every outstanding effect with success until
//! the lane asks for nothing more: every accepted run and publication must then have exactly
//! one outcome, and a `close` answered the same way must end `Closed`.
//!
//! `Lane::handle` returning an error for a bogus event is correct behaviour, not a finding.
//!
//! # Files
//!
//! This file holds the body's state and its dispatch of operations; the input types are in
//! `input`, and the body's sides apart for length: `commands` (to the lane), `replies`
//! (made-up backend answers), `checks` (what the lane asks for), `outcomes` (what it
//! delivers, and the final drain) and `explorer` (what the explorer reads).

use lane_core::status_latch::{Status, VerdictChannel};
use lane_core::{
    CodeRef, DeviceTiming, Effect, Event, FinaliseOrder, Generation, Lease, Outcome, Profile,
    ProfileSpec, PublicationId, Recovery, RunId, RunRequest, SlotId, Tag, Timestamp,
};
use lane_core::{Lane, MAX_SLOTS};

use crate::{Finding, Reached, decode, pick};

mod checks;
mod commands;
mod explorer;
mod input;
mod outcomes;
mod replies;

pub use input::{Forgery, Input, LeasePick, Op, ProfileInput, Reply};

/// The target's name.
pub const NAME: &str = "lane_sequences";

/// The host completion timeout of every fuzzed profile, short so time jumps pass it.
pub const COMPLETION_TIMEOUT_NS: u64 = 1_000_000;

/// The most effects the final drain answers before it calls the lane livelocked.
const FINAL_ANSWERS_MAX: usize = 2_000;

behaviours! {
    /// The behaviours a `lane_sequences` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    VerdictOk => "run ok",
    VerdictRunOnly => "run failed, run-only",
    VerdictOrigin => "run failed, poison origin",
    VerdictPoisoned => "run poisoned by another",
    VerdictCancelled => "run cancelled",
    PublicationUploaded => "publication uploaded",
    PublicationFailed => "publication failed",
    PublicationCancelled => "publication cancelled",
    PublicationPoisoned => "publication poisoned",
    TwoOnPair => "two runs on the pair at once",
    Reopened => "recovery confirmed, lane reopened",
    Lost => "recovery failed every attempt, lane lost",
    Closed => "closed",
    RefusedFull => "submit refused: full",
    RefusedStaleLease => "submit refused: stale lease",
    RefusedDuplicate => "submit refused: duplicate tag",
    RefusedPoisoned => "submit refused: suspect, recovering or lost",
    RefusedClosed => "submit refused: closed",
    ReservedUsed => "run submitted on a reserved lease",
    Released => "reservation released",
    DeadlineExpired => "completion deadline expired",
    Incompatible => "prepare incompatible",
    StreamFailure => "stream create or destroy failed",
    ForgeryRejected => "forged event rejected",
    ReplayAccepted => "replayed event answered an outstanding effect",
    Diagnostics => "diagnostics run ok",
    TwoPreparing => "two runs preparing at once (prepare window)",
    QuiesceAnswered => "runner work out at a poison answered while recovery quiesced",
    Suspected => "a fault notice made the device suspect",
    CoveredRead => "the records of runs a synchronize covered were read (L-8a)",
    HandedOver => "the device handed to the runtime's recovery (L-24)",
    ResetAdopted => "the runtime's reset adopted, lane reopened (L-24)",
    RefusedUnusable => "submit refused: unusable until the runtime's reset",
    PassedStaged => "a keyed run's outcome came before an earlier run's (L-2 by key)",
    HeldLaunched => "a held run launched after its activation",
    CancelledByCaller => "an unlaunched run cancelled by the caller",
    DeclinedRelaunched => "a declined queued launch launched again onto an empty pair",
    DeclinedAlone => "a declined launch with nothing ahead failed its run",
    FinaliseFirst => "a run launched once the run ahead was finalised (finalise before next launch)",
    RefusedEpoch => "submit refused: epoch",
    ControlRefused => "a cancel or an activate refused",
}

/// Builds an [`Input`] from raw bytes (as libFuzzer does) and runs [`run`]; bytes that
/// build no input reach nothing.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    decode::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}

/// Drives a lane through every operation, checking after each, then answers everything
/// and checks that every accepted item got exactly one outcome.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let mut body = Body::new(input.profile);
    for (step, op) in input.ops.iter().enumerate() {
        body.op(*op).map_err(|message| {
            Finding::new(NAME, Some(step), format!("{op:?}: {message}\n{}", body.describe()))
        })?;
    }
    body.finish()
        .map_err(|message| Finding::new(NAME, None, format!("{message}\n{}", body.describe())))?;
    Ok(body.reached)
}

/// Whether an event the body feeds must be accepted when it answers an outstanding effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A right answer: refusing it while its effect is outstanding is a finding.
    Right,
    /// Wrong on purpose (forged, replayed, a bad handle): refusing it is correct.
    Wrong,
}

/// An effect the lane asked for and the body has not answered yet.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    effect: Effect,
    /// The poison count when it was polled: a poison abandons everything asked before it.
    epoch: u32,
}

/// An accepted run or publication, in submission order.
#[derive(Clone, Copy, Debug)]
struct Accepted {
    seq: u64,
    /// `Some(tag)` for a run (the inner option is its tag), `None` for a publication.
    run: Option<Option<Tag>>,
    /// A run that collects diagnostics.
    diagnostics: bool,
    delivered: bool,
    /// The run's ordering key.
    key: Option<lane_core::OrderKey>,
    /// Submitted held, and not activated yet.
    held: bool,
    /// Submitted held (activated or not).
    was_held: bool,
    /// The epoch the request carried.
    epoch: Option<u64>,
    /// The caller cancelled it (`Ok`): a `Cancelled` outcome needs no close.
    cancel_asked: bool,
}

impl Accepted {
    /// Where the item stands in the lane's order.
    const fn order(&self) -> lane_core::ItemOrder {
        lane_core::ItemOrder { seq: self.seq, key: self.key }
    }
}

/// What the lane asked and accepted about one run: evidence its verdict is checked against.
#[derive(Clone, Copy, Debug, Default)]
struct Evidence {
    completed: bool,
    /// The timing of the accepted status read that leaves the run `Ok`: a clean header, or
    /// any header behind a published ok record.
    clean_status: Option<DeviceTiming>,
    finalised: bool,
    /// The last accepted prepare answer may have left per-run resources (`Prepared` or
    /// `PrepareFailed`; an incompatible prepare touched nothing).
    holds_resources: bool,
    status_asked: bool,
    finalise_asked: u32,
    prepare_asked: bool,
    /// The accepted completion carried the run's own published ok record (L-8: the only
    /// evidence that makes a run `Ok` on the record channel).
    published_ok: bool,
    /// The accepted completion, on the stream-synchronize channel, carried a clean device
    /// verdict (L-8: with a clean header, the only evidence that makes a run `Ok` there).
    synchronized_clean: bool,
    /// A launch was asked since the last accepted decline: the run is past a cancel.
    launch_asked: bool,
    /// Accepted `LaunchDeclined` answers.
    declines: u32,
    /// A finalise answer was accepted.
    finalise_answered: bool,
}

/// The body's driver-and-backend: the lane, what it asked for and what it answered. The
/// explorer ([`crate::explore`]) clones it to branch.
#[derive(Clone)]
pub(crate) struct Body {
    lane: Lane,
    now: Timestamp,
    layout_clean: Status,
    outstanding: Vec<Outstanding>,
    epoch: u32,
    poisons: Vec<lane_core::PoisonRecord>,
    accepted: Vec<Accepted>,
    outcomes: Vec<Outcome>,
    evidence: Vec<(RunId, Evidence)>,
    /// The last run asked to prepare, launch and be awaited: each comes in the lane's order.
    last_prepare: Option<lane_core::ItemOrder>,
    last_launch: Option<lane_core::ItemOrder>,
    last_await: Option<lane_core::ItemOrder>,
    /// Whether the lane's runs carry epochs (fixed by the first accepted run), and the last
    /// epoch accepted.
    runner_epochs: Option<bool>,
    last_epoch: u64,
    /// Every launch asked so far: the run each lease was launched for, and how many drains,
    /// resets and hand-overs to the runtime's recovery had been asked before it.
    launches: Vec<(RunId, Lease, u32)>,
    /// Drains, resets and hand-overs asked so far.
    drains: u32,
    /// Runs answered `Launched` whose completion has not come back, in launch order, since
    /// the last drain or reset (either leaves nothing in flight): their boundaries may still
    /// be ahead of a later launch, which must wait on the latest of them (L-5); a hand-over
    /// to the runtime's recovery leaves nothing in flight either (the runtime resets).
    on_pair: Vec<RunId>,
    uploaded: Vec<PublicationId>,
    /// Publications whose upload was asked.
    upload_asked: Vec<u64>,
    reserved: Vec<Lease>,
    former_leases: Vec<Lease>,
    history: Vec<Event>,
    /// Events the lane accepted so far (`history` keeps the first 64).
    events_accepted: usize,
    next_handle: u64,
    closed: bool,
    was_recovering: bool,
    /// Whether a fault notice was acted on (its cause may then fail unlaunched items).
    noticed: bool,
    /// The device is the runtime's to reset (L-24): `OnPoison` was asked, no reset adopted.
    handed_over: bool,
    /// `AdoptReset` was asked since the last `device_reset`.
    adopt_asked: bool,
    reached: Reached,
}

impl Body {
    fn new(profile: ProfileInput) -> Self {
        let slots = 1 + profile.slots % MAX_SLOTS;
        let spec = ProfileSpec {
            name: "fuzz",
            slots,
            launch_depth: if profile.finalise_first { 1 } else { 1 + profile.depth % slots },
            concurrent_prepare: profile.concurrent_prepare,
            prepare_window: 1 + profile.window % slots,
            copies: lane_core::CopyPath::Sync,
            verdict: VerdictChannel::Record,
            header: if profile.host_build_graph {
                lane_core::status_latch::HeaderLayout::HostBuildGraph
            } else {
                lane_core::status_latch::HeaderLayout::TensormapAndRingbuffer
            },
            completion_timeout_ns: COMPLETION_TIMEOUT_NS,
            device_op_timeout_ns: COMPLETION_TIMEOUT_NS / 2,
            drain_timeout_ns: 1_000,
            recovery_attempts: 1 + profile.attempts % 3,
            recovery: if profile.runtime_recovery { Recovery::Runtime } else { Recovery::InPlace },
            finalise: if profile.finalise_first {
                FinaliseOrder::BeforeNextLaunch
            } else {
                FinaliseOrder::Overlapped
            },
        };
        let profile = match Profile::custom(spec) {
            Ok(profile) => profile,
            // Every field is brought into range above.
            Err(e) => unreachable!("fuzz profile refused: {e}"),
        };
        Self::with_profile(profile)
    }

    /// A body driving a fresh lane with `profile`.
    pub(crate) fn with_profile(profile: Profile) -> Self {
        Self {
            lane: Lane::new(profile),
            now: Timestamp(0),
            layout_clean: Status::clean(profile.header()),
            outstanding: Vec::new(),
            epoch: 0,
            poisons: Vec::new(),
            accepted: Vec::new(),
            outcomes: Vec::new(),
            evidence: Vec::new(),
            last_prepare: None,
            last_launch: None,
            runner_epochs: None,
            last_epoch: 0,
            launches: Vec::new(),
            drains: 0,
            on_pair: Vec::new(),
            last_await: None,
            uploaded: Vec::new(),
            upload_asked: Vec::new(),
            reserved: Vec::new(),
            former_leases: Vec::new(),
            history: Vec::new(),
            events_accepted: 0,
            next_handle: 0x100,
            closed: false,
            was_recovering: false,
            noticed: false,
            handed_over: false,
            adopt_asked: false,
            reached: Reached::default(),
        }
    }

    fn reach(&mut self, b: B) {
        self.reached.insert(b.bit());
    }

    /// The state a reader of a finding needs.
    pub(crate) fn describe(&self) -> String {
        let outstanding: Vec<String> =
            self.outstanding.iter().map(|o| format!("{:?}@{}", o.effect, o.epoch)).collect();
        format!(
            "  lane: {:?}, {} items pending, pair: {}, deadline {:?}, now {}\n  outstanding (epoch {}): {outstanding:?}\n  accepted: {:?}",
            self.lane.state(),
            self.lane.pending_items(),
            self.lane.pair(),
            self.lane.poll_deadline(),
            self.now,
            self.epoch,
            self.accepted.iter().map(|a| (a.seq, a.delivered)).collect::<Vec<_>>(),
        )
    }

    pub(crate) fn op(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Submit { tag, diagnostics, lease } => {
                let request = RunRequest {
                    tag: tag.map(|t| Tag(u64::from(t % 4))),
                    diagnostics,
                    lease: self.lease(lease),
                    ..RunRequest::new()
                };
                self.submit(request)
            }
            Op::SubmitWith { key, held, epoch } => {
                let request = RunRequest {
                    key: key.map(|k| lane_core::OrderKey(u64::from(k % 4))),
                    held,
                    epoch: epoch.map(|e| epoch_of(self.last_epoch, e)),
                    ..RunRequest::new()
                };
                self.submit(request)
            }
            Op::Activate(index) => self.activate(index),
            Op::Cancel(index) => self.cancel(index),
            Op::Publish(code) => self.publish(CodeRef(u64::from(code))),
            Op::Close => {
                let report = self.lane.close(self.now);
                if report.poison != self.lane.poison() {
                    return Err(format!("close reported {:?}", report.poison));
                }
                self.closed = true;
                self.drop_reservations();
                self.after_call()
            }
            Op::Reserve => self.reserve(),
            Op::Release(pick_lease) => {
                let Some(lease) = self.lease(pick_lease) else {
                    return Ok(());
                };
                let live = self.reserved.iter().position(|l| *l == lease);
                match (self.lane.release(lease), live) {
                    (Ok(()), Some(at)) => {
                        self.reserved.remove(at);
                        self.former_leases.push(lease);
                        self.reach(B::Released);
                    }
                    (Ok(()), None) => return Err(format!("released {lease}, not a reservation")),
                    (Err(e), Some(_)) => {
                        return Err(format!("refused to release live reservation {lease}: {e}"));
                    }
                    (Err(_), None) => {}
                }
                self.after_call()
            }
            Op::Answer { effect, reply } => {
                let current = self.answerable();
                let Some(&at) = pick_ref(&current, effect) else {
                    return Ok(());
                };
                let effect = self.outstanding[at].effect;
                let (event, kind) = self.reply(effect, reply);
                self.feed(event, kind)
            }
            Op::Pump => self.pump(|effect| !matches!(effect, Effect::AwaitCompletion { .. })),
            Op::PumpDevice => self.pump(|effect| {
                !matches!(effect, Effect::AwaitCompletion { .. }) && !is_runner_work(effect)
            }),
            Op::Forge(forgery) => self.forge(forgery),
            Op::Tick(us) => {
                self.now = self.now.after_ns(u64::from(us) * 1_000);
                Ok(())
            }
            Op::Notice(n) => self.notice(n),
            Op::DeviceReset => self.device_reset(),
            Op::Timeout => self.timeout(),
            Op::Expire => {
                if let Some(deadline) = self.lane.poll_deadline() {
                    self.now = self.now.max(deadline);
                }
                self.timeout()
            }
        }
    }

    /// Indices of the outstanding effects asked for since the last poison.
    pub(crate) fn current(&self) -> Vec<usize> {
        (0..self.outstanding.len()).filter(|&at| self.outstanding[at].epoch == self.epoch).collect()
    }

    /// Indices of the outstanding effects the lane must accept an answer to: those asked
    /// for since the last poison, and runner work asked for before it (still out on its
    /// worker, so the lane waits for its answer before it drains, L-18).
    pub(crate) fn answerable(&self) -> Vec<usize> {
        (0..self.outstanding.len())
            .filter(|&at| {
                let o = &self.outstanding[at];
                o.epoch == self.epoch || is_runner_work(&o.effect)
            })
            .collect()
    }

    /// Answers with success, up to 64 times, the first answerable effect `wanted` picks.
    fn pump(&mut self, wanted: impl Fn(&Effect) -> bool) -> Result<(), String> {
        for _ in 0..64 {
            let Some(at) =
                self.answerable().into_iter().find(|&at| wanted(&self.outstanding[at].effect))
            else {
                break;
            };
            let effect = self.outstanding[at].effect;
            let (event, kind) = self.reply(effect, Reply::Success);
            self.feed(event, kind)?;
        }
        Ok(())
    }

    fn lease(&self, pick_lease: LeasePick) -> Option<Lease> {
        match pick_lease {
            LeasePick::None => None,
            LeasePick::Reserved(i) => pick(&self.reserved, i),
            LeasePick::Former(i) => pick(&self.former_leases, i),
            LeasePick::Forged { slot, generation } => Some(Lease {
                slot: SlotId(slot % (MAX_SLOTS + 1)),
                generation: generation_of(u64::from(generation)),
            }),
        }
    }

    fn undelivered(&self, runs: bool) -> usize {
        self.accepted.iter().filter(|a| !a.delivered && a.run.is_some() == runs).count()
    }
}

/// Whether `effect` is runner work (a prepare or a finalise), which a poison cannot stop:
/// the lane waits for its answer (L-18).
const fn is_runner_work(effect: &Effect) -> bool {
    matches!(effect, Effect::PrepareRun { .. } | Effect::FinaliseRun { .. })
}

/// Whether a poison with this origin and cause was seen.
fn recorded(poisons: &[lane_core::PoisonRecord], cause: lane_core::Cause, origin: RunId) -> bool {
    poisons.iter().any(|p| p.origin == origin && p.cause == cause)
}

/// `index % len` into a list of indices.
fn pick_ref(items: &[usize], i: u8) -> Option<&usize> {
    match items.len() {
        0 => None,
        len => items.get(usize::from(i) % len),
    }
}

/// The epoch a [`Op::SubmitWith`] asks for, from the last one accepted: 0 (`e % 4 == 0`),
/// the last again (`1`: a repeat), one below it (`2`), or above it by `e / 4 + 1` (`3`).
const fn epoch_of(last: u64, e: u8) -> u64 {
    match e % 4 {
        0 => 0,
        1 => last,
        2 => last.saturating_sub(1),
        _ => last + e as u64 / 4 + 1,
    }
}

/// A generation from any number (0 becomes 1: generations are never zero).
fn generation_of(n: u64) -> Generation {
    Generation(core::num::NonZeroU64::new(n).unwrap_or(core::num::NonZeroU64::MIN))
}
