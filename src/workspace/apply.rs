//! A patch applied as `git apply` applies it, without git and without a
//! work tree: what each path holds afterwards, from a callback that reads
//! the base. Grading applies a prediction with it in scratch copies, and
//! reads what the patch makes of the files that steer the test runner, so
//! both see the tree SWE-bench's `git apply` makes.
//!
//! What `git apply` (no options) does, and so this: text around the files'
//! sections is skipped; plain unified diffs are read `-p1`; a hunk's lines
//! are matched byte for byte (CRLF stays CRLF; `\ No newline at end of file`
//! drops the line end), first where the hunk says, then one line further
//! and one line back in turn, never over lines an earlier hunk wrote; a hunk
//! starting at line 0 or 1 must match at the beginning and one without
//! trailing context at the end; modes, symlinks, renames and copies; `GIT
//! binary patch` sections (literal and delta) checked against their full
//! index; a file patched twice in one patch sees the first result. Anything
//! it refuses is refused here, with git's reason.

use critic_sdk::FileStatus;
use std::collections::BTreeMap;
use std::io::Read;

/// What a path holds: its bytes (a symlink's target for a link) and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The content.
    pub bytes: Vec<u8>,
    /// The kind of entry.
    pub mode: Mode,
}

/// The three kinds of entry git records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `100644`.
    File,
    /// `100755`.
    Executable,
    /// `120000`.
    Symlink,
}

impl Mode {
    /// A mode as git writes it (`100644`); any regular mode with the owner's
    /// execute bit is executable, as git canonicalizes it.
    fn parse(octal: &str) -> Option<Mode> {
        let bits = u32::from_str_radix(octal.trim(), 8).ok()?;
        match bits & 0o170000 {
            0o120000 => Some(Mode::Symlink),
            0o100000 if bits & 0o100 != 0 => Some(Mode::Executable),
            0o100000 => Some(Mode::File),
            _ => None,
        }
    }

    fn is_link(self) -> bool {
        self == Mode::Symlink
    }
}

/// Why the patch does not apply, in git's words where git has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApplyError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, ApplyError> {
    Err(ApplyError(message.into()))
}

/// Reads the base tree: `Ok(None)` for a path that is not there; an error
/// for one that cannot be read (beyond a symbolic link, too large).
pub type ReadBase<'a> = dyn FnMut(&str) -> Result<Option<Entry>, String> + 'a;

/// The patch applied to the tree `base` reads: every path it touches, with
/// what it holds afterwards (`None`: removed), in path order.
pub fn apply(
    patch: &str,
    base: &mut ReadBase,
) -> Result<BTreeMap<String, Option<Entry>>, ApplyError> {
    let files = critic_sdk::diff::parse_spans(patch).map_err(|e| ApplyError(e.to_string()))?;
    if files.is_empty() && !patch.trim().is_empty() {
        return fail("no valid patches in input");
    }
    let mut tree = Tree {
        base,
        changed: BTreeMap::new(),
    };
    // Each file's text up to the next file's: a binary patch's data lies
    // past what the parser counts as its section.
    let sections = critic_sdk::diff::sections(patch);
    for ((file, spans), section) in files.iter().zip(sections) {
        let header = ExtendedHeader::read(section);
        apply_file(&mut tree, patch, section, file, spans, &header)?;
    }
    Ok(tree.changed)
}

/// The base with the patch's results so far over it.
struct Tree<'a, 'b> {
    base: &'a mut ReadBase<'b>,
    changed: BTreeMap<String, Option<Entry>>,
}

impl Tree<'_, '_> {
    fn get(&mut self, path: &str) -> Result<Option<Entry>, ApplyError> {
        // A path beyond a link the patch made is beyond a link too.
        for (i, _) in path.match_indices('/') {
            if let Some(Some(e)) = self.changed.get(&path[..i]) {
                if e.mode.is_link() {
                    return fail(format!("affected file '{path}' is beyond a symbolic link"));
                }
            }
        }
        match self.changed.get(path) {
            Some(e) => Ok(e.clone()),
            None => (self.base)(path).map_err(|e| ApplyError(format!("{path}: {e}"))),
        }
    }

