//! The signal's `config` block in `critic.yaml`.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The detector's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The function under test: `path/to/module.py::function` or
    /// `path/to/module.py::Class.method` (the path relative to the
    /// workspace).
    pub target: String,
    /// The test command; the agent's test files are appended. Its first
    /// word is the Python that runs it under coverage.py.
    #[serde(default = "default_test_command")]
    pub test_command: Vec<String>,
    /// Refinements without new coverage allowed per slice before the
    /// session is accepted as far as it got (the seed's `limit`).
    #[serde(default = "default_limit")]
    pub limit: u32,
    /// Time for one test run under coverage.
    #[serde(default = "default_timeout")]
    pub test_timeout_secs: u64,
    /// Most characters of failing tests' errors quoted in a follow-up.
    #[serde(default = "default_error_chars")]
    pub error_chars: usize,
    /// How dependencies from the project's other modules are summarized.
    #[serde(default)]
    pub summaries: Summaries,
    /// Replacement templates, by name (see `templates/`).
    #[serde(default)]
    pub templates: BTreeMap<String, String>,
}

/// Who summarizes the project's other modules' definitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Summaries {
    /// The model when the skill may use it and the host has one, else the
    /// signature and the docstring's first line.
    #[default]
    Auto,
    /// The signature and the docstring's first line.
    Deterministic,
    /// The model only: a check fails without one.
    Llm,
}

fn default_test_command() -> Vec<String> {
    ["python3", "-m", "pytest", "-q"].map(String::from).to_vec()
}

fn default_limit() -> u32 {
    5
}

fn default_timeout() -> u64 {
    300
}

fn default_error_chars() -> usize {
    4000
}

impl Config {
    /// The target's file and function.
    pub fn target(&self) -> Result<(&str, &str), String> {
        match self.target.split_once("::") {
            Some((path, function)) if !path.is_empty() && !function.is_empty() => {
                Ok((path, function))
            }
            _ => Err(format!(
                "config.target: {:?} is not `path/to/module.py::function` (or `::Class.method`)",
                self.target
            )),
        }
    }

    /// Check what deserializing cannot.
    pub fn validate(&self) -> Result<(), String> {
        self.target()?;
        let Some(python) = self.test_command.first() else {
            return Err("config.test_command: empty; the default is `python3 -m pytest -q`".into());
        };
        let program = python.rsplit('/').next().unwrap_or(python);
        if !program.starts_with("python") {
            return Err(format!(
                "config.test_command: starts with {python:?}, not a Python; coverage.py runs the \
                 tests, so the command must start with the interpreter (`python3 -m pytest -q`)"
            ));
        }
        if self.limit == 0 {
            return Err("config.limit: must be at least 1 (the seed uses 5)".into());
        }
        Ok(())
    }
}
