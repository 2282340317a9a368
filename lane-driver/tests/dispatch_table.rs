//! The dispatch machine's table is snapshot-tested (a behaviour change shows up as a table
//! diff in review; `cargo xtask codegen` writes the same table into docs/), and its rules
//! that no single row shows are checked over every row.

use lane_driver::dispatch::{
    Act, DispatchInput, DispatchRefusal, DispatchState, Setting, dispatch_step, dispatch_table,
};

#[test]
fn dispatch_table_snapshot() {
    insta::assert_snapshot!(dispatch_table());
}

/// Every accepted row of every setting, with what it leads to.
fn rows() -> impl Iterator<Item = (Setting, DispatchState, DispatchInput, DispatchState, Act)> {
    Setting::ALL.into_iter().flat_map(|setting| {
        DispatchState::ALL.into_iter().flat_map(move |state| {
            DispatchInput::ALL.into_iter().filter_map(move |input| {
                dispatch_step(setting, state, input)
                    .ok()
                    .map(|(next, act)| (setting, state, input, next, act))
            })
        })
    })
}

#[test]
fn without_a_waiter_nothing_is_handed_to_a_waiter_and_no_reset_is_held() {
    for (setting, state, input, next, act) in rows() {
        if !setting.waiter {
            assert!(
                !matches!(
                    act,
                    Act::ToWaiter | Act::Hold | Act::AnswerAtBound | Act::Lose
                ),
                "{setting:?} {state:?} {input:?} -> {act:?}"
            );
            assert_ne!(next, DispatchState::ResetHeld);
        }
        if !setting.workers {
            assert_ne!(act, Act::ToWorker, "{setting:?} {state:?} {input:?}");
        }
    }
}

#[test]
fn a_reset_under_a_wait_is_never_executed_and_a_held_reset_runs_only_once_the_waiter_left() {
    for (setting, state, input, next, act) in rows() {
        if input == DispatchInput::ResetUnderWait {
            assert_eq!(act, Act::Hold, "{setting:?} {state:?}");
        }
        if state == DispatchState::ResetHeld && act == Act::Execute {
            assert!(
                matches!(input, DispatchInput::WaiterLeft | DispatchInput::HandedBack),
                "{setting:?}: a held reset ran on {input:?}"
            );
        }
        if state == DispatchState::ResetHeld && next != DispatchState::ResetHeld {
            assert_eq!(input, DispatchInput::WaiterLeft, "{setting:?}");
        }
    }
}

#[test]
fn only_a_settled_shut_down_lane_ends_its_thread_and_only_a_stuck_waiter_loses_it() {
    for (setting, state, input, _, act) in rows() {
        if act == Act::Exit {
            assert_eq!(
                input,
                DispatchInput::SettledShutdown,
                "{setting:?} {state:?}"
            );
        }
        if act == Act::Lose {
            assert_eq!(
                input,
                DispatchInput::WaiterPastBound,
                "{setting:?} {state:?}"
            );
        }
    }
}

#[test]
fn a_worker_answer_outside_a_worker_setting_is_refused_as_not_in_the_setting() {
    for state in DispatchState::ALL {
        assert_eq!(
            dispatch_step(Setting::WAITER, state, DispatchInput::WorkerAnswered),
            Err(DispatchRefusal::NotInSetting)
        );
    }
}

#[test]
fn a_bound_submitter_never_makes_a_recovery_call_and_only_the_lanes_own_thread_takes_it_back() {
    for (setting, state, input, next, act) in rows() {
        if input == DispatchInput::Elsewhere {
            assert!(
                matches!(act, Act::Defer | Act::Leave),
                "{setting:?} {state:?}: a submitter's recovery call led to {act:?}"
            );
            assert!(setting.waiter, "only a threaded lane has submitters");
        }
        if state == DispatchState::Deferred && next != DispatchState::Deferred {
            assert_eq!(
                (input, act),
                (DispatchInput::Resume, Act::Route),
                "{setting:?}"
            );
        }
        if state == DispatchState::Deferred {
            assert_ne!(act, Act::ToWaiter, "{setting:?} {input:?}");
        }
    }
}

#[test]
fn only_a_wait_out_counts_its_bound_from_the_waiters_start() {
    for (setting, state, input, _, act) in rows() {
        if input == DispatchInput::WaitStarted {
            assert_eq!(
                (state, act),
                (DispatchState::WaitOut, Act::CountFromStart),
                "{setting:?}"
            );
        }
    }
}
