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

/// Which part of a file [`read_part`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Its first bytes.
    Head,
    /// Its last bytes.
    Tail,
}

/// At most `max` bytes of `file`, from its start or its end, and its whole
/// size: a large log or patch shown in part. The caller opened it (without
/// following links, see [`crate::sandbox::beneath::Beneath::open_file`]).
pub fn read_part(mut file: std::fs::File, max: u64, part: Part) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata()?.len();
    if part == Part::Tail && len > max {
        file.seek(SeekFrom::Start(len - max))?;
    }
    let mut bytes = Vec::with_capacity(len.min(max) as usize);
    file.take(max).read_to_end(&mut bytes)?;
    Ok((bytes, len))
}

/// `path` opened without blocking, refused unless it is a regular file.
fn open_regular(path: &Path, flags: i32) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | flags)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    Ok(file)
}

fn read_with_flags(path: &Path, max: u64, flags: i32) -> std::io::Result<Vec<u8>> {
    let refuse = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a regular file of at most {}", size(max)),
        )
    };
    let file = open_regular(path, flags).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => refuse(),
        _ => e,
    })?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(refuse());
    }
    let mut bytes = Vec::with_capacity(len as usize);
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

    #[test]
    fn a_part_is_the_head_or_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("log");
        std::fs::write(&file, "0123456789").unwrap();
        let open = || std::fs::File::open(&file).unwrap();
        assert_eq!(
            read_part(open(), 4, Part::Head).unwrap(),
            (b"0123".to_vec(), 10)
        );
        assert_eq!(
            read_part(open(), 4, Part::Tail).unwrap(),
            (b"6789".to_vec(), 10)
        );
        assert_eq!(
            read_part(open(), 40, Part::Tail).unwrap(),
            (b"0123456789".to_vec(), 10)
        );
    }
}
