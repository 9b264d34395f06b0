//! One model call as the proxy saw it, and `model.jsonl`, the run's file of
//! them: the request and the answer (a streamed answer both raw, as the
//! chunks came, and assembled into the message they make), status, usage
//! and timings, with every key and the run's token blanked out.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;

/// What stands where a secret was.
pub const REDACTED: &str = "[redacted]";

/// Headers whose values are credentials, never recorded.
const SECRET_HEADERS: [&str; 5] = [
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
];

/// One exchange, a line of `model.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Exchange {
    /// Its number in the run, from 1, in the order the calls came.
    pub call: u32,
    /// The round of the run it belongs to (the finishes judged before it, plus 1).
    pub round: u32,
    /// When it came, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// `POST`, ...
    pub method: String,
    /// The path and query, as the agent asked for it.
    pub path: String,
    /// The request's headers, credentials blanked.
    pub request_headers: Map<String, Value>,
    /// The request's body: JSON where it is JSON, else its text.
    pub request: Value,
    /// SHA-256 of the request as replay compares it (see [`super::replay`]).
    pub digest: String,
    /// The answer's status; `None`: no answer came (see `error`).
    pub status: Option<u16>,
    /// The answer's `content-type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The answer's body: JSON where it is JSON (a stream assembled into
    /// the message its events make), else its text.
    pub response: Value,
    /// A streamed answer's bytes as they came, events and all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Whether the answer was streamed (server-sent events).
    #[serde(default)]
    pub stream: bool,
    /// The usage the answer reports.
    pub usage: Tokens,
    /// Milliseconds from the request to the answer's first byte and to its end.
    pub first_byte_ms: f64,
    /// See `first_byte_ms`.
    pub total_ms: f64,
    /// Why the proxy answered itself instead of the model (a budget spent,
    /// a wrong token, a replay that diverged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Why the model could not be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `live` or `replayed`.
    pub source: String,
}

/// Tokens an answer reports it used.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tokens {
    /// Input tokens, cache reads and writes included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Of the input, read from the provider's cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Of the input, written to the provider's cache.
    #[serde(default)]
    pub cache_write: u64,
}

impl Tokens {
    /// Input and output.
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    /// The sum of two.
    pub fn add(&mut self, other: Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
    }
}

