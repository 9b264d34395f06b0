//! `critic serve` and `critic check --server`: the real binary serving real
//! skills on real git work trees, asked over its Unix socket and over TCP.

#[path = "../common/mod.rs"]
mod common;

mod access;
mod checks;
mod clients;
mod load;
mod requests;

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

fn listing_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}
