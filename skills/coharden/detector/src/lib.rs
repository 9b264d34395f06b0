//! CoHarden as one hard gate: lax-init (Round 0, test first), bootstrap
//! (Round 1) and mutant-driven hardening (Rounds 1..K) with the Temporal
//! Matrix, one round per finish call, the round state kept as JSON between
//! calls; and its ablations (no lax-init, no hardening) as configuration.
//! See the skill's README for the protocol and its configuration.

pub mod carry;
pub mod change;
pub mod config;
pub mod decide;
pub mod evaluate;
pub mod hardening;
pub mod issue;
pub mod llm;
pub mod matrix;
pub mod outcome;
pub mod pool;
pub mod prompts;
pub mod report;
pub mod round0;
pub mod state;

use config::Config;
use critic_sdk::{DetectorInput, DetectorOutput};
use prompts::Prompts;
use serde_json::{json, Value};
use state::{Phase, State, TestFiles};

/// What every step of the protocol reads.
pub struct Ctx<'a> {
    /// The host's input.
    pub input: &'a DetectorInput,
    /// The signal's configuration.
    pub config: Config,
    /// The templates.
    pub prompts: Prompts,
}

/// A step's answer before the state is attached: fire with a follow-up, or
/// pass with a summary; plus evidence and feedback files.
pub struct Step {
    /// Follow-up when the finish is rejected; `None` accepts.
    pub followup: Option<String>,
    /// One line for the verdict.
    pub summary: String,
    /// Evidence.
    pub metadata: Value,
    /// Feedback files (path under the skill's feedback dir, content).
    pub artifacts: Vec<(String, String)>,
    /// The agent's test in this finish, when it was read.
    pub tests: TestFiles,
}

impl Step {
    /// Reject with `followup`.
    pub fn reject(summary: impl Into<String>, followup: String) -> Step {
        Step {
            followup: Some(followup),
            summary: summary.into(),
            metadata: Value::Null,
            artifacts: Vec::new(),
            tests: TestFiles::new(),
        }
    }

    /// Accept.
    pub fn accept(summary: impl Into<String>) -> Step {
        Step {
            followup: None,
            summary: summary.into(),
            metadata: Value::Null,
            artifacts: Vec::new(),
            tests: TestFiles::new(),
        }
    }

    /// Attach evidence.
    pub fn with_metadata(mut self, metadata: Value) -> Step {
        self.metadata = metadata;
        self
    }

    /// Record the agent's test of this finish.
    pub fn with_tests(mut self, tests: TestFiles) -> Step {
        self.tests = tests;
        self
    }
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    config.validate()?;
    let prompts = prompts::load(&config.templates)?;
    let (mut state, reset) = State::load(&input.state, &input.patch.base, config.lax_init)?;
    let ctx = Ctx {
        input,
        config,
        prompts,
    };
    let round = state.round;
    let step = match state.phase {
        Phase::LaxInit => round0::evaluate(&ctx, &mut state)?,
        Phase::Hardening => hardening::evaluate(&ctx, &mut state)?,
        Phase::Done => Step::accept(format!(
            "CoHarden already accepted this session in round {}; nothing left to check",
            state.rounds.last().map_or(0, |r| r.round)
        )),
    };
    let (outcome, final_test) = outcome::of(&state, &step.tests, &ctx.config.test_file);
    if state.phase == Phase::Done && state.outcome.is_none() {
        state.outcome = Some(outcome.clone());
    }
    let mut metadata = json!({
        "arm": ctx.config.arm(),
        "summary": step.summary,
        "round": round,
        "phase": state.phase,
        "state_reset": reset,
        "inconclusive_count": state.inconclusive_count,
        "outcome": outcome,
    });
    if let (Value::Object(m), Value::Object(extra)) = (&mut metadata, step.metadata) {
        m.extend(extra);
    }
    let mut out = match step.followup {
        Some(text) => DetectorOutput::fire(text),
        None => DetectorOutput::pass(),
    }
    .with_metadata(metadata)
    .with_state(state.to_value());
    for (path, content) in step.artifacts.into_iter().chain(final_test) {
        out = out.with_artifact(path, content);
    }
    Ok(out)
}

critic_sdk::export_detector!(detect);
