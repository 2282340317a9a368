//! Every deadline of the dispatch machine in one table (quinn-proto's `TimerTable`), derived
//! from its state after every poll; the machine alone decides what a passed one means.

use lane_core::Timestamp;

/// A deadline the dispatch machine keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// The wait out's bound ([`DeviceWait::bound`](crate::DeviceWait::bound)): past it the
    /// thread running the steps answers the wait itself and drops the waiter's late answer.
    WaitBound,
    /// While a force reset is held: the bound of the waiter's current call, counted from its
    /// start. A waiter still inside its call past it ignores its timeout, and the lane ends
    /// (L-20).
    WaiterBound,
    /// The next look at the process's fault notice ring (L-19): a notice wakes no one.
    NoticePoll,
}

impl Timer {
    /// Every timer, in table order.
    pub const ALL: [Self; 3] = [Self::WaitBound, Self::WaiterBound, Self::NoticePoll];

    const fn index(self) -> usize {
        match self {
            Self::WaitBound => 0,
            Self::WaiterBound => 1,
            Self::NoticePoll => 2,
        }
    }

    /// What the timer bounds, for the rendered table.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::WaitBound => {
                "the wait out's bound (its deadline or drain timeout, plus the waiter's grace), \
                 counted from the start of the waiter's call (from the hand-out while the waiter \
                 is inside an older call; unarmed while an idle waiter has not taken it): past \
                 it the wait is answered at its bound (`BoundPassed`)"
            }
            Self::WaiterBound => {
                "armed while a force reset is held: the bound of the waiter's current call, \
                 counted from its start; past it with the waiter still inside, the lane is lost \
                 (`WaiterPastBound`)"
            }
            Self::NoticePoll => {
                "the next look at the fault notice ring (every `NOTICE_POLL_NS` while asleep)"
            }
        }
    }
}

/// One deadline per [`Timer`], each armed or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    at: [Option<Timestamp>; Timer::ALL.len()],
}

impl TimerTable {
    /// Every timer disarmed.
    #[must_use]
    pub const fn new() -> Self {
        Self { at: [None; Timer::ALL.len()] }
    }

    /// Arms `timer` for `at` (replacing its deadline).
    pub const fn set(&mut self, timer: Timer, at: Timestamp) {
        self.at[timer.index()] = Some(at);
    }

    /// Disarms `timer`.
    pub const fn stop(&mut self, timer: Timer) {
        self.at[timer.index()] = None;
    }

    /// `timer`'s deadline, if armed.
    #[must_use]
    pub const fn get(&self, timer: Timer) -> Option<Timestamp> {
        self.at[timer.index()]
    }

    /// Whether `timer` is armed and has passed at `now`.
    #[must_use]
    pub fn passed(&self, timer: Timer, now: Timestamp) -> bool {
        self.get(timer).is_some_and(|at| now >= at)
    }

    /// The earliest armed deadline: how long the thread that sleeps may sleep.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Timestamp> {
        self.at.iter().flatten().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_timeout_is_the_earliest_armed_deadline_and_a_stopped_timer_is_not_one() {
        let mut timers = TimerTable::default();
        assert_eq!(timers.next_timeout(), None);
        timers.set(Timer::NoticePoll, Timestamp(50));
        timers.set(Timer::WaitBound, Timestamp(20));
        assert_eq!(timers.next_timeout(), Some(Timestamp(20)));
        assert!(timers.passed(Timer::WaitBound, Timestamp(20)));
        assert!(!timers.passed(Timer::WaitBound, Timestamp(19)));
        timers.stop(Timer::WaitBound);
        assert!(!timers.passed(Timer::WaitBound, Timestamp(99)));
        assert_eq!(timers.next_timeout(), Some(Timestamp(50)));
    }
}