    /// Whether the patch itself removed `path` (so it may be made again).
    fn was_removed(&self, path: &str) -> bool {
        matches!(self.changed.get(path), Some(None))
    }
}

/// The lines of a git header this applier needs beyond what the parser
/// gives: modes and the index line's object names.
#[derive(Default)]
struct ExtendedHeader {
    old_mode: Option<String>,
    new_mode: Option<String>,
    index: Option<(String, String)>,
    binary_data: bool,
}

impl ExtendedHeader {
    fn read(section: &str) -> ExtendedHeader {
        let mut h = ExtendedHeader::default();
        for line in section.lines().skip(1) {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.starts_with("@@ ") || line == "GIT binary patch" {
                h.binary_data = line == "GIT binary patch";
                break;
            }
            if let Some(m) = line
                .strip_prefix("old mode ")
                .or_else(|| line.strip_prefix("deleted file mode "))
            {
                h.old_mode = Some(m.to_string());
            } else if let Some(m) = line
                .strip_prefix("new mode ")
                .or_else(|| line.strip_prefix("new file mode "))
            {
                h.new_mode = Some(m.to_string());
            } else if let Some(rest) = line.strip_prefix("index ") {
                let mut parts = rest.split(' ');
                let ids = parts.next().unwrap_or_default();
                if let Some((a, b)) = ids.split_once("..") {
                    h.index = Some((a.to_string(), b.to_string()));
                }
                if let Some(m) = parts.next() {
                    h.old_mode.get_or_insert_with(|| m.to_string());
                    h.new_mode.get_or_insert_with(|| m.to_string());
                }
            }
        }
        h
    }
}

fn apply_file(
    tree: &mut Tree,
    patch: &str,
    section: &str,
    file: &critic_sdk::FileChange,
    spans: &critic_sdk::diff::Spans,
    header: &ExtendedHeader,
) -> Result<(), ApplyError> {
    let new_path = file.path.as_str();
    let old_path = file.old_path.as_deref().unwrap_or(new_path);
    for p in [old_path, new_path] {
        check_path(p)?;
    }
    let parse_mode = |m: &Option<String>| -> Result<Option<Mode>, ApplyError> {
        match m {
            None => Ok(None),
            Some(text) => Mode::parse(text)
                .map(Some)
                .ok_or_else(|| ApplyError(format!("{new_path}: invalid mode {text:?}"))),
        }
    };
    let old_mode = parse_mode(&header.old_mode)?;
    let new_mode = parse_mode(&header.new_mode)?;
    let creating = file.status == FileStatus::Added;
    let old = if creating {
        None
    } else {
        match tree.get(old_path)? {
            Some(e) => Some(e),
            None => return fail(format!("{old_path}: No such file or directory")),
        }
    };
    if let (Some(old), Some(expected)) = (&old, old_mode) {
        if old.mode.is_link() != expected.is_link() {
            return fail(format!("{old_path}: wrong type"));
        }
    }
    let moves_in = creating || matches!(file.status, FileStatus::Renamed | FileStatus::Copied);
    if moves_in && !tree.was_removed(new_path) && tree.get(new_path)?.is_some() {
        return fail(format!("{new_path}: already exists in working directory"));
    }
    let image = old.as_ref().map(|e| e.bytes.clone()).unwrap_or_default();
    let result = if file.binary {
        if !header.binary_data {
            return fail(format!(
                "cannot apply binary patch to '{new_path}' without full index line"
            ));
        }
        apply_binary(section, &image, header, new_path)?
    } else {
        let mut lines = Image::of(&image);
        for (n, range) in spans.hunks.iter().enumerate() {
            let hunk = &file.hunks[n];
            apply_hunk(&mut lines, &patch[range.clone()], hunk).map_err(|e| {
                ApplyError(format!(
                    "patch failed: {new_path}:{}: {e}; {new_path}: patch does not apply",
                    hunk.old_start
                ))
            })?;
        }
        lines.bytes()
    };
    if file.status == FileStatus::Deleted {
        if !result.is_empty() {
            return fail(format!("{old_path}: removal patch leaves file contents"));
        }
        tree.changed.insert(old_path.to_string(), None);
        return Ok(());
    }
    let mode = new_mode
        .or(old.as_ref().map(|e| e.mode))
        .unwrap_or(Mode::File);
    if file.status == FileStatus::Renamed {
        tree.changed.insert(old_path.to_string(), None);
    }
    tree.changed.insert(
        new_path.to_string(),
        Some(Entry {
            bytes: result,
            mode,
        }),
    );
    Ok(())
}

