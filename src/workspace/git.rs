//! Running git with a configuration neither the user's settings nor the
//! repository's can bend.
//!
//! Every call pins the options that change output format (prefixes, colours,
//! external diff drivers, path quoting), so the patch the host computes is the
//! same on every machine. The repository's own configuration (`.git/config`)
//! is written by whoever controls the work tree, the agent included, so no
//! program it names may run with the host's rights: every call turns off
//! hooks, the file-system monitor and fetching, and the commands that read
//! work-tree files also turn off filter and diff drivers, through a
//! [`PrivateGitDir`]. git runs in the C locale: with quoting off its output
//! is the same bytes in any locale, and not loading the user's locale saves
//! about 0.15 ms of each git process.

use crate::sys::bounded_read::read_regular_file;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// How long one git process may take unless `CRITIC_GIT_TIMEOUT` (seconds)
/// says otherwise. The work tree is the agent's: a FIFO named `.gitignore`,
/// or a configured excludes file that is one, makes git wait forever, and
/// the agent's loop with it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// [`DEFAULT_TIMEOUT`], or `CRITIC_GIT_TIMEOUT` when it is a positive number
/// of seconds.
fn timeout() -> Duration {
    static TIMEOUT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        std::env::var("CRITIC_GIT_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
    })
}

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
    /// Whether the failure is the host's own (git could not start, its
    /// output could not be read, the private copy of the git directory
    /// could not be made), not something of the repository's.
    pub host: bool,
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

/// Variables that name a repository's parts; removed from every git call
/// (the calls that need them set their own).
const REPOSITORY_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_NAMESPACE",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
];

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
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            // A split index writes its shared part into the git directory,
            // not beside the private index copy the host diffs with.
            "-c",
            "core.splitIndex=false",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        // A partial clone fetches missing objects on demand, through any
        // transport (`ext::` runs a command) the repository enables.
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    // The host's own environment must not point git at another repository's
    // parts, nor (`GIT_CONFIG`) make `git config` read one file only, which
    // would hide the repository's drivers from [`Drivers::read`].
    for var in REPOSITORY_ENV {
        cmd.env_remove(var);
    }
    // Its own process group: a timeout or an interrupt kills what git
    // started too (a `git` in a submodule holding the output pipe).
    cmd.process_group(0);
    cmd
}

/// The drivers a work-tree command must not use: every filter driver
/// (`filter.<name>.clean`, `smudge`, `process`), whatever configuration
/// defines it, and the diff drivers the repository's own configuration
/// defines. A filter runs a program, and the user's own (Git LFS's, say)
/// reads program names from the repository's configuration in turn
/// (`lfs.extension.<name>.clean`); a diff driver's `xfuncname` is a regular
/// expression git runs on every hunk, which a hostile one makes take hours.
///
/// With filters off, a file under Git LFS that the agent changed shows as
/// its content against the committed pointer.
#[derive(Debug, Clone, Default)]
struct Drivers {
    filters: Vec<String>,
    diffs: Vec<String>,
}

