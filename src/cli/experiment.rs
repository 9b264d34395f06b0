//! `critic experiment`: run arms x instances x samples with an agent and
//! one critic per arm (see `crate::experiment`).

use crate::experiment::db::{Run, Status};
use crate::experiment::{self, Options, Progress, Shard};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

/// `critic experiment`'s verbs.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(clap::Subcommand)]
enum Verb {
    /// Run the experiment in FILE into --output-dir; a rerun resumes.
    Run(RunArgs),
    /// Combine the output directories of shards into one.
    Merge(MergeArgs),
    /// Grade every run of an output directory again from its saved patch (no agent runs),
    /// or grade predictions made elsewhere (--predictions, --instances, --repos).
    Grade(GradeArgs),
    /// Write OUT/report.html and OUT/summary.json, or print the tables as Markdown.
    Report(ReportArgs),
    /// Submit the experiment as a Slurm array, one shard per task, into OUT/shard-I.
    Submit(SubmitArgs),
    /// How far an output directory (or each of its shards) has come.
    Status(StatusArgs),
}

/// `critic experiment submit`'s flags.
#[derive(clap::Args)]
struct SubmitArgs {
    /// The experiment file.
    file: PathBuf,
    /// Submit to Slurm (sbatch); the only scheduler so far.
    #[arg(long, required = true)]
    slurm: bool,
    /// Where the shards' outputs (OUT/shard-I) and the script (OUT/slurm/) go.
    #[arg(long)]
    output_dir: PathBuf,
    /// Array tasks, one shard each.
    #[arg(long, default_value_t = 1)]
    array: u32,
    /// Runs in parallel within a task.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// More arguments for sbatch (repeatable), e.g. --sbatch-arg=--partition=long.
    #[arg(long = "sbatch-arg", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// Write OUT/slurm/submit.sh and stop.
    #[arg(long)]
    dry_run: bool,
}

/// `critic experiment status`'s flags.
#[derive(clap::Args)]
struct StatusArgs {
    /// The output directory (of `run`, or of `submit` with its shards).
    output_dir: PathBuf,
}

/// `critic experiment report`'s flags.
#[derive(clap::Args)]
struct ReportArgs {
    /// The experiment's output directory.
    output_dir: PathBuf,
    /// The arm every other arm is compared with (default: the first).
    #[arg(long)]
    baseline: Option<String>,
    /// `html` writes OUT/report.html; `markdown` prints the tables.
    #[arg(long, value_enum, default_value = "html")]
    format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Html,
    Markdown,
}

/// `critic experiment grade`'s flags.
#[derive(clap::Args)]
struct GradeArgs {
    /// The output directory: an experiment's, to grade its runs again; or,
    /// with --predictions, where the predictions' grades go.
    #[arg(value_name = "OUT", required_unless_present = "output_dir_flag")]
    output_dir: Option<PathBuf>,
    /// The output directory (the same as OUT).
    #[arg(long = "output-dir", value_name = "OUT", conflicts_with = "output_dir")]
    output_dir_flag: Option<PathBuf>,
    /// Grade these predictions (SWE-bench's predictions.jsonl: instance_id,
    /// model_name_or_path, model_patch), made elsewhere, with no agent.
    #[arg(long, requires_all = ["instances", "repos"])]
    predictions: Option<PathBuf>,
    /// The instances the predictions are for (SWE-bench's JSONL records).
    #[arg(long, requires = "predictions")]
    instances: Option<PathBuf>,
    /// Local clones of the instances' repositories, <owner>__<name> each.
    #[arg(long, requires = "predictions")]
    repos: Option<PathBuf>,
    /// The interpreter whose site has the repositories' dependencies and
    /// pytest (an instance's own `python` wins).
    #[arg(long, requires = "predictions")]
    python: Option<PathBuf>,
    /// Each grading test run's limit, in seconds (default 300).
    #[arg(long, requires = "predictions", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    test_timeout: Option<u64>,
    /// Runs graded in parallel.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Run the grading tests unconfined (see `critic experiment run`).
    #[arg(long, env = "CRITIC_UNCONFINED_RUNS")]
    unconfined_runs: bool,
}

