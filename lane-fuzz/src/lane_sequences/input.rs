//! The target's input: the profile and the operations, as [`arbitrary`] builds them from
//! raw bytes. Apart from the body so the encoding reads in one place: every committed seed
//! decodes through these types, field by field and variant by variant, in this order.

use arbitrary::Arbitrary;

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
/// `1 + window % slots`, completion timeout
/// [`COMPLETION_TIMEOUT_NS`](super::COMPLETION_TIMEOUT_NS).
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
