//! [`CheckRequest`]: the one description of a check that every front-end
//! builds (the CLI from its flags, the server from a request body, a hook from
//! the agent's hook input, a program directly).

use crate::agents::EventsFormat;
use crate::evaluate::state::DEFAULT_LOCK_TIMEOUT;
use crate::host::llm::LlmConfig;
use crate::host::Capability;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Session id used when none is given.
pub const DEFAULT_SESSION: &str = "default";

/// The longest [`CheckRequest::time_limit`] a request may ask for: a day,
/// as for a signal's own `timeout`, some bound past which a number is a
/// mistake.
pub const MAX_TIME_LIMIT: Duration = Duration::from_secs(86_400);

/// One finish to judge, and how.
///
/// The wire fields are what a server request body carries (see
/// `schemas/check-request.schema.json`); [`CheckRequest::host`] holds what
/// only the host's operator decides, since each of its settings widens what
/// the check may do, and is never read from a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// Skill directory (holds `critic.yaml`).
    pub skill: PathBuf,
    /// The agent's git working tree.
    #[serde(default = "current_dir")]
    pub workspace: PathBuf,
    /// The agent's event stream: a file or an events directory.
    #[serde(default)]
    pub events: Option<PathBuf>,
    /// The event stream itself, instead of [`CheckRequest::events`]: a
    /// string holding the file's text, or a JSON array of events.
    #[serde(default)]
    pub events_inline: Option<serde_json::Value>,
    /// Force an event format instead of detecting it.
    #[serde(default)]
    pub events_format: Option<EventsFormat>,
    /// Session id: state and the rejection count are kept per session.
    #[serde(default = "default_session")]
    pub session: String,
    /// Diff against this revision instead of HEAD.
    #[serde(default)]
    pub base: Option<String>,
    /// Judge this diff file instead of the working tree's changes (the
    /// workspace must then be at the base).
    #[serde(default)]
    pub patch: Option<PathBuf>,
    /// State directory (default: the user's state directory, keyed by the
    /// workspace; see `evaluate::state::default_root`).
    #[serde(default)]
    pub state_dir: Option<PathBuf>,
    /// Capabilities to deny the skill.
    #[serde(default)]
    pub deny: Vec<Capability>,
    /// How long to wait for a concurrent check of the same session, in seconds.
    #[serde(default = "default_lock_timeout", with = "seconds")]
    pub lock_timeout: Duration,
    /// The time the whole check may take, from when it starts: every
    /// signal is stopped when it is up (the wait for the session's lock
    /// counts too), and a signal stopped so is a detector failure the
    /// skill's `on_error` decides. `None`: only each signal's own
    /// `timeout` holds. Whoever waits for the answer (a hook, whose agent
    /// gives it a timeout of its own; a client of `critic serve`) sets it,
    /// so that the check answers before they give up.
    #[serde(default, with = "optional_seconds")]
    pub time_limit: Option<Duration>,
    /// At most this many rejections per session, however many the skill's
    /// `max_iterations` allows: a hook's guarantee that an untrusted skill
    /// cannot keep an agent from stopping.
    #[serde(default)]
    pub max_rejections: Option<u32>,
    /// The agent's final message as its hook reported it. A transcript can
    /// lag behind the hook call; when its last finish is not this message,
    /// the message is added as the stream's finish event.
    #[serde(default)]
    pub finish_message: Option<String>,
    /// What the host's operator allows; not part of a request body.
    #[serde(skip)]
    pub host: HostSettings,
}

/// Settings only the host's operator chooses: each one widens what a check
/// may do or where it writes, so a server takes them from its own flags and
/// never from a client.
#[derive(Debug, Clone, Default)]
pub struct HostSettings {
    /// Compiled-component cache (`None`: compile every time, keep nothing).
    pub cache_dir: Option<PathBuf>,
    /// Load native detectors, which run unsandboxed.
    pub allow_native: bool,
    /// Commands the `run` capabilities run at once (`None`: one per core).
    pub jobs: Option<usize>,
    /// Run `run`/`run-matrix` commands unconfined (see
    /// `sandbox::confine`).
    pub unconfined_runs: bool,
    /// The model `llm-complete` talks to (`None`: not configured).
    pub llm: Option<LlmConfig>,
}

