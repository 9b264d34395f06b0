//! An experiment file as written: what serde reads from it, before the
//! checker resolves it.

use super::resolved::{Adapter, Model};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum DurationSpec {
    Seconds(f64),
    Text(String),
}

impl DurationSpec {
    pub(super) fn get(&self) -> Option<Duration> {
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
pub(super) struct Raw {
    pub(super) name: String,
    pub(super) instances: String,
    #[serde(default)]
    pub(super) filter: RawFilter,
    pub(super) repos: String,
    pub(super) python: Option<String>,
    pub(super) agent: RawAgent,
    pub(super) model: Option<Model>,
    pub(super) arms: Map<String, Value>,
    pub(super) samples: Option<u32>,
    pub(super) seed: Option<u64>,
    #[serde(default)]
    pub(super) budget: RawBudget,
    pub(super) test_timeout: Option<DurationSpec>,
    #[serde(default)]
    pub(super) environments: BTreeMap<String, BTreeMap<String, RawEnvironment>>,
    #[serde(default)]
    pub(super) container: RawContainer,
    #[serde(default)]
    pub(super) evaluate: RawEvaluate,
}

#[derive(Deserialize, Default)]
pub(super) struct RawEvaluate {
    pub(super) mpe: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct RawEnvironment {
    pub(super) python: Option<String>,
    #[serde(default)]
    pub(super) pre_install: Vec<String>,
    pub(super) requirements: Option<Value>,
    #[serde(default)]
    pub(super) install: Vec<String>,
    #[serde(default)]
    pub(super) eval_commands: Vec<String>,
    pub(super) test_cmd: Option<Value>,
    pub(super) log_parser: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct RawContainer {
    pub(super) engine: Option<String>,
    pub(super) image: Option<String>,
    pub(super) workdir: Option<String>,
    pub(super) setup: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
pub(super) struct RawFilter {
    pub(super) ids: Option<Vec<String>>,
    pub(super) slice: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct RawAgent {
    pub(super) adapter: Option<Adapter>,
    pub(super) program: Option<String>,
    #[serde(default)]
    pub(super) command: Vec<String>,
    pub(super) timeout: Option<DurationSpec>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) network: Vec<String>,
    #[serde(default)]
    pub(super) limits: crate::experiment::limits::RawLimits,
}

#[derive(Deserialize, Default)]
pub(super) struct RawBudget {
    pub(super) turns: Option<u32>,
    pub(super) wall_time: Option<DurationSpec>,
    pub(super) tokens: Option<u64>,
    pub(super) cost: Option<f64>,
    pub(super) total_cost: Option<f64>,
}

#[derive(Deserialize)]
pub(super) struct RawArm {
    pub(super) skill: String,
    pub(super) max_iterations: Option<u32>,
    pub(super) config: Option<Map<String, Value>>,
    pub(super) task: Option<String>,
    #[serde(default)]
    pub(super) vars: Map<String, Value>,
}