impl Drivers {
    /// The drivers configured for the work tree `dir` with the private git
    /// directory `git_dir`. When no configuration file git reads could
    /// define one (the usual case), that is known without running git.
    fn read(dir: &Path, git_dir: &Path) -> Result<Drivers, GitError> {
        if !might_define_drivers(git_dir) {
            return Ok(Drivers::default());
        }
        let mut cmd = command(dir);
        cmd.env("GIT_DIR", git_dir).args([
            "config",
            "-z",
            "--includes",
            "--show-scope",
            "--name-only",
            "--get-regexp",
            r"^(filter|diff)\.",
        ]);
        let out = match run(cmd) {
            Ok(out) => out,
            // `--get-regexp` exits 1 when nothing matches.
            Err(e) if e.message.is_empty() => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut drivers = Drivers::default();
        let mut fields = out.split(|&b| b == 0);
        while let (Some(scope), Some(key)) = (fields.next(), fields.next()) {
            let repository = scope == b"local" || scope == b"worktree";
            let key = String::from_utf8_lossy(key);
            // `<section>.<name>.<variable>`; the name may hold dots.
            let Some((section, rest)) = key.split_once('.') else {
                continue;
            };
            let Some((name, _)) = rest.rsplit_once('.') else {
                continue;
            };
            let list = match section {
                "filter" => &mut drivers.filters,
                "diff" if repository => &mut drivers.diffs,
                _ => continue,
            };
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
        Ok(drivers)
    }

    /// Switch the drivers off in `cmd`: filters get empty commands and are
    /// not required; diff drivers get a function-name pattern that matches
    /// nothing. Set through `GIT_CONFIG_COUNT` (after any the user set),
    /// which takes any name, where `-c name=value` would split a name
    /// holding `=`.
    fn apply(&self, cmd: &mut Command) {
        if self.filters.is_empty() && self.diffs.is_empty() {
            return;
        }
        let mut n: usize = std::env::var("GIT_CONFIG_COUNT")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let filter_vars = [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ];
        // `x^` cannot match: `^` anchors at the start in a POSIX pattern.
        let diff_vars = [("xfuncname", "x^"), ("funcname", "x^")];
        let settings = (self.filters.iter().map(|d| ("filter", d, &filter_vars[..])))
            .chain(self.diffs.iter().map(|d| ("diff", d, &diff_vars[..])));
        for (section, name, vars) in settings {
            for (var, value) in vars {
                cmd.env(
                    format!("GIT_CONFIG_KEY_{n}"),
                    format!("{section}.{name}.{var}"),
                )
                .env(format!("GIT_CONFIG_VALUE_{n}"), value);
                n += 1;
            }
        }
        cmd.env("GIT_CONFIG_COUNT", n.to_string());
    }
}

/// A private git directory for the commands of one check that read the work
/// tree: the repository's objects, refs and `info/` through symlinks, a copy
/// of its `HEAD`, of its index (git may refresh an index it diffs with, and
/// the user's must stay untouched) and of its configuration, each read once.
/// git rereads the configuration in every process, so without the copy a
/// process the agent left running could rewrite `.git/config` between the
/// moment its drivers were vetted and the diff; with it, every command sees
/// the configuration that was vetted.
///
/// It lives on tmpfs when there is one (making files there is several times
/// cheaper than on a disk), is private to the user, is removed when dropped
/// or when the host is interrupted, and one a killed host left behind is
/// removed by the next.
pub struct PrivateGitDir {
    dir: tempfile::TempDir,
    drivers: Drivers,
}

/// Name prefix of private git directories, followed by the host's pid.
const PRIVATE_PREFIX: &str = "critic-git-";

/// The largest index the host copies (a repository of a million files has
/// an index of about 100 MiB); the copy lives in memory on tmpfs.
pub const MAX_INDEX_BYTES: u64 = 1 << 30;

impl PrivateGitDir {
    /// The private directory for the repository at `git_dir`, work tree
    /// `work_tree`.
    pub fn new(work_tree: &Path, git_dir: &Path) -> Result<PrivateGitDir, GitError> {
        let fail = |what: &Path, e: std::io::Error, host: bool| GitError {
            args: "(private copy of the git directory)".into(),
            dir: work_tree.display().to_string(),
            message: format!("{}: {e}", what.display()),
            host,
        };
        let config = config_snapshot(work_tree, git_dir)?;
        let shm = Path::new("/dev/shm");
        let mut places = vec![std::env::temp_dir()];
        if shm.is_dir() {
            places.insert(0, shm.to_path_buf());
        }
        let mut failure = None;
        for place in &places {
            for stale in crate::sys::interrupt::leftovers(place, PRIVATE_PREFIX) {
                let _ = crate::sys::remove_tree::remove_tree(&stale);
            }
            let made = tempfile::Builder::new()
                .prefix(&format!("{PRIVATE_PREFIX}{}-", std::process::id()))
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir_in(place)
                .map_err(|e| (place.clone(), e))
                .and_then(|dir| {
                    crate::sys::interrupt::remember_dir(dir.path());
                    // Dropped on failure: removed, and forgotten.
                    let private = PrivateGitDir {
                        dir,
                        drivers: Drivers::default(),
                    };
                    fill(private.path(), git_dir, &config).map(|()| private)
                });
            match made {
                Ok(mut private) => {
                    private.drivers = Drivers::read(work_tree, private.path())?;
                    return Ok(private);
                }
                Err(e) => failure = Some(e),
            }
        }
        let (path, e) = failure.expect("at least the temp dir was tried");
        // Failing to make the directory itself is the host's failure; failing
        // to copy a file of the repository's into it is the repository's.
        let host = places.contains(&path);
        Err(fail(&path, e, host))
    }

    /// The private directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Point `cmd` at the private directory and its index, with the drivers
    /// off.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env("GIT_DIR", self.dir.path())
            .env("GIT_INDEX_FILE", self.dir.path().join("index"));
        self.drivers.apply(cmd);
    }
}

impl Drop for PrivateGitDir {
    fn drop(&mut self) {
        crate::sys::interrupt::forget_dir(self.dir.path());
    }
}

/// The directory holding a repository's objects, refs and configuration: a
/// linked work tree's git directory names it in `commondir`.
fn common_dir(git_dir: &Path) -> std::path::PathBuf {
    match read_regular_file(&git_dir.join("commondir"), 4096) {
        Ok(rel) => git_dir.join(String::from_utf8_lossy(&rel).trim()),
        Err(_) => git_dir.to_path_buf(),
    }
}

/// The repository's configuration, read once: the file itself when it is
/// all there is, else what git reads, flattened into one file.
fn config_snapshot(work_tree: &Path, git_dir: &Path) -> Result<Vec<u8>, GitError> {
    let common = common_dir(git_dir);
    let path = common.join("config");
    let config = read_regular_file(&path, 16 << 20).map_err(|e| GitError {
        args: "(reading the configuration)".into(),
        dir: work_tree.display().to_string(),
        message: format!("{}: {e}", path.display()),
        host: false,
    })?;
    let plain = common == git_dir
        && !git_dir.join("config.worktree").exists()
        && !config
            .to_ascii_lowercase()
            .windows(7)
            .any(|w| w == b"include");
    if plain {
        Ok(config)
    } else {
        flattened_config(work_tree, git_dir)
    }
}

/// Fill the private git directory `dir` for the repository at `git_dir`.
fn fill(
    dir: &Path,
    git_dir: &Path,
    config: &[u8],
) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let common = common_dir(git_dir);
    let at = |p: &Path| {
        let p = p.to_path_buf();
        move |e| (p, e)
    };
    let head = git_dir.join("HEAD");
    let head_ref = read_regular_file(&head, 4096).map_err(at(&head))?;
    std::fs::write(dir.join("HEAD"), head_ref).map_err(at(dir))?;
    for part in [
        "objects",
        "refs",
        "reftable",
        "packed-refs",
        "info",
        "modules",
        "shallow",
    ] {
        std::os::unix::fs::symlink(common.join(part), dir.join(part)).map_err(at(dir))?;
    }
    std::fs::write(dir.join("config"), config).map_err(at(dir))?;
    let index = git_dir.join("index");
    let Some(mut source) = open_index(&index).map_err(at(&index))? else {
        return Ok(());
    };
    let mut copy = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("index"))
            .map_err(at(dir))?
    };
    // Through the open file: the copy keeps its private mode, whatever mode
    // the agent gave the index.
    std::io::copy(&mut (&mut source).take(MAX_INDEX_BYTES), &mut copy).map_err(at(&index))?;
    // git trusts an entry's stat data only for files changed before the
    // index was written (it rereads "racily clean" ones): the copy must keep
    // the index's time, or a file edited in the same second, to the same
    // size, would look unchanged.
    let written = source
        .metadata()
        .and_then(|m| m.modified())
        .map_err(at(&index))?;
    copy.set_modified(written).map_err(at(dir))
}

