//! Identifiers and time: the small value types every other module speaks in.

use core::fmt;
use core::num::NonZeroU64;

/// A point in time, in nanoseconds since an epoch the backend chooses.
///
/// The lane never reads a clock: every command and event carries `now`, and deadlines are
/// computed from it. The simulator counts virtual nanoseconds; the ACL driver converts its
/// monotonic clock in exactly one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The timestamp `ns` nanoseconds later, saturating at the end of time.
    #[must_use]
    pub const fn after_ns(self, ns: u64) -> Self {
        Self(self.0.saturating_add(ns))
    }

    /// Nanoseconds from `earlier` to `self`, zero if `earlier` is later.
    #[must_use]
    pub const fn since(self, earlier: Self) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

/// Identifies an accepted run. Minted by the lane in submission order, starting at 1.
///
/// Runs and publications draw from one sequence, so ids order every accepted item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub u64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {}", self.0)
    }
}

/// Identifies an accepted publication (an upload of new AICore code).
///
/// Drawn from the same sequence as [`RunId`], so ids order every accepted item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicationId(pub u64);

impl fmt::Display for PublicationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "publication {}", self.0)
    }
}

/// A pipeline slot: selects the per-run resources that preparation writes (host runtime
/// buffer, arena bank, handshake region, completion events, timing buffer). Not a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotId(pub u8);

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slot {}", self.0)
    }
}

/// A lease generation: minted by the lane each time a slot is taken; never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Generation(pub NonZeroU64);

impl Generation {
    /// The raw generation number (never zero).
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

/// A slot leased to one run: the slot and the generation minted when it was taken.
///
/// Every effect and event about a run carries its lease; an event whose lease is not the
/// live one for that slot is stale and changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lease {
    /// The slot.
    pub slot: SlotId,
    /// The generation minted when the slot was taken.
    pub generation: Generation,
}

impl fmt::Display for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slot {} gen {}", self.slot.0, self.generation.get())
    }
}

/// Opaque reference to AICore code a publication uploads (the backend knows what it names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CodeRef(pub u64);

/// A caller tag carried by a run request: the runtime's dispatch id. Two live runs may not
/// share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(pub u64);

/// A run's ordering key: the runtime's dispatch id, when the order of dispatch and the
/// order of submission may differ (L-2 as amended). A run with a key is placed ahead of the
/// unlaunched keyed runs with a greater key that are already in the lane, so it is prepared,
/// launched, completed, finalised and delivered before them; it never passes a launched run,
/// a run without a key, or a publication. Equal keys keep submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey(pub u64);

/// Where an accepted item stands in the lane's order (L-2): its sequence number and, for a
/// run with one, its [`OrderKey`]. The lane's order is submission order, except that a keyed
/// run may stand ahead of keyed runs submitted earlier with a greater key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemOrder {
    /// The item's sequence number (its `RunId` or `PublicationId`).
    pub seq: u64,
    /// The run's ordering key; `None` for a run without one and for a publication.
    pub key: Option<OrderKey>,
}

impl ItemOrder {
    /// Whether an item at `self` may stand ahead of one at `later` in the lane's order (and
    /// so get its outcome first): it was submitted first, or both carry keys and `self`'s is
    /// smaller (it was placed ahead of `later`).
    #[must_use]
    pub fn may_precede(self, later: Self) -> bool {
        match (self.key, later.key) {
            (Some(a), Some(b)) if a < b => true,
            _ => self.seq < later.seq,
        }
    }
}

/// Device-side start and end of a run (L-17), read when its status is read: from the device's
/// event timestamps where the backend has them, else from the run's own slot's timing buffer
/// ([`TimingSource`]); with the proof of overlap its launch took ([`Overlap`]).
///
/// Values are in the device clock's nanoseconds; only differences between runs of one lane
/// and one source are meaningful (the inter-run gap is `next.start - prev.end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceTiming {
    /// When the run's kernels started on the device.
    pub start_ns: u64,
    /// When the run's kernels ended on the device.
    pub end_ns: u64,
    /// Where `start_ns` and `end_ns` come from.
    pub source: TimingSource,
    /// Whether the run's launch returned while its predecessor's boundary was still unfired.
    pub overlap: Overlap,
}

/// Where a run's [`DeviceTiming`] start and end come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TimingSource {
    /// The run's slot's timing buffer, which the runtime's kernels write (the fallback).
    #[default]
    TimingBuffer,
    /// The device's event timestamps (`aclrtEventGetTimestamp`): start from an event recorded
    /// on the AICore stream right before the AICore kernel (behind the wait on the
    /// predecessor's boundary), end from the run's boundary.
    EventTimestamps,
}

impl TimingSource {
    /// A short name for traces and reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::TimingBuffer => "timing buffer",
            Self::EventTimestamps => "event timestamps",
        }
    }
}

