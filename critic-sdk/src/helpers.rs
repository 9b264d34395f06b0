//! Questions detectors ask of a trajectory or a patch every day.

use crate::protocol::{Event, EventKind, FileChange, LineKind, Patch};

/// Tool names (across the supported agents) whose calls edit files: OpenHands
/// (`str_replace_editor`, `file_editor`, and the V0 actions `edit`, `write`),
/// Claude Code (`Edit`, `MultiEdit`, `Write`, `NotebookEdit`), Codex
/// (`apply_patch`), Gemini CLI (`write_file`, `replace`), Copilot CLI
/// (`create`, `edit`), Cursor (`edit_file`, ...).
pub const FILE_EDIT_TOOLS: &[&str] = &[
    "str_replace_editor",
    "file_editor",
    "edit_file",
    "write_file",
    "create_file",
    "apply_patch",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "edit",
    "write",
    "replace",
    "create",
    "search_replace",
];

/// Sub-commands of editor tools that only read.
const READ_ONLY_EDITOR_COMMANDS: &[&str] = &["view"];

/// A shell command the agent ran, with its result when the stream has one.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRun<'a> {
    /// Index of the action event.
    pub index: usize,
    /// The command line.
    pub command: &'a str,
    /// Exit code from the matching observation, if any.
    pub exit_code: Option<i64>,
    /// Output from the matching observation, if any.
    pub output: Option<&'a str>,
}

/// The text of the last finish event, if the agent finished.
pub fn last_finish_message(events: &[Event]) -> Option<&str> {
    events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Finish)
        .map(|e| e.text.as_deref().unwrap_or(""))
}

/// Whether the stream's last action is a finish (the agent declared it is done).
pub fn finished(events: &[Event]) -> bool {
    events
        .iter()
        .rev()
        .find(|e| matches!(e.kind, EventKind::Action | EventKind::Finish))
        .is_some_and(|e| e.kind == EventKind::Finish)
}

/// The first message the user sent (usually the task statement).
pub fn first_user_message(events: &[Event]) -> Option<&str> {
    events
        .iter()
        .find(|e| e.kind == EventKind::Message && e.source.as_deref() == Some("user"))
        .and_then(|e| e.text.as_deref())
}

/// The text between `<issue_description>` and `</issue_description>` in a
/// task prompt (the shipped arms' templates all emit the block), trimmed;
/// `None` when the prompt has no such block.
pub fn issue_description(prompt: &str) -> Option<&str> {
    const OPEN: &str = "<issue_description>";
    let start = prompt.find(OPEN)? + OPEN.len();
    let len = prompt[start..].find("</issue_description>")?;
    Some(prompt[start..start + len].trim())
}

/// Every action that called the tool `name`.
pub fn tool_calls<'a>(events: &'a [Event], name: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    events
        .iter()
        .filter(move |e| e.kind == EventKind::Action && e.tool.as_deref() == Some(name))
}

/// Every shell command the agent ran, paired with its observation.
///
/// An observation matches its action by `call_id` when both have one, else it is
/// the next observation after the action.
pub fn commands(events: &[Event]) -> Vec<CommandRun<'_>> {
    let mut runs = Vec::new();
    for (pos, action) in events.iter().enumerate() {
        let Some(command) = action.command() else {
            continue;
        };
        let observation = events[pos + 1..].iter().find(|e| {
            e.kind == EventKind::Observation
                && match (&action.call_id, &e.call_id) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        });
        runs.push(CommandRun {
            index: action.index,
            command,
            exit_code: observation.and_then(|o| o.exit_code),
            output: observation.and_then(|o| o.output.as_deref()),
        });
    }
    runs
}

/// Whether an action edits files.
pub fn is_file_edit(event: &Event) -> bool {
    if event.kind != EventKind::Action {
        return false;
    }
    let Some(tool) = event.tool.as_deref() else {
        return false;
    };
    if !FILE_EDIT_TOOLS.contains(&tool) {
        return false;
    }
    let sub = event
        .arguments
        .as_ref()
        .and_then(|a| a.get("command"))
        .and_then(|c| c.as_str());
    !sub.is_some_and(|s| READ_ONLY_EDITOR_COMMANDS.contains(&s))
}

/// Index of the last event that edited a file.
pub fn last_file_edit(events: &[Event]) -> Option<usize> {
    events
        .iter()
        .rev()
        .find(|e| is_file_edit(e))
        .map(|e| e.index)
}

impl Patch {
    /// Whether the diff changes nothing.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Files classified as tests.
    pub fn test_files(&self) -> impl Iterator<Item = &FileChange> {
        self.files.iter().filter(|f| f.is_test)
    }

    /// Files not classified as tests.
    pub fn source_files(&self) -> impl Iterator<Item = &FileChange> {
        self.files.iter().filter(|f| !f.is_test)
    }

