//! The transition table: every named representative state against every input, rendered
//! by cloning the state and calling [`StreamPair::apply`], so the table is the code. A state
//! shows a row per input it accepts and one row for the inputs it rejects, grouped by the
//! rejection; the tests below check that every (state, input) pair is rendered once.

use core::fmt::Write as _;

use crate::{
    Effects, Input, LaunchDepth, Owner, Readiness, Rejection, Retirement, Role, Step, StreamHandle,
    StreamPair, StreamResult, SubmitError, WithdrawError,
};

/// The front submission's owner in the representative states.
const FRONT: Owner = Owner(1);
/// The second submission's owner.
const SECOND: Owner = Owner(2);
/// An owner with no submission.
const STRANGER: Owner = Owner(3);
/// The AICPU stream's handle in the representative states.
const H_AICPU: StreamHandle = StreamHandle(1);
/// The AICore stream's handle.
const H_AICORE: StreamHandle = StreamHandle(2);
/// A handle no stream holds.
const H_WRONG: StreamHandle = StreamHandle(9);
/// A create failure code (driver internal).
const CREATE_CODE: i32 = 507_899;
/// A destroy failure code (destroy with pending tasks).
const DESTROY_CODE: i32 = 507_901;
/// The table's launch depth (a2a3's).
pub(crate) const DEPTH: u8 = 2;

/// Readies a cold pair with both creates succeeding.
pub(crate) const OPEN: &[Input] = &[
    Input::Ready,
    Input::Created { role: Role::Aicpu, handle: H_AICPU },
    Input::Created { role: Role::Aicore, handle: H_AICORE },
];

/// Starts a teardown whose AICPU destroy fails.
const TEARDOWN_AICPU_FAILS: &[Input] = &[
    Input::DestroyAll,
    Input::DestroyFailed { role: Role::Aicpu, handle: H_AICPU, code: DESTROY_CODE },
];

/// A named state of the machine, reached from a cold pair by a list of inputs (so every
/// state in the table is reachable).
pub(crate) struct Representative {
    pub(crate) name: &'static str,
    summary: &'static str,
    pub(crate) reached_by: &'static [&'static [Input]],
}

