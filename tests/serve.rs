//! `critic serve` and `critic check --server`: the real binary serving real
//! skills on real git work trees, asked over its Unix socket and over TCP.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A running `critic serve`, stopped (SIGKILL) when dropped.
struct Server {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("critic.sock");
        let mut cmd = critic();
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .args(extra)
            .stderr(Stdio::piped());
        Server::spawn(cmd, socket, dir)
    }

    fn spawn(mut cmd: std::process::Command, socket: PathBuf, dir: tempfile::TempDir) -> Server {
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        assert!(
            line.contains("listening on"),
            "server did not start: {line}"
        );
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
        });
        Server {
            child,
            socket,
            _dir: dir,
        }
    }

    /// One HTTP/1.1 exchange on the socket: (status, body as JSON).
    fn call(&self, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
        raw_call(&self.socket, method, path, body, &[])
    }

    fn check(&self, request: &Value) -> (u16, Value) {
        self.call("POST", "/v1/check", request.to_string().as_bytes())
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn raw_call(
    socket: &Path,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[&str],
) -> (u16, Value) {
    let mut stream = UnixStream::connect(socket).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before it has read all of a large body.
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    // A server that answers before reading all of a body (413) closes with
    // that body unread, and the kernel then ends the reading with a reset
    // after the answer, which is what counts.
    match stream.read_to_end(&mut answer) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => {}
        other => {
            other.unwrap();
        }
    }
    parse_response(&answer)
}

fn parse_response(answer: &[u8]) -> (u16, Value) {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = serde_json::from_str(body).unwrap_or(Value::String(body.to_string()));
    (status, body)
}

/// The demo repository with finish 3's patch applied.
fn demo_workspace() -> Repo {
    let repo = Repo::demo();
    repo.apply(&demo_patch(3));
    repo
}

/// A verdict without what differs between two runs of one check: timings
/// and where the compiled components came from.
fn comparable(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["duration_ms", "evaluate_ms", "compile_cache"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn health_answers_with_the_version() {
    let server = Server::start(&[]);
    let (status, body) = server.call("GET", "/v1/health", b"");
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&server.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o077,
        0,
        "socket mode {mode:o}: others could connect"
    );
}

#[test]
fn every_shipped_skill_gives_the_server_the_verdict_it_gives_the_cli() {
    let server = Server::start(&[]);
    let mut skills: Vec<PathBuf> = std::fs::read_dir(root().join("skills"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("critic.yaml").is_file())
        .collect();
    skills.push(root().join("examples/demo-skill"));
    skills.sort();
    assert!(skills.len() >= 8, "{skills:?}");
    for skill in &skills {
        // Two finishes each, so round state carries over the same way.
        let (cli_ws, server_ws) = (demo_workspace(), demo_workspace());
        let (cli_state, server_state) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for n in [2, 3] {
            let out = run(
                check(skill, cli_ws.path(), &demo_events(n), cli_state.path())
                    .args(["--session", "s"]),
            );
            assert!(out.status.code().unwrap() < 2, "{}", stderr(&out));
            let cli = json_out(&out);
            let (status, served) = server.check(&json!({
                "skill": skill,
                "workspace": server_ws.path(),
                "events": demo_events(n),
                "session": "s",
                "state_dir": server_state.path(),
            }));
            assert_eq!(status, 200, "{}: {served}", skill.display());
            assert_schema("verdict.schema.json", &served);
            let (mut cli, mut served) = (comparable(cli), comparable(served));
            // The base commits differ (two repositories, two commit times).
            cli["metadata"]["patch"]["base"] = Value::Null;
            served["metadata"]["patch"]["base"] = Value::Null;
            assert_eq!(cli, served, "{} finish {n}", skill.display());
        }
    }
}

#[test]
fn inline_events_judge_like_a_file() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let text = std::fs::read_to_string(demo_events(3)).unwrap();
    let array: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut verdicts = Vec::new();
    for events in [
        json!({"events": demo_events(3)}),
        json!({"events_inline": text}),
        json!({"events_inline": array}),
    ] {
        let state = tempfile::tempdir().unwrap();
        let mut request = json!({
            "skill": root().join("examples/demo-skill"),
            "workspace": ws.path(),
            "state_dir": state.path(),
        });
        request
            .as_object_mut()
            .unwrap()
            .extend(events.as_object().unwrap().clone());
        let (status, v) = server.check(&request);
        assert_eq!(status, 200, "{v}");
        verdicts.push(comparable(v));
    }
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], verdicts[2]);
}

