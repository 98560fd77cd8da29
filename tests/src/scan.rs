//! The suite-wide secrets scan (SEC-1/SEC-2). With `AIDEN_SCAN_DIR` set (scripts/test.sh
//! sets it), the harness keeps a copy of everything a Secret could leak into: every response body
//! and SSE stream the tests read, the in-process server's log, every spawned process's log, and
//! each Secret value a test stored. `aiden-secrets-scan` then reads those, the whole graph and the
//! broker's queues, and fails on any plaintext or ciphertext outside its Secret node.
//!
//! Without `AIDEN_SCAN_DIR` every function here does nothing.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::PathBuf,
    sync::{Mutex, OnceLock},
};

/// The capture directory, when the scan is on.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("AIDEN_SCAN_DIR").map(PathBuf::from)
}

fn append(name: &str, text: &[u8]) {
    static FILES: OnceLock<Mutex<std::collections::HashMap<String, File>>> = OnceLock::new();
    let Some(dir) = dir() else { return };
    let mut files = FILES.get_or_init(Default::default).lock().unwrap();
    let file = files.entry(name.to_owned()).or_insert_with(|| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{name}-{}.txt", std::process::id())))
            .expect("AIDEN_SCAN_DIR is not writable")
    });
    file.write_all(text).expect("write to AIDEN_SCAN_DIR");
    file.write_all(b"\n").expect("write to AIDEN_SCAN_DIR");
}

/// A response body or event stream a test read (`kind` names the source in the report).
pub fn record(kind: &str, text: &str) {
    append(kind, text.as_bytes());
}

/// [`record_exchange`] for a request whose body was sent as raw bytes (the HTTP-edge tests).
pub fn record_raw_exchange(
    method: &reqwest::Method,
    path: &str,
    body: Option<&[u8]>,
    success: bool,
    response: &str,
) {
    match body.map(serde_json::from_slice::<serde_json::Value>) {
        Some(Ok(json)) => record_exchange(method, path, Some(&json), success, response),
        Some(Err(_)) => {
            record("responses", response);
            record(
                "requests",
                &String::from_utf8_lossy(body.unwrap_or_default()),
            );
        }
        None => record_exchange(method, path, None, success, response),
    }
}

/// A value that must appear nowhere but where the test put it (a password, a session id):
/// searched for in every capture, the graph and the queues, like a Secret's plaintext.
pub fn record_plaintext(value: &str) {
    append(
        "plaintexts",
        serde_json::to_string(value).unwrap_or_default().as_bytes(),
    );
}

/// Log output of the in-process server, as it is written.
pub fn record_log(bytes: &[u8]) {
    append("log", bytes);
}

/// An answered request: the response body, and the Secret value of a create or rotation the
/// server accepted (the scan looks for it everywhere). Other requests' bodies are kept too: a
/// value a test also sent as, say, a Tool's name is expected there and not searched for.
pub fn record_exchange(
    method: &reqwest::Method,
    path: &str,
    body: Option<&serde_json::Value>,
    success: bool,
    response: &str,
) {
    record("responses", response);
    let stores_secret = path.starts_with("/v1/secrets") && *method != reqwest::Method::GET;
    // USR-5: a password a test sends (to set one or to sign in) is searched for everywhere.
    let password = body.and_then(|b| b["password"].as_str());
    if let Some(p) = password.filter(|_| *method != reqwest::Method::GET) {
        record_plaintext(p);
        return;
    }
    if let (false, Some(body)) = (stores_secret, body) {
        record("requests", &body.to_string());
    }
    if let (true, true, Some(value)) = (
        stores_secret,
        success,
        body.and_then(|b| b["value"].as_str()),
    ) {
        append(
            "plaintexts",
            serde_json::to_string(value).unwrap().as_bytes(),
        );
    }
}

/// Where a spawned process's stderr goes: a file of the capture when the scan is on, or in
/// `AIDEN_CHILD_LOG_DIR` when that is set (the soak); the caller shows its tail if the test
/// fails. Otherwise the test's own stderr.
pub fn child_stderr() -> (std::process::Stdio, Option<PathBuf>) {
    let Some(dir) = kept_log_dir() else {
        return (std::process::Stdio::inherit(), None);
    };
    let (file, path) = log_file_in(&dir);
    (file.into(), Some(path))
}

/// Where spawned processes' logs are kept: the capture, or `AIDEN_CHILD_LOG_DIR`.
fn kept_log_dir() -> Option<PathBuf> {
    dir().or_else(|| std::env::var_os("AIDEN_CHILD_LOG_DIR").map(PathBuf::from))
}

fn log_file_in(dir: &std::path::Path) -> (File, PathBuf) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let path = dir.join(format!(
        "proc-{}-{}.txt",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let file =
        File::create(&path).unwrap_or_else(|e| panic!("{} is not writable: {e}", dir.display()));
    (file, path)
}

/// A file for a spawned process's stderr that the test itself reads (a log line as a barrier):
/// in the capture or `AIDEN_CHILD_LOG_DIR` as [`child_stderr`] puts it, else a temporary file,
/// which the caller removes (`true`).
pub fn child_log_file() -> (File, PathBuf, bool) {
    match kept_log_dir() {
        Some(dir) => {
            let (file, path) = log_file_in(&dir);
            (file, path, false)
        }
        None => {
            let (file, path) = log_file_in(&std::env::temp_dir());
            (file, path, true)
        }
    }
}

/// The log level of spawned processes: `info` while scanning (more lines to search), else
/// `warn` (quiet test output).
pub fn child_log_level() -> &'static str {
    if dir().is_some() {
        "info"
    } else {
        "warn"
    }
}

