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

use arbitrary::Arbitrary;
use lane_core::status_latch::{
    AclCode, Boundary, Class, CoveredRead, DeviceVerdict, Evidence as Waited, Record, RecordDefect,
    RecordRead, RecordSource, RuntimeCode, Status, VerdictChannel,
};
use lane_core::stream_pair::{Role, StreamHandle, StreamState};
use lane_core::{
    CodeRef, ControlError, DeviceTiming, Effect, Event, FinaliseFailure, FinaliseOrder, Generation,
    ItemOrder, LaneState, LaunchStep, Lease, Outcome, Peers, Profile, ProfileSpec, PublicationId,
    PublicationResult, Recovery, RecoveryHook, RunId, RunRequest, SlotId, SubmitError, Tag,
    Timestamp, Verdict,
};
use lane_core::{Lane, MAX_SLOTS, PublishError};

use crate::{Finding, Reached, decode, pick};

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

/// A `lane_sequences` input: the profile and the operations.
///
/// From raw bytes: the profile first, then every byte belongs to an operation.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The lane's profile.
    pub profile: ProfileInput,
    /// The operations, in order.
    #[arbitrary(with = crate::dense)]
    pub ops: Vec<Op>,
}

/// The fuzzed profile, always valid: slots `1 + slots % MAX_SLOTS`, launch depth
/// `1 + depth % slots`, recovery attempts `1 + attempts % 3`, prepare window
/// `1 + window % slots`, completion timeout [`COMPLETION_TIMEOUT_NS`].
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileInput {
    /// Pipeline slots.
    pub slots: u8,
    /// Launch depth.
    pub depth: u8,
    /// Whether a successor may be prepared while its predecessor runs.
    pub concurrent_prepare: bool,
    /// `host_build_graph` instead of `tensormap_and_ringbuffer`.
    pub host_build_graph: bool,
    /// Recovery attempts.
    pub attempts: u8,
    /// Prepare window: `1 + window % slots` runs may prepare at once (L-18).
    pub window: u8,
    /// The runtime owns recovery (L-24), instead of the lane in place.
    pub runtime_recovery: bool,
    /// A run's finalise returns before its successor's launch (`FinaliseOrder::
    /// BeforeNextLaunch`, at launch depth one).
    pub finalise_first: bool,
}

/// One command, event or time step.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `submit`.
    Submit {
        /// The caller tag, `Tag(t % 4)`: few values, so duplicates happen.
        tag: Option<u8>,
        /// Whether the run collects diagnostics.
        diagnostics: bool,
        /// Which lease the request carries.
        lease: LeasePick,
    },
    /// `publish(CodeRef(code))`.
    Publish(u8),
    /// `close`.
    Close,
    /// `reserve`.
    Reserve,
    /// `release` of the chosen lease.
    Release(LeasePick),
    /// Answers the outstanding effect at `effect % outstanding`.
    Answer {
        /// Relative index into the outstanding effects.
        effect: u8,
        /// How to answer.
        reply: Reply,
    },
    /// A healthy backend for a moment: answers every outstanding effect but the completion
    /// awaits with success, until only awaits are left.
    Pump,
    /// Feeds an event that answers nothing outstanding (or answers it a second time).
    Forge(Forgery),
    /// The clock moves `n` microseconds.
    Tick(u16),
    /// `handle_timeout(now)`: a spurious call unless a deadline passed.
    Timeout,
    /// The clock jumps to the deadline, then `handle_timeout`.
    Expire,
    /// The lane thread alone for a moment, as with host workers: answers every outstanding
    /// effect but the completion awaits and the runner work (`PrepareRun`, `FinaliseRun`),
    /// which stays out to be answered later, in any order, by [`Op::Answer`].
    PumpDevice,
    /// A device fault notice the backend matched to the lane (L-19), on stream id `n`, with
    /// one of a few codes (`n % 3`: an AICore exception, an AICPU exception, a code that names
    /// no device fault).
    Notice(u8),
    /// `device_reset`: the runtime reports its reset (L-24); refused unless the lane awaits it.
    DeviceReset,
    /// `submit` with the run controls: an ordering key (`key % 4`), a hold, an epoch.
    SubmitWith {
        /// The ordering key, `OrderKey(k % 4)`: few values, so equal keys happen.
        key: Option<u8>,
        /// Submitted held: launched only after [`Op::Activate`].
        held: bool,
        /// The epoch, relative to the last one accepted (`epoch_of`).
        epoch: Option<u8>,
    },
    /// `activate` of the pending run at `index % pending runs` (a delivered one when `index`
    /// is past them).
    Activate(u8),
    /// `cancel` of the pending item at `index % pending items` (a run, or a publication with
    /// `cancel_publication`; a delivered one when `index` is past them).
    Cancel(u8),
}

/// Which lease a command carries.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeasePick {
    /// None: the lane picks a slot.
    None,
    /// A live reservation, at `index % reserved` (none if there is no reservation).
    Reserved(u8),
    /// A lease that was live once (used, released, or dropped by a close or a reset), at
    /// `index % former`.
    Former(u8),
    /// `Lease { slot, generation }` made up.
    Forged {
        /// The slot.
        slot: u8,
        /// The generation (0 becomes 1).
        generation: u8,
    },
}

/// How an effect is answered.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The success event.
    Success,
    /// The failure event, with the ACL code at `code % 26` (the 26th is unnamed) and, for a
    /// launch, the step at `step % 4`.
    Failure {
        /// The code index.
        code: u8,
        /// The launch step index.
        step: u8,
    },
    /// The other answer where there is one: a prepare is incompatible, a completion carries
    /// evidence other than its channel's success (on the record channel, `code % 6`: an error
    /// record with the runtime code at `code / 6`, never published with a clean device
    /// verdict, never published with the device code at `code / 6`, a failed record read
    /// with a clean device verdict, a malformed record (the defect at `code / 6`) with a
    /// clean device verdict, never published with no device verdict made; on the
    /// stream-synchronize channel, `code % 2`: the device code at `code / 2`, no device
    /// verdict made), a status read latches the runtime code at `code % 17` (the 17th is
    /// unknown), a finalisation fails validation, a create reports the other stream's
    /// handle, a destroy names a wrong handle.
    Other {
        /// The code index.
        code: u8,
    },
    /// A launch is declined by the runner (`LaunchDeclined`); any other effect is answered
    /// with success.
    Decline,
}

/// An event made up to be refused (or, for a replay, to answer something a second time).
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forgery {
    /// An event the lane accepted before, at `index % accepted events`.
    Replay(u8),
    /// The success answer to the outstanding run effect at `index % run effects`, with the
    /// lease's generation moved by one.
    StaleLease(u8),
    /// A success event for a run that is not live: a delivered one or one never accepted.
    UnknownRun(u8),
    /// A recovery event for an attempt or step the lane is not at.
    WrongAttempt(u8),
    /// `Uploaded` for a publication that is not uploading.
    UnknownPublication(u8),
}

/// Builds an [`Input`] from raw bytes (as libFuzzer does) and runs [`run`]; bytes that
/// build no input reach nothing.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    match decode::<Input>(data) {
        Some(input) => run(&input),
        None => Ok(Reached::default()),
    }
}