#[test]
fn bad_requests_get_4xx_naming_the_field() {
    let server = Server::start(&["--max-body-mib", "1"]);
    let ws = demo_workspace();
    let skill = root().join("examples/demo-skill");
    // Each run's own: the finishes in `/`, which is no work tree, are
    // counted, and would reach the cap in a state directory kept between runs.
    let state = tempfile::tempdir().unwrap();
    let base = |extra: Value| {
        let mut r = json!({"skill": skill, "workspace": ws.path(), "events": demo_events(1), "state_dir": state.path()});
        r.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        r
    };
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"{not json".to_vec(), 400, "request body"),
        (b"[]".to_vec(), 400, "request body"),
        (
            json!({"events": "e"}).to_string().into_bytes(),
            400,
            "skill",
        ),
        (
            base(json!({"bogus": 1})).to_string().into_bytes(),
            400,
            "bogus",
        ),
        (
            base(json!({"allow_native": true})).to_string().into_bytes(),
            400,
            "allow_native",
        ),
        (
            base(json!({"unconfined_runs": true}))
                .to_string()
                .into_bytes(),
            400,
            "unconfined_runs",
        ),
        (
            base(json!({"deny": ["teleport"]})).to_string().into_bytes(),
            400,
            "deny",
        ),
        (
            base(json!({"events_format": "nope"}))
                .to_string()
                .into_bytes(),
            400,
            "events_format",
        ),
        (
            base(json!({"lock_timeout": -1})).to_string().into_bytes(),
            400,
            "lock_timeout",
        ),
        (
            base(json!({"time_limit": -1})).to_string().into_bytes(),
            400,
            "time_limit",
        ),
        (
            base(json!({"time_limit": 1e9})).to_string().into_bytes(),
            400,
            "time_limit",
        ),
        (
            base(json!({"events_inline": "x"})).to_string().into_bytes(),
            400,
            "not both",
        ),
        (
            json!({"skill": skill, "workspace": ws.path()})
                .to_string()
                .into_bytes(),
            400,
            "events",
        ),
        (
            base(json!({"skill": "/nonexistent/skill"}))
                .to_string()
                .into_bytes(),
            422,
            "/nonexistent/skill/critic.yaml",
        ),
        // The agent's own inputs (its transcript, its work tree): a finish
        // that could not be judged, answered with a rejection naming them.
        (
            base(json!({"events": "/nonexistent/e.jsonl"}))
                .to_string()
                .into_bytes(),
            200,
            "/nonexistent/e.jsonl",
        ),
        (
            base(json!({"workspace": "/"})).to_string().into_bytes(),
            200,
            "git",
        ),
        (vec![b' '; 2 << 20], 413, "larger than 1 MiB"),
        (
            base(json!({"workspace": "."})).to_string().into_bytes(),
            400,
            "workspace: \".\" is relative",
        ),
        (
            base(json!({"events": "e.jsonl"})).to_string().into_bytes(),
            400,
            "events: \"e.jsonl\" is relative",
        ),
    ];
    for (body, want, mention) in cases {
        let (status, answer) = server.call("POST", "/v1/check", &body);
        let shown = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
        assert_eq!(status, want, "{shown}: {answer}");
        let error = answer[if want == 200 { "message" } else { "error" }]
            .as_str()
            .unwrap_or_else(|| panic!("{shown}: {answer}"));
        assert!(error.contains(mention), "{shown}: {error}");
        if want == 200 {
            assert_eq!(answer["accepted"], false, "{shown}: {answer}");
        }
    }
    assert_eq!(server.call("GET", "/v1/nothing", b"").0, 404);
    assert_eq!(server.call("GET", "/v1/check", b"").0, 405);
    // The server is still fine.
    assert_eq!(server.call("GET", "/v1/health", b"").0, 200);
}

