//! `critic hook install` and `uninstall`: the critic's entry in an agent's
//! hook configuration, added or removed so that everything else in the file
//! (other hooks, other settings, key order) stays as it was, byte for byte:
//! the file is edited as a tree of its own text (`install/document.rs`), never
//! re-serialized from parsed values, which would round numbers and rewrite
//! escapes.
//!
//! The critic's entries are recognized by their command: a program named
//! `critic` whose arguments start with `hook <agent>`. An install replaces
//! such an entry rather than adding a second, so installing twice changes
//! nothing and installing another skill swaps the skill.

mod document;
pub mod git_exclude;

use document::{Document, List, Node};
use serde_json::{json, Map, Value};
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
    /// The hook's skill or state directory lies inside the project the
    /// hook is for, where the agent works and could change it.
    #[error("{path}: the {what} lies inside the project {project}, where the agent could {could}; keep it outside every project an agent works in ({instead}); nothing was installed")]
    WithinProject {
        /// "skill directory" or "state directory".
        what: &'static str,
        /// The directory, its links resolved.
        path: PathBuf,
        /// The project's root, its links resolved.
        project: PathBuf,
        /// What the agent could do with it.
        could: &'static str,
        /// Where to keep it instead.
        instead: &'static str,
    },
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
        doc: &mut Document,
        agent: &str,
        command: &str,
        timeout: u32,
    ) -> Result<bool, String> {
        // The lists the old entry leaves empty stay, for the new entry to
        // take the old one's place.
        let (removed, at) = self.remove(&mut doc.root, agent, false)?;
        let (root, layout) = (&mut doc.root, &doc.layout);
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
                (*event, group)
            }
            Shape::Listed {
                event,
                command_key,
                timeout_key,
                extra,
            } => {
                if root.position("version", "version")?.is_none() {
                    root.push(Some("version"), &1.into(), layout);
                }
                let mut entry = Map::new();
                for (k, v) in *extra {
                    entry.insert((*k).into(), (*v).into());
                }
                entry.insert((*command_key).into(), command.into());
                if let Some(k) = timeout_key {
                    entry.insert((*k).into(), timeout.into());
                }
                (*event, entry)
            }
        };
        let entry = Value::Object(entry);
        // What is missing is added whole, after what the file has.
        let Some(hooks) = root.get_mut("hooks", "hooks")? else {
            root.push(Some("hooks"), &json!({ event: [entry] }), layout);
            return Ok(removed > 0);
        };
        let hooks = hooks.as_object_mut().ok_or("\"hooks\" is not an object")?;
        let path = format!("hooks.{event}");
        let Some(list) = hooks.get_mut(event, &path)? else {
            hooks.push(Some(event), &json!([entry]), layout);
            return Ok(removed > 0);
        };
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("\"{path}\" is not an array"))?;
        // A replaced entry keeps its place among the others.
        list.insert(at.unwrap_or(list.len()), None, &entry, layout);
        Ok(removed > 0)
    }

    /// Remove the critic's hooks for `agent` (with the groups they leave
    /// empty, and with `prune` the list and `hooks` too); how many there
    /// were, and the place in the list where the first one was (after its
    /// group, if the group stays). An error names a key the file has twice
    /// on the way.
    fn remove(
        &self,
        root: &mut List,
        agent: &str,
        prune: bool,
    ) -> Result<(usize, Option<usize>), String> {
        let (event, key) = match &self.shape {
            Shape::Grouped { event, .. } => (*event, "command"),
            Shape::Listed {
                event, command_key, ..
            } => (*event, *command_key),
        };
        let Some(Node::Object(hooks)) = root.get_mut("hooks", "hooks")? else {
            return Ok((0, None));
        };
        let path = format!("hooks.{event}");
        let Some(Node::Array(list)) = hooks.get_mut(event, &path)? else {
            return Ok((0, None));
        };
        let ours = |entry: &Node, path: &str| -> Result<bool, String> {
            let Some(fields) = entry.as_object() else {
                return Ok(false);
            };
            Ok(fields
                .get(key, &format!("{path}.{key}"))?
                .and_then(Node::as_str)
                .is_some_and(|c| is_critic_hook(&c, agent)))
        };
        let (removed, at) = match &self.shape {
            Shape::Listed { .. } => {
                list.remove_where(|entry, n| ours(entry, &format!("{path}[{n}]")))?
            }
            Shape::Grouped { .. } => {
                let (mut removed, mut first, mut emptied) = (0, None, Vec::new());
                for (n, group) in list.values_mut().enumerate() {
                    let Node::Object(group) = group else {
                        continue;
                    };
                    let inner_path = format!("{path}[{n}].hooks");
                    let Some(Node::Array(inner)) = group.get_mut("hooks", &inner_path)? else {
                        continue;
                    };
                    let (count, _) =
                        inner.remove_where(|hook, i| ours(hook, &format!("{inner_path}[{i}]")))?;
                    if count > 0 {
                        removed += count;
                        first.get_or_insert((n, inner.is_empty()));
                        if inner.is_empty() {
                            emptied.push(n);
                        }
                    }
                }
                for &n in emptied.iter().rev() {
                    list.remove(n);
                }
                let at = first.map(|(n, gone)| {
                    n - emptied.iter().filter(|&&e| e < n).count() + usize::from(!gone)
                });
                (removed, at)
            }
        };
        // Only lists the critic's entries emptied: a file without them is
        // left as it is.
        if prune && removed > 0 && list.is_empty() {
            hooks.remove_member(event);
            if hooks.is_empty() {
                root.remove_member("hooks");
            }
        }
        Ok((removed, at))
    }
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
        let before = doc.content();
        Ok(match config.add(doc, agent, command, timeout)? {
            false => Change::Added,
            true if doc.content() == before => Change::Unchanged,
            true => Change::Replaced,
        })
    })
}

