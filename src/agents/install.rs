//! `critic hook install` and `uninstall`: the critic's entry in an agent's
//! hook configuration, added or removed so that everything else in the file
//! (other hooks, other settings, key order) stays as it was.
//!
//! The critic's entries are recognized by their command: a program named
//! `critic` whose arguments start with `hook <agent>`. An install replaces
//! such an entry rather than adding a second, so installing twice changes
//! nothing and installing another skill swaps the skill.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Where an agent keeps its hook configuration and how a hook is written
/// there.
pub struct HookConfig {
    /// The file in a project, relative to the project's root.
    pub project_file: &'static str,
    /// The user's file for every project, if the agent has one.
    pub user_file: Option<fn() -> Option<PathBuf>>,
    /// How the hook list is laid out.
    pub shape: Shape,
    /// What the user must still do for the agent to run the hook (trust).
    pub note: Option<&'static str>,
}

/// The layouts of agents' hook lists.
pub enum Shape {
    /// `{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command",
    /// "command": ..., "timeout": SECONDS}]}]}}`: groups of hooks under a
    /// matcher (Claude Code, Codex, Gemini CLI).
    Grouped {
        /// The stop event's name.
        event: &'static str,
        /// The matcher written with a new group, if the agent uses one.
        matcher: Option<&'static str>,
        /// The agent reads `timeout` in milliseconds, not seconds.
        timeout_millis: bool,
    },
    /// `{"version": 1, "hooks": {EVENT: [ENTRY, ...]}}`: a flat list, each
    /// entry naming its command under `command_key` (Copilot CLI, Cursor).
    Listed {
        /// The stop event's name.
        event: &'static str,
        /// The entry's key holding the command.
        command_key: &'static str,
        /// The entry's key holding the timeout in seconds, if it has one.
        timeout_key: Option<&'static str>,
        /// Other fields each entry carries (e.g. `"type": "command"`).
        extra: &'static [(&'static str, &'static str)],
    },
}

/// Which configuration file to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// The project's own file (`.claude/settings.json`, ...).
    #[default]
    Project,
    /// The user's file, for every project.
    User,
}

/// What an install or uninstall did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The entry was added.
    Added,
    /// An entry of the critic's with another command was replaced.
    Replaced,
    /// The file already held exactly this entry.
    Unchanged,
    /// This many entries of the critic's were removed.
    Removed(usize),
}

/// Why a configuration file could not be edited. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not the JSON the agent reads; it is left alone.
    #[error("{path}: {message}; fix or move the file, then install again (it was not changed)")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the place.
        message: String,
    },
    /// The agent has no such file.
    #[error("{0}")]
    NoFile(String),
}

impl HookConfig {
    /// The file `scope` names for a project rooted at `project`.
    pub fn file(&self, scope: Scope, project: &Path) -> Result<PathBuf, InstallError> {
        match scope {
            Scope::Project => Ok(project.join(self.project_file)),
            Scope::User => self.user_file.and_then(|f| f()).ok_or_else(|| {
                InstallError::NoFile(
                    "this agent has no user-wide hook file here (is HOME set?); install with --scope project"
                        .into(),
                )
            }),
        }
    }

    /// Add the critic's hook running `command` to the document, in place
    /// of any it had; whether it had one.
    fn add(
        &self,
        doc: &mut Map<String, Value>,
        agent: &str,
        command: &str,
        timeout: u32,
    ) -> Result<bool, String> {
        let (removed, at) = self.remove(doc, agent);
        let (event, entry) = match &self.shape {
            Shape::Grouped {
                event,
                matcher,
                timeout_millis,
            } => {
                let mut hook = Map::new();
                hook.insert("type".into(), "command".into());
                hook.insert("command".into(), command.into());
                let timeout = u64::from(timeout) * if *timeout_millis { 1000 } else { 1 };
                hook.insert("timeout".into(), timeout.into());
                let mut group = Map::new();
                if let Some(m) = matcher {
                    group.insert("matcher".into(), (*m).into());
                }
                group.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
                (event, group)
            }
            Shape::Listed {
                event,
                command_key,
                timeout_key,
                extra,
            } => {
                doc.entry("version").or_insert(1.into());
                let mut entry = Map::new();
                for (k, v) in *extra {
                    entry.insert((*k).into(), (*v).into());
                }
                entry.insert((*command_key).into(), command.into());
                if let Some(k) = timeout_key {
                    entry.insert((*k).into(), timeout.into());
                }
                (event, entry)
            }
        };
        // A replaced entry keeps its place among the others.
        let list = event_list(doc, event)?;
        let at = at.unwrap_or(list.len()).min(list.len());
        list.insert(at, Value::Object(entry));
        Ok(removed > 0)
    }

