//! The exhaustive explorer under `cargo test`: every ordering of commands and backend
//! answers within small bounds, on a2a3 (depth two) and at depth one, and the stream pair alone at every depth.
//! Bigger bounds: `cargo xtask explore --runs N`. The state counts are pinned here and recorded
//! in docs/testing.md.

use lane_core::status_latch::VerdictRule;
use lane_fuzz::explore::lane::{self, Action, Chip, Config};
use lane_fuzz::explore::pair::{self, PairConfig};
use lane_fuzz::explore::{Failure, Model, explore, render};
use lane_fuzz::lane_sequences::{Op, Reply};

/// Far above what the test bounds reach: hitting it means the bounds grew.
const LIMIT: usize = 1_000_000;

/// The configurations `cargo test` explores on each chip: one run with a publication, a
/// close and reservations; two runs with a close. And a2a3 with a prepare window of two:
/// two runs with a close (both prepare at once; their answers come in any order). And the
/// stream-synchronize channel (a runtime without records): one run with a publication and a
/// close. Depth three has a test of its own.
fn test_configs() -> Vec<Config> {
    let mut configs = vec![
        // L-8 on the stream-synchronize channel: the device verdict and the header decide.
        config(Chip::StreamSync, 1, 1),
        config(Chip::A2a3Window2, 2, 0),
        // L-24: the runtime's recovery, after a poison or a notice, at any point; its reset
        // reported at any point (refused unless awaited).
        Config { notices: true, ..config(Chip::RuntimeRecovery, 1, 1) },
        // L-19: one matched fault notice at any point of a run's life, of a publication's,
        // and of a close.
        Config { notices: true, ..config(Chip::A2a3, 1, 1) },
        // Run controls (issue 45): a held run with key 1 and a run with key 0 that passes it
        // while it is unlaunched (L-2), activate, cancel of each pending item, and a declined
        // launch at every point.
        Config { controls: true, ..config(Chip::A2a3, 2, 1) },
        // Finalise before the next launch: a run launches only once the one ahead finalised
        // (with the narrow answers: it is about order, not about answers).
        config(Chip::FinaliseFirst, 2, 0),
    ];
    for chip in [Chip::A2a3, Chip::DepthOne] {
        configs.push(Config { reservations: true, ..config(chip, 1, 1) });
        configs.push(config(chip, 2, 0));
    }
    configs
}

/// What the explorer reaches for each of [`test_configs`], in order: (states, transitions,
/// depth). A change here is a change of the lane's behaviour, to be reviewed as one; update it
/// and docs/testing.md's table together.
const EXPECTED: [(usize, usize, usize); 10] = [
    (11_446, 98_398, 18),
    (417_068, 3_711_536, 31),
    (31_924, 319_821, 19),
    (107_665, 923_143, 26),
    (133_032, 1_006_171, 24),
    (3_992, 23_675, 21),
    (48_606, 425_022, 20),
    (415_980, 3_700_949, 31),
    (48_606, 425_022, 20),
    (371_487, 3_299_967, 31),
];

/// `runs` runs and `publications` publications on `chip`, with a close, and nothing else
/// offered.
const fn config(chip: Chip, runs: u8, publications: u8) -> Config {
    Config { runs, publications, ..Config::test(chip) }
}

/// The table states no step rests in: `ReleasingStreams(round 0 of 1)`, which
/// `Lane::retry_teardown` enters and leaves within its own call (its one destroy round starts
/// at once: a closed lane has no stream create outstanding to wait for). Every other run
/// phase, publication phase and lane state is reached (every step of all three recovery
/// attempts, toward reopen and toward close; every round of a close's teardown and the
/// retry's round), and every row of the verdict rule (the lane judged some completion or
/// status read by it), so a table row for a state the lane cannot be in, or a verdict row no
/// evidence the backend can give reaches, would show here.
const EXPECTED_UNREACHED: &[&str] = &["lane state ReleasingStreams(round 0 of 1)"];

#[test]
fn every_ordering_of_answers_within_the_test_bounds_keeps_every_lane_property() {
    let (explored, reached) = match lane::run_all(&test_configs(), LIMIT) {
        Ok(done) => done,
        Err(report) => panic!("{report}"),
    };
    assert_eq!(explored.len(), EXPECTED.len());
    for (one, (states, transitions, depth)) in explored.iter().zip(EXPECTED) {
        println!(
            "{}: {} states, {} transitions, depth {}",
            one.config.rust(),
            one.stats.states,
            one.stats.transitions,
            one.stats.depth
        );
        let expected = lane_fuzz::explore::Stats { states, transitions, depth };
        assert_eq!(one.stats, expected, "{}: the explored space changed", one.config.rust());
    }
    let tables = reached.against_tables();
    println!("table states never reached: {:?}", tables.unreached);
    // L-8: the explored world gives every shape of evidence the verdict rule names (a
    // malformed record among them), so the lane's judgement goes through every row.
    let rows: Vec<&str> = VerdictRule::ALL.iter().map(|r| r.name()).collect();
    let judged: Vec<&str> = reached.verdict.iter().map(String::as_str).collect();
    println!("verdict rows reached: {judged:?}");
    assert!(
        rows.iter().all(|r| judged.contains(r)),
        "verdict rows never reached: {:?}",
        rows.iter().filter(|r| !judged.contains(r)).collect::<Vec<_>>()
    );
    assert_eq!(tables.unreached, EXPECTED_UNREACHED, "table states never reached");
    assert!(tables.unlisted.is_empty(), "reached states no table lists: {:?}", tables.unlisted);
}

