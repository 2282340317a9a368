//! The conformance suite: every scenario file under scenarios/ runs on the simulator
//! (virtual time) and on backend-acl over the fake libascendcl (real time), and each must
//! meet the same expectations. Real-time runs assert outcomes and orderings only.

use std::path::{Path, PathBuf};

use backend_sim::scenario::{self, BackendName, Observed, Scenario};
use lane_conformance::{AclOnFake, Backend, Sim, SimWithCopies, SimWithHeader, check};
use lane_core::CopyPath;
use lane_core::status_latch::HeaderLayout;

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

fn scenarios() -> Vec<Scenario> {
    scenario_files()
        .iter()
        .map(|p| scenario::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Runs every scenario the backend can express; the failures, rendered.
fn failures_on(backend: &mut dyn Backend) -> (usize, String) {
    let mut ran = 0;
    let mut failures = String::new();
    for scenario in scenarios() {
        if !scenario.runs_on(backend.name()) {
            continue;
        }
        ran += 1;
        match check(backend, &scenario) {
            Ok(mismatches) if mismatches.is_empty() => {}
            Ok(mismatches) => failures += &scenario.render(Some(backend.name()), &mismatches),
            Err(e) => failures += &format!("{} [{}]: {e}\n", scenario.path, backend.name().name()),
        }
    }
    (ran, failures)
}

#[test]
fn every_scenario_meets_its_expectations_on_the_simulator() {
    let (ran, failures) = failures_on(&mut Sim);
    assert!(ran >= 10, "only {ran} scenarios ran on the simulator");
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_simulator_with_copies_on_the_streams() {
    let (ran, failures) = failures_on(&mut SimWithCopies(CopyPath::OnStream));
    assert!(ran >= 10, "only {ran} scenarios ran on the simulator");
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake_with_copies_on_the_streams()
 {
    let (ran, failures) = failures_on(&mut AclOnFake {
        copies: Some(CopyPath::OnStream),
        ..AclOnFake::default()
    });
    assert!(
        ran >= 10,
        "only {ran} scenarios ran on backend-acl over the fake"
    );
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_simulator_with_the_host_build_graph_header() {
    // SPEC §5.1: the kernels latch in host_build_graph's 256-byte layout and the lane reads it
    // there; nothing a scenario expects depends on the layout.
    let (ran, failures) = failures_on(&mut SimWithHeader(HeaderLayout::HostBuildGraph));
    assert!(ran >= 10, "only {ran} scenarios ran on the simulator");
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake_with_the_host_build_graph_header()
 {
    let (ran, failures) = failures_on(&mut AclOnFake {
        header: Some(HeaderLayout::HostBuildGraph),
        ..AclOnFake::default()
    });
    assert!(
        ran >= 10,
        "only {ran} scenarios ran on backend-acl over the fake"
    );
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake() {
    let (ran, failures) = failures_on(&mut AclOnFake::default());
    assert!(
        ran >= 10,
        "only {ran} scenarios ran on backend-acl over the fake"
    );
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_fakes_last_device_and_touches_no_other() {
    // The lane's faults are armed on device 15 and the suite's leak check fails a run whose
    // calls reached any other device (device 0 included, where the legacy rules live).
    let (ran, failures) = failures_on(&mut AclOnFake {
        device_id: 15,
        ..AclOnFake::default()
    });
    assert!(
        ran >= 10,
        "only {ran} scenarios ran on backend-acl over the fake's device 15"
    );
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn a_scenario_left_off_a_backend_says_why() {
    for scenario in scenarios() {
        if scenario.backends != BackendName::ALL {
            assert!(
                scenario
                    .backends_reason
                    .as_deref()
                    .is_some_and(|r| !r.trim().is_empty()),
                "{} runs on {:?} without a reason",
                scenario.path,
                scenario.backends
            );
        }
    }
}

#[test]
fn a_wrong_expectation_fails_on_the_fake_too() {
    // The suite can fail: the same wrong line is caught on both backends.
    let text = "name = \"deliberately wrong\"\n[workload]\nruns = 2\n\
                [expect]\noutcomes = [\"run 1: ok\", \"run 2: failed\"]\n";
    let wrong = scenario::parse("wrong.toml", text).unwrap();
    for backend in [&mut Sim as &mut dyn Backend, &mut AclOnFake::default()] {
        let mismatches = check(backend, &wrong).unwrap();
        let text = wrong.render(Some(backend.name()), &mismatches);
        assert!(
            text.contains("    - run 2: failed\n    + run 2: ok"),
            "[{}] {text}",
            backend.name().name()
        );
    }
}

/// Faults no shipped scenario uses (the runner's own failures, every create failing, an
/// upload failure, an AICPU exception): both backends must give every item the same
/// outcome line, cause and code included.
#[test]
fn the_runners_own_faults_and_the_rarer_device_faults_end_the_same_on_both_backends() {
    let cases = [
        "[workload]\nruns = 4\n[[fault]]\nkind = \"prepare\"\ncode = 107000\nruns = [2]\n",
        "[workload]\nruns = 4\n[[fault]]\nkind = \"copy-back\"\ncode = 107000\nruns = [2]\n\
         [[fault]]\nkind = \"validation\"\nruns = [3]\n",
        "[workload]\nruns = 4\n[[fault]]\nkind = \"prepare-incompatible\"\nruns = [2]\n",
        "[workload]\nruns = 4\npublish_after = [2]\n[[fault]]\nkind = \"upload\"\ncode = 107000\ncalls = [1]\n",
        "[workload]\nruns = 4\n[[fault]]\nkind = \"exception\"\ncode = \"ACL_ERROR_RT_AICPU_EXCEPTION\"\nruns = [2]\n",
        "[workload]\nruns = 3\n[[fault]]\nkind = \"stream-create\"\ncode = 207008\nalways = true\n",
        "[workload]\nruns = 3\n[[fault]]\nkind = \"latch\"\ncode = \"HEAP_RING_DEADLOCK\"\nalways = true\n",
        "[workload]\nruns = 4\n[[fault]]\nkind = \"exception\"\ncode = \"ACL_ERROR_RT_AICORE_EXCEPTION\"\nruns = [2]\n",
        "[workload]\nruns = 4\n[[fault]]\nkind = \"latch\"\ncode = \"SCOPE_DEADLOCK\"\nruns = [1]\n",
    ];
    for (i, case) in cases.iter().enumerate() {
        let text = format!("name = \"case {i}\"\n{case}");
        let scenario = scenario::parse(&format!("case-{i}.toml"), &text).unwrap();
        let (sim, _) = Sim.run(&scenario).unwrap();
        let (acl, own) = AclOnFake::default().run(&scenario).unwrap();
        assert!(own.is_empty(), "case {i}: {own:?}");
        assert_eq!(
            sim.outcome_lines(),
            acl.outcome_lines(),
            "case {i}:\n{case}"
        );
        let figures = |o: &Observed| {
            (
                o.end,
                o.not_accepted,
                o.resets,
                o.queued_launches,
                o.aicore_streams_created,
            )
        };
        assert_eq!(figures(&sim), figures(&acl), "case {i}:\n{case}");
        // The fault fired: without it the same workload ends differently.
        let (workload, _) = case.split_once("[[fault]]").unwrap();
        let clean =
            scenario::parse("clean.toml", &format!("name = \"clean\"\n{workload}")).unwrap();
        let (clean, _) = Sim.run(&clean).unwrap();
        assert!(
            clean.outcome_lines() != sim.outcome_lines() || figures(&clean) != figures(&sim),
            "case {i} changed nothing:\n{case}"
        );
    }
}
