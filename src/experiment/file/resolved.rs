//! An experiment file once resolved: the experiment, its agents, models,
//! arms and budgets as the runner reads them, and why a file can fail.

use crate::grading::dataset::Instance;
use crate::skill::yaml::Position;
use crate::skill::{Issue, Issues};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default limit of one agent turn.
pub(super) const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default limit of one grading test run.
pub(super) const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Default turn budget of a run.
pub(super) const DEFAULT_TURNS: u32 = 20;
/// A resolved experiment file.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The file.
    pub path: PathBuf,
    /// Its name.
    pub name: String,
    /// The instances file.
    pub instances: PathBuf,
    /// Which instances run.
    pub filter: Filter,
    /// Local clones.
    pub repos: PathBuf,
    /// The default interpreter.
    pub python: Option<PathBuf>,
    /// The agent.
    pub agent: Agent,
    /// The model, for adapters that take one.
    pub model: Option<Model>,
    /// The arms, in file order.
    pub arms: Vec<Arm>,
    /// Runs per (instance, arm).
    pub samples: u32,
    /// The seed handed to agents.
    pub seed: u64,
    /// Per-run limits.
    pub budget: Budget,
    /// Each grading run's limit.
    pub test_timeout: Duration,
    /// How each repository's tests run and their environments are made:
    /// repository, then version (`*`: any).
    pub environments: BTreeMap<String, BTreeMap<String, Environment>>,
    /// The containers `--env container` grades in (default: SWE-bench's
    /// images).
    pub container: crate::grading::container::Spec,
    /// `evaluate.mpe`: the MPE class of each run's own test.
    pub evaluate_mpe: Option<MpeSettings>,
    /// The file as JSON with its paths resolved (the manifest records it).
    pub resolved: Value,
}

/// How one repository's (or version's) tests run and environment is made;
/// an instance's own fields win over these.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// The base interpreter (or, with nothing to build, the interpreter).
    pub python: Option<PathBuf>,
    /// The environment's build.
    pub spec: crate::grading::environment::Spec,
    /// Shell lines run before each grading test command.
    pub eval_commands: Vec<String>,
    /// The test command before the test files.
    pub test_cmd: Option<Vec<String>>,
    /// How its log is read.
    pub log_parser: Option<String>,
}

impl Experiment {
    /// The environment block for `instance`: its repository's, for its
    /// version or `*`.
    pub fn environment_of(&self, instance: &Instance) -> Option<&Environment> {
        let versions = self.environments.get(&instance.repo)?;
        instance
            .version
            .as_deref()
            .and_then(|v| versions.get(v))
            .or_else(|| versions.get("*"))
    }

    /// `instance` with what its environment block gives and its record
    /// does not.
    pub fn with_environment(&self, mut instance: Instance) -> Instance {
        if let Some(env) = self.environment_of(&instance) {
            let fill = |mine: &mut Vec<String>, theirs: &Vec<String>| {
                if mine.is_empty() {
                    *mine = theirs.clone();
                }
            };
            fill(&mut instance.pre_install, &env.spec.pre_install);
            fill(&mut instance.install, &env.spec.install);
            fill(&mut instance.eval_commands, &env.eval_commands);
            if instance.requirements.is_none() {
                instance.requirements = env.spec.requirements.clone();
            }
            if instance.test_cmd.is_none() {
                instance.test_cmd = env.test_cmd.clone();
            }
            if instance.log_parser.is_none() {
                instance.log_parser = env.log_parser.clone();
            }
        }
        instance
    }
}

impl Experiment {
    /// An experiment with no agent and no arm, to grade predictions made
    /// elsewhere: the instances in `instances`, clones under `repos`.
    pub fn for_grading(
        instances: &Path,
        repos: &Path,
        python: Option<PathBuf>,
        test_timeout: Option<Duration>,
    ) -> Experiment {
        let resolved = serde_json::json!({
            "instances": instances, "repos": repos, "python": python,
        });
        Experiment {
            path: instances.to_path_buf(),
            name: "grade".into(),
            instances: instances.to_path_buf(),
            filter: Filter::default(),
            repos: repos.to_path_buf(),
            python,
            agent: Agent {
                adapter: Adapter::Command,
                program: None,
                command: Vec::new(),
                timeout: DEFAULT_TURN_TIMEOUT,
                env: BTreeMap::new(),
                network: Vec::new(),
                limits: Default::default(),
            },
            model: None,
            arms: Vec::new(),
            samples: 1,
            seed: 0,
            budget: Budget {
                turns: DEFAULT_TURNS,
                wall_time: None,
                tokens: None,
                cost: None,
                total_cost: None,
            },
            test_timeout: test_timeout.unwrap_or(DEFAULT_TEST_TIMEOUT),
            environments: BTreeMap::new(),
            container: crate::grading::container::Spec::default(),
            evaluate_mpe: None,
            resolved,
        }
    }
}

