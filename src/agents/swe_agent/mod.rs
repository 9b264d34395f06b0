//! SWE-agent 1.x: its `.traj` files.
//!
//! A trajectory is one JSON document: `trajectory` lists the steps, each
//! with the model's `thought`, the `action` it ran (a shell command, a tool
//! command such as `str_replace_editor str_replace PATH ...`, or `submit`)
//! and the `observation`; `history` holds the chat, whose first user message
//! is the task; `info` the `submission` and `exit_status`. Observations have
//! no exit codes. The last `submit` is the finish (SWE-agent's review tool
//! answers a first `submit` with a checklist instead of submitting).
//! (SWE-agent cannot run here: version 1.x is not on PyPI and needs Docker.
//! This reader follows its source.)

use super::events_error::EventsError;
use super::format::Format;
use super::record_to_events::Origin;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// SWE-agent trajectories.
pub(super) static FORMAT: Format = Format {
    name: "swe-agent",
    about: "SWE-agent trajectory (.traj, one JSON file)",
    sniff,
    read_dir: None,
    normalize,
};

fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        trajectory: Option<Vec<de::IgnoredAny>>,
        history: Option<de::IgnoredAny>,
        info: Option<de::IgnoredAny>,
    }
    use serde::de;
    serde_json::from_str::<Probe>(first)
        .is_ok_and(|p| p.trajectory.is_some() && (p.history.is_some() || p.info.is_some()))
}

#[derive(Deserialize)]
struct Trajectory {
    trajectory: Vec<Box<RawValue>>,
    #[serde(default)]
    history: Vec<Value>,
    #[serde(default)]
    info: Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Step {
    action: Option<String>,
    observation: Option<String>,
    thought: Option<String>,
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let record = super::format::one_document(path, records)?;
    let t: Trajectory = record
        .parse(path)?
        .map_err(|e| record.unexpected(path, "`trajectory` is not a list of steps", &e))?;
    let mut events = Vec::new();
    let task = t
        .history
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(super::record_to_events::text_of);
    if let Some(task) = task {
        let mut e = Event::new(0, EventKind::Message);
        e.source = Some("user".into());
        e.original_kind = Some("history/user".into());
        e.text = Some(task);
        events.push(e);
    }
    let submitted = t
        .info
        .get("submission")
        .and_then(Value::as_str)
        .map(str::to_string);
    let last_submit = t.trajectory.iter().rposition(|raw| {
        serde_json::from_str::<Step>(raw.get())
            .is_ok_and(|s| s.action.as_deref().map(str::trim) == Some("submit"))
    });
    for (i, raw) in t.trajectory.into_iter().enumerate() {
        let step: Step = serde_json::from_str(raw.get()).unwrap_or_default();
        let mut origin = Origin {
            raw: Some(raw),
            span: None,
            class: "step".into(),
            timestamp: None,
        };
        if let Some(thought) = step.thought.filter(|t| !t.is_empty()) {
            origin.push(&mut events, EventKind::Message, "agent").text = Some(thought);
        }
        let action = step.action.unwrap_or_default();
        if Some(i) == last_submit {
            let e = origin.push(&mut events, EventKind::Finish, "agent");
            e.text = submitted.clone();
            e.tool = Some("submit".into());
            continue;
        }
        let (tool, arguments) = split_action(&action);
        let call_id = format!("step-{i}");
        let e = origin.push(&mut events, EventKind::Action, "agent");
        e.tool = Some(tool);
        e.call_id = Some(call_id.clone());
        e.arguments = Some(arguments);
        let tool = e.tool.clone();
        let e = origin.push(&mut events, EventKind::Observation, "environment");
        e.tool = tool;
        e.call_id = Some(call_id);
        e.output = step.observation;
    }
    Ok(events)
}

/// The tool and arguments of an action: `str_replace_editor <command> <path>
/// ...` (the editor's own tool) keeps its sub-command and path; anything
/// else is a shell command line.
fn split_action(action: &str) -> (String, Value) {
    let mut words = action.split_whitespace();
    if words.next() == Some("str_replace_editor") {
        let command = words.next().unwrap_or_default();
        let path = words.next().unwrap_or_default();
        return (
            "str_replace_editor".into(),
            serde_json::json!({ "command": command, "path": path, "action": action }),
        );
    }
    ("bash".into(), serde_json::json!({ "command": action }))
}
