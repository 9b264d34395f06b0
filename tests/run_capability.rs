//! The `run` and `run-matrix` capabilities on real git repos with real
//! commands: patches applied in scratch copies, never in the workspace.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The merge fix from the recorded demo run (source half only).
fn fix_patch() -> String {
    let text = std::fs::read_to_string(demo_patch(3)).unwrap();
    let end = text.find("diff --git a/tests/").unwrap();
    text[..end].to_string()
}

const REPRO: &str = "import sys\nfrom intervals import merge\nsys.exit(1 if merge([(1, 3), (3, 5)]) != [(1, 5)] else 0)\n";

/// Run the misbehave detector in `run` mode with `config` and return the
/// run results, the verdict and the directory the host made scratch copies in.
struct Outcome {
    results: Vec<Value>,
    verdict: Value,
    tmp: tempfile::TempDir,
}

fn run_requests(repo: &Repo, config: Value, caps: &str, extra: &[&str]) -> Outcome {
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [{caps}]\nsignals:\n  - {{name: r, type: hard_gate, detector: {{misbehave}}, timeout: 60s, config: {config}}}\n"
    ));
    let state = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_SCRATCH_DIR", tmp.path())
        .env("OPENAI_API_KEY", "secret-key")
        .args(extra);
    let out = run(&mut cmd);
    let verdict = json_out(&out);
    let results = verdict["signals"][0]["metadata"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Outcome {
        results,
        verdict,
        tmp,
    }
}

fn scratch_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("critic-scratch-"))
        .collect()
}

#[test]
fn runs_apply_patches_in_scratch_copies_and_never_touch_the_workspace() {
    let repo = Repo::demo();
    // A dirty workspace: the runs must see the base, not this.
    repo.write(
        "intervals/merge.py",
        "raise SystemExit('the workspace was imported')\n",
    );
    repo.write("notes.txt", "untracked\n");
    let before = snapshot(repo.path());
    let py = |code: &str| json!(["python3", "-c", code]);
    let config = json!({"mode": "run", "requests": [
        {"files": {"repro.py": REPRO}, "argv": ["python3", "repro.py"]},
        {"patch": fix_patch(), "files": {"repro.py": REPRO}, "argv": ["python3", "repro.py"]},
        {"argv": py("import os; print(os.environ.get('OPENAI_API_KEY'), os.environ.get('PYTHONDONTWRITEBYTECODE'), os.path.exists('notes.txt'))")},
        {"patch": "diff --git a/intervals/merge.py b/intervals/merge.py\n--- a/intervals/merge.py\n+++ b/intervals/merge.py\n@@ -1,1 +1,1 @@\n-no such line\n+x\n", "argv": ["true"]},
        {"argv": ["no-such-command-for-critic"]},
        {"argv": py("print('x' * 100000)"), "output_bytes": 1000},
    ]});
    let o = run_requests(&repo, config, "run-matrix", &[]);
    assert_eq!(o.verdict["accepted"], true, "{:#}", o.verdict);
    let r = &o.results;
    assert_eq!(r.len(), 6);
    assert_eq!(
        r[0]["exit_code"], 1,
        "the bug reproduces on the base: {:#}",
        r[0]
    );
    assert_eq!(
        r[1]["exit_code"], 0,
        "the fix applies and passes: {:#}",
        r[1]
    );
    assert_eq!(
        r[2]["stdout"], "None 1 False\n",
        "no host secrets, no workspace files"
    );
    assert!(
        r[3]["error"].as_str().unwrap().contains("does not apply"),
        "{:#}",
        r[3]
    );
    assert!(
        r[4]["error"]
            .as_str()
            .unwrap()
            .contains("command not found"),
        "{:#}",
        r[4]
    );
    let out = r[5]["stdout"].as_str().unwrap();
    assert!(
        out.len() < 1100 && out.contains("bytes cut"),
        "{}",
        out.len()
    );
    assert_eq!(
        snapshot(repo.path()),
        before,
        "the workspace is byte-identical"
    );
    assert!(
        scratch_dirs(o.tmp.path()).is_empty(),
        "scratch copies are removed"
    );
}

