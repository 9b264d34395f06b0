//! Beyond one machine: `critic experiment submit --slurm` writes an sbatch
//! array script whose task I runs shard I of N into `OUT/shard-I` and
//! submits it; `critic experiment status` reads every shard's progress (and
//! the array's, from `squeue`, when Slurm is there). `critic experiment
//! merge` then combines the shards. A Kubernetes Indexed Job runs the same
//! shards (`examples/kubernetes/`).

use crate::experiment::db::Db;
use crate::experiment::{file, outcome::ExperimentError};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to submit.
#[derive(Debug, Clone)]
pub struct Submit {
    /// The experiment file.
    pub file: PathBuf,
    /// Where the shards' outputs go (`OUT/shard-I`) and the script
    /// (`OUT/slurm/`).
    pub output_dir: PathBuf,
    /// Array tasks, one shard each.
    pub array: u32,
    /// Runs in parallel within a task.
    pub workers: usize,
    /// More `sbatch` arguments (`--partition=gpu`, `--time=12:00:00`...).
    pub sbatch_args: Vec<String>,
    /// The `critic` binary the tasks run (it must be where the nodes see it).
    pub critic: PathBuf,
    /// Write the script, do not submit it.
    pub dry_run: bool,
}

/// What a submission did.
#[derive(Debug)]
pub struct Submitted {
    /// The script written.
    pub script: PathBuf,
    /// The array's job id, when submitted.
    pub job_id: Option<String>,
}

fn output(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Output(e.to_string())
}

fn quote(p: &Path) -> String {
    shlex::try_quote(&p.to_string_lossy())
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| format!("'{}'", p.display()))
}

/// The sbatch array script of `s`.
pub fn script(s: &Submit, name: &str) -> String {
    let out = &s.output_dir;
    format!(
        "#!/bin/bash\n\
         # critic experiment submit --slurm: task I of the array runs shard I of {n}.\n\
         #SBATCH --job-name=critic-{name}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --output={log}\n\
         set -euo pipefail\n\
         shard=\"$SLURM_ARRAY_TASK_ID\"\n\
         exec {critic} experiment run {file} --output-dir {out}/shard-\"$shard\" \\\n  \
         --shard \"$shard\"/{n} --workers {workers}\n",
        n = s.array,
        last = s.array - 1,
        // sbatch reads its #SBATCH lines without a shell: no quoting there
        // (submit refuses an output directory that would need it).
        log = out.join("slurm/shard-%a.log").display(),
        critic = quote(&s.critic),
        file = quote(&s.file),
        out = quote(out),
        workers = s.workers,
    )
}

/// Check the experiment, write the script and (unless `dry_run`) submit it.
pub fn submit(s: &Submit) -> Result<Submitted, ExperimentError> {
    if s.array == 0 {
        return Err(output("--array must be at least 1"));
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+@:,=".contains(c);
    if !s.output_dir.to_string_lossy().chars().all(plain) {
        return Err(output(format!(
            "{}: sbatch's #SBATCH lines take no quoting; give an output directory whose path \
             has no spaces, quotes or shell characters",
            s.output_dir.display()
        )));
    }
    // Every problem of the file and its records shows now, not on the nodes.
    let exp = file::load(&s.file)?;
    // The submitting machine need not be one that confines: the nodes are.
    crate::experiment::instances::instances(
        &exp,
        None,
        &crate::experiment::options::Environment::Local,
        false,
    )?;
    let dir = s.output_dir.join("slurm");
    std::fs::create_dir_all(&dir).map_err(|e| output(format!("{}: {e}", dir.display())))?;
    let path = dir.join("submit.sh");
    let text = script(s, &exp.name);
    std::fs::write(&path, &text).map_err(|e| output(format!("{}: {e}", path.display())))?;
    if s.dry_run {
        return Ok(Submitted {
            script: path,
            job_id: None,
        });
    }
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(&s.sbatch_args)
        .arg(&path)
        .output()
        .map_err(|e| output(format!("cannot run sbatch: {e} (is Slurm installed here?)")))?;
    if !out.status.success() {
        return Err(output(format!(
            "sbatch {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // `--parsable` prints `id` or `id;cluster`.
    let id = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    std::fs::write(dir.join("job_id"), format!("{id}\n"))
        .map_err(|e| output(format!("{}: {e}", dir.display())))?;
    Ok(Submitted {
        script: path,
        job_id: Some(id),
    })
}

/// One output directory's progress.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    /// The directory.
    pub dir: PathBuf,
    /// Its runs, when it has started (its `plan.json`).
    pub total: Option<usize>,
    /// `ok` and `agent_fail` runs.
    pub finished: usize,
    /// `infra_error` runs.
    pub infra_errors: usize,
}

/// The progress of `out`: of each `shard-*` directory under it, or of `out`
/// itself when it has none; and the Slurm array's task states, when there
/// is one and `squeue` answers.
pub fn status(out: &Path) -> Result<(Vec<Progress>, Option<String>), ExperimentError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| output(format!("{}: {e}", out.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("shard-"))
        })
        .collect();
    dirs.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.trim_start_matches("shard-").parse::<u32>().ok())
    });
    if dirs.is_empty() {
        dirs.push(out.to_path_buf());
    }
    let mut progress = Vec::new();
    for dir in dirs {
        let total = std::fs::read(dir.join(crate::experiment::layout::PLAN_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<Vec<serde_json::Value>>(&b).ok())
            .map(|keys| keys.len());
        let (mut finished, mut infra_errors) = (0, 0);
        if dir.join("results.sqlite").is_file() {
            for r in Db::open(&dir.join("results.sqlite"))?.runs()? {
                match r.status {
                    s if !s.is_result() => infra_errors += 1,
                    _ => finished += 1,
                }
            }
        }
        progress.push(Progress {
            dir,
            total,
            finished,
            infra_errors,
        });
    }
    let queue = std::fs::read_to_string(out.join("slurm/job_id"))
        .ok()
        .and_then(|id| {
            let id = id.trim().to_string();
            let q = Command::new("squeue")
                .args(["-h", "-r", "-j", &id, "-o", "%T"])
                .output()
                .ok()?;
            if !q.status.success() {
                return None;
            }
            let mut states = std::collections::BTreeMap::new();
            for s in String::from_utf8_lossy(&q.stdout).split_whitespace() {
                *states.entry(s.to_lowercase()).or_insert(0) += 1;
            }
            let listed: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
            Some(if listed.is_empty() {
                format!("job {id}: no task queued or running")
            } else {
                format!("job {id}: {}", listed.join(", "))
            })
        });
    Ok((progress, queue))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_one_shard_per_task_with_paths_quoted() {
        let s = Submit {
            file: PathBuf::from("/data/my exp.yaml"),
            output_dir: PathBuf::from("/scratch/out"),
            array: 4,
            workers: 2,
            sbatch_args: vec![],
            critic: PathBuf::from("/opt/critic/bin/critic"),
            dry_run: true,
        };
        let text = script(&s, "demo");
        assert!(text.starts_with("#!/bin/bash\n"));
        assert!(text.contains("#SBATCH --array=0-3\n"), "{text}");
        assert!(
            text.contains("#SBATCH --output=/scratch/out/slurm/shard-%a.log\n"),
            "{text}"
        );
        assert!(
            text.contains("exec /opt/critic/bin/critic experiment run '/data/my exp.yaml' --output-dir /scratch/out/shard-\"$shard\""),
            "{text}"
        );
        assert!(text.contains("--shard \"$shard\"/4 --workers 2"), "{text}");
    }
}
