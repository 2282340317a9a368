//! The section of docs/performance.md that `cargo xtask fake-bench` writes as Markdown (the
//! three arms lane-conformance's `fake-bench` binary prints), and the one function that puts
//! it into the file: between its markers, one blank line between blocks.

/// A section's markers: the text between them is the section's own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Section {
    /// The begin marker, a whole line.
    pub(crate) begin: &'static str,
    /// The end marker, a whole line.
    pub(crate) end: &'static str,
}

/// lane-conformance's three arms through the Rust API (its `fake-bench` binary prints the
/// section).
pub(crate) const ARMS: Section = Section {
    begin: "<!-- fake-bench: begin (written by `cargo xtask fake-bench`) -->",
    end: "<!-- fake-bench: end -->",
};

/// `doc` with `section`'s block (its markers included) replaced by one holding `text`, or
/// that block appended when the file has none. Text after the block stays one blank line
/// below it.
pub(crate) fn splice(doc: &str, section: Section, text: &str) -> String {
    let Section { begin, end } = section;
    let block = format!("{begin}\n\n{text}\n{end}\n");
    match (doc.find(begin), doc.find(end)) {
        (Some(start), Some(stop)) if stop > start => {
            let rest = doc[stop + end.len()..].trim_start_matches('\n');
            let gap = if rest.is_empty() { "" } else { "\n" };
            format!("{}{block}{gap}{rest}", &doc[..start])
        }
        _ => format!("{}\n\n{block}", doc.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_appended_once_then_replaced_in_place() {
        let once = splice("# P\n\nbody\n", ARMS, "first\n");
        assert!(once.starts_with("# P\n\nbody\n\n") && once.contains(ARMS.begin));
        let twice = splice(&format!("{once}\n## Later\n"), ARMS, "second\n");
        assert!(!twice.contains("first") && twice.contains("second"));
        assert!(twice.contains("## Later"), "text after the block stays");
        assert_eq!(twice.matches(ARMS.begin).count(), 1);
    }

    #[test]
    fn text_after_a_section_stays_one_blank_line_below_it() {
        let doc = format!(
            "# P\n\n{}\n\nold\n{}\n\n<!-- next -->\n",
            ARMS.begin, ARMS.end
        );
        let spliced = splice(&doc, ARMS, "new\n");
        assert!(
            spliced.contains(&format!("{}\n\n<!-- next -->\n", ARMS.end)),
            "{spliced}"
        );
        assert_eq!(
            splice(&spliced, ARMS, "new\n"),
            spliced,
            "the same text changes nothing"
        );
    }
}