fn number(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The tokens of a `usage` object, in Anthropic's shape (`input_tokens`
/// without the cache, which has fields of its own) or OpenAI's
/// (`prompt_tokens`/`input_tokens` with the cache, its reads in `*_details`).
pub fn tokens_of(usage: &Value) -> Tokens {
    if !usage.is_object() {
        return Tokens::default();
    }
    let cache_write = number(usage, "cache_creation_input_tokens");
    let anthropic_reads = number(usage, "cache_read_input_tokens");
    let openai_reads = ["prompt_tokens_details", "input_tokens_details"]
        .iter()
        .map(|d| number(&usage[*d], "cached_tokens"))
        .max()
        .unwrap_or(0);
    let (input, cache_read) = if usage.get("prompt_tokens").is_some() {
        (number(usage, "prompt_tokens"), openai_reads)
    } else if anthropic_reads > 0
        || cache_write > 0
        || usage.get("cache_read_input_tokens").is_some()
    {
        let fresh = number(usage, "input_tokens");
        (
            fresh
                .saturating_add(anthropic_reads)
                .saturating_add(cache_write),
            anthropic_reads,
        )
    } else {
        (number(usage, "input_tokens"), openai_reads)
    };
    let output = ["completion_tokens", "output_tokens"]
        .iter()
        .map(|k| number(usage, k))
        .max()
        .unwrap_or(0);
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// The usage an answer body reports: its own `usage` (chat completions,
/// messages) or its `response.usage` (a Responses API event).
pub fn usage_of(response: &Value) -> Tokens {
    [&response["usage"], &response["response"]["usage"]]
        .into_iter()
        .find(|u| u.is_object())
        .map(tokens_of)
        .unwrap_or_default()
}

/// The events of a server-sent-events body: each event's `data`, parsed
/// as JSON where it is.
fn events(raw: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut data = String::new();
    for line in raw.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(serde_json::from_str(&data).unwrap_or(Value::String(data.clone())));
                data.clear();
            }
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    out
}

/// Append `delta` to the string at `target[key]`.
fn append(target: &mut Value, key: &str, delta: &Value) {
    if let Some(d) = delta.as_str() {
        let s = target[key].as_str().unwrap_or("").to_string() + d;
        target[key] = Value::String(s);
    }
}

/// An Anthropic messages stream as the message it builds.
fn assemble_messages(events: &[Value]) -> Option<Value> {
    let mut message = events
        .iter()
        .find(|e| e["type"] == "message_start")?
        .get("message")?
        .clone();
    let mut blocks: Vec<Value> = Vec::new();
    for e in events {
        match e["type"].as_str() {
            Some("content_block_start") => {
                let i = e["index"].as_u64().unwrap_or(blocks.len() as u64) as usize;
                if i >= blocks.len() {
                    blocks.resize(i + 1, Value::Null);
                }
                blocks[i] = e["content_block"].clone();
            }
            Some("content_block_delta") => {
                let i = e["index"].as_u64().unwrap_or(0) as usize;
                let Some(block) = blocks.get_mut(i) else {
                    continue;
                };
                let d = &e["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => append(block, "text", &d["text"]),
                    Some("thinking_delta") => append(block, "thinking", &d["thinking"]),
                    Some("signature_delta") => append(block, "signature", &d["signature"]),
                    Some("input_json_delta") => append(block, "partial_json", &d["partial_json"]),
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(delta) = e["delta"].as_object() {
                    for (k, v) in delta {
                        message[k] = v.clone();
                    }
                }
                if let Some(usage) = e["usage"].as_object() {
                    for (k, v) in usage {
                        message["usage"][k] = v.clone();
                    }
                }
            }
            _ => {}
        }
    }
    for block in &mut blocks {
        if let Some(json) = block.get("partial_json").and_then(Value::as_str) {
            let input = serde_json::from_str(json).unwrap_or(Value::String(json.into()));
            block["input"] = input;
            block.as_object_mut().map(|b| b.remove("partial_json"));
        }
    }
    message["content"] = Value::Array(blocks);
    Some(message)
}

/// An OpenAI chat completions stream as the completion it builds.
fn assemble_chat(events: &[Value]) -> Option<Value> {
    let first = events
        .iter()
        .find(|e| e["object"] == "chat.completion.chunk")?;
    let mut content = String::new();
    let mut tool_calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    for e in events {
        if e["usage"].is_object() {
            usage = e["usage"].clone();
        }
        let choice = &e["choices"][0];
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            content.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().unwrap_or(0) as usize;
            if i >= tool_calls.len() {
                tool_calls.resize(i + 1, serde_json::json!({"function": {"arguments": ""}}));
            }
            let slot = &mut tool_calls[i];
            for key in ["id", "type"] {
                if call[key].is_string() {
                    slot[key] = call[key].clone();
                }
            }
            if call["function"]["name"].is_string() {
                slot["function"]["name"] = call["function"]["name"].clone();
            }
            append(
                &mut slot["function"],
                "arguments",
                &call["function"]["arguments"],
            );
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    let mut message = serde_json::json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    Some(serde_json::json!({
        "id": first["id"],
        "object": "chat.completion",
        "model": first["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }))
}

/// A Responses API stream as the response its last event carries.
fn assemble_responses(events: &[Value]) -> Option<Value> {
    events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e["type"].as_str(),
                Some("response.completed" | "response.incomplete" | "response.failed")
            )
        })
        .map(|e| e["response"].clone())
}

/// A streamed body as the message it makes (Anthropic messages, OpenAI
/// chat completions or responses), else the list of its events.
pub fn assemble(raw: &str) -> Value {
    let events = events(raw);
    assemble_messages(&events)
        .or_else(|| assemble_responses(&events))
        .or_else(|| assemble_chat(&events))
        .unwrap_or(Value::Array(events))
}

/// `body` as JSON where it is, else as text.
pub fn body_value(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// `headers` as a JSON object, credentials blanked.
pub fn headers_value<'a>(headers: impl Iterator<Item = (&'a str, &'a [u8])>) -> Map<String, Value> {
    headers
        .map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            let value = if SECRET_HEADERS.contains(&name.as_str()) {
                REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value).into_owned()
            };
            (name, Value::String(value))
        })
        .collect()
}

/// `value` with every occurrence of each of `secrets` in its strings blanked.
pub fn redact(value: &mut Value, secrets: &[&str]) {
    match value {
        Value::String(s) => {
            for secret in secrets.iter().filter(|s| !s.is_empty()) {
                if s.contains(secret) {
                    *s = s.replace(secret, REDACTED);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| redact(v, secrets)),
        _ => {}
    }
}

/// Append `exchange` to the run's `model.jsonl` (created by the runner,
/// in a directory the agent cannot reach).
pub fn append_to(file: &Path, exchange: &Exchange) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(exchange).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    f.write_all(&line)
}

/// The exchanges of a `model.jsonl`, in order; the error names the file and
/// the line.
pub fn read_all(file: &Path) -> Result<Vec<Exchange>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                format!(
                    "{}:{}: not an exchange the proxy recorded: {}",
                    file.display(),
                    i + 1,
                    crate::sys::json_error::describe(&e)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_is_read_in_either_providers_shape() {
        let anthropic = json!({"input_tokens": 10, "output_tokens": 5,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20});
        assert_eq!(
            tokens_of(&anthropic),
            Tokens {
                input: 130,
                output: 5,
                cache_read: 100,
                cache_write: 20
            }
        );
        let chat = json!({"prompt_tokens": 50, "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 30}});
        assert_eq!(
            tokens_of(&chat),
            Tokens {
                input: 50,
                output: 7,
                cache_read: 30,
                cache_write: 0
            }
        );
        let responses = json!({"response": {"usage": {"input_tokens": 40, "output_tokens": 2,
            "input_tokens_details": {"cached_tokens": 8}}}});
        assert_eq!(
            usage_of(&responses),
            Tokens {
                input: 40,
                output: 2,
                cache_read: 8,
                cache_write: 0
            }
        );
        assert_eq!(usage_of(&json!({"usage": "lots"})), Tokens::default());
    }

    #[test]
    fn an_anthropic_stream_is_assembled_into_its_message() {
        let raw = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \"}}\n\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"ls\\\"}\"}}\n\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n\
data: {\"type\":\"message_stop\"}\n\n";
        let m = assemble(raw);
        assert_eq!(m["content"][0]["text"], "Hello");
        assert_eq!(m["content"][1]["input"], json!({"command": "ls"}));
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            usage_of(&m),
            Tokens {
                input: 12,
                output: 9,
                ..Tokens::default()
            }
        );
    }

    #[test]
    fn openai_streams_are_assembled() {
        let chat = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n\
data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n\
data: [DONE]\n\n";
        let c = assemble(chat);
        assert_eq!(c["choices"][0]["message"]["content"], "Hi");
        assert_eq!(
            c["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(usage_of(&c).total(), 7);
        let responses = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}}\n\n";
        assert_eq!(usage_of(&assemble(responses)).total(), 11);
        assert_eq!(assemble("data: x\n\n"), json!(["x"]));
    }

    #[test]
    fn credentials_are_blanked_in_headers_and_bodies() {
        let h = headers_value(
            [
                ("Authorization", &b"Bearer tok"[..]),
                ("content-type", b"application/json"),
            ]
            .into_iter(),
        );
        assert_eq!(h["authorization"], REDACTED);
        assert_eq!(h["content-type"], "application/json");
        let mut body = json!({"a": ["the key sk-123 leaked", {"b": "sk-123"}], "n": 1});
        redact(&mut body, &["sk-123", ""]);
        assert_eq!(
            body,
            json!({"a": ["the key [redacted] leaked", {"b": "[redacted]"}], "n": 1})
        );
    }
}
