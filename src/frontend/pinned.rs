//! A `critic serve` bound to one session (`--pin-*`): how `critic
//! experiment` lets an agent's confined turn have its finishes judged
//! without letting it choose what judges them. The agent can reach the
//! server (through its turn's forwarded port) and send it anything; every
//! request must then name the session's skill and workspace, cannot name
//! another base or patch, and is counted in the server's state directory
//! under its cap, which the agent cannot reach. What else would steer the
//! verdict (the time limit, capabilities denied, the wait for the session's
//! lock) is the server's, not the request's. The events are read before the
//! check, beneath the agent's own directory with no link followed, into a
//! private copy: the agent cannot swap a file of the user's in. The server,
//! not the agent's hook, writes the verdict log the runner reads.

use crate::evaluate::request::CheckRequest;
use crate::evaluate::verdict::Verdict;
use crate::sandbox::beneath::Beneath;
use std::path::{Path, PathBuf};

/// The most bytes of events read for one request (a file, or a directory's
/// files together).
const MAX_EVENTS_BYTES: u64 = 256 << 20;

/// The most files of an events directory read.
const MAX_EVENT_FILES: usize = 100_000;

/// What a pinned server judges.
#[derive(Debug, Clone)]
pub struct Pin {
    /// The only skill.
    pub skill: PathBuf,
    /// The only workspace (a request may name a directory inside it).
    pub workspace: PathBuf,
    /// Where every request's state goes.
    pub state_dir: PathBuf,
    /// The most rejections per session, whatever a request asks.
    pub max_rejections: u32,
    /// Directories an events file or directory must lie in (reached with
    /// no link followed); none: events only inline.
    pub events_under: Vec<PathBuf>,
    /// Where each verdict is logged, with the patch it judged beside it.
    pub verdict_log: Option<PathBuf>,
}

fn real(path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))
}

impl Pin {
    /// `pin` with its paths resolved, checked once at start.
    pub fn resolved(mut self) -> Result<Pin, String> {
        self.skill = real(&self.skill)?;
        self.workspace = real(&self.workspace)?;
        for dir in &self.events_under {
            real(dir)?;
        }
        Ok(self)
    }

    /// Make `request` this session's, or say why it cannot be; what it
    /// returns holds the copy of the events and must outlive the check.
    pub fn apply(&self, request: &mut CheckRequest) -> Result<Events, String> {
        let only = |field: &str, what: &Path| {
            format!(
                "{field}: this server judges only {} (it is pinned to one session)",
                what.display()
            )
        };
        if real(&request.skill).ok().as_deref() != Some(self.skill.as_path()) {
            return Err(only("skill", &self.skill));
        }
        if !real(&request.workspace).is_ok_and(|w| w.starts_with(&self.workspace)) {
            return Err(only("workspace", &self.workspace));
        }
        if request.base.is_some() || request.patch.is_some() {
            return Err(
                "base, patch: a pinned server judges the workspace's changes only".to_string(),
            );
        }
        if request
            .state_dir
            .as_ref()
            .is_some_and(|d| d != &self.state_dir)
        {
            return Err(only("state_dir", &self.state_dir));
        }
        let events = match request.events.take() {
            Some(path) => self.copy_events(&path, request)?,
            None => Events { _copy: None },
        };
        // The resolved paths, not the request's: a link the agent swaps
        // after this check changes nothing.
        request.skill = self.skill.clone();
        request.workspace = self.workspace.clone();
        request.state_dir = Some(self.state_dir.clone());
        request.max_rejections = Some(self.max_rejections);
        request.time_limit = None;
        request.deny = Vec::new();
        request.lock_timeout = crate::evaluate::state::DEFAULT_LOCK_TIMEOUT;
        Ok(events)
    }

