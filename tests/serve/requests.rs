//! Promises 12a and 20 of docs/SECURITY.md: a bad request gets a 4xx naming
//! the field, a request cannot widen what a check may do, and no answer
//! quotes a file a request names.

use super::*;

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