pub(crate) const REPRESENTATIVES: &[Representative] = &[
    Representative {
        name: "cold",
        summary: "No stream yet (new, or after a device reset); the first launch creates both.",
        reached_by: &[],
    },
    Representative {
        name: "creating",
        summary: "The first `ready()` asked for both streams; both results are outstanding.",
        reached_by: &[&[Input::Ready]],
    },
    Representative {
        name: "ready idle",
        summary: "Both streams live and fresh, nothing queued: the warm pair between runs.",
        reached_by: &[OPEN],
    },
    Representative {
        name: "ready, 1 queued",
        summary: "One run submitted; a successor may still be submitted (depth 2).",
        reached_by: &[OPEN, &[Input::Submit(FRONT)]],
    },
    Representative {
        name: "ready, full",
        summary: "Two runs submitted: the FIFO is at the launch depth.",
        reached_by: &[OPEN, &[Input::Submit(FRONT), Input::Submit(SECOND)]],
    },
    Representative {
        name: "stale idle",
        summary: "A publication (or a failed replacement destroy) left the AICore stream stale; nothing queued, so the next `ready()` replaces it with a healthy destroy.",
        reached_by: &[OPEN, &[Input::MarkStale]],
    },
    Representative {
        name: "unproven idle",
        summary: "A run retired `Unproven`: the AICore stream is stale and may hold stuck or errored work, so the next `ready()` replaces it with a forced destroy.",
        reached_by: &[OPEN, &[Input::Submit(FRONT), Input::Retire(FRONT, Retirement::Unproven)]],
    },
    Representative {
        name: "sticky, 1 queued",
        summary: "The front run retired `Sticky` (its record reports an error, so its fatal status stays on the AICPU stream, L-8a) with a successor queued behind it: the AICPU stream is stale and replaced once the successor retires; nothing new is submitted meanwhile.",
        reached_by: &[
            OPEN,
            &[
                Input::Submit(FRONT),
                Input::Submit(SECOND),
                Input::Retire(FRONT, Retirement::Sticky),
            ],
        ],
    },
    Representative {
        name: "sticky idle",
        summary: "The AICPU stream holds a sticky code and nothing is queued: the next `ready()` replaces it with a healthy destroy (its work finished).",
        reached_by: &[OPEN, &[Input::Submit(FRONT), Input::Retire(FRONT, Retirement::Sticky)]],
    },
    Representative {
        name: "stale, 2 queued",
        summary: "A publication while two runs are queued: the replacement waits for both retirements (draining).",
        reached_by: &[OPEN, &[Input::Submit(FRONT), Input::Submit(SECOND), Input::MarkStale]],
    },
    Representative {
        name: "replacement destroying",
        summary: "The launch path is destroying the stale AICore stream; the AICPU stream stays.",
        reached_by: &[OPEN, &[Input::MarkStale, Input::Ready]],
    },
    Representative {
        name: "AICore creating",
        summary: "The AICPU stream is live and the AICore stream is being created: a replacement whose stale predecessor is gone, a retry after a failed create, or a first readying whose AICPU answer came first.",
        reached_by: &[
            OPEN,
            &[
                Input::MarkStale,
                Input::Ready,
                Input::Destroyed { role: Role::Aicore, handle: H_AICORE },
                Input::Ready,
            ],
        ],
    },
    Representative {
        name: "half-ready",
        summary: "The AICPU stream is live, the AICore stream is missing (its create failed, or its stale predecessor was just destroyed): not ready; the next `ready()` creates it.",
        reached_by: &[&[
            Input::Ready,
            Input::Created { role: Role::Aicpu, handle: H_AICPU },
            Input::CreateFailed { role: Role::Aicore, code: CREATE_CODE },
        ]],
    },
    Representative {
        name: "creating, published meanwhile",
        summary: "A publication arrived while the AICore create was outstanding: the new stream will be stale and replaced before its first submission.",
        reached_by: &[&[
            Input::Ready,
            Input::Created { role: Role::Aicpu, handle: H_AICPU },
            Input::MarkStale,
        ]],
    },
    Representative {
        name: "closing",
        summary: "`destroy_all()` asked for both destroys; both results are outstanding.",
        reached_by: &[OPEN, &[Input::DestroyAll]],
    },
    Representative {
        name: "closing, AICPU destroy failed",
        summary: "One teardown destroy failed (its error is kept as the first error); the AICore result is outstanding.",
        reached_by: &[OPEN, TEARDOWN_AICPU_FAILS],
    },
    Representative {
        name: "closed, AICPU survivor",
        summary: "The teardown finished with the AICPU destroy failed: the survivor stays stale, so a reuse destroys it before creating anew.",
        reached_by: &[
            OPEN,
            TEARDOWN_AICPU_FAILS,
            &[Input::Destroyed { role: Role::Aicore, handle: H_AICORE }],
        ],
    },
];

/// The inputs of the table, with representative payloads, in column order.
const INPUTS: &[Input] = &[
    Input::Ready,
    Input::Submit(STRANGER),
    Input::Submit(FRONT),
    Input::Withdraw(FRONT),
    Input::Withdraw(SECOND),
    Input::Withdraw(STRANGER),
    Input::Retire(FRONT, Retirement::Complete),
    Input::Retire(FRONT, Retirement::Unproven),
    Input::Retire(FRONT, Retirement::Sticky),
    Input::Retire(SECOND, Retirement::Complete),
    Input::Retire(SECOND, Retirement::Unproven),
    Input::Retire(SECOND, Retirement::Sticky),
    Input::Retire(STRANGER, Retirement::Unproven),
    Input::MarkStale,
    Input::MarkSticky(SECOND),
    Input::Created { role: Role::Aicpu, handle: H_AICPU },
    Input::Created { role: Role::Aicore, handle: H_AICORE },
    Input::Created { role: Role::Aicore, handle: H_AICPU },
    Input::CreateFailed { role: Role::Aicpu, code: CREATE_CODE },
    Input::CreateFailed { role: Role::Aicore, code: CREATE_CODE },
    Input::Destroyed { role: Role::Aicpu, handle: H_AICPU },
    Input::Destroyed { role: Role::Aicore, handle: H_AICORE },
    Input::Destroyed { role: Role::Aicore, handle: H_WRONG },
    Input::DestroyFailed { role: Role::Aicpu, handle: H_AICPU, code: DESTROY_CODE },
    Input::DestroyFailed { role: Role::Aicore, handle: H_AICORE, code: DESTROY_CODE },
    Input::DestroyAll,
    Input::Abandon,
];

