//! Whether the next launch waits on a prepare that is out: a driver running prepares off
//! its own thread asks this to choose what to wait for first, a prepare's answer (which
//! would let a launch start) or the awaited run's completion.

use crate::run::RunPhase;
use crate::state::LaneState;

use super::Lane;
use super::schedule::Ahead;

impl Lane {
    /// Whether the next launch waits only on a prepare that is out: the lane is open, the
    /// oldest run that has not launched is `Preparing`, its turn has come (every earlier run
    /// launched, no unfinished publication before it: L-2, L-12), and once prepared it
    /// could launch at once as far as the lane is concerned (no diagnostics rule holds it
    /// back, L-3, and fewer runs are on the pair than the launch depth, L-11). Then the
    /// prepare's answer enables a launch; otherwise an answer enables none, and the awaited
    /// run's completion is what frees the pair. Pure, allocates nothing.
    #[must_use]
    pub fn next_launch_waits_on_prepare(&self) -> bool {
        if self.state != LaneState::Open {
            return false;
        }
        self.next_in_order(RunPhase::Preparing)
            .is_some_and(|(idx, ahead)| !self.launch_held_back(idx, ahead))
    }

    /// Whether the run at `idx`, its turn come, is held back from launching by the lane's
    /// own rules: a run with diagnostics, or one behind it, runs alone (L-3), and the pair
    /// holds at most the launch depth (L-11). Stream readiness is the pair's to say.
    pub(super) fn launch_held_back(&self, idx: usize, ahead: Ahead) -> bool {
        if (self.run(idx).diagnostics || ahead.diagnostics) && ahead.live_run {
            return true;
        }
        let on_pair = self.live_runs().filter(|r| r.phase.on_pair()).count();
        on_pair >= usize::from(self.profile.launch_depth().get())
    }
}

#[cfg(test)]
mod tests {
    use crate::effect::Effect;
    use crate::ids::{CodeRef, Timestamp};
    use crate::lane::{Lane, RunRequest};
    use crate::profile::{Profile, ProfileSpec};
    use crate::testkit::Succeed;

    const NOW: Timestamp = Timestamp(0);

    /// a2a3 at depth two with `slots` slots and a prepare window of `window`.
    fn lane(slots: u8, window: u8) -> Lane {
        Lane::new(
            Profile::custom(ProfileSpec {
                slots,
                prepare_window: window,
                ..Profile::a2a3().spec()
            })
            .unwrap(),
        )
    }

    /// Answers every effect but prepares and completion waits, which stay out; returns how
    /// many prepares are out.
    fn answer_all_but_prepares_and_waits(lane: &mut Lane, backend: &mut Succeed) -> usize {
        let mut prepares = 0;
        while let Some(effect) = lane.poll_effect() {
            match effect {
                Effect::PrepareRun { .. } => prepares += 1,
                Effect::AwaitCompletion { .. } => {}
                effect => lane.handle(NOW, backend.answer(effect)).unwrap(),
            }
        }
        prepares
    }

    /// Answers every effect but completion waits, which stay out (runs stay on the pair).
    fn answer_all_but_waits(lane: &mut Lane, backend: &mut Succeed) {
        while let Some(effect) = lane.poll_effect() {
            if !matches!(effect, Effect::AwaitCompletion { .. }) {
                lane.handle(NOW, backend.answer(effect)).unwrap();
            }
        }
    }

    /// Answers the one prepare out for the oldest preparing run.
    fn answer_prepare(lane: &mut Lane, backend: &mut Succeed, effect: Effect) {
        assert!(matches!(effect, Effect::PrepareRun { .. }), "{effect}");
        lane.handle(NOW, backend.answer(effect)).unwrap();
    }

    #[test]
    fn a_first_run_preparing_on_an_empty_pair_holds_the_next_launch() {
        let mut lane = lane(2, 1);
        assert!(!lane.next_launch_waits_on_prepare(), "no run");
        lane.submit(NOW, RunRequest::new()).unwrap();
        assert!(matches!(
            lane.poll_effect(),
            Some(Effect::PrepareRun { .. })
        ));
        assert!(lane.next_launch_waits_on_prepare());
    }

    #[test]
    fn no_run_left_to_launch_holds_nothing() {
        let mut lane = lane(2, 1);
        let mut backend = Succeed::new();
        lane.submit(NOW, RunRequest::new()).unwrap();
        // Prepared and launched (streams created on the way), its completion awaited.
        answer_all_but_waits(&mut lane, &mut backend);
        assert!(lane.run(0).phase.on_pair());
        assert!(!lane.next_launch_waits_on_prepare());
    }

    /// Runs 1 and 2 on the pair (run 1 awaited), run 3 submitted behind them.
    fn pair_full(slots: u8, window: u8) -> Lane {
        let mut lane = lane(slots, window);
        let mut backend = Succeed::new();
        for _ in 0..2 {
            lane.submit(NOW, RunRequest::new()).unwrap();
            answer_all_but_waits(&mut lane, &mut backend);
        }
        lane.submit(NOW, RunRequest::new()).unwrap();
        lane
    }

