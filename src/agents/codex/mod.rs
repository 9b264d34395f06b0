//! Codex CLI (`@openai/codex`): its rollout transcripts and its `Stop` hook.
//!
//! A rollout is JSONL under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`,
//! each line `{"timestamp", "type", "payload"}`. The conversation is in the
//! `response_item` lines: `message` (roles `developer`, `user`,
//! `assistant`), `function_call` / `function_call_output` (the shell tools),
//! `custom_tool_call` / `custom_tool_call_output` (`apply_patch`) and
//! `reasoning`. A command's exit code is only in its output's text (`Process
//! exited with code N`; `Exit code: N` for a patch). The user messages Codex
//! writes itself (`<environment_context>`, a stop hook's `<hook_prompt>`) are
//! system events. A reply that ended the agent's turn is a finish.

pub(super) mod hook;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::lenient::OptStr;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Codex rollout transcripts.
pub(super) static FORMAT: Format = Format {
    name: "codex",
    about: "Codex CLI rollout ($CODEX_HOME/sessions/**/rollout-*.jsonl)",
    sniff,
    read_dir: None,
    normalize,
};

/// Rollout lines are `{"type": <record type>, "payload": {...}}`.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        kind: Option<Value>,
        payload: Option<Value>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.payload.as_ref().is_some_and(Value::is_object)
            && p.kind.as_ref().and_then(Value::as_str).is_some_and(|k| {
                matches!(
                    k,
                    "session_meta" | "response_item" | "event_msg" | "turn_context"
                )
            })
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    #[serde(rename = "type")]
    kind: OptStr,
    timestamp: OptStr,
    payload: Payload,
}

/// The fields of a payload the normalized form uses.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload {
    #[serde(rename = "type")]
    kind: OptStr,
    role: OptStr,
    content: Option<Vec<Value>>,
    name: OptStr,
    call_id: OptStr,
    /// A function call's arguments: a JSON object, encoded as a string.
    arguments: OptStr,
    /// A custom tool call's input (an `apply_patch` patch).
    input: OptStr,
    /// A tool call's output: text, or (older Codex) JSON with `output` and
    /// `metadata.exit_code`.
    output: Option<Value>,
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let mut events = Vec::new();
    let mut tools: HashMap<String, String> = HashMap::new();
    for parsed in super::records::parsed(path, records) {
        let (record, line) = parsed?;
        let index = events.len();
        let line: Line = match line {
            Ok(line) => line,
            Err(e) => {
                let (line, column) = record.place_of(&e);
                tracing::warn!(
                    line,
                    column,
                    "not a Codex rollout line ({}); kept as `other`",
                    crate::sys::json_error::describe(&e)
                );
                events.push(record.event(index, EventKind::Other));
                continue;
            }
        };
        let class = line.kind.0.unwrap_or_default();
        let p = line.payload;
        let item = p.kind.0.clone().unwrap_or_default();
        let mut e = record.event(index, EventKind::Other);
        e.timestamp = line.timestamp.0;
        e.original_kind = Some(match item.is_empty() {
            true => class.clone(),
            false => format!("{class}/{item}"),
        });
        match (class.as_str(), item.as_str()) {
            ("response_item", "message") => {
                let text = message_text(p.content.as_deref().unwrap_or_default());
                let (kind, source) = match p.role.0.as_deref() {
                    Some("assistant") => (EventKind::Message, "agent"),
                    Some("user") if !written_by_codex(&text) => (EventKind::Message, "user"),
                    _ => (EventKind::System, "system"),
                };
                e.kind = kind;
                e.source = Some(source.into());
                e.text = Some(text);
            }
            ("response_item", "function_call" | "custom_tool_call") => {
                e.kind = EventKind::Action;
                e.source = Some("agent".into());
                let name = p.name.0.unwrap_or_default();
                if let Some(id) = &p.call_id.0 {
                    tools.insert(id.clone(), name.clone());
                }
                e.arguments = Some(match (p.arguments.0, p.input.0) {
                    (Some(args), _) => arguments(&args),
                    (None, Some(input)) => serde_json::json!({ "input": input }),
                    (None, None) => Value::Null,
                });
                e.tool = Some(name);
                e.call_id = p.call_id.0;
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                e.kind = EventKind::Observation;
                e.source = Some("environment".into());
                let (output, code) = output(p.output);
                e.exit_code = code;
                e.output = Some(output);
                e.tool = p.call_id.0.as_ref().and_then(|id| tools.get(id).cloned());
                e.call_id = p.call_id.0;
            }
            ("session_meta" | "turn_context", _) => {
                e.kind = EventKind::System;
                e.source = Some("system".into());
            }
            _ => {}
        }
        events.push(e);
    }
    super::record_to_events::mark_turn_ends(&mut events);
    Ok(events)
}

