//! `critic demo [NAME]`: replay a recorded agent run, finish by finish,
//! through a bundled skill on a fresh copy of the demo repository. Offline
//! and keyless: each run was recorded once with the real OpenHands SDK
//! (`examples/openhands/record_*.py`), and each finish is stored as the event
//! stream up to that finish plus the working-tree diff at that moment. The
//! skill's own checks (CoHarden's test runs included) happen live.

use anyhow::{anyhow, Context, Result};
use pluggable_critic::detector::wasm::cache;
use pluggable_critic::run::{CheckRequest, HostSettings};
use pluggable_critic::Service;
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
    /// The repository the run starts from, relative to the run directory
    /// (default: `examples/demo-repo`).
    #[serde(default)]
    pub repo: Option<String>,
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

fn io_err(path: &Path, e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{}: {e}", path.display())
}

/// Copy a directory tree of regular files (the demo repo, test fixtures).
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
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

fn git_in(dir: &Path, args: &[&str]) -> Result<()> {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(dir)
        .args([
            "-c",
            "user.name=critic demo",
            "-c",
            "user.email=demo@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args);
    let out = cmd.output().context("cannot run git")?;
    if !out.status.success() {
        return Err(anyhow!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The recorded run a demo name stands for: `examples/demo-run` for the
/// default demo, `examples/<name>-run` otherwise.
pub fn run_dir(examples: &Path, name: Option<&str>) -> Result<PathBuf> {
    let dir = examples.join(name.map_or("demo-run".to_string(), |n| format!("{n}-run")));
    if dir.join("run.json").is_file() {
        return Ok(dir);
    }
    let mut known: Vec<String> = std::fs::read_dir(examples)
        .map_err(|e| io_err(examples, e))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix("-run").map(str::to_string))
        .filter(|n| n != "demo")
        .collect();
    known.sort();
    Err(anyhow!(
        "no demo named {:?} in {}; available: the default (no name){}",
        name.unwrap_or("demo"),
        examples.display(),
        known.iter().map(|n| format!(", {n}")).collect::<String>()
    ))
}

/// The task as the header shows it: a one-line task whole, a long prompt
/// by its first lines and where to read the rest.
fn task_preview(task: &str, run_file: &Path) -> String {
    const SHOWN: usize = 12;
    let lines: Vec<&str> = task.lines().collect();
    if lines.len() <= 1 {
        return task.to_string();
    }
    let mut text = String::from("the agent was given this task\n");
    for line in lines.iter().take(SHOWN) {
        text.push_str(&format!("  > {line}\n"));
    }
    if lines.len() > SHOWN {
        text.push_str(&format!(
            "  > [... {} more lines; the whole prompt is in {}]",
            lines.len() - SHOWN,
            run_file.display()
        ));
    }
    text.trim_end().to_string()
}

/// Replay the recorded run `name` (see [`run_dir`]) and write each verdict to `out`.
fn replay(examples: &Path, name: Option<&str>, out: &mut dyn Write) -> Result<()> {
    let run_dir = run_dir(examples, name)?;
    let run_file = run_dir.join("run.json");
    let text = std::fs::read_to_string(&run_file).map_err(|e| io_err(&run_file, e))?;
    let rec: Recording = serde_json::from_str(&text).map_err(|e| io_err(&run_file, e))?;
    let tmp = tempfile::Builder::new()
        .prefix("critic-demo-")
        .tempdir()
        .map_err(|e| io_err(&std::env::temp_dir(), e))?;
    let repo = tmp.path().join("repo");
    let source = match &rec.repo {
        Some(rel) => run_dir.join(rel),
        None => examples.join("demo-repo"),
    };
    copy_tree(&source, &repo)?;
    git_in(&repo, &["init", "-q", "-b", "main"])?;
    git_in(&repo, &["add", "-A"])?;
    git_in(&repo, &["commit", "-q", "-m", "base"])?;
    let w = |out: &mut dyn Write, s: String| {
        out.write_all(s.as_bytes())
            .context("cannot write the demo's output")
    };
    w(
        out,
        format!(
            "PluggableCritic demo: {}\n",
            task_preview(&rec.task, &run_file)
        ),
    )?;
    w(out, format!("repository copied to {}\n", repo.display()))?;
    // One warm host for every finish of the run, as a long session would have.
    let service = Service::new(HostSettings {
        cache_dir: cache::default_dir(),
        ..HostSettings::default()
    })?;
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
        let mut request = CheckRequest::new(run_dir.join(&rec.skill), run_dir.join(&finish.events));
        request.workspace = repo.clone();
        request.session = rec.session.clone();
        request.state_dir = Some(tmp.path().join("state"));
        let verdict = service.check(&request)?;
        w(out, verdict.to_text())?;
    }
    Ok(())
}

/// `critic demo`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Which recorded run: none for the basic gates, `coharden` for a full
    /// CoHarden session, `elimination` for a covered-code-elimination
    /// session (examples/<name>-run).
    name: Option<String>,
    /// The examples directory (default: the one this binary was built from).
    #[arg(long)]
    examples: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<u8> {
    let examples = args.examples.unwrap_or_else(bundled_examples);
    replay(&examples, args.name.as_deref(), &mut std::io::stdout())?;
    Ok(crate::EXIT_ACCEPT)
}
