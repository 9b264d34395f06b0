//! Calls into the host. Each function is a capability the skill must declare in
//! `critic.yaml`; an undeclared or denied one returns an error naming it.
//!
//! Off wasm (native unit tests of a detector) the same functions work against
//! the current directory and stderr, so detector logic can be tested without
//! the host.

use crate::protocol::{LlmRequest, LlmResult, RunRequest, RunResult};

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// Capability `log`: write a line to the host's log.
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message)
}

/// Capability `read-file`: the bytes of a workspace file (path relative to the
/// workspace root).
pub fn read_file(path: &str) -> Result<Vec<u8>, String> {
    imp::read_file(path)
}

/// Capability `read-file`, decoded as UTF-8.
pub fn read_file_string(path: &str) -> Result<String, String> {
    let bytes = read_file(path)?;
    String::from_utf8(bytes).map_err(|_| format!("{path}: not valid UTF-8"))
}

/// Capability `run`: apply a patch in a scratch copy of the workspace and run
/// a command there (see [`RunRequest`]).
pub fn run(request: &RunRequest) -> Result<RunResult, String> {
    let json = serde_json::to_string(request).map_err(|e| e.to_string())?;
    let out = imp::run(&json)?;
    serde_json::from_str(&out).map_err(|e| format!("cannot decode the run result: {e}"))
}

/// Capability `run-matrix`: many [`RunRequest`]s, run in parallel by the host
/// (each in its own scratch copy); results in request order.
pub fn run_matrix(requests: &[RunRequest]) -> Result<Vec<RunResult>, String> {
    let json = serde_json::to_string(requests).map_err(|e| e.to_string())?;
    let out = imp::run_matrix(&json)?;
    serde_json::from_str(&out).map_err(|e| format!("cannot decode the run results: {e}"))
}

/// Capability `llm-complete`: chat completions from the model the user
/// configured on the host, run in parallel (bounded by the host); results in
/// request order. A failed request has `error` set; the call itself fails
/// only when the capability is missing or no model is configured.
pub fn llm_complete(requests: &[LlmRequest]) -> Result<Vec<LlmResult>, String> {
    let json = serde_json::to_string(requests).map_err(|e| e.to_string())?;
    let out = imp::llm_complete(&json)?;
    serde_json::from_str(&out).map_err(|e| format!("cannot decode the completions: {e}"))
}

/// The normalized event stream as JSON (without each event's `raw`). Not a
/// capability: it is the detector's own input. Use [`crate::DetectorInput::events`].
pub(crate) fn events() -> Result<String, String> {
    imp::events()
}

/// The original JSON of event `index`, `None` when there is no such event.
pub(crate) fn event_raw(index: usize) -> Option<String> {
    imp::event_raw(index)
}

/// How many events the stream has. Use [`crate::DetectorInput::event_count`].
pub(crate) fn event_count() -> Result<usize, String> {
    imp::event_count()
}

/// Events `start..end` as JSON. Use [`crate::DetectorInput::events_range`].
pub(crate) fn events_range(start: usize, end: usize) -> Result<String, String> {
    imp::events_range(start, end)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::LogLevel;
    use crate::bindings::critic::detector::host::{self, LogLevel as Wit};

    pub fn log(level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => Wit::Trace,
            LogLevel::Debug => Wit::Debug,
            LogLevel::Info => Wit::Info,
            LogLevel::Warn => Wit::Warn,
            LogLevel::Error => Wit::Error,
        };
        host::log(level, message);
    }

    pub fn read_file(path: &str) -> Result<Vec<u8>, String> {
        host::read_file(path)
    }

    pub fn events() -> Result<String, String> {
        Ok(host::events())
    }

    pub fn run(request: &str) -> Result<String, String> {
        host::run(request)
    }

    pub fn run_matrix(requests: &str) -> Result<String, String> {
        host::run_matrix(requests)
    }

    pub fn llm_complete(requests: &str) -> Result<String, String> {
        host::llm_complete(requests)
    }

    pub fn event_raw(index: usize) -> Option<String> {
        host::event_raw(u32::try_from(index).ok()?)
    }

    pub fn event_count() -> Result<usize, String> {
        Ok(host::event_count() as usize)
    }

    pub fn events_range(start: usize, end: usize) -> Result<String, String> {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(host::events_range(clamp(start), clamp(end)))
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::LogLevel;

    pub fn log(level: LogLevel, message: &str) {
        eprintln!("[{level:?}] {message}");
    }

    pub fn read_file(path: &str) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| format!("{path}: {e}"))
    }

    // Off wasm there is no host to ask: inputs carry their events inline.
    pub fn events() -> Result<String, String> {
        Err("no events in the input, and no host to fetch them from (pass `events` inline when testing natively)".into())
    }

    pub fn event_raw(_index: usize) -> Option<String> {
        None
    }

    pub fn event_count() -> Result<usize, String> {
        events().map(|_| 0)
    }

    pub fn events_range(_start: usize, _end: usize) -> Result<String, String> {
        events()
    }

    const NO_HOST: &str = "this needs the critic host; this native build has none";

    pub fn run(_request: &str) -> Result<String, String> {
        Err(NO_HOST.into())
    }

    pub fn run_matrix(_requests: &str) -> Result<String, String> {
        Err(NO_HOST.into())
    }

    pub fn llm_complete(_requests: &str) -> Result<String, String> {
        Err(NO_HOST.into())
    }
}
