//! What one agent's run may take of the host: the size of each of a turn's
//! private directories (`/tmp`, `/var/tmp`, `/dev/shm`, which live in
//! memory), the memory a turn's processes hold together (a memory cgroup,
//! where the machine has one to give: see `sandbox::confine::memory`), and
//! the disk its workspace and its own directory may use together (measured
//! after every turn). What exceeds them is the agent's failure, with the
//! limit named, never the host's.
//!
//! In the experiment file:
//!
//! ```yaml
//! agent:
//!   limits: {tmp: 1GiB, memory: 8GiB, disk: 10GiB}
//! ```

use serde::Deserialize;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The default size of each private directory of a turn.
pub const DEFAULT_TMP_BYTES: u64 = crate::sandbox::confine::DEFAULT_PRIVATE_DIR_BYTES;

/// The default disk budget of a run's workspace and agent directory.
pub const DEFAULT_DISK_BYTES: u64 = 10 << 30;

/// The default memory a turn's processes may hold together.
pub const DEFAULT_MEMORY_BYTES: u64 = crate::sandbox::confine::memory::DEFAULT_TURN_MEMORY_BYTES;

/// What one directory entry counts for at least (a block).
pub const ENTRY_BYTES: u64 = 4096;

/// One run's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes each of a turn's private directories holds.
    pub tmp_bytes: u64,
    /// Bytes the workspace and the agent's directory may use together.
    pub disk_bytes: u64,
    /// Bytes of memory a turn's processes may hold together.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            tmp_bytes: DEFAULT_TMP_BYTES,
            disk_bytes: DEFAULT_DISK_BYTES,
            memory_bytes: DEFAULT_MEMORY_BYTES,
        }
    }
}

impl Limits {
    /// What the workspace and the agent's directory use on disk, when it
    /// is more than the disk budget: the agent's failure.
    pub fn over_disk(&self, workspace: &Path, agent_dir: &Path) -> Option<String> {
        let used = disk_use(&[workspace, agent_dir], self.disk_bytes);
        (used > self.disk_bytes).then(|| {
            format!(
                "the workspace and the agent's directory use {}, more than agent.limits.disk ({})",
                shown(used),
                shown(self.disk_bytes)
            )
        })
    }

    /// Why a turn the kernel killed for its memory ended the run.
    pub fn memory_killed(&self) -> String {
        format!(
            "a process of the agent's went past agent.limits.memory ({}) and the kernel killed it",
            shown(self.memory_bytes)
        )
    }
}

/// `agent.limits` as written: sizes such as `512MiB`, `10GB` or a number of
/// bytes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Each private directory's size.
    pub tmp: Option<Size>,
    /// The disk budget.
    pub disk: Option<Size>,
    /// A turn's memory.
    pub memory: Option<Size>,
}

impl RawLimits {
    /// The limits these give (the defaults where they give none), and each
    /// field that is not a size, with why.
    pub fn resolve(&self) -> (Limits, Vec<(&'static str, String)>) {
        let mut limits = Limits::default();
        let mut problems = Vec::new();
        for (field, size, into) in [
            ("tmp", &self.tmp, &mut limits.tmp_bytes),
            ("disk", &self.disk, &mut limits.disk_bytes),
            ("memory", &self.memory, &mut limits.memory_bytes),
        ] {
            match size.as_ref().map(Size::bytes) {
                Some(Ok(bytes)) => *into = bytes,
                Some(Err(e)) => problems.push((field, e)),
                None => {}
            }
        }
        (limits, problems)
    }
}

/// A size as written: a number of bytes, or text with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// Bytes.
    Bytes(u64),
    /// `512MiB`, `10GB`, `1.5G`.
    Text(String),
}

impl Size {
    /// The size in bytes, or what is wrong with it.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            // A tmpfs of size 0 has no size at all.
            Size::Bytes(0) => Err("0 is not a size a run can have".into()),
            Size::Bytes(n) => Ok(*n),
            Size::Text(t) => parse(t),
        }
    }
}

/// Bytes of `text`: a number with an optional unit (`k`, `M`, `G`, `T`, as
/// powers of 1024 with or without `iB`, powers of 1000 as `kB`, `MB`...).
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!("{text:?} is not a size (write 512MiB, 10GiB or a number of bytes)")
    })?;
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "k" | "K" | "KiB" | "Ki" => 1024.0,
        "M" | "MiB" | "Mi" => 1024f64.powi(2),
        "G" | "GiB" | "Gi" => 1024f64.powi(3),
        "T" | "TiB" | "Ti" => 1024f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?} (use KiB, MiB, GiB, TiB)"
            ))
        }
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("{text:?} is not a size a run can have"));
    }
    Ok(bytes as u64)
}

/// Bytes `dirs` take on disk: every file's allocated blocks (a sparse file
/// counts what it holds), each inode once (hard links), no link followed,
/// and each entry at least a block ([`ENTRY_BYTES`]: a million empty files
/// are not free). The walk stops once the total is past `stop_past`, so
/// however many files the agent made, it reads at most
/// `stop_past / ENTRY_BYTES` entries. A directory the agent made
/// unreadable is made readable again (the runner's user owns it); one that
/// stays unreadable counts as no room left.
pub fn disk_use(dirs: &[&Path], stop_past: u64) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let mut total = 0u64;
    let mut stack: Vec<std::path::PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).or_else(|_| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
            std::fs::read_dir(&dir)
        });
        let Ok(entries) = entries else {
            if dir.exists() {
                return u64::MAX;
            }
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if seen.insert((meta.dev(), meta.ino())) {
                let bytes = meta.blocks().saturating_mul(512).max(ENTRY_BYTES);
                total = total.saturating_add(bytes);
                if total > stop_past {
                    return total;
                }
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// Bytes in words, for messages: `1.5 GiB`.
pub fn shown(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_with_their_units() {
        assert_eq!(parse("512MiB"), Ok(512 << 20));
        assert_eq!(parse("10G"), Ok(10 << 30));
        assert_eq!(parse("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse("2GB"), Ok(2_000_000_000));
        assert_eq!(parse("4096"), Ok(4096));
        for bad in ["", "lots", "1XB", "0", "-1G", "1e400G"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn disk_use_counts_blocks_once_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 1 << 20]).unwrap();
        std::fs::hard_link(dir.path().join("a"), dir.path().join("b")).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("usr")).unwrap();
        // A sparse file of a GiB holds nothing.
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        let used = disk_use(&[dir.path()], u64::MAX);
        assert!((1 << 20..4 << 20).contains(&used), "{used}");
        // A directory made unreadable is counted all the same.
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir(dir.path().join("hidden")).unwrap();
        std::fs::write(dir.path().join("hidden/more"), vec![1u8; 4 << 20]).unwrap();
        std::fs::set_permissions(
            dir.path().join("hidden"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        assert!(disk_use(&[dir.path()], u64::MAX) >= used + (4 << 20));
        // Many empty files count, and the walk ends once past the limit.
        let many = dir.path().join("many");
        std::fs::create_dir(&many).unwrap();
        for i in 0..2000 {
            std::fs::write(many.join(i.to_string()), "").unwrap();
        }
        let stopped = disk_use(&[&many], 100 * ENTRY_BYTES);
        assert!(
            stopped > 100 * ENTRY_BYTES && stopped < 200 * ENTRY_BYTES,
            "{stopped}"
        );
    }
}
