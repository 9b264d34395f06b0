//! `critic demo [NAME]`: replay a recorded agent run, finish by finish,
//! through a bundled skill on a fresh copy of the demo repository. Offline
//! and keyless: each run was recorded once with the real OpenHands SDK
//! (`examples/openhands/record_*.py`), and each finish is stored as the event
//! stream up to that finish plus the working-tree diff at that moment. The
//! skill's own checks (CoHarden's test runs included) happen live.
//! `critic demo arms` replays one recorded session per arm of the paper's
//! experiment and prints them side by side.

use crate::detector::wasm::cache;
use crate::evaluate::verdict::Verdict;
use crate::frontend::service::Service;
use crate::frontend::{CheckRequest, HostSettings};
use anyhow::{anyhow, Context, Result};
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

/// Replay the recorded run in `run_dir` on one warm host, writing each
/// verdict to `out`; the verdicts, in order.
fn replay(
    examples: &Path,
    run_dir: &Path,
    service: &Service,
    out: &mut dyn Write,
) -> Result<Vec<Verdict>> {
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
    let mut verdicts = Vec::new();
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
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

/// `examples/arms-run/arms.json`: the recorded session of each arm, in the
/// order the table lists them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arms {
    arms: Vec<ArmRun>,
}

/// One arm's recorded session.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArmRun {
    /// The arm's name, as the table shows it.
    arm: String,
    /// Its run directory, relative to `arms.json`.
    run: String,
}

/// One row of the arms table: the arm, its finishes, each finish's decision
/// (R rejected, A accepted) and how the session ended.
fn arm_row(arm: &str, verdicts: &[Verdict]) -> [String; 4] {
    let decisions: Vec<&str> = verdicts
        .iter()
        .map(|v| if v.accepted { "A" } else { "R" })
        .collect();
    let outcome = match verdicts.last() {
        None => "no finish".to_string(),
        Some(v) => {
            let mut text = match (v.accepted, v.budget_exhausted) {
                (true, true) => "accepted, budget spent".to_string(),
                (true, false) => "accepted".to_string(),
                (false, _) => "still rejected".to_string(),
            };
            let meta = v.signals.first().map(|s| &s.metadata);
            if let Some(f2p) = meta.and_then(|m| m.get("f2p")).filter(|f| f.is_object()) {
                let yes = |k: &str| f2p.get(k).and_then(serde_json::Value::as_bool);
                text.push_str(&match (yes("fails_on_base"), yes("passes_on_patch")) {
                    (Some(true), Some(true)) => "; test F->P".to_string(),
                    (Some(true), None) => "; test fails on the base".to_string(),
                    (f, p) => format!("; test not F->P ({f:?}, {p:?})"),
                });
            }
            if let Some(test) = meta
                .and_then(|m| m.pointer("/outcome/test"))
                .and_then(serde_json::Value::as_str)
            {
                text.push_str(&format!("; returns {test}"));
            }
            text
        }
    };
    [
        arm.to_string(),
        verdicts.len().to_string(),
        decisions.join(" "),
        outcome,
    ]
}

/// The rows as an aligned text table with a header.
fn table(rows: &[[String; 4]]) -> String {
    let header = ["arm", "finishes", "decisions", "outcome"].map(String::from);
    let all: Vec<&[String; 4]> = std::iter::once(&header).chain(rows).collect();
    let width = |i: usize| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths = [width(0), width(1), width(2)];
    all.iter()
        .map(|r| {
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        })
        .collect()
}

/// Replay every arm's session (verdicts to `detail`), then write the table
/// to `out`.
fn replay_arms(examples: &Path, service: &Service, out: &mut dyn Write) -> Result<()> {
    let dir = examples.join("arms-run");
    let file = dir.join("arms.json");
    let text = std::fs::read_to_string(&file).map_err(|e| io_err(&file, e))?;
    let arms: Arms = serde_json::from_str(&text).map_err(|e| io_err(&file, e))?;
    let mut rows = Vec::new();
    for arm in &arms.arms {
        writeln!(out, "\n##### arm {}", arm.arm).context("cannot write the demo's output")?;
        let verdicts = replay(examples, &dir.join(&arm.run), service, out)?;
        rows.push(arm_row(&arm.arm, &verdicts));
    }
    write!(out, "\n{}", table(&rows)).context("cannot write the demo's output")
}