/// The user's index, opened without following a symlink; `None` when there
/// is none. Refused when it is not a regular file or larger than
/// [`MAX_INDEX_BYTES`].
fn open_index(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_INDEX_BYTES {
        return Err(std::io::Error::other(format!(
            "not a regular file of at most {} MiB; refusing to copy it",
            MAX_INDEX_BYTES >> 20
        )));
    }
    Ok(Some(file))
}

/// The repository's own configuration (its local and work-tree scopes,
/// includes resolved) as one file, read by a single git process.
fn flattened_config(work_tree: &Path, git_dir: &Path) -> Result<Vec<u8>, GitError> {
    let mut cmd = command(work_tree);
    cmd.env("GIT_DIR", git_dir)
        .args(["config", "-z", "--includes", "--show-scope", "--list"]);
    let out = match run(cmd) {
        Ok(out) => out,
        Err(e) if e.message.is_empty() => Vec::new(),
        Err(e) => return Err(e),
    };
    let quote = |text: &str| {
        let mut q = String::from("\"");
        for c in text.chars() {
            match c {
                '\\' => q.push_str("\\\\"),
                '"' => q.push_str("\\\""),
                '\n' => q.push_str("\\n"),
                '\t' => q.push_str("\\t"),
                c => q.push(c),
            }
        }
        q.push('"');
        q
    };
    let mut file = String::new();
    let mut fields = out.split(|&b| b == 0);
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        if scope != b"local" && scope != b"worktree" {
            continue;
        }
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = match entry.split_once('\n') {
            Some((k, v)) => (k, Some(v)),
            None => (entry.as_ref(), None),
        };
        let Some((section, rest)) = key.split_once('.') else {
            continue;
        };
        let (subsection, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (Some(sub), name),
            None => (None, rest),
        };
        match subsection {
            Some(sub) => file.push_str(&format!("[{section} {}]\n", quote(sub))),
            None => file.push_str(&format!("[{section}]\n")),
        }
        match value {
            Some(v) => file.push_str(&format!("\t{name} = {}\n", quote(v))),
            None => file.push_str(&format!("\t{name}\n")),
        }
    }
    Ok(file.into_bytes())
}

