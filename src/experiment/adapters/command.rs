//! The `command` adapter: any program, run once per turn in the workspace.
//! `{prompt_file}`, `{round}`, `{session}` and `{workspace}` in its
//! arguments are replaced, and `CRITIC_PROMPT_FILE`, `CRITIC_ROUND`,
//! `CRITIC_SESSION`, `CRITIC_WORKSPACE` and `CRITIC_EVENTS_FILE` are set;
//! its exit is the finish. It runs in a process group of its own, killed
//! whole when the turn ends; and every process that carries the turn's
//! marker in its environment (`CRITIC_TURN`, which children inherit) is
//! killed too, so a process that left the group (`setsid`) does not
//! outlive the turn either. Confined (see [`super::confined`]), the turn
//! has a PID namespace of its own, and nothing it started outlives it; with
//! `--unconfined-agents`, a process that both leaves its session and clears
//! its environment can: docs/SECURITY.md says so.

use super::turn::{Turn, TurnEnd, TurnResult};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The most of a turn's output kept in its log; the rest is dropped (a
/// chatty or hostile agent cannot fill the disk through it).
const LOG_BYTES: u64 = 16 << 20;
/// The end of the log the runner quotes as the turn's final message.
const TAIL_BYTES: u64 = 4 << 10;

/// `argv` with the turn's placeholders replaced.
pub fn expand(argv: &[String], turn: &Turn) -> Vec<String> {
    argv.iter()
        .map(|a| {
            a.replace("{prompt_file}", &turn.prompt_file.to_string_lossy())
                .replace("{round}", &turn.round.to_string())
                .replace("{session}", &turn.session)
                .replace("{workspace}", &turn.workspace.to_string_lossy())
        })
        .collect()
}

/// Run one turn of `argv`.
pub fn run(argv: &[String], turn: &Turn) -> TurnResult {
    let started = Instant::now();
    let marker = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let argv = expand(argv, turn);
    // A fresh file: nothing planted at the name is opened.
    let _ = std::fs::remove_file(&turn.log_file);
    let log = match std::fs::File::options()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&turn.log_file)
    {
        Ok(f) => f,
        Err(e) => {
            return TurnResult {
                end: TurnEnd::NotStarted(format!("{}: {e}", turn.log_file.display())),
                duration: started.elapsed(),
                output_tail: String::new(),
            }
        }
    };
    let mut cmd = Command::new(&argv[0]);
    if turn.clean_env {
        cmd.env_clear();
        for key in ["LANG", "TZ"] {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
    }
    cmd.args(&argv[1..])
        .current_dir(&turn.workspace)
        .stdin(Stdio::null())
        .env("PATH", super::confined::path_with(&turn.path_prefix))
        .env("CRITIC_PROMPT_FILE", &turn.prompt_file)
        .env("CRITIC_ROUND", turn.round.to_string())
        .env("CRITIC_SESSION", &turn.session)
        .env("CRITIC_WORKSPACE", &turn.workspace)
        .env("CRITIC_EVENTS_FILE", &turn.events_file)
        .env(MARKER, &marker)
        .envs(turn.env.iter().map(|(k, v)| (k, v)));
    for hidden in &turn.hidden_env {
        cmd.env_remove(hidden);
    }
    let pending = match &turn.confine {
        Some(reach) => {
            let program = super::confined::locate(&argv[0], &turn.path_prefix);
            let seen: Vec<&std::path::Path> = program
                .iter()
                .chain(&turn.path_prefix)
                .chain(&reach.seen)
                .map(|p| p.as_path())
                .collect();
            match reach.confine(&mut cmd, &turn.workspace, &seen) {
                // The confinement makes the turn a session (and group) of its own.
                Ok(pending) => Some(pending),
                Err(e) => {
                    return TurnResult {
                        end: TurnEnd::NotStarted(format!("cannot confine the agent: {e}")),
                        duration: started.elapsed(),
                        output_tail: String::new(),
                    }
                }
            }
        }
        None => {
            cmd.process_group(0);
            None
        }
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => {
            return TurnResult {
                end: TurnEnd::NotStarted(format!("cannot make a pipe: {e}")),
                duration: started.elapsed(),
                output_tail: String::new(),
            }
        }
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => {
            return TurnResult {
                end: TurnEnd::NotStarted(format!("cannot make a pipe: {e}")),
                duration: started.elapsed(),
                output_tail: String::new(),
            }
        }
    };
    cmd.stdout(writer).stderr(writer2);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(cmd);
            return TurnResult {
                end: TurnEnd::NotStarted(format!("cannot start {:?}: {e}", argv[0])),
                duration: started.elapsed(),
                output_tail: String::new(),
            };
        }
    };
    // The command holds the pipe's write ends; the reader sees its end of
    // file only once they are closed here and in every process of the group.
    drop(cmd);
    let pgid = child.id() as i32;
    crate::sys::interrupt::remember_group(pgid);
    // The model's endpoint and the judge, for as long as the turn runs.
    let started_turn = match pending.map(super::confined::Pending::forward).transpose() {
        Ok(f) => f,
        Err(e) => {
            kill_group(pgid);
            let _ = child.wait();
            crate::sys::interrupt::forget_group(pgid);
            return TurnResult {
                end: TurnEnd::NotStarted(e),
                duration: started.elapsed(),
                output_tail: String::new(),
            };
        }
    };
    let (copied, copy_done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        copy_capped(reader, log);
        let _ = copied.send(());
    });
    let deadline = started + turn.timeout;
    let end = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break TurnEnd::Exited(status.code().or(status.signal().map(|s| 128 + s)))
            }
            Ok(None) if Instant::now() >= deadline => {
                kill_group(pgid);
                let _ = child.wait();
                break TurnEnd::TimedOut;
            }
            Ok(None) if turn.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) => {
                kill_group(pgid);
                let _ = child.wait();
                break TurnEnd::Stopped;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                kill_group(pgid);
                let _ = child.wait();
                break TurnEnd::NotStarted(format!("cannot wait for the agent: {e}"));
            }
        }
    };
    // Whatever the agent left running (a server, a stuck test) goes with it.
    kill_group(pgid);
    kill_marked(&marker);
    // A process the kernel killed for the turn's memory limit ended it.
    let end = match started_turn.as_ref().and_then(|t| t.memory.as_ref()) {
        Some(memory) if memory.oom_killed() && !matches!(end, TurnEnd::TimedOut) => {
            TurnEnd::MemoryLimit
        }
        _ => end,
    };
    drop(started_turn);
    crate::sys::interrupt::forget_group(pgid);
    // The log is whole once every writer is gone; a process that escaped
    // both kills keeps the pipe open, and is not waited for.
    let _ = copy_done.recv_timeout(Duration::from_secs(2));
    TurnResult {
        end,
        duration: started.elapsed(),
        output_tail: tail(&turn.log_file),
    }
}

