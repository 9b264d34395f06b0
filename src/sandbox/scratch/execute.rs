//! One command run in a scratch slot: its environment built from scratch,
//! confined (or not, when the user says so), its output captured up to a
//! cap, its process group killed at the deadline.

use super::place::{scratch_root, POOL_PREFIX};
use critic_sdk::{RunRequest, RunResult};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Default per-run timeout.
const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on captured stdout and stderr, each.
pub const DEFAULT_OUTPUT_BYTES: usize = 64 << 10;
/// The host's own ceiling on captured stdout and stderr, each, whatever a
/// request asks for: the capture is held in memory and returned to the guest.
pub const MAX_OUTPUT_BYTES: usize = 8 << 20;
/// Environment variables passed through from the host to commands; nothing
/// else of the host's environment (API keys, tokens) reaches them. `HOME`
/// is not among them: each run's is an empty directory of its own.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYENV_VERSION",
    "RUSTUP_TOOLCHAIN",
];
/// Where toolchains live, with their default under the user's home: passed
/// on when the host sets them, else set to the default when it exists, so
/// that pyenv's shims, cargo and rustup, Go and `pip --user` packages still
/// find themselves while `HOME` is private.
const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("PYENV_ROOT", ".pyenv"),
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("PYTHONUSERBASE", ".local"),
    ("GOPATH", "go"),
];

/// A workspace-relative path that stays inside the tree.
pub fn relative(path: &str) -> Result<&Path, String> {
    let p = Path::new(path);
    if path.is_empty()
        || !p
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "refused path {path:?}: paths must be relative to the workspace, without `..`"
        ));
    }
    Ok(p)
}

/// A run's result for a command that could not be run.
pub(super) fn failed(message: String) -> RunResult {
    RunResult {
        error: Some(message),
        ..RunResult::default()
    }
}

