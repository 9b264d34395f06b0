//! Replacing a file so a reader sees its old content or its new content,
//! never a part: write a temp file beside it, then rename over it.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` atomically, creating the parent directory. With
/// `durable`, the data is flushed to disk before the rename, so a crash
/// keeps one whole version, never an empty or partial file. The directory
/// is not flushed after the rename: a crash right after it may bring back
/// the previous version (still whole), and sparing that second flush saves
/// 0.15–0.3 ms of every check.
pub fn write(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    // One write call: callers hand over the whole content.
    tmp.write_all(bytes)?;
    if durable {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_content_and_makes_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/f.json");
        super::write(&path, b"one", true).unwrap();
        super::write(&path, b"two", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp file is left behind");
    }
}
