//! The host's promises against a hostile skill, a hostile agent and hostile
//! model output (docs/SECURITY.md lists each promise with its test here).
//! Every test attacks the real binary: a hostile detector (the misbehave
//! fixture), a workspace an agent shaped (symlinks, edited state), or a
//! command a detector runs.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A one-signal skill running the misbehave fixture with `config`.
fn skill_with(config: Value, extra: &str) -> tempfile::TempDir {
    temp_skill(&format!(
        "name: t\nversion: 0.1.0\nmax_iterations: 5\ncapabilities: [log, read-file, run, run-matrix]\n{extra}signals:\n  - {{name: s, type: hard_gate, detector: {{misbehave}}, timeout: 20s, config: {config}}}\n"
    ))
}

/// Run a check; returns (exit code, verdict or Null, stderr, raw stdout length).
fn verdict_of(cmd: &mut std::process::Command) -> (i32, Value, String, usize) {
    let out = run(cmd);
    let code = out.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code, v, stderr(&out), out.stdout.len())
}

/// The results of the run requests a misbehave `run` detector made.
fn run_results(repo: &Repo, requests: Value, extra: &[&str]) -> Vec<Value> {
    let skill = skill_with(json!({"mode": "run", "requests": requests}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) =
        verdict_of(check(skill.path(), repo.path(), &demo_events(3), state.path()).args(extra));
    assert_eq!(code, 0, "{err}\n{v:#}");
    v["signals"][0]["metadata"]["results"]
        .as_array()
        .unwrap()
        .clone()
}

/// The tests that make directories in `/run` (and remove them after), one
/// at a time.
fn run_dirs() -> std::sync::MutexGuard<'static, ()> {
    static RUN_DIRS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RUN_DIRS.lock().unwrap_or_else(|e| e.into_inner())
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// 1. Every host-side wait a guest can start ends by the signal's deadline.
#[test]
fn a_sleeping_detector_is_stopped_at_its_timeout() {
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: '{misbehave}', timeout: 1s, config: {mode: sleep, ms: 60000}}\n",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    let took = started.elapsed();
    assert_eq!(code, 1, "{err}");
    assert!(took < Duration::from_secs(5), "held the check for {took:?}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("timed out after 1s"), "{e}");
}

// 2. Feedback files never follow a symlink the agent planted.
#[test]
fn feedback_files_do_not_follow_planted_symlinks() {
    let skill = skill_with(
        json!({"mode": "artifacts", "artifacts": [{"path": "notes/hint.md", "content": "pwned"}]}),
        "",
    );
    for planted in [
        ".critic",
        ".critic/feedback",
        ".critic/feedback/t",
        ".critic/feedback/t/notes",
    ] {
        let repo = Repo::demo();
        let outside = tempfile::tempdir().unwrap();
        let link = repo.path().join(planted);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let state = tempfile::tempdir().unwrap();
        let (code, v, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert!(
            listing(outside.path()).is_empty(),
            "{planted}: wrote outside the workspace: {:?}",
            listing(outside.path())
        );
        // The signal fails (closed): the agent is sent back, nothing written.
        assert_eq!(code, 1, "{planted}: {err}");
        let e = v["signals"][0]["error"].as_str().unwrap();
        assert!(e.contains("symlink"), "{planted}: {e}");
    }
    // The file itself a symlink to a file outside: replaced, never written through.
    let repo = Repo::demo();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::create_dir_all(repo.path().join(".critic/feedback/t/notes")).unwrap();
    std::os::unix::fs::symlink(
        &victim,
        repo.path().join(".critic/feedback/t/notes/hint.md"),
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".critic/feedback/t/notes/hint.md")).unwrap(),
        "pwned"
    );
    assert_eq!(
        v["signals"][0]["artifacts"][0],
        ".critic/feedback/t/notes/hint.md"
    );
    // No repository of the skill's making among the feedback files.
    for path in [".git/config", "a/.git", "a/.GIT/hooks/post-checkout"] {
        let skill = skill_with(
            json!({"mode": "artifacts", "artifacts": [{"path": path, "content": "[core]"}]}),
            "",
        );
        let repo = Repo::demo();
        let state = tempfile::tempdir().unwrap();
        let (code, v, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert_eq!(code, 1, "{path}: {err}");
        let e = v["signals"][0]["error"].as_str().unwrap();
        assert!(e.contains(".git"), "{path}: {e}");
        assert!(!repo.path().join(".critic/feedback").exists(), "{path}");
    }
}

// 3. Host-side writes into a scratch copy stay in it.
#[test]
fn scratch_preparation_does_not_follow_committed_symlinks() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), "keep").unwrap();
    let repo = Repo::demo();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("lnk")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), repo.path().join("vic")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "links"]);
    let patch = "diff --git a/lnk/p.txt b/lnk/p.txt\nnew file mode 100644\n--- /dev/null\n+++ b/lnk/p.txt\n@@ -0,0 +1 @@\n+x\n";
    let results = run_results(
        &repo,
        json!([
            {"argv": ["true"], "files": {"lnk/t.txt": "x"}},
            {"argv": ["true"], "files": {"lnk/victim": null}},
            {"argv": ["true"], "files": {"vic": "overwritten"}},
            {"argv": ["true"], "patch": patch},
        ]),
        &[],
    );
    for r in &results {
        let e = r["error"].as_str().unwrap_or_default();
        assert!(e.contains("symlink"), "refused: {r:#}");
    }
    assert_eq!(listing(outside.path()), ["victim"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim")).unwrap(),
        "keep"
    );
}

// 4. State lives outside the workspace: editing `.git` cannot switch the critic off.
#[test]
fn state_is_kept_outside_the_workspace() {
    let skill = skill_with(json!({"mode": "fire", "text": "not yet"}), "");
    let repo = Repo::demo();
    let xdg = tempfile::tempdir().unwrap();
    let before = snapshot(repo.path());
    let check_once = || {
        let mut cmd = critic();
        cmd.args(["check", "--skill"])
            .arg(skill.path())
            .arg("--workspace")
            .arg(repo.path())
            .arg("--events")
            .arg(demo_events(3))
            .env("XDG_STATE_HOME", xdg.path());
        verdict_of(&mut cmd)
    };
    let (code, v, err, _) = check_once();
    assert_eq!(code, 1, "{err}");
    assert_eq!(v["iteration"], 1);
    assert_eq!(
        snapshot(repo.path()),
        before,
        "the workspace and .git are untouched"
    );
    let root = xdg.path().join("pluggable-critic/workspaces");
    let dirs = listing(&root);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(xdg.path().join("pluggable-critic"))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o077, 0, "private: {mode:o}");
    // What an agent would try: a forged state where the old default was.
    let forged = repo.path().join(".git/critic/state/t/default");
    std::fs::create_dir_all(&forged).unwrap();
    std::fs::write(
        forged.join("harness.json"),
        r#"{"schema_version":1,"skill":"t","session":"default","instance":"x","iteration":9,"rejections":5}"#,
    )
    .unwrap();
    let (code, v, _, _) = check_once();
    assert_eq!(code, 1);
    assert_eq!(v["iteration"], 2);
    assert_eq!(v["budget_exhausted"], false);
}

// 5. A detector's error string is capped, in the verdict and the follow-up.
#[test]
fn a_huge_error_string_is_capped() {
    let skill = skill_with(
        json!({"mode": "error", "text": "e", "repeat": 50_000_000}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, len) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    assert!(len < 64 << 10, "verdict of {len} bytes");
    assert!(err.len() < 64 << 10, "stderr of {} bytes", err.len());
    assert!(v["signals"][0]["error"]
        .as_str()
        .unwrap()
        .contains("bytes cut"));
    assert!(v["followup"].as_str().unwrap().len() < 2000);
}

// 6. Absurd limits are refused with a clear error, never a panic.
#[test]
fn absurd_limits_are_refused_without_panicking() {
    for timeout in [
        "1e20",
        "18446744073709551616",
        "\"999999999999m\"",
        "-1",
        ".nan",
        "3601",
    ] {
        let skill = temp_skill(&format!(
            "name: t\nversion: 0.1.0\nsignals:\n  - {{name: s, type: hard_gate, detector: '{{misbehave}}', timeout: {timeout}}}\n"
        ));
        let out = run(critic().arg("validate").arg(skill.path()));
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "validate, timeout {timeout}: {err}"
        );
        // YAML cannot hold NaN as JSON: refused by the parser, at its place.
        let place = if timeout == ".nan" {
            "critic.yaml:4:"
        } else {
            "signals[0].timeout"
        };
        assert!(err.contains(place), "{timeout}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        let repo = Repo::demo();
        let state = tempfile::tempdir().unwrap();
        let out = run(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert_eq!(out.status.code(), Some(2), "check, timeout {timeout}");
        assert!(stderr(&out).contains(place));
    }
    for limits in [
        "{memory_mb: 99999999999}",
        "{output_kb: 18446744073709551615}",
        "{stdio_kb: -5}",
    ] {
        let skill = temp_skill(&format!(
            "name: t\nversion: 0.1.0\nlimits: {limits}\nsignals:\n  - {{name: s, type: hard_gate, detector: '{{misbehave}}'}}\n"
        ));
        let out = run(critic().arg("validate").arg(skill.path()));
        assert_eq!(out.status.code(), Some(2), "{limits}: {}", stderr(&out));
        assert!(stderr(&out).contains("limits."), "{}", stderr(&out));
    }
}

// 7. The host caps what it captures of a run, whatever the request asks.
#[test]
fn run_output_has_a_host_ceiling() {
    let request = json!({"argv": ["sh", "-c", "head -c 60000000 /dev/zero | tr '\\0' x"], "output_bytes": 4_000_000_000u64});
    let skill = skill_with(
        json!({"mode": "run", "requests": [request]}),
        "limits: {output_kb: 20000}\n",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    let out = v["signals"][0]["metadata"]["results"][0]["stdout"]
        .as_str()
        .unwrap();
    assert!(out.len() <= (8 << 20) + 100, "{} bytes captured", out.len());
    assert!(out.contains("bytes cut"));

    // A matrix shares one ceiling among its runs, and has a most requests.
    let eight = json!({"argv": ["sh", "-c", "head -c 8000000 /dev/zero | tr '\\0' x"], "output_bytes": 8_000_000});
    let skill = skill_with(
        json!({"mode": "run", "requests": vec![eight; 8]}),
        "limits: {output_kb: 100000}\n",
    );
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    let results = v["signals"][0]["metadata"]["results"].as_array().unwrap();
    let total: usize = results
        .iter()
        .map(|r| r["stdout"].as_str().unwrap().len())
        .sum();
    assert!(
        total <= (16 << 20) + 8 * 100,
        "{total} bytes captured in all"
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": vec![json!({"argv": ["true"]}); 1001]}),
        "",
    );
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("at most 1000"), "{e}");
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            text.contains(marker).then_some(text)
        })
        .collect()
}

