//! `cargo xtask docs-budget`: the prose budget of the hand-written docs (issue 46), measured.
//!
//! The hand-written docs are `docs/*.md` and `docs/decisions/*.md`, less the generated ones:
//! `docs/status-codes.md`, everything under `docs/state-machines/`, and the sections of
//! `docs/performance.md` between `<!-- docs/data/NAME.json: begin ... -->` and
//! `<!-- docs/data/NAME.json: end -->` (all rendered by `cargo xtask codegen`).
//!
//! Prose is what is left after dropping fenced code blocks, table rows (lines that start with
//! `|`), headings, HTML comments and blank lines. A word is a whitespace-separated token with a
//! letter or digit in it. A sentence ends at `.`, `?` or `!` before whitespace, at the end of a
//! paragraph, and at the end of a list item (each item is a sentence or more). A doc's median
//! is its middle sentence's length (the upper one of two).
//!
//! The budgets, each checked by a test of its own:
//! `docs/ARCHITECTURE.md` at most [`ARCHITECTURE_WORDS`] words, every doc's median sentence
//! under [`MEDIAN_SENTENCE`] words, all the docs together at most [`TOTAL_WORDS`] words.

use std::fs;
use std::path::Path;

use crate::project_root;

/// The most prose words `docs/ARCHITECTURE.md` may hold.
pub(crate) const ARCHITECTURE_WORDS: usize = 3_000;
/// Every hand-written doc's median sentence is shorter than this many words.
pub(crate) const MEDIAN_SENTENCE: usize = 20;
/// The most prose words all the hand-written docs may hold together.
pub(crate) const TOTAL_WORDS: usize = 20_000;

/// One doc's figures.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Figures {
    /// Path relative to the workspace root.
    pub(crate) path: String,
    /// Prose words.
    pub(crate) words: usize,
    /// Sentences.
    pub(crate) sentences: usize,
    /// The median sentence's length in words (0 for a doc with no sentence).
    pub(crate) median: usize,
}

/// The words of each sentence of one document's prose.
pub(crate) fn sentence_lengths(text: &str) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut unit = String::new();
    let mut fenced = false;
    let mut generated = false;
    let flush = |unit: &mut String, lengths: &mut Vec<usize>| {
        lengths.extend(sentences(unit));
        unit.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            flush(&mut unit, &mut lengths);
            continue;
        }
        if trimmed.starts_with("<!-- docs/data/") {
            generated = trimmed.contains(": begin");
            flush(&mut unit, &mut lengths);
            continue;
        }
        if fenced || generated {
            continue;
        }
        let list_item = trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        let not_prose = trimmed.is_empty() || trimmed.starts_with(['|', '#']);
        let not_prose = not_prose || trimmed.starts_with("<!--");
        if not_prose || list_item {
            flush(&mut unit, &mut lengths);
        }
        if not_prose {
            continue;
        }
        unit.push(' ');
        unit.push_str(trimmed);
    }
    flush(&mut unit, &mut lengths);
    lengths
}

/// The word counts of the sentences of one paragraph or list item.
fn sentences(unit: &str) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut words = 0;
    for token in unit.split_whitespace() {
        if token.chars().any(char::is_alphanumeric) {
            words += 1;
        }
        let end = token.trim_end_matches(['*', '_', ')', '"', '\'', '`', ']']);
        if words > 0 && (end.ends_with('.') || end.ends_with('?') || end.ends_with('!')) {
            lengths.push(words);
            words = 0;
        }
    }
    if words > 0 {
        lengths.push(words);
    }
    lengths
}

/// One document's figures from its text.
pub(crate) fn figures(path: &str, text: &str) -> Figures {
    let mut lengths = sentence_lengths(text);
    lengths.sort_unstable();
    Figures {
        path: path.to_owned(),
        words: lengths.iter().sum(),
        sentences: lengths.len(),
        median: lengths.get(lengths.len() / 2).copied().unwrap_or(0),
    }
}

/// The hand-written docs, relative to the workspace root, sorted.
pub(crate) fn hand_written_docs(root: &Path) -> Vec<String> {
    let mut docs = Vec::new();
    for dir in ["docs", "docs/decisions"] {
        let entries = fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
        for entry in entries {
            let name = entry.expect("a docs entry").file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".md") && !(dir == "docs" && name == "status-codes.md") {
                docs.push(format!("{dir}/{name}"));
            }
        }
    }
    docs.sort();
    docs
}

/// Every hand-written doc's figures.
pub(crate) fn all_figures() -> Vec<Figures> {
    let root = project_root();
    hand_written_docs(&root)
        .iter()
        .map(|path| {
            let text =
                fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
            figures(path, &text)
        })
        .collect()
}