/// Drives a lane through every operation, checking after each, then answers everything
/// and checks that every accepted item got exactly one outcome.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let mut body = Body::new(input.profile);
    for (step, op) in input.ops.iter().enumerate() {
        body.op(*op).map_err(|message| {
            Finding::new(
                NAME,
                Some(step),
                format!("{op:?}: {message}\n{}", body.describe()),
            )
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
        lane_core::ItemOrder {
            seq: self.seq,
            key: self.key,
        }
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
            launch_depth: if profile.finalise_first {
                1
            } else {
                1 + profile.depth % slots
            },
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
            recovery: if profile.runtime_recovery {
                Recovery::Runtime
            } else {
                Recovery::InPlace
            },
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
        let outstanding: Vec<String> = self
            .outstanding
            .iter()
            .map(|o| format!("{:?}@{}", o.effect, o.epoch))
            .collect();
        format!(
            "  lane: {:?}, {} items pending, pair: {}, deadline {:?}, now {}\n  outstanding (epoch {}): {outstanding:?}\n  accepted: {:?}",
            self.lane.state(),
            self.lane.pending_items(),
            self.lane.pair(),
            self.lane.poll_deadline(),
            self.now,
            self.epoch,
            self.accepted
                .iter()
                .map(|a| (a.seq, a.delivered))
                .collect::<Vec<_>>(),
        )
    }

    pub(crate) fn op(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Submit {
                tag,
                diagnostics,
                lease,
            } => {
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
        (0..self.outstanding.len())
            .filter(|&at| self.outstanding[at].epoch == self.epoch)
            .collect()
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
            let Some(at) = self
                .answerable()
                .into_iter()
                .find(|&at| wanted(&self.outstanding[at].effect))
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
        self.accepted
            .iter()
            .filter(|a| !a.delivered && a.run.is_some() == runs)
            .count()
    }

    fn submit(&mut self, request: RunRequest) -> Result<(), String> {
        let state = self.lane.state();
        let slots = usize::from(self.lane.profile().slots());
        let held = self.undelivered(true) + self.reserved.len();
        let reservation = request
            .lease
            .and_then(|lease| self.reserved.iter().position(|l| *l == lease));
        let tag_holder = request.tag.and_then(|tag| {
            self.accepted
                .iter()
                .find(|a| !a.delivered && a.run == Some(Some(tag)))
                .map(|a| a.seq)
        });
        // The epoch rule (L-8): non-zero, above the last accepted, never mixed.
        let epoch_refused = self
            .runner_epochs
            .is_some_and(|carried| carried != request.epoch.is_some())
            || request
                .epoch
                .is_some_and(|e| e == 0 || e <= self.last_epoch);
        let result = self.lane.submit(self.now, request);
        match result {
            Ok(run) => {
                if state != LaneState::Open {
                    return Err(format!("accepted {run} in state {state:?}"));
                }
                if epoch_refused {
                    return Err(format!("accepted {run} with epoch {:?}", request.epoch));
                }
                self.runner_epochs = Some(request.epoch.is_some());
                if let Some(epoch) = request.epoch {
                    self.last_epoch = epoch;
                }
                if let Some(lease) = request.lease {
                    let Some(at) = reservation else {
                        return Err(format!("accepted {run} on {lease}, not a live reservation"));
                    };
                    self.reserved.remove(at);
                    self.former_leases.push(lease);
                    self.reach(B::ReservedUsed);
                } else if held >= slots {
                    return Err(format!(
                        "accepted {run} holding {held} runs and reservations on {slots} slots"
                    ));
                }
                self.accept(run.0, Some(request.tag), request.diagnostics)?;
                if let Some(accepted) = self.accepted.last_mut() {
                    accepted.key = request.key;
                    accepted.held = request.held;
                    accepted.was_held = request.held;
                    accepted.epoch = request.epoch;
                }
            }
            Err(error) => {
                let consistent = match error {
                    SubmitError::Full { .. } => {
                        self.reach(B::RefusedFull);
                        request.lease.is_none() && held >= slots
                    }
                    SubmitError::Closed => {
                        self.reach(B::RefusedClosed);
                        self.closed
                            || matches!(
                                state,
                                LaneState::ReleasingStreams { .. } | LaneState::Closed { .. }
                            )
                    }
                    SubmitError::Poisoned { .. } | SubmitError::Lost { .. } => {
                        self.reach(B::RefusedPoisoned);
                        matches!(state, LaneState::Recovering { .. } | LaneState::Lost)
                    }
                    SubmitError::Suspect { notice } => {
                        self.reach(B::RefusedPoisoned);
                        self.lane.notice() == Some(notice)
                            && matches!(
                                state,
                                LaneState::Suspect { .. } | LaneState::Recovering { .. }
                            )
                    }
                    SubmitError::LostAfterNotice { notice } => {
                        self.reach(B::RefusedPoisoned);
                        self.lane.notice() == Some(notice) && state == LaneState::Lost
                    }
                    SubmitError::Unusable { origin, .. } => {
                        self.reach(B::RefusedUnusable);
                        state == LaneState::Unusable
                            && self.lane.poison().map(|p| p.origin) == Some(origin)
                    }
                    SubmitError::UnusableAfterNotice { notice } => {
                        self.reach(B::RefusedUnusable);
                        state == LaneState::Unusable && self.lane.notice() == Some(notice)
                    }
                    SubmitError::StaleLease { lease } => {
                        self.reach(B::RefusedStaleLease);
                        request.lease == Some(lease) && reservation.is_none()
                    }
                    SubmitError::Epoch { epoch, .. } => {
                        self.reach(B::RefusedEpoch);
                        epoch_refused && epoch == request.epoch.unwrap_or(0)
                    }
                    SubmitError::DuplicateRun { tag, run } => {
                        self.reach(B::RefusedDuplicate);
                        request.tag == Some(tag)
                            && self
                                .accepted
                                .iter()
                                .any(|a| a.seq == run.0 && !a.delivered && a.run == Some(Some(tag)))
                    }
                };
                if !consistent {
                    return Err(format!("submit refused with {error:?} ({error})"));
                }
                let fits = match request.lease {
                    None => held < slots,
                    Some(_) => reservation.is_some(),
                };
                if state == LaneState::Open
                    && !self.closed
                    && fits
                    && tag_holder.is_none()
                    && !epoch_refused
                {
                    return Err(format!(
                        "an open lane with room refused {request:?}: {error:?}"
                    ));
                }
            }
        }
        self.after_call()
    }

    fn publish(&mut self, code: CodeRef) -> Result<(), String> {
        let state = self.lane.state();
        match self.lane.publish(self.now, code) {
            Ok(publication) => {
                if state != LaneState::Open {
                    return Err(format!("accepted {publication} in state {state:?}"));
                }
                self.accept(publication.0, None, false)?;
            }
            Err(PublishError::Full) if self.undelivered(false) >= 2 => {}
            Err(PublishError::Closed) if state != LaneState::Open => {}
            Err(PublishError::Poisoned { .. } | PublishError::Lost { .. })
                if matches!(state, LaneState::Recovering { .. } | LaneState::Lost) => {}
            Err(PublishError::Suspect { .. })
                if matches!(
                    state,
                    LaneState::Suspect { .. } | LaneState::Recovering { .. }
                ) => {}
            Err(PublishError::LostAfterNotice { .. }) if state == LaneState::Lost => {}
            Err(PublishError::Unusable { .. } | PublishError::UnusableAfterNotice { .. })
                if state == LaneState::Unusable => {}
            Err(error) => return Err(format!("publish refused with {error:?} in state {state:?}")),
        }
        self.after_call()
    }

    /// A matched fault notice: an open or closing lane becomes suspect; any other ignores it.
    fn notice(&mut self, n: u8) -> Result<(), String> {
        let state = self.lane.state();
        let raw = [507_015, 507_018, 107_000][usize::from(n % 3)];
        let notice = lane_core::FaultNotice {
            device: 0,
            stream_id: u32::from(n),
            code: AclCode::from_raw(raw).unwrap_or(AclCode::Unknown(raw)),
        };
        let acted = self.lane.fault_notice(self.now, notice);
        let expected = matches!(state, LaneState::Open | LaneState::Closing);
        if acted != expected {
            return Err(format!("a fault notice in state {state:?} acted: {acted}"));
        }
        if acted {
            self.noticed = true;
            self.reach(B::Suspected);
        }
        self.after_call()
    }

    /// The runtime's report of its reset (L-24): accepted exactly when the lane awaits it,
    /// which then reopens (and asks the backend to forget every handle).
    fn device_reset(&mut self) -> Result<(), String> {
        let state = self.lane.state();
        let result = self.lane.device_reset(self.now);
        match (result, state) {
            (Ok(()), LaneState::Unusable) => {
                if self.lane.state() != LaneState::Open {
                    return Err(format!("reopened into {:?}", self.lane.state()));
                }
                self.reach(B::ResetAdopted);
            }
            (Ok(()), other) => return Err(format!("a reset report was accepted in {other:?}")),
            (Err(_), LaneState::Unusable) => {
                return Err("the reset report the lane awaits was refused".to_owned());
            }
            (Err(_), _) => return self.after_call(),
        }
        // The adopted reset is asked in this call, while the lane still counts as handed over.
        self.after_call()?;
        if !self.adopt_asked {
            return Err("the runtime's reset was adopted without AdoptReset".to_owned());
        }
        self.handed_over = false;
        self.adopt_asked = false;
        Ok(())
    }

    fn accept(
        &mut self,
        seq: u64,
        run: Option<Option<Tag>>,
        diagnostics: bool,
    ) -> Result<(), String> {
        if let Some(last) = self.accepted.last() {
            if seq <= last.seq {
                return Err(format!("minted id {seq} after {}", last.seq));
            }
        }
        self.accepted.push(Accepted {
            seq,
            run,
            diagnostics,
            delivered: false,
            key: None,
            held: false,
            was_held: false,
            epoch: None,
            cancel_asked: false,
        });
        Ok(())
    }

    /// Where `run` stands in the lane's order.
    fn order_of(&self, run: RunId) -> ItemOrder {
        ItemOrder {
            seq: run.0,
            key: self.accepted_item(run.0).and_then(|a| a.key),
        }
    }

    /// The accepted item with sequence number `seq`.
    fn accepted_item(&self, seq: u64) -> Option<&Accepted> {
        self.accepted.iter().find(|a| a.seq == seq)
    }

    /// An accepted item for a control, runs only with `runs`: with the top bit of `index`
    /// clear a pending one (`index % pending`), set a delivered one; either way the other
    /// when there is none.
    fn pick_item(&self, index: u8, runs: bool) -> Option<Accepted> {
        let of = |delivered: bool| -> Vec<Accepted> {
            self.accepted
                .iter()
                .filter(|a| a.delivered == delivered && (!runs || a.run.is_some()))
                .copied()
                .collect()
        };
        let (first, second) = if index & 0x80 == 0 {
            (of(false), of(true))
        } else {
            (of(true), of(false))
        };
        pick(&first, index & 0x7F).or_else(|| pick(&second, index & 0x7F))
    }

    /// `activate` (a run control): accepted exactly for a held run not activated yet whose
    /// verdict is not decided; a run with its outcome delivered is unknown.
    fn activate(&mut self, index: u8) -> Result<(), String> {
        let Some(item) = self.pick_item(index, true) else {
            return Ok(());
        };
        let run = RunId(item.seq);
        match self.lane.activate(self.now, run) {
            Ok(()) => {
                if item.delivered || !item.held {
                    return Err(format!("activated {run}, which is not held ({item:?})"));
                }
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == item.seq) {
                    a.held = false;
                }
            }
            Err(error) => {
                self.reach(B::ControlRefused);
                let consistent = match error {
                    ControlError::Unknown { item: i } => i == item.seq && item.delivered,
                    ControlError::NotHeld { run: r } => r == run && !item.held && !item.delivered,
                    // Its verdict is decided: the body sees it only once delivered.
                    ControlError::Finished { item: i, .. } => i == item.seq && !item.delivered,
                    ControlError::Launched { .. } | ControlError::Uploading { .. } => false,
                };
                if !consistent {
                    return Err(format!("activate of {run} refused: {error} ({item:?})"));
                }
            }
        }
        self.after_call()
    }

    /// `cancel` of a run or `cancel_publication` (a run control): a run is cancelled only
    /// before its launch was asked, refused as launched only after; a publication is refused
    /// only once its upload was asked.
    fn cancel(&mut self, index: u8) -> Result<(), String> {
        let Some(item) = self.pick_item(index, false) else {
            return Ok(());
        };
        let launched = self
            .evidence
            .iter()
            .any(|(r, e)| r.0 == item.seq && e.launch_asked);
        let uploading = self.outstanding.iter().any(|o| {
            matches!(o.effect, Effect::UploadCode { publication, .. } if publication.0 == item.seq)
        });
        let result = if item.run.is_some() {
            self.lane.cancel(self.now, RunId(item.seq))
        } else {
            self.lane
                .cancel_publication(self.now, PublicationId(item.seq))
        };
        match result {
            Ok(()) => {
                if item.delivered || launched || uploading {
                    return Err(format!("cancelled {}, past its start ({item:?})", item.seq));
                }
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == item.seq) {
                    a.cancel_asked = true;
                }
            }
            Err(error) => {
                self.reach(B::ControlRefused);
                let consistent = match error {
                    ControlError::Unknown { item: i } => i == item.seq && item.delivered,
                    ControlError::Launched { run } => run.0 == item.seq && launched,
                    ControlError::Uploading { publication } => {
                        publication.0 == item.seq && self.uploaded_or_uploading(item.seq)
                    }
                    // Its outcome is decided (a failed prepare, finalising, taken down): not
                    // delivered yet.
                    ControlError::Finished { item: i, .. } => i == item.seq && !item.delivered,
                    ControlError::NotHeld { .. } => false,
                };
                if !consistent {
                    return Err(format!(
                        "cancel of {} refused: {error} ({item:?})",
                        item.seq
                    ));
                }
            }
        }
        self.after_call()
    }

    /// Whether the upload of publication `seq` was asked (answered or not).
    fn uploaded_or_uploading(&self, seq: u64) -> bool {
        self.upload_asked.contains(&seq)
    }

    fn reserve(&mut self) -> Result<(), String> {
        let slots = usize::from(self.lane.profile().slots());
        let held = self.undelivered(true) + self.reserved.len();
        let state = self.lane.state();
        match self.lane.reserve(self.now) {
            Ok(lease) => {
                if held >= slots || state != LaneState::Open {
                    return Err(format!(
                        "reserved {lease} holding {held} of {slots} slots in state {state:?}"
                    ));
                }
                if usize::from(lease.slot.0) >= slots
                    || self.reserved.iter().any(|l| l.slot == lease.slot)
                {
                    return Err(format!("reserved {lease}, a slot that is not free"));
                }
                self.reserved.push(lease);
            }
            Err(SubmitError::Full { .. }) if held >= slots => {}
            Err(_) if state != LaneState::Open => {}
            Err(error) => return Err(format!("reserve refused with {error:?}")),
        }
        self.after_call()
    }

    fn drop_reservations(&mut self) {
        self.former_leases.append(&mut self.reserved);
    }

    fn timeout(&mut self) -> Result<(), String> {
        if self.lane.poll_deadline().is_some_and(|d| d <= self.now) {
            self.reach(B::DeadlineExpired);
        }
        self.lane.handle_timeout(self.now);
        self.after_call()?;
        if let Some(deadline) = self.lane.poll_deadline() {
            if deadline <= self.now {
                return Err(format!(
                    "handle_timeout({}) left a run awaited past its deadline {deadline}",
                    self.now
                ));
            }
        }
        Ok(())
    }

    /// The answer to `effect`, and whether it is a right one.
    fn reply(&mut self, effect: Effect, reply: Reply) -> (Event, Kind) {
        let code = |i: u8| acl_code(i);
        match (effect, reply) {
            (Effect::LaunchRun { run, lease, .. }, Reply::Decline) => {
                (Event::LaunchDeclined { run, lease }, Kind::Right)
            }
            // Only a launch has a decline: anything else succeeds.
            (effect, Reply::Decline) => self.reply(effect, Reply::Success),
            (Effect::PrepareRun { run, lease, .. }, Reply::Success) => {
                (Event::Prepared { run, lease }, Kind::Right)
            }
            (Effect::PrepareRun { run, lease, .. }, Reply::Failure { code: c, .. }) => (
                Event::PrepareFailed {
                    run,
                    lease,
                    code: code(c).into(),
                },
                Kind::Right,
            ),
            (Effect::PrepareRun { run, lease, .. }, Reply::Other { .. }) => {
                (Event::PrepareIncompatible { run, lease }, Kind::Right)
            }
            (Effect::CreateStream { role }, Reply::Failure { code: c, .. }) => (
                Event::StreamCreateFailed {
                    role,
                    code: code(c),
                },
                Kind::Right,
            ),
            (Effect::CreateStream { role }, Reply::Other { .. }) => {
                let other = match role {
                    Role::Aicpu => Role::Aicore,
                    Role::Aicore => Role::Aicpu,
                };
                match self.lane.pair().stream(other).state {
                    StreamState::Live(handle) | StreamState::Destroying(handle) => {
                        (Event::StreamCreated { role, handle }, Kind::Wrong)
                    }
                    StreamState::Absent | StreamState::Creating => self.created(role),
                }
            }
            (Effect::CreateStream { role }, Reply::Success) => self.created(role),
            (Effect::DestroyStream { role, handle, .. }, Reply::Success) => {
                (Event::StreamDestroyed { role, handle }, Kind::Right)
            }
            (Effect::DestroyStream { role, handle, .. }, Reply::Failure { code: c, .. }) => (
                Event::StreamDestroyFailed {
                    role,
                    handle,
                    code: code(c),
                },
                Kind::Right,
            ),
            (Effect::DestroyStream { role, handle, .. }, Reply::Other { .. }) => (
                Event::StreamDestroyed {
                    role,
                    handle: StreamHandle(handle.0.wrapping_add(1)),
                },
                Kind::Wrong,
            ),
            (Effect::LaunchRun { run, lease, .. }, Reply::Success) => {
                (Event::Launched { run, lease }, Kind::Right)
            }
            (Effect::LaunchRun { run, lease, .. }, Reply::Failure { code: c, step }) => (
                Event::LaunchFailed {
                    run,
                    lease,
                    step: launch_step(step),
                    code: code(c).into(),
                },
                Kind::Right,
            ),
            // A launch has no third answer: the step is taken from the code index.
            (Effect::LaunchRun { run, lease, .. }, Reply::Other { code: c }) => (
                Event::LaunchFailed {
                    run,
                    lease,
                    step: launch_step(c),
                    code: code(c).into(),
                },
                Kind::Right,
            ),
            (Effect::AwaitCompletion { run, lease, .. }, Reply::Failure { code: c, .. }) => (
                Event::CompletionFailed {
                    run,
                    lease,
                    code: code(c),
                },
                Kind::Right,
            ),
            (
                Effect::AwaitCompletion {
                    run,
                    lease,
                    channel,
                    ..
                },
                Reply::Other { code: c },
            ) => (
                Event::Completed {
                    run,
                    lease,
                    evidence: completion_evidence(channel, c),
                },
                Kind::Right,
            ),
            (
                Effect::AwaitCompletion {
                    run,
                    lease,
                    channel,
                    ..
                },
                _,
            ) => (
                Event::Completed {
                    run,
                    lease,
                    // The channel's success: the run's own ok record, or (a runtime without
                    // records) a clean device verdict.
                    evidence: match channel {
                        VerdictChannel::Record => Waited::PUBLISHED_OK,
                        VerdictChannel::StreamSync => Waited::SYNCHRONIZED_CLEAN,
                    },
                },
                Kind::Right,
            ),
            // Every covered run's own ok record; or the first one's record is an error
            // (`code` even) or was never published (odd), every other one ok.
            (Effect::ReadRecords { run, lease, behind }, reply) => {
                let first = match reply {
                    Reply::Other { code: c } if c % 2 == 0 => RecordRead::Read(Record::Error {
                        code: RuntimeCode::ScopeDeadlock,
                        source: RecordSource::Header,
                        payload_len: 0,
                    }),
                    Reply::Other { code: c } => RecordRead::Read(Record::NeverPublished {
                        stamp: u64::from(c),
                    }),
                    Reply::Failure { code: c, .. } => RecordRead::Failed(code(c)),
                    Reply::Success | Reply::Decline => RecordRead::Read(Record::Ok),
                };
                let records = behind
                    .iter()
                    .enumerate()
                    .map(|(at, (covered, _))| CoveredRead {
                        run: covered.0,
                        record: if at == 0 {
                            first
                        } else {
                            RecordRead::Read(Record::Ok)
                        },
                    })
                    .collect();
                (
                    Event::RecordsRead {
                        run,
                        lease,
                        records,
                    },
                    Kind::Right,
                )
            }
            (Effect::ReadStatus { run, lease, .. }, Reply::Success) => {
                (self.status_read(run, lease, None), Kind::Right)
            }
            (Effect::ReadStatus { run, lease, .. }, Reply::Failure { code: c, .. }) => (
                Event::StatusReadFailed {
                    run,
                    lease,
                    code: code(c),
                },
                Kind::Right,
            ),
            (Effect::ReadStatus { run, lease, .. }, Reply::Other { code: c }) => {
                (self.status_read(run, lease, Some(c)), Kind::Right)
            }
            (Effect::FinaliseRun { run, lease, .. }, Reply::Success) => {
                (Event::Finalised { run, lease }, Kind::Right)
            }
            (Effect::FinaliseRun { run, lease, .. }, Reply::Failure { code: c, .. }) => (
                Event::FinaliseFailed {
                    run,
                    lease,
                    failure: FinaliseFailure::Acl(code(c)),
                },
                Kind::Right,
            ),
            (Effect::FinaliseRun { run, lease, .. }, Reply::Other { .. }) => (
                Event::FinaliseFailed {
                    run,
                    lease,
                    failure: FinaliseFailure::Validation,
                },
                Kind::Right,
            ),
            (Effect::UploadCode { publication, .. }, Reply::Failure { code: c, .. }) => (
                Event::UploadFailed {
                    publication,
                    code: code(c).into(),
                },
                Kind::Right,
            ),
            (Effect::UploadCode { publication, .. }, _) => {
                (Event::Uploaded { publication }, Kind::Right)
            }
            (Effect::DrainDevice { attempt, .. }, _) => {
                (Event::DeviceDrained { attempt }, Kind::Right)
            }
            (Effect::ForceReset { attempt }, Reply::Failure { code: c, .. }) => (
                Event::ResetFailed {
                    attempt,
                    code: code(c),
                },
                Kind::Right,
            ),
            (Effect::ForceReset { attempt }, _) => (Event::ResetDone { attempt }, Kind::Right),
            (Effect::Probe { attempt }, Reply::Failure { code: c, .. }) => (
                Event::ProbeFailed {
                    attempt,
                    code: code(c),
                },
                Kind::Right,
            ),
            (Effect::Probe { attempt }, _) => (Event::ProbePassed { attempt }, Kind::Right),
            // Never outstanding (nothing answers them): an event that answers nothing.
            (Effect::Hook(_) | Effect::AdoptReset, _) => {
                (Event::DeviceDrained { attempt: u8::MAX }, Kind::Wrong)
            }
        }
    }

    fn created(&mut self, role: Role) -> (Event, Kind) {
        self.next_handle += 1;
        (
            Event::StreamCreated {
                role,
                handle: StreamHandle(self.next_handle),
            },
            Kind::Right,
        )
    }

    fn status_read(&self, run: RunId, lease: Lease, latch: Option<u8>) -> Event {
        let mut status = self.layout_clean;
        if let Some(i) = latch {
            let at = usize::from(i) % (RuntimeCode::ALL.len() + 1);
            let code = RuntimeCode::ALL
                .get(at)
                .copied()
                .unwrap_or(RuntimeCode::Unknown(4242));
            if i % 2 == 0 {
                status.orch = Some(code);
            } else {
                status.sched = Some(code);
            }
        }
        Event::StatusRead {
            run,
            lease,
            status,
            timing: DeviceTiming {
                start_ns: run.0 * 1_000,
                end_ns: run.0 * 1_000 + 500,
                ..Default::default()
            },
        }
    }

    fn forge(&mut self, forgery: Forgery) -> Result<(), String> {
        let event = match forgery {
            Forgery::Replay(i) => match pick(&self.history, i) {
                Some(event) => event,
                None => return Ok(()),
            },
            Forgery::StaleLease(i) => {
                let runs: Vec<Effect> = self
                    .current()
                    .into_iter()
                    .map(|at| self.outstanding[at].effect)
                    .filter(|e| e.run().is_some())
                    .collect();
                let Some(effect) = pick(&runs, i) else {
                    return Ok(());
                };
                let (event, _) = self.reply(effect, Reply::Success);
                with_lease(event, |lease| Lease {
                    slot: lease.slot,
                    generation: generation_of(lease.generation.get().wrapping_add(1)),
                })
            }
            Forgery::UnknownRun(i) => {
                let delivered: Vec<u64> = self
                    .accepted
                    .iter()
                    .filter(|a| a.delivered)
                    .map(|a| a.seq)
                    .collect();
                let run = match pick(&delivered, i) {
                    Some(seq) if i % 2 == 0 => RunId(seq),
                    _ => RunId(self.accepted.last().map_or(1, |a| a.seq) + 1 + u64::from(i)),
                };
                let lease = pick(&self.former_leases, i).unwrap_or(Lease {
                    slot: SlotId(0),
                    generation: generation_of(1),
                });
                match i % 5 {
                    0 => Event::Prepared { run, lease },
                    1 => Event::Launched { run, lease },
                    2 => Event::Completed {
                        run,
                        lease,
                        evidence: Waited::PUBLISHED_OK,
                    },
                    3 => self.status_read(run, lease, None),
                    _ => Event::Finalised { run, lease },
                }
            }
            Forgery::WrongAttempt(i) => {
                let attempt = match self.lane.state() {
                    LaneState::Recovering { attempt, .. } => attempt.wrapping_add(1 + i % 3),
                    _ => 1 + i % 3,
                };
                match i % 3 {
                    0 => Event::DeviceDrained { attempt },
                    1 => Event::ResetDone { attempt },
                    _ => Event::ProbePassed { attempt },
                }
            }
            Forgery::UnknownPublication(i) => {
                let uploading: Vec<u64> = self
                    .current()
                    .into_iter()
                    .filter_map(|at| match self.outstanding[at].effect {
                        Effect::UploadCode { publication, .. } => Some(publication.0),
                        _ => None,
                    })
                    .collect();
                let seq = pick(&self.accepted, i).map_or(u64::from(i), |a| a.seq);
                if uploading.contains(&seq) {
                    return Ok(());
                }
                Event::Uploaded {
                    publication: PublicationId(seq),
                }
            }
        };
        let rejected_before = self.lane.rejected_events();
        self.feed(event, Kind::Wrong)?;
        if self.lane.rejected_events() > rejected_before {
            self.reach(B::ForgeryRejected);
        } else if matches!(forgery, Forgery::Replay(_)) {
            self.reach(B::ReplayAccepted);
        }
        Ok(())
    }

    /// Feeds one event and checks the lane accepted exactly what it should.
    fn feed(&mut self, event: Event, kind: Kind) -> Result<(), String> {
        let answers = self
            .answerable()
            .into_iter()
            .find(|&at| answers(&self.outstanding[at].effect, &event));
        let result = self.lane.handle(self.now, event);
        match (&result, answers) {
            (Ok(()), Some(at)) => {
                if self.outstanding.remove(at).epoch != self.epoch {
                    self.reach(B::QuiesceAnswered);
                }
                self.record(event);
            }
            (Ok(()), None) => {
                return Err(format!(
                    "accepted {event:?}, which answers no outstanding effect"
                ));
            }
            (Err(error), Some(_)) if kind == Kind::Right => {
                return Err(format!(
                    "refused {event:?}, the right answer to an effect it asked for: {error}"
                ));
            }
            (Err(_), _) => {}
        }
        self.after_call()
    }

    /// Remembers an accepted event: for replays, and as evidence for verdicts.
    fn record(&mut self, event: Event) {
        self.events_accepted += 1;
        if self.history.len() < 64 {
            self.history.push(event);
        }
        match event {
            Event::PrepareIncompatible { .. } => self.reach(B::Incompatible),
            Event::StreamCreateFailed { .. } | Event::StreamDestroyFailed { .. } => {
                self.reach(B::StreamFailure);
            }
            Event::Uploaded { publication } => self.uploaded.push(publication),
            // A launch made before a drain or reset is not in flight after it.
            Event::Launched { run, .. }
                if self
                    .launches
                    .iter()
                    .rev()
                    .find(|(r, _, _)| *r == run)
                    .is_some_and(|(_, _, drains)| *drains == self.drains) =>
            {
                self.on_pair.push(run);
            }
            Event::Completed { run, .. } | Event::CompletionFailed { run, .. } => {
                self.on_pair.retain(|r| *r != run);
            }
            Event::RecordsRead { .. } => self.reach(B::CoveredRead),
            _ => {}
        }
        let Some(run) = event.run() else {
            return;
        };
        let evidence = self.evidence_mut(run);
        match event {
            Event::Prepared { .. } | Event::PrepareFailed { .. } => evidence.holds_resources = true,
            Event::PrepareIncompatible { .. } => evidence.holds_resources = false,
            Event::Completed {
                evidence: waited, ..
            } => {
                evidence.completed = true;
                evidence.published_ok = waited.channel == VerdictChannel::Record
                    && waited.record == RecordRead::Read(Record::Ok);
                evidence.synchronized_clean = waited.channel == VerdictChannel::StreamSync
                    && waited.device == Some(DeviceVerdict::Clean);
            }
            // A header latch does not fail a run whose own record was published ok: the
            // record decides it (L-8's first rows), so its status read counts as clean.
            Event::StatusRead { status, timing, .. }
                if status.latched().is_none() || evidence.published_ok =>
            {
                evidence.clean_status = Some(timing);
            }
            Event::Finalised { .. } => {
                evidence.finalised = true;
                evidence.finalise_answered = true;
            }
            Event::FinaliseFailed { .. } => evidence.finalise_answered = true,
            Event::LaunchDeclined { .. } => {
                evidence.declines += 1;
                evidence.launch_asked = false;
            }
            _ => {}
        }
    }

    /// L-5 for a launch's `after`: the predecessors it names, newest first, are launches of
    /// earlier runs (never its own, or a successor's), and with a launched run still in
    /// flight the newest named is that run or a later one launched before it (the executor
    /// waits on the newest whose boundary it recorded). With none in flight it may name none.
    fn check_after(&self, run: RunId, after: Peers<Lease>) -> Result<(), String> {
        // Where each named lease's last launch stands among the launches asked: launches are
        // in the lane's order, so a predecessor's launch comes first (by key a predecessor may
        // carry a larger id than its successor, L-2).
        let mut named: Vec<(usize, RunId)> = Vec::new();
        for lease in after.iter() {
            let Some((at, &(r, _, _))) = self
                .launches
                .iter()
                .enumerate()
                .rev()
                .find(|(_, (_, l, _))| *l == lease)
            else {
                return Err(format!(
                    "{run}'s launch waits on {lease}, a lease no launch was asked for"
                ));
            };
            if r == run {
                return Err(format!("{run}'s launch waits on its own boundary"));
            }
            if named.last().is_some_and(|(newer, _)| *newer <= at) {
                return Err(format!(
                    "{run}'s predecessors {after:?} are not newest first"
                ));
            }
            named.push((at, r));
        }
        let launched_at = |r: RunId| {
            self.launches
                .iter()
                .rposition(|(launched, _, _)| *launched == r)
        };
        match (self.on_pair.last(), named.first()) {
            (Some(latest), None) => Err(format!(
                "{run}'s launch waits on no boundary while {latest} is still in flight"
            )),
            (Some(latest), Some((newest_at, newest)))
                if launched_at(*latest).is_some_and(|latest_at| *newest_at < latest_at) =>
            {
                Err(format!(
                    "{run}'s launch waits on {newest}'s boundary, behind which {latest} is still in flight"
                ))
            }
            _ => Ok(()),
        }
    }

    fn evidence_mut(&mut self, run: RunId) -> &mut Evidence {
        let at = match self.evidence.iter().position(|(r, _)| *r == run) {
            Some(at) => at,
            None => {
                self.evidence.push((run, Evidence::default()));
                self.evidence.len() - 1
            }
        };
        &mut self.evidence[at].1
    }

    /// One effect as it is polled: runs are prepared, launched and awaited in submission
    /// order (L-2), an upload waits for every earlier outcome (L-12), a run is finalised at
    /// most once and copies back only after a clean status read (L-7, L-8).
    fn asked(&mut self, effect: Effect) -> Result<(), String> {
        self.check_recovery_effect(effect)?;
        if matches!(
            effect,
            Effect::DrainDevice { .. }
                | Effect::ForceReset { .. }
                | Effect::Hook(RecoveryHook::OnPoison { .. })
        ) {
            // Nothing launched before it is in flight after it (effects run in order).
            self.drains += 1;
            self.on_pair.clear();
        }
        // Each comes in the lane's order (L-2): submission order, but for a keyed run placed
        // ahead of keyed runs with a greater key; `again`: the same run may come twice.
        let in_order = |last: &mut Option<ItemOrder>, this: ItemOrder, again: bool| {
            let ok = last.is_none_or(|l| l.may_precede(this) || (again && l.seq == this.seq));
            *last = Some(this);
            ok
        };
        let ordered = match effect {
            Effect::PrepareRun { run, .. } => {
                // Prepares start in the lane's order; a run answered incompatible prepares
                // again later, possibly after a successor started (prepare window > 1).
                let order = self.order_of(run);
                let evidence = self.evidence_mut(run);
                let again = evidence.prepare_asked;
                evidence.prepare_asked = true;
                again || in_order(&mut self.last_prepare, order, false)
            }
            Effect::LaunchRun {
                run,
                lease,
                aicpu,
                aicore,
                after,
                epoch,
            } => {
                if aicpu == aicore {
                    return Err(format!("{effect:?} launches both kernels on one stream"));
                }
                self.check_launch(run, after, epoch)?;
                self.check_after(run, after)?;
                self.launches.push((run, lease, self.drains));
                let order = self.order_of(run);
                let evidence = self.evidence_mut(run);
                // A declined launch goes again (and only onto an empty pair).
                let again = evidence.declines > 0;
                evidence.launch_asked = true;
                in_order(&mut self.last_launch, order, again)
            }
            Effect::AwaitCompletion { run, .. } => {
                let order = self.order_of(run);
                in_order(&mut self.last_await, order, false)
            }
            Effect::ReadStatus { run, .. } => {
                self.evidence_mut(run).status_asked = true;
                true
            }
            Effect::FinaliseRun { run, copy_back, .. } => {
                let evidence = self.evidence_mut(run);
                evidence.finalise_asked += 1;
                if evidence.finalise_asked > 1 {
                    return Err(format!("{run} asked to finalise twice"));
                }
                if copy_back && evidence.clean_status.is_none() {
                    return Err(format!(
                        "{run} asked to copy back without a clean status read"
                    ));
                }
                true
            }
            Effect::UploadCode { publication, .. } => {
                self.upload_asked.push(publication.0);
                if let Some(earlier) = self
                    .accepted
                    .iter()
                    .find(|a| a.seq < publication.0 && !a.delivered)
                {
                    return Err(format!(
                        "{publication} uploads before item {} has its outcome",
                        earlier.seq
                    ));
                }
                true
            }
            _ => true,
        };
        if ordered {
            Ok(())
        } else {
            Err(format!("{effect:?} is out of the lane's order"))
        }
    }

    /// The run controls at a launch: a held run is never launched before its activation,
    /// a declined one only onto an empty pair, the request's epoch is the launch's, and with
    /// `FinaliseOrder::BeforeNextLaunch` every other run launched since the last drain has
    /// its finalise answered.
    fn check_launch(
        &mut self,
        run: RunId,
        after: Peers<Lease>,
        epoch: Option<u64>,
    ) -> Result<(), String> {
        let Some(item) = self.accepted_item(run.0).copied() else {
            return Err(format!("{run} launched, never accepted"));
        };
        if item.held {
            return Err(format!("{run} launched while held"));
        }
        if item.was_held {
            self.reach(B::HeldLaunched);
        }
        if epoch != item.epoch {
            return Err(format!(
                "{run} launched with epoch {epoch:?}, its request's {:?}",
                item.epoch
            ));
        }
        let evidence = *self.evidence_mut(run);
        if evidence.declines > 0 {
            if !after.is_empty() {
                return Err(format!(
                    "{run}'s launch was declined, yet it launches behind {after:?}"
                ));
            }
            self.reach(B::DeclinedRelaunched);
        }
        if self.lane.profile().finalise_order() == FinaliseOrder::BeforeNextLaunch {
            let drains = self.drains;
            let unfinished = self.launches.iter().find(|(r, _, d)| {
                *d == drains
                    && *r != run
                    && self
                        .evidence
                        .iter()
                        .any(|(e_run, e)| e_run == r && e.launch_asked && !e.finalise_answered)
            });
            if let Some((r, _, _)) = unfinished {
                return Err(format!(
                    "{run} launched before {r}'s finalise returned (finalise before next launch)"
                ));
            }
            if self
                .evidence
                .iter()
                .any(|(r, e)| *r != run && e.finalise_answered && e.launch_asked)
            {
                self.reach(B::FinaliseFirst);
            }
        }
        Ok(())
    }

    /// L-24: the runner hears of a recovery as the setting says, and once handed over the
    /// lane asks nothing of the device until the runtime's reset is adopted.
    fn check_recovery_effect(&mut self, effect: Effect) -> Result<(), String> {
        let runtime = self.lane.profile().recovery() == Recovery::Runtime;
        if self.handed_over && !matches!(effect, Effect::AdoptReset) {
            return Err(format!("{effect:?} asked after the device was handed over"));
        }
        match effect {
            Effect::Hook(RecoveryHook::OnPoison { .. }) => {
                if !runtime {
                    return Err("OnPoison with in-place recovery".to_owned());
                }
                // L-24 with L-18: no runner work of the lane is out when the runtime may reset.
                if let Some(at) = self
                    .answerable()
                    .into_iter()
                    .find(|&at| is_runner_work(&self.outstanding[at].effect))
                {
                    return Err(format!(
                        "handed over with {:?} still out",
                        self.outstanding[at].effect
                    ));
                }
                self.handed_over = true;
                self.reach(B::HandedOver);
            }
            Effect::Hook(RecoveryHook::BeforeReset { .. } | RecoveryHook::AfterReset { .. })
            | Effect::DrainDevice { .. }
            | Effect::ForceReset { .. }
            | Effect::Probe { .. }
                if runtime =>
            {
                return Err(format!("{effect:?} with the runtime's recovery"));
            }
            Effect::AdoptReset => {
                if !self.handed_over {
                    return Err("AdoptReset without a hand-over".to_owned());
                }
                self.adopt_asked = true;
            }
            _ => {}
        }
        Ok(())
    }

    /// After every lane call: invariants, poison bookkeeping, then drain effects and
    /// outcomes, checking each.
    fn after_call(&mut self) -> Result<(), String> {
        if let Err(violation) = self.lane.check_invariants() {
            return Err(violation.to_string());
        }
        let mut taken_down = false;
        if let Some(poison) = self.lane.poison() {
            if self.poisons.last() != Some(&poison) {
                self.poisons.push(poison);
                taken_down = true;
            }
        }
        // A recovery entered without a new poison was entered from a fault notice (L-19):
        // it takes the unlaunched items down just the same. With the runtime's recovery
        // (L-24) the lane may pass through it within the call: its hand-over says so.
        let recovering = matches!(
            self.lane.state(),
            LaneState::Recovering { .. } | LaneState::Unusable
        );
        taken_down |= recovering && !self.was_recovering;
        // The driver's order: effects, then outcomes (checked below, in that order).
        let mut effects = Vec::new();
        while let Some(effect) = self.lane.poll_effect() {
            effects.push(effect);
        }
        taken_down |= effects
            .iter()
            .any(|e| matches!(e, Effect::Hook(RecoveryHook::OnPoison { .. })))
            && !self.was_recovering;
        if taken_down {
            // Everything asked for before is abandoned with the device.
            self.epoch += 1;
            self.drop_reservations();
        }
        match self.lane.state() {
            LaneState::Recovering { .. } | LaneState::Unusable => self.was_recovering = true,
            LaneState::Open if self.was_recovering => {
                self.was_recovering = false;
                self.reach(B::Reopened);
            }
            LaneState::Lost => self.reach(B::Lost),
            LaneState::Closed { .. } => self.reach(B::Closed),
            _ => {}
        }
        if self.lane.pair().submissions().len() >= 2 {
            self.reach(B::TwoOnPair);
        }
        let preparing = self
            .current()
            .into_iter()
            .filter(|&at| matches!(self.outstanding[at].effect, Effect::PrepareRun { .. }))
            .count();
        if preparing >= 2 {
            self.reach(B::TwoPreparing);
        }
        // Effects are checked after the outcomes of the same call are in, since an upload
        // may follow an outcome delivered with it.
        while let Some(outcome) = self.lane.poll_outcome() {
            self.delivered(outcome)?;
        }
        for effect in effects {
            self.asked(effect)?;
            // A hook and an adopted reset ask nothing back.
            if matches!(effect, Effect::Hook(_) | Effect::AdoptReset) {
                continue;
            }
            self.outstanding.push(Outstanding {
                effect,
                epoch: self.epoch,
            });
        }
        if let Some(deadline) = self.lane.poll_deadline() {
            let awaited = self.current().into_iter().any(|at| {
                matches!(self.outstanding[at].effect, Effect::AwaitCompletion { deadline: d, .. } if d == deadline)
            });
            if !awaited {
                return Err(format!(
                    "deadline {deadline} with no outstanding completion await"
                ));
            }
        }
        Ok(())
    }

    /// One outcome: an accepted item's without one, ahead of every other such item in the
    /// lane's order (L-2: submission order, but for a keyed run placed ahead of keyed runs
    /// with a greater key), consistent with what happened.
    fn delivered(&mut self, outcome: Outcome) -> Result<(), String> {
        let Some(at) = self
            .accepted
            .iter()
            .position(|a| !a.delivered && a.seq == outcome.seq())
        else {
            return Err(format!(
                "{outcome} delivered, but it is no accepted item without its outcome"
            ));
        };
        let order = ItemOrder {
            seq: outcome.seq(),
            key: self.accepted[at].key,
        };
        if outcome.order() != order {
            return Err(format!(
                "{outcome} carries {:?}, not {order:?}",
                outcome.order()
            ));
        }
        if let Some(behind) = self
            .accepted
            .iter()
            .find(|a| !a.delivered && a.seq != order.seq && !order.may_precede(a.order()))
        {
            return Err(format!(
                "{outcome} delivered while item {} stands ahead of it in the lane's order",
                behind.seq
            ));
        }
        if self
            .accepted
            .iter()
            .any(|a| !a.delivered && a.seq < order.seq)
        {
            self.reach(B::PassedStaged);
        }
        self.accepted[at].delivered = true;
        let item = self.accepted[at];
        match outcome {
            // L-26: the outcome frees the run's state, so no callback for it is still out.
            Outcome::Run(r)
                if self
                    .outstanding
                    .iter()
                    .any(|o| is_runner_work(&o.effect) && o.effect.run() == Some(r.run)) =>
            {
                return Err(format!(
                    "{} delivered while its prepare or finalise is still out",
                    r.run
                ));
            }
            Outcome::Run(r) => {
                if item.run != Some(r.tag) {
                    return Err(format!("{} delivered with tag {:?}", r.run, r.tag));
                }
                let evidence = *self.evidence_mut(r.run);
                if r.declines != evidence.declines {
                    return Err(format!(
                        "{} counts {} declined launches, {} were accepted",
                        r.run, r.declines, evidence.declines
                    ));
                }
                let poison_path = match r.verdict {
                    Verdict::Poisoned { .. } => true,
                    Verdict::Failed { cause } => cause.class() == Class::Poison,
                    Verdict::Ok | Verdict::Cancelled => false,
                };
                // L-7: every run that may hold per-run resources is finalised, on every
                // terminal path but a device reset.
                if !poison_path && evidence.holds_resources && evidence.finalise_asked != 1 {
                    return Err(format!(
                        "{} ended {} but was asked to finalise {} times",
                        r.run,
                        r.verdict.name(),
                        evidence.finalise_asked
                    ));
                }
                // L-8: every completed run's status is read before its verdict.
                if !poison_path && evidence.completed && !evidence.status_asked {
                    return Err(format!("{} completed but its status was never read", r.run));
                }
                match r.verdict {
                    Verdict::Ok => {
                        let timing = evidence.clean_status;
                        if !(evidence.completed && timing.is_some() && evidence.finalised) {
                            return Err(format!("{} is Ok with evidence {evidence:?}", r.run));
                        }
                        // L-8: no run is Ok without its own published ok record (or, on the
                        // stream-synchronize channel, a clean device verdict).
                        if !(evidence.published_ok || evidence.synchronized_clean) {
                            return Err(format!(
                                "{} is Ok without a published ok record ({evidence:?})",
                                r.run
                            ));
                        }
                        // L-17: the verdict carries the run's own timing.
                        if r.timing != timing {
                            return Err(format!(
                                "{} carries timing {:?}, its status read {timing:?}",
                                r.run, r.timing
                            ));
                        }
                        self.reach(B::VerdictOk);
                        if item.diagnostics {
                            self.reach(B::Diagnostics);
                        }
                    }
                    Verdict::Failed { cause } => {
                        if cause == lane_core::run::declined_alone() && evidence.declines > 0 {
                            self.reach(B::DeclinedAlone);
                        }
                        if cause.class() == Class::Poison {
                            let by_notice = self.noticed
                                && cause.stage()
                                    == Some(lane_core::status_latch::Stage::FaultNotice);
                            if !by_notice && !recorded(&self.poisons, cause, r.run) {
                                return Err(format!(
                                    "{} failed with a poison no one recorded",
                                    r.run
                                ));
                            }
                            self.reach(B::VerdictOrigin);
                        } else {
                            self.reach(B::VerdictRunOnly);
                        }
                    }
                    Verdict::Poisoned { cause, origin } => {
                        if !recorded(&self.poisons, cause, origin) {
                            return Err(format!("{} poisoned by unrecorded {origin}", r.run));
                        }
                        self.reach(B::VerdictPoisoned);
                    }
                    Verdict::Cancelled => {
                        if !self.closed && !item.cancel_asked {
                            return Err(format!(
                                "{} cancelled but neither close nor its cancel was called",
                                r.run
                            ));
                        }
                        if item.cancel_asked && !self.closed {
                            self.reach(B::CancelledByCaller);
                        }
                        self.reach(B::VerdictCancelled);
                    }
                }
            }
            Outcome::Publication(p) => {
                if item.run.is_some() {
                    return Err(format!("{} delivered for a run", p.publication));
                }
                match p.result {
                    PublicationResult::Uploaded => {
                        if !self.uploaded.contains(&p.publication) {
                            return Err(format!("{} uploaded without Uploaded", p.publication));
                        }
                        self.reach(B::PublicationUploaded);
                    }
                    PublicationResult::Failed { .. } => self.reach(B::PublicationFailed),
                    PublicationResult::Cancelled => {
                        if !self.closed && !item.cancel_asked {
                            return Err(format!("{} cancelled without close", p.publication));
                        }
                        self.reach(B::PublicationCancelled);
                    }
                    PublicationResult::Poisoned { cause, origin } => {
                        if !recorded(&self.poisons, cause, origin) {
                            return Err(format!(
                                "{} poisoned by unrecorded {origin}",
                                p.publication
                            ));
                        }
                        self.reach(B::PublicationPoisoned);
                    }
                }
            }
        }
        self.outcomes.push(outcome);
        Ok(())
    }

    /// The backend answers every outstanding effect with success until the lane asks for
    /// nothing more; then every accepted item must have its outcome. Then a close, answered
    /// the same way, must end `Closed`.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        self.answer_everything()?;
        if self.lane.pending_items() > 0 {
            return Err(format!(
                "stuck: {} items pending with no effect to answer",
                self.lane.pending_items()
            ));
        }
        if let Some(missing) = self.accepted.iter().find(|a| !a.delivered) {
            return Err(format!("item {} never got an outcome", missing.seq));
        }
        let _ = self.lane.close(self.now);
        self.closed = true;
        self.drop_reservations();
        self.after_call()?;
        self.answer_everything()?;
        if !self.lane.state().is_closed() {
            return Err(format!(
                "close, answered in full, left the lane {:?}",
                self.lane.state()
            ));
        }
        Ok(())
    }

    fn answer_everything(&mut self) -> Result<(), String> {
        for _ in 0..FINAL_ANSWERS_MAX {
            let epoch = self.epoch;
            self.outstanding
                .retain(|o| o.epoch == epoch || is_runner_work(&o.effect));
            let Some(first) = self.outstanding.first() else {
                // The caller activates what it holds: a held run launches only then.
                let Some(held) = self.accepted.iter().find(|a| a.held && !a.delivered) else {
                    return Ok(());
                };
                let seq = held.seq;
                let index = self
                    .accepted
                    .iter()
                    .filter(|a| a.run.is_some() && !a.delivered)
                    .position(|a| a.seq == seq)
                    .and_then(|at| u8::try_from(at).ok())
                    .unwrap_or(0);
                self.activate(index)?;
                // Activated (or refused as finished): either way it is held no longer here.
                if let Some(a) = self.accepted.iter_mut().find(|a| a.seq == seq) {
                    a.held = false;
                }
                continue;
            };
            let (event, kind) = self.reply(first.effect, Reply::Success);
            self.feed(event, kind)?;
        }
        Err(format!(
            "livelock: still asking after {FINAL_ANSWERS_MAX} answers"
        ))
    }
}

