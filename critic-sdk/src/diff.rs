//! Parser for git's unified diff format (`git diff --binary` output).
//!
//! It lives in the SDK rather than the host so detectors and the host read a
//! patch the same way: the host parses the diff it computed, and a detector can
//! parse a diff of its own (a mutant, say) with the same code.

use crate::protocol::{FileChange, FileStatus, Hunk, Line, LineKind};
use std::fmt;

/// A diff that does not follow git's format, with the 1-based line where
/// parsing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffError {
    /// 1-based line of the diff text.
    pub line: usize,
    /// What was wrong there.
    pub message: String,
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for DiffError {}

/// Parse a git unified diff into files and hunks. `is_test` is left `false`;
/// the caller classifies paths.
///
/// As `git apply` reads a patch: text before, between and after the files'
/// sections (a commit message, a blank line a model wrote first) is skipped,
/// and a plain unified diff (`--- a/x`, `+++ b/x`, `@@ -...`, with no
/// `diff --git` line) is read as well, its paths without their first part.
pub fn parse(raw: &str) -> Result<Vec<FileChange>, DiffError> {
    Ok(parse_spans(raw)?.into_iter().map(|(f, _)| f).collect())
}

/// Where one file's section lies in the diff text, in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spans {
    /// From its header's first line to the end of its last hunk (or of its
    /// header, when it has none).
    pub section: std::ops::Range<usize>,
    /// Each hunk's lines, after its `@@` line, up to the next hunk, the
    /// `\ No newline at end of file` lines included.
    pub hunks: Vec<std::ops::Range<usize>>,
}

/// [`parse`], with where each file lies in `raw` (for reading its lines as
/// they are, line ends included).
pub fn parse_spans(raw: &str) -> Result<Vec<(FileChange, Spans)>, DiffError> {
    let lines: Vec<&str> = raw.split_inclusive('\n').collect();
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    for l in &lines {
        offsets.push(at);
        at += l.len();
    }
    offsets.push(at);
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = strip_eol(lines[i]);
        let parsed = if let Some(rest) = line.strip_prefix("diff --git ") {
            parse_file(&lines, i, Header::Git(rest))?
        } else if is_plain_header(&lines, i) {
            parse_file(&lines, i, Header::Plain)?
        } else if line.starts_with("@@ -") {
            return Err(err(i, format!("patch fragment without header: {line:?}")));
        } else {
            // Not part of any file's section, as `git apply` skips it.
            i += 1;
            continue;
        };
        let (file, hunks, next) = parsed;
        let spans = Spans {
            section: offsets[i]..offsets[next],
            hunks: hunks.iter().map(|h| offsets[h.0]..offsets[h.1]).collect(),
        };
        files.push((file, spans));
        i = next;
    }
    Ok(files)
}

/// A plain unified diff's header: `--- `, then `+++ `, then a hunk.
fn is_plain_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ")
        && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
        && lines.get(i + 2).is_some_and(|l| l.starts_with("@@ -"))
}

/// How a file's section begins.
enum Header<'a> {
    /// `diff --git a/X b/Y`, with what follows `diff --git `.
    Git(&'a str),
    /// `--- a/X` and `+++ b/Y` lines only.
    Plain,
}

fn err(index: usize, message: impl Into<String>) -> DiffError {
    DiffError {
        line: index + 1,
        message: message.into(),
    }
}

fn strip_eol(line: &str) -> &str {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
}

/// The lines of a git extended header, which `git apply` reads up to the
/// first line that is none of them.
const EXTENDED_HEADERS: &[&str] = &[
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename old ",
    "rename new ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
    "--- ",
    "+++ ",
];