/// `{scratch}` replaced by the slot's path.
pub(super) fn expand(text: &str, dir: &Path) -> String {
    text.replace("{scratch}", &dir.display().to_string())
}
/// `argv` run as a scratch run is, with the same environment and
/// confinement and `seen` seen too, in an empty directory of its own: what
/// a run will find (an interpreter, its packages) asked before any run.
pub fn probe(argv: &[String], confined: bool, seen: &[PathBuf]) -> RunResult {
    let place = scratch_root();
    let dir = match tempfile::Builder::new()
        .prefix(&format!("{POOL_PREFIX}{}-probe-", std::process::id()))
        .tempdir_in(&place)
    {
        Ok(d) => d,
        Err(e) => {
            return failed(format!(
                "cannot make a directory in {}: {e}",
                place.display()
            ))
        }
    };
    let (copy, tmp) = (dir.path().join("copy"), dir.path().join("tmp"));
    for d in [&copy, &tmp] {
        if let Err(e) = std::fs::create_dir_all(d) {
            return failed(format!("cannot make {}: {e}", d.display()));
        }
    }
    let request = RunRequest {
        argv: argv.to_vec(),
        timeout_ms: Some(60_000),
        ..RunRequest::default()
    };
    execute(
        &copy,
        &tmp,
        &request,
        Instant::now() + Duration::from_secs(60),
        confined,
        seen,
    )
}
/// Run the request's command in its slot and collect the result.
pub(super) fn execute(
    dir: &Path,
    tmp: &Path,
    request: &RunRequest,
    deadline: Instant,
    confined: bool,
    seen: &[PathBuf],
) -> RunResult {
    let Some(program) = request.argv.first() else {
        return failed("the run request has an empty argv".into());
    };
    let cwd = match request.cwd.as_deref() {
        Some(c) => match relative(c) {
            Ok(rel) => dir.join(rel),
            Err(e) => return failed(e),
        },
        None => dir.to_path_buf(),
    };
    let mut cmd = Command::new(expand(program, dir));
    cmd.args(request.argv[1..].iter().map(|a| expand(a, dir)))
        .current_dir(&cwd)
        .env_clear();
    for key in PASSED_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    for (key, default) in TOOLCHAIN_HOMES {
        let value = std::env::var_os(key).map(PathBuf::from).or_else(|| {
            let dir = user_home.as_ref()?.join(default);
            dir.is_dir().then_some(dir)
        });
        if let Some(v) = value {
            cmd.env(key, v);
        }
    }
    // Empty and the run's own: no dotfile of the user's (credentials,
    // shell history, tool settings) is read through it.
    let home = tmp.join("home");
    if let Err(e) = std::fs::create_dir_all(&home) {
        return failed(format!(
            "cannot make the run's home {}: {e}",
            home.display()
        ));
    }
    cmd.env("HOME", &home)
        .env("TMPDIR", tmp)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env(
            "PYTHONPATH",
            python_path(dir, request.env.get("PYTHONPATH")),
        );
    for (k, v) in request.env.iter().filter(|(k, _)| *k != "PYTHONPATH") {
        cmd.env(k, expand(v, dir));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if confined {
        let seen: Vec<&Path> = std::iter::once(Path::new(cmd.get_program()))
            .chain(seen.iter().map(PathBuf::as_path))
            .collect();
        match crate::sandbox::confine::Confinement::new(&[dir, tmp], &seen) {
            Ok(c) => c.apply(&mut cmd),
            Err(e) => return failed(format!("cannot confine the command: {e}")),
        }
    } else {
        crate::sandbox::confine::apply_unconfined(&mut cmd);
    }
    let timeout = request
        .timeout_ms
        .map_or(DEFAULT_RUN_TIMEOUT, Duration::from_millis)
        .min(deadline.saturating_duration_since(Instant::now()));
    let cap = request
        .output_bytes
        .unwrap_or(DEFAULT_OUTPUT_BYTES)
        .min(MAX_OUTPUT_BYTES);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let hint = if confined && crate::sandbox::confine::in_private_dir(Path::new(program)) {
                "a confined run's /tmp, /var/tmp and /dev/shm are its own and empty: of the \
                 host's it sees the directory of a program it is given, never a program lying \
                 in them directly; give it a directory of its own"
            } else {
                "is it installed and on PATH?"
            };
            return failed(format!("command not found: {program:?} ({hint})"));
        }
        Err(e) if confined => {
            return failed(format!(
                "cannot start {program:?} confined: {e} (`critic doctor` shows what this machine \
                 supports)"
            ))
        }
        Err(e) => return failed(format!("cannot start {program:?}: {e}")),
    };
    let pgid = child.id() as i32;
    crate::sys::interrupt::remember_group(pgid);
    let readers = [
        child.stdout.take().map(|o| capture(o, cap)),
        child.stderr.take().map(|e| capture(e, cap)),
    ];
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                kill_group(pgid);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    // Background processes the command left behind die with its group.
    kill_group(pgid);
    crate::sys::interrupt::forget_group(pgid);
    let [out, err] = readers.map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default());
    #[cfg(unix)]
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    #[cfg(not(unix))]
    let signal = None;
    RunResult {
        exit_code: status.and_then(|s| s.code()),
        signal,
        timed_out,
        stdout: out,
        stderr: err,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        error: None,
    }
}
/// The scratch copy (and its `src/`, for src-layout packages) come first on
/// Python's path, after any entries the request gives: a package the user
/// installed in editable mode from the workspace would otherwise be imported
/// from the workspace instead of the patched copy.
pub(super) fn python_path(dir: &Path, requested: Option<&String>) -> String {
    let mut parts: Vec<String> = requested.map(|p| expand(p, dir)).into_iter().collect();
    parts.push(dir.display().to_string());
    if dir.join("src").is_dir() {
        parts.push(dir.join("src").display().to_string());
    }
    parts.join(":")
}
pub(super) fn kill_group(pgid: i32) {
    // SAFETY: kill(2) on our own child's process group.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
/// Read a pipe to the end on a thread, keeping the head and the tail.
pub(super) fn capture<R: Read + Send + 'static>(
    mut pipe: R,
    cap: usize,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let half = cap / 2;
        let (mut head, mut tail, mut dropped) =
            (Vec::new(), std::collections::VecDeque::new(), 0usize);
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut data = &buf[..n];
            let room = half.saturating_sub(head.len());
            head.extend_from_slice(&data[..room.min(data.len())]);
            data = &data[room.min(data.len())..];
            tail.extend(data);
            let over = tail.len().saturating_sub(cap - half);
            tail.drain(..over);
            dropped += over;
        }
        let mut text = String::from_utf8_lossy(&head).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[... {dropped} bytes cut ...]\n"));
        }
        text.push_str(&String::from_utf8_lossy(tail.make_contiguous()));
        text
    })
}