/// Depth three (L-5): three runs in flight, so a launch is queued behind two, either of which
/// may still fail before its boundary.
const DEPTH3: Config = config(Chip::Depth3, 3, 0);

#[test]
fn the_depth_three_exploration_keeps_every_lane_property_and_reaches_every_run_phase() {
    let one = match lane::run(DEPTH3, LIMIT) {
        Ok(one) => one,
        Err(report) => panic!("{report}"),
    };
    println!(
        "{}: {} states, {} transitions, depth {}",
        DEPTH3.rust(),
        one.stats.states,
        one.stats.transitions,
        one.stats.depth
    );
    let tables = one.reached.against_tables();
    let unreached: Vec<&String> =
        tables.unreached.iter().filter(|s| s.starts_with("run phase")).collect();
    assert!(
        unreached.is_empty(),
        "run phases the depth-three exploration never reached: {unreached:?}"
    );
    let expected = lane_fuzz::explore::Stats { states: 269_979, transitions: 1_993_662, depth: 31 };
    assert_eq!(one.stats, expected, "the explored space changed");
}

#[test]
fn every_ordering_of_stream_pair_operations_matches_the_reference_model_at_depths_one_and_two() {
    // With two owners, depths above two behave as depth two; `cargo xtask explore` runs
    // every depth with more owners.
    for (depth, states, transitions) in [(1, 68_534, 798_077), (2, 79_094, 928_833)] {
        let config = PairConfig::test(depth);
        match pair::run(config, LIMIT) {
            Ok(stats) => {
                println!(
                    "{config:?}: {} states, {} transitions, depth {}",
                    stats.states, stats.transitions, stats.depth
                );
                let expected = lane_fuzz::explore::Stats { states, transitions, depth: 23 };
                assert_eq!(stats, expected, "{config:?}: the explored space changed");
            }
            Err(report) => panic!("{report}"),
        }
    }
}

#[test]
fn a_printed_trace_replays_through_the_same_checks() {
    // A run answered with success all the way, as a violation report would print it.
    let config = Config::test(Chip::DepthOne);
    let answer = |reply| Action::Op(Op::Answer { effect: 0, reply });
    let mut trace = vec![Action::Op(Op::Submit {
        tag: None,
        diagnostics: false,
        lease: lane_fuzz::lane_sequences::LeasePick::None,
    })];
    trace.extend(std::iter::repeat_n(answer(Reply::Success), 8));
    trace.push(Action::Op(Op::Close));
    assert_eq!(lane::replay(config, &trace), Ok(()));
}

/// A counter that may go up by one or two; reaching `bad` breaks a property.
#[derive(Clone)]
struct Counter {
    value: u8,
    bad: u8,
}

impl Model for Counter {
    type Action = u8;

    fn actions(&self) -> Vec<u8> {
        if self.value < 20 { vec![1, 2] } else { Vec::new() }
    }

    fn step(&mut self, by: u8) -> Result<(), String> {
        self.value += by;
        Ok(())
    }

    fn key(&self) -> String {
        self.value.to_string()
    }

    fn check(&self) -> Result<(), String> {
        if self.value == self.bad { Err(format!("reached {}", self.bad)) } else { Ok(()) }
    }

    fn rust(by: u8) -> String {
        by.to_string()
    }
}

#[test]
fn a_violation_comes_back_with_the_shortest_trace_that_reaches_it_rendered_as_code() {
    let failure = explore(Counter { value: 0, bad: 7 }, 100, |_| {}).unwrap_err();
    let violation = failure.violation().expect("a violation");
    // Breadth first: 7 is reached in four steps, not seven; ties go to the first action
    // offered at the shallowest state.
    assert_eq!(violation.trace, [1, 2, 2, 2]);
    assert_eq!(violation.message, "reached 7");
    let report = render::<Counter>(violation, "replay(&[", "])");
    assert!(report.starts_with("reached 7\nshortest trace (4 actions)"), "{report}");
    assert!(report.ends_with("replay(&[\n    1,\n    2,\n    2,\n    2,\n])"), "{report}");
}

#[test]
fn an_exploration_past_its_state_limit_says_so_instead_of_passing() {
    let failure = explore(Counter { value: 0, bad: 99 }, 5, |_| {}).unwrap_err();
    assert_eq!(failure, Failure::TooManyStates { limit: 5 });
}

#[test]
fn every_order_the_dispatch_machine_can_meet_keeps_its_state_true_and_reaches_every_accepted_row() {
    use lane_driver::dispatch::{DispatchInput, DispatchState, Setting};
    use lane_fuzz::explore::dispatch;
    for setting in Setting::ALL {
        let covered = match dispatch::run(setting, 4, LIMIT) {
            Ok(covered) => covered,
            Err(report) => panic!("{report}"),
        };
        println!("dispatch {}: {:?}", setting.label(), covered.stats);
        let unreached: Vec<_> = dispatch::accepted_rows(setting)
            .difference(&covered.rows)
            .map(|&(s, i)| (DispatchState::ALL[s], DispatchInput::ALL[i]))
            // Without a waiter a wait out is the awaited run's, made on this thread before
            // anything else is noted: the row is accepted (harmless) and never used.
            .filter(|row| {
                !(setting == Setting::DRIVER
                    && *row == (DispatchState::WaitOut, DispatchInput::Await))
            })
            .collect();
        assert!(
            unreached.is_empty(),
            "{}: accepted rows no order reaches: {unreached:?}",
            setting.label()
        );
    }
}
