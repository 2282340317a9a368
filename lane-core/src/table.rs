//! What the rendered tables of the run, publication and lane machines share: an accepted
//! transition is a row; what a state refuses is one row, its inputs grouped by the reason.
//!
//! A step function is total, so every (state, input) pair is either a row or in its state's
//! refusal row; the tests below check that every pair is rendered exactly once, and the
//! explorer (lane-fuzz) that every state the table lists is reached.

use core::fmt::Write as _;

/// The input column of a state's refusal row.
pub(crate) const REFUSES: &str = "*refuses*";

/// Writes `state`'s refusal row, if it refuses anything: `refused` holds each refused input's
/// label with its reason, in input order, out of `inputs` inputs.
pub(crate) fn write_refusals(
    out: &mut String,
    state: &str,
    refused: &[(String, &'static str)],
    inputs: usize,
) {
    if refused.is_empty() {
        return;
    }
    let _ = writeln!(out, "| {state} | {REFUSES} | {} | none |", refusals(refused, inputs));
}

/// The refused inputs grouped by reason: the reason that refuses the most (the first of
/// them on a tie) as `every other input: reason.` (`every input` when the state accepts
/// nothing), after the others, each as `A, B: reason.` in the order it first refuses. A
/// behaviour change is then one row: the refusal row changes only when an input's reason is
/// not its state's usual one.
fn refusals(refused: &[(String, &'static str)], inputs: usize) -> String {
    let mut reasons: Vec<(&'static str, Vec<&str>)> = Vec::new();
    for (label, reason) in refused {
        match reasons.iter_mut().find(|(r, _)| r == reason) {
            Some((_, labels)) => labels.push(label),
            None => reasons.push((reason, vec![label])),
        }
    }
    let mut usual = 0;
    for (at, (_, labels)) in reasons.iter().enumerate() {
        if labels.len() > reasons[usual].1.len() {
            usual = at;
        }
    }
    let (reason, _) = reasons.remove(usual);
    let mut groups: Vec<String> = reasons
        .iter()
        .map(|(reason, labels)| format!("{}: {reason}.", labels.join(", ")))
        .collect();
    groups.push(if !groups.is_empty() {
        format!("Every other input: {reason}.")
    } else if refused.len() == inputs {
        format!("every input: {reason}.")
    } else {
        format!("every other input: {reason}.")
    });
    groups.join(" ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::publication::{PublicationInput, PublicationPhase, publication_table};
    use crate::run::{RunInput, RunPhase, run_phase_table};
    use crate::state::{LaneInput, lane_state_table, lane_step, table_states};

    /// How the table renders one (state, input) pair.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Cell {
        /// A row: its next-state and effects columns.
        Row { next: String, effects: String },
        /// In the state's refusal row, with this reason.
        Refused(String),
    }

    /// Every (state, input) pair the table renders, by labels, `every other input` expanded
    /// to the inputs its state shows nowhere else; an error names a pair rendered twice or a
    /// row that does not parse.
    fn parse(table: &str, inputs: &[String]) -> Result<BTreeMap<(String, String), Cell>, String> {
        let mut cells = BTreeMap::new();
        let mut put = |state: &str, input: &str, cell: Cell| match cells
            .insert((state.to_owned(), input.to_owned()), cell)
        {
            Some(_) => Err(format!("{state} x {input} is rendered twice")),
            None => Ok(()),
        };
        // (state, reason, whether the state accepts nothing) of each `every (other) input`.
        let mut others: Vec<(String, String, bool)> = Vec::new();
        let rows = table
            .lines()
            .skip_while(|line| !line.starts_with("|---"))
            .skip(1)
            .take_while(|line| line.starts_with("| "));
        for row in rows {
            let columns: Vec<&str> = row
                .strip_prefix("| ")
                .and_then(|row| row.strip_suffix(" |"))
                .ok_or_else(|| format!("not a table row: {row}"))?
                .split(" | ")
                .collect();
            let [state, input, next, effects] = columns[..] else {
                return Err(format!("not four columns: {row}"));
            };
            if input != REFUSES {
                put(
                    state,
                    input,
                    Cell::Row { next: next.to_owned(), effects: effects.to_owned() },
                )?;
                continue;
            }
            if effects != "none" {
                return Err(format!("a refusal with effects: {row}"));
            }
            let groups: Vec<&str> = next
                .strip_suffix('.')
                .ok_or_else(|| format!("a refusal row ends with a full stop: {row}"))?
                .split(". ")
                .collect();
            for (at, group) in groups.iter().enumerate() {
                let (labels, reason) = group
                    .split_once(": ")
                    .ok_or_else(|| format!("a refusal without a reason: {row}"))?;
                let last = at + 1 == groups.len();
                let every = match (labels, at) {
                    ("every input", 0) => Some(true),
                    ("every other input", 0) => Some(false),
                    ("Every other input", 1..) => Some(false),
                    _ => None,
                };
                match every {
                    Some(all) if last => others.push((state.to_owned(), reason.to_owned(), all)),
                    Some(_) => return Err(format!("`{labels}` is not the last group: {row}")),
                    None => {
                        for input in labels.split(", ") {
                            put(state, input, Cell::Refused(reason.to_owned()))?;
                        }
                    }
                }
            }
        }
        for (state, reason, all) in others {
            let shown = inputs
                .iter()
                .filter(|input| cells.contains_key(&(state.clone(), (*input).clone())))
                .count();
            if all && shown > 0 {
                return Err(format!("{state} refuses every input but shows {shown}"));
            }
            if !all && shown == 0 {
                return Err(format!("{state} shows no input but refuses every other one"));
            }
            for input in inputs {
                cells
                    .entry((state.clone(), input.clone()))
                    .or_insert_with(|| Cell::Refused(reason.clone()));
            }
        }
        Ok(cells)
    }

    /// Checks that `table` renders every pair of `states` and `inputs` exactly once: an
    /// accepted one as a row whose next-state column names the next state's label, a refused
    /// one in its state's refusal row with the step's reason. `step` gives the next state's
    /// label or the reason.
    fn check<S: Copy, I: Copy>(
        table: &str,
        states: &[S],
        inputs: &[I],
        state_label: impl Fn(S) -> String,
        input_label: impl Fn(I) -> String,
        step: impl Fn(S, I) -> Result<String, &'static str>,
    ) {
        let labels: Vec<String> = inputs.iter().map(|&i| input_label(i)).collect();
        for label in &labels {
            assert!(
                !label.contains(", ") && !label.contains(": ") && !label.contains(". "),
                "{label} cannot be told apart in a refusal row"
            );
        }
        let mut cells = parse(table, &labels).unwrap_or_else(|e| panic!("{e}"));
        for &state in states {
            let state_name = state_label(state);
            for (&input, input_name) in inputs.iter().zip(&labels) {
                let cell = cells
                    .remove(&(state_name.clone(), input_name.clone()))
                    .unwrap_or_else(|| panic!("{state_name} x {input_name} is not rendered"));
                match (step(state, input), cell) {
                    (Ok(next), Cell::Row { next: shown, effects }) => assert!(
                        shown.contains(&next) && !effects.is_empty(),
                        "{state_name} x {input_name}: the row shows {shown} | {effects}, the \
                         step leads to {next}"
                    ),
                    (Err(reason), Cell::Refused(shown)) => assert_eq!(
                        shown, reason,
                        "{state_name} x {input_name}: refused for the wrong reason"
                    ),
                    (want, shown) => {
                        panic!("{state_name} x {input_name}: step {want:?}, rendered {shown:?}")
                    }
                }
            }
        }
        assert!(
            cells.is_empty(),
            "rendered pairs of no state and input: {:?}",
            cells.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_run_phase_table_renders_every_phase_and_input_once() {
        check(
            &run_phase_table(),
            &RunPhase::all(),
            &RunInput::all(),
            RunPhase::label,
            RunInput::label,
            |phase, input| {
                crate::run::step(phase, input)
                    .map(|(next, _)| next.label())
                    .map_err(crate::run::Refusal::reason)
            },
        );
    }

    #[test]
    fn the_publication_table_renders_every_phase_and_input_once() {
        check(
            &publication_table(),
            &PublicationPhase::ALL,
            &PublicationInput::all(),
            |phase| phase.label().to_owned(),
            |input| input.label().to_owned(),
            |phase, input| {
                crate::publication::step(phase, input)
                    .map(|(next, _)| next.label().to_owned())
                    .map_err(crate::publication::PublicationRefusal::reason)
            },
        );
    }

    #[test]
    fn the_lane_state_table_renders_every_state_and_input_once() {
        let attempts = crate::profile::DEFAULT_RECOVERY_ATTEMPTS;
        check(
            &lane_state_table(),
            &table_states(attempts),
            &LaneInput::ALL,
            crate::LaneState::label,
            LaneInput::label,
            |state, input| {
                lane_step(state, input, attempts, crate::Recovery::InPlace)
                    .map(|(next, _)| next.label())
                    .map_err(crate::state::LaneRefusal::reason)
            },
        );
    }

    #[test]
    fn a_refusal_row_groups_its_inputs_by_reason_and_names_every_input_once() {
        let refused = |pairs: &[(&str, &'static str)]| -> Vec<(String, &'static str)> {
            pairs.iter().map(|&(i, r)| (i.to_owned(), r)).collect()
        };
        let mut out = String::new();
        write_refusals(&mut out, "S", &[], 3);
        assert_eq!(out, "", "a state that refuses nothing has no refusal row");
        write_refusals(&mut out, "S", &refused(&[("A", "r1"), ("B", "r2"), ("C", "r1")]), 4);
        assert_eq!(out, "| S | *refuses* | B: r2. Every other input: r1. | none |\n");
        // The usual reason is the one that refuses the most; the first of them on a tie.
        let three = refused(&[("A", "r1"), ("B", "r2"), ("C", "r2"), ("D", "r3")]);
        assert_eq!(refusals(&three, 5), "A: r1. D: r3. Every other input: r2.");
        let tie = refused(&[("A", "r1"), ("B", "r2")]);
        assert_eq!(refusals(&tie, 2), "B: r2. Every other input: r1.");
        let one = refused(&[("A", "r1"), ("B", "r1")]);
        assert_eq!(refusals(&one, 2), "every input: r1.");
        assert_eq!(refusals(&one, 3), "every other input: r1.");
    }
}