/// `git apply`'s `verify_path`: relative, no empty, `.`, `..` or `.git` part.
fn check_path(path: &str) -> Result<(), ApplyError> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.split('/').any(|part| {
            part.is_empty() || part == "." || part == ".." || part.eq_ignore_ascii_case(".git")
        });
    if bad {
        return fail(format!("invalid path '{path}'"));
    }
    Ok(())
}

/// A file as lines, each with its line end, its hash, and whether a hunk
/// wrote it.
/// The lines borrow from the file and the patch: a patch of many sections
/// costs no allocation per line.
struct Image<'a> {
    lines: Vec<&'a [u8]>,
    hashes: Vec<u64>,
    patched: Vec<bool>,
}

impl<'a> Image<'a> {
    fn of(bytes: &'a [u8]) -> Image<'a> {
        let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
        Image {
            hashes: lines.iter().map(|l| exact_hash(l)).collect(),
            patched: vec![false; lines.len()],
            lines,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        self.lines.concat()
    }
}

/// A line's bytes hashed (FNV-1a), to find where a hunk may match.
fn exact_hash(line: &[u8]) -> u64 {
    line.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// How many line comparisons placing one patch's hunks may cost: git's
/// search is quadratic, and a hostile patch of long runs of equal lines
/// would hold the grader for minutes.
const MAX_COMPARISONS: u64 = 1 << 26;

/// git's line hash: every byte but whitespace.
fn hash_line(line: &[u8]) -> u32 {
    line.iter()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
        .fold(0u32, |h, b| h.wrapping_mul(3).wrapping_add(u32::from(*b)))
}

/// One hunk's body (`body`: its raw lines) applied to `image`.
fn apply_hunk<'a>(
    image: &mut Image<'a>,
    body: &'a str,
    hunk: &critic_sdk::Hunk,
) -> Result<(), String> {
    let raw: Vec<&[u8]> = body.as_bytes().split_inclusive(|b| *b == b'\n').collect();
    let mut pre: Vec<&[u8]> = Vec::new();
    let mut post: Vec<&[u8]> = Vec::new();
    let (mut changed, mut trailing) = (false, 0usize);
    for (i, line) in raw.iter().enumerate() {
        if line.last() != Some(&b'\n') {
            return Err("corrupt patch: a line without its line end".into());
        }
        // Followed by "\ No newline at end of file": no line end.
        let cut = usize::from(raw.get(i + 1).is_some_and(|n| n.first() == Some(&b'\\')));
        let text = |l: &'a [u8]| &l[1..l.len() - cut];
        match line[0] {
            // An empty context line, as newer GNU diff writes it.
            b'\n' => {
                if cut == 0 {
                    pre.push(b"\n");
                    post.push(b"\n");
                }
                trailing += 1;
            }
            b' ' => {
                pre.push(text(line));
                post.push(text(line));
                trailing += 1;
            }
            b'-' => {
                pre.push(text(line));
                changed = true;
                trailing = 0;
            }
            b'+' => {
                post.push(text(line));
                changed = true;
                trailing = 0;
            }
            b'\\' if line.len() >= 12 && line.starts_with(b"\\ ") => {}
            _ => return Err("corrupt patch: a line none of ' ', '-', '+' or '\\'".into()),
        }
    }
    if !changed {
        return Err("corrupt patch: a hunk that changes nothing".into());
    }
    let match_beginning = hunk.old_start <= 1;
    let match_end = trailing == 0;
    let pos = hunk.new_start.saturating_sub(1) as usize;
    let pre_hashes: Vec<u64> = pre.iter().map(|l| exact_hash(l)).collect();
    let Some(at) = find_pos(image, &pre, &pre_hashes, pos, match_beginning, match_end)? else {
        return Err("the hunk's lines are not in the file".into());
    };
    let n = post.len();
    let hashes: Vec<u64> = post.iter().map(|l| exact_hash(l)).collect();
    image.lines.splice(at..at + pre.len(), post);
    image.hashes.splice(at..at + pre.len(), hashes);
    image.patched.splice(at..at + pre.len(), vec![true; n]);
    Ok(())
}

/// git's `find_pos`: where `pre` matches, from line `line`, then one
/// further and one back in turn.
fn find_pos(
    image: &Image,
    pre: &[&[u8]],
    pre_hashes: &[u64],
    line: usize,
    match_beginning: bool,
    match_end: bool,
) -> Result<Option<usize>, String> {
    let mut cost = 0u64;
    let total = image.lines.len();
    let line = if match_beginning {
        0
    } else if match_end {
        // Past the end when the preimage is longer than the file, as git's
        // unsigned comparison has it.
        total.checked_sub(pre.len()).unwrap_or(total)
    } else {
        line
    }
    .min(total);
    let (mut backwards, mut forwards) = (line, line);
    let mut current = line;
    let mut i = 0usize;
    loop {
        if matches_at(image, pre, pre_hashes, current, match_beginning, match_end) {
            return Ok(Some(current));
        }
        cost += pre.len().max(1) as u64;
        if cost > MAX_COMPARISONS {
            return Err(format!(
                "placing the hunk takes more than {MAX_COMPARISONS} line comparisons"
            ));
        }
        loop {
            if backwards == 0 && forwards == total {
                return Ok(None);
            }
            if i & 1 == 1 {
                if backwards == 0 {
                    i += 1;
                    continue;
                }
                backwards -= 1;
                current = backwards;
            } else {
                if forwards == total {
                    i += 1;
                    continue;
                }
                forwards += 1;
                current = forwards;
            }
            break;
        }
        i += 1;
    }
}

/// git's `match_fragment`, with no whitespace options: each line's
/// whitespace-blind hash equal and the preimage's bytes those of the file
/// from this line on. A line that ends in a line end can only match its
/// equal, so every line but the last is compared whole; the last (which may
/// lack its line end, `\ No newline`) must begin the file's line, and be
/// all of it when the hunk must end the file.
fn matches_at(
    image: &Image,
    pre: &[&[u8]],
    pre_hashes: &[u64],
    at: usize,
    match_beginning: bool,
    match_end: bool,
) -> bool {
    let total = image.lines.len();
    if pre.len() + at > total || (match_end && pre.len() + at != total) {
        return false;
    }
    if match_beginning && at != 0 {
        return false;
    }
    if image.patched[at..at + pre.len()].iter().any(|p| *p) {
        return false;
    }
    let Some((last, body)) = pre.split_last() else {
        return true;
    };
    let n = body.len();
    if image.hashes[at..at + n] != pre_hashes[..n] || image.lines[at..at + n] != *body {
        return false;
    }
    let line = image.lines[at + n];
    hash_line(line) == hash_line(last)
        && line.starts_with(last)
        && (!match_end || line.len() == last.len())
}

/// A `GIT binary patch` section applied to `old`, checked as git checks it:
/// the index line names both sides in full, and each side is what it names.
fn apply_binary(
    section: &str,
    old: &[u8],
    header: &ExtendedHeader,
    path: &str,
) -> Result<Vec<u8>, ApplyError> {
    let full = |id: &str| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let Some((old_id, new_id)) = header.index.as_ref().filter(|(a, b)| full(a) && full(b)) else {
        return fail(format!(
            "cannot apply binary patch to '{path}' without full index line"
        ));
    };
    let zero = |id: &str| id.bytes().all(|b| b == b'0');
    if zero(old_id) {
        if !old.is_empty() {
            return fail(format!(
                "the patch applies to an empty '{path}' but it is not empty"
            ));
        }
    } else if blob_id(old) != *old_id {
        return fail(format!(
            "the patch applies to '{path}' ({}), which does not match the current contents.",
            blob_id(old)
        ));
    }
    if zero(new_id) {
        return Ok(Vec::new());
    }
    let data = binary_block(section).map_err(|e| ApplyError(format!("{path}: {e}")))?;
    let new = match data {
        Block::Literal(bytes) => bytes,
        Block::Delta(delta) => apply_delta(old, &delta)
            .ok_or_else(|| ApplyError(format!("binary patch does not apply to '{path}'")))?,
    };
    if blob_id(&new) != *new_id {
        return fail(format!(
            "binary patch to '{path}' creates incorrect result (expecting {new_id}, got {})",
            blob_id(&new)
        ));
    }
    Ok(new)
}

/// The object name git gives `bytes` as a blob.
fn blob_id(bytes: &[u8]) -> String {
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()));
    h.update(bytes);
    hex::encode(h.finalize())
}

