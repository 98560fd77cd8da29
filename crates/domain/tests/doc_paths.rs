//! Every repository path the docs name must exist, so a moved or deleted file cannot leave a
//! doc pointing at nothing. Checked in `README.md`, `ARCHITECTURE.md` and every `.md` under
//! `docs/`: Markdown link targets (relative to the file's own directory, URLs skipped) and
//! code spans that read as a path from the repository root (`crates/api/src/lib.rs:12`,
//! `scripts/stack.sh test-up`, `cypher/schema/NNNN_*.cypher`).

mod repo;

use std::fs;
use std::path::PathBuf;

use repo::root;

const FILES: [&str; 2] = ["README.md", "ARCHITECTURE.md"];
const DOCS: &str = "docs";
/// A code-span token is a repository path only if it starts with one of these directories...
const TOP_DIRS: [&str; 12] = [
    "crates", "docs", "scripts", "cypher", "tests", "workers", "seed", "neo4j", "tools", "bench",
    "vendor", ".ci",
];
/// ...or is one of these files, so words such as `recall/` or `lib.rs` are not taken for paths.
const TOP_FILES: [&str; 8] = [
    "README.md",
    "ARCHITECTURE.md",
    "Cargo.toml",
    "Cargo.lock",
    "compose.yaml",
    "Dockerfile",
    ".dockerignore",
    ".gitignore",
];
/// Made at run time, so absent from a fresh clone.
const GENERATED: [&str; 2] = [".stack", "target"];

/// What a doc names: the line, the path as written, and whether it is a link (relative to the
/// doc) or a code span (relative to the root).
struct Named {
    line: usize,
    path: String,
    link: bool,
}

/// Code spans and link targets in `text`, outside fenced code blocks. A code span may run over
/// a line break (CommonMark), so spans are matched over the whole text, not line by line.
fn named(text: &str) -> Vec<Named> {
    // Blank out fenced blocks, keeping the line breaks so line numbers stay right.
    let mut prose = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        if fence || fenced {
            prose.extend(line.chars().filter(|c| *c == '\n'));
        } else {
            prose.push_str(line);
        }
        fenced ^= fence;
    }
    let line_of = |at: usize| prose[..at].matches('\n').count() + 1;
    let b = prose.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'`' => {
                let run = b[i..].iter().take_while(|c| **c == b'`').count();
                let delimiter = &prose[i..i + run];
                let start = i + run;
                // The closing run has the same length; an unmatched run is literal text.
                let Some(len) = prose[start..].find(delimiter) else {
                    i = start;
                    continue;
                };
                let span = &prose[start..start + len];
                let mut offset = 0;
                for token in span.split_whitespace() {
                    let at = offset + span[offset..].find(token).expect("a token of the span");
                    offset = at + token.len();
                    out.push(Named {
                        line: line_of(start + at),
                        path: token.to_string(),
                        link: false,
                    });
                }
                i = start + len + run;
            }
            b']' if b.get(i + 1) == Some(&b'(') => {
                let start = i + 2;
                let Some(len) = prose[start..].find(')') else {
                    i = start;
                    continue;
                };
                // `[text](target "title")`: the target is the first word.
                if let Some(target) = prose[start..start + len].split_whitespace().next() {
                    out.push(Named {
                        line: line_of(start),
                        path: target.to_string(),
                        link: true,
                    });
                }
                i = start + len + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The part of a named path to look for, or `None` when it is not a repository path:
/// `:line`, `#anchor` and trailing punctuation dropped, cut before the first glob or
/// placeholder component (`*`, `<area>`, `NNNN_name`, `…`).
fn to_check(named: &Named) -> Option<String> {
    let mut path = named.path.as_str();
    if named.link {
        if path.contains("://") || path.starts_with("mailto:") || path.starts_with('#') {
            return None;
        }
    } else {
        path = path.trim_start_matches(['(', '[', '"', '\'']);
        path = path.split(':').next().unwrap_or_default();
    }
    path = path.split('#').next().unwrap_or_default();
    path = path.trim_end_matches(['.', ',', ';', ')', ']', '"', '\'']);
    let first = path.split('/').next().unwrap_or_default();
    if path.is_empty() || GENERATED.contains(&first) {
        return None;
    }
    let from_root = (path.contains('/') && TOP_DIRS.contains(&first)) || TOP_FILES.contains(&path);
    if !named.link && !from_root {
        return None;
    }
    let mut kept = Vec::new();
    for part in path.split('/') {
        let placeholder = part.contains(['*', '?', '<', '{', '…']) || part.starts_with("NNNN");
        if placeholder {
            break;
        }
        kept.push(part);
    }
    Some(kept.join("/"))
}

#[test]
fn spans_and_links_are_found_and_trimmed() {
    let text = "See `crates/api/src/lib.rs:12` and [x](../README.md#top).\n\
                ```sh\n`crates/gone.rs`\n```\n\
                `scripts/stack.sh\ntest-up`, `cypher/schema/NNNN_*.cypher`, `lib.rs`, \
                [web](https://example.com), `seed/`, `workers/src/pool.rs`'s\n";
    let found: Vec<_> = named(text)
        .iter()
        .filter_map(|n| to_check(n).map(|p| (n.line, p, n.link)))
        .collect();
    assert_eq!(
        found,
        [
            (1, "crates/api/src/lib.rs".to_string(), false),
            (1, "../README.md".to_string(), true),
            (5, "scripts/stack.sh".to_string(), false),
            (6, "cypher/schema".to_string(), false),
            (6, "seed/".to_string(), false),
            (6, "workers/src/pool.rs".to_string(), false),
        ]
    );
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = root();
    let mut docs: Vec<PathBuf> = FILES.iter().map(|f| root.join(f)).collect();
    repo::files_under(&root.join(DOCS), &["md"], &mut docs);

    let mut checked = 0;
    let mut missing = Vec::new();
    for doc in &docs {
        let text =
            fs::read_to_string(doc).unwrap_or_else(|e| panic!("reading {}: {e}", doc.display()));
        let relative = doc.strip_prefix(&root).unwrap_or(doc);
        let base = doc.parent().expect("a doc's directory");
        for n in named(&text) {
            let Some(path) = to_check(&n) else { continue };
            let full = if n.link {
                base.join(&path)
            } else {
                root.join(&path)
            };
            checked += 1;
            if !full.exists() {
                missing.push(format!("{}:{}: {}", relative.display(), n.line, n.path));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} paths found in the docs under {}: is the scan looking in the right place?",
        root.display()
    );
    assert!(
        missing.is_empty(),
        "the docs name paths that do not exist (point them at where the file is now):\n  {}",
        missing.join("\n  ")
    );
}