/// One file's section from line `start`: the file, its hunks' line ranges
/// (after each `@@` line), and the line after the section.
#[allow(clippy::type_complexity)]
fn parse_file(
    lines: &[&str],
    start: usize,
    header: Header,
) -> Result<(FileChange, Vec<(usize, usize)>, usize), DiffError> {
    let (mut old_path, mut new_path, mut i) = match header {
        Header::Git(paths) => {
            let (old, new) = split_git_header(paths).ok_or_else(|| {
                err(
                    start,
                    format!("cannot read the paths in 'diff --git {paths}'"),
                )
            })?;
            (old, new, start + 1)
        }
        Header::Plain => (String::new(), String::new(), start),
    };
    let mut status = FileStatus::Modified;
    let mut binary = false;
    let (mut old_null, mut new_null) = (false, false);
    // `git apply -p1`: a git diff's sides begin `a/` and `b/`; a plain
    // diff's lose their first part, whatever it is.
    let (old_prefix, new_prefix) = match header {
        Header::Git(_) => ("a/", "b/"),
        Header::Plain => ("", ""),
    };
    // Extended header lines, up to the first line that is none of them.
    while i < lines.len() {
        let line = strip_eol(lines[i]);
        if !EXTENDED_HEADERS.iter().any(|h| line.starts_with(h)) {
            break;
        }
        if line.starts_with("new file mode ") {
            status = FileStatus::Added;
        } else if line.starts_with("deleted file mode ") {
            status = FileStatus::Deleted;
        } else if let Some(p) = line
            .strip_prefix("rename from ")
            .or_else(|| line.strip_prefix("rename old "))
        {
            status = FileStatus::Renamed;
            old_path = unquote(p);
        } else if let Some(p) = line
            .strip_prefix("rename to ")
            .or_else(|| line.strip_prefix("rename new "))
        {
            new_path = unquote(p);
        } else if let Some(p) = line.strip_prefix("copy from ") {
            status = FileStatus::Copied;
            old_path = unquote(p);
        } else if let Some(p) = line.strip_prefix("copy to ") {
            new_path = unquote(p);
        } else if let Some(p) = line.strip_prefix("--- ") {
            match side_path(p, old_prefix) {
                Some(p) => old_path = p,
                None => old_null = true,
            }
        } else if let Some(p) = line.strip_prefix("+++ ") {
            match side_path(p, new_prefix) {
                Some(p) => new_path = p,
                None => new_null = true,
            }
        }
        i += 1;
    }
    if matches!(header, Header::Plain) {
        // No mode lines to say so: /dev/null on one side does.
        if old_null {
            status = FileStatus::Added;
            old_path = new_path.clone();
        } else if new_null {
            status = FileStatus::Deleted;
            new_path = old_path.clone();
        }
    }
    if i < lines.len() {
        let line = strip_eol(lines[i]);
        if line.starts_with("Binary files ") || line == "GIT binary patch" {
            binary = true;
        }
    }
    let mut hunks = Vec::new();
    let mut ranges = Vec::new();
    while i < lines.len() && strip_eol(lines[i]).starts_with("@@ ") {
        let (hunk, next) = parse_hunk(lines, i)?;
        hunks.push(hunk);
        ranges.push((i + 1, next));
        i = next;
    }
    let added = count(&hunks, LineKind::Added);
    let removed = count(&hunks, LineKind::Removed);
    let (path, old_path) = match status {
        FileStatus::Deleted => (old_path, None),
        FileStatus::Renamed | FileStatus::Copied => (new_path, Some(old_path)),
        _ => (new_path, None),
    };
    Ok((
        FileChange {
            path,
            old_path,
            status,
            binary,
            is_test: false,
            added,
            removed,
            hunks,
        },
        ranges,
        i,
    ))
}

fn count(hunks: &[Hunk], kind: LineKind) -> usize {
    hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == kind)
        .count()
}

fn parse_hunk(lines: &[&str], start: usize) -> Result<(Hunk, usize), DiffError> {
    let header = strip_eol(lines[start]);
    let bad = || err(start, format!("malformed hunk header {header:?}"));
    let body = header.strip_prefix("@@ -").ok_or_else(bad)?;
    let (ranges, section) = body.split_once(" @@").ok_or_else(bad)?;
    let (old, new) = ranges.split_once(" +").ok_or_else(bad)?;
    let (old_start, old_lines) = parse_range(old).ok_or_else(bad)?;
    let (new_start, new_lines) = parse_range(new).ok_or_else(bad)?;
    // Line numbers past u32::MAX cannot come from a real file; refusing them
    // here keeps the counting below free of overflow.
    if old_start.checked_add(old_lines).is_none() || new_start.checked_add(new_lines).is_none() {
        return Err(err(
            start,
            format!("hunk header {header:?} names lines past {}", u32::MAX),
        ));
    }
    let mut hunk = Hunk {
        old_start,
        old_lines,
        new_start,
        new_lines,
        section: section.trim_start().to_string(),
        lines: Vec::new(),
    };
    let (mut old_no, mut new_no) = (old_start, new_start);
    let (mut old_left, mut new_left) = (old_lines, new_lines);
    let mut i = start + 1;
    while old_left > 0 || new_left > 0 {
        let Some(raw) = lines.get(i) else {
            return Err(err(i, "diff ends inside a hunk"));
        };
        let line = strip_eol(raw);
        let (kind, text) = match line.as_bytes().first() {
            Some(b'+') if new_left > 0 => (LineKind::Added, &line[1..]),
            Some(b'-') if old_left > 0 => (LineKind::Removed, &line[1..]),
            Some(b' ') if old_left > 0 && new_left > 0 => (LineKind::Context, &line[1..]),
            // Some tools drop the space of an empty context line.
            None if old_left > 0 && new_left > 0 => (LineKind::Context, ""),
            Some(b'\\') => {
                i += 1;
                continue;
            }
            _ => {
                return Err(err(
                    i,
                    format!(
                        "hunk {header:?} promised {old_lines} old and {new_lines} new lines, \
                         but line {line:?} does not fit"
                    ),
                ))
            }
        };
        let (old_line, new_line) = match kind {
            LineKind::Added => {
                new_left -= 1;
                new_no += 1;
                (None, Some(new_no - 1))
            }
            LineKind::Removed => {
                old_left -= 1;
                old_no += 1;
                (Some(old_no - 1), None)
            }
            LineKind::Context => {
                old_left -= 1;
                new_left -= 1;
                old_no += 1;
                new_no += 1;
                (Some(old_no - 1), Some(new_no - 1))
            }
        };
        hunk.lines.push(Line {
            kind,
            text: text.to_string(),
            old_line,
            new_line,
        });
        i += 1;
    }
    // A trailing "\ No newline at end of file" belongs to this hunk.
    while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        i += 1;
    }
    Ok((hunk, i))
}

