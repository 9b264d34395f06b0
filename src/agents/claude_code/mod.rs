//! Claude Code (`@anthropic-ai/claude-code`): its session transcripts and its
//! `Stop` hook.
//!
//! A transcript is JSONL under `~/.claude/projects/<cwd slug>/<session>.jsonl`.
//! Each `user` or `assistant` line carries one API message whose content is
//! a string or a list of blocks (`text`, `tool_use`, `tool_result`,
//! `thinking`); an assistant turn is often split over several lines, one per
//! block. Lines of subagents (`isSidechain`) are left out. A tool result has
//! no exit code field: a failed `Bash` call is an error result whose text
//! starts `Exit code N`. A reply that ended the model's turn is a finish
//! (see [`super::record_to_events::mark_turn_ends`]). Lines Claude Code writes itself
//! (`isMeta`, such as a stop hook's feedback) are system events, not the
//! user's.

pub(super) mod hook;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::lenient::{Object, OptStr, Text};
use super::records::{Record, Records};
use critic_sdk::{Event, EventKind};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most content blocks one message may hold (real ones hold a few).
const MAX_BLOCKS: usize = 10_000;

/// Claude Code session transcripts.
pub(super) static FORMAT: Format = Format {
    name: "claude-code",
    about: "Claude Code session transcript (~/.claude/projects/*/<session>.jsonl)",
    sniff,
    read_dir: None,
    normalize,
};

/// Every line of a transcript has a string `type`; the lines that open one
/// carry a `sessionId` (messages), a `leafUuid` (summaries) or a `snapshot`
/// (file history).
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        kind: Option<Value>,
        #[serde(rename = "sessionId")]
        session_id: Option<de::IgnoredAny>,
        #[serde(rename = "leafUuid")]
        leaf_uuid: Option<de::IgnoredAny>,
        snapshot: Option<de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.kind.as_ref().is_some_and(Value::is_string)
            && (p.session_id.is_some() || p.leaf_uuid.is_some() || p.snapshot.is_some())
    })
}

/// The fields of a transcript line the normalized form uses.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    #[serde(rename = "type")]
    kind: OptStr,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<Value>,
    #[serde(rename = "isMeta")]
    is_meta: Option<Value>,
    timestamp: OptStr,
    message: Option<Message>,
    /// A `system` line's text.
    content: Text,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    content: Content,
}