/// A request may name a secret where a patch, events, a skill's manifest
/// or a state file should be: the answer names the file, line and column,
/// never a byte of what it holds.
#[test]
fn answers_about_named_files_never_quote_them() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let skill = temp_skill("name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, config: {mode: pass}}\n");
    let dir = tempfile::tempdir().unwrap();
    for secret in secret_files(dir.path()) {
        let name = secret.file_name().unwrap().to_str().unwrap();
        let state = tempfile::tempdir().unwrap();
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&secret, linked.path().join("critic.yaml")).unwrap();
        let base = json!({
            "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3),
            "state_dir": state.path(),
        });
        let with = |field: &str, value: Value| {
            let mut request = base.clone();
            request[field] = value;
            request
        };
        let mut forced = with("events", json!(secret));
        forced["events_format"] = json!("swe-agent");
        for (what, request, place) in [
            ("patch", with("patch", json!(secret)), Some(name)),
            ("events", with("events", json!(secret)), None),
            ("events, as swe-agent", forced, None),
            (
                "skill",
                with("skill", json!(linked.path())),
                Some("critic.yaml"),
            ),
        ] {
            let (status, answer) = server.check(&request);
            let text = answer.to_string();
            assert!(!quotes(&text, &secret), "{what} {name}: {status} {text}");
            // Events are the agent's: a counted rejection that names them.
            let want = if what.starts_with("events") { 200 } else { 422 };
            assert_eq!(status, want, "{what} {name}: {text}");
            if let Some(file) = place {
                assert!(names_line_and_column(&text, file), "{what} {name}: {text}");
            }
        }
        // A state directory of its own: the rejections above were counted.
        let state = tempfile::tempdir().unwrap();
        let session = state.path().join("t/default");
        std::fs::create_dir_all(&session).unwrap();
        std::os::unix::fs::symlink(&secret, session.join("harness.json")).unwrap();
        let mut base = base.clone();
        base["state_dir"] = json!(state.path());
        let (status, answer) = server.check(&base);
        let text = answer.to_string();
        assert!(!quotes(&text, &secret), "state {name}: {text}");
        assert_eq!(status, 200, "state {name}: {text}");
        // Not followed: a link there is tampering, set aside unread.
        let problem = answer["metadata"]["unjudged"].as_str().unwrap_or_default();
        assert!(
            answer["metadata"]["cause"] == "state"
                && problem.contains("harness.json: a symbolic link"),
            "state {name}: {text}"
        );
    }
}

