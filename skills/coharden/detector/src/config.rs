//! The signal's `config` block in `critic.yaml`, with the protocol's defaults
//! (K = 5 rounds, tau = 0.2, N = 3 samples per operator, the four targeted
//! operators, both phases on).

use critic_sdk::mutants::Operator;
use critic_sdk::reproduction::BugExit;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Where mutants come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The model when the host has one configured, else the deterministic operators.
    Auto,
    /// The deterministic operators only.
    Deterministic,
    /// The model only.
    Llm,
    /// Both pools, merged.
    Both,
}

/// How the mutant pool of a round is built.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mutation {
    /// Where mutants come from.
    pub source: Source,
    /// The operators in use, in the order follow-ups list them.
    pub operators: Vec<Operator>,
    /// Samples (model) or picks (deterministic) per operator: N.
    pub samples: u32,
    /// Sampling temperature for the model.
    pub temperature: f64,
    /// Cap on each model answer.
    pub max_tokens: u32,
}

impl Default for Mutation {
    fn default() -> Mutation {
        Mutation {
            source: Source::Auto,
            operators: vec![
                Operator::SymptomSuppression,
                Operator::IncompleteFix,
                Operator::InputShortcut,
                Operator::BehaviorSubstitution,
            ],
            samples: 3,
            temperature: 1.0,
            max_tokens: 4096,
        }
    }
}

/// The detector's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Hardening rounds before the budget runs out: K.
    pub max_rounds: u32,
    /// Laxity above which a round is a regression: tau.
    pub tau: f64,
    /// The test file prompts ask for; it must match the skill's `test_patterns`.
    pub test_file: String,
    /// The command that runs the reproduction test, from the repository root.
    pub test_command: Vec<String>,
    /// Which exit means "bug present": `nonzero` (any exit but 0 that is not
    /// a crash of the test itself) or one code.
    pub bug_exit_code: BugExit,
    /// Per-run time limit, seconds.
    pub test_timeout_secs: u64,
    /// Characters of command output quoted in a follow-up.
    pub output_tail_chars: usize,
    /// Suffixes of the source files the operators mutate.
    pub python_suffixes: Vec<String>,
    /// The issue text; by default the `<issue_description>` block of the
    /// first user message, or that whole message.
    pub issue: Option<String>,
    /// Phase 1: a test alone first (Round 0). Off: the first finish is a
    /// joint round whose test becomes the reference (the "w/o lax-init" ablation).
    pub lax_init: bool,
    /// Phase 2: mutant-driven hardening. Off: the first round whose pair
    /// holds fail-to-pass is accepted, with no mutants (the "w/o hardening" ablation).
    pub hardening: bool,
    /// The mutant pool.
    pub mutation: Mutation,
    /// Replacements for the shipped templates, by name (`hardening`, `operators/incomplete_fix`, ...).
    pub templates: BTreeMap<String, String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_rounds: 5,
            tau: 0.2,
            test_file: "reproduction.py".into(),
            test_command: vec!["python3".into(), "reproduction.py".into()],
            bug_exit_code: BugExit::Nonzero,
            test_timeout_secs: 60,
            output_tail_chars: 2000,
            python_suffixes: vec![".py".into()],
            issue: None,
            lax_init: true,
            hardening: true,
            mutation: Mutation::default(),
            templates: BTreeMap::new(),
        }
    }
}

impl Config {
    /// Check the values serde cannot.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |field: &str, why: &str| Err(format!("config.{field}: {why}"));
        if self.max_rounds == 0 {
            return bad("max_rounds", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.tau) {
            return bad("tau", "must be between 0 and 1");
        }
        if self.test_command.is_empty() || self.test_command[0].is_empty() {
            return bad(
                "test_command",
                "must name a program, e.g. [python3, reproduction.py]",
            );
        }
        if let Err(why) = self.bug_exit_code.check() {
            return bad("bug_exit_code", &why);
        }
        if self.test_timeout_secs == 0 {
            return bad("test_timeout_secs", "must be at least 1");
        }
        if self.mutation.operators.is_empty() {
            return bad("mutation.operators", "name at least one operator");
        }
        if self.mutation.source == Source::Deterministic
            && self.mutation.operators.contains(&Operator::Vanilla)
        {
            return bad(
                "mutation.operators",
                "`vanilla` is a model's free-form repair and has no deterministic form; \
                 use mutation.source auto, llm or both, or drop it",
            );
        }
        if self.mutation.samples == 0 {
            return bad("mutation.samples", "must be at least 1");
        }
        Ok(())
    }

    /// The arm this configuration runs: CoHarden, or the ablation it is.
    pub fn arm(&self) -> &'static str {
        match (self.lax_init, self.hardening) {
            (true, true) => "coharden",
            (false, true) => "coharden-no-lax-init",
            (true, false) => "coharden-no-hardening",
            (false, false) => "coharden-no-lax-init-no-hardening",
        }
    }

    /// The test command as one line, for prompts.
    pub fn command_line(&self) -> String {
        self.test_command.join(" ")
    }

    /// The error for a test run that could not start (`why`): the setup is
    /// wrong, not the agent's work.
    pub fn cannot_run(&self, why: &str) -> String {
        format!(
            "cannot run the test command `{}` in a scratch copy: {why}; check config.test_command",
            self.command_line()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_paper() {
        let c: Config = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!((c.max_rounds, c.tau, c.mutation.samples), (5, 0.2, 3));
        assert_eq!(c.mutation.operators.len(), 4);
        assert_eq!(c.mutation.source, Source::Auto);
        assert_eq!(c.bug_exit_code, BugExit::Nonzero);
        assert!(!c.mutation.operators.contains(&Operator::Vanilla));
        assert_eq!(c.arm(), "coharden");
        c.validate().unwrap();
    }

    #[test]
    fn bad_values_name_the_field() {
        let c: Config = serde_json::from_value(serde_json::json!({"tau": 1.5})).unwrap();
        assert!(c.validate().unwrap_err().starts_with("config.tau"));
        let e = serde_json::from_value::<Config>(serde_json::json!({"rounds": 3})).unwrap_err();
        assert!(e.to_string().contains("unknown field `rounds`"), "{e}");
        let e = serde_json::from_value::<Config>(
            serde_json::json!({"mutation": {"operators": ["flip"]}}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown variant `flip`"), "{e}");
        let c: Config = serde_json::from_value(serde_json::json!({"bug_exit_code": 0})).unwrap();
        assert!(c
            .validate()
            .unwrap_err()
            .starts_with("config.bug_exit_code"));
        let c: Config = serde_json::from_value(serde_json::json!({"bug_exit_code": 2})).unwrap();
        assert_eq!(c.bug_exit_code, BugExit::Code(2));
    }
}