/// A message's content: a string, or a list of blocks.
#[derive(Default)]
enum Content {
    #[default]
    None,
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Block {
    #[serde(rename = "type")]
    kind: OptStr,
    text: OptStr,
    /// `tool_use`: the call's id, tool and arguments.
    id: OptStr,
    name: OptStr,
    input: Option<Value>,
    /// `tool_result`: the call it answers, its output, whether it failed.
    tool_use_id: OptStr,
    content: Text,
    is_error: Option<Value>,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_string()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content::Text(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::new();
                // A block of an unexpected shape is skipped, not fatal.
                while let Some(block) = seq.next_element::<Object<Block>>()? {
                    // Each may become an event: a line of millions of tiny
                    // blocks must not become millions of events.
                    if blocks.len() == MAX_BLOCKS {
                        return Err(de::Error::custom(format!(
                            "more than {MAX_BLOCKS} content blocks in one message"
                        )));
                    }
                    blocks.extend(block.0);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::None)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Content::None)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Content, E> {
                Ok(Content::None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Content, E> {
                Ok(Content::None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Content, E> {
                Ok(Content::None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Content, E> {
                Ok(Content::None)
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// Normalize a transcript. Lines convert to events independently of each
/// other, in parallel; then, in order, each event gets its index and a tool
/// result learns its tool's name from the call before it.
fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    // Lines convert a chunk ahead on every core: the count is shared so that
    // the stream stops at the limit, not a chunk later.
    let made = AtomicUsize::new(0);
    let lines = super::records::convert_each(records, |record| {
        let line = record.parse(path)?;
        let events = line_events(&record, line);
        if made.fetch_add(events.len(), Ordering::Relaxed) + events.len()
            > super::events_error::MAX_EVENTS
        {
            return Err(super::events_error::too_many(path, record.line, "events"));
        }
        Ok(events)
    });
    let mut events = Vec::new();
    let mut tools: HashMap<String, String> = HashMap::new();
    for line in lines {
        for mut e in line? {
            e.index = events.len();
            match e.kind {
                EventKind::Action => {
                    if let (Some(id), Some(name)) = (&e.call_id, &e.tool) {
                        tools.insert(id.clone(), name.clone());
                    }
                }
                EventKind::Observation => {
                    e.tool = e.call_id.as_ref().and_then(|id| tools.get(id).cloned());
                    if e.tool.as_deref() != Some("Bash") {
                        e.exit_code = None;
                    }
                }
                _ => {}
            }
            events.push(e);
        }
    }
    super::record_to_events::mark_turn_ends(&mut events);
    Ok(events)
}

/// The events of one transcript line, indexed from 0. A tool result's tool
/// is left for [`normalize`] to find, and its exit code is read as `Bash`'s.
fn line_events(record: &Record, line: Result<Line, serde_json::Error>) -> Vec<Event> {
    let line = match line {
        Ok(line) => line,
        Err(e) => {
            let (line, column) = record.place_of(&e);
            tracing::warn!(
                line,
                column,
                "not a Claude Code transcript line ({}); kept as `other`",
                crate::sys::json_error::describe(&e)
            );
            return vec![record.event(0, EventKind::Other)];
        }
    };
    let mut events = Vec::new();
    if line.is_sidechain == Some(Value::Bool(true)) {
        return events;
    }
    let mut info = record.origin(line.kind.0.unwrap_or_default(), line.timestamp.0);
    let meta = line.is_meta == Some(Value::Bool(true));
    let (kind, source) = message_kind(&info.class, meta);
    match (info.class.as_str(), line.message.map(|m| m.content)) {
        ("user" | "assistant", Some(Content::Text(text))) => {
            info.push(&mut events, kind, source).text = Some(text);
        }
        ("user" | "assistant", Some(Content::Blocks(blocks))) => {
            // Consecutive text blocks make one message, in its place among
            // the calls.
            let mut text: Vec<String> = Vec::new();
            for block in blocks {
                let block_kind = block.kind.0.as_deref();
                if block_kind == Some("text") {
                    text.extend(block.text.0);
                    continue;
                }
                if !matches!(block_kind, Some("tool_use" | "tool_result")) {
                    continue;
                }
                if !text.is_empty() {
                    info.push(&mut events, kind, source).text = Some(text.join("\n"));
                    text.clear();
                }
                if block_kind == Some("tool_use") {
                    let e = info.push(&mut events, EventKind::Action, "agent");
                    e.tool = Some(block.name.0.unwrap_or_default());
                    e.call_id = block.id.0;
                    e.arguments = block.input;
                } else {
                    let failed = block.is_error == Some(Value::Bool(true));
                    let output = block.content.0.unwrap_or_default();
                    let e = info.push(&mut events, EventKind::Observation, "environment");
                    e.exit_code = Some(bash_exit_code(failed, &output));
                    e.call_id = block.tool_use_id.0;
                    e.output = Some(output);
                }
            }
            if !text.is_empty() {
                info.push(&mut events, kind, source).text = Some(text.join("\n"));
            }
        }
        ("system", _) => info.push(&mut events, EventKind::System, "system").text = line.content.0,
        _ => {
            info.push(&mut events, EventKind::Other, "system");
        }
    }
    events
}

/// A user line's text is the user's, unless Claude Code wrote it (`isMeta`).
fn message_kind(class: &str, meta: bool) -> (EventKind, &'static str) {
    match (class, meta) {
        ("assistant", _) => (EventKind::Message, "agent"),
        (_, true) => (EventKind::System, "system"),
        _ => (EventKind::Message, "user"),
    }
}

/// A `Bash` result's exit code: 0 unless it is an error, whose text then
/// starts `Exit code N` (an error without one, a timeout or an interrupt,
/// counts as 1).
fn bash_exit_code(failed: bool, output: &str) -> i64 {
    if !failed {
        return 0;
    }
    output
        .strip_prefix("Exit code ")
        .and_then(|rest| {
            let digits = rest
                .split(|c: char| !c.is_ascii_digit() && c != '-')
                .next()?;
            digits.parse().ok()
        })
        .unwrap_or(1)
}
