//! [`TestInput`]: a detector's input for its native unit tests, built from a
//! diff and a few events instead of hand-written wire JSON.
//!
//! ```
//! use critic_sdk::{DetectorInput, DetectorOutput, TestInput};
//!
//! fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
//!     let ran = critic_sdk::commands(input.events()?).iter().any(|c| c.command.contains("pytest"));
//!     Ok(if ran { DetectorOutput::pass() } else { DetectorOutput::fire("Run the tests.") })
//! }
//!
//! let diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
//! let out = TestInput::new().diff(diff).command("pytest -q", 0, "1 passed").run(detect).unwrap();
//! assert!(!out.triggered);
//! let out = TestInput::new().diff(diff).run(detect).unwrap();
//! assert!(out.triggered);
//! ```

use crate::{diff, DetectorInput, DetectorOutput, Event, EventKind, Patch, SkillInfo, API_VERSION};
use serde_json::{json, Value};

/// A detector input under construction; every field has a harmless default
/// (signal and skill `test`, iteration 1, no config or state, an empty patch,
/// no events).
#[derive(Debug, Clone)]
pub struct TestInput {
    input: DetectorInput,
    events: Vec<Event>,
    is_test: fn(&str) -> bool,
}

impl Default for TestInput {
    fn default() -> Self {
        TestInput::new()
    }
}

impl TestInput {
    /// The default input.
    pub fn new() -> TestInput {
        TestInput {
            input: DetectorInput {
                api_version: API_VERSION.to_string(),
                skill: SkillInfo {
                    name: "test".into(),
                    version: "0.1.0".into(),
                },
                signal: "test".into(),
                config: Value::Null,
                state: Value::Null,
                iteration: 1,
                session: "test".into(),
                patch: Patch::default(),
                inline_events: None,
                fetched_events: Default::default(),
            },
            events: Vec::new(),
            is_test: |path| path.starts_with("tests/") || path.contains("/tests/"),
        }
    }

    /// The signal's `config`.
    pub fn config(mut self, config: Value) -> TestInput {
        self.input.config = config;
        self
    }

    /// The state the detector returned on its previous call.
    pub fn state(mut self, state: Value) -> TestInput {
        self.input.state = state;
        self
    }

    /// The 1-based finish number within the session.
    pub fn iteration(mut self, iteration: u32) -> TestInput {
        self.input.iteration = iteration;
        self
    }

    /// The signal's name.
    pub fn signal(mut self, name: &str) -> TestInput {
        self.input.signal = name.into();
        self
    }

    /// Which paths count as test files (default: under a `tests/` directory),
    /// as the skill's `test_patterns` decide on the host.
    pub fn tests_are(mut self, is_test: fn(&str) -> bool) -> TestInput {
        self.is_test = is_test;
        self
    }

    /// The patch, from a unified diff as `git diff` prints it.
    ///
    /// # Panics
    /// When the diff does not parse: a test's own input is wrong.
    pub fn diff(mut self, unified: &str) -> TestInput {
        let files = diff::parse(unified).unwrap_or_else(|e| panic!("TestInput::diff: {e}"));
        self.input.patch = Patch {
            base: "0000000000000000000000000000000000000000".into(),
            raw: unified.into(),
            files,
            ..Patch::default()
        };
        self
    }

    /// One more event, its index set to its place in the stream.
    pub fn event(mut self, mut event: Event) -> TestInput {
        event.index = self.events.len();
        self.events.push(event);
        self
    }

    /// A message from `source` (`user`, `agent`, ...).
    pub fn message(self, source: &str, text: &str) -> TestInput {
        let mut event = Event::new(0, EventKind::Message);
        event.source = Some(source.into());
        event.text = Some(text.into());
        self.event(event)
    }

    /// A shell command the agent ran, and its result.
    pub fn command(self, command: &str, exit_code: i64, output: &str) -> TestInput {
        let id = format!("call-{}", self.events.len());
        let mut action = Event::new(0, EventKind::Action);
        action.source = Some("agent".into());
        action.tool = Some("terminal".into());
        action.call_id = Some(id.clone());
        action.arguments = Some(json!({ "command": command }));
        let mut observation = Event::new(0, EventKind::Observation);
        observation.source = Some("environment".into());
        observation.tool = Some("terminal".into());
        observation.call_id = Some(id);
        observation.output = Some(output.into());
        observation.exit_code = Some(exit_code);
        self.event(action).event(observation)
    }

    /// The agent's declaration that it is done.
    pub fn finish(self, text: &str) -> TestInput {
        let mut event = Event::new(0, EventKind::Finish);
        event.source = Some("agent".into());
        event.text = Some(text.into());
        self.event(event)
    }

    /// The input, as a detector receives it.
    pub fn build(mut self) -> DetectorInput {
        for file in &mut self.input.patch.files {
            file.is_test = (self.is_test)(&file.path);
        }
        self.input.inline_events = Some(self.events);
        self.input
    }

    /// Run `detect` on the input through the same JSON encoding the host
    /// uses, so a field the detector cannot decode fails here too.
    pub fn run<F>(self, detect: F) -> Result<DetectorOutput, String>
    where
        F: Fn(&DetectorInput) -> Result<DetectorOutput, String>,
    {
        let wire = serde_json::to_string(&self.build()).map_err(|e| e.to_string())?;
        let out = crate::run_detector(&wire, detect)?;
        serde_json::from_str(&out).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_round_trips_the_wire() {
        let diff = "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
        let input = TestInput::new()
            .config(json!({"k": 1}))
            .iteration(3)
            .diff(diff)
            .message("user", "fix it")
            .command("pytest", 1, "1 failed")
            .finish("done");
        let out = input
            .run(|i| {
                let events = i.events()?;
                assert_eq!(events.len(), 4);
                assert_eq!(events[1].command(), Some("pytest"));
                assert_eq!(events[2].exit_code, Some(1));
                assert_eq!(events[3].index, 3);
                assert!(i.patch.files[0].is_test);
                assert_eq!((i.iteration, &i.config), (3, &json!({"k": 1})));
                Ok(DetectorOutput::pass())
            })
            .unwrap();
        assert!(!out.triggered);
    }
}
