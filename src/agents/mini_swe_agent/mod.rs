//! mini-swe-agent (PyPI `mini-swe-agent`): its trajectory files.
//!
//! A trajectory is one JSON document, `{"info", "messages",
//! "trajectory_format": "mini-swe-agent-1.1"}`, rewritten after every step.
//! `messages` are the model's own chat messages with an `extra` field: an
//! assistant message's `extra.actions` are the shell commands it ran (each
//! with its `tool_call_id` in tool-calling mode); a command's result is a
//! `tool` message (tool calling) or a `user` message (text mode) whose
//! `extra` holds `returncode` and `raw_output`; the run's last message has
//! role `exit`. The model submits by running `echo
//! COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (`MINI_SWE_AGENT_FINAL_OUTPUT`
//! before 2.0): that command is its finish. mini-swe-agent has no hooks;
//! `examples/mini-swe-agent` runs the critic when the model submits.

use super::events_error::EventsError;
use super::format::Format;
use super::record_to_events::Origin;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// mini-swe-agent trajectories.
pub(super) static FORMAT: Format = Format {
    name: "mini-swe-agent",
    about: "mini-swe-agent trajectory (trajectory_format mini-swe-agent-1.x, one JSON file)",
    sniff,
    read_dir: None,
    normalize,
};

fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        trajectory_format: Option<String>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.trajectory_format
            .is_some_and(|f| f.starts_with("mini-swe-agent"))
    })
}

/// The commands that submit.
const SUBMIT_MARKERS: &[&str] = &[
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "MINI_SWE_AGENT_FINAL_OUTPUT",
];

#[derive(Deserialize)]
struct Trajectory {
    messages: Vec<Box<RawValue>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    role: Option<String>,
    content: Value,
    tool_call_id: Option<String>,
    extra: Extra,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Extra {
    actions: Vec<Action>,
    returncode: Option<i64>,
    raw_output: Option<String>,
    interrupt_type: Option<String>,
    exit_status: Option<String>,
    timestamp: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Action {
    command: Option<String>,
    tool_call_id: Option<String>,
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let record = super::format::one_document(path, records)?;
    let trajectory: Trajectory = record
        .parse(path)?
        .map_err(|e| record.unexpected(path, "`messages` is not a list of messages", &e))?;
    let mut events = Vec::new();
    // The calls waiting for their results, in order (text mode names none).
    let mut pending: std::collections::VecDeque<Option<String>> = Default::default();
    for raw in trajectory.messages {
        let m: Message = serde_json::from_str(raw.get()).unwrap_or_default();
        let role = m.role.clone().unwrap_or_default();
        let mut origin = Origin {
            raw: Some(raw),
            span: None,
            class: role.clone(),
            timestamp: m.extra.timestamp.map(|t| t.to_string()),
        };
        let text = super::record_to_events::text_of(&m.content);
        let is_result = role == "tool" || (role == "user" && m.extra.returncode.is_some());
        match role.as_str() {
            _ if is_result => {
                let call_id = m.tool_call_id.or_else(|| pending.pop_front().flatten());
                let e = origin.push(&mut events, EventKind::Observation, "environment");
                e.tool = Some("bash".into());
                e.call_id = call_id;
                e.exit_code = m.extra.returncode;
                e.output = Some(m.extra.raw_output.unwrap_or(text));
            }
            "assistant" => {
                if !text.is_empty() {
                    origin.push(&mut events, EventKind::Message, "agent").text = Some(text);
                }
                for action in m.extra.actions {
                    let command = action.command.unwrap_or_default();
                    let submits = SUBMIT_MARKERS.iter().any(|s| command.contains(s));
                    let kind = if submits {
                        EventKind::Finish
                    } else {
                        EventKind::Action
                    };
                    let e = origin.push(&mut events, kind, "agent");
                    e.tool = Some("bash".into());
                    e.call_id = action.tool_call_id.clone();
                    e.arguments = Some(serde_json::json!({ "command": command }));
                    pending.push_back(action.tool_call_id);
                }
            }
            "user" if m.extra.interrupt_type.is_none() => {
                origin.push(&mut events, EventKind::Message, "user").text = Some(text)
            }
            "exit" => {
                let kind = match m.extra.exit_status.as_deref() {
                    Some("Submitted") => EventKind::System,
                    _ => EventKind::Error,
                };
                origin.push(&mut events, kind, "system").text = Some(text);
            }
            _ => origin.push(&mut events, EventKind::System, "system").text = Some(text),
        }
    }
    Ok(events)
}
