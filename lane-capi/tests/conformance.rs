//! The conformance suite through the runtime's device table (L-22): every scenario file that
//! runs on the fake libascendcl runs here a third time, the lane's device a `TableDevice` over
//! a `RunLaneDeviceOps` table whose entries forward to the fake (tests/common/table.rs, the
//! table the other fake-backed tests of this crate run through), with the same expectations,
//! the same fault rules on the same fake device, the same leak check and the same check that
//! no other device of the fake saw a call as backend-acl's `AclDevice` meets in
//! lane-conformance (`AclOnFake`, through `lane_conformance::on_fake`). So the table is proven
//! by the scenarios that prove the built-in backend.
//!
//! The arm lives here rather than in lane-conformance: the forwarding table is `unsafe` C
//! entries, which only the FFI crates may hold, and lane-capi's tests have it already;
//! lane-conformance stays independent of lane-capi (a dev-dependency this way round).

mod common;

use backend_sim::scenario::{BackendName, Observed, Scenario};
use common::table;
use lane_conformance::suite::{failures_on, rarer_faults_against_the_simulator, scenarios};
use lane_conformance::{AclOnFake, Backend, ConformanceError, check, on_fake};
use lane_core::CopyPath;
use lane_core::status_latch::HeaderLayout;
use run_lane::device_ops::{DeviceOps, TableDevice};

/// The lane on a `TableDevice` over the forwarding table of one fake device, set up as
/// [`AclOnFake`] is (its timeouts, copy path and device id); with `broken`, that entry of the
/// table returns 107000 from its second call on, instead of calling the fake.
#[derive(Clone, Copy, Debug, Default)]
struct TableOnFake {
    setup: AclOnFake,
    broken: Option<table::Entry>,
}

impl TableOnFake {
    fn with(setup: AclOnFake) -> Self {
        Self { setup, broken: None }
    }
}

impl Backend for TableOnFake {
    /// The fake's scenarios: every one that runs on backend-acl over the fake runs here.
    fn name(&self) -> BackendName {
        BackendName::Acl
    }

    fn run(&mut self, scenario: &Scenario) -> Result<(Observed, Vec<String>), ConformanceError> {
        let repro = "cargo test -p lane-capi --test conformance -- --nocapture";
        let broken = self.broken;
        on_fake(scenario, self.setup, repro, |_session, device_id, profile| {
            // A table lane programs no op timeout: the runtime that owns the device sets the
            // fake's, as backend-acl does at its open.
            table::set_op_timeout(profile.device_op_timeout_ns() / 1_000_000);
            let forward = table::forward(device_id);
            forward.clear();
            if let Some(entry) = broken {
                forward.fail(entry, 107_000, 1, u32::MAX);
            }
            // Every entry, the pinned copies' too: a scenario on the streams' copies uses them.
            let ops = DeviceOps::new(&table::table_with_pinned(device_id), false)
                .map_err(|e| ConformanceError::Open(format!("{e:?}")))?;
            TableDevice::open(ops, device_id).map_err(|(code, text)| {
                ConformanceError::Open(format!("the table's bind returned {code}: {text:?}"))
            })
        })
    }
}

/// The table over fake device `device_id`. Each test of this file has its own device: the
/// tests run in parallel, and a test reads its device's call counts after its last scenario,
/// when another test's scenarios may already run (each scenario holds the fake alone).
fn on_device(device_id: i32) -> TableOnFake {
    TableOnFake::with(AclOnFake { device_id, ..AclOnFake::default() })
}

/// Runs every scenario of the fake on `backend`; each must pass, and none may be left out.
fn every_fake_scenario_passes_on(backend: TableOnFake) {
    let all = scenarios().unwrap_or_else(|e| panic!("{e}"));
    let on_the_fake = all.iter().filter(|s| s.runs_on(BackendName::Acl)).count();
    let (ran, failures) = failures_on(&mut { backend });
    assert!(ran >= 10, "only {ran} scenarios ran through the table");
    let every = "every scenario of the fake runs through the table";
    assert_eq!(ran, on_the_fake, "{every}");
    assert!(failures.is_empty(), "\n{failures}");
    // The last scenario's lane made its calls through the table: its waits, and with copies
    // on the streams its pinned copies.
    let forward = table::forward(backend.setup.device_id);
    let waits = forward.calls(table::Entry::SynchronizeEvent);
    assert!(waits > 0, "no wait through the table");
    let copies = forward.calls(table::Entry::MemcpyAsync);
    if backend.setup.copies == Some(CopyPath::OnStream) {
        assert!(copies > 0, "no pinned copy");
    } else {
        assert_eq!(copies, 0, "{:?}", backend.setup);
    }
}

#[test]
fn every_scenario_meets_the_same_expectations_through_a_device_table_over_the_fake() {
    every_fake_scenario_passes_on(TableOnFake::default());
}

#[test]
fn every_scenario_meets_the_same_expectations_through_a_device_table_with_copies_on_the_streams() {
    every_fake_scenario_passes_on(TableOnFake::with(AclOnFake {
        copies: Some(CopyPath::OnStream),
        device_id: 1,
        ..AclOnFake::default()
    }));
}

#[test]
fn every_scenario_meets_the_same_expectations_through_the_table_of_the_fakes_last_device_and_touches_no_other()
 {
    every_fake_scenario_passes_on(TableOnFake::with(AclOnFake {
        device_id: 15,
        ..AclOnFake::default()
    }));
}

#[test]
fn every_scenario_meets_the_same_expectations_through_the_table_with_the_host_build_graph_header() {
    // SPEC §5.1: the fake's kernels latch in host_build_graph's 256-byte layout and the lane,
    // on the table, reads it there; nothing a scenario expects depends on the layout.
    every_fake_scenario_passes_on(TableOnFake::with(AclOnFake {
        header: Some(HeaderLayout::HostBuildGraph),
        device_id: 4,
        ..AclOnFake::default()
    }));
}

#[test]
fn the_runners_own_faults_and_the_rarer_device_faults_end_through_the_table_as_on_the_simulator() {
    let failures = rarer_faults_against_the_simulator(&mut on_device(2));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_wrong_expectation_or_a_broken_table_entry_fails_through_the_table() {
    // The arm can fail: a wrong expectation is caught, and so is a table whose record read
    // (`memcpy_from_device`, the completion waiter's) fails from its second call on, whose
    // runs then fail instead of ending ok.
    let text = "name = \"deliberately wrong\"\n[workload]\nruns = 2\n\
                [expect]\noutcomes = [\"run 1: ok\", \"run 2: failed\"]\n";
    let wrong = backend_sim::scenario::parse("wrong.toml", text).unwrap();
    let mismatches = check(&mut on_device(3), &wrong).unwrap();
    let text = wrong.render(Some(BackendName::Acl), &mismatches);
    assert!(text.contains("    - run 2: failed\n    + run 2: ok"), "{text}");
    let right = backend_sim::scenario::parse(
        "right.toml",
        "name = \"two ok runs\"\n[workload]\nruns = 2\n\
         [expect]\noutcomes = [\"run 1: ok\", \"run 2: ok\"]\n",
    )
    .unwrap();
    let mismatches = check(&mut on_device(3), &right).unwrap();
    assert!(mismatches.is_empty(), "{mismatches:?}");
    let mut broken = TableOnFake { broken: Some(table::Entry::MemcpyFromDevice), ..on_device(3) };
    let mismatches = check(&mut broken, &right).unwrap();
    let text = right.render(Some(BackendName::Acl), &mismatches);
    assert!(text.contains("    - run 2: ok"), "{text}");
}