/// Whether a configuration file git reads for the private git directory
/// `git_dir` (whose configuration is one flat file, see [`PrivateGitDir`])
/// could define a filter driver, or (the repository's own) a diff driver;
/// `true` whenever that cannot be told from the files alone: configuration
/// in the environment, includes, a file that cannot be read.
fn might_define_drivers(git_dir: &Path) -> bool {
    use std::path::PathBuf;
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if env("GIT_CONFIG_PARAMETERS").is_some() || env("GIT_CONFIG_COUNT").is_some() {
        return true;
    }
    // Only a file that exists and mentions none of `words` is ruled out.
    let mentions = |path: &Path, words: &[&[u8]]| match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Ok(meta) if meta.is_file() && meta.len() <= 1 << 20 => {
            std::fs::read(path).map_or(true, |text| {
                let text = text.to_ascii_lowercase();
                words
                    .iter()
                    .any(|w| text.windows(w.len()).any(|window| window == *w))
            })
        }
        _ => true,
    };
    if mentions(&git_dir.join("config"), &[b"filter", b"diff", b"include"]) {
        return true;
    }
    let home = env("HOME").map(PathBuf::from);
    let mut user_files: Vec<PathBuf> = Vec::new();
    match env("GIT_CONFIG_GLOBAL") {
        Some(global) => user_files.push(global.into()),
        None => {
            let xdg = env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".config")));
            user_files.extend(xdg.map(|x| x.join("git/config")));
            user_files.extend(home.map(|h| h.join(".gitconfig")));
        }
    }
    let no_system = env("GIT_CONFIG_NOSYSTEM").is_some_and(|v| {
        let v = v.to_string_lossy().to_ascii_lowercase();
        matches!(v.as_str(), "1" | "true" | "yes" | "on")
    });
    if !no_system {
        match env("GIT_CONFIG_SYSTEM") {
            Some(system) => user_files.push(system.into()),
            None => {
                // `$(sysconfdir)/gitconfig`: `/etc` for a distribution's git,
                // `<prefix>/etc` for one built from source.
                user_files.push("/etc/gitconfig".into());
                let prefix = std::fs::canonicalize(program())
                    .ok()
                    .and_then(|git| git.parent()?.parent().map(Path::to_path_buf));
                user_files.extend(prefix.map(|p| p.join("etc/gitconfig")));
            }
        }
    }
    user_files
        .iter()
        .any(|f| mentions(f, &[b"filter", b"include"]))
}

/// Run `cmd` and return stdout, or an error carrying stderr.
pub fn run(cmd: Command) -> Result<Vec<u8>, GitError> {
    spawn(cmd)?.wait()
}

