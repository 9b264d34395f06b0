//! Guest SDK for PluggableCritic detectors.
//!
//! A detector is one function from [`DetectorInput`] to [`DetectorOutput`],
//! exported with [`export_detector!`] and built for `wasm32-wasip2`:
//!
//! ```
//! use critic_sdk::{DetectorInput, DetectorOutput};
//!
//! fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
//!     if input.patch.is_empty() {
//!         return Ok(DetectorOutput::fire("The patch is empty: make the change first."));
//!     }
//!     Ok(DetectorOutput::pass())
//! }
//! critic_sdk::export_detector!(detect);
//! # let _ = detect;
//! ```
//!
//! The WIT world lives in `wit/detector.wit`; the host and this crate share the
//! payload structs in [`protocol`], so the two sides cannot drift apart.

#[cfg(feature = "arms")]
pub mod arms;
pub mod diff;
pub mod helpers;
pub mod host;
#[cfg(feature = "python")]
pub mod mutants;
pub mod protocol;
#[cfg(feature = "python")]
pub mod python;
pub mod reproduction;
#[cfg(feature = "templates")]
pub mod templates;
mod test_input;

pub use helpers::*;
pub use protocol::*;
pub use test_input::TestInput;

use serde::de::DeserializeOwned;
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "critic-detector",
        path: "wit",
        pub_export_macro: true,
        default_bindings_module: "critic_sdk::bindings",
    });
}

impl Event {
    /// The original JSON of the event, fetched from the host when it was not
    /// passed inline; `Null` when it cannot be had.
    pub fn raw_value(&self) -> Value {
        match &self.raw {
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => host::event_raw(self.index)
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or(Value::Null),
        }
    }
}

impl DetectorInput {
    /// The agent's normalized event stream, oldest first. Fetched from the host
    /// on the first call (and kept), unless the input carried it inline.
    pub fn events(&self) -> Result<&[Event], String> {
        if let Some(events) = &self.inline_events {
            return Ok(events);
        }
        self.fetched_events
            .get_or_init(|| {
                let json = host::events()?;
                serde_json::from_str(&json)
                    .map_err(|e| format!("cannot decode the event stream from the host: {e}"))
            })
            .as_deref()
            .map_err(Clone::clone)
    }

    /// The events already at hand: inline, or fetched whole earlier.
    fn known_events(&self) -> Option<&[Event]> {
        match (&self.inline_events, self.fetched_events.get()) {
            (Some(events), _) => Some(events),
            (None, Some(Ok(events))) => Some(events),
            _ => None,
        }
    }

    /// How many events the stream has, without fetching them.
    pub fn event_count(&self) -> Result<usize, String> {
        match self.known_events() {
            Some(events) => Ok(events.len()),
            None => host::event_count(),
        }
    }

    /// Events `start..end` (clamped to the stream), fetching only those.
    pub fn events_range(&self, start: usize, end: usize) -> Result<Vec<Event>, String> {
        if let Some(events) = self.known_events() {
            let end = end.min(events.len());
            return Ok(events[start.min(end)..end].to_vec());
        }
        let json = host::events_range(start, end)?;
        serde_json::from_str(&json)
            .map_err(|e| format!("cannot decode events {start}..{end} from the host: {e}"))
    }

    /// The stream from its last event that satisfies `pred` to its end (the
    /// whole stream when none does). Fetched backwards in growing chunks, so
    /// a detector that only cares about the end of a long stream decodes
    /// little of it; event `index` fields keep their place in the stream.
    pub fn events_from_last(&self, pred: impl Fn(&Event) -> bool) -> Result<Vec<Event>, String> {
        if let Some(events) = self.known_events() {
            let start = events.iter().rposition(&pred).unwrap_or(0);
            return Ok(events[start..].to_vec());
        }
        let mut tail: Vec<Event> = Vec::new();
        let (mut start, mut chunk) = (self.event_count()?, 16);
        while start > 0 {
            let from = start.saturating_sub(chunk);
            let mut part = self.events_range(from, start)?;
            let found = part.iter().rposition(&pred);
            part.append(&mut tail);
            tail = part;
            start = from;
            if let Some(i) = found {
                tail.drain(..i);
                break;
            }
            chunk *= 2;
        }
        Ok(tail)
    }

