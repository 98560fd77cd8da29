//! One vocabulary: the status words of the run, step, attempt, Alternative, binding and outbox
//! lifecycles are spelled once, by their enums in this crate. Cypher statements take a status
//! or a status set as a parameter built from the enums, the engine uses the enums, and the
//! console reads the words from the OpenAPI document. This test fails on a quoted status word
//! (`'completed'`, `"completed"`) in `cypher/queries`, the engine's code or the console's
//! scripts, comments aside, naming file and line.

mod repo;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use aiden_domain::conversation::{tree::CacheStatus, AltState};
use aiden_domain::execution::machine::{AttemptOutcome, RunStatus};
use aiden_domain::execution::schedule::StepStatus;
use aiden_domain::knowledge::{Binding, OutboxState};
use repo::{files_under, root};
use serde::Serialize;

/// The words of one lifecycle, each checked to be the one serde writes (the API's and the
/// messages' word is the stored one).
fn words<S: Copy + Serialize + std::fmt::Debug>(
    all: &[S],
    word: fn(S) -> &'static str,
) -> Vec<&'static str> {
    all.iter()
        .map(|s| {
            let w = word(*s);
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                w,
                "{s:?} serializes as another word"
            );
            w
        })
        .collect()
}

/// Every lifecycle's words: run, step, attempt, Alternative (stored, and as the tree shows it),
/// binding and outbox item.
fn lifecycles() -> [(&'static str, Vec<&'static str>); 7] {
    [
        ("run", words(&RunStatus::ALL, RunStatus::as_str)),
        ("step", words(&StepStatus::ALL, StepStatus::as_str)),
        (
            "attempt",
            words(&AttemptOutcome::ALL, AttemptOutcome::as_str),
        ),
        ("alternative", words(&AltState::ALL, AltState::as_str)),
        ("cacheStatus", words(&CacheStatus::ALL, CacheStatus::as_str)),
        ("binding", words(&Binding::ALL, Binding::as_str)),
        ("outbox", words(&OutboxState::ALL, OutboxState::as_str)),
    ]
}

fn vocabulary() -> BTreeSet<&'static str> {
    lifecycles().into_iter().flat_map(|(_, w)| w).collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Lang {
    Cypher,
    Rust,
    Js,
}

/// Where status words may not be spelled: `(directory, extension, language)`.
const AREAS: [(&str, &str, Lang); 3] = [
    ("cypher/queries", "cypher", Lang::Cypher),
    ("crates/engine/src", "rs", Lang::Rust),
    ("crates/api/assets/console", "js", Lang::Js),
];

/// The documented questions (`docs/queries.md` shows them as they are, for people to paste
/// into Neo4j Browser with their own parameters): no code runs them, and a question that had to
/// be given its status words would not read as one.
const QUESTIONS: &str = "cypher/queries/ask";

/// Third-party libraries copied unchanged (a highlighter's keyword lists hold words like
/// `new` and `running`): not ours to take from the enums.
const VENDORED: &str = "crates/api/assets/console/vendor";

