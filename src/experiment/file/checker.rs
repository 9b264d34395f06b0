//! The experiment file's document resolved into an [`Experiment`]: every
//! field checked beyond the schema, each problem kept with its place so all
//! are reported at once.

use super::raw::{DurationSpec, Raw, RawArm, RawEnvironment};
use super::resolved::{
    Adapter, Agent, Arm, Budget, Environment, Experiment, Filter, MpeSettings,
    DEFAULT_TEST_TIMEOUT, DEFAULT_TURNS, DEFAULT_TURN_TIMEOUT,
};
use crate::skill::yaml::Located;
use crate::skill::Issue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Resolution with its issues.
pub(super) struct Checker<'a> {
    pub(super) doc: &'a Located,
    pub(super) dir: &'a Path,
    pub(super) issues: Vec<Issue>,
}
impl Checker<'_> {
    pub(super) fn issue(&mut self, field: &str, message: impl fmt::Display) {
        self.issues.push(Issue {
            position: self.doc.position(field),
            field: field.to_string(),
            message: message.to_string(),
        });
    }

    /// `value` against the file's directory.
    pub(super) fn path(&self, value: &str) -> PathBuf {
        self.dir.join(value)
    }

    /// A path that must exist as a file (`dir: false`) or directory.
    pub(super) fn existing(&mut self, field: &str, value: &str, dir: bool) -> PathBuf {
        let path = self.path(value);
        let ok = if dir { path.is_dir() } else { path.is_file() };
        if !ok {
            let what = if dir { "directory" } else { "file" };
            self.issue(
                field,
                format!(
                    "{} is not a {what} (paths are relative to the experiment file)",
                    path.display()
                ),
            );
        }
        path
    }

    /// An interpreter: a path relative to the file, or a bare name looked
    /// up on PATH, as a shell would.
    pub(super) fn interpreter(&mut self, field: &str, p: &str) -> PathBuf {
        let at = if p.contains('/') {
            Some(self.path(p))
        } else {
            on_path(p)
        };
        match at {
            Some(at) if at.is_file() => crate::grading::interpreter::in_real_dir(&at),
            _ => {
                self.issue(
                    field,
                    format!(
                        "{p} is not a file{} (give an interpreter's path, or a name on PATH)",
                        if p.contains('/') { "" } else { " on PATH" }
                    ),
                );
                self.path(p)
            }
        }
    }

    /// The `environments` block, each entry checked.
    pub(super) fn environments(
        &mut self,
        raw: BTreeMap<String, BTreeMap<String, RawEnvironment>>,
    ) -> BTreeMap<String, BTreeMap<String, Environment>> {
        let mut out = BTreeMap::new();
        for (repo, versions) in raw {
            let mut resolved = BTreeMap::new();
            for (version, e) in versions {
                let at = format!("/environments/{repo}/{version}");
                let python = e
                    .python
                    .as_deref()
                    .map(|p| self.interpreter(&format!("{at}/python"), p));
                let requirements = match e.requirements {
                    None => None,
                    Some(Value::String(s)) => Some(s),
                    Some(Value::Array(lines)) => Some(
                        lines
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|l| format!("{l}\n"))
                            .collect(),
                    ),
                    Some(_) => None,
                };
                let test_cmd = match e.test_cmd {
                    None => None,
                    Some(Value::String(s)) => match shlex::split(&s) {
                        Some(words) if !words.is_empty() => Some(words),
                        _ => {
                            self.issue(&format!("{at}/test_cmd"), "is not a valid shell word list");
                            None
                        }
                    },
                    Some(Value::Array(words)) => Some(
                        words
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                    ),
                    Some(_) => None,
                };
                if let Some(name) = &e.log_parser {
                    if crate::grading::log_parsers::LogFormat::of_name(name).is_none() {
                        self.issue(
                            &format!("{at}/log_parser"),
                            format!(
                                "`{name}` is not a log format grading reads; it reads {}",
                                crate::grading::log_parsers::LogFormat::names().join(", ")
                            ),
                        );
                    }
                }
                resolved.insert(
                    version,
                    Environment {
                        python,
                        spec: crate::grading::environment::Spec {
                            pre_install: e.pre_install,
                            requirements,
                            resolve: Vec::new(),
                            resolved_before: None,
                            install: e.install,
                        },
                        eval_commands: e.eval_commands,
                        test_cmd,
                        log_parser: e.log_parser,
                    },
                );
            }
            out.insert(repo, resolved);
        }
        out
    }

    pub(super) fn duration(
        &mut self,
        field: &str,
        spec: Option<DurationSpec>,
        default: Duration,
    ) -> Duration {
        match spec.map(|s| s.get()) {
            None => default,
            Some(Some(d)) if !d.is_zero() && d <= crate::frontend::MAX_TIME_LIMIT => d,
            Some(_) => {
                self.issue(field, "must be a positive duration of at most a day");
                default
            }
        }
    }

    pub(super) fn resolve(&mut self, raw: Raw, path: &Path) -> Experiment {
        let instances = self.existing("/instances", &raw.instances, false);
        let repos = self.existing("/repos", &raw.repos, true);
        let python = raw
            .python
            .as_deref()
            .map(|p| self.interpreter("/python", p));
        let slice = match raw.filter.slice.as_deref() {
            None => (None, None),
            Some(s) => {
                let (a, b) = s.split_once(':').unwrap_or((s, ""));
                let side = |t: &str, this: &mut Self| -> Option<usize> {
                    if t.is_empty() {
                        return None;
                    }
                    let n = t.parse().ok();
                    if n.is_none() {
                        this.issue("/filter/slice", format!("{t} is not an index"));
                    }
                    n
                };
                let (a, b) = (side(a, self), side(b, self));
                if let (Some(a), Some(b)) = (a, b) {
                    if a > b {
                        self.issue("/filter/slice", "start is past end");
                    }
                }
                (a, b)
            }
        };
        // `./agent` is the experiment's, not the workspace's.
        let relative = |word: &str| word.contains('/') && Path::new(word).is_relative();
        let mut command = raw.agent.command;
        if let Some(first) = command.first_mut().filter(|w| relative(w)) {
            *first = self.path(first).to_string_lossy().into_owned();
        }
        let adapter = raw.agent.adapter.unwrap_or(Adapter::Command);
        if adapter != Adapter::Command && raw.model.is_none() {
            self.issue(
                "/agent/adapter",
                format!(
                    "the {} adapter needs `model` (base_url and model)",
                    adapter.name()
                ),
            );
        }
        // The runner's model proxy calls it over HTTP(S).
        if let Some(Err(e)) = raw
            .model
            .as_ref()
            .map(|m| crate::experiment::model_proxy::split_base_url(&m.base_url))
        {
            self.issue("/model/base_url", e);
        }
        let program = raw.agent.program.map(|p| {
            if relative(&p) {
                self.path(&p)
            } else {
                PathBuf::from(p)
            }
        });
        let agent = Agent {
            adapter,
            program,
            command,
            timeout: self.duration("/agent/timeout", raw.agent.timeout, DEFAULT_TURN_TIMEOUT),
            env: raw.agent.env,
            network: raw.agent.network,
            limits: {
                let (limits, problems) = raw.agent.limits.resolve();
                for (field, e) in problems {
                    self.issue(&format!("/agent/limits/{field}"), e);
                }
                limits
            },
        };
        for (i, entry) in agent.network.iter().enumerate() {
            if let Err(e) = crate::experiment::adapters::confined::check_endpoint(entry) {
                self.issue(&format!("/agent/network/{i}"), e);
            }
        }
        let mut arms = Vec::new();
        for (name, value) in raw.arms {
            let at = format!("/arms/{name}");
            let arm: RawArm = match serde_json::from_value(value) {
                Ok(a) => a,
                Err(e) => {
                    self.issue(&at, e);
                    continue;
                }
            };
            let skill = self.existing(&format!("{at}/skill"), &arm.skill, true);
            match crate::skill::load(&skill) {
                Err(e) if skill.is_dir() => {
                    self.issue(&format!("{at}/skill"), format!("not a valid skill: {e}"))
                }
                Ok(loaded) => {
                    if let Some(config) = &arm.config {
                        let names: Vec<&str> = loaded
                            .manifest
                            .signals
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect();
                        if names.len() > 1 && config.keys().any(|k| !names.contains(&k.as_str())) {
                            self.issue(
                                &format!("{at}/config"),
                                format!(
                                    "the skill has several signals ({}): key the config by \
                                     signal name",
                                    names.join(", ")
                                ),
                            );
                        }
                    }
                    if arm.task.is_none() && !skill.join("templates/task.md.j2").is_file() {
                        self.issue(
                            &format!("{at}/skill"),
                            "the skill has no templates/task.md.j2; give the arm a `task` template",
                        );
                    }
                }
                Err(_) => {}
            }
            let task = arm
                .task
                .as_deref()
                .map(|t| self.existing(&format!("{at}/task"), t, false));
            arms.push(Arm {
                name,
                skill,
                max_iterations: arm.max_iterations,
                config: arm.config,
                task,
                vars: arm.vars,
            });
        }
        let budget = Budget {
            turns: raw.budget.turns.unwrap_or(DEFAULT_TURNS),
            wall_time: raw
                .budget
                .wall_time
                .map(|w| self.duration("/budget/wall_time", Some(w), DEFAULT_TURN_TIMEOUT)),
            tokens: raw.budget.tokens,
            cost: raw.budget.cost,
            total_cost: raw.budget.total_cost,
        };
        let test_timeout = self.duration("/test_timeout", raw.test_timeout, DEFAULT_TEST_TIMEOUT);
        let environments = self.environments(raw.environments);
        let mut resolved = self.doc.value.clone();
        let absolute = |p: &Path| Value::String(p.to_string_lossy().into_owned());
        resolved["instances"] = absolute(&instances);
        resolved["repos"] = absolute(&repos);
        if let Some(p) = &python {
            resolved["python"] = absolute(p);
        }
        if !agent.command.is_empty() {
            resolved["agent"]["command"] = serde_json::json!(agent.command);
        }
        if let Some(p) = &agent.program {
            resolved["agent"]["program"] = absolute(p);
        }
        for (repo, versions) in &environments {
            for (version, env) in versions {
                if let Some(p) = &env.python {
                    resolved["environments"][repo][version]["python"] = absolute(p);
                }
            }
        }
        for arm in &arms {
            resolved["arms"][&arm.name]["skill"] = absolute(&arm.skill);
            if let Some(t) = &arm.task {
                resolved["arms"][&arm.name]["task"] = absolute(t);
            }
        }
        Experiment {
            path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            name: raw.name,
            instances,
            filter: Filter {
                ids: raw.filter.ids,
                slice,
            },
            repos,
            python,
            agent,
            model: raw.model,
            arms,
            samples: raw.samples.unwrap_or(1),
            seed: raw.seed.unwrap_or(0),
            budget,
            test_timeout,
            environments,
            container: {
                let d = crate::grading::container::Spec::default();
                crate::grading::container::Spec {
                    engine: raw.container.engine.unwrap_or(d.engine),
                    image: raw.container.image.unwrap_or(d.image),
                    workdir: raw.container.workdir.unwrap_or(d.workdir),
                    setup: raw.container.setup.unwrap_or(d.setup),
                }
            },
            evaluate_mpe: self.mpe_settings(raw.evaluate.mpe),
            resolved,
        }
    }

    /// `evaluate.mpe`: `true`, or settings (the schema checked their shape).
    pub(super) fn mpe_settings(&mut self, value: Option<Value>) -> Option<MpeSettings> {
        use crate::mpe::pool::Source;
        let defaults = MpeSettings {
            operators: Source::Deterministic,
            samples_per_operator: 10,
            tau: crate::mpe::results::Tau::Median,
        };
        match value? {
            Value::Bool(false) => None,
            Value::Bool(true) => Some(defaults),
            v => {
                let operators = match v["operators"].as_str() {
                    Some("model") => Source::Model,
                    _ => Source::Deterministic,
                };
                let tau = match &v["tau"] {
                    Value::Number(n) => n
                        .as_f64()
                        .map_or(defaults.tau, crate::mpe::results::Tau::Fixed),
                    _ => defaults.tau,
                };
                Some(MpeSettings {
                    operators,
                    samples_per_operator: v["samples_per_operator"]
                        .as_u64()
                        .map_or(defaults.samples_per_operator, |n| n as u32),
                    tau,
                })
            }
        }
    }
}

/// The first `name` on PATH.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
