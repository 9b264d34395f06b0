//! Running git with a configuration the user's settings cannot bend.
//!
//! Every call pins the options that change output format (prefixes, colours,
//! external diff drivers, path quoting), so the patch the host computes is the
//! same on every machine. git runs in the C locale: with quoting off its
//! output is the same bytes in any locale, and not loading the user's locale
//! saves about 0.15 ms of each git process.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

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
pub fn run(cmd: Command) -> Result<Vec<u8>, GitError> {
    spawn(cmd)?.wait()
}

/// A git process started by [`spawn`]; [`Running::wait`] collects it.
pub struct Running {
    child: Child,
    args: String,
    dir: String,
}

/// Start `cmd` with its output captured, so several can run at once from
/// one thread.
pub fn spawn(mut cmd: Command) -> Result<Running, GitError> {
    let args: Vec<_> = cmd
        .get_args()
        .map(OsStr::to_string_lossy)
        .skip_while(|a| a == "-c" || a.contains('='))
        .collect();
    let args = args.join(" ");
    let dir = cmd
        .get_current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(child) => Ok(Running { child, args, dir }),
        Err(e) => Err(GitError {
            args,
            dir,
            message: format!("cannot run git: {e} (is git installed and on PATH?)"),
        }),
    }
}

impl Running {
    /// Wait for the process; its stdout, or an error carrying its stderr.
    /// Each process writes to its own pipes, so waiting for one while
    /// another fills its pipe only pauses the other.
    pub fn wait(self) -> Result<Vec<u8>, GitError> {
        let Running { child, args, dir } = self;
        let output: Output = child.wait_with_output().map_err(|e| GitError {
            args: args.clone(),
            dir: dir.clone(),
            message: format!("cannot read git's output: {e}"),
        })?;
        if !output.status.success() {
            return Err(GitError {
                args,
                dir,
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(output.stdout)
    }
}
