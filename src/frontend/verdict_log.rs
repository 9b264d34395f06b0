//! `--verdict-log FILE` of `critic hook` and `critic check`: a runner's
//! record of a session. Each verdict is one JSON line in FILE, and the patch
//! it judged is `round-<iteration>/patch.diff` beside it (the layout of
//! `critic experiment`'s runs).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The patch a verdict judged: the diff of `workspace` against `base`
/// (HEAD when none), or the `patch` file given instead.
pub struct Judged<'a> {
    /// The work tree, if it is known.
    pub workspace: Option<&'a Path>,
    /// The revision diffed against.
    pub base: Option<&'a str>,
    /// The diff judged in place of the work tree's.
    pub patch: Option<&'a Path>,
}

impl Judged<'_> {
    fn text(&self) -> std::io::Result<Option<String>> {
        if let Some(patch) = self.patch {
            return std::fs::read_to_string(patch).map(Some);
        }
        let Some(workspace) = self.workspace else {
            return Ok(None);
        };
        crate::workspace::Workspace::open_with_diff(workspace, self.base)
            .map(|(_, raw)| Some(raw.raw))
            .map_err(std::io::Error::other)
    }
}

/// Append `verdict` to `log` and save the patch it judged.
pub fn record(
    log: &Path,
    verdict: &crate::evaluate::verdict::Verdict,
    judged: &Judged,
) -> std::io::Result<()> {
    append_verdict(log, verdict)?;
    save_patch(log, verdict, judged)
}

/// The patch of the finish just judged, beside the log as
/// `round-<iteration>/patch.diff` (the layout of `critic experiment`'s runs).
/// Nothing is written through a link: the directory must be a real one (or
/// is made), the file is opened without following one.
fn save_patch(
    log: &Path,
    verdict: &crate::evaluate::verdict::Verdict,
    judged: &Judged,
) -> std::io::Result<()> {
    let Some(patch) = judged.text()? else {
        return Ok(());
    };
    let dir = log
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("round-{}", verdict.iteration));
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if !m.is_dir() => {
            return Err(std::io::Error::other(format!(
                "{}: not a directory; the patch is not saved",
                dir.display()
            )))
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir(&dir)?,
    }
    let mut file = regular(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join("patch.diff"))?,
    )?;
    file.set_len(0)?;
    file.write_all(patch.as_bytes())
}

/// Append `verdict` as one line to `log`, in one write: the hooks of one
/// session run one at a time, and a line is never split.
fn append_verdict(log: &Path, verdict: &crate::evaluate::verdict::Verdict) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(verdict)?;
    line.push(b'\n');
    regular(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(log)?,
    )?
    .write_all(&line)
}

/// `file`, if it is a regular file: a FIFO or a device opened (without
/// waiting, `O_NONBLOCK`) in the log's place is not written to.
fn regular(file: std::fs::File) -> std::io::Result<std::fs::File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other(
            "not a regular file; nothing is written",
        ))
    }
}
