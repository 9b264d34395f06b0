//! The `llm-complete` capability against a local OpenAI-compatible stub
//! server written for these tests (no paid API can be reached here): prompt
//! contents, the key kept from the guest, parallel requests, retries,
//! garbage answers, an unreachable endpoint, and record/replay.

mod common;

use common::llm_stub::{completion, Stub};
use common::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn requests(n: u32) -> Value {
    json!((0..n)
        .map(|i| json!({
            "messages": [{"role": "system", "content": "You write variant patches."},
                         {"role": "user", "content": format!("operator {i}")}],
            "temperature": 1.0,
            "sample": i,
        }))
        .collect::<Vec<_>>())
}

/// Run the llm mode; returns the verdict.
fn complete(url: Option<&str>, reqs: Value, caps: &str, extra: &[&str]) -> Value {
    let repo = Repo::demo();
    let config = json!({"mode": "llm", "requests": reqs});
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [{caps}]\nsignals:\n  - {{name: l, type: hard_gate, detector: {{misbehave}}, timeout: 60s, config: {config}}}\n"
    ));
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(1), state.path());
    cmd.env_remove("CRITIC_LLM_BASE_URL")
        .env("STUB_KEY", "sk-test-123")
        .args(["--llm-api-key-env", "STUB_KEY", "--llm-model", "stub-model"])
        .args(extra);
    if let Some(u) = url {
        cmd.args(["--llm-base-url", u]);
    }
    json_out(&run(&mut cmd))
}

fn results(v: &Value) -> Vec<Value> {
    v["signals"][0]["metadata"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn completions_run_in_parallel_with_the_key_kept_on_the_host() {
    let stub = Stub::start(Duration::from_millis(300), |_, body| {
        let last = body["messages"][1]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (200, completion(&format!("answer to {last}")))
    });
    let v = complete(Some(&stub.url), requests(4), "llm-complete", &[]);
    let r = results(&v);
    assert_eq!(r.len(), 4, "{v:#}");
    for (i, res) in r.iter().enumerate() {
        assert_eq!(
            res["content"],
            format!("answer to operator {i}"),
            "in request order"
        );
    }
    assert!(stub.peak.load(Ordering::SeqCst) >= 2, "requests overlapped");
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    for s in &seen {
        assert_eq!(s.authorization.as_deref(), Some("Bearer sk-test-123"));
        assert_eq!(s.body["model"], "stub-model");
        assert_eq!(
            s.body["messages"][0]["content"],
            "You write variant patches."
        );
        assert!(
            s.body.get("sample").is_none(),
            "`sample` is the host's, not the API's"
        );
    }
    assert!(
        !v.to_string().contains("sk-test-123"),
        "the key never reaches the detector or verdict"
    );
}

#[test]
fn server_errors_are_retried_and_garbage_is_reported() {
    let stub = Stub::start(Duration::ZERO, |n, _| match n {
        0 | 1 => (503, "{\"error\": \"busy\"}".into()),
        _ => (200, completion("third time lucky")),
    });
    let v = complete(Some(&stub.url), requests(1), "llm-complete", &[]);
    assert_eq!(results(&v)[0]["content"], "third time lucky", "{v:#}");
    assert_eq!(stub.seen.lock().unwrap().len(), 3);

    let garbage = Stub::start(Duration::ZERO, |_, _| (200, "<html>not json</html>".into()));
    let v = complete(Some(&garbage.url), requests(1), "llm-complete", &[]);
    let err = results(&v)[0]["error"].as_str().unwrap().to_string();
    assert!(err.contains("not JSON"), "{err}");
    assert_eq!(
        garbage.seen.lock().unwrap().len(),
        1,
        "a malformed answer is not retried"
    );
}

#[test]
fn an_unreachable_endpoint_is_an_error_per_request() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let v = complete(
        Some(&url),
        requests(2),
        "llm-complete",
        &["--llm-attempts", "2"],
    );
    let r = results(&v);
    assert_eq!(r.len(), 2, "{v:#}");
    assert!(
        r.iter()
            .all(|x| x["error"].as_str().is_some_and(|e| e.contains(&url))),
        "{r:?}"
    );
}

#[test]
fn answers_are_recorded_and_replayed() {
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().to_str().unwrap().to_string();
    let stub = Stub::start(Duration::ZERO, |n, _| {
        (200, completion(&format!("sample #{n}")))
    });
    let first = complete(
        Some(&stub.url),
        requests(2),
        "llm-complete",
        &["--llm-cache", &cache_arg],
    );
    let dead = format!(
        "http://127.0.0.1:{}/v1",
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    );
    let again = complete(
        Some(&dead),
        requests(2),
        "llm-complete",
        &["--llm-cache", &cache_arg],
    );
    // A different endpoint is a different experiment: nothing to replay.
    assert!(results(&again)[0]["error"].is_string());
    let replay = complete(
        Some(&stub.url),
        requests(2),
        "llm-complete",
        &["--llm-cache", &cache_arg],
    );
    assert_eq!(
        stub.seen.lock().unwrap().len(),
        2,
        "the replay did not call the model"
    );
    for (a, b) in results(&first).iter().zip(results(&replay).iter()) {
        assert_eq!(a["content"], b["content"]);
        assert_eq!(b["cached"], true);
    }
}

#[test]
fn the_capability_must_be_declared_and_a_model_configured() {
    let v = complete(Some("http://127.0.0.1:9/v1"), requests(1), "log", &[]);
    let err = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("capability 'llm-complete' is not declared"),
        "{err}"
    );
    let v = complete(None, requests(1), "llm-complete", &[]);
    let err = v["signals"][0]["error"].as_str().unwrap();
    assert!(err.contains("--llm-base-url"), "{err}");
}
