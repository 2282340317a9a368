//! Unit tests that need the private representation: `check_invariants` catches each kind
//! of corrupted state, and the transition table's named states are sound. The behaviour
//! tests live in `tests/`.

use super::*;

/// Depth 2, both streams live (AICPU h1, AICore h2), `queued` owners submitted.
fn pair_with(queued: &[u64]) -> StreamPair {
    let mut pair = open(LaunchDepth(2));
    for &run in queued {
        assert_eq!(pair.apply(Input::Submit(Owner(run))), Ok(Step::Submitted));
    }
    assert_eq!(pair.check_invariants(), Ok(()));
    pair
}

/// Both streams live (AICPU h1, AICore h2), nothing queued.
fn open(depth: LaunchDepth) -> StreamPair {
    let mut pair = StreamPair::new(depth);
    for input in table::OPEN {
        assert!(pair.apply(*input).is_ok(), "{input} refused");
    }
    pair
}

#[test]
fn check_invariants_reports_each_kind_of_corruption() {
    let stale = |state| Stream { state, stale_since: Some(0), unproven: false };
    let cases: Vec<(&str, StreamPair, InvariantViolation)> = vec![
        (
            "depth 0",
            {
                let mut pair = pair_with(&[]);
                pair.depth = LaunchDepth(0);
                pair
            },
            InvariantViolation::DepthOutOfRange { depth: 0 },
        ),
        (
            "queue over depth",
            {
                let mut pair = pair_with(&[1, 2]);
                pair.submissions.push(Owner(3));
                pair.accepted = 3;
                pair
            },
            InvariantViolation::QueueOverDepth { len: 3, depth: 2 },
        ),
        (
            "queue on the heap",
            {
                let mut pair = pair_with(&[1]);
                pair.submissions.grow(2 * usize::from(MAX_DEPTH));
                pair
            },
            InvariantViolation::QueueSpilled,
        ),
        (
            "owner twice",
            {
                let mut pair = pair_with(&[1]);
                pair.submissions.push(Owner(1));
                pair
            },
            InvariantViolation::DuplicateOwner { owner: Owner(1) },
        ),
        (
            "queued on a creating stream",
            {
                let mut pair = pair_with(&[1]);
                pair.aicore.state = StreamState::Creating;
                pair
            },
            InvariantViolation::QueuedWithoutStream { role: Role::Aicore },
        ),
        (
            "destroy under a queued submission",
            {
                let mut pair = pair_with(&[1]);
                pair.aicore = Stream {
                    state: StreamState::Destroying(StreamHandle(2)),
                    stale_since: Some(1),
                    unproven: false,
                };
                pair
            },
            InvariantViolation::DestroyWhileQueued { role: Role::Aicore },
        ),
        (
            "unproven mark on a fresh stream",
            {
                let mut pair = pair_with(&[]);
                pair.aicore.unproven = true;
                pair
            },
            InvariantViolation::UnprovenWithoutStale { role: Role::Aicore },
        ),
        (
            "stale AICPU under a queued submission",
            {
                let mut pair = pair_with(&[1]);
                pair.aicpu.stale_since = Some(1);
                pair
            },
            InvariantViolation::StaleAicpuInUse,
        ),
        (
            "submitted after the replacement became pending",
            {
                let mut pair = pair_with(&[1, 2]);
                pair.aicore.stale_since = Some(1);
                pair
            },
            InvariantViolation::SubmittedWhileStale { role: Role::Aicore },
        ),
        (
            "stale mark on a missing stream",
            {
                let mut pair = StreamPair::new(LaunchDepth(2));
                pair.aicore = stale(StreamState::Absent);
                pair
            },
            InvariantViolation::StaleWithoutStream { role: Role::Aicore },
        ),
        (
            "destroying a fresh stream",
            {
                let mut pair = pair_with(&[]);
                pair.aicpu.state = StreamState::Destroying(StreamHandle(1));
                pair
            },
            InvariantViolation::DestroyingFreshStream { role: Role::Aicpu },
        ),
        (
            "one handle for both streams",
            {
                let mut pair = pair_with(&[]);
                pair.aicore.state = StreamState::Live(StreamHandle(1));
                pair
            },
            InvariantViolation::SharedHandle { handle: StreamHandle(1) },
        ),
        (
            "teardown with a queue",
            {
                let mut pair = pair_with(&[1]);
                pair.teardown = Some(Teardown { first_error: None });
                pair
            },
            InvariantViolation::TeardownWithQueue,
        ),
        (
            "teardown during a create",
            {
                let mut pair = pair_with(&[]);
                pair.aicpu = stale(StreamState::Destroying(StreamHandle(1)));
                pair.aicore.state = StreamState::Creating;
                pair.teardown = Some(Teardown { first_error: None });
                pair
            },
            InvariantViolation::TeardownWhileCreating { role: Role::Aicore },
        ),
        (
            "teardown with nothing to wait for",
            {
                let mut pair = pair_with(&[]);
                pair.teardown = Some(Teardown { first_error: None });
                pair
            },
            InvariantViolation::TeardownNeverFinishes,
        ),
    ];
    for (what, pair, violation) in cases {
        assert_eq!(pair.check_invariants(), Err(violation), "{what}: {pair}");
    }
}

#[test]
fn a_full_fifo_at_max_depth_stays_inline() {
    let mut pair = open(LaunchDepth(MAX_DEPTH));
    for run in 0..u64::from(MAX_DEPTH) {
        assert_eq!(pair.apply(Input::Submit(Owner(run))), Ok(Step::Submitted));
    }
    assert!(!pair.submissions.spilled());
    assert_eq!(pair.check_invariants(), Ok(()));
}

#[test]
fn every_named_table_state_is_reached_without_a_rejection_and_is_distinct() {
    let mut seen: Vec<String> = Vec::new();
    for representative in table::REPRESENTATIVES {
        let mut pair = StreamPair::new(LaunchDepth(table::DEPTH));
        for input in representative.reached_by.iter().flat_map(|inputs| inputs.iter()) {
            let outcome = pair.apply(*input);
            assert!(outcome.is_ok(), "{}: {input} was refused: {outcome:?}", representative.name);
            assert_eq!(pair.check_invariants(), Ok(()), "{}", representative.name);
        }
        let description = pair.to_string();
        assert!(
            !seen.contains(&description),
            "{} repeats the state {description}",
            representative.name
        );
        seen.push(description);
    }
}
