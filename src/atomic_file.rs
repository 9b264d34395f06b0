//! Replacing a file so a reader sees its old content or its new content,
//! never a part: write a temp file beside it, then rename over it.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` atomically, creating the parent directory. With
/// `durable`, the data and then the rename are flushed to disk before
/// returning, so a crash keeps either version, never an empty file.
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
    // The rename is durable only once the directory entry is.
    if durable {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
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
