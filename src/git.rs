//! Running git with a configuration the user's settings cannot bend.
//!
//! Every call pins the options that change output format (prefixes, colours,
//! external diff drivers, path quoting), so the patch the host computes is the
//! same on every machine. git runs in the C locale: with quoting off its
//! output is the same bytes in any locale, and not loading the user's locale
//! saves about 0.15 ms of each git process.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A git command failed or could not start.
#[derive(Debug, thiserror::Error)]
#[error("`git {args}` in {dir}: {message}")]
pub struct GitError {
    /// The arguments, for the message.
    pub args: String,
    /// The directory it ran in.
    pub dir: String,
    /// git's stderr, or why it could not run.
    pub message: String,
}

/// The git executable: the first `git` on `PATH`, found once per process
/// (a spawn that searches `PATH` itself tries every directory before it,
/// which costs a failed `execve` each), or plain `git` for the spawn to
/// report when there is none.
fn program() -> &'static OsStr {
    static GIT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    GIT.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("git"))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| "git".into())
    })
    .as_os_str()
}

/// A git command in `dir` with format-pinning configuration.
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(program());
    cmd.current_dir(dir)
        .args([
            "-c",
            "core.quotePath=false",
            "-c",
            "diff.noprefix=false",
            "-c",
            "diff.mnemonicPrefix=false",
            "-c",
            "color.ui=false",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    cmd
}

/// Run `cmd` and return stdout, or an error carrying stderr.
pub fn run(mut cmd: Command) -> Result<Vec<u8>, GitError> {
    let describe = |cmd: &Command| {
        let args: Vec<_> = cmd
            .get_args()
            .map(OsStr::to_string_lossy)
            .skip_while(|a| a == "-c" || a.contains('='))
            .collect();
        (
            args.join(" "),
            cmd.get_current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        )
    };
    let output: Output = cmd.output().map_err(|e| {
        let (args, dir) = describe(&cmd);
        GitError {
            args,
            dir,
            message: format!("cannot run git: {e} (is git installed and on PATH?)"),
        }
    })?;
    if !output.status.success() {
        let (args, dir) = describe(&cmd);
        return Err(GitError {
            args,
            dir,
            message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(output.stdout)
}