/// The largest file a binary patch may make (its sizes are the patch's
/// word, so they bound what is reserved and inflated).
const MAX_BINARY_BYTES: usize = 64 << 20;

enum Block {
    Literal(Vec<u8>),
    Delta(Vec<u8>),
}

/// The forward block of a `GIT binary patch`: `literal N` or `delta N`,
/// base85 lines, inflated to `N` bytes.
fn binary_block(section: &str) -> Result<Block, String> {
    let mut lines = section
        .lines()
        .skip_while(|l| *l != "GIT binary patch")
        .skip(1);
    let kind = lines.next().ok_or("binary patch without data")?;
    let (literal, size) = if let Some(n) = kind.strip_prefix("literal ") {
        (true, n)
    } else if let Some(n) = kind.strip_prefix("delta ") {
        (false, n)
    } else {
        return Err(format!("unrecognized binary patch: {kind:?}"));
    };
    let size: usize = size
        .trim()
        .parse()
        .map_err(|_| format!("bad size in {kind:?}"))?;
    // The size is the patch's word: nothing is reserved or inflated past
    // the bound.
    if size > MAX_BINARY_BYTES {
        return Err(format!(
            "a binary patch of {size} bytes (more than {MAX_BINARY_BYTES} are refused)"
        ));
    }
    let mut deflated = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        decode_base85_line(line, &mut deflated)?;
    }
    let mut inflated = Vec::with_capacity(size);
    flate2::read::ZlibDecoder::new(deflated.as_slice())
        .take(size as u64 + 1)
        .read_to_end(&mut inflated)
        .map_err(|e| format!("corrupt binary patch: {e}"))?;
    if inflated.len() != size {
        return Err("corrupt binary patch: its size is not what it says".into());
    }
    Ok(if literal {
        Block::Literal(inflated)
    } else {
        Block::Delta(inflated)
    })
}

