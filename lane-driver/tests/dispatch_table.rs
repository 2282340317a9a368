//! The dispatch machine's table is committed once, as docs/state-machines/dispatch.md
//! (`cargo xtask codegen`): a behaviour change shows up as a diff of that doc. The first
//! tests check the doc is the rendering and that it renders every (setting, state, input)
//! once; the rest check the machine's rules that no single row shows, over every row.

use std::collections::BTreeMap;

use lane_driver::dispatch::{
    Act, DispatchInput, DispatchRefusal, DispatchState, Setting, dispatch_step, dispatch_table,
};

#[test]
fn the_committed_dispatch_table_is_the_rendering() {
    let path = "docs/state-machines/dispatch.md";
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let doc = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let body = doc.split_once("-->\n\n").map_or("", |(_, body)| body);
    let want = format!("{}\n", dispatch_table().trim_end());
    if body != want {
        let at = body
            .lines()
            .zip(want.lines())
            .position(|(have, want)| have != want)
            .unwrap_or_else(|| body.lines().count().min(want.lines().count()));
        panic!(
            "{path} is not the rendering from its body's line {}: run `cargo xtask codegen` \
             and review the diff",
            at + 1
        );
    }
}

/// What the rendered table shows for one (setting, state, input).
#[derive(Debug, PartialEq, Eq)]
enum Shown {
    /// The cell of its row: `next: action`.
    Cell(String),
    /// Refused, for this reason (from its state's `*refuses*` row).
    Refused(String),
}

/// Every (setting index, state, input) the rendered table shows, by the names it uses.
fn shown(table: &str) -> BTreeMap<(usize, String, String), Shown> {
    let names: Vec<String> = DispatchInput::ALL.iter().map(|i| format!("{i:?}")).collect();
    let mut shown = BTreeMap::new();
    let rows = table
        .lines()
        .skip_while(|line| !line.starts_with("|---"))
        .skip(1)
        .take_while(|line| line.starts_with("| "));
    for row in rows {
        let columns: Vec<&str> = row
            .strip_prefix("| ")
            .and_then(|row| row.strip_suffix(" |"))
            .unwrap_or_else(|| panic!("not a row: {row}"))
            .split(" | ")
            .collect();
        assert_eq!(columns.len(), 2 + Setting::ALL.len(), "{row}");
        let (state, input) = (columns[0], columns[1]);
        for (setting, cell) in columns[2..].iter().enumerate() {
            if input != "*refuses*" {
                if *cell != "-" {
                    let earlier = shown.insert(
                        (setting, state.to_owned(), input.to_owned()),
                        Shown::Cell((*cell).to_owned()),
                    );
                    assert!(earlier.is_none(), "{state} x {input} twice");
                }
                continue;
            }
            if *cell == "-" {
                continue;
            }
            let mut other = None;
            for group in cell
                .strip_suffix('.')
                .unwrap_or_else(|| panic!("a refusal ends with a full stop: {row}"))
                .split(". ")
            {
                let (inputs, reason) = group
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("a refusal without a reason: {row}"));
                if matches!(inputs, "every input" | "every other input" | "Every other input") {
                    other = Some(reason);
                    continue;
                }
                for input in inputs.split(", ") {
                    let earlier = shown.insert(
                        (setting, state.to_owned(), input.to_owned()),
                        Shown::Refused(reason.to_owned()),
                    );
                    assert!(earlier.is_none(), "{state} x {input} twice");
                }
            }
            let other = other.unwrap_or_else(|| panic!("no `every other input`: {row}"));
            for name in &names {
                shown
                    .entry((setting, state.to_owned(), name.clone()))
                    .or_insert_with(|| Shown::Refused(other.to_owned()));
            }
        }
    }
    shown
}

#[test]
fn the_dispatch_table_shows_every_setting_state_and_input_once() {
    let mut shown = shown(&dispatch_table());
    for (at, setting) in Setting::ALL.into_iter().enumerate() {
        for state in DispatchState::ALL {
            for input in DispatchInput::ALL {
                let key = (at, format!("{state:?}"), format!("{input:?}"));
                let want = match dispatch_step(setting, state, input) {
                    Ok((next, act)) => Shown::Cell(format!("{next:?}: {}", act.describe())),
                    Err(refusal) => Shown::Refused(refusal.reason().to_owned()),
                };
                assert_eq!(
                    shown.remove(&key),
                    Some(want),
                    "{} {state:?} {input:?}",
                    setting.label()
                );
            }
        }
    }
    assert!(shown.is_empty(), "shown for nothing: {shown:?}");
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
                !matches!(act, Act::ToWaiter | Act::Hold | Act::AnswerAtBound | Act::Lose),
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
            assert_eq!(input, DispatchInput::SettledShutdown, "{setting:?} {state:?}");
        }
        if act == Act::Lose {
            assert_eq!(input, DispatchInput::WaiterPastBound, "{setting:?} {state:?}");
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
            assert_eq!((input, act), (DispatchInput::Resume, Act::Route), "{setting:?}");
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
            assert_eq!((state, act), (DispatchState::WaitOut, Act::CountFromStart), "{setting:?}");
        }
    }
}
