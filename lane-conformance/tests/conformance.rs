//! The conformance suite: every scenario file under scenarios/ runs on the simulator
//! (virtual time) and on backend-acl over the fake libascendcl (real time), and each must
//! meet the same expectations. Real-time runs assert outcomes and orderings only.

use backend_sim::scenario::{self, BackendName};
use lane_conformance::suite::{failures_on, rarer_faults_against_the_simulator, scenarios};
use lane_conformance::{AclOnFake, Backend, Sim, SimWithCopies, SimWithHeader, check};
use lane_core::CopyPath;
use lane_core::status_latch::HeaderLayout;

fn all_scenarios() -> Vec<backend_sim::scenario::Scenario> {
    scenarios().unwrap_or_else(|e| panic!("{e}"))
}

/// Every scenario ran (at least ten) on `backend` (named `on`) and met its expectations.
fn assert_all_met(backend: &mut dyn Backend, on: &str) {
    let (ran, failures) = failures_on(backend);
    assert!(ran >= 10, "only {ran} scenarios ran on {on}");
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_scenario_meets_its_expectations_on_the_simulator() {
    assert_all_met(&mut Sim, "the simulator");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_simulator_with_copies_on_the_streams() {
    assert_all_met(&mut SimWithCopies(CopyPath::OnStream), "the simulator");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake_with_copies_on_the_streams()
 {
    assert_all_met(
        &mut AclOnFake { copies: Some(CopyPath::OnStream), ..AclOnFake::default() },
        "backend-acl over the fake",
    );
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_simulator_with_the_host_build_graph_header() {
    // SPEC §5.1: the kernels latch in host_build_graph's 256-byte layout and the lane reads it
    // there; nothing a scenario expects depends on the layout.
    assert_all_met(&mut SimWithHeader(HeaderLayout::HostBuildGraph), "the simulator");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake_with_the_host_build_graph_header()
 {
    assert_all_met(
        &mut AclOnFake { header: Some(HeaderLayout::HostBuildGraph), ..AclOnFake::default() },
        "backend-acl over the fake",
    );
}

#[test]
fn every_scenario_meets_the_same_expectations_on_backend_acl_over_the_fake() {
    assert_all_met(&mut AclOnFake::default(), "backend-acl over the fake");
}

#[test]
fn every_scenario_meets_the_same_expectations_on_the_fakes_last_device_and_touches_no_other() {
    // The lane's faults are armed on device 15 and the suite's leak check fails a run whose
    // calls reached any other device (device 0 included, where the legacy rules live).
    assert_all_met(
        &mut AclOnFake { device_id: 15, ..AclOnFake::default() },
        "backend-acl over the fake's device 15",
    );
}

#[test]
fn a_scenario_left_off_a_backend_says_why() {
    for scenario in all_scenarios() {
        if scenario.backends != BackendName::ALL {
            assert!(
                scenario.backends_reason.as_deref().is_some_and(|r| !r.trim().is_empty()),
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
/// upload failure, an AICPU exception; `lane_conformance::suite::RARER_FAULTS`): both backends
/// must give every item the same outcome line, cause and code included, and the same figures.
#[test]
fn the_runners_own_faults_and_the_rarer_device_faults_end_the_same_on_both_backends() {
    let failures = rarer_faults_against_the_simulator(&mut AclOnFake::default());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