#[test]
fn concurrent_sessions_count_every_finish_exactly_once() {
    let server = Server::start(&["--concurrency", "4"]);
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nmax_iterations: 1000\nsignals:\n  - {name: c, type: hard_gate, detector: {misbehave}, config: {mode: count}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let (sessions, finishes, clients) = (6, 5, 8);
    let results = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= sessions * finishes {
                    break;
                }
                let session = format!("s{}", i % sessions);
                let (status, v) = server.check(&json!({
                    "skill": skill.path(),
                    "workspace": ws.path(),
                    "events": demo_events(3),
                    "session": session,
                    "state_dir": state.path(),
                }));
                assert_eq!(status, 200, "{v}");
                let count = v["signals"][0]["metadata"]["count"].as_u64().unwrap();
                results
                    .lock()
                    .unwrap()
                    .push((session, v["iteration"].as_u64().unwrap(), count));
            });
        }
    });
    let results = results.into_inner().unwrap();
    for s in 0..sessions {
        let session = format!("s{s}");
        let mut iterations: Vec<u64> = results
            .iter()
            .filter(|r| r.0 == session)
            .map(|r| r.1)
            .collect();
        let mut counts: Vec<u64> = results
            .iter()
            .filter(|r| r.0 == session)
            .map(|r| r.2)
            .collect();
        iterations.sort();
        counts.sort();
        let want: Vec<u64> = (1..=finishes as u64).collect();
        assert_eq!(iterations, want, "{session}");
        assert_eq!(counts, want, "{session}: the detector's own state");
    }
    // A CLI check of one of those sessions continues its count.
    let out = run(
        check(skill.path(), ws.path(), &demo_events(3), state.path()).args(["--session", "s0"]),
    );
    assert_eq!(
        json_out(&out)["iteration"],
        finishes as u64 + 1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_skill_changed_on_disk_is_loaded_again() {
    let server = Server::start(&[]);
    let skill = temp_skill(
        "name: first\nversion: 0.1.0\nsignals:\n  - {name: a, type: hard_gate, detector: {misbehave}, config: {mode: pass}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let ask = || {
        let (status, v) = server.check(&json!({
            "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
        }));
        assert_eq!(status, 200, "{v}");
        v
    };
    // Past the window in which a load of fresh files is redone anyway, so
    // what follows tests that a change itself is seen.
    std::thread::sleep(Duration::from_millis(2100));
    let v = ask();
    assert_eq!(
        (v["skill"]["name"].as_str(), v["accepted"].as_bool()),
        (Some("first"), Some(true))
    );
    assert_eq!(ask()["skill"]["name"], "first");
    // The manifest changes (same size even), right after the last load.
    std::fs::write(
        skill.path().join("critic.yaml"),
        "name: secnd\nversion: 0.1.0\nsignals:\n  - {name: a, type: hard_gate, detector: {misbehave}, config: {mode: fire}}\n"
            .replace("{misbehave}", "misbehave.wasm"),
    )
    .unwrap();
    let v = ask();
    assert_eq!(
        (v["skill"]["name"].as_str(), v["accepted"].as_bool()),
        (Some("secnd"), Some(false)),
        "{v}"
    );
    // The detector changes: another component under the same name.
    std::fs::copy(
        root().join("skills/empty-patch/empty_patch.wasm"),
        skill.path().join("misbehave.wasm"),
    )
    .unwrap();
    let v = ask();
    assert_eq!(
        v["accepted"], true,
        "the empty-patch gate passes a non-empty patch: {v}"
    );
    // A broken manifest is reported, not served from memory.
    std::fs::write(skill.path().join("critic.yaml"), "name: [").unwrap();
    let (status, v) = server.check(&json!({
        "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
    }));
    assert_eq!(status, 422, "{v}");
}

/// Wait until a check holds a session in the state directory `state` (its
/// lock file is there).
fn wait_for_a_session(state: &Path) {
    let started = Instant::now();
    loop {
        let mut stack = vec![state.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.file_name() == ".lock" {
                    return;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no check took a session in {}",
            state.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_lets_the_check_in_flight_finish_then_stops() {
    let server = Server::start(&[]);
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, config: {mode: sleep, ms: 2500}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let request = json!({
        "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
    });
    let in_flight = {
        let socket = server.socket.clone();
        std::thread::spawn(move || {
            raw_call(
                &socket,
                "POST",
                "/v1/check",
                request.to_string().as_bytes(),
                &[],
            )
        })
    };
    // The check is under way once it holds its session.
    wait_for_a_session(state.path());
    let sent = Instant::now();
    server.signal(libc::SIGTERM);
    let (status, v) = in_flight.join().unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["signals"][0]["metadata"]["count"], 1);
    let mut server = server;
    let code = server.child.wait().unwrap();
    assert!(code.success(), "{code:?}");
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert!(!server.socket.exists(), "the socket is removed");
}

#[test]
fn check_with_server_uses_it_and_falls_back_when_none_answers() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let skill = root().join("examples/demo-skill");
    let served = run(check(&skill, ws.path(), &demo_events(3), state.path())
        .arg("--server")
        .arg(&server.socket));
    assert_eq!(served.status.code(), Some(0), "{}", stderr(&served));
    assert!(
        !stderr(&served).contains("in process"),
        "{}",
        stderr(&served)
    );
    assert_eq!(json_out(&served)["iteration"], 1);

    // Relative paths are the client's, not the server's.
    let relative = run(critic()
        .current_dir(ws.path())
        .args(["check", "--skill"])
        .arg(&skill)
        .args(["--workspace", ".", "--events"])
        .arg(demo_events(3))
        .arg("--state-dir")
        .arg(state.path())
        .env("CRITIC_SERVER", &server.socket));
    assert_eq!(json_out(&relative)["iteration"], 2, "{}", stderr(&relative));

    drop(server);
    let dir = tempfile::tempdir().unwrap();
    let fallback = run(check(&skill, ws.path(), &demo_events(3), state.path())
        .env("CRITIC_SERVER", dir.path().join("gone.sock")));
    assert_eq!(fallback.status.code(), Some(0), "{}", stderr(&fallback));
    assert!(
        stderr(&fallback).contains("checking in process"),
        "{}",
        stderr(&fallback)
    );
    let (a, b) = (
        comparable(json_out(&served)),
        comparable(json_out(&fallback)),
    );
    assert_eq!(b["iteration"], 3);
    assert_eq!(a["signals"], b["signals"]);
    assert_eq!(a["accepted"], b["accepted"]);
}

#[test]
fn a_request_the_server_rejects_is_not_retried_in_process() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let out = run(check(
        Path::new("/nonexistent/skill"),
        ws.path(),
        &demo_events(3),
        state.path(),
    )
    .arg("--server")
    .arg(&server.socket));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("422") && err.contains("/nonexistent/skill"),
        "{err}"
    );
    assert!(!err.contains("in process"), "{err}");
}

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

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let token = "a-token-only-the-test-knows-0123";
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("critic.sock");
    let mut cmd = critic();
    cmd.args([
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--socket",
    ])
    .arg(&socket)
    .env("CRITIC_SERVER_TOKEN", token)
    .stderr(Stdio::piped());
    let server = Server::spawn(cmd, socket, dir);
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
fn a_slow_client_does_not_hold_up_others() {
    let server = Server::start(&[]);
    // Headers that never end, and a body that never comes.
    let mut stalled_head = UnixStream::connect(&server.socket).unwrap();
    stalled_head
        .write_all(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut stalled_body = UnixStream::connect(&server.socket).unwrap();
    stalled_body
        .write_all(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        .unwrap();
    let started = Instant::now();
    let (status, _) = server.call("GET", "/v1/health", b"");
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_full_queue_is_refused_at_once_and_a_slow_check_answers_in_time() {
    let server = Server::start(&["--concurrency", "1", "--queue", "0", "--check-timeout", "4"]);
    // A command that sleeps: a detector's own wait past its deadline ends at
    // once, a run is stopped only at the deadline.
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\ncapabilities: [run]\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, timeout: 10s, config: {mode: run, request: {argv: [sleep, \"30\"]}}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let request = json!({
        "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
    });
    let slow = {
        let socket = server.socket.clone();
        let body = request.to_string();
        std::thread::spawn(move || raw_call(&socket, "POST", "/v1/check", body.as_bytes(), &[]))
    };
    // The first is admitted once it holds its session.
    wait_for_a_session(state.path());
    let started = Instant::now();
    let mut other = request.clone();
    other["session"] = json!("other");
    let (status, v) = server.check(&other);
    assert_eq!(status, 503, "{v}");
    // Refused without waiting for the check ahead of it.
    assert!(started.elapsed() < Duration::from_secs(2));
    // The check gets the server's 4 s less a margin, and its signal, still
    // sleeping then, fails closed: a verdict, not a 504.
    let (status, v) = slow.join().unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["accepted"], false, "{v}");
    assert!(
        v["signals"][0]["error"]
            .as_str()
            .unwrap()
            .contains("time limit"),
        "{v}"
    );
    assert!(
        v["followup"].as_str().unwrap().contains("ran out of time"),
        "{v}"
    );
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

/// A server with its socket and TCP port: `(server, port, token)`.
fn tcp_server() -> (Server, u16, &'static str) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let token = "a-token-only-the-test-knows-0123";
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("critic.sock");
    let mut cmd = critic();
    cmd.args([
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--socket",
    ])
    .arg(&socket)
    .env("CRITIC_SERVER_TOKEN", token)
    .stderr(Stdio::piped());
    (Server::spawn(cmd, socket, dir), port, token)
}

/// Opens `n` connections to `port` that send half a request line and
/// stall, in a process of user `uid` (the test's own when `None`); ready
/// when this returns.
fn stall_connections(port: u16, n: usize, uid: Option<u32>) -> Child {
    use std::os::unix::process::CommandExt;
    let script = "import socket,sys,time\nconns=[]\nfor _ in range(int(sys.argv[2])):\n    try:\n        s=socket.create_connection(('127.0.0.1',int(sys.argv[1])),timeout=2)\n        s.sendall(b'POST /v1/check HTT')\n        conns.append(s)\n    except OSError:\n        pass\nprint('ready',len(conns),flush=True)\ntime.sleep(60)\n";
    let mut cmd = std::process::Command::new("python3");
    cmd.args(["-c", script, &port.to_string(), &n.to_string()])
        .stdout(Stdio::piped());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let mut child = cmd.spawn().unwrap();
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.starts_with("ready"), "{ready}");
    child
}

#[test]
fn stalled_connections_cost_a_client_seconds_not_minutes() {
    let (server, port, token) = tcp_server();
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let skill = root().join("examples/demo-skill");
    let ask = || {
        let started = Instant::now();
        let out = run(check(&skill, ws.path(), &demo_events(3), state.path())
            .env("CRITIC_SERVER", format!("http://127.0.0.1:{port}"))
            .env("CRITIC_SERVER_TOKEN", token));
        assert!(out.status.code().unwrap() < 2, "{}", stderr(&out));
        assert_eq!(json_out(&out)["signals"].as_array().unwrap().len(), 4);
        (started.elapsed(), stderr(&out))
    };
    // 600 connections of the client's own user, stalled in their first
    // line: the client gives up on the server within seconds and checks
    // in process.
    let mut stalled = stall_connections(port, 600, None);
    let (took, err) = ask();
    assert!(took < Duration::from_secs(8), "{took:?}: {err}");
    // Connections without their headers are closed after 2 s: the server
    // answers again (asked until it does, on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(15);
    let answered = loop {
        std::thread::sleep(Duration::from_millis(500));
        let (took, err) = ask();
        if !err.contains("in process") || Instant::now() > deadline {
            break (took, err);
        }
    };
    let _ = stalled.kill();
    let _ = stalled.wait();
    let (took, err) = answered;
    assert!(!err.contains("in process"), "{took:?}: {err}");
    drop(server);
}

#[test]
fn another_users_stalled_connections_do_not_hold_up_the_token_holder() {
    as_root_to_act_as_another_user();
    let (server, port, token) = tcp_server();
    let mut stalled = stall_connections(port, 600, Some(65534));
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(check(
        &root().join("examples/demo-skill"),
        ws.path(),
        &demo_events(3),
        state.path(),
    )
    .env("CRITIC_SERVER", format!("http://127.0.0.1:{port}"))
    .env("CRITIC_SERVER_TOKEN", token));
    let took = started.elapsed();
    let _ = stalled.kill();
    let _ = stalled.wait();
    // Answered by the server itself, at once: the other user holds only a
    // few places.
    assert!(!stderr(&out).contains("in process"), "{}", stderr(&out));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(json_out(&out)["iteration"], 1);
    drop(server);
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

fn listing_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn a_repository_the_agent_broke_is_a_counted_rejection_from_the_server_too() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let config = ws.path().join(".git/config");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}[core")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let request = json!({
        "skill": root().join("examples/demo-skill"), "workspace": ws.path(),
        "events": demo_events(3), "state_dir": state.path(),
    });
    for iteration in 1..=2 {
        let (status, v) = server.check(&request);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["accepted"], false, "{v}");
        assert_eq!(v["iteration"], iteration, "{v}");
        assert!(
            v["followup"]
                .as_str()
                .unwrap()
                .contains("could not read your changes"),
            "{v}"
        );
    }
    // Mended, the finish is judged again (and counted on).
    std::fs::write(&config, good).unwrap();
    let (status, v) = server.check(&request);
    assert_eq!(status, 200, "{v}");
    assert!(v["metadata"]["unjudged"].is_null(), "{v}");
    assert_eq!(v["signals"].as_array().unwrap().len(), 4);
}

#[test]
fn a_server_that_never_answers_costs_a_client_three_seconds() {
    // A socket that accepts and then says nothing: the client gives up on
    // it after 3 s and checks in process, having sent no body to count.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("silent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let silent = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut received = Vec::new();
        let mut buf = [0u8; 65536];
        // Until the client closes its end.
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            received.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&received).to_lowercase()
    });
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(check(
        &root().join("examples/demo-skill"),
        ws.path(),
        &demo_events(3),
        state.path(),
    )
    .arg("--server")
    .arg(&socket));
    let took = started.elapsed();
    assert!(out.status.code().unwrap() < 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("checking in process"),
        "{}",
        stderr(&out)
    );
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(json_out(&out)["iteration"], 1);
    let received = silent.join().unwrap();
    assert!(received.contains("expect: 100-continue"), "{received}");
    assert!(
        !received.contains("\"skill\""),
        "the body was sent: {received}"
    );
}