    /// The signal's `config`, deserialized; `null` config becomes `T::default()`
    /// through serde defaults when `T` allows it.
    pub fn config_as<T: DeserializeOwned>(&self) -> Result<T, String> {
        let value = if self.config.is_null() {
            Value::Object(Default::default())
        } else {
            self.config.clone()
        };
        serde_json::from_value(value)
            .map_err(|e| format!("invalid config for signal '{}': {e}", self.signal))
    }

    /// The persisted state, deserialized; `None` on the first call or when the
    /// stored state no longer matches `T` (the detector starts over).
    pub fn state_as<T: DeserializeOwned>(&self) -> Option<T> {
        if self.state.is_null() {
            return None;
        }
        serde_json::from_value(self.state.clone()).ok()
    }
}

impl DetectorOutput {
    /// Not triggered.
    pub fn pass() -> Self {
        Self::default()
    }

    /// Triggered, with the text the agent should read next.
    pub fn fire(followup: impl Into<String>) -> Self {
        Self {
            triggered: true,
            followup_text: Some(followup.into()),
            ..Self::default()
        }
    }

    /// Attach evidence for the verdict's metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Hand the host a file to write under `.critic/feedback/<skill>/`.
    pub fn with_artifact(mut self, path: impl Into<String>, content: impl Into<String>) -> Self {
        self.artifacts.push(Artifact {
            path: path.into(),
            content: content.into(),
        });
        self
    }

    /// Attach state to persist until the next call.
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }
}

/// Decode the host's JSON, run `detect`, encode its answer. Used by
/// [`export_detector!`]; public so native tests can drive a detector exactly as
/// the host does.
pub fn run_detector<F>(input: &str, detect: F) -> Result<String, String>
where
    F: Fn(&DetectorInput) -> Result<DetectorOutput, String>,
{
    let input: DetectorInput =
        serde_json::from_str(input).map_err(|e| format!("cannot decode detector input: {e}"))?;
    let output = detect(&input)?;
    serde_json::to_string(&output).map_err(|e| format!("cannot encode detector output: {e}"))
}

/// Export `fn(&DetectorInput) -> Result<DetectorOutput, String>` as the
/// component's `critic:detector/detector` interface. Expands to nothing on
/// non-wasm targets, so the same crate also builds for native unit tests.
#[macro_export]
macro_rules! export_detector {
    ($detect:path) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct CriticDetector;
            impl $crate::bindings::exports::critic::detector::detector::Guest for CriticDetector {
                fn detect(
                    input: ::std::string::String,
                ) -> ::std::result::Result<::std::string::String, ::std::string::String> {
                    $crate::run_detector(&input, $detect)
                }
            }
    $crate::bindings::export!(CriticDetector with_types_in $crate::bindings);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input_with(kinds: &[&str]) -> DetectorInput {
        let events: Vec<Value> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| json!({"index": i, "kind": k, "source": "agent"}))
            .collect();
        serde_json::from_value(json!({
            "api_version": "0.1.0",
            "skill": {"name": "t", "version": "0"},
            "signal": "s",
            "iteration": 1,
            "session": "s",
            "patch": {"base": "b", "raw": "", "files": []},
            "events": events,
        }))
        .unwrap()
    }

    #[test]
    fn the_stream_from_its_last_match() {
        let input = input_with(&["message", "action", "observation", "action", "observation"]);
        assert_eq!(input.event_count().unwrap(), 5);
        let tail = input
            .events_from_last(|e| e.kind == EventKind::Action)
            .unwrap();
        assert_eq!(tail.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 4]);
        let all = input
            .events_from_last(|e| e.kind == EventKind::Finish)
            .unwrap();
        assert_eq!(all.len(), 5, "no match: the whole stream");
        let mid = input.events_range(1, 3).unwrap();
        assert_eq!(mid.iter().map(|e| e.index).collect::<Vec<_>>(), [1, 2]);
        assert!(input.events_range(4, 99).unwrap().len() == 1);
        assert!(input.events_range(9, 3).unwrap().is_empty());
    }
}