/// The string literals of `text` outside comments, each with its line (1-based).
fn literals(text: &str, lang: Lang) -> Vec<(usize, String)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // JS: the brace depth of each `${` of a template literal we are inside.
    let mut templates: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    // The last character of code that is not whitespace (tells a JS regex from a division).
    let mut last = ' ';
    let at = |j: usize| c.get(j).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if ch == '/' && at(i + 1) == '*' {
            i += 2;
            while i < c.len() && !(c[i] == '*' && at(i + 1) == '/') {
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            i += 2;
            continue;
        }
        let start = line;
        match (lang, ch) {
            (Lang::Rust, 'r')
                if matches!(at(i + 1), '#' | '"') && !is_ident(at(i.wrapping_sub(1))) =>
            {
                // A raw string: r"…" or r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                if at(j) != '"' {
                    i += 1;
                    last = ch;
                    continue;
                }
                let closing: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let body_start = j + 1;
                let mut k = body_start;
                while k < c.len() && !c[k..].starts_with(&closing) {
                    line += usize::from(c[k] == '\n');
                    k += 1;
                }
                out.push((start, c[body_start..k.min(c.len())].iter().collect()));
                i = k + closing.len();
                last = '"';
            }
            (Lang::Rust, '\'') => {
                // A char literal ('x', '\n', '\'', '\u{…}') or a lifetime ('a).
                if at(i + 1) == '\\' {
                    let mut j = i + 3;
                    while j < c.len() && c[j] != '\'' {
                        j += 1;
                    }
                    i = j + 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                }
                last = '\'';
            }
            (_, '"') | (Lang::Cypher | Lang::Js, '\'') => {
                let (body, end) = quoted(&c, i, ch, &mut line);
                out.push((start, body));
                i = end;
                last = ch;
            }
            (Lang::Cypher, '`') => {
                // A quoted name, not a value.
                let (_, end) = quoted(&c, i, ch, &mut line);
                i = end;
                last = ch;
            }
            (Lang::Js, '`') => {
                i = template(&c, i + 1, &mut line, &mut out, &mut templates, depth);
                last = '`';
            }
            (Lang::Js, '}') if templates.last() == Some(&depth) => {
                // The end of a template's `${…}`: the template goes on.
                templates.pop();
                i = template(&c, i + 1, &mut line, &mut out, &mut templates, depth);
                last = '`';
            }
            (Lang::Js, '/') if "(,=:[!&|?{};+-*%<>~^".contains(last) || last == ' ' => {
                // A regex literal: skipped, so a quote inside it starts no string.
                let mut j = i + 1;
                let mut class = false;
                while j < c.len() && c[j] != '\n' {
                    match c[j] {
                        '\\' => j += 1,
                        '[' => class = true,
                        ']' => class = false,
                        '/' if !class => break,
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
                last = '/';
            }
            _ => {
                if ch == '{' {
                    depth += 1;
                } else if ch == '}' {
                    depth = depth.saturating_sub(1);
                }
                if !ch.is_whitespace() {
                    last = ch;
                }
                i += 1;
            }
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The string quoted by `c[i]`, backslash escapes kept as written; the index after it.
fn quoted(c: &[char], i: usize, quote: char, line: &mut usize) -> (String, usize) {
    let mut j = i + 1;
    let mut body = String::new();
    while j < c.len() && c[j] != quote {
        if c[j] == '\\' && j + 1 < c.len() {
            body.push(c[j]);
            j += 1;
        }
        *line += usize::from(c[j] == '\n');
        body.push(c[j]);
        j += 1;
    }
    (body, j + 1)
}

/// A JS template literal's text from `c[i]` to its end or its next `${` (then the depth it
/// returns at is pushed); the index after what was read.
fn template(
    c: &[char],
    mut i: usize,
    line: &mut usize,
    out: &mut Vec<(usize, String)>,
    templates: &mut Vec<usize>,
    depth: usize,
) -> usize {
    let start = *line;
    let mut body = String::new();
    while i < c.len() {
        match c[i] {
            '\\' => {
                body.push(c[i]);
                i += 1;
            }
            '`' => {
                out.push((start, body));
                return i + 1;
            }
            '$' if c.get(i + 1) == Some(&'{') => {
                out.push((start, body));
                templates.push(depth);
                return i + 2;
            }
            _ => {}
        }
        if let Some(&ch) = c.get(i) {
            *line += usize::from(ch == '\n');
            body.push(ch);
        }
        i += 1;
    }
    out.push((start, body));
    i
}

/// Rust: the text with its `#[cfg(test)] mod … { … }` blocks blanked (line breaks kept). Tests
/// spell the stored and wire words on purpose: they pin them.
fn without_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n').peekable();
    let mut skipping = false;
    while let Some(l) = lines.next() {
        if !skipping
            && l.trim_end() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.starts_with("mod ") && n.trim_end().ends_with('{'))
        {
            skipping = true;
        }
        if skipping {
            out.push('\n');
            skipping = l.trim_end() != "}";
        } else {
            out.push_str(l);
        }
    }
    out
}

/// `file:line: 'word'` for every status word spelled in the areas.
fn spelled() -> (Vec<String>, usize) {
    let words = vocabulary();
    let root = root();
    let mut found = Vec::new();
    let mut files = 0;
    for (dir, ext, lang) in AREAS {
        let mut paths = Vec::new();
        files_under(&root.join(dir), &[ext], &mut paths);
        assert!(!paths.is_empty(), "no .{ext} file under {dir}");
        for path in paths {
            let rel = path.strip_prefix(&root).unwrap_or(&path);
            if rel.starts_with(Path::new(QUESTIONS)) || rel.starts_with(Path::new(VENDORED)) {
                continue;
            }
            files += 1;
            let text = fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let text = if lang == Lang::Rust {
                without_tests(&text)
            } else {
                text
            };
            for (line, literal) in literals(&text, lang) {
                if words.contains(literal.as_str()) {
                    found.push(format!("{}:{line}: '{literal}'", rel.display()));
                }
            }
        }
    }
    (found, files)
}

#[test]
fn every_status_is_stored_and_sent_as_its_word() {
    for (lifecycle, words) in lifecycles() {
        let unique: BTreeSet<_> = words.iter().collect();
        assert_eq!(unique.len(), words.len(), "{lifecycle}: {words:?}");
    }
    let all = vocabulary();
    assert!(all.contains("waiting_for_approval") && all.contains("stale") && all.contains("new"));
}

#[test]
fn no_status_word_is_spelled_outside_its_enum() {
    let (found, files) = spelled();
    assert!(files > 200, "only {files} files read");
    assert!(
        found.is_empty(),
        "{} status words spelled where the enums' words belong (take them from the enum: a \
         parameter in Cypher, the OpenAPI document's enums in the console):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn literals_are_found_outside_comments_only() {
    let cypher = "MATCH (a {state: 'generating'}) // not 'valid'\nWHERE a.x IN [\"failed\"] /* 'stale'\n */ RETURN `completed`";
    assert_eq!(
        literals(cypher, Lang::Cypher),
        [(1, "generating".into()), (2, "failed".into())]
    );
    let rust = "fn f<'a>(x: &'a str) -> char { let _ = r#\"{\"running\"}\"#; '\"' } // \"queued\"\nconst S: &str = \"canceled\";";
    assert_eq!(
        literals(rust, Lang::Rust),
        [(1, "{\"running\"}".into()), (2, "canceled".into())]
    );
    let js = "const t = `a ${x === 'stale' ? `b${'valid'}` : ''} c`; /* 'failed' */ s.replace(/['\"]/g, \"pending\");";
    let got: Vec<String> = literals(js, Lang::Js).into_iter().map(|(_, s)| s).collect();
    assert_eq!(got, ["a ", "stale", "b", "valid", "", "", " c", "pending"]);
    let tests = "fn a() {}\n#[cfg(test)]\nmod tests {\n    \"queued\"\n}\nfn b() { \"running\" }\n";
    assert_eq!(
        literals(&without_tests(tests), Lang::Rust),
        [(6, "running".into())]
    );
}