/// Where a check's events come from.
#[derive(Debug, Clone, Copy)]
pub enum EventsSource<'a> {
    /// A file or directory.
    Path(&'a Path),
    /// The stream's text.
    Text(&'a str),
    /// The stream as JSON (an array of events).
    Json(&'a serde_json::Value),
}

impl CheckRequest {
    /// A check of `skill` on the events at `events`, in the current
    /// directory's work tree, with every other setting at its default.
    pub fn new(skill: impl Into<PathBuf>, events: impl Into<PathBuf>) -> CheckRequest {
        CheckRequest {
            skill: skill.into(),
            workspace: current_dir(),
            events: Some(events.into()),
            events_inline: None,
            events_format: None,
            session: default_session(),
            base: None,
            patch: None,
            state_dir: None,
            deny: Vec::new(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            time_limit: None,
            max_rejections: None,
            finish_message: None,
            host: HostSettings::default(),
        }
    }

    /// When the signals of this check, started at `start`, must have
    /// ended: `start` plus [`CheckRequest::time_limit`].
    pub fn deadline(&self, start: Instant) -> Option<Instant> {
        self.time_limit.map(|limit| start + limit)
    }

    /// The request's event stream; exactly one of `events` and
    /// `events_inline` must be given.
    pub fn events_source(&self) -> Result<EventsSource<'_>, String> {
        match (&self.events, &self.events_inline) {
            (Some(path), None) => Ok(EventsSource::Path(path)),
            (None, Some(serde_json::Value::String(text))) => Ok(EventsSource::Text(text)),
            (None, Some(value @ serde_json::Value::Array(_))) => Ok(EventsSource::Json(value)),
            (None, Some(_)) => Err(
                "events_inline: expected the stream's text (a string) or an array of events".into(),
            ),
            (Some(_), Some(_)) => Err("events, events_inline: give one of them, not both".into()),
            (None, None) => {
                Err("events: missing; give the event stream's path (or events_inline)".into())
            }
        }
    }
}

fn current_dir() -> PathBuf {
    PathBuf::from(".")
}

fn default_session() -> String {
    DEFAULT_SESSION.to_string()
}

fn default_lock_timeout() -> Duration {
    DEFAULT_LOCK_TIMEOUT
}

/// A [`Duration`] as whole seconds on the wire.
mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

/// An optional [`Duration`] as seconds on the wire, fractions allowed (a
/// hook passes on what is left of its time), at most [`MAX_TIME_LIMIT`].
mod optional_seconds {
    use super::MAX_TIME_LIMIT;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let Some(secs) = Option::<f64>::deserialize(d)? else {
            return Ok(None);
        };
        Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|limit| *limit <= MAX_TIME_LIMIT)
            .map(Some)
            .ok_or_else(|| {
                D::Error::custom(format!(
                    "expected seconds from 0 to {}, got {secs}",
                    MAX_TIME_LIMIT.as_secs()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_names_what_the_flags_name_and_nothing_of_the_hosts() {
        let r: CheckRequest = serde_json::from_str(
            r#"{"skill":"s","events":"e.jsonl","deny":["run"],"lock_timeout":5,"events_format":"openhands"}"#,
        )
        .unwrap();
        assert_eq!(r.workspace, Path::new("."));
        assert_eq!(r.session, DEFAULT_SESSION);
        assert_eq!(r.deny, vec![Capability::Run]);
        assert_eq!(r.lock_timeout, Duration::from_secs(5));
        assert!(matches!(r.events_source(), Ok(EventsSource::Path(_))));
        assert_eq!(r.time_limit, None);
        let timed: CheckRequest =
            serde_json::from_str(r#"{"skill":"s","events":"e","time_limit":2.5}"#).unwrap();
        assert_eq!(timed.time_limit, Some(Duration::from_millis(2500)));
        let start = Instant::now();
        assert_eq!(
            timed.deadline(start),
            Some(start + Duration::from_millis(2500))
        );
        let back: CheckRequest =
            serde_json::from_value(serde_json::to_value(&timed).unwrap()).unwrap();
        assert_eq!(back.time_limit, timed.time_limit);
        for body in [
            r#"{"skill":"s","events":"e","time_limit":-1}"#,
            r#"{"skill":"s","events":"e","time_limit":86401}"#,
            r#"{"skill":"s","events":"e","time_limit":"10"}"#,
            r#"{"skill":"s","events":"e","allow_native":true}"#,
            r#"{"skill":"s","events":"e","unconfined_runs":true}"#,
            r#"{"skill":"s","events":"e","host":{}}"#,
            r#"{"skill":"s","events":"e","events_format":"nope"}"#,
        ] {
            assert!(
                serde_json::from_str::<CheckRequest>(body).is_err(),
                "{body}"
            );
        }
    }

    #[test]
    fn exactly_one_event_source() {
        let mut r = CheckRequest::new("s", "e");
        r.events_inline = Some(serde_json::json!([]));
        assert!(r.events_source().unwrap_err().contains("not both"));
        r.events = None;
        assert!(matches!(r.events_source(), Ok(EventsSource::Json(_))));
        r.events_inline = Some(serde_json::json!(3));
        assert!(r.events_source().unwrap_err().starts_with("events_inline"));
        r.events_inline = None;
        assert!(r
            .events_source()
            .unwrap_err()
            .starts_with("events: missing"));
    }

    #[test]
    fn the_schema_names_what_the_server_reads() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schemas/check-request.schema.json")).unwrap();
        let props = schema["properties"].as_object().unwrap();
        let wire = serde_json::to_value(CheckRequest::new("s", "e")).unwrap();
        let mut named: Vec<&String> = props.keys().collect();
        let mut sent: Vec<&String> = wire.as_object().unwrap().keys().collect();
        named.sort();
        sent.sort();
        assert_eq!(named, sent);
        let formats: Vec<&str> = crate::agents::FORMATS.iter().map(|f| f.name).collect();
        assert_eq!(props["events_format"]["enum"], serde_json::json!(formats));
        let caps: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(props["deny"]["items"]["enum"], serde_json::json!(caps));
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&serde_json::json!({"skill": "s", "events": "e"})));
        assert!(!validator.is_valid(&serde_json::json!({"skill": "s"})));
        assert!(!validator
            .is_valid(&serde_json::json!({"skill": "s", "events": "e", "events_inline": "x"})));
    }
}
