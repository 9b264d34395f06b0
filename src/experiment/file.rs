//! The experiment file: YAML checked against `schemas/experiment.schema.json`,
//! then resolved (paths made absolute against the file's directory, each arm's
//! skill loaded) with every problem reported at its line and column.

mod checker;

use checker::Checker;

use crate::grading::dataset::Instance;
use crate::skill::schema::{self, BundledSchema};
use crate::skill::yaml::{self, Located, Position};
use crate::skill::{Issue, Issues};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema, as shipped.
pub const SCHEMA: &str = include_str!("../../schemas/experiment.schema.json");

static EXPERIMENT_SCHEMA: BundledSchema =
    BundledSchema::new("schemas/experiment.schema.json", SCHEMA);

/// The largest experiment file read.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// Default limit of one agent turn.
const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default limit of one grading test run.
const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Default turn budget of a run.
const DEFAULT_TURNS: u32 = 20;

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

#[derive(Deserialize)]
#[serde(untagged)]
enum DurationSpec {
    Seconds(f64),
    Text(String),
}

impl DurationSpec {
    fn get(&self) -> Option<Duration> {
        match self {
            DurationSpec::Seconds(s) => Duration::try_from_secs_f64(*s).ok(),
            DurationSpec::Text(t) => {
                let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
                    (n, 0.001)
                } else if let Some(n) = t.strip_suffix('s') {
                    (n, 1.0)
                } else if let Some(n) = t.strip_suffix('m') {
                    (n, 60.0)
                } else {
                    (t.strip_suffix('h')?, 3600.0)
                };
                Duration::try_from_secs_f64(num.parse::<f64>().ok()? * scale).ok()
            }
        }
    }
}

#[derive(Deserialize)]
struct Raw {
    name: String,
    instances: String,
    #[serde(default)]
    filter: RawFilter,
    repos: String,
    python: Option<String>,
    agent: RawAgent,
    model: Option<Model>,
    arms: Map<String, Value>,
    samples: Option<u32>,
    seed: Option<u64>,
    #[serde(default)]
    budget: RawBudget,
    test_timeout: Option<DurationSpec>,
    #[serde(default)]
    environments: BTreeMap<String, BTreeMap<String, RawEnvironment>>,
    #[serde(default)]
    container: RawContainer,
    #[serde(default)]
    evaluate: RawEvaluate,
}

#[derive(Deserialize, Default)]
struct RawEvaluate {
    mpe: Option<Value>,
}

#[derive(Deserialize, Default)]
struct RawEnvironment {
    python: Option<String>,
    #[serde(default)]
    pre_install: Vec<String>,
    requirements: Option<Value>,
    #[serde(default)]
    install: Vec<String>,
    #[serde(default)]
    eval_commands: Vec<String>,
    test_cmd: Option<Value>,
    log_parser: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawContainer {
    engine: Option<String>,
    image: Option<String>,
    workdir: Option<String>,
    setup: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
struct RawFilter {
    ids: Option<Vec<String>>,
    slice: Option<String>,
}

#[derive(Deserialize)]
struct RawAgent {
    adapter: Option<Adapter>,
    program: Option<String>,
    #[serde(default)]
    command: Vec<String>,
    timeout: Option<DurationSpec>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    network: Vec<String>,
    #[serde(default)]
    limits: crate::experiment::limits::RawLimits,
}

#[derive(Deserialize, Default)]
struct RawBudget {
    turns: Option<u32>,
    wall_time: Option<DurationSpec>,
    tokens: Option<u64>,
    cost: Option<f64>,
    total_cost: Option<f64>,
}

#[derive(Deserialize)]
struct RawArm {
    skill: String,
    max_iterations: Option<u32>,
    config: Option<Map<String, Value>>,
    task: Option<String>,
    #[serde(default)]
    vars: Map<String, Value>,
}

/// Read and resolve the experiment file at `path`.
pub fn load(path: &Path) -> Result<Experiment, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = crate::sys::bounded_read::read_regular_file(path, MAX_FILE_BYTES).map_err(io)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    parse(&text, path)
}

/// Resolve experiment `text`, read from `path` (paths are relative to its
/// directory).
pub fn parse(text: &str, path: &Path) -> Result<Experiment, FileError> {
    let doc = yaml::parse(text).map_err(|e| FileError::Yaml {
        path: path.to_path_buf(),
        position: e.position,
        message: e.message,
    })?;
    let invalid = |issues| FileError::Invalid {
        path: path.to_path_buf(),
        issues,
    };
    let issues = EXPERIMENT_SCHEMA.issues(&doc, describe);
    if !issues.is_empty() {
        return Err(invalid(issues));
    }
    let raw: Raw = serde_json::from_value(doc.value.clone()).map_err(|e| {
        invalid(vec![Issue {
            position: Position { line: 1, column: 1 },
            field: String::new(),
            message: format!("does not match the experiment structure: {e}"),
        }])
    })?;
    let dir = path
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut check = Checker {
        doc: &doc,
        dir: &dir,
        issues: Vec::new(),
    };
    let experiment = check.resolve(raw, path);
    if !check.issues.is_empty() {
        let mut issues = check.issues;
        issues.sort_by_key(|i| (i.position.line, i.position.column));
        return Err(invalid(issues));
    }
    Ok(experiment)
}

/// A schema error in words an experiment's author can act on.
fn describe(error: &jsonschema::ValidationError, pointer: &str) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::OneOfNotValid { .. } if pointer.ends_with("timeout") || pointer.ends_with("time") => {
            "must be a duration like \"90s\", \"30m\", \"2h\", or a positive number of seconds"
                .into()
        }
        K::PropertyNames { .. } | K::Pattern { .. } if pointer.starts_with("/arms") => {
            "an arm's name is lowercase letters, digits, '-' and '_'".into()
        }
        _ => schema::describe(error),
    }
}

/// The first `name` on PATH.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests;
