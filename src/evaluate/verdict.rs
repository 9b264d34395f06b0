//! The verdict a critic returns for one finish; `schemas/verdict.schema.json`
//! describes its JSON form.

use crate::detector::wasm::cache::CacheOutcome;
use crate::skill::SignalKind;
pub use crate::sys::terminal_text::{escape_terminal, one_line};
use critic_sdk::SkillInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happened to one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalStatus {
    /// Ran and fired.
    Triggered,
    /// Ran and did not fire.
    Passed,
    /// Failed to run; `on_error` decided `triggered`.
    Error,
    /// Not run because an earlier hard gate fired.
    Skipped,
}

/// One signal's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignalResult {
    /// Signal name.
    pub name: String,
    /// Gate or soft.
    #[serde(rename = "type")]
    pub kind: SignalKind,
    /// Soft weight (0 for gates).
    pub weight: f64,
    /// Outcome.
    pub status: SignalStatus,
    /// Whether it counts as fired (errors count per `on_error`).
    pub triggered: bool,
    /// The detector's text for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followup_text: Option<String>,
    /// The detector's evidence.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// Why it failed, for `status: error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the call, milliseconds.
    pub duration_ms: f64,
    /// Whether the compiled detector came from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_cache: Option<CacheOutcome>,
    /// Feedback files the host wrote for this signal (workspace-relative).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
}

impl SignalResult {
    /// A result with no evidence yet; `triggered` follows `status`.
    pub fn new(name: &str, kind: SignalKind, weight: f64, status: SignalStatus) -> SignalResult {
        SignalResult {
            name: name.to_string(),
            kind,
            weight,
            status,
            triggered: status == SignalStatus::Triggered,
            followup_text: None,
            metadata: Value::Null,
            error: None,
            duration_ms: 0.0,
            compile_cache: None,
            artifacts: Vec::new(),
        }
    }
}

/// The decision on one finish.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the finish is accepted.
    pub accepted: bool,
    /// Score in [0, 1].
    pub score: f64,
    /// The skill's threshold.
    pub threshold: f64,
    /// One line for humans.
    pub message: String,
    /// The agent's next user turn, when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followup: Option<String>,
    /// 1-based finish call within the session.
    pub iteration: u32,
    /// The skill's rejection budget.
    pub max_iterations: u32,
    /// Accepted only because the rejection budget ran out.
    pub budget_exhausted: bool,
    /// The skill.
    pub skill: SkillInfo,
    /// The session.
    pub session: String,
    /// Per-signal results, in manifest order.
    pub signals: Vec<SignalResult>,
    /// Problems the host handled (corrupt state moved aside, resets...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Host-side facts: patch summary, timings.
    pub metadata: Value,
}

impl Verdict {
    /// Human-readable rendering for `--output text`. Detector-provided text
    /// has its control characters escaped, so it cannot drive the terminal
    /// (clear the screen, set the title) or forge lines of the report.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} {} (score {:.2}, threshold {:.2}, finish {} of session {:?})\n",
            if self.accepted { "ACCEPT" } else { "REJECT" },
            one_line(&self.skill.name),
            self.score,
            self.threshold,
            self.iteration,
            self.session
        );
        out.push_str(&format!("  {}\n", one_line(&self.message)));
        for s in &self.signals {
            let mark = match s.status {
                SignalStatus::Triggered => "fired",
                SignalStatus::Passed => "passed",
                SignalStatus::Error => "error",
                SignalStatus::Skipped => "skipped",
            };
            out.push_str(&format!(
                "  - {:<24} {:<8} {:>7.1} ms",
                one_line(&s.name),
                mark,
                s.duration_ms
            ));
            if let Some(e) = &s.error {
                out.push_str(&format!("  {}", one_line(e)));
            }
            out.push('\n');
            // A detector's own one-line account, by convention `metadata.summary`.
            if let Some(summary) = s.metadata.get("summary").and_then(Value::as_str) {
                out.push_str(&format!("      {}\n", one_line(summary)));
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("  warning: {}\n", one_line(w)));
        }
        if let Some(f) = &self.followup {
            out.push_str("\nfollow-up for the agent:\n");
            for line in f.lines() {
                out.push_str(&format!("  | {}\n", one_line(line)));
            }
        }
        out
    }
}