    /// Every added line, as `(path, new line number, text)`.
    pub fn added_lines(&self) -> impl Iterator<Item = (&str, u32, &str)> {
        self.lines_of(LineKind::Added)
    }

    /// Every removed line, as `(path, old line number, text)`.
    pub fn removed_lines(&self) -> impl Iterator<Item = (&str, u32, &str)> {
        self.lines_of(LineKind::Removed)
    }

    fn lines_of(&self, kind: LineKind) -> impl Iterator<Item = (&str, u32, &str)> {
        self.files.iter().flat_map(move |f| {
            f.hunks
                .iter()
                .flat_map(|h| h.lines.iter())
                .filter(move |l| l.kind == kind)
                .map(move |l| {
                    let n = match kind {
                        LineKind::Removed => l.old_line,
                        _ => l.new_line,
                    };
                    (f.path.as_str(), n.unwrap_or(0), l.text.as_str())
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{FileStatus, Hunk, Line};
    use serde_json::json;

    #[test]
    fn the_issue_is_the_block_of_the_task_prompt() {
        let prompt = "Repo in /w.\n<issue_description>\n  Touching intervals.\n</issue_description>\nFix it.";
        assert_eq!(issue_description(prompt), Some("Touching intervals."));
        assert_eq!(issue_description("Fix the bug."), None);
        assert_eq!(issue_description("<issue_description> never closed"), None);
    }

    fn ev(index: usize, kind: EventKind) -> Event {
        Event {
            source: Some("agent".into()),
            ..Event::new(index, kind)
        }
    }

    fn bash(index: usize, cmd: &str, id: &str) -> Event {
        let mut e = ev(index, EventKind::Action);
        e.tool = Some("terminal".into());
        e.call_id = Some(id.into());
        e.arguments = Some(json!({ "command": cmd }));
        e
    }

    fn obs(index: usize, id: &str, code: i64) -> Event {
        let mut e = ev(index, EventKind::Observation);
        e.call_id = Some(id.into());
        e.exit_code = Some(code);
        e.output = Some(format!("exit {code}"));
        e
    }

    #[test]
    fn commands_pair_actions_with_observations_by_call_id() {
        let events = vec![
            bash(0, "pytest", "a"),
            bash(1, "ls", "b"),
            obs(2, "b", 0),
            obs(3, "a", 1),
        ];
        let runs = commands(&events);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].command, "pytest");
        assert_eq!(runs[0].exit_code, Some(1));
        assert_eq!(runs[1].command, "ls");
        assert_eq!(runs[1].exit_code, Some(0));
    }

    #[test]
    fn editor_view_is_not_an_edit_but_str_replace_is() {
        let mut view = ev(0, EventKind::Action);
        view.tool = Some("file_editor".into());
        view.arguments = Some(json!({"command": "view", "path": "a.py"}));
        let mut edit = view.clone();
        edit.index = 1;
        edit.arguments = Some(json!({"command": "str_replace", "path": "a.py"}));
        assert!(!is_file_edit(&view));
        assert!(is_file_edit(&edit));
        assert_eq!(last_file_edit(&[view, edit]), Some(1));
    }

    #[test]
    fn finish_message_and_finished() {
        let mut fin = ev(1, EventKind::Finish);
        fin.text = Some("done".into());
        let events = vec![bash(0, "ls", "a"), fin];
        assert_eq!(last_finish_message(&events), Some("done"));
        assert!(finished(&events));
        assert!(!finished(&events[..1]));
    }

    #[test]
    fn patch_splits_test_and_source_and_lists_lines() {
        let file = |path: &str, is_test: bool| FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Modified,
            binary: false,
            is_test,
            added: 1,
            removed: 1,
            hunks: vec![Hunk {
                old_start: 3,
                old_lines: 1,
                new_start: 3,
                new_lines: 1,
                section: String::new(),
                lines: vec![
                    Line {
                        kind: LineKind::Removed,
                        text: "old".into(),
                        old_line: Some(3),
                        new_line: None,
                    },
                    Line {
                        kind: LineKind::Added,
                        text: "new".into(),
                        old_line: None,
                        new_line: Some(3),
                    },
                ],
            }],
        };
        let patch = Patch {
            base: "abc".into(),
            origin: Default::default(),
            raw: String::new(),
            files: vec![file("src/a.py", false), file("tests/test_a.py", true)],
        };
        assert_eq!(patch.test_files().count(), 1);
        assert_eq!(patch.source_files().next().unwrap().path, "src/a.py");
        let added: Vec<_> = patch.added_lines().collect();
        assert_eq!(added[0], ("src/a.py", 3, "new"));
        assert_eq!(patch.removed_lines().count(), 2);
    }
}
