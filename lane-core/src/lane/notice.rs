//! Device fault notices (L-19): a notice that names this lane's device and stream makes the
//! device suspect; the lane admits nothing new, lets its launched runs reach their own
//! verdicts, then recovers the device as after a poison.

use crate::ids::Timestamp;
use crate::notice::FaultNotice;
use crate::state::{LaneInput, LaneState};

use super::Lane;

impl Lane {
    /// A device fault notice that the backend matched to this lane's device and one of its
    /// streams of the current device generation (L-19). Returns whether it changed anything:
    /// an open or closing lane becomes suspect (submits and publications are refused with
    /// the notice, nothing new prepares or launches, launched runs keep their awaits), and
    /// once every launched run has its verdict the lane recovers the device; what had not
    /// launched then fails with the notice (stage `FaultNotice`). A lane already suspect,
    /// recovering, lost or closed ignores it (a reset is already coming, or the lane is done
    /// with the device).
    pub fn fault_notice(&mut self, now: Timestamp, notice: FaultNotice) -> bool {
        let before = self.state;
        match self.step_state(LaneInput::FaultNotice) {
            Ok(next) if next != before => {}
            _ => return false,
        }
        self.notice = Some(notice);
        self.notice_recovery = true;
        self.progress(now);
        true
    }

    /// The most recent fault notice that made the device suspect, if any.
    #[must_use]
    pub const fn notice(&self) -> Option<FaultNotice> {
        self.notice
    }

    /// Suspect, and no run is past its launch any more: every unfinished item fails with the
    /// notice, handles are abandoned, and recovery starts.
    pub(super) fn recover_if_launched_done(&mut self) {
        if !matches!(self.state, LaneState::Suspect { .. })
            || self.live_runs().any(|r| r.phase.past_launch())
        {
            return;
        }
        let Some(notice) = self.notice else {
            return;
        };
        self.take_down(None, super::poison::notice_cause(notice));
        self.start_recovery(LaneInput::LaunchedDone);
    }
}
