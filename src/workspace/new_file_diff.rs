//! Diffs of untracked files, written by the host exactly as `git diff` writes
//! an intent-to-add file.
//!
//! Marking untracked files intent-to-add costs a git process on every finish;
//! for the usual untracked file (a new test: plain text, not executable, no
//! attributes in play) the diff is fixed text the host can write itself. Every
//! case this module does not handle byte for byte is reported as `None`, and
//! the caller lets git do the whole diff. A test compares both ways.

use sha1::{Digest, Sha1};
use std::path::Path;

/// git treats a file as binary when its first 8000 bytes hold a NUL.
const BINARY_PROBE: usize = 8000;

/// Files larger than this are left to git (its big-file rules differ).
const MAX_SIZE: u64 = 32 << 20;

/// The `diff --git` section for the untracked file `path` (relative to
/// `root`, `/`-separated), or `None` when git should write it.
pub fn section(root: &Path, path: &str) -> Option<String> {
    if !plain_path(path) {
        return None;
    }
    let full = root.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if !meta.is_file() || meta.len() > MAX_SIZE || executable(&meta) {
        return None;
    }
    // Not blocking on, nor following, what may have been swapped in since.
    let bytes = crate::sys::bounded_read::read_regular_file_nofollow(&full, MAX_SIZE).ok()?;
    // NULs make it binary; CRs are subject to end-of-line settings.
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) || bytes.contains(&b'\r') {
        return None;
    }
    let text = std::str::from_utf8(&bytes).ok()?;
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex {}..{}\n",
        "0".repeat(40),
        blob_id(&bytes)
    );
    if text.is_empty() {
        return Some(out);
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let count = if lines.len() == 1 {
        "1".to_string()
    } else {
        format!("1,{}", lines.len())
    };
    // git ends a name with a space in it with a tab, so the line stays readable.
    let tab = if path.contains(' ') { "\t" } else { "" };
    out.push_str(&format!(
        "--- /dev/null\n+++ b/{path}{tab}\n@@ -0,0 +{count} @@\n"
    ));
    for line in lines {
        out.push('+');
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    Some(out)
}

/// A path git prints without quoting (with `core.quotePath=false`): no
/// control characters, quotes or backslashes.
fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && !path
            .chars()
            .any(|c| c.is_control() || c == '"' || c == '\\')
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// The SHA-1 object id git gives `bytes` as a blob.
fn blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex::encode(h.finalize())
}

/// The path of a `diff --git a/P b/P` section whose two sides are the same
/// unquoted path; `None` for renames, copies and quoted paths.
pub fn section_path(section: &str) -> Option<&str> {
    let header = section.lines().next()?.strip_prefix("diff --git ")?;
    let len = header.len().checked_sub(5)? / 2;
    let (a, b) = (header.get(2..2 + len)?, header.get(len + 5..)?);
    (header.starts_with("a/") && header.get(len + 2..len + 5) == Some(" b/") && a == b).then_some(a)
}

/// Split `git diff` output into its per-file sections.
pub fn split_sections(diff: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = diff
        .match_indices("diff --git ")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || diff.as_bytes()[i - 1] == b'\n')
        .collect();
    starts.push(diff.len());
    starts.windows(2).map(|w| &diff[w[0]..w[1]]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_match_git() {
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn section_paths_are_read_only_when_unambiguous() {
        assert_eq!(
            section_path("diff --git a/x b/y.py b/x b/y.py\n"),
            Some("x b/y.py")
        );
        assert_eq!(section_path("diff --git a/old b/new\n"), None);
        assert_eq!(section_path("diff --git \"a/q\\\"\" \"b/q\\\"\"\n"), None);
    }

    #[test]
    fn sections_split_at_headers_only() {
        let d = "diff --git a/a b/a\n+diff --git inside\ndiff --git a/b b/b\n-x\n";
        let s = split_sections(d);
        assert_eq!(s.len(), 2);
        assert!(s[0].contains("inside"));
        assert_eq!(section_path(s[1]), Some("b"));
    }
}