    #[test]
    fn a_prepare_behind_a_full_pair_holds_no_launch() {
        let mut lane = pair_full(3, 1);
        assert!(matches!(
            lane.poll_effect(),
            Some(Effect::PrepareRun { .. })
        ));
        assert_eq!(lane.live_runs().filter(|r| r.phase.on_pair()).count(), 2);
        assert!(!lane.next_launch_waits_on_prepare());
    }

    #[test]
    fn a_prepare_holds_the_launch_once_the_pair_has_room() {
        let mut lane = pair_full(3, 1);
        let prepare = lane.poll_effect().unwrap();
        // Run 1 completes, reads status and retires: the pair has room for run 3.
        let mut backend = Succeed::with_handles_after(2);
        let (run, lease) = (lane.run(0).id, lane.run(0).lease);
        let deadline = lane.poll_deadline().unwrap();
        lane.handle(
            NOW,
            backend.answer(Effect::AwaitCompletion {
                run,
                lease,
                deadline,
            }),
        )
        .unwrap();
        while let Some(effect) = lane.poll_effect() {
            if matches!(effect, Effect::ReadStatus { .. }) {
                lane.handle(NOW, backend.answer(effect)).unwrap();
            }
        }
        assert_eq!(lane.live_runs().filter(|r| r.phase.on_pair()).count(), 1);
        assert!(lane.next_launch_waits_on_prepare());
        answer_prepare(&mut lane, &mut backend, prepare);
        assert!(!lane.next_launch_waits_on_prepare(), "run 3 launched");
    }

    #[test]
    fn a_prepared_run_waiting_for_its_streams_comes_before_a_later_prepare() {
        let mut lane = lane(3, 2);
        let mut backend = Succeed::new();
        lane.submit(NOW, RunRequest::new()).unwrap();
        lane.submit(NOW, RunRequest::new()).unwrap();
        let first = lane.poll_effect().unwrap();
        let second = lane.poll_effect().unwrap();
        assert!(matches!(second, Effect::PrepareRun { .. }), "{second}");
        assert!(lane.next_launch_waits_on_prepare());
        // Run 1 prepared: its launch waits for the streams (created, not yet answered),
        // not for run 2's prepare.
        answer_prepare(&mut lane, &mut backend, first);
        assert!(matches!(
            lane.poll_effect(),
            Some(Effect::CreateStream { .. })
        ));
        assert!(!lane.next_launch_waits_on_prepare());
    }

    #[test]
    fn a_diagnostics_run_preparing_behind_a_live_run_holds_no_launch() {
        let mut lane = lane(2, 1);
        let mut backend = Succeed::new();
        lane.submit(NOW, RunRequest::new()).unwrap();
        answer_all_but_waits(&mut lane, &mut backend);
        lane.submit(NOW, RunRequest::new()).unwrap();
        assert!(matches!(
            lane.poll_effect(),
            Some(Effect::PrepareRun { .. })
        ));
        assert!(
            lane.next_launch_waits_on_prepare(),
            "a plain run 2 could launch"
        );

        let mut lane = self::lane(2, 1);
        let mut backend = Succeed::new();
        lane.submit(NOW, RunRequest::new()).unwrap();
        lane.submit(NOW, RunRequest::new().with_diagnostics())
            .unwrap();
        answer_all_but_waits(&mut lane, &mut backend);
        // A diagnostics run prepares only once run 1 is done: nothing to wait on yet.
        assert!(!lane.next_launch_waits_on_prepare());
    }

    #[test]
    fn a_closing_lane_launches_nothing() {
        let mut lane = lane(2, 1);
        lane.submit(NOW, RunRequest::new()).unwrap();
        assert!(matches!(
            lane.poll_effect(),
            Some(Effect::PrepareRun { .. })
        ));
        assert!(lane.next_launch_waits_on_prepare());
        lane.close(NOW);
        assert!(!lane.next_launch_waits_on_prepare());
    }

    #[test]
    fn a_run_behind_an_unfinished_publication_is_not_preparing() {
        let mut lane = lane(2, 1);
        let mut backend = Succeed::new();
        lane.submit(NOW, RunRequest::new()).unwrap();
        assert_eq!(
            answer_all_but_prepares_and_waits(&mut lane, &mut backend),
            1
        );
        assert!(lane.next_launch_waits_on_prepare());
        let mut lane = self::lane(2, 1);
        // Run 1 launched; the publication waits for it, run 2 waits behind the publication.
        lane.submit(NOW, RunRequest::new()).unwrap();
        answer_all_but_waits(&mut lane, &mut backend);
        lane.publish(NOW, CodeRef(7)).unwrap();
        lane.submit(NOW, RunRequest::new()).unwrap();
        assert_eq!(
            answer_all_but_prepares_and_waits(&mut lane, &mut backend),
            0
        );
        assert!(!lane.next_launch_waits_on_prepare());
    }
}
