//! The repository's files, for the tests that read them (the rule catalogue, the docs' paths).

use std::fs;
use std::path::{Path, PathBuf};

/// Directories never read: build output, installed packages, the local stack's data.
const SKIPPED_DIRS: [&str; 4] = ["target", "node_modules", ".venv", ".stack"];

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` whose extension is one of `extensions`, in a stable order.
pub fn files_under(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry"))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().expect("file type");
        let name = entry.file_name();
        if kind.is_dir() {
            if !SKIPPED_DIRS.contains(&&*name.to_string_lossy()) {
                files_under(&path, extensions, out);
            }
        } else if kind.is_file()
            && path
                .extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
        {
            out.push(path);
        }
    }
}
