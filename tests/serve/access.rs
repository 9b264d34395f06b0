//! Promises 18 and 19 of docs/SECURITY.md: only the server's own user reaches
//! it, on a socket never open to others, from its own namespaces; over TCP
//! only on loopback with the token.

use super::*;

#[test]
fn tcp_needs_loopback_and_the_token() {
    let out = run(critic()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("CRITIC_SERVER_TOKEN"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("CRITIC_SERVER_TOKEN"),
        "{}",
        stderr(&out)
    );
    let out = run(critic()
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("CRITIC_SERVER_TOKEN", "x".repeat(32)));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));

    let (server, port, token) = tcp_server();
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let body = json!({
        "skill": root().join("examples/demo-skill"), "workspace": ws.path(),
        "events": demo_events(3), "state_dir": state.path(),
    })
    .to_string();
    let post = |auth: Option<&str>| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let auth = auth
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /v1/check HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{auth}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        parse_response(&answer)
    };
    assert_eq!(post(None).0, 401);
    // The socket's peers are the server's own user: no token asked there.
    assert_eq!(server.call("POST", "/v1/check", body.as_bytes()).0, 200);
    assert_eq!(post(Some("a-token-only-the-test-knows-0124")).0, 401);
    let (status, v) = post(Some(token));
    assert_eq!(status, 200, "{v}");
    // The client sends the token from the environment.
    let out = run(check(
        &root().join("examples/demo-skill"),
        ws.path(),
        &demo_events(3),
        state.path(),
    )
    .env("CRITIC_SERVER", format!("http://127.0.0.1:{port}"))
    .env("CRITIC_SERVER_TOKEN", token));
    assert!(!stderr(&out).contains("in process"), "{}", stderr(&out));
    assert_eq!(json_out(&out)["iteration"], 3);
}

#[test]
fn another_user_cannot_use_the_socket_even_when_its_mode_allows() {
    as_root_to_act_as_another_user();
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let server = Server::start(&[]);
    // The socket's directory and the socket opened to everyone: the
    // server's own check of the peer's credentials is what stays.
    let dir = server.socket.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&server.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntry:\n    s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')\n    print(s.recv(100))\nexcept (ConnectionResetError, BrokenPipeError):\n    print(b'')\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&server.socket)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.trim(), "b''", "another user got an answer: {text}");
    // The server's own user still gets one.
    assert_eq!(server.call("GET", "/v1/health", b"").0, 200);
}

#[test]
fn a_socket_another_user_serves_is_not_trusted() {
    as_root_to_act_as_another_user();
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = dir.path().join("squatted.sock");
    // Another user's "server" that accepts every finish.
    let script = "import socket,sys,os\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\nos.chmod(sys.argv[1],0o777)\ns.listen(8)\nprint('ready',flush=True)\nwhile True:\n    c,_=s.accept()\n    c.recv(65536)\n    b=b'{\"accepted\":true}'\n    c.sendall(b'HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\n\\r\\n'%len(b)+b)\n    c.close()\n";
    let mut squatter = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&socket)
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(squatter.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let out = run(check(
        &root().join("examples/demo-skill"),
        ws.path(),
        &demo_events(1),
        state.path(),
    )
    .arg("--server")
    .arg(&socket));
    let _ = squatter.kill();
    let _ = squatter.wait();
    let err = stderr(&out);
    assert!(
        err.contains("another user") && err.contains("checking in process"),
        "{err}"
    );
    // A real verdict, judged in process, not the forged one.
    assert!(out.status.code().unwrap() < 2, "{err}");
    assert_eq!(json_out(&out)["signals"].as_array().unwrap().len(), 4);
}

#[test]
fn a_peer_in_another_user_or_network_namespace_is_refused() {
    let server = Server::start(&[]);
    let script = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntry:\n    s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')\n    print(s.recv(100))\nexcept (ConnectionResetError, BrokenPipeError):\n    print(b'')\n";
    for namespaces in ["--user", "--net"] {
        // The same user, the same files: only the namespaces differ.
        let out = std::process::Command::new("unshare")
            .args(["--map-current-user", namespaces, "python3", "-c", script])
            .arg(&server.socket)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(text.trim(), "b''", "{namespaces}: got an answer: {text}");
    }
    assert_eq!(server.call("GET", "/v1/health", b"").0, 200);
}

#[test]
fn a_confined_run_cannot_reach_a_server_of_the_host() {
    // One server with its socket in /tmp (as `critic serve` is often
    // started), one elsewhere.
    let in_tmp = Server::start(&[]);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let socket = dir.path().join("c.sock");
    let mut cmd = critic();
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .stderr(Stdio::piped());
    let elsewhere = Server::spawn(cmd, socket, dir);
    let ws = demo_workspace();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let request = |n: usize| {
        json!({
            "skill": root().join("examples/demo-skill"), "workspace": ws.path(),
            "events": demo_events(3), "state_dir": outside.path().join(n.to_string()),
        })
        .to_string()
    };
    let script = "import socket,sys\nfor path,body in zip(sys.argv[1::2],sys.argv[2::2]):\n    try:\n        s=socket.socket(socket.AF_UNIX)\n        s.connect(path)\n        s.sendall(b'POST /v1/check HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n' % len(body) + body.encode())\n        print('answer', s.recv(200))\n    except OSError as e:\n        print('refused', e.errno)\n";
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [run, run-matrix]\nsignals:\n  - {{name: s, type: hard_gate, detector: {{misbehave}}, timeout: 20s, config: {}}}\n",
        json!({"mode": "run", "requests": [{"argv": [
            "python3", "-c", script,
            in_tmp.socket.display().to_string(), request(1),
            elsewhere.socket.display().to_string(), request(2),
        ]}]})
    ));
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        skill.path(),
        ws.path(),
        &demo_events(3),
        state.path(),
    ));
    let v = json_out(&out);
    let stdout = v["signals"][0]["metadata"]["results"][0]["stdout"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(stdout.matches("refused").count(), 2, "{v:#}");
    assert!(
        listing_is_empty(outside.path()),
        "a server wrote state for the run"
    );
    // Armed: both serve the host.
    assert_eq!(in_tmp.call("GET", "/v1/health", b"").0, 200);
    assert_eq!(elsewhere.call("GET", "/v1/health", b"").0, 200);
}

/// Promise 18: the socket is never, even for a moment, open to others. The
/// server is started with a umask that would leave a new file open to all,
/// and the socket's mode is watched from before it exists: every look at
/// it sees 0600.
#[test]
fn the_socket_is_never_open_to_others_even_for_a_moment() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("critic.sock");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (socket, stop) = (socket.clone(), stop.clone());
        std::thread::spawn(move || {
            // `stop` is read before each look, so the last look starts after
            // the server is up, even for a watcher first scheduled late.
            let mut seen = std::collections::BTreeSet::new();
            loop {
                let last = stop.load(std::sync::atomic::Ordering::Relaxed);
                if let Ok(meta) = std::fs::symlink_metadata(&socket) {
                    seen.insert(meta.permissions().mode() & 0o777);
                }
                if last {
                    return seen;
                }
            }
        })
    };
    let mut cmd = critic();
    cmd.arg("serve")
        .arg("--socket")
        .arg(&socket)
        .stderr(Stdio::piped());
    // SAFETY: umask(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let server = Server::spawn(cmd, socket.clone(), dir);
    assert_eq!(server.call("GET", "/v1/health", b"").0, 200);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = watcher.join().unwrap();
    assert_eq!(
        seen,
        std::collections::BTreeSet::from([0o600]),
        "modes seen: {seen:?}"
    );
}