/// Whether `effect` is runner work (a prepare or a finalise), which a poison cannot stop:
/// the lane waits for its answer (L-18).
const fn is_runner_work(effect: &Effect) -> bool {
    matches!(
        effect,
        Effect::PrepareRun { .. } | Effect::FinaliseRun { .. }
    )
}

/// Whether a poison with this origin and cause was seen.
fn recorded(poisons: &[lane_core::PoisonRecord], cause: lane_core::Cause, origin: RunId) -> bool {
    poisons
        .iter()
        .any(|p| p.origin == origin && p.cause == cause)
}

/// The launch step at `i % 4`.
fn launch_step(i: u8) -> LaunchStep {
    match i % 5 {
        0 => LaunchStep::Arm,
        1 => LaunchStep::Aicore,
        2 => LaunchStep::Aicpu,
        3 => LaunchStep::RecordEvent,
        _ => LaunchStep::CoreDone,
    }
}

/// `index % len` into a list of indices.
fn pick_ref(items: &[usize], i: u8) -> Option<&usize> {
    match items.len() {
        0 => None,
        len => items.get(usize::from(i) % len),
    }
}

/// The completion evidence other than the channel's success, picked by `c` (see
/// [`Reply::Other`]): on the record channel, the verdict rule's rows past `record-ok`; on the
/// stream-synchronize channel, a device fault. Each with a `no device verdict made` shape, a
/// backend that did not synchronize when the rule asks it to.
fn completion_evidence(channel: VerdictChannel, c: u8) -> Waited {
    if channel == VerdictChannel::StreamSync {
        return Waited {
            channel,
            boundary: Boundary::Complete,
            record: RecordRead::NotRead,
            device: match c % 2 {
                0 => Some(DeviceVerdict::Fault(acl_code(c / 2))),
                _ => None,
            },
        };
    }
    let never = RecordRead::Read(Record::NeverPublished {
        stamp: u64::from(c),
    });
    let (record, device) = match c % 8 {
        0 => {
            let at = usize::from(c / 8) % (RuntimeCode::ALL.len() + 1);
            let code = RuntimeCode::ALL
                .get(at)
                .copied()
                .unwrap_or(RuntimeCode::Unknown(4242));
            // The waiter makes no device verdict on an error record: it decides the run.
            let record = Record::Error {
                code,
                source: RecordSource::Header,
                payload_len: 0,
            };
            (RecordRead::Read(record), None)
        }
        1 => (never, Some(DeviceVerdict::Clean)),
        2 => (never, Some(DeviceVerdict::Fault(acl_code(c / 8)))),
        3 => (
            RecordRead::Failed(acl_code(c / 8)),
            Some(DeviceVerdict::Clean),
        ),
        4 => (
            RecordRead::Read(Record::Malformed(record_defect(c / 8))),
            Some(DeviceVerdict::Clean),
        ),
        // What the synchronize returned, for the lane to attribute (L-8a): the AICPU
        // stream's code (a sticky fatal status reads as 507018), or the AICore stream's.
        6 => (
            never,
            Some(DeviceVerdict::Returned {
                aicpu: Some(AclCode::RtAicpuException),
                aicore: None,
            }),
        ),
        7 => (
            never,
            Some(DeviceVerdict::Returned {
                aicpu: None,
                aicore: Some(AclCode::RtAicoreException),
            }),
        ),
        _ => (never, None),
    };
    Waited {
        channel,
        boundary: Boundary::Complete,
        record,
        device,
    }
}

