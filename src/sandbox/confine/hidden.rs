//! What of the host a confined command must not see: the service socket
//! directories and sockets, the credential places of the user's homes,
//! and, for a place holding a writable directory, all of it but the way to
//! that directory.

use super::places::{RUN_KEPT, SECRET_PLACES, SOCKET_DIRS};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What of the host a command must not see, as C strings ready for the
/// forked child: directories covered by an empty tmpfs, files (sockets,
/// credentials) covered by `/dev/null`.
#[derive(Debug, Default)]
pub(super) struct Hidden {
    pub(super) dirs: Vec<CString>,
    pub(super) files: Vec<CString>,
}
impl Hidden {
    /// Everything to hide from a command writing to `writable` (canonical
    /// paths): the service socket directories and sockets (see
    /// [`RUN_KEPT`]) and the credential places of the user's homes. A
    /// place holding one of `writable` (a scratch copy in the runtime
    /// directory, say) is not covered whole: everything in it but the way
    /// to the copy is.
    pub(super) fn collect(writable: &[PathBuf]) -> Result<Hidden, String> {
        use std::os::unix::fs::FileTypeExt;
        let mut places: Vec<PathBuf> = SOCKET_DIRS.iter().map(Into::into).collect();
        for run in ["/run", "/var/run"] {
            let run = Path::new(run);
            if run == Path::new("/var/run")
                && std::fs::canonicalize(run).ok().as_deref() == Some(Path::new("/run"))
            {
                continue;
            }
            for entry in std::fs::read_dir(run).into_iter().flatten().flatten() {
                let kept = run == Path::new("/run")
                    && RUN_KEPT
                        .iter()
                        .any(|k| entry.file_name() == std::ffi::OsStr::new(k));
                match entry.file_type() {
                    Ok(kind) if (kind.is_dir() && !kept) || kind.is_socket() => {
                        places.push(entry.path())
                    }
                    _ => {}
                }
            }
        }
        for home in homes() {
            places.extend(SECRET_PLACES.iter().map(|p| home.join(p)));
        }
        let mut hidden = (Vec::new(), Vec::new());
        for place in places {
            hide(&place, writable, &mut hidden);
        }
        let c = |p: &PathBuf| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| format!("{} contains a NUL byte", p.display()))
        };
        Ok(Hidden {
            dirs: hidden.0.iter().map(c).collect::<Result<_, _>>()?,
            files: hidden.1.iter().map(c).collect::<Result<_, _>>()?,
        })
    }
}
/// Add `place` to what is hidden (`.0` directories, `.1` files), if it
/// exists: whole, unless it holds one of `writable`; then each entry but the
/// one on the way to it, level by level down to it.
pub(super) fn hide(place: &Path, writable: &[PathBuf], hidden: &mut (Vec<PathBuf>, Vec<PathBuf>)) {
    let Ok(meta) = std::fs::metadata(place) else {
        return;
    };
    // Compared as the kernel will resolve them (`/var/run` is often a link).
    let real = std::fs::canonicalize(place).unwrap_or_else(|_| place.to_path_buf());
    if writable.iter().any(|w| real.starts_with(w)) {
        return;
    }
    if !meta.is_dir() {
        hidden.1.push(place.to_path_buf());
        return;
    }
    let Some(inner) = writable.iter().find(|w| w.starts_with(&real)) else {
        hidden.0.push(place.to_path_buf());
        return;
    };
    let Some(next) = inner.strip_prefix(&real).ok().and_then(|r| r.iter().next()) else {
        return;
    };
    for entry in std::fs::read_dir(&real).into_iter().flatten().flatten() {
        if entry.file_name() == next {
            if real.join(next) != *inner {
                hide(&real.join(next), writable, hidden);
            }
        } else {
            hide(&entry.path(), writable, hidden);
        }
    }
}
/// The user's home directories: the one `HOME` names and the password
/// database's, when they differ.
pub(super) fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: getpwuid_r fills `entry` from `buf`, both live and sized here;
    // `pw_dir` points into `buf`, read before it is dropped.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut found = std::ptr::null_mut();
        if libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        ) == 0
            && !found.is_null()
            && !entry.pw_dir.is_null()
        {
            let dir = std::ffi::CStr::from_ptr(entry.pw_dir).to_bytes();
            homes.push(PathBuf::from(std::ffi::OsStr::from_bytes(dir)));
        }
    }
    homes.retain(|h| h.is_absolute() && h != Path::new("/"));
    homes.dedup();
    homes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_holding_a_writable_directory_is_hidden_but_the_way_to_it() {
        let root = tempfile::tempdir().unwrap();
        let place = std::fs::canonicalize(root.path()).unwrap();
        for dir in ["run/user/copy", "run/user/other", "run/keys", "elsewhere"] {
            std::fs::create_dir_all(place.join(dir)).unwrap();
        }
        std::fs::write(place.join("run/socket"), "").unwrap();
        std::fs::write(place.join("run/user/token"), "").unwrap();
        let writable = [place.join("run/user/copy")];
        let mut hidden = (Vec::new(), Vec::new());
        hide(&place.join("run"), &writable, &mut hidden);
        hidden.0.sort();
        hidden.1.sort();
        assert_eq!(
            hidden.0,
            [place.join("run/keys"), place.join("run/user/other")]
        );
        assert_eq!(
            hidden.1,
            [place.join("run/socket"), place.join("run/user/token")]
        );
        // A place with nothing writable in it is covered whole; a missing
        // one is not covered at all; the writable directory itself never.
        let mut whole = (Vec::new(), Vec::new());
        hide(&place.join("elsewhere"), &writable, &mut whole);
        hide(&place.join("missing"), &writable, &mut whole);
        hide(&place.join("run/user/copy"), &writable, &mut whole);
        assert_eq!(whole, (vec![place.join("elsewhere")], vec![]));
    }
}