fn parse_range(range: &str) -> Option<(u32, u32)> {
    match range.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((range.parse().ok()?, 1)),
    }
}

/// The path of a `---`/`+++` line, or `None` for `/dev/null`: without
/// `prefix`, or without its first part when `prefix` is empty.
fn side_path(field: &str, prefix: &str) -> Option<String> {
    let field = field.split('\t').next().unwrap_or(field);
    if field == "/dev/null" {
        return None;
    }
    let path = unquote(field);
    let stripped = if prefix.is_empty() {
        path.split_once('/').map(|(_, rest)| rest)
    } else {
        path.strip_prefix(prefix)
    };
    Some(stripped.map(str::to_string).unwrap_or(path))
}

/// Paths of `diff --git a/X b/Y`. Unquoted paths may contain spaces, so when
/// both halves are the same path the split is taken at the middle.
fn split_git_header(header: &str) -> Option<(String, String)> {
    if header.starts_with('"') {
        let end = closing_quote(header)?;
        let old = unquote(&header[..=end]);
        let new = unquote(header[end + 1..].trim_start());
        return Some((strip(&old, "a/"), strip(&new, "b/")));
    }
    let len = header.len();
    if len % 2 == 1 {
        let half = (len - 1) / 2;
        // `get` rather than indexing: the middle may fall inside a character.
        if let (Some(a), Some(b)) = (header.get(..half), header.get(half + 1..)) {
            if a.strip_prefix("a/").is_some() && b.strip_prefix("b/") == a.strip_prefix("a/") {
                return Some((a[2..].to_string(), b[2..].to_string()));
            }
        }
    }
    let (a, b) = header.split_once(" b/")?;
    Some((strip(a, "a/"), b.to_string()))
}

fn strip(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

fn closing_quote(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Undo git's C-style quoting of unusual paths (`"a/t\303\251st.py"`).
fn unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return s.to_string();
    };
    let mut out = Vec::with_capacity(inner.len());
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 >= bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            b'0'..=b'7' if i + 1 < bytes.len() + 1 => {
                // Bytes, not `&str`: the slice may end inside a character.
                let digits = &bytes[i - 1..(i + 2).min(bytes.len())];
                match std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| u8::from_str_radix(d, 8).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(c),
                }
            }
            other => out.push(other),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A hunk whose lines do not match the file it is applied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError {
    /// 0-based index of the hunk.
    pub hunk: usize,
    /// 1-based line of the file where the mismatch is.
    pub line: u32,
    /// What the hunk expected there.
    pub expected: String,
    /// What the file has there (`None` past its end).
    pub found: Option<String>,
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.found {
            Some(found) => write!(
                f,
                "hunk {} expects {:?} at line {} but the file has {:?}",
                self.hunk + 1,
                self.expected,
                self.line,
                found
            ),
            None => write!(
                f,
                "hunk {} expects {:?} at line {}, past the end of the file",
                self.hunk + 1,
                self.expected,
                self.line
            ),
        }
    }
}

impl std::error::Error for ApplyError {}

