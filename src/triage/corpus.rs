//! The inputs of a triage: files given, and the files of directories given (a fuzzer's queue
//! or crash directory as it is: sorted by name, hidden files and subdirectories skipped, as
//! AFL's and CASR's tools read them).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The input files of `given`, in order, each once; an error for a path that does not exist.
pub fn inputs(given: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for g in given {
        let meta = std::fs::metadata(g).map_err(|e| format!("-i: cannot read '{}': {e}", g.display()))?;
        if !meta.is_dir() {
            out.push(g.clone());
            continue;
        }
        let dir = std::fs::read_dir(g).map_err(|e| format!("-i: cannot read the directory '{}': {e}", g.display()))?;
        let mut files: Vec<PathBuf> = dir
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .map(|e| e.path())
            .collect();
        files.sort();
        out.extend(files);
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

/// The SHA-256 of a file's content, hex; None if it cannot be read.
pub fn content_hash(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(hex(&Sha256::digest(&bytes)))
}

/// The SHA-256 of a text, hex.
pub fn text_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