#[test]
fn a_reused_scratch_copy_is_reset_between_runs() {
    let repo = Repo::demo();
    let config = json!({"mode": "run", "requests": [
        {"argv": ["sh", "-c", "echo left > leftover.txt && mkdir -p new/dir && echo junk >> intervals/merge.py && rm tests/test_merge.py"]},
        {"argv": ["sh", "-c", "test ! -e leftover.txt && test ! -e new && ! grep -q junk intervals/merge.py && test -f tests/test_merge.py"]},
    ]});
    let o = run_requests(&repo, config, "run-matrix", &["--jobs", "1"]);
    assert_eq!(o.results[0]["exit_code"], 0, "{:#}", o.results[0]);
    assert_eq!(
        o.results[1]["exit_code"], 0,
        "the second run saw a clean base: {:#}",
        o.results[1]
    );
}

/// Unconfined runs (`--unconfined-runs`) still die whole: their process group
/// is killed at the timeout. (Confined runs die with their PID namespace; see
/// tests/security/run_confinement.rs.)
#[test]
fn a_timeout_kills_the_whole_process_group() {
    let repo = Repo::demo();
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let config = json!({"mode": "run", "request": {
        "argv": ["sh", "-c", "sleep 30 & echo $! > \"$PIDFILE\"; wait"],
        "env": {"PIDFILE": pidfile.path()},
        "timeout_ms": 300,
    }});
    let started = std::time::Instant::now();
    let o = run_requests(&repo, config, "run", &["--unconfined-runs"]);
    assert!(started.elapsed().as_secs() < 10);
    assert_eq!(o.results[0]["timed_out"], true, "{:#}", o.results[0]);
    let pid: i32 = std::fs::read_to_string(pidfile.path())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Dead means gone, or a zombie waiting for init to reap it.
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    assert!(
        !running(),
        "the background child {pid} was killed with its group"
    );
}

