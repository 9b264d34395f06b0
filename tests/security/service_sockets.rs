//! Promise 9f of docs/SECURITY.md: a run reaches none of the user's service
//! sockets, wherever they lie.

use super::*;

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