/// A published record's defect, picked by `i % 8`.
const fn record_defect(i: u8) -> RecordDefect {
    let raw = i as u32;
    match i % 8 {
        0 => RecordDefect::NoVerdict,
        1 => RecordDefect::ZeroEpoch,
        2 => RecordDefect::UnknownVerdict { raw: 3 + raw },
        3 => RecordDefect::ErrorWithoutCode,
        4 => RecordDefect::UnknownSource { raw: 4 + raw },
        5 => RecordDefect::OkWithDetail {
            code: -1,
            source: 0,
            payload: 0,
        },
        6 => RecordDefect::PayloadTooLong { bytes: 257 + raw },
        _ => RecordDefect::Short { len: 8 },
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

/// The ACL code at `i % 26`; the 26th is one no table names.
fn acl_code(i: u8) -> AclCode {
    let at = usize::from(i) % (AclCode::ALL.len() + 1);
    AclCode::ALL
        .get(at)
        .copied()
        .unwrap_or(AclCode::Unknown(999_001))
}

/// A generation from any number (0 becomes 1: generations are never zero).
fn generation_of(n: u64) -> Generation {
    Generation(core::num::NonZeroU64::new(n).unwrap_or(core::num::NonZeroU64::MIN))
}

/// `event` with its lease changed by `f` (events without a lease are returned as they are).
fn with_lease(event: Event, f: impl Fn(Lease) -> Lease) -> Event {
    match event {
        Event::Prepared { run, lease } => Event::Prepared {
            run,
            lease: f(lease),
        },
        Event::Launched { run, lease } => Event::Launched {
            run,
            lease: f(lease),
        },
        Event::Completed {
            run,
            lease,
            evidence,
        } => Event::Completed {
            run,
            lease: f(lease),
            evidence,
        },
        Event::StatusRead {
            run,
            lease,
            status,
            timing,
        } => Event::StatusRead {
            run,
            lease: f(lease),
            status,
            timing,
        },
        Event::Finalised { run, lease } => Event::Finalised {
            run,
            lease: f(lease),
        },
        other => other,
    }
}

/// Whether `event` is an answer to `effect`: the same run and lease, stream role (and
/// handle), publication, or recovery attempt.
fn answers(effect: &Effect, event: &Event) -> bool {
    match (*effect, *event) {
        (
            Effect::PrepareRun { run, lease, .. },
            Event::Prepared { run: r, lease: l }
            | Event::PrepareIncompatible { run: r, lease: l }
            | Event::PrepareFailed {
                run: r, lease: l, ..
            },
        )
        | (
            Effect::LaunchRun { run, lease, .. },
            Event::Launched { run: r, lease: l }
            | Event::LaunchDeclined { run: r, lease: l }
            | Event::LaunchFailed {
                run: r, lease: l, ..
            },
        )
        | (
            Effect::AwaitCompletion { run, lease, .. },
            Event::Completed {
                run: r, lease: l, ..
            }
            | Event::CompletionFailed {
                run: r, lease: l, ..
            },
        )
        | (
            Effect::ReadRecords { run, lease, .. },
            Event::RecordsRead {
                run: r, lease: l, ..
            },
        )
        | (
            Effect::ReadStatus { run, lease, .. },
            Event::StatusRead {
                run: r, lease: l, ..
            }
            | Event::StatusReadFailed {
                run: r, lease: l, ..
            },
        )
        | (
            Effect::FinaliseRun { run, lease, .. },
            Event::Finalised { run: r, lease: l }
            | Event::FinaliseFailed {
                run: r, lease: l, ..
            },
        ) => run == r && lease == l,
        (
            Effect::CreateStream { role },
            Event::StreamCreated { role: r, .. } | Event::StreamCreateFailed { role: r, .. },
        ) => role == r,
        (
            Effect::DestroyStream { role, handle, .. },
            Event::StreamDestroyed { role: r, handle: h }
            | Event::StreamDestroyFailed {
                role: r, handle: h, ..
            },
        ) => role == r && handle == h,
        (
            Effect::UploadCode { publication, .. },
            Event::Uploaded { publication: p } | Event::UploadFailed { publication: p, .. },
        ) => publication == p,
        (Effect::DrainDevice { attempt, .. }, Event::DeviceDrained { attempt: a })
        | (
            Effect::ForceReset { attempt },
            Event::ResetDone { attempt: a } | Event::ResetFailed { attempt: a, .. },
        )
        | (
            Effect::Probe { attempt },
            Event::ProbePassed { attempt: a } | Event::ProbeFailed { attempt: a, .. },
        ) => attempt == a,
        _ => false,
    }
}

/// What the exhaustive explorer ([`crate::explore`]) reads and does beyond the operations.
impl Body {
    /// The lane under test.
    pub(crate) const fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The outstanding effects asked for since the last poison, in the order
    /// [`Op::Answer`] indexes them.
    pub(crate) fn current_effects(&self) -> Vec<Effect> {
        self.answerable()
            .into_iter()
            .map(|at| self.outstanding[at].effect)
            .collect()
    }

    /// How many outstanding effects were asked for before the last poison (abandoned with
    /// the device, so their answers are stale).
    pub(crate) fn abandoned(&self) -> usize {
        self.outstanding
            .iter()
            .filter(|o| o.epoch != self.epoch && !is_runner_work(&o.effect))
            .count()
    }

    /// Feeds the success answer to the abandoned effect at `index % abandoned`: a stale
    /// answer, which the lane may accept only if it also answers a current effect.
    pub(crate) fn answer_abandoned(&mut self, index: u8) -> Result<(), String> {
        let stale: Vec<usize> = (0..self.outstanding.len())
            .filter(|&at| {
                let o = &self.outstanding[at];
                o.epoch != self.epoch && !is_runner_work(&o.effect)
            })
            .collect();
        let Some(&at) = pick_ref(&stale, index) else {
            return Ok(());
        };
        let effect = self.outstanding.remove(at).effect;
        let (event, _) = self.reply(effect, Reply::Success);
        self.feed(event, Kind::Wrong)
    }

    /// `Lane::retry_teardown` (the explorer's last-drop step), then the invariants.
    pub(crate) fn retry_teardown(&mut self) -> Result<(), String> {
        self.lane.retry_teardown(self.now);
        self.after_call()
    }

    /// [`Op::Answer`], then the same event fed again: a duplicated answer, which the lane
    /// may accept only if it also answers another outstanding effect.
    pub(crate) fn answer_twice(&mut self, index: u8, reply: Reply) -> Result<(), String> {
        let current = self.answerable();
        let Some(&at) = pick_ref(&current, index) else {
            return Ok(());
        };
        let effect = self.outstanding[at].effect;
        let (event, kind) = self.reply(effect, reply);
        self.feed(event, kind)?;
        self.feed(event, Kind::Wrong)
    }

    /// The events the lane accepted, in order (the first 64; [`Self::events_accepted`] counts
    /// them all).
    pub(crate) fn history(&self) -> &[Event] {
        &self.history
    }

    /// How many events the lane accepted so far.
    pub(crate) const fn events_accepted(&self) -> usize {
        self.events_accepted
    }

    /// How many runs and how many publications the lane accepted so far.
    pub(crate) fn accepted_counts(&self) -> (usize, usize) {
        let runs = self.accepted.iter().filter(|a| a.run.is_some()).count();
        (runs, self.accepted.len() - runs)
    }

    /// Whether `close` was called.
    pub(crate) const fn closed(&self) -> bool {
        self.closed
    }

    /// How many live reservations the body holds.
    pub(crate) fn reservations(&self) -> usize {
        self.reserved.len()
    }

    /// Whether a fault notice was acted on.
    pub(crate) const fn noticed(&self) -> bool {
        self.noticed
    }

    /// The canonical text of everything that decides what happens next: the lane's
    /// fingerprint and every record the checks read. Left out: what only names behaviours
    /// reached, the outcomes already checked, and the event history (the explorer replays
    /// only the event it just fed, in the same action).
    pub(crate) fn key_text(&self) -> String {
        let outstanding: Vec<(bool, Effect)> = self
            .outstanding
            .iter()
            .map(|o| (o.epoch == self.epoch, o.effect))
            .collect();
        let accepted: Vec<(u64, bool, bool, bool)> = self
            .accepted
            .iter()
            .map(|a| (a.seq, a.delivered, a.held, a.cancel_asked))
            .collect();
        format!(
            "{}|{}|{outstanding:?}|{:?}|{accepted:?}|{:?}|{:?},{:?},{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}|{:?},{}|{:?}",
            self.lane.fingerprint().as_str(),
            self.now,
            self.poisons,
            self.evidence,
            self.last_prepare,
            self.last_launch,
            self.last_await,
            (&self.on_pair, self.drains),
            self.uploaded,
            self.reserved,
            self.former_leases,
            self.next_handle,
            self.closed,
            self.noticed,
            self.runner_epochs,
            self.last_epoch,
            self.upload_asked,
        )
    }
}

impl Body {
    /// What the explorer's run controls may name: the [`Op::Cancel`] index of each pending
    /// item, and the [`Op::Activate`] index of each pending held run.
    pub(crate) fn control_targets(&self) -> (Vec<u8>, Vec<u8>) {
        let pending: Vec<&Accepted> = self.accepted.iter().filter(|a| !a.delivered).collect();
        let cancels = (0..pending.len())
            .filter_map(|at| u8::try_from(at).ok())
            .collect();
        let activates = pending
            .iter()
            .filter(|a| a.run.is_some())
            .enumerate()
            .filter(|(_, a)| a.held)
            .filter_map(|(at, _)| u8::try_from(at).ok())
            .collect();
        (cancels, activates)
    }

    /// Whether a run without its outcome was submitted held and not activated.
    pub(crate) fn holds_a_run(&self) -> bool {
        self.accepted.iter().any(|a| a.held && !a.delivered)
    }

    /// The accepted items without an outcome yet: `(seq, is a run)`, in submission order.
    pub(crate) fn pending_items(&self) -> Vec<(u64, bool)> {
        self.accepted
            .iter()
            .filter(|a| !a.delivered)
            .map(|a| (a.seq, a.run.is_some()))
            .collect()
    }
}