/// Instance selection.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Ids to keep (`None`: all).
    pub ids: Option<Vec<String>>,
    /// Then `[start, end)` of what is left.
    pub slice: (Option<usize>, Option<usize>),
}

/// How the agent is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adapter {
    /// A program run once per turn.
    Command,
    /// Claude Code in print mode, the critic as its Stop hook.
    ClaudeCode,
    /// `codex exec`, the critic as its Stop hook.
    Codex,
    /// mini-swe-agent's `mini` with the critic agent class.
    MiniSweAgent,
    /// An OpenHands SDK conversation, the critic as its Stop hook.
    Openhands,
}

impl Adapter {
    /// Its name in the experiment file.
    pub fn name(self) -> &'static str {
        match self {
            Adapter::Command => "command",
            Adapter::ClaudeCode => "claude-code",
            Adapter::Codex => "codex",
            Adapter::MiniSweAgent => "mini-swe-agent",
            Adapter::Openhands => "openhands",
        }
    }
}

/// The agent and its adapter.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The adapter.
    pub adapter: Adapter,
    /// The agent program of `claude-code` and `codex`.
    pub program: Option<PathBuf>,
    /// The `command` adapter's argv (empty for the others).
    pub command: Vec<String>,
    /// One turn's limit.
    pub timeout: Duration,
    /// Added to its environment.
    pub env: BTreeMap<String, String>,
    /// More endpoints a confined agent may reach besides its model's (see
    /// [`crate::experiment::adapters::confined`]).
    pub network: Vec<String>,
    /// What a run may take of the host (see [`crate::experiment::limits`]).
    pub limits: crate::experiment::limits::Limits,
}

/// The model adapters are pointed at.
#[derive(Debug, Clone, Deserialize)]
pub struct Model {
    /// Its API's base URL.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// USD per million tokens.
    #[serde(default)]
    pub price: Option<Price>,
}

/// A model's price, USD per million tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Price {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
}

/// One arm: a skill plus overrides.
#[derive(Debug, Clone)]
pub struct Arm {
    /// Its name.
    pub name: String,
    /// The skill directory.
    pub skill: PathBuf,
    /// Replaces the skill's `max_iterations`.
    pub max_iterations: Option<u32>,
    /// Merged into the signal's config (or keyed by signal).
    pub config: Option<Map<String, Value>>,
    /// A task template instead of the skill's.
    pub task: Option<PathBuf>,
    /// More template variables.
    pub vars: Map<String, Value>,
}

/// How `evaluate.mpe` classes the runs' own tests.
#[derive(Debug, Clone, Copy)]
pub struct MpeSettings {
    /// Where the pool comes from: the SDK's deterministic operators
    /// (offline; the default) or the experiment's `model`.
    pub operators: crate::mpe::pool::Source,
    /// Admissible variants wanted per operator.
    pub samples_per_operator: u32,
    /// The laxity cutoff.
    pub tau: crate::mpe::results::Tau,
}

/// Per-run limits.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Agent turns.
    pub turns: u32,
    /// The whole run.
    pub wall_time: Option<Duration>,
    /// Tokens a run may use.
    pub tokens: Option<u64>,
    /// USD a run may cost.
    pub cost: Option<f64>,
    /// USD the experiment may cost before no new run starts.
    pub total_cost: Option<f64>,
}

/// Why an experiment file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be read.
    #[error("{path}: cannot read the experiment file: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// YAML syntax.
    #[error("{path}:{}:{}: YAML syntax error: {message}", position.line, position.column)]
    Yaml {
        /// The file.
        path: PathBuf,
        /// Where.
        position: Position,
        /// What.
        message: String,
    },
    /// Schema or semantic problems, all of them.
    #[error("{path}: invalid experiment file:\n{}", Issues(issues, path))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem.
        issues: Vec<Issue>,
    },
}