/// A message's text parts, joined.
fn message_text(content: &[Value]) -> String {
    content
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The user-role messages Codex writes itself: its environment context, a
/// stop hook's prompt, instructions files.
fn written_by_codex(text: &str) -> bool {
    let text = text.trim_start();
    [
        "<environment_context>",
        "<hook_prompt",
        "<user_instructions>",
        "# AGENTS.md",
    ]
    .iter()
    .any(|tag| text.starts_with(tag))
}

/// A function call's arguments: the JSON object its string encodes. A shell
/// call's `command` given as an argument vector (`["bash", "-lc", "pytest"]`)
/// becomes the command line it runs, so every agent's commands read alike.
fn arguments(text: &str) -> Value {
    let mut args: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => return Value::String(text.to_string()),
    };
    if let Some(argv) = args.get("command").and_then(Value::as_array) {
        let words: Option<Vec<&str>> = argv.iter().map(Value::as_str).collect();
        if let Some(words) = words {
            let line = match words.as_slice() {
                [shell, flag, script]
                    if is_shell(shell) && flag.starts_with('-') && flag.contains('c') =>
                {
                    script.to_string()
                }
                _ => shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" ")),
            };
            args["command"] = Value::String(line);
        }
    }
    args
}

fn is_shell(program: &str) -> bool {
    matches!(
        program.rsplit('/').next(),
        Some("bash" | "sh" | "zsh" | "dash")
    )
}

/// A tool output's text and exit code. Codex writes `Process exited with
/// code N` (commands) or `Exit code: N` (patches) among the lines before
/// the output; older versions wrote JSON with `metadata.exit_code`.
fn output(output: Option<Value>) -> (String, Option<i64>) {
    let text = match output {
        Some(Value::String(s)) => s,
        Some(Value::Object(o)) => o
            .get("content")
            .or_else(|| o.get("output"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text) {
        let code = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        if let (Some(code), Some(out)) = (code, o.get("output").and_then(Value::as_str)) {
            return (out.to_string(), Some(code));
        }
    }
    let code = text.lines().take(8).find_map(|line| {
        line.strip_prefix("Process exited with code ")
            .or_else(|| line.strip_prefix("Exit code: "))
            .and_then(|n| n.trim().parse().ok())
    });
    (text, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_from_the_output_text() {
        let out = |s: &str| output(Some(Value::String(s.into())));
        assert_eq!(
            out("Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nno\n").1,
            Some(2)
        );
        assert_eq!(
            out("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n").1,
            Some(0)
        );
        assert_eq!(out("Process running with session ID 3\n").1, None);
        assert_eq!(
            out(r#"{"output":"ok\n","metadata":{"exit_code":1,"duration_seconds":0.1}}"#),
            ("ok\n".to_string(), Some(1))
        );
    }

    #[test]
    fn argument_vectors_become_command_lines() {
        assert_eq!(
            arguments(r#"{"command":["bash","-lc","pytest -q"],"workdir":"/w"}"#)["command"],
            "pytest -q"
        );
        assert_eq!(
            arguments(r#"{"command":["python3","-m","pytest","a b"]}"#)["command"],
            "python3 -m pytest 'a b'"
        );
        assert_eq!(arguments(r#"{"cmd":"ls"}"#)["cmd"], "ls");
        assert_eq!(arguments("not json"), Value::String("not json".into()));
    }
}