#[test]
fn an_editable_install_of_the_workspace_does_not_leak_into_runs() {
    // Both outside /tmp, where a run would see them (a run's /tmp is its own).
    let place = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let repo = Repo::demo_in(place);
    repo.write(
        "tools/where.py",
        "import intervals\nprint(intervals.__file__)\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "tool"]);
    // A venv with the workspace installed in editable mode: the `.pth` path
    // entry is what `pip install -e` writes for a path-based editable install.
    let venv = tempfile::tempdir_in(place).unwrap();
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(venv.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let site = std::fs::read_dir(venv.path().join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    std::fs::write(
        site.join("__editable__.intervals-0.1.0.pth"),
        format!("{}\n", repo.path().display()),
    )
    .unwrap();
    let python = venv.path().join("bin/python");
    let leak = std::process::Command::new(&python)
        .arg(repo.path().join("tools/where.py"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&leak.stdout).starts_with(&repo.path().display().to_string()),
        "outside the critic the editable install points at the workspace"
    );
    let config = json!({"mode": "run", "request": {"argv": [python, "tools/where.py"]}});
    let o = run_requests(&repo, config, "run", &[]);
    let file = o.results[0]["stdout"].as_str().unwrap();
    assert!(
        file.contains("critic-scratch-"),
        "imported from the scratch copy: {:#}",
        o.results[0]
    );
}

#[test]
fn runs_need_the_capability() {
    let repo = Repo::demo();
    let config = json!({"mode": "run", "requests": [{"argv": ["true"]}]});
    let o = run_requests(&repo, config.clone(), "log", &[]);
    let err = o.verdict["signals"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("capability 'run-matrix' is not declared"),
        "{err}"
    );
    let o = run_requests(&repo, config, "run-matrix", &["--deny", "run-matrix"]);
    let err = o.verdict["signals"][0]["error"].as_str().unwrap();
    assert!(err.contains("denied by the user"), "{err}");
}

/// Start a check whose detector runs `sleep 30` in a scratch copy and return
/// it once the command is running, with the pid file it writes (outside its
/// copy, so the run is unconfined; tests/security/run_confinement.rs has the confined case).
fn start_long_run(
    repo: &Repo,
    scratch: &Path,
    state: &Path,
) -> (std::process::Child, tempfile::NamedTempFile) {
    let pidfile = tempfile::NamedTempFile::new().unwrap();
    let config = json!({"mode": "run", "request": {
        "argv": ["sh", "-c", "echo $$ > \"$PIDFILE\"; exec sleep 30"],
        "env": {"PIDFILE": pidfile.path()},
    }});
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [run]\nsignals:\n  - {{name: r, type: hard_gate, detector: {{misbehave}}, timeout: 60s, config: {config}}}\n"
    ));
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state);
    cmd.arg("--unconfined-runs")
        .env("CRITIC_SCRATCH_DIR", scratch)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_to_string(pidfile.path())
        .unwrap()
        .trim()
        .is_empty()
    {
        assert!(started.elapsed().as_secs() < 30, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (child, pidfile)
}

fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn an_interrupted_check_kills_its_commands_and_removes_its_copies() {
    let repo = Repo::demo();
    let before = snapshot(repo.path());
    let (scratch, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut child, pidfile) = start_long_run(&repo, scratch.path(), state.path());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    let pid = std::fs::read_to_string(pidfile.path()).unwrap();
    // SIGKILL is delivered asynchronously: the command dies when next
    // scheduled, possibly just after the host has exited.
    let killed = std::time::Instant::now();
    while running(&pid) {
        assert!(
            killed.elapsed().as_secs() < 5,
            "the command was killed with the host"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        scratch_dirs(scratch.path()).is_empty(),
        "scratch copies removed"
    );
    assert_eq!(snapshot(repo.path()), before);
}

#[test]
fn copies_left_by_a_killed_host_are_swept_by_the_next_one() {
    let repo = Repo::demo();
    let before = snapshot(repo.path());
    let (scratch, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut child, pidfile) = start_long_run(&repo, scratch.path(), state.path());
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(scratch_dirs(scratch.path()).len(), 1, "left behind");
    let config = json!({"mode": "run", "request": {"argv": ["true"]}});
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [run]\nsignals:\n  - {{name: r, type: hard_gate, detector: {{misbehave}}, config: {config}}}\n"
    ));
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_SCRATCH_DIR", scratch.path());
    assert!(run(&mut cmd).status.success());
    let pid = std::fs::read_to_string(pidfile.path()).unwrap();
    assert!(
        !running(&pid),
        "the orphaned command was killed by the sweep"
    );
    assert!(
        scratch_dirs(scratch.path()).is_empty(),
        "the stale copy was swept"
    );
    assert_eq!(snapshot(repo.path()), before);
}

/// A run's network reaches nothing, but an address off this machine
/// behaves as from a container whose packets go nowhere: the connection
/// waits and times out (a client's timeout test, such as requests' to
/// 10.255.255.1, passes as in SWE-bench's harness) instead of failing at
/// once as unreachable; loopback still answers at once, and a name lookup
/// fails at once instead of waiting on a name server it cannot reach.
#[test]
fn a_connection_off_the_machine_times_out_in_a_confined_run() {
    use pluggable_critic::sandbox::scratch::ScratchPool;
    let repo = Repo::new(&[("README", "x\n")]);
    let pool = ScratchPool::new(repo.path(), "HEAD", 1, true).unwrap();
    let probe = r#"
import socket, time
def attempt(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(1.5)
    start = time.monotonic()
    try:
        s.connect(address)
        return "connected"
    except socket.timeout:
        return f"timed out after {time.monotonic() - start:.1f}"
    except OSError as e:
        return f"{e.strerror}"
print("v4", attempt(socket.AF_INET, ("10.255.255.1", 80)))
print("v6", attempt(socket.AF_INET6, ("2001:db8::1", 80)))
print("lo", attempt(socket.AF_INET, ("127.0.0.1", 9)))
start = time.monotonic()
try:
    socket.getaddrinfo("pypi.org", 443)
    print("dns answered")
except OSError:
    print(f"dns failed after {time.monotonic() - start:.1f}")
"#;
    let request = critic_sdk::RunRequest {
        argv: vec!["python3".into(), "-c".into(), probe.into()],
        ..Default::default()
    };
    let result = pool.run(
        &request,
        std::time::Instant::now() + std::time::Duration::from_secs(60),
    );
    assert_eq!(result.exit_code, Some(0), "{result:?}");
    let lines: Vec<&str> = result.stdout.lines().collect();
    assert!(lines[0].starts_with("v4 timed out after 1."), "{lines:?}");
    // Docker's default network has no IPv6: unreachable there too.
    assert_eq!(lines[1], "v6 Network is unreachable", "{lines:?}");
    assert_eq!(lines[2], "lo Connection refused", "{lines:?}");
    // A name lookup fails at once: no name server is there to wait on.
    assert_eq!(lines[3], "dns failed after 0.0", "{lines:?}");
}
