//! The lane's value types: what a caller asks for ([`RunRequest`]) and what the lane reports
//! ([`CloseReport`], [`PoisonRecord`], [`StreamsLeft`], [`Fingerprint`]).

use core::fmt;

use status_latch::AclCode;
use stream_pair::Role;

use crate::ids::{Lease, OrderKey, RunId, Tag};
use crate::notice::FaultNotice;
use crate::outcome::Cause;
use crate::state::LaneState;

/// What a caller asks the lane to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RunRequest {
    /// The caller's tag (the runtime's dispatch id); two live runs may not share one.
    pub tag: Option<Tag>,
    /// Whether the run collects diagnostics: it then runs alone, at depth one (L-3).
    pub diagnostics: bool,
    /// A lease from [`Lane::reserve`](super::Lane::reserve); `None` lets the lane take a slot now.
    pub lease: Option<Lease>,
    /// The run's ordering key (L-2 as amended): placed ahead of the unlaunched keyed runs with
    /// a greater key. `None`: submission order.
    pub key: Option<OrderKey>,
    /// Submitted held: the run is prepared as usual but launched only after
    /// [`Lane::activate`](super::Lane::activate); the runs behind it wait behind it (L-2).
    pub held: bool,
    /// The epoch its result record is stamped with, chosen by the runtime (its own run epoch);
    /// `None` lets the driver mint one. Refused when 0 or not above the last one accepted, and
    /// when the lane's runs mix both ([`SubmitError::Epoch`](crate::SubmitError::Epoch)).
    pub epoch: Option<u64>,
}

impl RunRequest {
    /// A plain request: no tag, no diagnostics, the lane picks the slot.
    #[must_use]
    pub const fn new() -> Self {
        Self { tag: None, diagnostics: false, lease: None, key: None, held: false, epoch: None }
    }

    /// This request with a caller tag.
    #[must_use]
    pub const fn tagged(mut self, tag: u64) -> Self {
        self.tag = Some(Tag(tag));
        self
    }

    /// This request with diagnostics enabled.
    #[must_use]
    pub const fn with_diagnostics(mut self) -> Self {
        self.diagnostics = true;
        self
    }

    /// This request with an ordering key (L-2 as amended).
    #[must_use]
    pub const fn keyed(mut self, key: u64) -> Self {
        self.key = Some(OrderKey(key));
        self
    }

    /// This request held: prepared, and launched only after
    /// [`Lane::activate`](super::Lane::activate).
    #[must_use]
    pub const fn held(mut self) -> Self {
        self.held = true;
        self
    }

    /// This request with the runtime's own epoch for its result record.
    #[must_use]
    pub const fn with_epoch(mut self, epoch: u64) -> Self {
        self.epoch = Some(epoch);
        self
    }

    /// This request on a lease taken earlier with [`Lane::reserve`](super::Lane::reserve).
    #[must_use]
    pub const fn on_lease(mut self, lease: Lease) -> Self {
        self.lease = Some(lease);
        self
    }
}

/// Where an accepted run stands ([`Lane::run_status`](super::Lane::run_status)), as the
/// runtime's run handle shows it: coarser than [`RunPhase`](crate::RunPhase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunState {
    /// Waiting for its turn to prepare.
    Queued,
    /// Its prepare was asked for and has not answered.
    Preparing,
    /// Prepared and not launched: waiting for its turn, for its activation if held, or (its
    /// launch declined) for the pair to empty; also while a run that never launched (cancelled,
    /// failed before its launch) is finalised.
    Prepared,
    /// Its kernels were asked onto the pair: it finishes and gets its own verdict (a cancel is
    /// refused); also while a launched run is judged and finalised.
    Launched,
    /// Its verdict is final; the outcome waits for its turn (L-2) or is ready.
    Done,
}

/// An accepted run's state and controls ([`Lane::run_status`](super::Lane::run_status)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunStatus {
    /// Where it stands.
    pub state: RunState,
    /// Submitted held and not activated yet: it does not launch.
    pub held: bool,
    /// How many times the runner declined its launch (it then launches once the pair is
    /// empty).
    pub declines: u32,
    /// Its ordering key.
    pub key: Option<OrderKey>,
}

/// The most recent device poison: which run caused it and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoisonRecord {
    /// The run whose failure poisoned the device.
    pub origin: RunId,
    /// Its cause.
    pub cause: Cause,
}

