//! Promises 8, 9, 9a, 9b and 9h to 9k of docs/SECURITY.md: what a confined run
//! can reach of the machine (processes, files, metadata, network, keys,
//! homes, memory), and what happens where it cannot be confined.

use super::*;

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
