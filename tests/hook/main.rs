//! `critic hook <agent>` as every agent calls it, fed hook inputs directly:
//! what it answers to a broken transcript, a hook input missing fields, a
//! bad command line, two sessions in one workspace; and `critic hook
//! install` / `uninstall` on configuration files holding other hooks. The
//! end-to-end runs with the real agents are in `tests/agent_*.rs`.

#[path = "../common/mod.rs"]
mod common;

mod answers;
mod install;
mod not_switched_off;
mod rejection_cap;
mod time_limit;

use common::{critic, run, skill, stderr, Repo};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const AGENTS: &[&str] = &[
    "claude-code",
    "codex",
    "copilot",
    "gemini",
    "cursor",
    "openhands",
];

/// `critic hook <agent> [args]` with `input` on stdin.
fn hook(agent: &str, args: &[&str], input: &[u8], cwd: &Path) -> Output {
    let mut child = critic()
        .args(["hook", agent])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook refused at its command line exits without reading.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// Whether `out` is the agent's "block" / "continue" answer.
fn blocks(agent: &str, out: &Output) -> bool {
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    match agent {
        "cursor" => stdout.get("followup_message").is_some(),
        "gemini" | "openhands" => stdout["decision"] == "deny",
        _ => stdout["decision"] == "block",
    }
}

/// A hook input in `agent`'s words naming `session`, `workspace` and `transcript`.
fn input(agent: &str, session: &str, workspace: &Path, transcript: &Path) -> Vec<u8> {
    let v = match agent {
        "copilot" => json!({"sessionId": session, "cwd": workspace, "transcriptPath": transcript,
                            "stopReason": "end_turn", "stop_hook_active": false}),
        "cursor" => json!({"conversation_id": session, "status": "completed", "loop_count": 0,
                           "workspace_roots": [workspace], "transcript_path": transcript}),
        "openhands" => {
            json!({"event_type": "Stop", "session_id": session, "working_dir": workspace})
        }
        _ => json!({"session_id": session, "cwd": workspace, "transcript_path": transcript,
                    "hook_event_name": "Stop", "stop_hook_active": false}),
    };
    v.to_string().into_bytes()
}

/// A state directory outside every work tree: a hook refuses state the
/// agent could reset.
fn outside_state() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A repo with an uncommitted change and a Claude Code transcript of a
/// finish that never ran the tests (so ran-tests rejects it).
fn finished_without_tests() -> (Repo, std::path::PathBuf) {
    let repo = Repo::new(&[("a.py", "x = 1\n")]);
    repo.write("a.py", "x = 2\n");
    let transcript = repo.path().join(".transcript.jsonl");
    let lines = [
        json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "change x"}}),
        json!({"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "a.py"}}]}}),
        json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        json!({"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Done."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).unwrap();
    repo.git(&["add", ".transcript.jsonl"]);
    repo.git(&["commit", "-q", "-m", "transcript"]);
    (repo, transcript)
}

/// The agents' own settings files (`tests/fixtures/agent-settings/`, whose
/// README names where each comes from): the place `critic hook install`
/// writes to, the file, and where in it the agent then finds the command.
const AGENT_SETTINGS: &[(&str, &str, &str, &str)] = &[
    // Claude Code's settings and hook examples (anthropics/claude-code).
    (
        "claude-code",
        ".claude/settings.json",
        "claude-code.settings.json",
        "/hooks/Stop/1/hooks/0/command",
    ),
    // Codex's hooks.json (developers.openai.com/codex/hooks).
    (
        "codex",
        ".codex/hooks.json",
        "codex.hooks.json",
        "/hooks/Stop/1/hooks/0/command",
    ),
    // Gemini CLI's configuration and hooks docs (google-gemini/gemini-cli).
    (
        "gemini",
        ".gemini/settings.json",
        "gemini.settings.json",
        "/hooks/AfterAgent/0/hooks/0/command",
    ),
    // Copilot CLI's hooks reference (docs.github.com).
    (
        "copilot",
        ".github/hooks/pluggable-critic.json",
        "copilot.hooks.json",
        "/hooks/agentStop/1/bash",
    ),
    // Cursor's hooks docs (cursor.com/docs/agent/hooks).
    (
        "cursor",
        ".cursor/hooks.json",
        "cursor.hooks.json",
        "/hooks/stop/1/command",
    ),
];

/// A `critic serve` on a socket in `dir`, until dropped.
struct Served(std::process::Child);

impl Served {
    fn start(socket: &Path) -> Served {
        Served::with(socket, &[], &[])
    }

    /// A server with more flags (`--check-timeout 3`) and environment.
    fn with(socket: &Path, flags: &[&str], env: &[(&str, &str)]) -> Served {
        use std::io::BufRead;
        let mut child = critic()
            .args(["serve", "--socket"])
            .arg(socket)
            .args(flags)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening"), "{line}");
        // A skill written less than 2 s ago is reloaded by every check; the
        // shipped ones are old enough.
        Served(child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
