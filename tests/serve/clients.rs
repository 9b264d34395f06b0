//! `critic check --server` and hooks as the server's clients: they use it
//! when it answers, check in process when it does not, and never retry
//! what it refused.

use super::*;

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
