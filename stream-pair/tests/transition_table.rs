//! The rendered transition table is what reviewers read: a behaviour change shows up as a
//! diff of this snapshot (and of docs/state-machines/stream-pair.md).

#[test]
fn transition_table_snapshot() {
    insta::assert_snapshot!("transition_table", stream_pair::transition_table());
}