// 8. When a run ends, everything it started is gone.
#[test]
fn nothing_a_run_starts_outlives_it() {
    let repo = Repo::demo();
    let marker = format!("{}.{}", 90 + std::process::id() % 9, std::process::id());
    let results = run_results(
        &repo,
        json!([
            {"argv": ["sh", "-c", format!("setsid sh -c 'sleep {marker}; echo > f' > /dev/null 2>&1 & echo started")]},
            {"argv": ["sh", "-c", format!("(trap '' HUP TERM; nohup sleep {marker}1 > /dev/null 2>&1 &); sleep 30")], "timeout_ms": 500},
        ]),
        &["--jobs", "1"],
    );
    assert_eq!(results[0]["stdout"], "started\n", "{:#}", results[0]);
    assert_eq!(results[1]["timed_out"], true, "{:#}", results[1]);
    // Killed with their run: gone as soon as the kernel has reaped them
    // (the sleeps would last 90 s and more).
    let t = std::time::Instant::now();
    while !processes_with(&format!("sleep {marker}")).is_empty()
        && t.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        processes_with(&format!("sleep {marker}")),
        Vec::<String>::new()
    );
}

// 9. Runs are confined: no host environment, no write outside, no network.
#[test]
fn runs_cannot_read_host_secrets_write_outside_or_reach_the_network() {
    let repo = Repo::demo();
    let before = snapshot(repo.path());
    let outside = tempfile::tempdir().unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tport, uport) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let script = format!(
        r#"
import os, socket, glob
found = []
for p in glob.glob('/proc/[0-9]*/environ'):
    try:
        if b'CRITIC_TEST_SECRET' in open(p, 'rb').read(): found.append(p)
    except OSError: pass
print('secret:', found)
for target in ['{ws}/pwned', '{out}/pwned', '/tmp/critic-pwned-{pid}', os.path.expanduser('~/critic-pwned-{pid}')]:
    try:
        open(target, 'w').write('x'); print('wrote', target)
    except OSError as e: print('denied', target, e.errno)
open(os.path.join(os.environ['TMPDIR'], 'ok'), 'w').write('x'); print('tmp ok')
open('mine.txt', 'w').write('x'); print('copy ok')
print('pool mode:', oct(os.stat('..').st_mode & 0o777))
try:
    socket.create_connection(('127.0.0.1', {tport}), timeout=2); print('tcp connected')
except OSError as e: print('tcp failed', e)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try: s.sendto(b'leak', ('127.0.0.1', {uport})); print('udp sent')
except OSError as e: print('udp failed', e)
try:
    print('cwd of parent:', os.readlink('/proc/%d/cwd' % os.getppid()))
except OSError as e: print('parent hidden', e.errno)
"#,
        ws = repo.path().display(),
        out = outside.path().display(),
        pid = std::process::id(),
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_TEST_SECRET", "sk-live-123");
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    let out = r["stdout"].as_str().unwrap();
    assert!(out.contains("secret: []"), "{r:#}");
    // The workspace and the host's directories stay closed; /tmp and HOME
    // are the run's own, so writes there land in private places.
    for closed in [repo.path(), outside.path()] {
        assert!(
            !out.contains(&format!("wrote {}", closed.display())),
            "{r:#}"
        );
    }
    assert!(out.contains("tmp ok") && out.contains("copy ok"), "{r:#}");
    assert!(out.contains("pool mode: 0o700"), "{r:#}");
    // Inside, its own loopback answers (nothing listens there); the host's
    // sockets below see nothing.
    assert!(out.contains("tcp failed"), "{r:#}");
    assert!(!out.contains("cwd of parent"), "{r:#}");
    assert!(tcp.accept().is_err(), "a connection reached the host");
    assert!(
        udp.recv(&mut [0; 16]).is_err(),
        "a datagram reached the host"
    );
    assert_eq!(snapshot(repo.path()), before);
    assert!(listing(outside.path()).is_empty());
    assert!(!Path::new(&format!("/tmp/critic-pwned-{}", std::process::id())).exists());
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    assert!(!home
        .join(format!("critic-pwned-{}", std::process::id()))
        .exists());
}

// 9a. Landlock governs contents, not metadata: a run must not change the
// mode, owner, times or extended attributes of anything outside its copy
// (a setuid bit or a file capability planted there would outlive the run),
// nor undo the read-only mounts that stop it.
#[test]
fn runs_cannot_change_metadata_outside_their_copy() {
    use std::os::unix::fs::MetadataExt;
    let repo = Repo::demo();
    let outside = tempfile::tempdir().unwrap();
    let victims = [
        outside.path().join("tool"),
        repo.path().join("pyproject.toml"),
    ];
    std::fs::write(&victims[0], "#!/bin/sh\n").unwrap();
    let stat = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.mode(), m.uid(), m.gid(), m.mtime(), m.mtime_nsec())
    };
    let before: Vec<_> = victims.iter().map(|p| stat(p)).collect();
    let script = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class MountAttr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ('set', 'clr', 'prop', 'userns')]
def attempts(path):
    for name, act in [('chmod', lambda: os.chmod(path, 0o6777)),
                      ('chown', lambda: os.chown(path, 1, 1)),
                      ('utime', lambda: os.utime(path, (0, 0))),
                      ('setxattr', lambda: os.setxattr(path, 'user.critic', b'x')),
                      ('link', lambda: os.link(path, path + '.hard'))]:
        try:
            act(); print('CHANGED', name, path)
        except OSError as e:
            print('denied', name, e.errno)
def undo():
    # mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, {clear RDONLY})
    r = libc.syscall(442, -100, b'/', 0x8000, ctypes.byref(MountAttr(0, 1, 0, 0)), 32)
    print('mount_setattr', r, ctypes.get_errno())
    r = libc.mount(None, b'/', None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND
    print('remount', r, ctypes.get_errno())
for p in sys.argv[1:]:
    attempts(p)
undo()
for p in sys.argv[1:]:
    attempts(p)
open('mine.txt', 'w').write('x'); os.chmod('mine.txt', 0o700); print('own copy ok')
"#;
    let mut argv = vec![json!("python3"), json!("-c"), json!(script)];
    argv.extend(victims.iter().map(|p| json!(p.display().to_string())));
    let results = run_results(&repo, json!([{ "argv": argv }]), &[]);
    let out = results[0]["stdout"].as_str().unwrap();
    assert!(!out.contains("CHANGED"), "{:#}", results[0]);
    assert_eq!(out.matches("denied").count(), 20, "{:#}", results[0]);
    assert!(out.contains("own copy ok"), "{:#}", results[0]);
    assert!(out.contains("mount_setattr -1"), "{:#}", results[0]);
    let after: Vec<_> = victims.iter().map(|p| stat(p)).collect();
    assert_eq!(before, after);
    assert_eq!(listing(outside.path()), ["tool"]);
    let attr = std::process::Command::new("getfattr")
        .arg("-d")
        .arg(&victims[0])
        .output();
    if let Ok(attr) = attr {
        assert!(attr.stdout.is_empty(), "{attr:?}");
    }
}