/// Apply `hunks` to `old` exactly (no fuzz, no offset), returning the new text
/// with `\n` line ends. Hunks must be in file order, as git writes them.
pub fn apply(old: &str, hunks: &[Hunk]) -> Result<String, ApplyError> {
    let old_lines: Vec<&str> = old.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(old_lines.len());
    let mut next = 0usize;
    for (h, hunk) in hunks.iter().enumerate() {
        // An empty old range starts *after* line old_start.
        let start = if hunk.old_lines == 0 {
            hunk.old_start as usize
        } else {
            (hunk.old_start as usize).saturating_sub(1)
        };
        if start < next || start > old_lines.len() {
            return Err(ApplyError {
                hunk: h,
                line: hunk.old_start,
                expected: "hunks in file order, inside the file".into(),
                found: None,
            });
        }
        out.extend_from_slice(&old_lines[next..start]);
        let mut at = start;
        for line in &hunk.lines {
            match line.kind {
                LineKind::Added => out.push(&line.text),
                LineKind::Context | LineKind::Removed => {
                    let found = old_lines.get(at).copied();
                    if found != Some(line.text.as_str()) {
                        return Err(ApplyError {
                            hunk: h,
                            line: at as u32 + 1,
                            expected: line.text.clone(),
                            found: found.map(str::to_string),
                        });
                    }
                    if line.kind == LineKind::Context {
                        out.push(found.unwrap_or_default());
                    }
                    at += 1;
                }
            }
        }
        next = at;
    }
    out.extend_from_slice(&old_lines[next..]);
    let mut text = out.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

impl Hunk {
    /// The same change in the other direction (new to old).
    pub fn reversed(&self) -> Hunk {
        Hunk {
            old_start: self.new_start,
            old_lines: self.new_lines,
            new_start: self.old_start,
            new_lines: self.old_lines,
            section: self.section.clone(),
            lines: self
                .lines
                .iter()
                .map(|l| Line {
                    kind: match l.kind {
                        LineKind::Added => LineKind::Removed,
                        LineKind::Removed => LineKind::Added,
                        LineKind::Context => LineKind::Context,
                    },
                    text: l.text.clone(),
                    old_line: l.new_line,
                    new_line: l.old_line,
                })
                .collect(),
        }
    }
}

/// A unified diff (git style, 3 lines of context) from `old` to `new`, both
/// named `path`; empty when the texts are equal. For showing a change to a
/// reader (a mutant against the fix it came from), not for `git apply`.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&hunk.to_string());
    }
    out
}