/// `docs/ARCHITECTURE.md` over its word budget, as a line naming the figure.
pub(crate) fn architecture_over(all: &[Figures]) -> Option<String> {
    all.iter().find(|d| d.path == "docs/ARCHITECTURE.md" && d.words > ARCHITECTURE_WORDS).map(|d| {
        format!("{}: {} prose words, over the {ARCHITECTURE_WORDS}-word budget", d.path, d.words)
    })
}

/// Each doc whose median sentence is not under the bound, as a line naming the figure.
pub(crate) fn medians_over(all: &[Figures]) -> Vec<String> {
    all.iter()
        .filter(|d| d.median >= MEDIAN_SENTENCE)
        .map(|d| {
            format!("{}: median sentence {} words, not under {MEDIAN_SENTENCE}", d.path, d.median)
        })
        .collect()
}

/// The docs together over their word budget, as a line naming the figure.
pub(crate) fn total_over(all: &[Figures]) -> Option<String> {
    let total: usize = all.iter().map(|d| d.words).sum();
    (total > TOTAL_WORDS).then(|| {
        format!(
            "the hand-written docs hold {total} prose words together, over the \
             {TOTAL_WORDS}-word budget"
        )
    })
}

/// What breaks the budgets, one line each (empty when they hold).
pub(crate) fn violations(all: &[Figures]) -> Vec<String> {
    let mut out: Vec<String> = architecture_over(all).into_iter().collect();
    out.extend(medians_over(all));
    out.extend(total_over(all));
    out
}

/// `cargo xtask docs-budget`: prints each doc's figures and the total; fails when a budget
/// is broken.
pub(crate) fn run() -> Result<(), String> {
    let all = all_figures();
    println!("{:<62} {:>6} {:>9} {:>6}", "doc", "words", "sentences", "median");
    for doc in &all {
        println!("{:<62} {:>6} {:>9} {:>6}", doc.path, doc.words, doc.sentences, doc.median);
    }
    let total: usize = all.iter().map(|d| d.words).sum();
    println!(
        "total prose words: {total} (budget {TOTAL_WORDS}); ARCHITECTURE.md at most \
         {ARCHITECTURE_WORDS}; every median under {MEDIAN_SENTENCE}"
    );
    let broken = violations(&all);
    if broken.is_empty() { Ok(()) } else { Err(broken.join("\n")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEE: &str = "`cargo xtask docs-budget` prints every doc's figures";

    #[test]
    fn architecture_md_holds_at_most_3000_prose_words() {
        if let Some(over) = architecture_over(&all_figures()) {
            panic!("{over} ({SEE})");
        }
    }

    #[test]
    fn every_hand_written_doc_has_a_median_sentence_under_20_words() {
        let over = medians_over(&all_figures());
        assert!(over.is_empty(), "{} ({SEE})", over.join("\n"));
    }

    #[test]
    fn the_hand_written_docs_hold_at_most_20000_prose_words() {
        if let Some(over) = total_over(&all_figures()) {
            panic!("{over} ({SEE})");
        }
    }

    #[test]
    fn the_measure_counts_prose_only() {
        let text = "\
# A heading is not prose

One two three. Four five six seven!

- A list item without a stop
- Another, two sentences. Yes.

| a table | row |
|---|---|

```rust
fn code() {} // never counted.
```
<!-- docs/data/bench.json: begin (rendered) -->
Generated words here.
<!-- docs/data/bench.json: end -->
A paragraph
across lines (`cargo xtask`).
";
        assert_eq!(sentence_lengths(text), vec![3, 4, 6, 3, 1, 6]);
        let doc = figures("x.md", text);
        assert_eq!((doc.words, doc.sentences, doc.median), (23, 6, 4));
    }

    #[test]
    fn the_budget_names_the_doc_and_the_figure() {
        let long = Figures {
            path: "docs/ARCHITECTURE.md".to_owned(),
            words: ARCHITECTURE_WORDS + 1,
            sentences: 1,
            median: MEDIAN_SENTENCE,
        };
        let broken = violations(&[long]);
        assert_eq!(broken.len(), 2, "{broken:?}");
        assert!(broken[0].contains("docs/ARCHITECTURE.md: 3001 prose words"));
        assert!(broken[1].contains("median sentence 20 words"));
        let many: Vec<Figures> = (0..3)
            .map(|i| Figures {
                path: format!("docs/{i}.md"),
                words: TOTAL_WORDS / 2,
                sentences: 1,
                median: 1,
            })
            .collect();
        assert!(violations(&many)[0].contains("30000 prose words together"));
    }
}
