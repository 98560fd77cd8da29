//! `docs/invariants.md` is the catalogue of every rule ID (`OWN-1`, `AGT-15`, …) the code,
//! the Cypher statements, the tests and the docs name. This test keeps it complete (every ID
//! named anywhere has an entry) and current (every entry is named somewhere else).

use std::collections::{BTreeMap, BTreeSet};
mod repo;

use std::fs;
use std::path::PathBuf;

use repo::root;

/// Where rule IDs are named, relative to the repository root.
const DIRS: [&str; 8] = [
    "crates",
    "workers/src",
    "workers/graphiti",
    "workers/tests",
    "tests",
    "cypher",
    "scripts",
    "docs",
];
const FILES: [&str; 2] = ["README.md", "ARCHITECTURE.md"];
const EXTENSIONS: [&str; 6] = ["rs", "cypher", "py", "sh", "js", "md"];
const CATALOGUE: &str = "docs/invariants.md";
/// Strings shaped like a rule ID that are not rules (`FNV-1` is the hash in "FNV-1a"; `BSD-3`
/// the licence in a vendored file's header, "BSD-3-Clause").
const NOT_RULES: [&str; 4] = ["SHA-256", "UTF-8", "FNV-1", "BSD-3"];
/// A catalogue entry is a table row that starts with the ID in bold: `| **OWN-1** …`.
const ENTRY_START: &str = "| **";

/// Rule IDs in `text`: 2 to 6 ASCII capitals not preceded by a letter or digit, `-`, then 1 to
/// 3 digits not followed by another digit.
fn rule_ids(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut ids = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_uppercase() || (i > 0 && b[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_uppercase() {
            j += 1;
        }
        let letters = j - i;
        if (2..=6).contains(&letters) && j < b.len() && b[j] == b'-' {
            let mut k = j + 1;
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            if (1..=3).contains(&(k - j - 1)) {
                ids.push(text[i..k].to_string());
            }
        }
        i = j;
    }
    ids
}

/// The IDs the catalogue has an entry for, and those with more than one.
fn catalogued(text: &str) -> (BTreeSet<String>, Vec<String>) {
    let mut ids = BTreeSet::new();
    let mut twice = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(ENTRY_START) else {
            continue;
        };
        let id = rest.split("**").next().unwrap_or_default().to_string();
        assert_eq!(
            rule_ids(&id),
            vec![id.clone()],
            "{CATALOGUE}: entry `{line}` does not start with a rule ID"
        );
        if !ids.insert(id.clone()) {
            twice.push(id);
        }
    }
    (ids, twice)
}

#[test]
fn rule_ids_are_found_with_their_boundaries() {
    assert_eq!(
        rule_ids("AGT-15, (OWN-2) `SRCH-4`: EPI-1..7 x_TURN-3/TURN-4"),
        ["AGT-15", "OWN-2", "SRCH-4", "EPI-1", "TURN-3", "TURN-4"]
    );
    // Lowercase, a letter or digit before, 7 capitals, 4 digits: not IDs.
    assert!(rule_ids("Agt-1 xAGT-1 1AGT-1 ABCDEFG-1 AGT-1234 A-1 AGT-").is_empty());
    assert_eq!(rule_ids("FNV-1a …PROC-10."), ["FNV-1", "PROC-10"]);
}

#[test]
fn every_rule_id_the_code_names_is_in_the_catalogue() {
    let root = root();
    let mut files = Vec::new();
    for dir in DIRS {
        let path = root.join(dir);
        assert!(path.is_dir(), "{dir} is gone: update DIRS in this test");
        repo::files_under(&path, &EXTENSIONS, &mut files);
    }
    files.extend(FILES.iter().map(|f| root.join(f)));
    let catalogue_path = root.join(CATALOGUE);

    // Every ID named outside the catalogue, with the first file naming it.
    let mut named: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in &files {
        if file == &catalogue_path {
            continue;
        }
        let bytes = fs::read(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for id in rule_ids(&String::from_utf8_lossy(&bytes)) {
            if !NOT_RULES.contains(&id.as_str()) {
                let relative = file.strip_prefix(&root).unwrap_or(file).to_path_buf();
                named.entry(id).or_insert(relative);
            }
        }
    }
    assert!(
        named.len() > 50,
        "only {} rule IDs found under {}: is the walk looking in the right place?",
        named.len(),
        root.display()
    );

    let text =
        fs::read_to_string(&catalogue_path).unwrap_or_else(|e| panic!("reading {CATALOGUE}: {e}"));
    let (entries, twice) = catalogued(&text);
    assert!(
        twice.is_empty(),
        "{CATALOGUE} has more than one entry for: {twice:?}"
    );

    let missing: Vec<String> = named
        .iter()
        .filter(|(id, _)| !entries.contains(*id))
        .map(|(id, file)| format!("{id} (first named in {})", file.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "rule IDs named in the code, tests or docs but missing from {CATALOGUE} \
         (add a `{ENTRY_START}ID** | rule | enforced in | tests |` row, or list a non-rule in \
         NOT_RULES):\n  {}",
        missing.join("\n  ")
    );

    let stale: Vec<&String> = entries
        .iter()
        .filter(|id| !named.contains_key(*id))
        .collect();
    assert!(
        stale.is_empty(),
        "{CATALOGUE} has entries that nothing else names any more (remove them): {stale:?}"
    );
}
