//! `critic demo`: replay a recorded agent run, finish by finish, through a
//! bundled skill on a fresh copy of the demo repository. Offline and keyless:
//! the run was recorded once with the real OpenHands SDK
//! (`examples/openhands/record_demo.py`), and each finish is stored as the
//! event stream up to that finish plus the working-tree diff at that moment.

use crate::cache;
use crate::check::{self, CheckOptions};
use crate::git;
use crate::state::DEFAULT_LOCK_TIMEOUT;
use crate::Error;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The examples directory of the source tree this binary was built from.
pub fn bundled_examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// `examples/demo-run/run.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// Skill directory, relative to the run directory.
    pub skill: String,
    /// The task the agent was given.
    pub task: String,
    /// Session id used for the replay.
    pub session: String,
    /// The finishes, in order.
    pub finishes: Vec<RecordedFinish>,
}

/// One recorded finish.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedFinish {
    /// What the agent did before this finish.
    pub title: String,
    /// Events up to this finish (relative to the run directory).
    pub events: String,
    /// The working-tree diff at this finish (relative to the run directory).
    pub patch: String,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{}: {e}", path.display()))
}

/// Copy a directory tree of regular files (the demo repo, test fixtures).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(to).map_err(|e| io_err(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| io_err(from, e))? {
        let entry = entry.map_err(|e| io_err(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(|e| io_err(&src, e))?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| io_err(&src, e))?;
        }
    }
    Ok(())
}

fn git_in(dir: &Path, args: &[&str]) -> Result<(), Error> {
    let mut cmd = git::command(dir);
    cmd.args([
        "-c",
        "user.name=critic demo",
        "-c",
        "user.email=demo@localhost",
        "-c",
        "commit.gpgsign=false",
    ])
    .args(args);
    git::run(cmd)
        .map(|_| ())
        .map_err(|e| Error::Usage(e.to_string()))
}

/// Replay `examples/demo-run` and write each verdict to `out`.
pub fn run(examples: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let run_dir = examples.join("demo-run");
    let run_file = run_dir.join("run.json");
    let text = std::fs::read_to_string(&run_file).map_err(|e| io_err(&run_file, e))?;
    let rec: Recording = serde_json::from_str(&text).map_err(|e| io_err(&run_file, e))?;
    let tmp = tempfile::Builder::new()
        .prefix("critic-demo-")
        .tempdir()
        .map_err(|e| io_err(&std::env::temp_dir(), e))?;
    let repo = tmp.path().join("repo");
    copy_tree(&examples.join("demo-repo"), &repo)?;
    git_in(&repo, &["init", "-q", "-b", "main"])?;
    git_in(&repo, &["add", "-A"])?;
    git_in(&repo, &["commit", "-q", "-m", "base"])?;
    let w = |out: &mut dyn Write, s: String| {
        out.write_all(s.as_bytes())
            .map_err(|e| Error::Internal(e.to_string()))
    };
    w(
        out,
        format!(
            "PluggableCritic demo: {}\nrepository copied to {}\n",
            rec.task,
            repo.display()
        ),
    )?;
    for (i, finish) in rec.finishes.iter().enumerate() {
        git_in(&repo, &["checkout", "-q", "--", "."])?;
        git_in(&repo, &["clean", "-q", "-f", "-d"])?;
        let patch = run_dir.join(&finish.patch);
        if std::fs::metadata(&patch)
            .map_err(|e| io_err(&patch, e))?
            .len()
            > 0
        {
            let abs = patch.canonicalize().map_err(|e| io_err(&patch, e))?;
            git_in(
                &repo,
                &["apply", "--whitespace=nowarn", &abs.display().to_string()],
            )?;
        }
        w(out, format!("\n=== finish {}: {}\n", i + 1, finish.title))?;
        let verdict = check::run(&CheckOptions {
            skill: run_dir.join(&rec.skill),
            workspace: repo.clone(),
            events: run_dir.join(&finish.events),
            events_format: None,
            session: rec.session.clone(),
            base: None,
            patch_file: None,
            state_dir: Some(tmp.path().join("state")),
            cache_dir: Some(cache::default_dir()),
            deny: Vec::new(),
            allow_native: false,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            jobs: crate::harness::default_jobs(),
            llm: None,
        })?;
        w(out, verdict.to_text())?;
    }
    Ok(())
}