/// Prints the last lines of a spawned process's captured log (a failing test's context).
pub fn print_tail(path: &std::path::Path, lines: usize) {
    if let Ok(text) = std::fs::read_to_string(path) {
        let all: Vec<&str> = text.lines().collect();
        eprintln!("--- last lines of {} ---", path.display());
        for line in &all[all.len().saturating_sub(lines)..] {
            eprintln!("{line}");
        }
    }
}

/// What the scan looks for: Secret values (the plaintexts) and stored ciphertexts.
pub struct Needles {
    plaintexts: Vec<String>,
    ciphertexts: Vec<String>,
    /// Both lists in one automaton (plaintexts first): one pass over a text finds any of them.
    matcher: aho_corasick::AhoCorasick,
}

/// Values shorter than this are left out: a two-letter test value matches everywhere.
pub const MIN_PLAINTEXT_LEN: usize = 8;

/// One thing found where it must not be.
#[derive(Debug, PartialEq, Eq)]
pub enum Leak {
    /// The n-th plaintext (the value itself is never printed).
    Plaintext(usize),
    /// A known Secret's stored ciphertext.
    Ciphertext(usize),
    /// Something in the vault's format (`v1:` and base64 at least a nonce and a tag long).
    CiphertextShape,
}

impl Needles {
    pub fn new(plaintexts: impl IntoIterator<Item = String>, ciphertexts: Vec<String>) -> Self {
        let mut plaintexts: Vec<String> = plaintexts
            .into_iter()
            .filter(|p| p.len() >= MIN_PLAINTEXT_LEN)
            .collect();
        plaintexts.sort();
        plaintexts.dedup();
        let matcher = aho_corasick::AhoCorasick::new(plaintexts.iter().chain(&ciphertexts))
            .expect("the needles build an automaton");
        Self {
            plaintexts,
            ciphertexts,
            matcher,
        }
    }

    pub fn plaintext_count(&self) -> usize {
        self.plaintexts.len()
    }

    pub fn ciphertext_count(&self) -> usize {
        self.ciphertexts.len()
    }

    /// The first leak in `text`, if any.
    pub fn find(&self, text: &str) -> Option<Leak> {
        if let Some(found) = self.matcher.find(text) {
            let i = found.pattern().as_usize();
            return Some(match i.checked_sub(self.plaintexts.len()) {
                None => Leak::Plaintext(i),
                Some(c) => Leak::Ciphertext(c),
            });
        }
        has_ciphertext_shape(text).then_some(Leak::CiphertextShape)
    }

    /// A description of a leak that does not repeat the secret: its length and first two
    /// characters.
    pub fn describe(&self, leak: &Leak) -> String {
        let hint = |s: &str| format!("{}… ({} chars)", &s[..s.len().min(2)], s.len());
        match leak {
            Leak::Plaintext(i) => format!("Secret plaintext {}", hint(&self.plaintexts[*i])),
            Leak::Ciphertext(i) => format!("stored ciphertext {}", hint(&self.ciphertexts[*i])),
            Leak::CiphertextShape => "a vault ciphertext (v1:<base64>)".to_owned(),
        }
    }
}

/// `v1:` followed by base64 of at least a 24-byte nonce and a 16-byte tag (56 characters): the
/// vault's stored format (`crates/service/src/vault.rs`).
pub fn has_ciphertext_shape(text: &str) -> bool {
    const MIN_B64: usize = 56;
    text.match_indices("v1:").any(|(at, _)| {
        text[at + 3..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            .count()
            >= MIN_B64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles() -> Needles {
        Needles::new(
            ["sk-live-0123456789".to_owned(), "short".to_owned()],
            vec!["v1:QUJDREVGR0g=".to_owned()],
        )
    }

    #[test]
    fn finds_a_plaintext_anywhere_in_the_text() {
        let n = needles();
        assert_eq!(
            n.find(r#"{"headers":{"authorization":"Bearer sk-live-0123456789"}}"#),
            Some(Leak::Plaintext(0))
        );
        assert_eq!(n.find("nothing to see"), None);
        assert!(!n.describe(&Leak::Plaintext(0)).contains("0123456789"));
    }

    #[test]
    fn leaves_out_values_too_short_to_search_for() {
        let n = needles();
        assert_eq!(n.plaintext_count(), 1);
        assert_eq!(n.find("a short story"), None);
    }

    #[test]
    fn finds_a_known_ciphertext_and_anything_in_the_vault_format() {
        let n = needles();
        assert_eq!(n.find("x v1:QUJDREVGR0g= y"), Some(Leak::Ciphertext(0)));
        let vault_like = format!("v1:{}", "A".repeat(56));
        assert_eq!(n.find(&vault_like), Some(Leak::CiphertextShape));
        assert_eq!(n.find(&format!("v1:{}", "A".repeat(55))), None);
        assert_eq!(n.find("GET /v1:x"), None);
    }
}
