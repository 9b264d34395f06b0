//! Promises 1, 5, 6, 11 and 14 to 16 of docs/SECURITY.md: a detector, in Rust
//! or in Python, is held to its manifest's limits, reaches only what it was
//! granted, and its failures reach the agent as one short sentence.

use super::*;

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
