//! A `critic serve` bound to one session (`--pin-*`): how `critic
//! experiment` lets an agent's confined turn have its finishes judged
//! without letting it choose what judges them. The agent can reach the
//! server (through its turn's forwarded port) and send it anything; every
//! request must then name the session's skill and workspace, cannot name
//! another base or patch, reads events only from the agent's own
//! directories, and is counted in the server's state directory under its
//! cap, which the agent cannot reach. The server, not the agent's hook,
//! writes the verdict log the runner reads.

use crate::evaluate::verdict::Verdict;
use crate::run::CheckRequest;
use std::path::{Path, PathBuf};

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
    /// Directories an events file must lie in (its links resolved); none:
    /// events only inline.
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
        self.events_under = self
            .events_under
            .iter()
            .map(|d| real(d))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Make `request` this session's, or say why it cannot be.
    pub fn apply(&self, request: &mut CheckRequest) -> Result<(), String> {
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
        if let Some(events) = &request.events {
            let inside = real(events)
                .is_ok_and(|e| self.events_under.iter().any(|root| e.starts_with(root)));
            if !inside {
                return Err(format!(
                    "events: {}: not in the agent's own directories",
                    events.display()
                ));
            }
        }
        request.workspace = self.workspace.clone();
        request.state_dir = Some(self.state_dir.clone());
        request.max_rejections = Some(
            request
                .max_rejections
                .map_or(self.max_rejections, |m| m.min(self.max_rejections)),
        );
        Ok(())
    }

    /// Log `verdict` (judged for `request`, made this session's by
    /// [`Pin::apply`]).
    pub fn record(&self, request: &CheckRequest, verdict: &Verdict) {
        let Some(log) = &self.verdict_log else {
            return;
        };
        let judged = crate::run::verdict_log::Judged {
            workspace: Some(&request.workspace),
            base: None,
            patch: None,
        };
        if let Err(e) = crate::run::verdict_log::record(log, verdict, &judged) {
            tracing::warn!("--verdict-log {}: {e}", log.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(t: &Path) -> Pin {
        for d in ["skill", "ws/sub", "agent", "other"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("agent/events.jsonl"), "").unwrap();
        std::fs::write(t.join("other/secret"), "").unwrap();
        std::os::unix::fs::symlink(t.join("other/secret"), t.join("agent/link")).unwrap();
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
        p.apply(&mut r).unwrap();
        assert_eq!(r.workspace, p.workspace);
        assert_eq!(
            r.state_dir.as_deref(),
            Some(t.path().join("state").as_path())
        );
        assert_eq!(r.max_rejections, Some(3));
    }

    #[test]
    fn another_skill_workspace_state_base_or_events_outside_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = pin(t.path());
        let tries: [&dyn Fn(&mut CheckRequest); 6] = [
            &|r| r.skill = t.path().join("other"),
            &|r| r.workspace = t.path().join("other"),
            &|r| r.state_dir = Some(t.path().join("other")),
            &|r| r.base = Some("HEAD~1".into()),
            &|r| r.events = Some(t.path().join("other/secret")),
            // A link in the agent's directory to a file outside it.
            &|r| r.events = Some(t.path().join("agent/link")),
        ];
        for (i, change) in tries.iter().enumerate() {
            let mut r = request(t.path());
            change(&mut r);
            assert!(p.apply(&mut r).is_err(), "try {i} was taken");
        }
    }
}