/// A git process started by [`spawn`]; [`Running::wait`] collects it.
pub struct Running {
    pid: i32,
    child: Child,
    args: String,
    dir: String,
    started: std::time::Instant,
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
        Ok(child) => {
            let pid = child.id() as i32;
            crate::sys::interrupt::remember_group(pid);
            Ok(Running {
                pid,
                child,
                args,
                dir,
                started: std::time::Instant::now(),
            })
        }
        Err(e) => Err(GitError {
            args,
            dir,
            message: format!("cannot run git: {e} (is git installed and on PATH?)"),
            host: true,
        }),
    }
}

impl Running {
    /// Wait for the process, at most the git timeout (`CRITIC_GIT_TIMEOUT`, else [`DEFAULT_TIMEOUT`]) after it started; its
    /// stdout, or an error carrying its stderr. Each process writes to its
    /// own pipes, so waiting for one while another fills its pipe only
    /// pauses the other.
    pub fn wait(self) -> Result<Vec<u8>, GitError> {
        let Running {
            pid,
            child,
            args,
            dir,
            started,
        } = self;
        let (finished, finish) = std::sync::mpsc::channel::<()>();
        let limit = timeout();
        let left = limit.saturating_sub(started.elapsed());
        let watchdog = std::thread::spawn(move || {
            use std::sync::mpsc::RecvTimeoutError::Timeout;
            // A git process still running after a second is worth cleaning
            // up after if the host is interrupted (see `crate::sys::interrupt`).
            let first = left.min(Duration::from_secs(1));
            let mut late = finish.recv_timeout(first) == Err(Timeout);
            if late && left > first {
                crate::sys::interrupt::arm();
                late = finish.recv_timeout(left - first) == Err(Timeout);
            }
            if late {
                // The whole group: git's own children hold the output pipes
                // too. The group's leader is not waited for until the pipes
                // close, so its id cannot have gone to another group.
                // SAFETY: kill(2) on the process group git leads.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            late
        });
        let output = child.wait_with_output();
        crate::sys::interrupt::forget_group(pid);
        let _ = finished.send(());
        let late = watchdog.join().unwrap_or(false);
        if late {
            return Err(GitError {
                args,
                dir,
                message: format!(
                    "git did not finish within {:.0} s and was stopped: a FIFO or device \
                     among the files git reads (`.gitignore`, `.gitattributes`, a configured \
                     excludes or attributes file) makes it wait forever; for a repository \
                     that needs longer, raise CRITIC_GIT_TIMEOUT (seconds)",
                    limit.as_secs_f64()
                ),
                host: false,
            });
        }
        let output: Output = output.map_err(|e| GitError {
            args: args.clone(),
            dir: dir.clone(),
            message: format!("cannot read git's output: {e}"),
            host: true,
        })?;
        if !output.status.success() {
            return Err(GitError {
                args,
                dir,
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
                host: false,
            });
        }
        Ok(output.stdout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_index_is_private_bounded_and_never_a_symlink_target() {
        use std::os::unix::fs::PermissionsExt;
        let repo = tempfile::tempdir().unwrap();
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(ok.success());
        let git_dir = repo.path().join(".git");
        let index = git_dir.join("index");
        std::fs::write(&index, b"DIRC").unwrap();
        std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o666)).unwrap();
        let private = PrivateGitDir::new(repo.path(), &git_dir).unwrap();
        let copy = private.path().join("index");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&copy) & 0o077, 0, "the copy is the user's alone");
        assert_eq!(mode(private.path()), 0o700);
        assert_eq!(std::fs::read(&copy).unwrap(), b"DIRC");
        drop(private);
        let big = std::fs::File::create(&index).unwrap();
        big.set_len(MAX_INDEX_BYTES + 1).unwrap();
        assert!(
            PrivateGitDir::new(repo.path(), &git_dir).is_err(),
            "a sparse giant"
        );
        std::fs::remove_file(&index).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &index).unwrap();
        assert!(
            PrivateGitDir::new(repo.path(), &git_dir).is_err(),
            "a symlink"
        );
        std::fs::remove_file(&index).unwrap();
        let private = PrivateGitDir::new(repo.path(), &git_dir).unwrap();
        assert!(
            !private.path().join("index").exists(),
            "no index: none copied"
        );
    }
}