/// `examples/experiment/packages.json`: one seeded-bug package.
#[derive(Debug, Deserialize)]
struct DemoPackage {
    name: String,
    /// Its files, relative to `examples/experiment`.
    source: String,
    /// The golden fix and the golden tests, as diffs.
    fix: String,
    tests: String,
    #[serde(rename = "FAIL_TO_PASS")]
    fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pass_to_pass: Vec<String>,
    problem_statement: String,
}

/// `critic demo experiment`: set up `examples/experiment` in a new
/// temporary directory (a git repository per package, the instances file,
/// a link to the shipped skills), run it, and print the report's table.
fn demo_experiment(examples: &Path, keep: Option<&Path>, out: &mut dyn Write) -> Result<u8> {
    let src = examples.join("experiment");
    let dir = match keep {
        // The user's own copy, to edit and run again.
        Some(dir) => {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
                anyhow::bail!(
                    "--keep {}: not empty; name a new directory for the example",
                    dir.display()
                );
            }
            std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
            std::path::absolute(dir)?
        }
        None => tempfile::Builder::new()
            .prefix("critic-demo-experiment-")
            .tempdir()
            .map_err(|e| io_err(&std::env::temp_dir(), e))?
            .keep(),
    };
    let exp = dir.join("experiment");
    copy_tree(&src, &exp)?;
    let skills = examples
        .parent()
        .map(|p| p.join("skills"))
        .ok_or_else(|| anyhow!("{}: no skills beside it", examples.display()))?;
    std::os::unix::fs::symlink(&skills, exp.join("skills")).map_err(|e| io_err(&exp, e))?;
    let file = src.join("packages.json");
    let text = std::fs::read_to_string(&file).map_err(|e| io_err(&file, e))?;
    let packages: Vec<DemoPackage> = serde_json::from_str(&text).map_err(|e| io_err(&file, e))?;
    let mut instances = String::new();
    for p in &packages {
        let repo = exp.join("repos").join(format!("acme__{}", p.name));
        copy_tree(&src.join(&p.source), &repo)?;
        git_in(&repo, &["init", "-q", "-b", "main"])?;
        git_in(&repo, &["add", "-A"])?;
        git_in(&repo, &["commit", "-q", "-m", "base"])?;
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&repo)
            .output()
            .context("cannot run git")?;
        let read = |rel: &str| {
            let f = src.join(rel);
            std::fs::read_to_string(&f).map_err(|e| io_err(&f, e))
        };
        let record = serde_json::json!({
            "instance_id": format!("acme__{}-1", p.name),
            "repo": format!("acme/{}", p.name),
            "base_commit": String::from_utf8_lossy(&head.stdout).trim(),
            "patch": read(&p.fix)?,
            "test_patch": read(&p.tests)?,
            "FAIL_TO_PASS": p.fail_to_pass,
            "PASS_TO_PASS": p.pass_to_pass,
            "problem_statement": p.problem_statement,
        });
        instances.push_str(&format!("{record}\n"));
    }
    let instances_file = exp.join("instances.jsonl");
    std::fs::write(&instances_file, instances).map_err(|e| io_err(&instances_file, e))?;
    let output_dir = dir.join("out");
    let opts = crate::experiment::Options {
        file: exp.join("experiment.yaml"),
        output_dir: output_dir.clone(),
        workers: 2,
        shard: None,
        retries: 1,
        critic: std::env::current_exe()?,
        dry_run: false,
        grade_finishes: true,
        unconfined_runs: false,
        unconfined_agents: false,
        controls: vec![crate::experiment::Control::Gold],
        env: crate::experiment::Environment::Local,
        replay: None,
        replay_then_live: false,
    };
    let finished = crate::experiment::run(&opts, &crate::experiment::Quiet)?;
    let summary = crate::experiment::report(&output_dir, None)?;
    let w = |out: &mut dyn Write, s: String| {
        out.write_all(s.as_bytes())
            .context("cannot write the demo's output")
    };
    w(out, crate::experiment::report::markdown(&summary))?;
    w(
        out,
        format!(
            "\n{} runs: two arms and the golden-patch control on two packages with seeded \
             bugs; the agent is a scripted stand-in (examples/experiment/agent.py), the critic \
             and the grading are real.\nReport: {}\nRuns:   {}\n",
            finished.total,
            output_dir.join("report.html").display(),
            output_dir.join("runs").display()
        ),
    )?;
    w(
        out,
        format!(
            "The experiment (file, instances, repositories, agent) is in {exp}: edit \
             experiment.yaml and run it again with
  critic experiment run {file} \
             --output-dir {out_dir} --control gold
",
            exp = exp.display(),
            file = exp.join("experiment.yaml").display(),
            out_dir = output_dir.display(),
        ),
    )?;
    Ok(if finished.errors().is_empty() {
        crate::cli::common::EXIT_ACCEPT
    } else {
        crate::cli::common::EXIT_ERROR
    })
}

