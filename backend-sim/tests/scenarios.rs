//! Every scenario shipped under scenarios/ passes (so `cargo test` covers them), and a
//! wrong expectation fails with a readable diff.

use std::path::{Path, PathBuf};

use backend_sim::scenario::{self, Scenario};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

fn shipped() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .expect("scenarios/ exists at the workspace root")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_scenario_passes() {
    let files = shipped();
    assert!(files.len() >= 10, "only {} scenario files found", files.len());
    let mut failures = String::new();
    for path in &files {
        let loaded = scenario::load(path);
        if loaded.as_ref().is_ok_and(|s| !s.runs_on(scenario::BackendName::Sim)) {
            continue;
        }
        let checked = loaded.map_err(backend_sim::SimError::from).and_then(scenario::check);
        match checked {
            Ok(c) if c.passed() => {}
            Ok(c) => failures += &c.render(),
            Err(e) => failures += &format!("{}: {e}\n", path.display()),
        }
    }
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn the_shipped_scenarios_cover_each_spec_rule_visible_at_this_level() {
    let mut rules = Vec::new();
    for path in shipped() {
        rules.extend(scenario::load(&path).unwrap().rules);
    }
    for rule in ["L-3", "L-5", "L-8", "L-9", "L-10", "L-12", "L-14", "L-15", "S-7"] {
        assert!(rules.iter().any(|r| r == rule), "no scenario shows {rule}");
    }
}

fn queued_launch_with(expect: &str) -> Scenario {
    let text = format!(
        "name = \"deliberately wrong\"\nprofile = \"a2a3\"\n[workload]\nruns = 3\n{expect}"
    );
    scenario::parse("wrong.toml", &text).unwrap()
}

#[test]
fn a_wrong_expectation_fails_with_a_readable_diff() {
    let scenario = queued_launch_with(
        "[expect]\nlane = \"lost\"\naicore_streams_created = 1\noutcomes = [\"run 1: ok\", \"run 2: failed\", \"run 3: ok\"]\n",
    );
    let checked = scenario::check(scenario).unwrap();
    assert!(!checked.passed());
    let text = checked.render();
    assert!(text.contains("FAIL  wrong.toml  deliberately wrong: 2 expectations differ"), "{text}");
    assert!(text.contains("lane: expected lost, got closed"), "{text}");
    assert!(text.contains("outcomes (- expected, + got):"), "{text}");
    assert!(text.contains("      run 1: ok\n"), "matching lines are shown unmarked:\n{text}");
    assert!(text.contains("    - run 2: failed\n    + run 2: ok\n"), "{text}");
    assert!(text.contains("reproduce: cargo run --release -- check wrong.toml"), "{text}");
}

#[test]
fn an_expected_latch_that_the_headers_do_not_hold_shows_in_the_diff() {
    let checked = scenario::check(queued_launch_with(
        "[[fault]]\nkind = \"latch\"\ncode = \"READY_QUEUE_OVERFLOW\"\nruns = [2]\nthreads = [0, 4]\n\
         [expect]\nlatches = [\"run 2: sched_error_code=104 sched_error_thread=4 sched_error_bitmap=0x11\"]\n",
    ))
    .unwrap();
    let text = checked.render();
    assert!(
        text.contains(
            "  - run 2: sched_error_code=104 sched_error_thread=4 sched_error_bitmap=0x11\n    \
             + run 2: sched_error_code=104 sched_error_thread=0 sched_error_bitmap=0x11"
        ),
        "the first writer is thread 0, not 4:\n{text}"
    );
}

#[test]
fn missing_and_extra_outcomes_show_in_the_diff() {
    let checked =
        scenario::check(queued_launch_with("[expect]\noutcomes = [\"run 1: ok\"]\n")).unwrap();
    let text = checked.render();
    assert!(text.contains("    + run 2: ok\n    + run 3: ok"), "{text}");
    let checked = scenario::check(queued_launch_with(
        "[expect]\noutcomes = [\"run 1: ok\", \"run 2: ok\", \"run 3: ok\", \"run 4: ok\"]\n",
    ))
    .unwrap();
    assert!(checked.render().contains("    - run 4: ok"));
}

#[test]
fn an_expected_cause_is_compared_only_as_far_as_it_is_written() {
    let faults = "[[fault]]\nkind = \"latch\"\ncode = 1\nruns = [2]\n";
    for line in [
        "run 2: failed",
        "run 2: failed (latched-change-and-rerun)",
        "run 2: failed (latched-change-and-rerun: SCOPE_DEADLOCK)",
    ] {
        let expect =
            format!("{faults}[expect]\noutcomes = [\"run 1: ok\", \"{line}\", \"run 3: ok\"]\n");
        assert!(scenario::check(queued_launch_with(&expect)).unwrap().passed(), "{line}");
    }
    let expect = format!(
        "{faults}[expect]\noutcomes = [\"run 1: ok\", \"run 2: failed (latched-change-and-rerun: HEAP_RING_DEADLOCK)\", \"run 3: ok\"]\n"
    );
    assert!(!scenario::check(queued_launch_with(&expect)).unwrap().passed());
}

#[test]
fn a_scenario_runs_on_every_backend_unless_it_names_them_with_a_reason() {
    use backend_sim::scenario::BackendName;
    let all = scenario::parse("all.toml", "name = \"x\"\n[workload]\nruns = 1").unwrap();
    assert_eq!(all.backends, BackendName::ALL);
    assert!(all.runs_on(BackendName::Acl));
    let sim_only = scenario::parse(
        "sim.toml",
        "name = \"x\"\nbackends = [\"sim\"]\nbackends_reason = \"a fault rate\"\n[workload]\nruns = 1",
    )
    .unwrap();
    assert!(sim_only.runs_on(BackendName::Sim));
    assert!(!sim_only.runs_on(BackendName::Acl));
    assert_eq!(sim_only.backends_reason.as_deref(), Some("a fault rate"));
}

#[test]
fn bad_scenario_files_get_errors_that_name_the_problem_and_the_fix() {
    let cases = [
        ("name = \"x\"\n[workload\nruns = 1", "not a valid scenario"),
        ("name = \"x\"\nprofile = \"a9\"\n[workload]\nruns = 1", "unknown profile 'a9'; use a2a3"),
        ("name = \"x\"\n[workload]\nruns = 0", "give at least one run"),
        ("name = \"x\"\n[workload]\nruns = 1\ndevice_us = -3.0", "not a positive time"),
        ("name = \"x\"\n[workload]\nruns = 1\ndevice_us = 1e12", "completion timeout"),
        (
            "name = \"x\"\n[workload]\nruns = 1\n[[fault]]\nkind = \"melt\"",
            "unknown fault kind 'melt'; use one of",
        ),
        (
            "name = \"x\"\n[workload]\nruns = 1\n[[fault]]\nkind = \"hang\"\nruns = [1]\nrate = 0.5",
            "keep one",
        ),
        ("name = \"x\"\n[workload]\nruns = 1\nrunz = 2", "unknown field `runz`"),
        ("name = \"x\"\n[workload]\nruns = 1\n[costs]\nwarp = 1.0", "unknown cost 'warp'"),
        (
            "name = \"x\"\n[workload]\nruns = 1\n[expect]\noutcomes = [\"run one: ok\"]",
            "write e.g. \"run 2: ok\"",
        ),
        (
            "name = \"x\"\n[workload]\nruns = 1\n[expect]\nlane = \"gone\"",
            "use \"closed\" or \"lost\"",
        ),
        ("name = \"x\"\ndepth = 3\n[workload]\nruns = 1", "launch depth 3 is outside 1..=2"),
        (
            "name = \"x\"\nbackends = [\"npu\"]\n[workload]\nruns = 1",
            "unknown backend 'npu' in backends; use sim or acl",
        ),
        ("name = \"x\"\nbackends = [\"sim\"]\n[workload]\nruns = 1", "say why in backends_reason"),
        (
            "name = \"x\"\nbackends = []\nbackends_reason = \"r\"\n[workload]\nruns = 1",
            "runs the scenario nowhere",
        ),
        ("name = \"x\"\nbackends = [\"sim\", \"sim\"]\n[workload]\nruns = 1", "listed twice"),
        (
            "name = \"x\"\nbackends_reason = \"r\"\n[workload]\nruns = 1",
            "backends_reason without backends",
        ),
    ];
    for (text, needle) in cases {
        let err = scenario::parse("bad.toml", text).unwrap_err().to_string();
        assert!(err.starts_with("bad.toml: "), "{err}");
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
    }
}
