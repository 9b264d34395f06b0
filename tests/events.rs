//! Event adapters on real recorded streams: the OpenHands SDK's persisted
//! `events/` directory, a JSON array, and JSONL all normalize the same way.

mod common;

use common::*;
use serde_json::Value;

fn echo(events: &std::path::Path, format: Option<&str>) -> (i32, Value, String) {
    let skill = temp_skill("name: t\nversion: 0.1.0\nsignals:\n  - {name: e, type: hard_gate, detector: {misbehave}, config: {mode: echo}}\n");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), events, state.path());
    if let Some(f) = format {
        cmd.args(["--events-format", f]);
    }
    let out = run(&mut cmd);
    let code = out.status.code().unwrap();
    let v = if code == 2 {
        Value::Null
    } else {
        json_out(&out)["signals"][0]["metadata"].clone()
    };
    (code, v, stderr(&out))
}

#[test]
fn openhands_sdk_layouts_agree() {
    let (_, dir, _) = echo(&fixture("openhands/events"), None);
    let (_, conv, _) = echo(&fixture("openhands"), None);
    let (_, array, _) = echo(&fixture("openhands/events.json"), None);
    let (_, jsonl, _) = echo(&demo_events(3), None);
    assert_eq!(dir["kinds"], array["kinds"]);
    assert_eq!(dir["kinds"], jsonl["kinds"]);
    assert_eq!(
        dir["kinds"], conv["kinds"],
        "a conversation dir holding events/ works too"
    );
    let kinds: Vec<&str> = dir["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "system");
    assert_eq!(kinds[1], "message");
    assert!(kinds.contains(&"action") && kinds.contains(&"observation"));
    assert_eq!(kinds.iter().filter(|k| **k == "finish").count(), 3);
    assert_eq!(dir["last_finish"], "Fixed and verified: all tests pass.");
    assert_eq!(
        dir["last_raw_kind"], "ObservationEvent",
        "the guest fetched the event's original JSON through event-raw"
    );
}

#[test]
fn ill_typed_fields_are_dropped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.jsonl");
    std::fs::write(
        &odd,
        concat!(
            "{\"kind\": \"MessageEvent\", \"source\": 7, \"llm_message\": {\"content\": [{\"text\": \"hi\"}]}}\n",
            "{\"kind\": \"ObservationEvent\", \"observation\": \"not an object\"}\n",
            "{\"kind\": \"ActionEvent\", \"action\": {\"kind\": \"FinishAction\", \"message\": \"done\"}}\n",
        ),
    )
    .unwrap();
    let (code, v, err) = echo(&odd, None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        v["kinds"],
        serde_json::json!(["message", "other", "finish"])
    );
    assert_eq!(v["last_finish"], "done");
}

#[test]
fn forced_format_and_unknown_shapes() {
    // A format forced on another agent's transcript finds nothing of its
    // own: refused, never judged as a session that did nothing.
    let (code, _, err) = echo(&demo_events(1), Some("openhands-v0"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("holds no openhands-v0 events"), "{err}");
    let (code, _, err) = echo(&demo_events(1), Some("openhands"));
    assert_eq!(code, 0, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.jsonl");
    std::fs::write(&odd, "{\"type\": \"something\"}\n").unwrap();
    // Events the agent's program wrote that are no transcript: a finish
    // that could not be judged, a rejection that names the problem.
    let (code, _, err) = echo(&odd, None);
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot tell the event format; pass --events-format"),
        "{err}"
    );
    // Forced on records it knows none of: refused; beside one it knows,
    // unknown kinds are kept.
    let (code, _, err) = echo(&odd, Some("openhands"));
    assert_eq!(code, 2, "{err}");
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(
        &mixed,
        concat!(
            "{\"kind\": \"MessageEvent\", \"source\": \"user\", \"llm_message\": {\"content\": [{\"text\": \"hi\"}]}}\n",
            "{\"type\": \"something\"}\n",
        ),
    )
    .unwrap();
    let (code, v, err) = echo(&mixed, Some("openhands"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        v["kinds"],
        serde_json::json!(["message", "other"]),
        "unknown kinds are kept"
    );
}

#[test]
fn openhands_v0_record_and_bare_history_agree() {
    let (code, record, err) = echo(&fixture("openhands-v0/output.jsonl"), None);
    assert_eq!(code, 0, "{err}");
    let (_, bare, _) = echo(&fixture("openhands-v0/history.json"), None);
    assert_eq!(record["kinds"], bare["kinds"]);
    assert_eq!(
        record["kinds"],
        serde_json::json!([
            "message",
            "action",
            "observation",
            "action",
            "observation",
            "action",
            "observation",
            "finish"
        ])
    );
    assert_eq!(
        record["last_finish"],
        "Touching intervals now merge; the tests pass."
    );
    // The trajectory gate reads V0 exit codes and edits too.
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        &skill("ran-tests"),
        repo.path(),
        &fixture("openhands-v0/output.jsonl"),
        state.path(),
    ));
    let v = json_out(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["signals"][0]["metadata"]["last_edit_event"], 3);
    assert_eq!(
        v["signals"][0]["metadata"]["test_runs_after_edit"][0]["exit_code"],
        0
    );
}

#[test]
fn several_v0_records_need_one_instance() {
    let line = std::fs::read_to_string(fixture("openhands-v0/output.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let two = dir.path().join("output.jsonl");
    std::fs::write(&two, format!("{line}{line}")).unwrap();
    let (code, _, err) = echo(&two, None);
    assert_eq!(code, 1);
    assert!(
        err.contains("holds 2 output.jsonl records (line 2 and on)"),
        "{err}"
    );
}