// 9c. The repository's own configuration is the agent's to write: nothing
// it names (hooks, the file-system monitor, filter drivers, in a
// submodule too) may run with the host's rights, in a check or while a
// scratch copy is made.
#[test]
fn repository_configuration_cannot_make_the_host_run_programs() {
    let marks = tempfile::tempdir().unwrap();
    let mark = |name: &str| format!("sh -c 'touch {}/{name}; cat'", marks.path().display());
    let inner = Repo::new(&[(".gitattributes", "* filter=sub\n"), ("a.txt", "a\n")]);
    let repo = Repo::new(&[
        (
            ".gitattributes",
            "*.py filter=evil\n*.txt filter=a=b\n*.dat filter=user\n",
        ),
        ("m.py", "x = 1\n"),
        ("n.txt", "t\n"),
        ("g.dat", "g\n"),
    ]);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        inner.path().to_str().unwrap(),
        "sub",
    ]);
    repo.git(&["commit", "-qm", "sub"]);
    let hooks = marks.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "post-index-change",
        "post-checkout",
        "reference-transaction",
    ] {
        let path = hooks.join(hook);
        std::fs::write(&path, format!("#!/bin/sh\n{}\n", mark(hook))).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let included = marks.path().join("included.cfg");
    std::fs::write(
        &included,
        format!("[filter \"inc\"]\n\tclean = \"{}\"\n", mark("included")),
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".git/info/attributes"),
        "*.md filter=inc\n",
    )
    .unwrap();
    for (key, value) in [
        ("core.fsmonitor", mark("fsmonitor")),
        ("core.hooksPath", hooks.display().to_string()),
        ("filter.evil.clean", mark("clean")),
        ("filter.evil.smudge", mark("smudge")),
        ("filter.a=b.process", mark("process")),
        ("filter.a=b.required", "true".into()),
        ("include.path", included.display().to_string()),
        ("diff.external", mark("external")),
        ("core.pager", mark("pager")),
    ] {
        repo.git(&["config", key, &value]);
    }
    let sub = repo.path().join("sub");
    let sub_git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&sub)
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?} in the submodule");
    };
    // A new commit in the submodule, which `diff.submodule=diff` would diff
    // with a git started inside it, under its own external diff.
    std::fs::write(sub.join("b.txt"), "b\n").unwrap();
    sub_git(&["add", "b.txt"]);
    sub_git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@l",
        "commit",
        "-qm",
        "b",
    ]);
    sub_git(&["config", "filter.sub.clean", &mark("submodule")]);
    sub_git(&["config", "diff.external", &mark("submodule-external")]);
    repo.git(&["config", "diff.submodule", "diff"]);
    // The agent's edits: tracked files of each filter, new files, the
    // submodule's file.
    repo.write("m.py", "x = 2\n");
    repo.write("n.txt", "u\n");
    repo.write("README.md", "new\n");
    repo.write("new.py", "y = 1\n");
    repo.write("sub/a.txt", "b\n");

    // A filter of the user's own configuration (Git LFS's, say) is off too:
    // such a program reads names of further programs from the repository.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!("[filter \"user\"]\n\tclean = \"{}\"\n", mark("global")),
    )
    .unwrap();
    // A diff driver whose function-name pattern backtracks for hours.
    let redos = "(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2\\1c";
    repo.git(&["config", "diff.slow.xfuncname", redos]);
    std::fs::write(
        repo.path().join(".git/info/attributes"),
        "*.md filter=inc\n*.py diff=slow\n",
    )
    .unwrap();
    repo.write("g.dat", "h\n");
    let line = format!("{}\n", "a".repeat(80));
    repo.write("m.py", &format!("{}x = 2\n", line.repeat(10)));

    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["sh", "-c", "head -c 6 m.py; cat n.txt"]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (code, v, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("HOME", home.path())
            .env("CRITIC_GIT_TIMEOUT", "30")
            // Would make `git config` read that file alone, hiding the
            // repository's drivers from the host.
            .env("GIT_CONFIG", "/dev/null"),
    );
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    let result = &v["signals"][0]["metadata"]["results"][0];
    assert_eq!(result["stdout"], "x = 1\nt\n", "{result:#}");
    assert_eq!(listing(marks.path()), ["hooks", "included.cfg"]);

    // Armed: the same repository runs them for git itself (the pattern
    // aside, which would hold this test for hours).
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "diff.slow.xfuncname=x^",
            "diff",
            "--no-ext-diff",
            "HEAD",
        ])
        .current_dir(repo.path())
        .env("HOME", home.path())
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "filter.a=b.required")
        .env("GIT_CONFIG_VALUE_0", "false")
        .output()
        .unwrap();
    assert!(out.status.success() || !out.stderr.is_empty());
    let ran = listing(marks.path());
    for armed in ["clean", "fsmonitor", "global"] {
        assert!(ran.contains(&armed.to_string()), "{armed}: {ran:?}");
    }
}