/// Remove the critic's hooks for `agent` from `file`.
pub fn uninstall(config: &HookConfig, file: &Path, agent: &str) -> Result<Change, InstallError> {
    if !file.exists() {
        return Ok(Change::Removed(0));
    }
    edit(file, |doc| {
        Ok(Change::Removed(
            config.remove(&mut doc.root, agent, true)?.0,
        ))
    })
}

/// After an uninstall of `agent`'s hook from the project's file (`rel` in
/// the project): remove it when it holds no more than what an install into
/// a project without one leaves after its uninstall (an empty object, an
/// empty hook list, a version), then the directories on the way to it that
/// are left empty. What is removed, in order.
pub fn remove_if_empty(
    config: &HookConfig,
    agent: &str,
    project: &Path,
    rel: &Path,
) -> Vec<PathBuf> {
    let file = project.join(rel);
    let mut removed = Vec::new();
    let residue = Document::parse("").ok().and_then(|mut doc| {
        let skill = ["--skill".to_string(), "skill".to_string()];
        let command = command_line(Path::new("critic"), agent, &skill);
        config.add(&mut doc, agent, &command, 60).ok()?;
        config.remove(&mut doc.root, agent, true).ok()?;
        serde_json::from_str::<Value>(&doc.print()).ok()
    });
    let found = crate::sys::bounded_read::read_regular_file_nofollow(&file, 1 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let nothing_else = match (&found, &residue) {
        (Some(found), Some(residue)) => found == residue,
        _ => false,
    } || found
        .as_ref()
        .is_some_and(|v| v.as_object().is_some_and(Map::is_empty));
    if !nothing_else || std::fs::remove_file(&file).is_err() {
        return removed;
    }
    removed.push(file);
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if std::fs::remove_dir(project.join(d)).is_err() {
            break;
        }
        removed.push(project.join(d));
        dir = d.parent();
    }
    removed
}

/// Read `file` (a JSON object; missing is empty), apply `change`, and write
/// it back if it changed: atomically, through a symbolic link to its
/// target, keeping the file's permissions, and every byte `change` did not
/// touch.
fn edit(
    file: &Path,
    change: impl FnOnce(&mut Document) -> Result<Change, String>,
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
    let (text, mode) = match crate::sys::bounded_read::read_regular_file(&target, 16 << 20) {
        Ok(bytes) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).map_err(io)?.permissions().mode();
            let text = String::from_utf8(bytes)
                .map_err(|e| refused(&format!("not UTF-8: {}", e.utf8_error())))?;
            (text, Some(mode))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
        Err(e) => return Err(io(e)),
    };
    let mut doc = Document::parse(&text).map_err(|message| refused(&message))?;
    let before = doc.content();
    let outcome = change(&mut doc).map_err(|message| refused(&message))?;
    // The same values in the same order: nothing to write, even if the
    // critic's own entry was laid out anew.
    if doc.content() == before {
        return Ok(outcome);
    }
    crate::sys::atomic_file::write(&target, doc.print().as_bytes(), true).map_err(io)?;
    use std::os::unix::fs::PermissionsExt;
    let mode = mode.unwrap_or(0o644) & 0o7777;
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    Ok(outcome)
}

/// Refuse a hook for the project at `project` whose skill directory
/// `skill`, or state directory `state` (a relative one is the project's:
/// the hook runs there), lies inside the project: the agent could rewrite
/// the manifest to accept anything, break it to be let stop, or reset its
/// own rejection count. Symbolic links are resolved first.
pub fn refuse_within_project(
    project: &Path,
    skill: &Path,
    state: Option<&Path>,
) -> Result<(), InstallError> {
    use crate::sys::real_path::{resolved, within};
    let dir = resolved(project);
    // The work tree the hook will judge, as it will find it: a project
    // inside a repository is that repository's.
    let root = crate::workspace::nearest_root(&dir);
    let inside = |what, path: &Path, could, instead| {
        let path = resolved(&dir.join(path));
        match within(&path, &root) {
            true => Err(InstallError::WithinProject {
                what,
                path,
                project: root.clone(),
                could,
                instead,
            }),
            false => Ok(()),
        }
    };
    inside(
        "skill directory",
        skill,
        "rewrite its manifest to accept any finish, or break it to be let stop",
        "e.g. under ~/.config/pluggable-critic/skills/",
    )?;
    match state {
        Some(state) => inside(
            "state directory",
            state,
            "reset its own rejection count",
            "leave out --state-dir for the default, under $XDG_STATE_HOME or ~/.local/state",
        ),
        None => Ok(()),
    }
}

/// `$HOME/<rel>`, if `HOME` is set to an absolute path.
pub(super) fn home_file(rel: &str) -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    home.is_absolute().then(|| home.join(rel))
}

#[cfg(test)]
mod tests;