    /// Remove the critic's hooks for `agent` (with the groups and lists
    /// they leave empty); how many there were, and the place in the list
    /// where the first one was (after its group, if the group stays).
    fn remove(&self, doc: &mut Map<String, Value>, agent: &str) -> (usize, Option<usize>) {
        let (event, key) = match &self.shape {
            Shape::Grouped { event, .. } => (*event, "command"),
            Shape::Listed {
                event, command_key, ..
            } => (*event, *command_key),
        };
        let Some(Value::Object(hooks)) = doc.get_mut("hooks") else {
            return (0, None);
        };
        let Some(Value::Array(list)) = hooks.get_mut(event) else {
            return (0, None);
        };
        let ours = |entry: &Value| {
            entry
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|c| is_critic_hook(c, agent))
        };
        let mut removed = 0;
        let mut at = None;
        let mut kept: Vec<Value> = Vec::with_capacity(list.len());
        for mut entry in std::mem::take(list) {
            match &self.shape {
                Shape::Listed { .. } if ours(&entry) => {
                    removed += 1;
                    at.get_or_insert(kept.len());
                    continue;
                }
                Shape::Grouped { .. } => {
                    if let Some(Value::Array(inner)) = entry.get_mut("hooks") {
                        let before = inner.len();
                        inner.retain(|h| !ours(h));
                        if inner.len() != before {
                            removed += before - inner.len();
                            let gone = inner.is_empty();
                            at.get_or_insert(kept.len() + usize::from(!gone));
                            if gone {
                                continue;
                            }
                        }
                    }
                }
                Shape::Listed { .. } => {}
            }
            kept.push(entry);
        }
        *list = kept;
        if list.is_empty() {
            hooks.remove(event);
        }
        if hooks.is_empty() {
            doc.remove("hooks");
        }
        (removed, at)
    }
}

/// The array at `hooks.<event>`, made if missing; an error naming the
/// key if the file holds something else there.
fn event_list<'a>(
    doc: &'a mut Map<String, Value>,
    event: &str,
) -> Result<&'a mut Vec<Value>, String> {
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"hooks\" is not an object")?;
    hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| format!("\"hooks.{event}\" is not an array"))
}

/// Whether `command` is one `critic hook install` wrote: a plain command
/// (no shell operator outside quotes: `critic hook x && notify-send` is the
/// user's) running a program named `critic` (or named as this one is) with
/// `hook <agent>` and a `--skill`.
pub fn is_critic_hook(command: &str, agent: &str) -> bool {
    if has_shell_operator(command) {
        return false;
    }
    let Some(words) = shlex::split(command) else {
        return false;
    };
    let this = std::env::current_exe().ok();
    let this_name = this.as_deref().and_then(Path::file_name);
    let program = words.first().map(|p| Path::new(p).file_name());
    program.is_some_and(|name| name == Some(std::ffi::OsStr::new("critic")) || name == this_name)
        && words.get(1).is_some_and(|w| w == "hook")
        && words.get(2).is_some_and(|w| w == agent)
        && words.iter().any(|w| w == "--skill")
}

