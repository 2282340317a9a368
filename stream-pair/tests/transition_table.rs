//! The rendered transition table is what reviewers read, committed once as
//! docs/state-machines/stream-pair.md (`cargo xtask codegen`): a behaviour change shows up
//! as a diff of that doc. src/table.rs's tests check that it renders every (state, input)
//! pair once.

#[test]
fn the_committed_transition_table_is_the_rendering() {
    let path = "docs/state-machines/stream-pair.md";
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let doc = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let body = doc.split_once("-->\n\n").map_or("", |(_, body)| body);
    let want = format!("{}\n", stream_pair::transition_table().trim_end());
    if body != want {
        let at = body
            .lines()
            .zip(want.lines())
            .position(|(have, want)| have != want)
            .unwrap_or_else(|| body.lines().count().min(want.lines().count()));
        panic!(
            "{path} is not the rendering from its body's line {}: run `cargo xtask codegen` \
             and review the diff",
            at + 1
        );
    }
}
