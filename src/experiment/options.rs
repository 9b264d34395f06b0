//! What a call of `critic experiment run` is asked to do: its options,
//! where grading tests run, the control arms, and which shard of the runs.

use super::db::RunKey;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// What to run, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The experiment file.
    pub file: PathBuf,
    /// Where everything goes; a rerun with the same directory resumes.
    pub output_dir: PathBuf,
    /// Runs in parallel.
    pub workers: usize,
    /// Only this part of the runs.
    pub shard: Option<Shard>,
    /// Further attempts for a run that ends in an infrastructure error.
    pub retries: u32,
    /// The `critic` binary the agent's finish calls.
    pub critic: PathBuf,
    /// Only say which runs would be reused, made and superseded.
    pub dry_run: bool,
    /// Grade each finish's judged patch too, not only the final one (the
    /// critic's own accuracy).
    pub grade_finishes: bool,
    /// Run the critic's and the grader's tests unconfined.
    pub unconfined_runs: bool,
    /// Run the agent's turns unconfined (see [`super::adapters::confined`]).
    pub unconfined_agents: bool,
    /// Control runs graded beside the arms.
    pub controls: Vec<Control>,
    /// Where grading tests run.
    pub env: Environment,
    /// An earlier output directory whose recorded model calls answer this
    /// experiment's (see [`super::model_proxy::replay`]).
    pub replay: Option<PathBuf>,
    /// Past a replay's first departure, go on against the model.
    pub replay_then_live: bool,
}

/// Where grading tests run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Environment {
    /// Confined scratch copies of the local clone, the instance's Python.
    Local,
    /// A fresh container of the instance's image per run.
    Container(crate::grading::container::Spec),
}

impl Environment {
    /// As the manifest records it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Environment::Local => serde_json::json!({"kind": "local"}),
            Environment::Container(c) => serde_json::json!({
                "kind": "container", "engine": c.engine, "image": c.image,
                "workdir": c.workdir, "setup": c.setup,
            }),
        }
    }

    /// As `manifest` records it (local when it says nothing).
    pub fn of_manifest(manifest: &serde_json::Value) -> Environment {
        let e = &manifest["environment"];
        if e["kind"] != "container" {
            return Environment::Local;
        }
        let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
        Environment::Container(crate::grading::container::Spec {
            engine: text("engine"),
            image: text("image"),
            workdir: text("workdir"),
            setup: e["setup"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// A control: a patch graded without any agent, to measure the harness
/// itself (a flaky test shows as a golden patch unresolved, or an empty
/// one resolved). Its runs are stored as the arm `@gold` or `@empty`,
/// names no arm can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The instance's golden patch.
    Gold,
    /// No change at all.
    Empty,
}

impl Control {
    /// The arm its runs are stored under.
    pub fn arm(self) -> &'static str {
        match self {
            Control::Gold => "@gold",
            Control::Empty => "@empty",
        }
    }

    /// The control stored under `arm`, if it is one.
    pub fn of_arm(arm: &str) -> Option<Control> {
        [Control::Gold, Control::Empty]
            .into_iter()
            .find(|c| c.arm() == arm)
    }
}

/// A deterministic part of the runs: those whose key hashes to `index`
/// modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    /// How many.
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s:?}: expected I/N with 0 <= I < N, such as 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether `key` is in this shard.
    pub fn holds(&self, key: &RunKey) -> bool {
        let h = Sha256::digest(format!("{}\0{}\0{}", key.instance_id, key.arm, key.sample));
        let n = u64::from_le_bytes(h[..8].try_into().expect("8 bytes"));
        n % u64::from(self.count) == u64::from(self.index)
    }
}