/// Whether `command` has a shell operator, redirection or substitution
/// outside quotes.
fn has_shell_operator(command: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in command.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' | '`' if !single => return true,
            ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\n' if !single && !double => return true,
            _ => {}
        }
    }
    false
}

/// The command line of a hook: `critic hook <agent>` followed by `args`,
/// quoted for a POSIX shell.
pub fn command_line(critic: &Path, agent: &str, args: &[String]) -> String {
    let mut words = vec![
        critic.to_string_lossy().into_owned(),
        "hook".into(),
        agent.into(),
    ];
    words.extend(args.iter().cloned());
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Install the critic's hook for `agent` into `file`, running `command`.
pub fn install(
    config: &HookConfig,
    file: &Path,
    agent: &str,
    command: &str,
    timeout: u32,
) -> Result<Change, InstallError> {
    edit(file, |doc| {
        let before = doc.clone();
        Ok(match config.add(doc, agent, command, timeout)? {
            false => Change::Added,
            true if *doc == before => Change::Unchanged,
            true => Change::Replaced,
        })
    })
}

/// Remove the critic's hooks for `agent` from `file`.
pub fn uninstall(config: &HookConfig, file: &Path, agent: &str) -> Result<Change, InstallError> {
    if !file.exists() {
        return Ok(Change::Removed(0));
    }
    edit(file, |doc| Ok(Change::Removed(config.remove(doc, agent).0)))
}

/// Read `file` (a JSON object; missing is empty), apply `change`, and write
/// it back if it changed: atomically, through a symbolic link to its
/// target, keeping the file's permissions.
fn edit(
    file: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<Change, String>,
) -> Result<Change, InstallError> {
    let io = |source| InstallError::Io {
        path: file.to_path_buf(),
        source,
    };
    let refused = |message: &str| InstallError::Malformed {
        path: file.to_path_buf(),
        message: message.to_string(),
    };
    let target = match std::fs::canonicalize(file) {
        Ok(target) => target,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(file).is_ok() {
                return Err(refused("a symbolic link to a file that does not exist"));
            }
            file.to_path_buf()
        }
        Err(e) => return Err(io(e)),
    };
    if let Ok(meta) = std::fs::metadata(&target) {
        use std::os::unix::fs::MetadataExt;
        if meta.permissions().readonly() {
            return Err(refused("read-only"));
        }
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(refused(&format!(
                "owned by user {}, not by you",
                meta.uid()
            )));
        }
    }
    let (mut doc, mode) = match crate::sys::bounded_read::read_regular_file(&target, 16 << 20) {
        Ok(bytes) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).map_err(io)?.permissions().mode();
            (parse_object(file, &bytes)?, Some(mode))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Map::new(), None),
        Err(e) => return Err(io(e)),
    };
    let before = doc.clone();
    let outcome = change(&mut doc).map_err(|message| InstallError::Malformed {
        path: file.to_path_buf(),
        message,
    })?;
    if doc == before {
        return Ok(outcome);
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON values print");
    text.push('\n');
    crate::sys::atomic_file::write(&target, text.as_bytes(), true).map_err(io)?;
    use std::os::unix::fs::PermissionsExt;
    let mode = mode.unwrap_or(0o644) & 0o7777;
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    Ok(outcome)
}

/// A configuration file's JSON object; an empty file is an empty object.
fn parse_object(file: &Path, bytes: &[u8]) -> Result<Map<String, Value>, InstallError> {
    let malformed = |message: String| InstallError::Malformed {
        path: file.to_path_buf(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| malformed(format!("not UTF-8: {e}")))?;
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(malformed("expected a JSON object at the top".into())),
        Err(e) => Err(malformed(format!(
            "line {}, column {}: {}",
            e.line(),
            e.column(),
            crate::sys::json_error::describe(&e)
        ))),
    }
}

/// `$HOME/<rel>`, if `HOME` is set to an absolute path.
pub(super) fn home_file(rel: &str) -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    home.is_absolute().then(|| home.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GROUPED: HookConfig = HookConfig {
        project_file: ".agent/settings.json",
        user_file: None,
        shape: Shape::Grouped {
            event: "Stop",
            matcher: None,
            timeout_millis: false,
        },
        note: None,
    };

    const LISTED: HookConfig = HookConfig {
        project_file: ".agent/hooks.json",
        user_file: None,
        shape: Shape::Listed {
            event: "stop",
            command_key: "command",
            timeout_key: None,
            extra: &[],
        },
        note: None,
    };

    #[test]
    fn recognizes_only_its_own_commands() {
        let cmd = command_line(
            Path::new("/opt/my tools/critic"),
            "claude-code",
            &["--skill".into(), "/s k".into()],
        );
        assert_eq!(
            cmd,
            "'/opt/my tools/critic' hook claude-code --skill '/s k'"
        );
        assert!(is_critic_hook(&cmd, "claude-code"));
        assert!(!is_critic_hook(&cmd, "codex"));
        assert!(!is_critic_hook(
            "/bin/critics hook claude-code",
            "claude-code"
        ));
        assert!(!is_critic_hook(
            "echo critic hook claude-code",
            "claude-code"
        ));
        assert!(!is_critic_hook("critic check --skill x", "claude-code"));
        assert!(!is_critic_hook(
            "critic hook claude-code --skill x; rm -rf ~",
            "claude-code"
        ));
        assert!(!is_critic_hook(
            "critic hook claude-code --skill $(pwd)",
            "claude-code"
        ));
        assert!(is_critic_hook(
            "critic hook claude-code --skill '/a;b'",
            "claude-code"
        ));
        assert!(!is_critic_hook("'unterminated", "claude-code"));
    }

    #[test]
    fn grouped_install_keeps_foreign_hooks_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        let foreign = json!({
            "model": "x",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
            }
        });
        std::fs::write(&file, serde_json::to_string_pretty(&foreign).unwrap()).unwrap();
        let cmd = "/bin/critic hook claude-code --skill /s";
        assert_eq!(
            install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
            Change::Added
        );
        let once = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
            Change::Unchanged
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), once);
        let doc: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["command"], cmd);
        // Keys keep their order: "model" first, as the user wrote it.
        assert!(once.find("\"model\"").unwrap() < once.find("\"hooks\"").unwrap());
        let other = "/bin/critic hook claude-code --skill /other";
        assert_eq!(
            install(&GROUPED, &file, "claude-code", other, 600).unwrap(),
            Change::Replaced
        );
        assert_eq!(
            uninstall(&GROUPED, &file, "claude-code").unwrap(),
            Change::Removed(1)
        );
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(back, foreign);
    }

    #[test]
    fn a_critic_hook_sharing_a_group_leaves_the_others() {
        let mut doc = json!({"hooks": {"Stop": [{"matcher": "", "hooks": [
            {"type": "command", "command": "critic hook claude-code --skill /a"},
            {"type": "command", "command": "critic hook claude-code --skill /a && notify-send done"},
            {"type": "command", "command": "/opt/other/critic hook claude-code --lint"},
            {"type": "command", "command": "say done"}
        ]}]}});
        let (removed, _) = GROUPED.remove(doc.as_object_mut().unwrap(), "claude-code");
        assert_eq!(removed, 1);
        assert_eq!(
            doc,
            json!({"hooks": {"Stop": [{"matcher": "", "hooks": [
                {"type": "command", "command": "critic hook claude-code --skill /a && notify-send done"},
                {"type": "command", "command": "/opt/other/critic hook claude-code --lint"},
                {"type": "command", "command": "say done"}
            ]}]}})
        );
    }

    #[test]
    fn listed_install_and_uninstall() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hooks.json");
        std::fs::write(
            &file,
            r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}"#,
        )
        .unwrap();
        let cmd = "critic hook cursor --skill /s";
        assert_eq!(
            install(&LISTED, &file, "cursor", cmd, 60).unwrap(),
            Change::Added
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}, {"command": cmd}]}})
        );
        assert_eq!(
            uninstall(&LISTED, &file, "cursor").unwrap(),
            Change::Removed(1)
        );
        assert_eq!(
            uninstall(&LISTED, &file, "cursor").unwrap(),
            Change::Removed(0)
        );
    }

    #[test]
    fn a_replaced_entry_keeps_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hooks.json");
        let old = "critic hook cursor --skill /old";
        std::fs::write(
            &file,
            json!({"version": 1, "hooks": {"stop": [
                {"command": "./first.sh"}, {"command": old}, {"command": "./last.sh"}
            ]}})
            .to_string(),
        )
        .unwrap();
        let new = "critic hook cursor --skill /new";
        assert_eq!(
            install(&LISTED, &file, "cursor", new, 60).unwrap(),
            Change::Replaced
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["hooks"]["stop"][1]["command"], new, "{doc}");
        assert_eq!(doc["hooks"]["stop"][2]["command"], "./last.sh");
    }

    #[test]
    fn a_broken_file_is_left_alone_with_the_place_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, "{\n  \"hooks\": {,\n}").unwrap();
        let e = install(&GROUPED, &file, "claude-code", "critic hook claude-code", 5).unwrap_err();
        assert!(e.to_string().contains("line 2, column 13"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\n  \"hooks\": {,\n}"
        );
        std::fs::write(&file, "[1]").unwrap();
        assert!(install(&GROUPED, &file, "claude-code", "c", 5).is_err());
        std::fs::write(&file, r#"{"hooks": {"Stop": "oops"}}"#).unwrap();
        let e = install(&GROUPED, &file, "claude-code", "c", 5).unwrap_err();
        assert!(e.to_string().contains("hooks.Stop"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            r#"{"hooks": {"Stop": "oops"}}"#
        );
    }

    #[test]
    fn writes_through_a_symlink_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        install(&GROUPED, &link, "claude-code", "critic hook claude-code", 5).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::read_to_string(&real)
            .unwrap()
            .contains("critic hook"));
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
}
