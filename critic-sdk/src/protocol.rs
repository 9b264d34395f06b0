//! The typed form of every payload that crosses the host/detector boundary.
//!
//! The host serializes these structs to JSON and the detector deserializes them
//! (and the reverse for [`DetectorOutput`]), so host and guest share one
//! definition. Each event's original JSON stays a [`RawValue`]: the guest only
//! pays for parsing it when it asks for it, which keeps large event streams cheap.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The WIT package version this SDK speaks (`critic:detector@API_VERSION`).
pub const API_VERSION: &str = "0.1.0";

/// Everything a detector sees on one finish call.
///
/// The event stream is not part of the JSON the host passes to a WebAssembly
/// detector: [`DetectorInput::events`] fetches it from the host on first use
/// (without each event's original JSON, which [`Event::raw_value`] fetches per
/// event). A detector that never looks at the events never pays for them, which
/// matters for multi-megabyte trajectories. Native detectors and tests get the
/// events inline under `events`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DetectorInput {
    /// The WIT package version the host speaks.
    pub api_version: String,
    /// The skill this signal belongs to.
    pub skill: SkillInfo,
    /// The signal's name in `critic.yaml`.
    pub signal: String,
    /// The signal's `config` from `critic.yaml` (`null` when absent).
    #[serde(default)]
    pub config: Value,
    /// The state this detector returned on its previous call in this session,
    /// `null` on the first call.
    #[serde(default)]
    pub state: Value,
    /// 1-based number of this finish call within the session.
    pub iteration: u32,
    /// The session id the host was given (or derived).
    pub session: String,
    /// The working-tree diff at finish time, computed once by the host.
    pub patch: Patch,
    /// Events passed inline (native detectors, tests); read them through
    /// [`DetectorInput::events`].
    #[serde(default, rename = "events", skip_serializing_if = "Option::is_none")]
    pub(crate) inline_events: Option<Vec<Event>>,
    #[serde(skip)]
    pub(crate) fetched_events: std::sync::OnceLock<Result<Vec<Event>, String>>,
}

/// Name and version of the running skill.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkillInfo {
    /// `name` from `critic.yaml`.
    pub name: String,
    /// `version` from `critic.yaml`.
    pub version: String,
}

/// What a detector decides.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DetectorOutput {
    /// Whether the signal fires (a hard gate rejects; a soft signal costs its weight).
    pub triggered: bool,
    /// Free-form evidence, copied into the verdict. A string under `summary`
    /// is also printed in the text verdict, fired or not.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// Text for the agent's next turn when this signal fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followup_text: Option<String>,
    /// State to persist for the next call; `None` keeps the previous state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// Files for the agent to read (per-mutant diffs, long reports). The host
    /// writes them under `.critic/feedback/<skill>/` in the workspace, a path
    /// it keeps out of the patch; the follow-up text can point there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

/// A file a detector hands the host to write for the agent.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Relative path under the skill's feedback directory (no `..`).
    pub path: String,
    /// The file's text.
    pub content: String,
}

/// The kind of a normalized event.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A chat message from the user, the agent or the system.
    Message,
    /// A tool call the agent made.
    Action,
    /// The result of a tool call.
    Observation,
    /// The agent declared it is done.
    Finish,
    /// An error the agent or its runtime reported.
    Error,
    /// System prompt, configuration, state changes.
    System,
    /// An event kind the adapter does not know; kept, never dropped.
    Other,
}

/// One event of an agent's trajectory, normalized across agent formats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// Position in the stream, 0-based.
    pub index: usize,
    /// Normalized kind.
    pub kind: EventKind,
    /// The event's type name in its source format (e.g. `ActionEvent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_kind: Option<String>,
    /// Who produced it: `agent`, `user`, `environment`, `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Tool name for actions and observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Links an action to its observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Tool arguments for actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Message text, thought, or finish message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool output for observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Exit code for command observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Timestamp as the source wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The original JSON of the event. A WebAssembly detector gets `None`
    /// here and [`Event::raw_value`] fetches it. For events read from a
    /// transcript file the host keeps only [`Event::raw_span`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Box<RawValue>>,
    /// Where in its transcript file the host reads the original JSON when it
    /// did not keep it in `raw`; never sent to detectors.
    #[serde(skip)]
    pub raw_span: Option<RawSpan>,
}

/// A record's place in its transcript file: `len` bytes from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSpan {
    /// Byte offset of the record in the file.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u32,
}

impl Event {
    /// An event of `kind` at `index`, every other field empty; readers of
    /// agents' formats and tests fill in what they know.
    pub fn new(index: usize, kind: EventKind) -> Event {
        Event {
            index,
            kind,
            original_kind: None,
            source: None,
            tool: None,
            call_id: None,
            arguments: None,
            text: None,
            output: None,
            exit_code: None,
            timestamp: None,
            raw: None,
            raw_span: None,
        }
    }

    /// The event as detectors receive it from the host: every field but `raw`,
    /// serialized without copying the event.
    pub fn lean(&self) -> LeanEvent<'_> {
        LeanEvent {
            index: self.index,
            kind: self.kind,
            original_kind: &self.original_kind,
            source: &self.source,
            tool: &self.tool,
            call_id: &self.call_id,
            arguments: &self.arguments,
            text: &self.text,
            output: &self.output,
            exit_code: self.exit_code,
            timestamp: &self.timestamp,
        }
    }

    /// The shell command of a terminal/bash action, if this is one.
    pub fn command(&self) -> Option<&str> {
        if self.kind != EventKind::Action {
            return None;
        }
        let args = self.arguments.as_ref()?;
        args.get("command")
            .or_else(|| args.get("cmd"))
            .and_then(Value::as_str)
    }
}