/// What `close` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloseReport {
    /// The lane's state right after the call (`Closed` when nothing was left to finish).
    pub state: LaneState,
    /// The most recent poison in this lane's life, if there was one (L-15).
    pub poison: Option<PoisonRecord>,
    /// The most recent device fault notice that made the device suspect and caused a
    /// recovery (L-19), if there was one.
    pub notice: Option<FaultNotice>,
    /// Whether recovery failed every attempt (the device must be reset outside the lane):
    /// the state is `Lost` or `Closed { device_lost: true }`. A close during a recovery
    /// reports `false` here until that recovery ends; check
    /// [`Lane::device_lost`](super::Lane::device_lost) once the lane is `Closed`.
    pub device_lost: bool,
    /// The streams the teardown could not destroy, each with its last destroy's code: final
    /// once `state` is `Closed` (every destroy and its retry answered), empty before.
    pub streams_left: StreamsLeft,
}

/// How many times a close's teardown destroys each stream before the lane settles with the
/// stream left (S-7): the first destroy, and one retry as soon as it failed.
/// [`Lane::retry_teardown`](super::Lane::retry_teardown) destroys a stream left once more, later.
pub const TEARDOWN_ATTEMPTS: u8 = 2;

/// One stream a teardown could not destroy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeardownFailure {
    /// Which stream survived.
    pub role: Role,
    /// Its last destroy's code.
    pub code: AclCode,
}

/// The streams of the pair a close's teardown left alive, each with the code of its last
/// failed destroy (`None`: destroyed, or never created). Nothing is leaked silently: a
/// stream whose destroy failed is destroyed again ([`TEARDOWN_ATTEMPTS`],
/// [`Lane::retry_teardown`](super::Lane::retry_teardown)) and, while it survives, named here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamsLeft {
    /// The AICPU stream's last destroy code, if it survived.
    pub aicpu: Option<AclCode>,
    /// The AICore stream's last destroy code, if it survived.
    pub aicore: Option<AclCode>,
}

impl StreamsLeft {
    /// No stream left.
    pub const NONE: Self = Self { aicpu: None, aicore: None };

    /// Whether every stream was destroyed (or none was made).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.aicpu.is_none() && self.aicore.is_none()
    }

    /// How many streams are left (0, 1 or 2).
    #[must_use]
    pub const fn count(&self) -> u8 {
        self.aicpu.is_some() as u8 + self.aicore.is_some() as u8
    }

    /// `role`'s last destroy code, if it is left.
    #[must_use]
    pub const fn code(&self, role: Role) -> Option<AclCode> {
        match role {
            Role::Aicpu => self.aicpu,
            Role::Aicore => self.aicore,
        }
    }

    /// Each stream left, AICPU first.
    pub fn iter(&self) -> impl Iterator<Item = TeardownFailure> + '_ {
        Role::ALL
            .into_iter()
            .filter_map(|role| self.code(role).map(|code| TeardownFailure { role, code }))
    }

    pub(crate) fn set(&mut self, role: Role, code: Option<AclCode>) {
        match role {
            Role::Aicpu => self.aicpu = code,
            Role::Aicore => self.aicore = code,
        }
    }
}

/// One stable line, "" when nothing is left, e.g. `close left the AICPU stream: its every
/// destroy failed, the last with ACL 507901 ACL_ERROR_RT_SOCKET_CLOSE (...); hint: ...`.
impl fmt::Display for StreamsLeft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (at, left) in self.iter().enumerate() {
            let code = left.code;
            if at > 0 {
                f.write_str("; and ")?;
            } else {
                f.write_str("close left ")?;
            }
            write!(
                f,
                "the {} stream: its every destroy failed, the last with ACL {} {} ({})",
                left.role,
                code.raw(),
                code.name(),
                code.meaning()
            )?;
        }
        if !self.is_empty() {
            f.write_str(
                "; hint: the device still holds the stream; force-reset the device \
                 (aclrtResetDeviceForce) before it is used again, and check the device log",
            )?;
        }
        Ok(())
    }
}

/// A canonical, hashable view of a [`Lane`](super::Lane)
/// ([`Lane::fingerprint`](super::Lane::fingerprint)): equal fingerprints mean the lanes behave
/// alike from here on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub(super) String);

impl Fingerprint {
    /// The canonical text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