// 9c (race). The configuration is read once per check: a process the agent
// left running that swaps `.git/config` in a loop never gets a filter past
// the host's vetting.
#[test]
fn a_configuration_swapped_during_checks_runs_nothing() {
    let marks = tempfile::tempdir().unwrap();
    let repo = Repo::new(&[
        (".gitattributes", "*.py filter=evil\n"),
        ("m.py", "x = 1\n"),
    ]);
    let config = repo.path().join(".git/config");
    let benign = std::fs::read_to_string(&config).unwrap();
    let evil = format!(
        "{benign}[filter \"evil\"]\n\tclean = \"sh -c 'touch {}/ran; cat'\"\n",
        marks.path().display()
    );
    let (benign_file, evil_file) = (repo.path().join(".git/b"), repo.path().join(".git/e"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, config) = (stop.clone(), config.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (file, text) in [(&benign_file, &benign), (&evil_file, &evil)] {
                    std::fs::write(file, text).unwrap();
                    std::fs::rename(file, &config).unwrap();
                }
            }
        })
    };
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    for i in 0..15 {
        // A tracked file changed each time, so git reads it through the filter.
        repo.write("m.py", &format!("x = {i}\n"));
        let (code, _, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert_eq!(code, 0, "{err}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(listing(marks.path()).is_empty(), "a filter ran in the host");
}

// 9c''. With the repository's configuration clean, a filter of the user's
// own (a system- or user-wide Git LFS) is still off: the host cannot vet
// what such a program reads from the repository.
#[test]
fn a_filter_of_the_users_own_configuration_does_not_run() {
    let marks = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!(
            "[filter \"user\"]\n\tclean = \"sh -c 'touch {}/ran; cat'\"\n",
            marks.path().display()
        ),
    )
    .unwrap();
    let repo = Repo::new(&[(".gitattributes", "*.dat filter=user\n"), ("g.dat", "g\n")]);
    repo.write("g.dat", "h\n");
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, _, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).env("HOME", home.path()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        listing(marks.path()).is_empty(),
        "the filter ran in the host"
    );
    // Armed: git itself runs it.
    let out = std::process::Command::new("git")
        .args(["diff", "--no-ext-diff", "HEAD"])
        .current_dir(repo.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(listing(marks.path()), ["ran"]);
}

// 9c'. `core.worktree` in the agent's configuration cannot point the host's
// diff at a directory outside the workspace (whose files would reach every
// detector, and any model one calls).
#[test]
fn the_diff_stays_in_the_workspace_whatever_core_worktree_says() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY\n").unwrap();
    let repo = Repo::demo();
    repo.write("new.py", "x = 1\n");
    repo.git(&["config", "core.worktree", outside.path().to_str().unwrap()]);
    let skill = skill_with(json!({"mode": "echo"}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(!v.to_string().contains("id_rsa"), "{v:#}");
    assert!(!err.contains("PRIVATE KEY"), "{err}");
    if code == 0 {
        let files = v["signals"][0]["metadata"]["files"].to_string();
        assert!(files.contains("new.py"), "{files}");
    } else {
        assert!(err.contains("core.worktree"), "{err}");
    }
}

// 9d. Runs reuse scratch slots: whatever one run does to the base files,
// the next run sees the base commit again. Each attack below keeps the
// file's length and puts its modification time back, or writes through a
// name the slot's directories never see.
#[test]
fn a_run_cannot_leave_changes_for_the_next() {
    let repo = Repo::demo();
    let target = "intervals/merge.py";
    let base = std::fs::read(repo.path().join(target)).unwrap();
    let attack = |body: &str| {
        let script = format!(
            r#"
import mmap, os
p = '{target}'
st = os.stat(p)
def poison(data):
    return (b'raise SystemExit("POISONED")\n' + data)[:len(data)]
{body}
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
print('attacked')
"#
        );
        json!({"argv": ["python3", "-c", script]})
    };
    let checker = json!({"argv": ["sh", "-c", format!("stat -c %a {target}; cat {target}")]});
    let attacks = [
        // Same length, in place.
        "data = open(p, 'rb').read()\nopen(p, 'r+b').write(poison(data))",
        // Through a shared mapping.
        "f = open(p, 'r+b'); m = mmap.mmap(f.fileno(), 0); f.close()\nm[:] = poison(m[:]); m.flush(); del m",
        // Through a hard link in a new directory, both gone at the end.
        "os.mkdir('d'); os.link(p, 'd/h'); data = open(p, 'rb').read()\n\
         open('d/h', 'r+b').write(poison(data)); os.unlink('d/h'); os.rmdir('d')",
        // Through a hard link in the private temporary directory.
        "h = os.path.join(os.environ['TMPDIR'], 'h')\ntry:\n    os.link(p, h)\n    \
         open(h, 'r+b').write(poison(open(p, 'rb').read()))\nexcept OSError as e:\n    print('link refused', e.errno)",
        // The mode.
        "os.chmod(p, 0o777)",
    ];
    let mut requests = Vec::new();
    for body in attacks {
        requests.push(attack(body));
        requests.push(checker.clone());
    }
    let results = run_results(&repo, Value::Array(requests), &["--jobs", "1"]);
    let expected = format!("644\n{}", String::from_utf8_lossy(&base));
    for (i, pair) in results.chunks(2).enumerate() {
        assert!(
            pair[0]["stdout"].as_str().unwrap().contains("attacked"),
            "attack {i}: {:#}",
            pair[0]
        );
        assert_eq!(
            pair[1]["stdout"],
            expected.as_str(),
            "after attack {i}: {:#}",
            pair[0]
        );
    }
}

// 9e. A run cannot make its scratch copy outlive the check: not with a
// tree deeper than the host's descriptor limit, nor with directories it
// took the permissions off.
#[test]
fn a_run_cannot_keep_its_scratch_copy_alive() {
    let repo = Repo::demo();
    let place = tempfile::tempdir().unwrap();
    let script = r#"
import os
for base in ('.', os.environ['TMPDIR']):
    os.chdir(base)
    for _ in range(400):
        os.mkdir('d'); os.chdir('d')
    open('big', 'wb').write(b'x' * 1000000)
    os.chdir(base)
    os.makedirs('locked/inner'); open('locked/inner/f', 'w').write('x')
    os.chmod('locked/inner', 0); os.chmod('locked', 0)
print('shaped')
"#;
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_SCRATCH_DIR", place.path());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    assert_eq!(r["stdout"], "shaped\n", "{r:#}");
    assert!(!err.contains("cannot remove"), "{err}");
    assert_eq!(listing(place.path()), Vec::<String>::new(), "{err}");
}

// 9e'. The place scratch pools live in may be shared: the sweep of pools a
// killed host left behind removes only this user's private ones, never a
// directory another user named like one.
#[test]
fn the_stale_pool_sweep_removes_only_this_users_pools() {
    use std::os::unix::fs::{chown, PermissionsExt};
    let place = tempfile::tempdir().unwrap();
    let dead = 4_194_305; // above the kernel's largest pid_max: never alive
    let make = |name: &str, mode: u32| {
        let dir = place.path().join(name);
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/keep"), "x").unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    };
    let stale = make(&format!("critic-scratch-{dead}-mine"), 0o700);
    let shared = make(&format!("critic-scratch-{dead}-open"), 0o755);
    let foreign = make(&format!("critic-scratch-{dead}-theirs"), 0o700);
    as_root_to_act_as_another_user();
    chown(&foreign, Some(65534), Some(65534)).unwrap();
    let repo = Repo::demo();
    let skill = skill_with(json!({"mode": "run", "requests": [{"argv": ["true"]}]}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, _, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_SCRATCH_DIR", place.path()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!stale.exists(), "this user's stale pool is swept");
    assert!(
        shared.join("inner/keep").exists(),
        "a pool others can enter is not"
    );
    assert!(foreign.join("inner/keep").exists(), "another user's is not");
}

// 9f. Landlock does not govern connecting to a socket file: the sockets of
// the user's services (session bus, systemd's user manager, the X server)
// are hidden from runs, since through them a process could be started
// outside the confinement.
#[test]
fn runs_cannot_reach_the_users_service_sockets() {
    let _run = run_dirs();
    /// A listening socket at `path`, its directory made if missing and
    /// removed again afterwards.
    struct Listener {
        path: PathBuf,
        made: Option<PathBuf>,
        socket: std::os::unix::net::UnixListener,
    }
    impl Drop for Listener {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
            if let Some(dir) = &self.made {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let tag = format!("critic-test-{}", std::process::id());
    let elsewhere = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut listeners: Vec<Listener> = [
        (format!("/run/user/{uid}"), "/run/user"),
        ("/run/systemd".to_string(), "/run"),
        ("/run/libvirt".to_string(), "/run"),
        ("/run/critic-test-service".to_string(), "/run"),
        ("/tmp/.X11-unix".to_string(), "/tmp"),
        // Where ssh-agent, screen and tmux put theirs (see also the tmux
        // test below), and any other place the user can reach (here:
        // outside /tmp, /run and the home).
        (format!("/tmp/ssh-critic-{}", std::process::id()), "/tmp"),
        (
            elsewhere.path().join("sockets").display().to_string(),
            elsewhere.path().to_str().unwrap(),
        ),
    ]
    .into_iter()
    .map(|(dir, parent)| {
        let dir = PathBuf::from(dir);
        let made = (!dir.exists()).then(|| {
            // The first missing level under `parent`, to remove afterwards.
            let first = dir
                .ancestors()
                .take_while(|a| !a.exists())
                .last()
                .unwrap()
                .to_path_buf();
            assert!(first.starts_with(parent));
            std::fs::create_dir_all(&dir).expect("making the service socket directory");
            first
        });
        let path = dir.join(&tag);
        let socket = std::os::unix::net::UnixListener::bind(&path).unwrap();
        socket.set_nonblocking(true).unwrap();
        Listener { path, made, socket }
    })
    .collect();
    // A socket whose directory was renamed after it was bound: the kernel's
    // table of bound sockets still lists the old path.
    let before = elsewhere.path().join("before");
    std::fs::create_dir(&before).unwrap();
    let socket = std::os::unix::net::UnixListener::bind(before.join(&tag)).unwrap();
    socket.set_nonblocking(true).unwrap();
    let after = elsewhere.path().join("after");
    std::fs::rename(&before, &after).unwrap();
    listeners.push(Listener {
        path: after.join(&tag),
        made: None,
        socket,
    });
    let script = r#"
import socket, sys
for path in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path); print('CONNECTED', path)
    except OSError as e:
        print('refused', e.errno)
"#;
    let mut argv = vec![json!("python3"), json!("-c"), json!(script)];
    argv.extend(
        listeners
            .iter()
            .map(|l| json!(l.path.display().to_string())),
    );
    let repo = Repo::demo();
    let results = run_results(&repo, json!([{ "argv": argv }]), &[]);
    let out = results[0]["stdout"].as_str().unwrap();
    assert_eq!(
        out.matches("refused").count(),
        listeners.len(),
        "{:#}",
        results[0]
    );
    for l in &listeners {
        assert!(
            l.socket.accept().is_err(),
            "{} was reached",
            l.path.display()
        );
        // Armed: the host itself can connect.
        std::os::unix::net::UnixStream::connect(&l.path).unwrap();
    }
}

// 9f. The attack as it was found: a run asking the user's tmux server to
// run a command for it, outside the confinement (tmux's default socket in
// /tmp, and one elsewhere).
#[test]
fn a_run_cannot_drive_the_users_tmux_server() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let name = format!("critic-test-{}", std::process::id());
    let elsewhere = dir.path().join("tmux.sock");
    let tmux = |args: &[&str]| {
        let out = std::process::Command::new("tmux")
            .args(args)
            .current_dir(dir.path())
            .env_remove("TMUX")
            .output()
            .expect("tmux is installed (.ci/run installs it)");
        assert!(out.status.success(), "tmux {args:?}: {}", stderr(&out));
    };
    let sock = elsewhere.to_str().unwrap();
    tmux(&["-L", &name, "new-session", "-d", "sleep 120"]);
    // Bound by a relative path: the kernel's table of bound sockets holds
    // only `tmux.sock`, not where it is.
    tmux(&["-S", "tmux.sock", "new-session", "-d", "sleep 120"]);
    struct Servers<'a>(&'a str, &'a str);
    impl Drop for Servers<'_> {
        fn drop(&mut self) {
            for args in [["-L", self.0], ["-S", self.1]] {
                let _ = std::process::Command::new("tmux")
                    .args(args)
                    .arg("kill-server")
                    .output();
            }
        }
    }
    let _servers = Servers(&name, sock);
    let escaped = |n: u8| dir.path().join(format!("escaped-{n}"));
    let requests = json!([
        {"argv": ["tmux", "-L", &name, "run-shell", format!("touch {}", escaped(1).display())]},
        {"argv": ["tmux", "-S", sock, "run-shell", format!("touch {}", escaped(2).display())]},
    ]);
    let repo = Repo::demo();
    let results = run_results(&repo, requests, &[]);
    for r in &results {
        assert_ne!(r["exit_code"], 0, "{r:#}");
    }
    // Time for a command a server might have started to land.
    std::thread::sleep(Duration::from_secs(1));
    assert!(!escaped(1).exists() && !escaped(2).exists(), "{results:#?}");
    // Armed: from the host, the same request runs.
    tmux(&[
        "-S",
        sock,
        "run-shell",
        &format!("touch {}", escaped(3).display()),
    ]);
    assert!(escaped(3).exists());
}

// 9k. The user's homes are an allow-list: credential files under names no
// list knows, in the home and in a moved XDG_CONFIG_HOME, are all out of
// sight, while the toolchains and the virtual environment the user put on
// PATH still work.
#[test]
fn runs_see_only_the_toolchains_of_the_users_homes() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let config = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let in_home = [
        ".my.cnf",
        ".kaggle/kaggle.json",
        ".config/glab-cli/config.yml",
        ".ngrok2/ngrok.yml",
        ".heroku/credentials",
        ".databrickscfg",
        ".snowsql/config",
        ".config/doctl/config.yaml",
        ".oci/config",
        ".wrangler/config/default.toml",
        ".env",
        "projects/app/.env.local",
    ];
    let in_config = ["sops/age/keys.txt", "some-tool/token.json"];
    let mut planted = Vec::new();
    for (dir, rels) in [(home.path(), &in_home[..]), (config.path(), &in_config[..])] {
        for rel in rels {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("TOKEN-{}\n", planted.len())).unwrap();
            planted.push(path);
        }
    }
    // The user's interpreter: a virtual environment in the home, first on
    // PATH.
    let venv = home.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let script = r#"
import os, sys
for p in sys.argv[1:]:
    try: print('read', p, open(p).read().strip())
    except OSError as e: print('closed', p, e.errno)
print('prefix', sys.prefix)
"#;
    let mut argv = vec!["python3".to_string(), "-c".into(), script.into()];
    argv.extend(planted.iter().map(|p| p.display().to_string()));
    let skill = skill_with(json!({"mode": "run", "requests": [{"argv": argv}]}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    cmd.env("HOME", home.path())
        .env("XDG_CONFIG_HOME", config.path())
        .env("PATH", path);
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    let out = r["stdout"].as_str().unwrap();
    assert!(!out.contains("TOKEN"), "{r:#}");
    for p in &planted {
        assert!(
            out.contains(&format!("closed {} 2\n", p.display())),
            "{}: {r:#}",
            p.display()
        );
    }
    assert!(
        out.contains(&format!(
            "prefix {}\n",
            venv.canonicalize().unwrap().display()
        )) || out.contains(&format!("prefix {}\n", venv.display())),
        "the virtual environment on PATH runs: {r:#}"
    );
}

// 9i. A run has its own empty /tmp, /var/tmp, /dev/shm and HOME and a
// fresh /proc: it sees neither what the host's users keep in those places
// nor the host's processes (whose command lines may hold secrets), and the
// usual credential places of the user's home are empty even when it names
// them by their full path.
#[test]
fn runs_see_private_tmp_home_proc_and_no_credentials() {
    let pid = std::process::id();
    let marker = format!("critic-private-{pid}");
    // The host's own /tmp and /dev/shm hold something of the user's.
    let planted: Vec<PathBuf> = ["/tmp", "/dev/shm"]
        .iter()
        .map(|d| Path::new(d).join(&marker))
        .collect();
    for p in &planted {
        std::fs::write(p, "host file").unwrap();
    }
    // A home outside /tmp (so that only its cover hides it) with keys.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let secrets = [
        (
            ".ssh/id_rsa",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nSSH-SECRET\n",
        ),
        (".aws/credentials", "aws_secret_access_key = AWS-SECRET\n"),
        (".netrc", "machine x login y password NETRC-SECRET\n"),
        (".config/gh/hosts.yml", "oauth_token: GH-SECRET\n"),
        (".docker/config.json", "{\"auths\": \"DOCKER-SECRET\"}\n"),
        (".kube/config", "token: KUBE-SECRET\n"),
        (".gnupg/private-keys-v1.d/k.key", "GPG-SECRET\n"),
        // The coding agents' own sign-ins.
        (
            ".claude/.credentials.json",
            "{\"token\": \"CLAUDE-SECRET\"}\n",
        ),
        (
            ".codex/auth.json",
            "{\"OPENAI_API_KEY\": \"CODEX-SECRET\"}\n",
        ),
        (
            ".gemini/oauth_creds.json",
            "{\"refresh\": \"GEMINI-SECRET\"}\n",
        ),
        (".cache/huggingface/token", "HF-SECRET\n"),
    ];
    for (rel, content) in secrets {
        let path = home.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    // A host process whose command line carries a secret.
    let mut holder = std::process::Command::new("sh")
        .args(["-c", "sleep 60", &format!("{marker}-ARGV-SECRET")])
        .spawn()
        .unwrap();
    let script = format!(
        r#"
import glob, os, sys
home = sys.argv[1]
for rel in {rels:?}:
    try: print('read', rel, open(os.path.join(home, rel)).read())
    except OSError as e: print('closed', rel, e.errno)
print('HOME', os.environ['HOME'], os.listdir(os.environ['HOME']))
for d in ['/tmp', '/var/tmp', '/dev/shm']:
    print('planted', d, os.path.exists(os.path.join(d, '{marker}')))
    open(os.path.join(d, 'mine-{marker}'), 'w').write('x')
    print('writable', d)
cmdlines = []
for p in glob.glob('/proc/[0-9]*/cmdline'):
    try: cmdlines.append(open(p, 'rb').read())
    except OSError: pass
print('processes', len(cmdlines))
print('dev', sorted(os.listdir('/dev')))
print('urandom', len(open('/dev/urandom', 'rb').read(8)))
open('/dev/null', 'w').write('x')
print('argv secret', any(b'ARGV-' + b'SECRET' in c for c in cmdlines))
print('pid', os.getpid())
"#,
        rels = secrets.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": [
            {"argv": ["python3", "-c", script, home.path()]},
            // A program of the host's /tmp is not there for the run.
            {"argv": [&planted[0]]},
        ]}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("HOME", home.path());
    let (code, v, err, _) = verdict_of(&mut cmd);
    let _ = holder.kill();
    let _ = holder.wait();
    for p in &planted {
        let _ = std::fs::remove_file(p);
    }
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    let out = r["stdout"].as_str().unwrap();
    assert!(!out.contains("SECRET"), "{r:#}");
    // Directories are empty, files read as empty.
    for (rel, _) in secrets {
        assert!(
            out.contains(&format!("closed {rel} 2\n")) || out.contains(&format!("read {rel} \n")),
            "{rel}: {r:#}"
        );
    }
    assert!(out.contains("[]\n"), "HOME is empty: {r:#}");
    assert!(
        !out.contains(&format!("HOME {} ", home.path().display())),
        "{r:#}"
    );
    assert_eq!(out.matches("planted").count(), 3, "{r:#}");
    assert!(!out.contains("True"), "{r:#}");
    assert_eq!(out.matches("writable").count(), 3, "{r:#}");
    // A /dev of harmless devices: no terminal of the user's to read, no disk.
    assert!(
        out.contains("dev ['fd', 'full', 'null', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']\n"),
        "{r:#}"
    );
    assert!(out.contains("urandom 8\n"), "{r:#}");
    // Only the run's own processes: the command comes second, after the
    // namespace's first process, which waits for it.
    assert!(out.contains("pid 2\n"), "{r:#}");
    let count: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("processes "))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(count <= 3, "{r:#}");
    let missing = &v["signals"][0]["metadata"]["results"][1];
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("its own and empty"),
        "{missing:#}"
    );
    // Nothing the run wrote reached the host's directories.
    for d in ["/tmp", "/var/tmp", "/dev/shm"] {
        assert!(!Path::new(d).join(format!("mine-{marker}")).exists());
    }
    for secret in secrets {
        assert!(home.path().join(secret.0).exists());
    }
}

// 9i. A scratch place inside a hidden directory (`TMPDIR` in the runtime
// directory, say) leaves only the way to the copy open: the rest of that
// directory stays hidden.
#[test]
fn a_scratch_place_in_a_hidden_directory_hides_the_rest_of_it() {
    let _run = run_dirs();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let runtime = PathBuf::from(format!("/run/user/{uid}"));
    let made = (!runtime.exists()).then(|| {
        std::fs::create_dir_all(&runtime).unwrap();
        runtime.clone()
    });
    let tag = format!("critic-test-{}", std::process::id());
    let secret = runtime.join(format!("{tag}-auth.json"));
    std::fs::write(&secret, "RUNTIME-SECRET").unwrap();
    let scratch = runtime.join(format!("{tag}-scratch"));
    std::fs::create_dir(&scratch).unwrap();
    let repo = Repo::demo();
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["sh", "-c", format!(
            "cat {} 2>&1; echo ran",
            secret.display()
        )]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_SCRATCH_DIR", &scratch);
    let (code, v, err, _) = verdict_of(&mut cmd);
    let _ = std::fs::remove_file(&secret);
    let _ = std::fs::remove_dir_all(&scratch);
    if let Some(dir) = made {
        let _ = std::fs::remove_dir_all(dir);
    }
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    let out = r["stdout"].as_str().unwrap();
    // The file reads as empty (it is covered by /dev/null).
    assert_eq!(out, "ran\n", "{r:#}");
}

// 9g. git reads files the agent controls; one that never ends (a FIFO as
// `.gitignore`, or as the configured excludes file) stops git at its
// timeout, and the finish is a rejection that says why (the agent caused
// it, so it must not stop unchecked).
#[test]
fn git_cannot_be_made_to_wait_forever() {
    let skill = skill_with(json!({"mode": "pass"}), "");
    for planted in ["work tree", "config", "HEAD"] {
        let repo = Repo::demo();
        // An untracked directory's: git reads it while listing new files.
        let fifo = repo.path().join("pkg/.gitignore");
        std::fs::create_dir(repo.path().join("pkg")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        if planted == "HEAD" {
            let head = repo.path().join(".git/HEAD");
            std::fs::remove_file(&head).unwrap();
            std::fs::rename(&fifo, &head).unwrap();
        }
        if planted == "config" {
            let outside = repo.path().join(".git/excludes");
            std::fs::rename(&fifo, &outside).unwrap();
            repo.git(&["config", "core.excludesFile", outside.to_str().unwrap()]);
        }
        let state = tempfile::tempdir().unwrap();
        let mut child = check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_GIT_TIMEOUT", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("{planted}: the check hung");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{planted}: {err}");
        assert!(
            err.contains("did not finish within 1 s") && err.contains("counted as a rejection"),
            "{planted}: {err}"
        );
    }
}

// 9h. The keys of the user's login session (Kerberos tickets and the like,
// in the session keyring) are out of a run's reach: it can neither read
// them nor plant its own there.
#[test]
fn runs_get_their_own_session_keyring() {
    let (keyctl, add_key): (libc::c_long, libc::c_long) = (libc::SYS_keyctl, libc::SYS_add_key);
    let script = format!(
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SESSION = ctypes.c_int(-3)
# KEYCTL_SEARCH (10) in the session keyring for the host's key.
found = libc.syscall({keyctl}, 10, SESSION, b"user", b"critic-test-secret", 0)
print("found" if found >= 0 else "not found")
planted = libc.syscall({add_key}, b"user", b"critic-test-planted", b"x", 1, SESSION)
print("planted", planted >= 0)
"#
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    // The host runs in a session keyring holding a secret, as after a login.
    // SAFETY: keyctl and add_key are plain syscalls on constant strings.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let name = c"critic-test-session";
            if libc::syscall(libc::SYS_keyctl, 1, name.as_ptr()) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let (kind, desc, secret) = (c"user", c"critic-test-secret", b"S3CRET");
            let session: libc::c_int = -3;
            let id = libc::syscall(
                libc::SYS_add_key,
                kind.as_ptr(),
                desc.as_ptr(),
                secret.as_ptr(),
                secret.len(),
                session,
            );
            if id < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let out = v["signals"][0]["metadata"]["results"][0]["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(out.contains("not found"), "{out}");
    // Planting in its own fresh keyring is harmless; what matters is that
    // it is not the host's, which the search above shows.
    assert!(out.contains("planted"), "{out}");
}

// 9g'. An interrupted check takes a git process that has been running for a
// while, and its private index copy, with it; a killed one's index copy is
// swept by the next check.
#[test]
fn an_interrupted_check_leaves_no_git_process_or_index_copy() {
    let repo = Repo::demo();
    std::fs::create_dir(repo.path().join("pkg")).unwrap();
    let fifo = repo.path().join("pkg/.gitignore");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    let hanging = || {
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_GIT_TIMEOUT", "60")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let children = |pid: u32| -> Vec<u32> {
        let mut out = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
        {
            let list = std::fs::read_to_string(task.unwrap().path().join("children"));
            out.extend(
                list.unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        out
    };
    // The git process listing new files waits on the FIFO; find it and the
    // index copy it was given.
    let git_of = |critic: u32| -> (u32, PathBuf) {
        let started = Instant::now();
        loop {
            let found = children(critic).into_iter().find_map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                if !String::from_utf8_lossy(&cmdline).contains("ls-files") {
                    return None;
                }
                let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
                let index = environ
                    .split(|&b| b == 0)
                    .find_map(|v| v.strip_prefix(b"GIT_INDEX_FILE="))?;
                Some((
                    pid,
                    PathBuf::from(String::from_utf8_lossy(index).into_owned()),
                ))
            });
            if let Some(found) = found {
                return found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "git never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let gone = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };

    let mut child = hanging();
    let (git, index) = git_of(child.id());
    assert!(index.exists());
    // Once git has run for a second, the host arms its interrupt handler
    // (it counts the process as worth cleaning up after): wait for that,
    // seen in the signals it catches.
    let catches_sigterm = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
                u64::from_str_radix(mask.trim(), 16).ok()
            })
            .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
    };
    let armed = Instant::now();
    while !catches_sigterm(child.id()) {
        assert!(
            armed.elapsed() < Duration::from_secs(20),
            "the host never armed its handler"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(!index.exists(), "{} left behind", index.display());
    let waited = Instant::now();
    while !gone(git) {
        assert!(
            waited.elapsed() < Duration::from_secs(5),
            "git {git} still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Killed outright, it cannot clean up; the next check sweeps the copy.
    // Other tests' checks run meanwhile and sweep a dead check's copy too,
    // so its existence is asserted while its check still lives.
    let mut child = hanging();
    let (git, index) = git_of(child.id());
    assert!(index.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    // SAFETY: kill(2) on the orphaned git process this test made.
    unsafe { libc::kill(git as i32, libc::SIGKILL) };
    std::fs::remove_file(&fifo).unwrap();
    let (code, _, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert!(!index.exists(), "{} not swept", index.display());
}

// 9b. Where confinement cannot be had, runs are refused unless opted out.
#[test]
fn doctor_reports_confinement_and_unconfined_runs_are_explicit() {
    let out = run(critic().args(["doctor", "--output", "json"]));
    let report = json_out(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert!(report["landlock_abi"].as_u64().unwrap() >= 1);
    assert_eq!(report["confined_runs"], "available");
    assert!(
        report["agent_turns"]
            .as_str()
            .unwrap()
            .starts_with("confined"),
        "{report:#}"
    );
    let text = run(critic().arg("doctor"));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("run confined"), "{text}");
    assert!(
        text.contains("yes experiment agents' turns: confined"),
        "{text}"
    );
    // Unconfined on request only: the same write then goes through.
    let repo = Repo::demo();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written");
    let write = json!([{"argv": ["sh", "-c", format!("echo x > {}", target.display())]}]);
    let r = run_results(&repo, write.clone(), &[]);
    assert_ne!(r[0]["exit_code"], 0, "{:#}", r[0]);
    assert!(!target.exists());
    let r = run_results(&repo, write, &["--unconfined-runs"]);
    assert_eq!(r[0]["exit_code"], 0, "{:#}", r[0]);
    assert!(target.exists());
}

// 10. A compile cache another user could write is not trusted.
#[test]
fn a_shared_cache_directory_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let skill = skill_with(json!({"mode": "pass"}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_CACHE_DIR", cache.path())
        .env("CRITIC_LOG", "warn");
    let (code, _, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("writable by group or others"), "{err}");
    assert!(listing(cache.path()).is_empty(), "nothing cached there");

    // Below a private top, every level and every entry is checked too.
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let warm = |cmd: &mut std::process::Command| {
        cmd.env("CRITIC_CACHE_DIR", cache.path())
            .env("CRITIC_LOG", "warn");
        let (code, _, err, _) = verdict_of(cmd);
        assert_eq!(code, 0, "{err}");
        err
    };
    warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    let engine_dir = cache.path().join(&listing(cache.path())[0]);
    let entry = listing(&engine_dir)
        .into_iter()
        .find(|n| n.ends_with(".cwasm"))
        .expect("a compiled entry");
    let entry = engine_dir.join(entry);
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(err.contains("not loading a cache entry"), "{err}");
    assert_eq!(
        std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600,
        "recompiled and replaced"
    );
    std::fs::set_permissions(&engine_dir, std::fs::Permissions::from_mode(0o757)).unwrap();
    let err = warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(
        err.contains("not using the component cache") && err.contains("writable by group"),
        "{err}"
    );
    // Without a home, nothing falls back to a predictable shared directory.
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env_remove("CRITIC_CACHE_DIR")
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME");
    let (code, _, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
}

// 11. A trap gives the agent a short message; the details go to the user.
#[test]
fn a_crash_gives_the_agent_a_short_message() {
    let skill = skill_with(
        json!({"mode": "trap", "text": "internal detail: /home/user/.ssh"}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    let followup = v["followup"].as_str().unwrap();
    assert!(followup.contains("crashed"), "{followup}");
    for leak in ["internal detail", "backtrace", "deliberate panic", "wasm"] {
        assert!(!followup.contains(leak), "{leak} in {followup}");
    }
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("internal detail") && e.contains("deliberate panic"),
        "{e}"
    );
}

// 11a. Key-shaped text a detector quotes (what a run printed) is replaced
// by markers in everything the agent gets, which then says so once.
#[test]
fn secrets_a_detector_quotes_do_not_reach_the_agent() {
    let m = SECRET_MARKER;
    let key = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n\
         b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
         QyNTUxOQAAACD{m}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n\
         -----END OPENSSH PRIVATE KEY-----\n"
    );
    // A test that read the key failed with it in its assertion, and a
    // detector quoted the run's output: on one line, as pytest prints it,
    // in the follow-up; as it was, in a feedback file.
    let followup = format!(
        "tests/test_deploy.py failed:\nE   AssertionError: assert {key:?} == ''\n\
         E   and the environment had aws_secret_access_key = {m}wJalrXUtnFEMI/K7MDENG"
    );
    let report =
        format!("# Failing run\n\n{key}\nGITHUB_TOKEN=ghp_{m}0123456789abcdefghijklmnopqrs\n");
    let config = json!({
        "mode": "artifacts", "text": followup,
        "artifacts": [{"path": "run.md", "content": report}],
    });
    // A detector's error is quoted to the agent too (its first line).
    let failing = json!({"mode": "error", "text": format!("cannot call the API with ghp_{m}0123456789abcdefghijklmnopqrs")});
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\nsignals:\n  \
         - {{name: quoting, type: soft, weight: 1, detector: {{misbehave}}, config: {config}}}\n  \
         - {{name: failing, type: soft, weight: 1, detector: {{misbehave}}, config: {failing}}}\n"
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}\n{v:#}");
    let followup = v["followup"].as_str().unwrap();
    let file = std::fs::read_to_string(repo.path().join(".critic/feedback/t/run.md")).unwrap();
    let texts = [
        followup,
        v["signals"][0]["followup_text"].as_str().unwrap(),
        v["signals"][1]["followup_text"].as_str().unwrap(),
        &file,
    ];
    for text in texts {
        assert!(!text.contains(m), "a secret reached the agent:\n{text}");
        assert!(!text.contains("ghp_"), "{text}");
    }
    for marker in [
        "assert \"[REDACTED: private key]\\n\" == ''",
        "aws_secret_access_key = [REDACTED: AWS secret access key]",
        "cannot call the API with [REDACTED: GitHub token]",
    ] {
        assert!(followup.contains(marker), "{marker} in:\n{followup}");
    }
    assert_eq!(
        followup
            .matches("replaced text that looked like a private key")
            .count(),
        1,
        "{followup}"
    );
    assert_eq!(
        file,
        "# Failing run\n\n[REDACTED: private key]\n\nGITHUB_TOKEN=[REDACTED: GitHub token]\n"
    );
    // The user is told what was done, signal by signal.
    let warnings = v["warnings"].to_string();
    for signal in ["quoting", "failing"] {
        assert!(
            warnings.contains(&format!("signal \\\"{signal}\\\": ")),
            "{warnings}"
        );
    }
}

// 12. Text output escapes control characters from detectors.
#[test]
fn text_output_escapes_terminal_control() {
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\r\n  - forged                   passed";
    let skill = skill_with(json!({"mode": "fire", "text": hostile}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).args(["--output", "text"]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    assert!(!text.lines().any(|l| l.starts_with("  - forged")), "{text}");
    assert!(text.contains("\\u{1b}]0;owned"), "{text}");
    // So is a hostile manifest quoted in the host's own error line (a
    // detector path it names; unknown keys are placed, not quoted).
    let manifest = format!(
        "name: t\nversion: 0.1.0\nsignals: [{{name: s, type: hard_gate, detector: \"{}\"}}]\n",
        "\\e]0;owned\\a\\e[2J\\rforged\\u202e.wasm"
    );
    let bad = temp_skill(&manifest);
    let out = run(critic().args(["validate"]).arg(bad.path()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\\u{1b}]0;owned"), "{err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains('\r') && !err.contains('\u{202e}'));
    // The same text as a log line or an error reaches stderr escaped too.
    for mode in ["log", "error"] {
        let skill = skill_with(json!({"mode": mode, "text": hostile}), "");
        let out = run(
            check(skill.path(), repo.path(), &demo_events(3), state.path())
                .env("CRITIC_LOG", "warn"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\\u{1b}]0;owned"), "{mode}: {err}");
        assert!(
            !err.contains("]0;owned\u{7}") && !err.contains('\r'),
            "{mode}: {err:?}"
        );
        assert!(
            !err.lines().any(|l| l.starts_with("  - forged")),
            "{mode}: {err}"
        );
    }
}

// 13. Corrupt or hostile state is moved aside or bounded, never fatal.
#[test]
fn corrupt_state_is_moved_aside_and_counts_do_not_wrap() {
    let skill = skill_with(json!({"mode": "pass"}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let first = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(first.0, 0, "{}", first.2);
    let session = state.path().join("t/default");
    let harness = session.join("harness.json");
    std::fs::write(&harness, b"{\"iteration\": \xff\xfe}").unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["iteration"], 1);
    assert!(
        listing(&session).iter().any(|n| n.contains("corrupt")),
        "{:?}",
        listing(&session)
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&harness).unwrap()).unwrap();
    doc["iteration"] = json!(u32::MAX);
    std::fs::write(&harness, doc.to_string()).unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["iteration"], u32::MAX);
}

// 14. Detector paths stay inside the skill and are checked before reading.
#[test]
fn detector_paths_stay_in_the_skill() {
    let outer = tempfile::tempdir().unwrap();
    let skill = outer.path().join("skill");
    std::fs::create_dir_all(skill.join("dir.wasm")).unwrap();
    std::fs::copy(misbehave_wasm(), outer.path().join("x.wasm")).unwrap();
    std::os::unix::fs::symlink(outer.path().join("x.wasm"), skill.join("out.wasm")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", skill.join("zero.wasm")).unwrap();
    let big = std::fs::File::create(skill.join("big.wasm")).unwrap();
    big.set_len(3 << 30).unwrap();
    let cases = [
        ("../x.wasm", "leaves the skill directory"),
        ("/dev/zero", "leaves the skill directory"),
        ("out.wasm", "resolves outside the skill directory"),
        ("zero.wasm", "not a regular file"),
        ("dir.wasm", "not a regular file"),
        ("big.wasm", "more than the 64 MiB"),
        ("gone.wasm", "does not exist"),
    ];
    for (path, expected) in cases {
        std::fs::write(
            skill.join("critic.yaml"),
            format!("name: t\nversion: 0.1.0\nsignals:\n  - {{name: s, type: hard_gate, detector: '{path}'}}\n"),
        )
        .unwrap();
        let started = Instant::now();
        let out = run(critic().arg("validate").arg(&skill));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(err.contains(expected), "{path}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{path}");
    }
}

// 15. read-file cannot reach the repository's internals.
#[test]
fn read_file_cannot_read_the_git_dir() {
    let repo = Repo::demo();
    repo.git(&["config", "credential.helper", "store --file=/secret"]);
    std::os::unix::fs::symlink(".git/config", repo.path().join("cfg")).unwrap();
    for path in [".git/config", "cfg", "./.git/HEAD"] {
        let skill = skill_with(json!({"mode": "read", "path": path}), "");
        let state = tempfile::tempdir().unwrap();
        let (_, v, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        let m = &v["signals"][0]["metadata"];
        assert!(m["text"].is_null(), "{path}: read {m:#} {err}");
        assert!(
            m["error"]
                .as_str()
                .unwrap()
                .contains(".git are not readable"),
            "{path}: {m:#}"
        );
    }
}

/// A one-signal skill running the hostile Python detector (built from
/// `tests/python/misbehave-py` with componentize-py) with `config`.
fn python_skill_with(config: Value, extra: &str, timeout: &str) -> tempfile::TempDir {
    let built = common::python::built_python_skill(&root().join("tests/python/misbehave-py"));
    skill_with_detector(
        &built.join("misbehave_py.wasm"),
        "misbehave_py.wasm",
        &format!(
            "name: t\nversion: 0.1.0\n{extra}signals:\n  - {{name: s, type: hard_gate, detector: {{detector}}, timeout: {timeout}, config: {config}}}\n"
        ),
    )
}

/// The verdict of the hostile Python detector in `config`, on the demo repo.
fn python_verdict(config: Value, extra: &str, env: &[(&str, &str)]) -> (i32, Value, String, usize) {
    let timeout = if config["mode"] == "loop" {
        "1s"
    } else {
        "20s"
    };
    let skill = python_skill_with(config, extra, timeout);
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.envs(env.iter().copied());
    verdict_of(&mut cmd)
}

// 1, 3 and 5 for a Python detector: CPython in the component is held to the
// signal's deadline, its memory limit and the error-size cap like any guest.
#[test]
fn a_python_detector_is_held_to_time_memory_and_error_limits() {
    let (code, v, _, _) = python_verdict(json!({"mode": "pass"}), "", &[]);
    assert_eq!(
        (code, &v["signals"][0]["metadata"]),
        (0, &json!({"python": true}))
    );

    let started = Instant::now();
    let (code, v, err, _) = python_verdict(json!({"mode": "loop"}), "", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("timed out after 1s"), "{e}");

    let (code, v, err, _) =
        python_verdict(json!({"mode": "oom"}), "limits: {memory_mb: 96}\n", &[]);
    assert_eq!(code, 1, "{err}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("exceeded its memory limit of 96 MiB") || e.contains("MemoryError"),
        "{e}"
    );

    let (code, v, err, len) =
        python_verdict(json!({"mode": "error", "repeat": 20_000_000}), "", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(len < 64 << 10, "verdict of {len} bytes");
    assert!(err.len() < 64 << 10, "stderr of {} bytes", err.len());
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("error: RuntimeError: eee") && e.contains("bytes cut"),
        "{}",
        &e[..200]
    );
}

// 4 for a Python detector: no WASI filesystem, environment or network, and
// the host's files only through a granted `read-file`.
#[test]
fn a_python_detector_gets_no_files_environment_or_network_without_a_grant() {
    let secrets = tempfile::tempdir().unwrap();
    let secret = &secret_files(secrets.path())[0];
    let quoted = |v: &Value| v.to_string().contains(SECRET_MARKER);

    let (code, v, err, _) = python_verdict(json!({"mode": "read", "path": "README.md"}), "", &[]);
    assert_eq!(code, 1, "{err}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("HostError: capability 'read-file' is not declared"),
        "{e}"
    );

    for path in [secret.to_str().unwrap(), "/etc/passwd", "README.md"] {
        let (code, v, err, _) = python_verdict(json!({"mode": "open", "path": path}), "", &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            v["signals"][0]["metadata"]["opened"], false,
            "{path}: {v:#}"
        );
        assert!(!quoted(&v), "{v:#}");
    }

    let (code, v, err, _) = python_verdict(
        json!({"mode": "env"}),
        "",
        &[("CRITIC_TEST_SECRET", SECRET_MARKER)],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["signals"][0]["metadata"]["environ"], json!({}), "{v:#}");
    assert!(!quoted(&v));

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (code, v, err, _) = python_verdict(json!({"mode": "socket", "port": port}), "", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["signals"][0]["metadata"]["connected"], false, "{v:#}");
    assert!(
        listener.accept().is_err(),
        "the detector reached the listener"
    );
}

// 9j. A run makes sockets of IPv4, IPv6, route netlink and (socket pairs
// of) Unix only: vsock, which reaches the hypervisor past the network
// namespace, packet sockets and the host's uevent netlink are refused.
#[test]
fn runs_make_only_internet_route_and_unix_sockets() {
    let script = r#"
import socket
def make(family, kind, proto=0):
    try:
        socket.socket(family, kind, proto).close()
        return "made"
    except OSError as e:
        return e.strerror
print("vsock", make(socket.AF_VSOCK, socket.SOCK_STREAM))
print("packet", make(socket.AF_PACKET, socket.SOCK_RAW))
print("uevent", make(socket.AF_NETLINK, socket.SOCK_RAW, 15))
print("route", make(socket.AF_NETLINK, socket.SOCK_RAW, 0))
print("inet", make(socket.AF_INET, socket.SOCK_STREAM))
a, b = socket.socketpair()
a.sendall(b"x")
print("pair", b.recv(1).decode())
"#;
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let out = v["signals"][0]["metadata"]["results"][0]["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    for refused in ["vsock", "packet", "uevent"] {
        assert!(
            out.contains(&format!("{refused} Permission denied")),
            "{refused} was not refused:\n{out}"
        );
    }
    for made in ["route made", "inet made", "pair x"] {
        assert!(out.contains(made), "{made}:\n{out}");
    }
}

// 28a. Building someone else's Rust skill runs its build script (and its
// procedural macros) confined: it writes nothing outside its target
// directory, reads nothing of the user's home, reaches no network. With
// --trust-skill the same build script does all three: the attack is live.
#[test]
fn a_skills_build_script_runs_confined_unless_trusted() {
    let outside = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let secret = home.path().join(".kaggle/kaggle.json");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "KAGGLE-SECRET").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let pwned = outside.path().join("pwned");
    let build_script = format!(
        r#"fn main() {{
    let _ = std::fs::write({pwned:?}, "x");
    match std::fs::read_to_string({secret:?}) {{
        Ok(s) => println!("cargo:warning=read {{s}}"),
        Err(e) => println!("cargo:warning=closed {{e}}"),
    }}
    match std::net::TcpStream::connect("{addr}") {{
        Ok(_) => println!("cargo:warning=connected"),
        Err(e) => println!("cargo:warning=no network {{e}}"),
    }}
}}
"#,
        addr = listener.local_addr().unwrap(),
    );
    let skill = tempfile::tempdir().unwrap();
    let crate_dir = skill.path().join("detector");
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        "[package]\nname = \"evil\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [lib]\ncrate-type = [\"cdylib\"]\n\n[workspace]\n\n\
         [profile.detector]\ninherits = \"release\"\n",
    )
    .unwrap();
    std::fs::write(crate_dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(crate_dir.join("build.rs"), build_script).unwrap();
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let tool_home = |var: &str, usual: &str| {
        std::env::var_os(var).map_or_else(|| real_home.join(usual), PathBuf::from)
    };
    let build = |trusted: bool| {
        let mut cmd = critic();
        cmd.arg("build")
            .arg(skill.path())
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join(".cache"))
            .env("CARGO_HOME", tool_home("CARGO_HOME", ".cargo"))
            .env("RUSTUP_HOME", tool_home("RUSTUP_HOME", ".rustup"));
        if trusted {
            cmd.arg("--trust-skill");
        }
        run(&mut cmd)
    };
    let out = build(false);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!pwned.exists(), "the build script wrote outside: {err}");
    assert!(!err.contains("KAGGLE-SECRET"), "{err}");
    assert!(err.contains("closed"), "{err}");
    assert!(err.contains("no network"), "{err}");
    assert!(listener.accept().is_err(), "a connection reached the host");
    assert!(skill.path().join("evil.wasm").is_file());
    // Its target directory is a private one, not the skill's own.
    assert!(!crate_dir.join("target").exists());
    let builds = home.path().join(".cache/pluggable-critic/builds");
    assert_eq!(listing(&builds).len(), 1, "{:?}", listing(&builds));

    // Trusted, nothing holds it back (a clean build, so its script runs).
    std::fs::remove_dir_all(&builds).unwrap();
    let out = build(true);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(pwned.exists(), "{err}");
    assert!(err.contains("read KAGGLE-SECRET"), "{err}");
}

// 9k'. An interpreter the user keeps under /tmp is there for a run, read-only,
// when it is on PATH; the rest of the host's /tmp is not.
#[test]
fn a_virtual_environment_under_tmp_on_path_is_seen_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(tmp.path().starts_with("/tmp"));
    let venv = tmp.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(tmp.path().join("beside.txt"), "host file").unwrap();
    let script = format!(
        r#"
import os, sys
print('prefix', sys.prefix)
try:
    open(os.path.join(sys.prefix, 'pwned'), 'w').write('x'); print('wrote venv')
except OSError as e: print('venv read-only', e.errno)
print('beside', os.path.exists({beside:?}))
"#,
        beside = tmp.path().join("beside.txt").display().to_string(),
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    cmd.env("PATH", path);
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    let out = r["stdout"].as_str().unwrap();
    assert!(
        out.contains(&format!("prefix {}\n", venv.display())),
        "{r:#}"
    );
    assert!(out.contains("venv read-only"), "{r:#}");
    assert!(out.contains("beside False"), "{r:#}");
    assert!(!venv.join("pwned").exists());
}

// 6. Each manifest maximum holds exactly at its boundary: the maximum is
// accepted, one past it refused, naming the field.
#[test]
fn each_manifest_maximum_holds_at_its_boundary() {
    let signal = |extra: &str| {
        format!("  - {{name: s, type: hard_gate, detector: '{{misbehave}}'{extra}}}\n")
    };
    let head = "name: t\nversion: 0.1.0\n";
    let many = |n: usize| -> String {
        (0..n)
            .map(|i| format!("  - {{name: s{i}, type: hard_gate, detector: '{{misbehave}}'}}\n"))
            .collect()
    };
    let soft =
        |w: &str| format!("  - {{name: s, type: soft, weight: {w}, detector: '{{misbehave}}'}}\n");
    let two = |mb: u64| {
        format!(
            "  - {{name: a, type: hard_gate, detector: '{{misbehave}}', memory_mb: {mb}}}\n  - {{name: b, type: hard_gate, detector: '{{misbehave}}', memory_mb: {mb}}}\n"
        )
    };
    let cases: Vec<(String, String, &str)> = vec![
        (
            format!("{head}max_iterations: 1000\nsignals:\n{}", signal("")),
            format!("{head}max_iterations: 1001\nsignals:\n{}", signal("")),
            "max_iterations",
        ),
        // 64 detectors of 64 MiB: the 4096 MiB they may take together.
        (
            format!("{head}limits: {{memory_mb: 64}}\nsignals:\n{}", many(64)),
            format!("{head}limits: {{memory_mb: 64}}\nsignals:\n{}", many(65)),
            "signals",
        ),
        (
            format!("{head}signals:\n{}", soft("1000000")),
            format!("{head}signals:\n{}", soft("1000001")),
            "weight",
        ),
        (
            format!(
                "{head}limits: {{memory_mb: 4096}}\nsignals:\n{}",
                signal("")
            ),
            format!(
                "{head}limits: {{memory_mb: 4097}}\nsignals:\n{}",
                signal("")
            ),
            "memory_mb",
        ),
        (
            format!(
                "{head}limits: {{output_kb: 262144}}\nsignals:\n{}",
                signal("")
            ),
            format!(
                "{head}limits: {{output_kb: 262145}}\nsignals:\n{}",
                signal("")
            ),
            "output_kb",
        ),
        (
            format!(
                "{head}limits: {{stdio_kb: 65536}}\nsignals:\n{}",
                signal("")
            ),
            format!(
                "{head}limits: {{stdio_kb: 65537}}\nsignals:\n{}",
                signal("")
            ),
            "stdio_kb",
        ),
        (
            format!("{head}signals:\n{}", signal(", timeout: 3600")),
            format!("{head}signals:\n{}", signal(", timeout: 3601")),
            "timeout",
        ),
        (
            format!("{head}signals:\n{}", two(2048)),
            format!("{head}signals:\n{}", two(2049)),
            "memory",
        ),
    ];
    for (at_max, past, field) in cases {
        let ok = temp_skill(&at_max);
        let out = run(critic().arg("validate").arg(ok.path()));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{field} at its maximum: {}",
            stderr(&out)
        );
        let bad = temp_skill(&past);
        let out = run(critic().arg("validate").arg(bad.path()));
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{field} past its maximum: {err}"
        );
        assert!(
            err.contains(field) && !err.contains("panicked"),
            "{field}: {err}"
        );
    }
}

/// `cmd` run where user namespaces cannot be made: in a user namespace of
/// its own whose limit of further ones is 0, as on a machine that forbids
/// them.
fn without_namespaces(cmd: &mut std::process::Command) -> std::process::Command {
    let mut wrapped = std::process::Command::new("unshare");
    wrapped
        .args([
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
            "sh",
        ])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

// 9b. Where confinement cannot be had, a run is refused with what is
// missing, `critic doctor` says so, and `--unconfined-runs` is the only way
// around it.
#[test]
fn a_machine_without_namespaces_refuses_runs_and_says_what_is_missing() {
    let doctor = run(&mut without_namespaces(critic().arg("doctor")));
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("run/run-matrix are refused: this machine lacks user namespaces"),
        "{text}"
    );
    let repo = Repo::demo();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written");
    let write = json!([{"argv": ["sh", "-c", format!("echo x > {}", target.display())]}]);
    let skill = skill_with(json!({"mode": "run", "requests": write}), "");
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut without_namespaces(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    )));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(said.contains("lacks user namespaces"), "{said}");
    assert!(!target.exists(), "a refused run wrote");
    let out = run(&mut without_namespaces(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).arg("--unconfined-runs"),
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(target.exists(), "--unconfined-runs runs it");
}

// 27c. Where no memory cgroup can be had (a user without the privileges),
// each process of a turn is held to the limit's worth of data instead.
#[test]
fn without_a_memory_cgroup_each_process_is_held_to_its_data_limit() {
    use pluggable_critic::sandbox::confine::Confinement;
    let dir = tempfile::tempdir().unwrap();
    // The system's interpreter, else the first on PATH, by its real path.
    let python = Some(PathBuf::from("/usr/bin/python3"))
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        })
        .expect("python3");
    let python = python.as_path();
    let allocate = |limit: Option<u64>| {
        let mut confinement = Confinement::new(&[dir.path()], &[python]).unwrap();
        if let Some(bytes) = limit {
            confinement.limit_data(bytes);
        }
        let mut cmd = std::process::Command::new(python);
        cmd.args(["-c", "b = bytearray(512 << 20); print('held', len(b))"])
            .current_dir(dir.path());
        confinement.apply(&mut cmd);
        cmd.output().unwrap()
    };
    let limited = allocate(Some(64 << 20));
    assert!(!limited.status.success());
    assert!(
        stderr(&limited).contains("MemoryError"),
        "{}",
        stderr(&limited)
    );
    let free = allocate(None);
    assert!(free.status.success(), "{}", stderr(&free));
}

// 27c. A turn's memory cgroup that a killed critic left behind is removed
// by the next one that makes a cgroup there.
#[test]
fn a_memory_cgroup_left_by_a_killed_critic_is_swept() {
    use pluggable_critic::sandbox::confine::memory::MemoryCgroup;
    as_root_to_act_as_another_user();
    let first = MemoryCgroup::new(64 << 20).expect("root can make a memory cgroup here");
    let parent = first.dir().parent().unwrap().to_path_buf();
    drop(first);
    // No process has this id: Linux's pids stay below 2^22.
    let stale = parent.join("critic-turn-4294967-0");
    std::fs::create_dir(&stale).unwrap();
    let next = MemoryCgroup::new(64 << 20).unwrap();
    assert!(!stale.exists(), "{} was left", stale.display());
    drop(next);
}