const LEGEND: &str = "\
# Stream pair: transition table

Every named state of `stream_pair::StreamPair` against every input, computed by cloning
the state and calling `StreamPair::apply` (launch depth 2). Rendered by
`stream_pair::transition_table()`; `cargo xtask codegen` keeps this file current. Each
state's table has one row per input it accepts, then one `*refuses*` row: the inputs it
rejects, grouped by the rejection.

- **Input**: the `Input` applied, with a representative payload. `run 1` owns the front
  submission, `run 2` the second, `run 3` has none. `h1` is the AICPU stream's handle,
  `h2` the AICore stream's, `h9` a handle no stream holds. Codes: 507899 for a failed
  create, 507901 for a failed destroy.
- **Reply**: what `apply` returns: the readiness (`Ready`, `Pending`, `Draining`,
  `Closing`), a step, a retirement report or a result report. In the `*refuses*` row, the
  rejected inputs, each group followed by its `Rejection` (a field that only repeats the
  input's owner, role or handle is left out). A rejected input changes nothing.
- **Effects**: the effects emitted, in the order the backend runs them; `-` for none. Only
  `Ready` emits creates and replacement destroys; only `DestroyAll` emits teardown destroys.
- **Next state**: a named state in bold, `unchanged`, or the full state.
- **State**: `aicpu <stream>; aicore <stream>; queue [<owners, front first>]`, then
  `closing` while a teardown waits for results. A stream is `absent`, `creating`, `live hN`
  or `destroying hN`; `(stale)` means it must be destroyed and recreated before the next
  submission (a stale AICore stream is a pending replacement; a stale AICPU stream holding a
  run's sticky code is one too).
";

/// The Markdown transition table of the stream pair: every named state against every input.
pub fn transition_table() -> String {
    let states: Vec<(&Representative, StreamPair)> = REPRESENTATIVES
        .iter()
        .map(|representative| (representative, reach(representative)))
        .collect();
    let mut out = String::from(LEGEND);
    out.push_str("\n## States\n\n| State | Full state | Meaning |\n|---|---|---|\n");
    for (representative, pair) in &states {
        let _ = writeln!(
            out,
            "| [{name}](#{anchor}) | `{pair}` | {summary} |",
            name = representative.name,
            anchor = anchor(representative.name),
            summary = representative.summary,
        );
    }
    for (representative, pair) in &states {
        let _ = write!(
            out,
            "\n## {name}\n\n{summary}\n\nState: `{pair}`\n\n\
             | Input | Reply | Effects | Next state |\n|---|---|---|---|\n",
            name = representative.name,
            summary = representative.summary,
        );
        let mut refused: Vec<(Input, String)> = Vec::new();
        for input in INPUTS {
            let mut next = pair.clone();
            let step = match next.apply(*input) {
                Ok(step) => step,
                Err(rejection) => {
                    refused.push((*input, rejection_kind(rejection)));
                    continue;
                }
            };
            let (reply, effects) = render_step(&step);
            let next_state =
                if next == *pair { String::from("unchanged") } else { name_of(&next, &states) };
            let _ = writeln!(out, "| {input} | {reply} | {effects} | {next_state} |");
        }
        if !refused.is_empty() {
            let _ = writeln!(out, "| {REFUSES} | {} | - | unchanged |", refusals(&refused));
        }
    }
    out
}

/// The input column of a state's refusal row.
const REFUSES: &str = "*refuses*";

/// The rejected inputs grouped by their rejection, in the order each rejection first
/// appears: `A, B: `Rejection`.`
fn refusals(refused: &[(Input, String)]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for (_, kind) in refused {
        if !kinds.contains(&kind.as_str()) {
            kinds.push(kind);
        }
    }
    let groups: Vec<String> = kinds
        .iter()
        .map(|kind| {
            let inputs: Vec<String> = refused
                .iter()
                .filter(|(_, k)| k == kind)
                .map(|(input, _)| input.to_string())
                .collect();
            format!("{}: `{kind}`.", inputs.join(", "))
        })
        .collect();
    groups.join(" ")
}

/// A rejection as its state's refusal row shows it: without the fields that only repeat
/// the rejected input's owner, role or handle (a test checks that they do), so the inputs
/// one rejection refuses share a group.
fn rejection_kind(rejection: Rejection) -> String {
    match rejection {
        Rejection::Submit(SubmitError::DuplicateOwner { .. }) => "Submit(DuplicateOwner)".into(),
        Rejection::Withdraw(WithdrawError::NotSubmitted { .. }) => "Withdraw(NotSubmitted)".into(),
        Rejection::NoCreateInFlight { .. } => "NoCreateInFlight".into(),
        Rejection::NotBeingDestroyed { .. } => "NotBeingDestroyed".into(),
        Rejection::HandleInUse { .. } => "HandleInUse".into(),
        Rejection::NotAResult { .. } => "NotAResult".into(),
        Rejection::Submit(
            SubmitError::NotReady | SubmitError::ReplacementPending | SubmitError::Full { .. },
        )
        | Rejection::SubmissionsQueued { .. }
        | Rejection::ResultsOutstanding { .. }
        | Rejection::TeardownInProgress => format!("{rejection:?}"),
    }
}

fn reach(representative: &Representative) -> StreamPair {
    let mut pair = StreamPair::new(LaunchDepth(DEPTH));
    for input in representative.reached_by.iter().flat_map(|inputs| inputs.iter()) {
        // A refused step would show in the table as a wrong state description.
        let _ = pair.apply(*input);
    }
    pair
}

/// The bold name of the representative with the same description, or the description.
fn name_of(pair: &StreamPair, states: &[(&Representative, StreamPair)]) -> String {
    let description = pair.to_string();
    states.iter().find(|(_, known)| known.to_string() == description).map_or_else(
        || format!("`{description}`"),
        |(representative, _)| format!("**{}**", representative.name),
    )
}

fn render_step(step: &Step) -> (String, String) {
    match step {
        Step::Readiness(readiness) => match readiness {
            Readiness::Ready { aicpu, aicore } => {
                (format!("Ready ({aicpu}, {aicore})"), String::from("-"))
            }
            Readiness::Pending(effects) => (String::from("Pending"), render_effects(effects)),
            Readiness::Draining => (String::from("Draining"), String::from("-")),
            Readiness::Closing => (String::from("Closing"), String::from("-")),
        },
        Step::Submitted => (String::from("submitted"), String::from("-")),
        Step::Withdrawn => (String::from("withdrawn"), String::from("-")),
        Step::Retired(retired) => (format!("retired: {retired:?}"), String::from("-")),
        Step::MarkedStale => (String::from("marked stale"), String::from("-")),
        Step::MarkedSticky => (String::from("marked sticky"), String::from("-")),
        Step::Result(result) => (render_result(result), String::from("-")),
        Step::Teardown(effects) if effects.is_empty() => {
            (String::from("teardown: nothing live"), String::from("-"))
        }
        Step::Teardown(effects) => (String::from("teardown"), render_effects(effects)),
        Step::Abandoned => (String::from("abandoned"), String::from("-")),
    }
}

fn render_result(result: &StreamResult) -> String {
    match result {
        StreamResult::Created { role, handle } => format!("created {role} {handle}"),
        StreamResult::CreateFailed(failure) => format!("create failed: {failure}"),
        StreamResult::Destroyed { role } => format!("destroyed {role}"),
        StreamResult::DestroyFailed { role, handle, code } => {
            format!("destroy failed: {role} {handle} {code}")
        }
        StreamResult::TeardownFinished { first_error: None } => {
            String::from("teardown finished, no error")
        }
        StreamResult::TeardownFinished { first_error: Some(failure) } => {
            format!("teardown finished, first error {failure}")
        }
    }
}

fn render_effects(effects: &Effects) -> String {
    if effects.is_empty() {
        return String::from("-");
    }
    let rendered: Vec<String> = effects.iter().map(ToString::to_string).collect();
    rendered.join("; ")
}

/// The GitHub-style anchor of a heading.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Splits `list` at the commas outside parentheses.
    fn split_inputs(list: &str) -> Vec<&str> {
        let (mut parts, mut depth, mut start) = (Vec::new(), 0_i32, 0);
        for (at, c) in list.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(list[start..at].trim());
                    start = at + 1;
                }
                _ => {}
            }
        }
        parts.push(list[start..].trim());
        parts
    }

    /// How one state's table renders an input: its row's reply, or the rejection its
    /// refusal row names.
    #[derive(Debug, PartialEq, Eq)]
    enum Cell {
        Row(String),
        Refused(String),
    }

    /// Every (state name, input) pair the rendered table shows, from each state's section.
    fn parse(table: &str) -> BTreeMap<(String, String), Cell> {
        let mut cells = BTreeMap::new();
        let mut put = |state: &str, input: &str, cell: Cell| {
            let earlier = cells.insert((state.to_owned(), input.to_owned()), cell);
            assert!(earlier.is_none(), "{state} x {input} is rendered twice");
        };
        let mut state = None;
        for line in table.lines() {
            if let Some(heading) = line.strip_prefix("## ") {
                state = (heading != "States").then_some(heading);
                continue;
            }
            let Some(state) = state else { continue };
            let Some(row) = line.strip_prefix("| ").and_then(|l| l.strip_suffix(" |")) else {
                continue;
            };
            let columns: Vec<&str> = row.split(" | ").collect();
            let [input, reply, effects, next] = columns[..] else {
                panic!("not four columns: {line}");
            };
            if input == "Input" {
                continue;
            }
            if input != REFUSES {
                put(state, input, Cell::Row(reply.to_owned()));
                continue;
            }
            assert_eq!((effects, next), ("-", "unchanged"), "{line}");
            let groups = reply
                .strip_suffix("`.")
                .unwrap_or_else(|| panic!("a refusal row ends with a rejection: {line}"));
            for group in groups.split("`. ") {
                let (inputs, kind) = group
                    .split_once(": `")
                    .unwrap_or_else(|| panic!("a group without its rejection: {line}"));
                for input in split_inputs(inputs) {
                    put(state, input, Cell::Refused(kind.to_owned()));
                }
            }
        }
        cells
    }

    #[test]
    fn every_named_state_and_input_is_a_row_or_in_the_states_refusal_row() {
        let mut cells = parse(&transition_table());
        for representative in REPRESENTATIVES {
            let pair = reach(representative);
            for input in INPUTS {
                let key = (representative.name.to_owned(), input.to_string());
                let cell = cells.remove(&key).unwrap_or_else(|| panic!("{key:?} is not rendered"));
                let want = match pair.clone().apply(*input) {
                    Ok(step) => Cell::Row(render_step(&step).0),
                    Err(rejection) => Cell::Refused(rejection_kind(rejection)),
                };
                assert_eq!(cell, want, "{key:?}");
            }
        }
        assert!(cells.is_empty(), "rendered pairs of no state: {cells:?}");
    }

    #[test]
    fn a_refusal_row_leaves_out_only_the_fields_that_repeat_the_input() {
        for representative in REPRESENTATIVES {
            let pair = reach(representative);
            for input in INPUTS {
                let Err(rejection) = pair.clone().apply(*input) else {
                    continue;
                };
                let repeats = match (rejection, *input) {
                    (
                        Rejection::Submit(SubmitError::DuplicateOwner { owner }),
                        Input::Submit(submitted),
                    )
                    | (
                        Rejection::Withdraw(WithdrawError::NotSubmitted { owner }),
                        Input::Withdraw(submitted),
                    ) => owner == submitted,
                    (
                        Rejection::NoCreateInFlight { role },
                        Input::Created { role: named, .. }
                        | Input::CreateFailed { role: named, .. },
                    ) => role == named,
                    (
                        Rejection::NotBeingDestroyed { role, handle }
                        | Rejection::HandleInUse { role, handle },
                        Input::Destroyed { role: named, handle: given }
                        | Input::DestroyFailed { role: named, handle: given, .. }
                        | Input::Created { role: named, handle: given },
                    ) => role == named && handle == given,
                    (Rejection::NotAResult { input: named }, input) => named == input,
                    _ => rejection_kind(rejection) == format!("{rejection:?}"),
                };
                assert!(
                    repeats,
                    "{} x {input}: {rejection:?} is shown as {}",
                    representative.name,
                    rejection_kind(rejection)
                );
            }
        }
    }
}
