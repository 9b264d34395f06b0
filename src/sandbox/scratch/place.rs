//! Where scratch pools live: a tmpfs with room when there is one, and the
//! prefix that names their directories.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Name prefix of pool directories under the temp dir.
pub(super) const POOL_PREFIX: &str = "critic-scratch-";

/// tmpfs is used only with at least this much free (containers often give
/// `/dev/shm` just 64 MiB).
const MIN_SHM_FREE: u64 = 1 << 30;

/// Where pools go: `CRITIC_SCRATCH_DIR`, else tmpfs when there is one with
/// room, else the temp dir.
pub fn scratch_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRITIC_SCRATCH_DIR") {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    let writable = shm.is_dir()
        && free_bytes(shm).is_some_and(|b| b >= MIN_SHM_FREE)
        && tempfile::Builder::new()
            .prefix(".critic-probe-")
            .tempfile_in(shm)
            .is_ok();
    if writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn free_bytes(dir: &Path) -> Option<u64> {
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we pass for a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statvfs(path.as_ptr(), &mut st) } == 0;
    ok.then(|| st.f_bavail as u64 * st.f_frsize as u64)
}