    /// Read the events at `path` (a file, or a directory of event files)
    /// beneath one of the agent's directories, with no link followed, into
    /// `request`: a file's text inline, a directory's files into a private
    /// copy it names.
    fn copy_events(&self, path: &Path, request: &mut CheckRequest) -> Result<Events, String> {
        let refused = |why: String| format!("events: {}: {why}", path.display());
        let (root, rel) = self
            .events_under
            .iter()
            .find_map(|root| Some((root, path.strip_prefix(root).ok()?.to_path_buf())))
            .filter(|(_, rel)| !rel.as_os_str().is_empty())
            .ok_or_else(|| refused("not in the agent's own directories".into()))?;
        let root = Beneath::open(root).map_err(|e| refused(e.to_string()))?;
        // A directory, else a regular file; a link is neither.
        let dir = match root.dir(&rel) {
            Ok(dir) => dir,
            Err(_) => {
                let bytes = root
                    .read(&rel, MAX_EVENTS_BYTES)
                    .map_err(|e| refused(e.to_string()))?;
                request.events_inline = Some(serde_json::Value::String(
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
                return Ok(Events { _copy: None });
            }
        };
        // A conversation directory holding its events (OpenHands').
        let dir = dir.dir(Path::new("events")).unwrap_or(dir);
        let copy = tempfile::Builder::new()
            .prefix("critic-events-")
            .tempdir()
            .map_err(|e| refused(format!("cannot make a private copy: {e}")))?;
        let mut total = 0u64;
        for name in dir
            .names(MAX_EVENT_FILES)
            .map_err(|e| refused(e.to_string()))?
        {
            if !name.to_string_lossy().ends_with(".json") {
                continue;
            }
            let bytes = dir
                .read(Path::new(&name), MAX_EVENTS_BYTES - total)
                .map_err(|e| refused(format!("{}: {e}", name.to_string_lossy())))?;
            total += bytes.len() as u64;
            std::fs::write(copy.path().join(&name), bytes)
                .map_err(|e| refused(format!("cannot copy: {e}")))?;
        }
        request.events = Some(copy.path().to_path_buf());
        Ok(Events { _copy: Some(copy) })
    }

    /// Log `verdict` (judged for `request`, made this session's by
    /// [`Pin::apply`]).
    pub fn record(&self, request: &CheckRequest, verdict: &Verdict) {
        let Some(log) = &self.verdict_log else {
            return;
        };
        let judged = crate::frontend::verdict_log::Judged {
            workspace: Some(&request.workspace),
            base: None,
            patch: None,
        };
        if let Err(e) = crate::frontend::verdict_log::record(log, verdict, &judged) {
            tracing::warn!("--verdict-log {}: {e}", log.display());
        }
    }
}

/// The private copy of a request's events directory, removed when dropped
/// (after the check).
pub struct Events {
    _copy: Option<tempfile::TempDir>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(t: &Path) -> Pin {
        for d in ["skill", "ws/sub", "agent", "other"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("agent/events.jsonl"), "{}\n").unwrap();
        std::fs::create_dir_all(t.join("agent/conv/events")).unwrap();
        std::fs::write(t.join("agent/conv/events/1.json"), "{\"a\": 1}").unwrap();
        std::fs::write(t.join("agent/conv/events/notes.txt"), "x").unwrap();
        std::fs::write(t.join("other/secret"), "").unwrap();
        std::os::unix::fs::symlink(t.join("other/secret"), t.join("agent/link")).unwrap();
        std::os::unix::fs::symlink(t.join("other"), t.join("agent/dirlink")).unwrap();
        Pin {
            skill: t.join("skill"),
            workspace: t.join("ws"),
            state_dir: t.join("state"),
            max_rejections: 3,
            events_under: vec![t.join("agent")],
            verdict_log: None,
        }
        .resolved()
        .unwrap()
    }

    fn request(t: &Path) -> CheckRequest {
        serde_json::from_value(serde_json::json!({
            "skill": t.join("skill"),
            "workspace": t.join("ws/sub"),
            "events": t.join("agent/events.jsonl"),
            "max_rejections": 9,
        }))
        .unwrap()
    }

    #[test]
    fn the_sessions_request_is_taken_with_the_servers_state_and_cap() {
        let t = tempfile::tempdir().unwrap();
        let p = pin(t.path());
        let mut r = request(t.path());
        r.time_limit = Some(std::time::Duration::from_millis(1));
        r.deny = vec![crate::host::Capability::Run];
        let events = p.apply(&mut r).unwrap();
        assert!(events._copy.is_none());
        assert_eq!(r.workspace, p.workspace);
        assert_eq!(
            r.state_dir.as_deref(),
            Some(t.path().join("state").as_path())
        );
        // The server's cap, limit and rights, not the request's.
        assert_eq!(r.max_rejections, Some(3));
        assert_eq!(r.time_limit, None);
        assert!(r.deny.is_empty());
        // The events, read into the request.
        assert_eq!(r.events, None);
        assert_eq!(r.events_inline, Some(serde_json::json!("{}\n")));
        // A directory of events: its event files copied, nothing else.
        let mut r = request(t.path());
        r.events = Some(t.path().join("agent/conv"));
        let copy = p.apply(&mut r).unwrap();
        let dir = r.events.clone().unwrap();
        assert!(!dir.starts_with(t.path()));
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["1.json"]);
        drop(copy);
        assert!(!dir.exists());
    }

    #[test]
    fn another_skill_workspace_state_base_or_events_outside_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = pin(t.path());
        let tries: [&dyn Fn(&mut CheckRequest); 8] = [
            &|r| r.skill = t.path().join("other"),
            &|r| r.workspace = t.path().join("other"),
            &|r| r.state_dir = Some(t.path().join("other")),
            &|r| r.base = Some("HEAD~1".into()),
            &|r| r.events = Some(t.path().join("other/secret")),
            // A link in the agent's directory to a file outside it, one to
            // a directory outside it, and a way out by `..`.
            &|r| r.events = Some(t.path().join("agent/link")),
            &|r| r.events = Some(t.path().join("agent/dirlink/secret")),
            &|r| r.events = Some(t.path().join("agent/../other/secret")),
        ];
        for (i, change) in tries.iter().enumerate() {
            let mut r = request(t.path());
            change(&mut r);
            assert!(p.apply(&mut r).is_err(), "try {i} was taken");
        }
    }
}