/// An [`Event`] without its original JSON, borrowed for serialization (see
/// [`Event::lean`]). Serializes exactly like the event with `raw: None`.
#[derive(Debug, Serialize)]
pub struct LeanEvent<'a> {
    index: usize,
    kind: EventKind,
    #[serde(skip_serializing_if = "absent")]
    original_kind: &'a Option<String>,
    #[serde(skip_serializing_if = "absent")]
    source: &'a Option<String>,
    #[serde(skip_serializing_if = "absent")]
    tool: &'a Option<String>,
    #[serde(skip_serializing_if = "absent")]
    call_id: &'a Option<String>,
    #[serde(skip_serializing_if = "absent")]
    arguments: &'a Option<Value>,
    #[serde(skip_serializing_if = "absent")]
    text: &'a Option<String>,
    #[serde(skip_serializing_if = "absent")]
    output: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i64>,
    #[serde(skip_serializing_if = "absent")]
    timestamp: &'a Option<String>,
}

fn absent<T>(v: &&Option<T>) -> bool {
    v.is_none()
}

/// The working-tree diff at finish time.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Patch {
    /// The commit the diff is taken against.
    pub base: String,
    /// Whether the workspace holds the patched or the base files.
    #[serde(default)]
    pub origin: PatchOrigin,
    /// The unified diff as `git diff --binary` prints it.
    pub raw: String,
    /// The diff parsed per file.
    pub files: Vec<FileChange>,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// New file.
    Added,
    /// Content or mode changed.
    Modified,
    /// File removed.
    Deleted,
    /// Moved, possibly with changes.
    Renamed,
    /// Copied from another file.
    Copied,
}

/// One file of the patch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileChange {
    /// Path after the change (before it, for deletions), workspace-relative.
    pub path: String,
    /// Path before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// Kind of change.
    pub status: FileStatus,
    /// Whether git treats the file as binary.
    pub binary: bool,
    /// Whether the path matches the skill's test-file patterns.
    pub is_test: bool,
    /// Number of added lines.
    pub added: usize,
    /// Number of removed lines.
    pub removed: usize,
    /// Hunks in order.
    pub hunks: Vec<Hunk>,
}

/// One hunk of a file's diff.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hunk {
    /// First line in the old file (1-based; 0 for an empty range).
    pub old_start: u32,
    /// Line count in the old file.
    pub old_lines: u32,
    /// First line in the new file.
    pub new_start: u32,
    /// Line count in the new file.
    pub new_lines: u32,
    /// Text after the second `@@`, usually the enclosing function.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub section: String,
    /// The hunk's lines.
    pub lines: Vec<Line>,
}

/// Whether a diff line was added, removed or kept.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Present only in the new file.
    Added,
    /// Present only in the old file.
    Removed,
    /// Unchanged context.
    Context,
}

/// One line of a hunk.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Line {
    /// Added, removed or context.
    pub kind: LineKind,
    /// The line without its `+`/`-`/` ` prefix and newline.
    pub text: String,
    /// Line number in the old file, for removed and context lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_line: Option<u32>,
    /// Line number in the new file, for added and context lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_line: Option<u32>,
}

/// Where the patch came from, which says what the workspace holds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PatchOrigin {
    /// Computed from the working tree: the workspace holds the patched files.
    #[default]
    Worktree,
    /// Given by the user (`--patch`): the workspace holds the base files.
    File,
}

/// A command to run in a scratch copy of the workspace at the patch's base
/// commit (capabilities `run` and `run-matrix`). The host applies `patch`,
/// then writes `files`, then runs `argv` with `cwd` as working directory. The
/// user's workspace is never touched.
///
/// `{scratch}` in `argv`, `env` values and `cwd` is replaced by the scratch
/// copy's absolute path (e.g. `PYTHONPATH={scratch}/src`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// A unified diff against the base commit, applied first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Files to write after the patch (workspace-relative path to content);
    /// `None` deletes the file.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, Option<String>>,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Extra environment variables (the host passes only a small base set).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// Working directory, relative to the scratch copy's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Kill the command's whole process group after this long (default 60 s;
    /// never past the signal's own deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Keep at most this many bytes of stdout and of stderr each (default
    /// 64 KiB): the head and the tail, with a marker between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<usize>,
}

/// What one [`RunRequest`] did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// Exit status, when the command exited on its own.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// Whether the host killed it at its timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// Captured standard output (capped).
    #[serde(default)]
    pub stdout: String,
    /// Captured standard error (capped).
    #[serde(default)]
    pub stderr: String,
    /// Wall time of the command, milliseconds (0 when it did not start).
    #[serde(default)]
    pub duration_ms: f64,
    /// Set when the command could not run: the patch did not apply, a path
    /// was refused, the program was not found. The other fields are empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunResult {
    /// Whether the command ran and exited 0.
    pub fn passed(&self) -> bool {
        self.error.is_none() && !self.timed_out && self.exit_code == Some(0)
    }
}

/// One chat completion a detector asks for (capability `llm-complete`). The
/// host adds the model, the endpoint and the key from its own configuration;
/// none of those is visible to the detector.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmRequest {
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Cap on the answer's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Which of several samples of the same prompt this is. Identical prompts
    /// with different `sample` numbers are distinct requests (and distinct
    /// entries in a record/replay cache).
    #[serde(default)]
    pub sample: u32,
}

/// A chat message.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// The answer to one [`LlmRequest`]: its text, or why there is none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LlmResult {
    /// The first choice's message text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Why the request failed (after the host's retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the answer came from the record/replay cache.
    #[serde(default)]
    pub cached: bool,
}