/// `critic experiment merge`'s flags.
#[derive(clap::Args)]
struct MergeArgs {
    /// The shards' output directories.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Where the merged output goes.
    #[arg(long)]
    output_dir: PathBuf,
}

/// `critic experiment run`'s flags.
#[derive(clap::Args)]
struct RunArgs {
    /// The experiment file (YAML; see schemas/experiment.schema.json).
    file: PathBuf,
    /// Where results go; a rerun with the same directory skips finished runs.
    #[arg(long)]
    output_dir: PathBuf,
    /// Runs in parallel.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Only part I of N of the runs (0 <= I < N), the same part on every machine.
    #[arg(long)]
    shard: Option<Shard>,
    /// Further attempts for a run that ends in an infrastructure error.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    retries: u32,
    /// Only say which runs a run of this command would reuse, make and
    /// supersede, and why; make nothing.
    #[arg(long)]
    dry_run: bool,
    /// Grade only each run's final patch, not also the patch judged at each
    /// finish (which measures the critic's own accuracy).
    #[arg(long)]
    final_only: bool,
    /// Where grading tests run: `local` (confined scratch copies of the
    /// clones) or `container` (a fresh container of the instance's image per
    /// run; the experiment file's `container` block says which).
    #[arg(long = "env", value_enum, default_value = "local")]
    env: EnvArg,
    /// Also grade a control per instance and sample, with no agent: `gold`
    /// (the golden patch) and `empty` (no change) measure the harness's own
    /// flakiness (repeatable).
    #[arg(long = "control", value_enum)]
    controls: Vec<ControlArg>,
    /// Run the critic's and the grader's tests unconfined, with your full
    /// privileges; only where the machine cannot confine and the tests are trusted.
    #[arg(long, env = "CRITIC_UNCONFINED_RUNS")]
    unconfined_runs: bool,
    /// Run the agent's turns unconfined, with your full privileges (your
    /// files, your network, the critic's state); only for agents you trust,
    /// on machines that cannot confine (see `critic doctor`).
    #[arg(long, env = "CRITIC_UNCONFINED_AGENTS")]
    unconfined_agents: bool,
    /// Answer every model call from the recording of the same run in this
    /// earlier output directory, with no connection to the model; a call the
    /// recording does not hold ends its run `replay_diverged`.
    #[arg(long, value_name = "OLD_OUTPUT_DIR")]
    replay: Option<PathBuf>,
    /// With --replay: a run whose calls depart from the recording goes on
    /// against the model from there instead of ending.
    #[arg(long, requires = "replay")]
    replay_then_live: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EnvArg {
    Local,
    Container,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum ControlArg {
    Gold,
    Empty,
}

/// A progress bar on a terminal, a line per run otherwise.
struct Shown {
    bar: Option<indicatif::ProgressBar>,
}

impl Shown {
    fn new() -> Shown {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} runs {elapsed} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Shown { bar }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Shown {
    fn plan(&self, lines: &[String]) {
        for line in lines {
            match &self.bar {
                Some(bar) => bar.println(format!("experiment: {line}")),
                None => eprintln!("experiment: {line}"),
            }
        }
    }

    fn start(&self, total: usize, pending: usize, broken: usize, checking: usize) {
        let of_broken = if broken > 0 {
            format!(", {broken} of broken instances not made")
        } else {
            String::new()
        };
        let checks = match checking {
            0 => String::new(),
            1 => "; 1 instance's pre-flight runs beside them".to_string(),
            n => format!("; {n} instances' pre-flights run beside them"),
        };
        match &self.bar {
            Some(bar) => bar.set_length(pending as u64),
            None => eprintln!(
                "experiment: {pending} of {total} runs to make ({} already finished{of_broken}){checks}",
                total - pending - broken
            ),
        }
    }

    fn broken(&self, broken: &experiment::db::Broken, runs: usize) {
        let these = match runs {
            1 => "its run is".to_string(),
            n => format!("its {n} runs are"),
        };
        let line = format!(
            "experiment: {}: broken instance ({}); {these} not made",
            broken.instance_id, broken.reason
        );
        match &self.bar {
            Some(bar) => {
                bar.set_length(bar.length().unwrap_or(0).saturating_sub(runs as u64));
                bar.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    fn finished(&self, run: &Run, retrying: bool) {
        let mut line = format!("{}: {}", run.key, run.status.name());
        match run.status {
            Status::InfraError => line.push_str(&format!(
                " ({}: {}){}",
                run.error_class.as_deref().unwrap_or("?"),
                run.error.as_deref().unwrap_or(""),
                if retrying { ", retrying" } else { "" }
            )),
            _ => {
                if let Some(c) = &run.error_class {
                    line.push_str(&format!(" ({c})"));
                }
                line.push_str(&format!(
                    ", resolved {}, {} rounds, {:.1} s",
                    run.resolved.map_or("-".into(), |r| r.to_string()),
                    run.rounds,
                    run.duration_s
                ));
            }
        }
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                if !retrying {
                    bar.inc(1);
                }
            }
            None => eprintln!("experiment: {line}"),
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.verb {
        Verb::Run(a) => run_experiment(a),
        Verb::Grade(a) => {
            crate::sys::interrupt::cleanup_on_signals();
            let output_dir = a
                .output_dir
                .or(a.output_dir_flag)
                .expect("clap requires one of them");
            let progress = Shown::new();
            let finished = match (a.predictions, a.instances, a.repos) {
                (Some(predictions), Some(instances), Some(repos)) => {
                    experiment::predictions::grade_predictions(
                        &experiment::predictions::Options {
                            instances,
                            predictions,
                            repos,
                            python: a.python,
                            output_dir: output_dir.clone(),
                            workers: a.workers.max(1),
                            test_timeout: a.test_timeout.map(std::time::Duration::from_secs),
                            unconfined_runs: a.unconfined_runs,
                        },
                        &progress,
                    )?
                }
                _ => experiment::regrade(
                    &experiment::GradeOptions {
                        output_dir: output_dir.clone(),
                        workers: a.workers.max(1),
                        unconfined_runs: a.unconfined_runs,
                    },
                    &progress,
                )?,
            };
            progress.done();
            summarize(&finished, &output_dir)
        }
        Verb::Report(a) => {
            let summary = experiment::report(&a.output_dir, a.baseline.as_deref())?;
            match a.format {
                Format::Markdown => print!("{}", experiment::report::markdown(&summary)),
                Format::Html => println!("{}", a.output_dir.join("report.html").display()),
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
        Verb::Submit(a) => {
            let submitted = experiment::slurm::submit(&experiment::slurm::Submit {
                file: std::path::absolute(&a.file)?,
                output_dir: std::path::absolute(&a.output_dir)?,
                array: a.array,
                workers: a.workers.max(1),
                sbatch_args: a.sbatch_args,
                critic: std::env::current_exe()?,
                dry_run: a.dry_run,
            })?;
            match &submitted.job_id {
                Some(id) => eprintln!(
                    "experiment: submitted array job {id} ({} tasks) from {}; follow it with \
                     `critic experiment status {}`, then `critic experiment merge`",
                    a.array,
                    submitted.script.display(),
                    a.output_dir.display()
                ),
                None => eprintln!("experiment: wrote {}", submitted.script.display()),
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
        Verb::Status(a) => {
            let (progress, queue) = experiment::slurm::status(&a.output_dir)?;
            let (mut done, mut total, mut errors) = (0, 0, 0);
            for p in &progress {
                let of = p.total.map_or("not started".to_string(), |t| t.to_string());
                println!(
                    "{}: {} of {} finished, {} infra_error",
                    p.dir.display(),
                    p.finished,
                    of,
                    p.infra_errors
                );
                done += p.finished;
                errors += p.infra_errors;
                total += p.total.unwrap_or(0);
            }
            if progress.len() > 1 {
                println!("all: {done} of {total} finished, {errors} infra_error");
            }
            if let Some(q) = queue {
                println!("{q}");
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
        Verb::Merge(a) => {
            let merged = experiment::merge::merge(&a.shards, &a.output_dir)?;
            eprintln!(
                "experiment: merged {} shards, {} runs, into {}",
                a.shards.len(),
                merged.runs,
                a.output_dir.display()
            );
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
    }
}

fn run_experiment(args: RunArgs) -> anyhow::Result<u8> {
    crate::sys::interrupt::cleanup_on_signals();
    let file = args.file;
    let opts = Options {
        file: file.clone(),
        output_dir: args.output_dir,
        workers: args.workers.max(1),
        shard: args.shard,
        retries: args.retries,
        critic: std::env::current_exe()?,
        dry_run: args.dry_run,
        grade_finishes: !args.final_only,
        unconfined_runs: args.unconfined_runs,
        unconfined_agents: args.unconfined_agents,
        replay: args.replay,
        replay_then_live: args.replay_then_live,
        env: match args.env {
            EnvArg::Local => experiment::Environment::Local,
            EnvArg::Container => {
                experiment::Environment::Container(experiment::file::load(&file)?.container)
            }
        },
        controls: {
            let mut c = args.controls.clone();
            c.sort();
            c.dedup();
            c
        }
        .iter()
        .map(|c| match c {
            ControlArg::Gold => experiment::Control::Gold,
            ControlArg::Empty => experiment::Control::Empty,
        })
        .collect(),
    };
    let progress = Shown::new();
    let finished = experiment::run(&opts, &progress)?;
    progress.done();
    if opts.dry_run {
        eprintln!(
            "experiment: {} runs in all; a dry run: nothing was made or moved",
            finished.total
        );
        return Ok(crate::cli::common::EXIT_ACCEPT);
    }
    summarize(&finished, &opts.output_dir)
}

/// Print the runs per arm, the broken instances and each class of failure
/// with its first message; the exit status.
fn summarize(finished: &experiment::Finished, out: &std::path::Path) -> anyhow::Result<u8> {
    let mut per_arm: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in finished.runs.iter().filter(|r| r.status.is_result()) {
        let e = per_arm.entry(r.key.arm.as_str()).or_default();
        e.1 += 1;
        if r.resolved == Some(true) {
            e.0 += 1;
        }
    }
    eprintln!(
        "experiment: {} runs ({} made now)",
        finished.total, finished.ran
    );
    if let Some(e) = &finished.mpe_error {
        eprintln!("experiment: evaluate.mpe could not class the runs' tests: {e}");
    }
    if finished.not_started > 0 {
        eprintln!(
            "experiment: the cost cap (budget.total_cost) is reached: {} runs were not started; \
             raise it and run again to make them",
            finished.not_started
        );
    }
    for b in &finished.broken {
        eprintln!(
            "experiment: broken instance {}: {}; its runs were not made. The end of its log:",
            b.instance_id, b.reason
        );
        for line in b
            .log_tail
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            eprintln!("experiment: |   {line}");
        }
    }
    for (arm, (resolved, total)) in &per_arm {
        eprintln!("experiment:   {arm}: resolved {resolved} of {total}");
    }
    // Each class of failure once, with how many runs and the first message.
    let mut classes: BTreeMap<(&str, &str), (usize, &str, String)> = BTreeMap::new();
    for r in &finished.runs {
        let (Some(class), true) = (&r.error_class, r.status != Status::Ok) else {
            continue;
        };
        let e = classes.entry((r.status.name(), class.as_str())).or_insert((
            0,
            r.error.as_deref().unwrap_or(""),
            r.key.to_string(),
        ));
        e.0 += 1;
    }
    for ((status, class), (n, first, key)) in &classes {
        eprintln!("experiment: {status} ({class}): {n} run(s); first, {key}: {first}");
    }
    eprintln!(
        "experiment: results in {}, the report in {}",
        out.join("results.jsonl").display(),
        out.join("report.html").display()
    );
    let errors = finished.errors();
    if errors.is_empty() && finished.broken.is_empty() {
        return Ok(crate::cli::common::EXIT_ACCEPT);
    }
    if !errors.is_empty() {
        eprintln!(
            "experiment: {} runs ended in an infrastructure error; they are not results. Fix the \
             cause and run again with the same --output-dir: only they are run again.",
            errors.len()
        );
    }
    if !finished.broken.is_empty() {
        eprintln!(
            "experiment: {} instance(s) are broken: their golden patch does not pass their \
             golden tests in this environment, so none of their numbers would mean anything. \
             Fix the environment or the record and run again.",
            finished.broken.len()
        );
    }
    Ok(crate::cli::common::EXIT_ERROR)
}