/// The proof of overlap of one run (L-18): whether its launch was queued behind a predecessor
/// still executing. Right after the run's launch calls returned (both kernels accepted), the
/// executor queries the boundary of the predecessor its AICore stream waits for
/// (`aclrtQueryEventStatus`, without waiting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Overlap {
    /// Not known: the query failed (it counts neither way), the device has no query, or the
    /// run never launched (its status was not read).
    #[default]
    Unknown,
    /// The run was not queued: no predecessor's boundary was in flight at its launch (depth
    /// one, or nothing ahead of it on the pair).
    NotQueued,
    /// The predecessor's boundary was still unfired when the run's launch returned: the run
    /// was on the pair while its predecessor executed.
    Proven,
    /// The predecessor's boundary had already fired when the run's launch returned: the
    /// launch came too late to overlap.
    NotProven,
}

impl Overlap {
    /// A short name for traces and reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::NotQueued => "not queued",
            Self::Proven => "proven",
            Self::NotProven => "not proven",
        }
    }
}

/// How many other runs can share the stream pair with one run: the launch depth's most, less
/// that run (stream-pair's `MAX_DEPTH - 1`).
pub const PAIR_PEERS: usize = stream_pair::MAX_DEPTH as usize - 1;

/// The values of the other runs on the stream pair, in order, inline (at most
/// [`PAIR_PEERS`]): the runs queued behind an awaited one that its synchronize covered, or the
/// earlier runs a launch may have to wait for. `Copy`, so effects and events that carry one
/// stay `Copy` and allocate nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peers<T: Copy> {
    items: [Option<T>; PAIR_PEERS],
}

impl<T: Copy> Peers<T> {
    /// None.
    #[must_use]
    pub const fn new() -> Self {
        Self { items: [None; PAIR_PEERS] }
    }

    /// Appends `item`; returns `false` (and keeps nothing) when already full.
    pub fn push(&mut self, item: T) -> bool {
        match self.items.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => {
                *slot = Some(item);
                true
            }
            None => false,
        }
    }

    /// The values, in order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.items.iter().map_while(|item| *item)
    }

    /// How many.
    #[must_use]
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there is none.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.items[0].is_none()
    }
}

impl<T: Copy> Default for Peers<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for Peers<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy> FromIterator<T> for Peers<T> {
    /// The first [`PAIR_PEERS`] values; any more are dropped.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut peers = Self::new();
        for item in iter {
            if !peers.push(item) {
                break;
            }
        }
        peers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_spans_saturate_instead_of_wrapping() {
        assert_eq!(Timestamp(7).since(Timestamp(3)), 4);
        assert_eq!(Timestamp(3).since(Timestamp(7)), 0, "now never goes backwards");
        assert_eq!(Timestamp(u64::MAX - 1).after_ns(5), Timestamp(u64::MAX));
    }

    #[test]
    fn peers_keep_their_order_and_refuse_past_their_capacity() {
        let mut peers = Peers::new();
        assert!(peers.is_empty());
        for n in 1..=u64::try_from(PAIR_PEERS).unwrap_or(3) {
            assert!(peers.push(RunId(n)));
        }
        assert!(!peers.push(RunId(99)), "full");
        assert_eq!(peers.len(), PAIR_PEERS);
        assert_eq!(peers.iter().next(), Some(RunId(1)));
        assert_eq!(format!("{peers:?}"), "[RunId(1), RunId(2), RunId(3)]");
        let collected: Peers<u8> = (0..10).collect();
        assert_eq!(collected.len(), PAIR_PEERS);
    }

    #[test]
    fn a_smaller_key_precedes_a_run_submitted_earlier_and_nothing_else_reorders() {
        let keyed = |seq, key| ItemOrder { seq, key: Some(OrderKey(key)) };
        let plain = |seq| ItemOrder { seq, key: None };
        assert!(keyed(5, 1).may_precede(keyed(3, 2)), "earlier key, later run");
        assert!(
            keyed(3, 2).may_precede(keyed(5, 1)),
            "a run already launched stays ahead of a later smaller key"
        );
        assert!(!keyed(5, 2).may_precede(keyed(3, 1)), "a greater key never passes");
        assert!(keyed(3, 2).may_precede(keyed(5, 2)), "equal keys: submission order");
        assert!(!keyed(5, 2).may_precede(keyed(3, 2)));
        assert!(!keyed(5, 1).may_precede(plain(3)), "a keyless run is never passed");
        assert!(plain(3).may_precede(keyed(5, 1)));
    }

    #[test]
    fn identifiers_print_as_errors_and_traces_name_them() {
        let generation = Generation(NonZeroU64::MIN);
        assert_eq!(Timestamp(1500).to_string(), "1500ns");
        assert_eq!(RunId(3).to_string(), "run 3");
        assert_eq!(PublicationId(4).to_string(), "publication 4");
        assert_eq!(SlotId(1).to_string(), "slot 1");
        assert_eq!(Lease { slot: SlotId(1), generation }.to_string(), "slot 1 gen 1");
    }
}
