//! The mailbox's own tests, beside `mailbox.rs` rather than in it: the loom model
//! (tests/model.rs) compiles `mailbox.rs` against loom's primitives, outside which these
//! plain tests cannot run.

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::WaitError;
use crate::mailbox::{Delivers, Mailbox};
/// A lane whose outcomes are their items' sequence numbers, delivered as pushed.
struct Fake(VecDeque<u64>);

impl Delivers for Fake {
    type Outcome = u64;
    fn take_outcome(&mut self) -> Option<u64> {
        self.0.pop_front()
    }
    fn seq(outcome: &u64) -> u64 {
        *outcome
    }
    type Work = ();
    type Answer = ();
    type Wait = ();
    type Waited = ();
}

#[test]
fn a_wait_for_an_outcome_the_destroy_took_is_lost_not_already_taken() {
    let mailbox = Mailbox::new(Fake(VecDeque::new()), false, 1, 4);
    for seq in 1..=2 {
        mailbox
            .command(false, |lane| {
                lane.0.push_back(seq);
                Ok(((), Some(seq)))
            })
            .unwrap();
    }
    assert_eq!(mailbox.wait(1, None).unwrap(), 1);
    // The destroy drains item 2's outcome while a wait for it was woken for it.
    assert_eq!(mailbox.take_untaken(), vec![2]);
    let now = Some(Instant::now());
    assert!(
        matches!(mailbox.wait(2, now), Err(WaitError::Lost { item: 2, .. })),
        "{:?}",
        mailbox.wait(2, now)
    );
    assert!(matches!(mailbox.try_take(2), Some(Err(WaitError::Lost { item: 2, .. }))));
    // The outcome the caller took itself stays taken.
    assert!(matches!(mailbox.wait(1, now), Err(WaitError::AlreadyTaken { item: 1 })));
}