/// The variable that marks a turn's processes.
const MARKER: &str = "CRITIC_TURN";

/// SIGKILL every process of this user whose environment holds the turn's
/// marker, until none is left (a fork may race the first pass).
fn kill_marked(marker: &str) {
    let needle = format!("{MARKER}={marker}");
    let me = std::process::id().to_string();
    for _ in 0..50 {
        let mut found = false;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
                if let Ok(pid) = pid.parse::<i32>() {
                    // SAFETY: kill(2) on a pid; no memory is involved.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    found = true;
                }
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no
    // memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Copy the agent's output into its log, keeping the first [`LOG_BYTES`]
/// and reading (to keep the agent from blocking) the rest.
fn copy_capped(mut from: std::io::PipeReader, mut to: std::fs::File) {
    let mut kept = 0u64;
    let mut buf = [0u8; 64 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = (LOG_BYTES - kept).min(n as u64) as usize;
                if room > 0 && std::io::Write::write_all(&mut to, &buf[..room]).is_ok() {
                    kept += room as u64;
                }
            }
        }
    }
}

/// The last [`TAIL_BYTES`] of the log, as text.
fn tail(log: &std::path::Path) -> String {
    // The agent could have put a FIFO or a link in the log's place.
    let Ok(mut f) = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(log)
    else {
        return String::new();
    };
    let Some(len) = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()) else {
        return String::new();
    };
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = f.take(TAIL_BYTES).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(dir: &std::path::Path, timeout: Duration) -> Turn {
        Turn {
            prompt_file: dir.join("prompt.md"),
            round: 2,
            session: "s-1".into(),
            workspace: dir.to_path_buf(),
            events_file: dir.join("events"),
            log_file: dir.join("log"),
            timeout,
            path_prefix: vec![],
            env: vec![],
            clean_env: false,
            hidden_env: Vec::new(),
            confine: None,
            stop: None,
        }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into(), "agent".into()]
    }

    #[test]
    fn placeholders_and_variables_reach_the_agent() {
        let dir = tempfile::tempdir().unwrap();
        let t = turn(dir.path(), Duration::from_secs(10));
        let mut argv = sh("echo \"$1 $CRITIC_ROUND $CRITIC_SESSION\"; exit 3");
        argv.push("{round}:{prompt_file}".into());
        let r = run(&argv, &t);
        assert_eq!(r.end, TurnEnd::Exited(Some(3)));
        let expected = format!("2:{} 2 s-1", dir.path().join("prompt.md").display());
        assert_eq!(r.output_tail, expected);
    }

    #[test]
    fn a_turn_past_its_limit_is_killed_with_everything_it_started() {
        let dir = tempfile::tempdir().unwrap();
        // Long enough for the shell to start its child and say its pid on
        // a machine busy with other tests; far below the child's 60 s.
        let t = turn(dir.path(), Duration::from_secs(3));
        let pidfile = dir.path().join("child.pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let r = run(&sh(&script), &t);
        assert_eq!(r.end, TurnEnd::TimedOut);
        assert!(r.duration < Duration::from_secs(10), "{:?}", r.duration);
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The background sleep is gone too (or a zombie being reaped).
        std::thread::sleep(Duration::from_millis(100));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z"), "{state}");
    }

    #[test]
    fn an_agent_that_leaves_a_process_behind_does_not_hang_the_turn() {
        let dir = tempfile::tempdir().unwrap();
        let t = turn(dir.path(), Duration::from_secs(30));
        let r = run(&sh("sleep 60 & echo done"), &t);
        assert_eq!(r.end, TurnEnd::Exited(Some(0)));
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        assert_eq!(r.output_tail, "done");
    }

    #[test]
    fn a_clean_environment_holds_only_what_the_turn_gives() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = turn(dir.path(), Duration::from_secs(10));
        t.clean_env = true;
        t.env = vec![("MODEL_KEY".into(), "k".into())];
        // cargo sets CARGO_MANIFEST_DIR for the test process.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let r = run(&sh("echo ${CARGO_MANIFEST_DIR:-unset} $MODEL_KEY"), &t);
        assert_eq!(r.output_tail, "unset k");
        t.clean_env = false;
        let r = run(&sh("echo ${CARGO_MANIFEST_DIR:-unset}"), &t);
        assert_ne!(r.output_tail, "unset");
    }

    #[test]
    fn what_the_agent_started_in_a_session_of_its_own_is_killed_and_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let t = turn(dir.path(), Duration::from_secs(30));
        let pids = dir.path().join("pids");
        // One keeps the output pipe open; one leaves every descriptor.
        let script = format!(
            "setsid sh -c 'echo $$ >> {p}; exec sleep 60' &\n\
             setsid sh -c 'echo $$ >> {p}; exec sleep 60' >/dev/null 2>&1 </dev/null &\n\
             sleep 0.3; echo done",
            p = pids.display()
        );
        let r = run(&sh(&script), &t);
        assert_eq!(r.end, TurnEnd::Exited(Some(0)));
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        std::thread::sleep(Duration::from_millis(200));
        let pids = std::fs::read_to_string(&pids).unwrap();
        assert_eq!(pids.lines().count(), 2, "{pids}");
        for pid in pids.lines() {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(
                state.is_empty() || state.contains(") Z"),
                "{pid} lives on: {state}"
            );
        }
    }

    #[test]
    fn a_missing_program_is_not_started() {
        let dir = tempfile::tempdir().unwrap();
        let t = turn(dir.path(), Duration::from_secs(5));
        let r = run(&["/nonexistent/agent".to_string()], &t);
        assert!(
            matches!(r.end, TurnEnd::NotStarted(ref e) if e.contains("/nonexistent/agent")),
            "{:?}",
            r.end
        );
    }

    #[test]
    fn output_past_the_cap_is_dropped_not_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let t = turn(dir.path(), Duration::from_secs(60));
        let r = run(&sh("head -c 20000000 /dev/zero; echo; echo end"), &t);
        assert_eq!(r.end, TurnEnd::Exited(Some(0)));
        assert_eq!(
            std::fs::metadata(dir.path().join("log")).unwrap().len(),
            LOG_BYTES
        );
    }
}