/// The text of each file's section of a raw git diff (from its header up
/// to the next file's), in order: the n-th section belongs to the n-th file
/// [`parse`] returns. Text before the first file is left out.
pub fn sections(raw: &str) -> Vec<&str> {
    let starts: Vec<usize> = match parse_spans(raw) {
        Ok(files) => files.iter().map(|(_, s)| s.section.start).collect(),
        // Not a diff `parse` reads: split where git's headers are.
        Err(_) => {
            let mut starts = Vec::new();
            let mut at = 0;
            for line in raw.split_inclusive('\n') {
                if line.starts_with("diff --git ") {
                    starts.push(at);
                }
                at += line.len();
            }
            starts
        }
    };
    starts
        .iter()
        .enumerate()
        .map(|(i, &s)| &raw[s..starts.get(i + 1).copied().unwrap_or(raw.len())])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODIFY: &str = "diff --git a/src/calc.py b/src/calc.py
index 1111111..2222222 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,3 +1,3 @@ def add(a, b):
 def add(a, b):
-    return a - b
+    return a + b
 
";

    #[test]
    fn parses_a_modification_with_line_numbers() {
        let files = parse(MODIFY).unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.path, "src/calc.py");
        assert_eq!(f.status, FileStatus::Modified);
        assert_eq!((f.added, f.removed), (1, 1));
        let h = &f.hunks[0];
        assert_eq!(h.section, "def add(a, b):");
        assert_eq!(h.lines[1].old_line, Some(2));
        assert_eq!(h.lines[2].new_line, Some(2));
        assert_eq!(h.lines[3].kind, LineKind::Context);
        assert_eq!(h.lines[3].text, "");
    }

    #[test]
    fn line_numbers_past_u32_max_are_an_error_not_an_overflow() {
        let raw = MODIFY.replace("@@ -1,3 +1,3 @@", "@@ -1,3 +4294967295,3 @@");
        let e = parse(&raw).unwrap_err().to_string();
        assert!(e.contains("past 4294967295"), "{e}");
    }

    #[test]
    fn parses_added_deleted_renamed_and_binary_files() {
        let raw = "diff --git a/tests/test new.py b/tests/test new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/tests/test new.py
@@ -0,0 +1,2 @@
+import calc
+assert calc.add(1, 2) == 3
\\ No newline at end of file
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4444444..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/a.py b/b.py
similarity index 100%
rename from a.py
rename to b.py
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..5555555
GIT binary patch
literal 3
KcmZ?wWB>pF0RR91

literal 0
HcmV?d00001

";
        let files = parse(raw).unwrap();
        assert_eq!(files.len(), 4);
        assert_eq!(files[0].path, "tests/test new.py");
        assert_eq!(files[0].status, FileStatus::Added);
        assert_eq!(files[0].added, 2);
        assert_eq!(files[1].path, "old.txt");
        assert_eq!(files[1].status, FileStatus::Deleted);
        assert_eq!(files[2].status, FileStatus::Renamed);
        assert_eq!(files[2].path, "b.py");
        assert_eq!(files[2].old_path.as_deref(), Some("a.py"));
        assert!(files[3].binary);
        assert_eq!(files[3].path, "logo.png");
    }

    #[test]
    fn unquotes_octal_escaped_paths() {
        let raw = "diff --git \"a/t\\303\\251st.py\" \"b/t\\303\\251st.py\"
new file mode 100644
--- /dev/null
+++ \"b/t\\303\\251st.py\"
@@ -0,0 +1 @@
+x = 1
";
        let files = parse(raw).unwrap();
        assert_eq!(files[0].path, "tést.py");
    }

    #[test]
    fn reports_the_line_of_a_short_hunk() {
        let raw = "diff --git a/x b/x
--- a/x
+++ b/x
@@ -1,2 +1,2 @@
-a
+b
";
        let e = parse(raw).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("ends inside a hunk"), "{e}");
    }

    #[test]
    fn text_around_the_files_is_skipped_as_git_apply_skips_it() {
        let raw = format!("\nFix the sign.\n\n{MODIFY}-- \n2.47.3\n\n{MODIFY}");
        let files = parse(&raw).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].path, "src/calc.py");
        assert_eq!(files[1].added, 1);
        let sections = sections(&raw);
        assert!(sections[0].starts_with("diff --git a/src/calc.py"));
        assert_eq!(sections[1], MODIFY);
        assert!(parse("hello\n").unwrap().is_empty());
    }

    #[test]
    fn a_hunk_without_a_header_is_refused() {
        let e = parse("hello\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.starts_with("patch fragment without header"),
            "{e}"
        );
    }

    #[test]
    fn a_plain_unified_diff_is_read_with_its_first_part_stripped() {
        let raw = "--- old/pkg/x.py\t2024-01-01\n+++ new/pkg/x.py\n@@ -1 +1 @@\n-a\n+b\n\
                   --- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+c\n\
                   --- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-d\n";
        let files = parse(raw).unwrap();
        let seen: Vec<_> = files.iter().map(|f| (f.path.as_str(), f.status)).collect();
        assert_eq!(
            seen,
            [
                ("pkg/x.py", FileStatus::Modified),
                ("new.py", FileStatus::Added),
                ("gone.py", FileStatus::Deleted)
            ]
        );
    }

    #[test]
    fn empty_diff_has_no_files() {
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn apply_and_reverse_round_trip() {
        let files = parse(MODIFY).unwrap();
        let old = "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n";
        let new = apply(old, &files[0].hunks).unwrap();
        assert_eq!(
            new,
            "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
        );
        let back: Vec<Hunk> = files[0].hunks.iter().map(Hunk::reversed).collect();
        assert_eq!(apply(&new, &back).unwrap(), old);
    }

    #[test]
    fn apply_reports_the_mismatching_line() {
        let files = parse(MODIFY).unwrap();
        let e = apply("def add(a, b):\n    return a * b\n\n", &files[0].hunks).unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.found.as_deref(), Some("    return a * b"));
    }

    #[test]
    fn apply_inserts_into_an_empty_file() {
        let raw = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n";
        let files = parse(raw).unwrap();
        assert_eq!(apply("", &files[0].hunks).unwrap(), "a = 1\nb = 2\n");
    }

    #[test]
    fn unified_diff_shows_the_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified("x.py", old, new);
        assert_eq!(
            d,
            "--- a/x.py\n+++ b/x.py\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        assert_eq!(unified("x.py", old, old), "");
        let parsed = parse(&format!("diff --git a/x.py b/x.py\n{d}")).unwrap();
        assert_eq!(apply(old, &parsed[0].hunks).unwrap(), new);
    }

    #[test]
    fn sections_split_per_file() {
        let two = format!("{MODIFY}{MODIFY}");
        let s = sections(&two);
        assert_eq!(s, vec![MODIFY, MODIFY]);
        assert_eq!(parse(&two).unwrap().len(), s.len());
        assert!(sections("").is_empty());
    }
}