// A server pinned to one session (an experiment's judge, which a confined
// agent can reach): what an agent would send to judge elsewhere, reset its
// count or read another file is refused; the session's own finish is
// judged in the pinned state and logged, with its patch, by the server.
#[test]
fn a_pinned_server_judges_its_session_only_and_logs_each_verdict() {
    let ws = demo_workspace();
    let other = demo_workspace();
    let run = tempfile::tempdir().unwrap();
    let agent_dir = run.path().join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let events = agent_dir.join("events.jsonl");
    // A finish that ran no tests: rejected.
    std::fs::copy(demo_events(2), &events).unwrap();
    let secret = run.path().join("secret.txt");
    std::fs::write(&secret, "SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, agent_dir.join("link.jsonl")).unwrap();
    let skill = root().join("examples/demo-skill");
    let state = run.path().join("state");
    let log = run.path().join("verdicts.jsonl");
    let pin = |flag: &str, path: &Path| [flag.to_string(), path.display().to_string()];
    let mut flags: Vec<String> = Vec::new();
    flags.extend(pin("--pin-skill", &skill));
    flags.extend(pin("--pin-workspace", ws.path()));
    flags.extend(pin("--pin-state-dir", &state));
    flags.extend(pin("--pin-events-under", &agent_dir));
    flags.extend(pin("--verdict-log", &log));
    flags.extend(["--pin-max-rejections".to_string(), "1".to_string()]);
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let base = json!({"skill": skill, "workspace": ws.path(), "events": events});
    let with = |key: &str, value: Value| {
        let mut r = base.clone();
        r[key] = value;
        r
    };
    let elsewhere = tempfile::tempdir().unwrap();
    for (what, request) in [
        ("another workspace", with("workspace", json!(other.path()))),
        (
            "another skill",
            with("skill", json!(root().join("skills/fix-only"))),
        ),
        ("another state", with("state_dir", json!(elsewhere.path()))),
        ("a base", with("base", json!("HEAD"))),
        ("a file of the user's", with("events", json!(secret))),
        (
            "a link to one",
            with("events", json!(agent_dir.join("link.jsonl"))),
        ),
    ] {
        let (status, v) = server.check(&request);
        assert_eq!(status, 403, "{what}: {v}");
        assert!(!v.to_string().contains("SECRET"), "{what}: {v}");
    }
    assert!(!log.exists(), "nothing was judged");
    assert!(listing_is_empty(elsewhere.path()));
    // The session's own finishes: judged in the pinned state, under the
    // pinned cap whatever the request asks, and logged.
    let mut asked = base.clone();
    asked["max_rejections"] = json!(50);
    let (status, first) = server.check(&asked);
    assert_eq!(status, 200, "{first}");
    let (_, second) = server.check(&asked);
    assert!(state.is_dir());
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[0]["iteration"], 1);
    assert_eq!(logged[1]["iteration"], 2);
    assert_eq!(first["accepted"], false, "{first}");
    assert_eq!(
        second["budget_exhausted"], true,
        "the pinned cap of 1: {second}"
    );
    assert!(run.path().join("round-1/patch.diff").is_file());
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
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(meta) = std::fs::symlink_metadata(&socket) {
                    seen.insert(meta.permissions().mode() & 0o777);
                }
            }
            seen
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