/// `critic demo`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Which recorded run: none for the basic gates, `coharden` for a full
    /// CoHarden session, `elimination` for a covered-code-elimination
    /// session (examples/<name>-run), `arms` for one session per arm of the
    /// paper's experiment, summed up in a table, `experiment` for a small
    /// experiment run live (two arms, two packages) and its report.
    name: Option<String>,
    /// The examples directory (default: the one this binary was built from).
    #[arg(long)]
    examples: Option<PathBuf>,
    /// `experiment` only: make the example experiment in this (new or
    /// empty) directory and keep it, to edit and run again.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

/// Refuse to start unless `python3` on `PATH` (the interpreter the demo's
/// confined runs use) imports `modules`, naming what to install.
fn require_python(modules: &[&str], packages: &str) -> Result<()> {
    use crate::grading::interpreter::{imports, NotImported};
    let confined = crate::sandbox::confine::support().missing().is_none();
    match imports(Path::new("python3"), modules, confined) {
        Ok(()) => Ok(()),
        Err(NotImported::Missing(last)) => Err(anyhow!(
            "this demo runs the agent's tests, and `python3` on PATH cannot `import {}` \
             ({last}); install them (`python3 -m pip install {packages}`, or put a virtual \
             environment that has them first on PATH) and run it again",
            modules.join(", ")
        )),
        Err(NotImported::NoInterpreter(e)) => Err(anyhow!(
            "this demo runs the agent's tests with `python3`, which cannot start ({e}); \
             install Python 3 with {packages}"
        )),
    }
}

pub fn run(args: Args) -> Result<u8> {
    let examples = args.examples.unwrap_or_else(bundled_examples);
    // One warm host for every finish, as a long session would have.
    let service = Service::new(HostSettings {
        cache_dir: cache::default_dir(),
        ..HostSettings::default()
    })?;
    let out = &mut std::io::stdout();
    // A demo whose runs cannot start would print a table of rejections
    // that look like the critic's judgement: refused first instead.
    if args.keep.is_some() && args.name.as_deref() != Some("experiment") {
        anyhow::bail!("--keep is for `critic demo experiment`");
    }
    match args.name.as_deref() {
        Some("arms" | "experiment") => require_python(&["pytest"], "pytest")?,
        Some("elimination") => require_python(&["pytest", "coverage"], "pytest coverage")?,
        _ => {}
    }
    if args.name.as_deref() == Some("arms") {
        replay_arms(&examples, &service, out)?;
    } else if args.name.as_deref() == Some("experiment") {
        return demo_experiment(&examples, args.keep.as_deref(), out);
    } else {
        let dir = run_dir(&examples, args.name.as_deref())?;
        replay(&examples, &dir, &service, out)?;
    }
    Ok(crate::cli::common::EXIT_ACCEPT)
}