/// One line of git's base85: a length character (`A`-`Z` 1-26, `a`-`z`
/// 27-52), then five characters per four bytes.
fn decode_base85_line(line: &str, out: &mut Vec<u8>) -> Result<(), String> {
    const ALPHABET: &[u8] =
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
    let bytes = line.as_bytes();
    let len = match bytes.first() {
        Some(c @ b'A'..=b'Z') => usize::from(c - b'A') + 1,
        Some(c @ b'a'..=b'z') => usize::from(c - b'a') + 27,
        _ => return Err(format!("corrupt binary patch line {line:?}")),
    };
    let digits = &bytes[1..];
    if digits.len() != len.div_ceil(4) * 5 {
        return Err(format!("corrupt binary patch line {line:?}"));
    }
    let mut decoded = Vec::with_capacity(digits.len() / 5 * 4);
    for chunk in digits.chunks(5) {
        let mut acc: u64 = 0;
        for c in chunk {
            let v = ALPHABET
                .iter()
                .position(|a| a == c)
                .ok_or_else(|| format!("corrupt binary patch line {line:?}"))?;
            acc = acc * 85 + v as u64;
        }
        let acc = u32::try_from(acc).map_err(|_| format!("corrupt binary patch line {line:?}"))?;
        decoded.extend_from_slice(&acc.to_be_bytes());
    }
    decoded.truncate(len);
    out.extend_from_slice(&decoded);
    Ok(())
}

