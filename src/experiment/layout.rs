//! Where an experiment's output directory keeps a run and its plan.

use super::db::RunKey;
use std::path::{Path, PathBuf};

/// `OUT/plan.json`: the runs the last `critic experiment run` into OUT
/// was to make (what `status` counts against).
pub const PLAN_FILE: &str = "plan.json";

/// `OUT/runs/<instance>/<arm>/<sample>` (an arm that is a model's name,
/// `org/model`, kept as one component).
pub fn run_dir(out: &Path, key: &RunKey) -> PathBuf {
    out.join("runs")
        .join(crate::sys::path_name::slug(&key.instance_id))
        .join(crate::sys::path_name::slug(&key.arm))
        .join(key.sample.to_string())
}
