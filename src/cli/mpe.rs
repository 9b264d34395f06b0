//! `critic mpe`: Mutation Patch Evaluation over SWE-bench instances and
//! generated tests (see `crate::mpe`).

use crate::cli::common::LlmArgs;
use crate::grading::runner::LocalScratch;
use crate::mpe::pool::Source;
use crate::mpe::results::{Pair, Tau};
use crate::mpe::{self, Options, Progress};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// `critic mpe`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// SWE-bench instances, JSONL (instance_id, repo, base_commit, patch,
    /// test_patch, FAIL_TO_PASS, PASS_TO_PASS, problem_statement).
    #[arg(long)]
    instances: PathBuf,
    /// Generated tests, JSONL (instance_id, model_name_or_path, model_patch).
    #[arg(long)]
    predictions: PathBuf,
    /// Local clones, named <owner>__<name>.
    #[arg(long)]
    repos: PathBuf,
    /// The interpreter with the repositories' dependencies and pytest
    /// (an instance's `python` field overrides it).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Ready-made variants, DIR/<instance_id>/*.diff, instead of drawing a pool.
    #[arg(long)]
    pool: Option<PathBuf>,
    /// Where results go; a rerun with the same directory resumes.
    #[arg(long)]
    output_dir: PathBuf,
    /// Where variants come from: a model (the paper's way) or the SDK's
    /// deterministic operators (offline; labelled as such in every output).
    #[arg(long, value_enum, default_value = "model")]
    operators: Source,
    /// Admissible variants wanted per operator (N; five operators).
    #[arg(long, default_value_t = 56)]
    samples_per_operator: u32,
    /// Draws per operator at most, discarded ones included (default: twice N).
    #[arg(long)]
    max_attempts: Option<u32>,
    /// The laxity cutoff: `median` (of the run's F->P tests) or a number.
    #[arg(long, default_value = "median")]
    tau: Tau,
    /// Test runs in parallel (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Seconds one test run may take.
    #[arg(long, default_value_t = 300)]
    test_timeout: u64,
    /// Mixed into the order the two tests are shown in.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sampling temperature sent to the model (none: the model's default).
    #[arg(long)]
    temperature: Option<f64>,
    /// Cap on an answer's tokens.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Only these instances (repeatable).
    #[arg(long = "instance")]
    only: Vec<String>,
    /// Run tests unconfined, with your full privileges; only where the
    /// machine cannot confine and the tests are trusted.
    #[arg(long, env = "CRITIC_UNCONFINED_RUNS")]
    unconfined_runs: bool,
    #[command(flatten)]
    llm: LlmArgs,
}

/// A progress bar on a terminal, a line per pair otherwise.
struct Shown {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress for Shown {
    fn start(&self, total: usize, pending: usize) {
        match &self.bar {
            Some(bar) => bar.set_length(pending as u64),
            None => eprintln!(
                "mpe: {pending} of {total} pairs to evaluate ({} already finished)",
                total - pending
            ),
        }
    }

    fn working(&self, instance: &str, generator: &str, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{instance} {generator}: {what}"));
        }
    }

    fn finished(&self, pair: &Pair) {
        let line = format!(
            "{} / {}: {}{}",
            pair.instance_id,
            pair.model_name_or_path,
            serde_json::to_value(pair.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            pair.laxity
                .map(|l| format!(" (laxity {l:.3})"))
                .or_else(|| pair.reason.as_ref().map(|r| format!(": {r}")))
                .unwrap_or_default()
        );
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None => eprintln!("mpe: {line}"),
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Runs happen elsewhere (scratch copies, a confined working
    // directory): every path is taken as the user meant it, from here.
    let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let opts = Options {
        instances: absolute(args.instances),
        predictions: absolute(args.predictions),
        repos: absolute(args.repos),
        python: args.python.map(|p| {
            // A bare name is looked up on PATH, not taken from here.
            if p.components().count() > 1 {
                crate::grading::interpreter::in_real_dir(&absolute(p))
            } else {
                p
            }
        }),
        pool_dir: args.pool.map(absolute),
        output_dir: absolute(args.output_dir),
        operators: args.operators,
        samples_per_operator: args.samples_per_operator,
        max_attempts: args
            .max_attempts
            .unwrap_or(args.samples_per_operator.saturating_mul(2)),
        tau: args.tau,
        only: args.only,
        test_timeout: Duration::from_secs(args.test_timeout.max(1)),
        seed: args.seed,
        llm: args.llm.config(),
        temperature: args.temperature,
        max_tokens: args.max_tokens,
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} pairs {elapsed} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = Shown { bar };
    let backends = LocalScratch {
        workers,
        confined: !args.unconfined_runs,
    };
    let finished = mpe::run(&opts, &backends, &progress)?;
    if let Some(bar) = &progress.bar {
        bar.finish_and_clear();
    }
    let counts = &finished.summary["counts"];
    eprintln!(
        "mpe: {} pairs ({} evaluated now, {} test runs); tau {}: {} rigorous, {} lax, {} misaligned, {} without a test, {} harness errors, {} without a pool, {} errors",
        finished.pairs,
        finished.evaluated,
        finished.runs,
        finished.summary["tau"]
            .as_f64()
            .map_or("none".into(), |t| format!("{t:.3}")),
        counts["rigorous"],
        counts["lax"],
        counts["misaligned"],
        counts["no_test"],
        counts["harness_error"],
        counts["no_pool"],
        counts["error"],
    );
    eprintln!(
        "mpe: results in {}",
        opts.output_dir.join("results.jsonl").display()
    );
    if finished.errors.is_empty() {
        Ok(crate::cli::common::EXIT_ACCEPT)
    } else {
        for e in &finished.errors {
            eprintln!("mpe: error: {e}");
        }
        eprintln!(
            "mpe: {} pairs could not be evaluated; they are not results. Fix the cause and run again with the same --output-dir: finished pairs are kept.",
            finished.errors.len()
        );
        Ok(crate::cli::common::EXIT_ERROR)
    }
}
