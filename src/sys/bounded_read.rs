//! Reading a file an untrusted party may have planted: opened without
//! blocking (a FIFO would block the open, or the read, forever), refused
//! unless it is a regular file, and read to at most a given size whatever
//! its size claims.

use std::io::Read;
use std::path::Path;

/// The content of the regular file `path`, of at most `max` bytes.
pub fn read_regular_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > max {
        return Err(std::io::Error::other(format!(
            "{}: not a regular file of at most {max} bytes",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert!(read_regular_file(&fifo, 100).is_err());
        assert!(read_regular_file(Path::new("/dev/zero"), 100).is_err());
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_regular_file(&file, 5).unwrap(), b"12345");
        assert!(read_regular_file(&file, 4).is_err());
    }
}
