//! Reading a file an untrusted party may have planted: opened without
//! blocking (a FIFO would block the open, or the read, forever), refused
//! unless it is a regular file, and read to at most a given size whatever
//! its size claims or becomes while it is read.

use std::io::Read;
use std::path::Path;

/// The content of the regular file `path`, of at most `max` bytes. Errors
/// do not name the path: callers say which file it was.
pub fn read_regular_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_with_flags(path, max, 0)
}

/// [`read_regular_file`], refusing a symbolic link as `path`'s last
/// component (one swapped in after the caller looked).
pub fn read_regular_file_nofollow(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_with_flags(path, max, libc::O_NOFOLLOW)
}

fn read_with_flags(path: &Path, max: u64, flags: i32) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a regular file of at most {}", size(max)),
        )
    };
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | flags)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > max {
        return Err(refuse());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte more than allowed tells a file that grew while being read.
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(refuse());
    }
    Ok(bytes)
}

/// `max` bytes as a person reads it.
fn size(max: u64) -> String {
    if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    }
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
        let e = read_regular_file(&file, 4).unwrap_err().to_string();
        assert_eq!(e, "not a regular file of at most 4 bytes");
    }
}