/// git's delta format applied to `base`: the two sizes, then copies from
/// the base and inserts of literal bytes. `None` when it does not fit.
fn apply_delta(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0usize;
    let mut size = || -> Option<usize> {
        let (mut value, mut shift) = (0usize, 0u32);
        loop {
            let byte = *delta.get(at)?;
            at += 1;
            value |= usize::from(byte & 0x7f).checked_shl(shift)?;
            shift += 7;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
    };
    let (source_size, target_size) = (size()?, size()?);
    if source_size != base.len() || target_size > MAX_BINARY_BYTES {
        return None;
    }
    let mut out = Vec::with_capacity(target_size);
    while at < delta.len() {
        let cmd = delta[at];
        at += 1;
        if cmd & 0x80 != 0 {
            let mut field = |bits: &[u8]| -> Option<usize> {
                let mut v = 0usize;
                for (i, bit) in bits.iter().enumerate() {
                    if cmd & bit != 0 {
                        v |= usize::from(*delta.get(at)?) << (8 * i);
                        at += 1;
                    }
                }
                Some(v)
            };
            let offset = field(&[0x01, 0x02, 0x04, 0x08])?;
            let mut len = field(&[0x10, 0x20, 0x40])?;
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(offset..offset.checked_add(len)?)?);
        } else if cmd != 0 {
            let len = usize::from(cmd);
            out.extend_from_slice(delta.get(at..at + len)?);
            at += len;
        } else {
            return None;
        }
        if out.len() > target_size {
            return None;
        }
    }
    (out.len() == target_size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        patch: &str,
        files: &[(&str, &str)],
    ) -> Result<BTreeMap<String, Option<Entry>>, ApplyError> {
        let base: BTreeMap<String, Entry> = files
            .iter()
            .map(|(p, t)| {
                (
                    p.to_string(),
                    Entry {
                        bytes: t.as_bytes().to_vec(),
                        mode: Mode::File,
                    },
                )
            })
            .collect();
        apply(patch, &mut |p: &str| Ok(base.get(p).cloned()))
    }

    fn text(r: &BTreeMap<String, Option<Entry>>, p: &str) -> String {
        String::from_utf8(r[p].as_ref().unwrap().bytes.clone()).unwrap()
    }

    #[test]
    fn a_hunk_moved_down_is_found_where_git_finds_it() {
        let patch = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n";
        let r = run(patch, &[("f", "x\ny\na\nb\nc\nd\ne\n")]).unwrap();
        assert_eq!(text(&r, "f"), "x\ny\na\nb\nC\nd\ne\n");
    }

    #[test]
    fn crlf_lines_stay_crlf_and_a_missing_newline_is_kept_missing() {
        let patch = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n";
        let r = run(patch, &[("f", "a\r\nb")]).unwrap();
        assert_eq!(text(&r, "f"), "a\r\nB");
    }

    #[test]
    fn leading_text_and_refusals_say_why() {
        let patch =
            "\nHere is the fix:\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(text(&run(patch, &[("f", "a\n")]).unwrap(), "f"), "b\n");
        let e = run(patch, &[("f", "z\n")]).unwrap_err();
        assert!(e.0.contains("patch does not apply"), "{e}");
        let e = run(patch, &[]).unwrap_err();
        assert!(e.0.contains("No such file"), "{e}");
        assert!(run("just words\n", &[])
            .unwrap_err()
            .0
            .contains("no valid patches"));
        let new =
            "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n";
        assert!(run(new, &[("f", "a\n")])
            .unwrap_err()
            .0
            .contains("already exists"));
        let up = "diff --git a/../f b/../f\n--- a/../f\n+++ b/../f\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(run(up, &[]).unwrap_err().0.contains("invalid path"));
    }

    #[test]
    fn a_delta_copies_and_inserts() {
        // source 5 bytes, target 7: copy "hello" (offset 0, len 5), insert "!!".
        let delta = [5, 7, 0x80 | 0x10, 5, 2, b'!', b'!'];
        assert_eq!(apply_delta(b"hello", &delta).unwrap(), b"hello!!");
        assert!(apply_delta(b"hell", &delta).is_none());
        // A target size past the bound reserves nothing.
        let huge = [5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x80 | 0x10, 5];
        assert!(apply_delta(b"hello", &huge).is_none());
        let section = "GIT binary patch\nliteral 99999999999\nzcmV\n\n";
        let Err(e) = binary_block(section) else {
            panic!("a huge literal was accepted")
        };
        assert!(e.contains("are refused"), "{e}");
    }
}
