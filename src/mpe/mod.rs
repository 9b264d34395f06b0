//! Mutation Patch Evaluation (seed 000, Section 3): each generated test is
//! run against a pool of plausible-but-incorrect variants of the golden fix
//! and against the golden tests, and classed Rigorous, Lax or Misaligned.
//!
//! Per instance: the golden tests are checked on the golden fix (an instance
//! whose environment cannot pass them gives errors, not results); each
//! generated test is run on the buggy program and on the golden fix (F->P);
//! for each F->P test, a pool is drawn per operator and every variant is
//! run against both tests, in parallel, each distinct run once. A variant
//! whose golden tests cannot run (its repository does not import, times out)
//! is discarded and another drawn from the same operator, up to the attempt
//! cap. Results are written per pair as they finish; the class of each pair
//! needs the run's tau, so `results.jsonl`, `summary.json` and `report.html`
//! are written from all finished pairs at the end.

pub mod pool;
pub mod report;
pub mod results;
pub mod store;

use crate::grading::clone_dir;
use crate::grading::dataset::{self, Instance, Prediction};
use crate::grading::instance::{Prepared, TestSet};
use crate::grading::record::{judge_files, judge_ids, Judged, RunRecord};
use crate::grading::runner::{Backend, Backends, CachedRuns};
use crate::host::llm::{LlmClient, LlmConfig};
use critic_sdk::mutants::Operator;
use pool::{Discard, Drawn, Sampler, Source, Subject, Variant};
use results::{Excluded, F2p, Matrix, Pair, Status, Tally, Tau};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::Store;

/// Everything a run is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// SWE-bench instances (JSONL).
    pub instances: PathBuf,
    /// Generated tests (JSONL).
    pub predictions: PathBuf,
    /// Local clones, `<owner>__<name>`.
    pub repos: PathBuf,
    /// The interpreter, unless an instance names its own.
    pub python: Option<PathBuf>,
    /// Ready-made variants, `DIR/<instance_id>/*.diff`.
    pub pool_dir: Option<PathBuf>,
    /// Where results go.
    pub output_dir: PathBuf,
    /// Model or deterministic operators (ignored with `pool_dir`).
    pub operators: Source,
    /// N: admissible variants wanted per operator.
    pub samples_per_operator: u32,
    /// Draws per operator at most.
    pub max_attempts: u32,
    /// The cutoff.
    pub tau: Tau,
    /// Only these instances (all when empty).
    pub only: Vec<String>,
    /// Each run's time limit.
    pub test_timeout: Duration,
    /// Mixed into the order of the anonymous test pair.
    pub seed: u64,
    /// The model, for `Source::Model`.
    pub llm: Option<LlmConfig>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Cap on an answer's tokens.
    pub max_tokens: Option<u32>,
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum MpeError {
    /// The inputs are wrong; nothing was run.
    #[error("{0}")]
    Input(String),
    /// The output directory cannot be written.
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// What a run did.
#[derive(Debug)]
pub struct Finished {
    /// Pairs in the inputs.
    pub pairs: usize,
    /// Pairs evaluated by this run (the others were already finished).
    pub evaluated: usize,
    /// Pairs with status `error`, with their reasons.
    pub errors: Vec<String>,
    /// The summary written.
    pub summary: serde_json::Value,
    /// Test runs executed (not served by the cache).
    pub runs: usize,
}

/// Progress as pairs finish.
pub trait Progress: Sync {
    /// The run will evaluate `pending` of `total` pairs.
    fn start(&self, total: usize, pending: usize);
    /// A pair is under way.
    fn working(&self, instance: &str, generator: &str, what: &str);
    /// A pair is finished.
    fn finished(&self, pair: &Pair);
}

/// No progress shown.
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: usize, _: usize) {}
    fn working(&self, _: &str, _: &str, _: &str) {}
    fn finished(&self, _: &Pair) {}
}

/// The fingerprint of what shapes a pair's result.
fn params(opts: &Options) -> String {
    let model = opts
        .llm
        .as_ref()
        .filter(|_| opts.pool_dir.is_none() && opts.operators == Source::Model)
        .map(|c| json!({"base_url": c.base_url, "model": c.model}));
    json!({
        "mpe": 1,
        "operators": source(opts).label(),
        "samples_per_operator": opts.samples_per_operator,
        "max_attempts": opts.max_attempts,
        "seed": opts.seed,
        "model": model,
        "temperature": opts.temperature,
        "max_tokens": opts.max_tokens,
        "test_timeout_s": opts.test_timeout.as_secs_f64(),
        "pool_dir": opts.pool_dir,
    })
    .to_string()
}

fn source(opts: &Options) -> Source {
    if opts.pool_dir.is_some() {
        Source::Pool
    } else {
        opts.operators
    }
}

/// Check what can be checked before anything runs.
fn validate(
    opts: &Options,
    instances: &[Instance],
    predictions: &[Prediction],
    confined: bool,
) -> Result<(), MpeError> {
    let mut errors = Vec::new();
    let mut checked = crate::grading::interpreter::Checked::new(confined);
    if !opts.repos.is_dir() {
        errors.push(format!(
            "--repos {}: not a directory (it holds clones named <owner>__<name>)",
            opts.repos.display()
        ));
    }
    for inst in instances {
        if !predictions.iter().any(|p| p.instance_id == inst.id) {
            continue;
        }
        let dir = clone_dir(&opts.repos, &inst.repo);
        if opts.repos.is_dir() && !dir.join(".git").exists() {
            errors.push(format!(
                "{}: field `repo`: no clone of {} at {} (clone it there; runs need no network)",
                inst.place,
                inst.repo,
                dir.display()
            ));
        }
        // Generated tests are judged from pytest's report.
        let format = crate::grading::test_command::TestCommand::new(
            &inst.repo,
            inst.test_cmd.as_deref(),
            inst.log_parser.as_deref(),
            &inst.eval_commands,
            Path::new("python"),
        )
        .map(|c| c.format);
        match format {
            Err(e) => errors.push(format!("{}: {e}", inst.place)),
            Ok(f) if !f.is_pytest() => errors.push(format!(
                "{}: its tests run with {}'s runner, and MPE judges generated tests with \
                 pytest; give the record a pytest `test_cmd` and `log_parser`",
                inst.place,
                f.name()
            )),
            Ok(_) => {}
        }
        match inst.python.as_ref().or(opts.python.as_ref()) {
            None => errors.push(format!(
                "{}: no interpreter: pass --python or give the record a `python` field",
                inst.place
            )),
            Some(p) if !p.is_file() => errors.push(format!(
                "{}: the interpreter {} does not exist{}",
                inst.place,
                p.display(),
                if inst.python.is_some() {
                    " (field `python`)"
                } else {
                    " (--python)"
                }
            )),
            // Every pair's runs start pytest: without it, a wrong diagnosis
            // per pair, after the pool was drawn.
            Some(p) => {
                if let Err(e) = checked.pytest(p) {
                    errors.push(format!("{}: {e}", inst.place));
                }
            }
        }
    }
    if source(opts) == Source::Model && opts.llm.is_none() {
        errors.push(
            "--operators model needs a model: pass --llm-base-url and --llm-model (or set \
             CRITIC_LLM_BASE_URL), or use --operators deterministic, or --pool DIR"
                .into(),
        );
    }
    if opts.samples_per_operator == 0 {
        errors.push("--samples-per-operator must be at least 1".into());
    }
    if opts.max_attempts < opts.samples_per_operator {
        errors.push(format!(
            "--max-attempts {} is below --samples-per-operator {}: no operator could fill its pool",
            opts.max_attempts, opts.samples_per_operator
        ));
    }
    if let Some(dir) = opts.pool_dir.as_ref().filter(|d| !d.is_dir()) {
        errors.push(format!(
            "--pool {}: not a directory (it holds <instance_id>/*.diff)",
            dir.display()
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(MpeError::Input(errors.join("\n")))
    }
}

/// Run MPE over the inputs of `opts`, with test runs on `backends`.
pub fn run(
    opts: &Options,
    backends: &dyn Backends,
    progress: &dyn Progress,
) -> Result<Finished, MpeError> {
    let input = |e: dataset::DatasetError| MpeError::Input(e.to_string());
    let mut instances = dataset::read_instances(&opts.instances).map_err(input)?;
    let predictions = dataset::read_predictions(&opts.predictions, &instances).map_err(input)?;
    if !opts.only.is_empty() {
        let unknown: Vec<&String> = opts
            .only
            .iter()
            .filter(|id| !instances.iter().any(|i| &i.id == *id))
            .collect();
        if !unknown.is_empty() {
            return Err(MpeError::Input(format!(
                "--instance {}: not in {}",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                opts.instances.display()
            )));
        }
        instances.retain(|i| opts.only.contains(&i.id));
    }
    let predictions: Vec<Prediction> = predictions
        .into_iter()
        .filter(|p| instances.iter().any(|i| i.id == p.instance_id))
        .collect();
    validate(opts, &instances, &predictions, backends.confined())?;
    let store = Store::open(&opts.output_dir)?;
    let params = params(opts);
    store.write(Path::new("run.json"), params.as_bytes())?;
    let mut llm = opts.llm.clone();
    if let Some(c) = llm.as_mut() {
        c.cache_dir
            .get_or_insert_with(|| opts.output_dir.join("llm-cache"));
    }
    let client = LlmClient::new(llm);
    let runs = CachedRuns::new(Some(opts.output_dir.join("runs")));
    let pending: Vec<&Prediction> = predictions
        .iter()
        .filter(|p| {
            store
                .finished(
                    &p.instance_id,
                    &p.generator,
                    &pair_params(opts, &params, instance_of(&instances, p), p),
                )
                .is_none()
        })
        .collect();
    progress.start(predictions.len(), pending.len());
    let ctx = Context {
        opts,
        params: &params,
        store: &store,
        runs: &runs,
        client: &client,
        progress,
    };
    let mut evaluated = 0;
    for inst in &instances {
        let preds: Vec<&Prediction> = pending
            .iter()
            .copied()
            .filter(|p| p.instance_id == inst.id)
            .collect();
        if preds.is_empty() {
            continue;
        }
        evaluated += preds.len();
        ctx.instance(inst, &preds, backends)?;
    }
    let pairs: Vec<Pair> = predictions
        .iter()
        .filter_map(|p| store.last(&p.instance_id, &p.generator))
        .collect();
    let errors = pairs
        .iter()
        .filter(|p| p.status == Status::Error)
        .map(|p| {
            format!(
                "{} / {}: {}",
                p.instance_id,
                p.model_name_or_path,
                p.reason.as_deref().unwrap_or("error")
            )
        })
        .collect();
    let summary = report::write_all(&store, &pairs, opts.tau, source(opts))?;
    Ok(Finished {
        pairs: predictions.len(),
        evaluated,
        errors,
        summary,
        runs: runs.ran.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// What every pair of a run shares.
struct Context<'a> {
    opts: &'a Options,
    params: &'a str,
    store: &'a Store,
    runs: &'a CachedRuns,
    client: &'a LlmClient,
    progress: &'a dyn Progress,
}

/// A pair under way: the generated test and the parts of its record known.
struct Work<'a> {
    prediction: &'a Prediction,
    pair: Pair,
    test: TestSet,
}

/// The instance a prediction is for (read_predictions checked it exists).
fn instance_of<'a>(instances: &'a [Instance], p: &Prediction) -> &'a Instance {
    instances
        .iter()
        .find(|i| i.id == p.instance_id)
        .unwrap_or(&instances[0])
}

/// The fingerprint of one pair: the run's parameters and a digest of every
/// input of the pair, so a finished pair is evaluated again when its
/// record, its prediction, its interpreter or its ready-made pool changes.
fn pair_params(opts: &Options, params: &str, inst: &Instance, p: &Prediction) -> String {
    use sha2::{Digest, Sha256};
    let pool: Vec<(String, Vec<u8>)> = opts
        .pool_dir
        .as_ref()
        .map(|d| d.join(crate::sys::path_name::slug(&inst.id)))
        .and_then(|d| pool::PoolDir::files(&d).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let bytes = crate::sys::bounded_read::read_regular_file_nofollow(&f, 16 << 20)
                .unwrap_or_default();
            (f.display().to_string(), bytes)
        })
        .collect();
    let mut h = Sha256::new();
    h.update(
        json!({
            "repo": inst.repo,
            "base_commit": inst.base_commit,
            "patch": inst.patch,
            "test_patch": inst.test_patch,
            "FAIL_TO_PASS": inst.fail_to_pass,
            "PASS_TO_PASS": inst.pass_to_pass,
            "problem_statement": inst.problem_statement,
            "test_cmd": inst.test_cmd,
            "python": inst.python.as_ref().or(opts.python.as_ref()),
            "model_patch": p.patch,
        })
        .to_string()
        .as_bytes(),
    );
    for (name, bytes) in &pool {
        h.update(name.as_bytes());
        h.update(Sha256::digest(bytes));
    }
    let run: serde_json::Value = serde_json::from_str(params).unwrap_or_default();
    json!({"run": run, "inputs": hex::encode(&h.finalize()[..16])}).to_string()
}

fn new_pair(ctx: &Context, inst: &Instance, p: &Prediction) -> Pair {
    Pair {
        instance_id: p.instance_id.clone(),
        model_name_or_path: p.generator.clone(),
        params: pair_params(ctx.opts, ctx.params, inst, p),
        operators: source(ctx.opts).label().into(),
        status: Status::Error,
        f2p: None,
        misaligned_reason: None,
        reason: None,
        matrix: None,
        laxity: None,
        excluded: Excluded::default(),
        pool: BTreeMap::new(),
        test_files: Vec::new(),
        ignored_files: Vec::new(),
    }
}

impl Context<'_> {
    fn finish(&self, pair: Pair, variants: &[serde_json::Value]) -> Result<(), MpeError> {
        self.store.finish(&pair, variants)?;
        self.progress.finished(&pair);
        Ok(())
    }

    /// Every pending pair of one instance.
    fn instance(
        &self,
        inst: &Instance,
        preds: &[&Prediction],
        backends: &dyn Backends,
    ) -> Result<(), MpeError> {
        let fail_all = |reason: String| -> Result<(), MpeError> {
            for p in preds {
                let mut pair = new_pair(self, inst, p);
                pair.reason = Some(reason.clone());
                self.finish(pair, &[])?;
            }
            Ok(())
        };
        self.progress
            .working(&inst.id, "", "preparing the instance");
        let repo = clone_dir(&self.opts.repos, &inst.repo);
        let python = match inst.python.as_ref().or(self.opts.python.as_ref()) {
            Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            None => return fail_all(format!("{}: no interpreter", inst.place)),
        };
        let prepared = match Prepared::new(inst, &repo, &python, self.opts.test_timeout) {
            Ok(p) => p,
            Err(e) => return fail_all(e),
        };
        let backend = match backends.open(&repo, &prepared.base, &python) {
            Ok(b) => b,
            Err(e) => return fail_all(e),
        };
        let mut work = Vec::new();
        for p in preds {
            let mut pair = new_pair(self, inst, p);
            match prepared.generated_test(&p.patch) {
                Ok((test, ignored)) => {
                    pair.test_files = test.files.keys().cloned().collect();
                    pair.ignored_files = ignored;
                    if test.targets.is_empty() {
                        pair.status = Status::Misaligned;
                        pair.misaligned_reason = Some("no_test".into());
                        pair.reason = Some("the prediction adds no Python test module".into());
                        self.finish(pair, &[])?;
                        continue;
                    }
                    work.push(Work {
                        prediction: p,
                        pair,
                        test,
                    });
                }
                Err(e) => {
                    pair.reason = Some(format!("{}: field `model_patch`: {e}", p.place));
                    self.finish(pair, &[])?;
                }
            }
        }
        if work.is_empty() {
            return Ok(());
        }
        // The golden tests on the golden fix, and F->P of every generated test.
        self.progress.working(&inst.id, "", "checking F->P");
        let empty = BTreeMap::new();
        let mut requests = vec![prepared.request(&prepared.golden_files, &prepared.golden_tests)];
        for w in &work {
            requests.push(prepared.request(&empty, &w.test));
            requests.push(prepared.request(&prepared.golden_files, &w.test));
        }
        let records = self
            .runs
            .run(backend.as_ref(), &requests, prepared.command.format);
        let why = match judge_golden(&records[0], &prepared) {
            Judged::Pass => None,
            Judged::Fail { failed } => Some(format!("{} failed", failed.join(", "))),
            Judged::HarnessError { reason } => Some(reason),
        };
        if let Some(why) = why {
            let reason = format!(
                "{}: the golden tests do not pass on the golden fix in this environment ({why}); \
                 check the interpreter's packages: {}",
                inst.place,
                records[0].tail.lines().last().unwrap_or_default()
            );
            let preds: Vec<&Prediction> = work.iter().map(|w| w.prediction).collect();
            drop(work);
            return self.fail_pairs(inst, &preds, reason);
        }
        for (i, mut w) in work.into_iter().enumerate() {
            let (buggy, golden) = (&records[1 + 2 * i], &records[2 + 2 * i]);
            // A run that could not start is the machine's failure, not the test's.
            if let Some(e) = buggy.error.as_ref().or(golden.error.as_ref()) {
                w.pair.reason = Some(format!("a run of the generated test could not start: {e}"));
                self.finish(w.pair, &[])?;
                continue;
            }
            let on_buggy = judge_files(buggy);
            let on_golden = judge_files(golden);
            for (judged, program) in [(&on_buggy, "buggy program"), (&on_golden, "golden fix")] {
                if let Judged::HarnessError { reason } = judged {
                    if w.pair.reason.is_none() {
                        w.pair.status = Status::HarnessError;
                        w.pair.reason = Some(format!("on the {program}: {reason}"));
                    }
                }
            }
            if w.pair.status == Status::HarnessError {
                self.finish(w.pair, &[])?;
                continue;
            }
            let f2p = F2p {
                fails_on_buggy: matches!(on_buggy, Judged::Fail { .. }),
                passes_on_golden: on_golden.passed(),
            };
            w.pair.f2p = Some(f2p);
            if let Some(why) = f2p.misaligned_reason() {
                w.pair.status = Status::Misaligned;
                w.pair.misaligned_reason = Some(why.into());
                self.finish(w.pair, &[])?;
                continue;
            }
            self.rate(inst, &prepared, backend.as_ref(), w)?;
        }
        Ok(())
    }

    fn fail_pairs(
        &self,
        inst: &Instance,
        preds: &[&Prediction],
        reason: String,
    ) -> Result<(), MpeError> {
        for p in preds {
            let mut pair = new_pair(self, inst, p);
            pair.reason = Some(reason.clone());
            self.finish(pair, &[])?;
        }
        Ok(())
    }

    /// Draw the pool of an F->P pair, run it, fill the matrix.
    fn rate(
        &self,
        inst: &Instance,
        prepared: &Prepared,
        backend: &dyn Backend,
        mut w: Work,
    ) -> Result<(), MpeError> {
        let generator = w.prediction.generator.clone();
        self.progress
            .working(&inst.id, &generator, "drawing the pool");
        let sources: Vec<String> = w
            .test
            .files
            .values()
            .chain(prepared.golden_tests.files.values())
            .cloned()
            .collect();
        let subject = Subject {
            instance_id: &inst.id,
            generator: &generator,
            issue: &inst.problem_statement,
            golden: &prepared.golden,
            golden_diff: &inst.patch,
            generated_test: &w.test.diff,
            golden_test: &prepared.golden_tests.diff,
            test_sources: sources.iter().map(String::as_str).collect(),
        };
        let mut lines: Vec<serde_json::Value> = Vec::new();
        let mut matrix = Matrix::default();
        let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
        let mut admitted: Vec<Variant> = Vec::new();
        let judge = |drawn: Vec<Drawn>,
                     tallies: &mut BTreeMap<String, Tally>,
                     lines: &mut Vec<serde_json::Value>,
                     matrix: &mut Matrix,
                     excluded: &mut Excluded,
                     admitted: &mut Vec<Variant>| {
            let variants: Vec<&Variant> = drawn.iter().filter_map(|d| d.as_ref().ok()).collect();
            let mut requests = Vec::new();
            for v in &variants {
                requests.push(prepared.request(&v.files, &prepared.golden_tests));
                requests.push(prepared.request(&v.files, &w.test));
            }
            self.progress.working(
                &inst.id,
                &generator,
                &format!("running {} variants", variants.len()),
            );
            let records = self.runs.run(backend, &requests, prepared.command.format);
            let mut at = 0;
            for d in drawn {
                let (operator, sample) = match &d {
                    Ok(v) => (v.operator.clone(), v.sample),
                    Err(x) => (x.operator.clone(), x.sample),
                };
                let tally = tallies.entry(operator.clone()).or_default();
                tally.sampled += 1;
                let v = match d {
                    Err(Discard { reason, .. }) => {
                        tally.discarded += 1;
                        lines.push(json!({"operator": operator, "sample": sample, "admissible": false, "discard_reason": reason}));
                        continue;
                    }
                    Ok(v) => v,
                };
                let (on_golden, on_generated) = (&records[at], &records[at + 1]);
                at += 2;
                // A run the machine could not start says nothing of the variant.
                if on_golden.error.is_some() {
                    tally.admissible += 1;
                    excluded.add("the run could not start");
                    lines.push(json!({
                        "operator": operator, "sample": sample, "description": v.description,
                        "admissible": true, "excluded": "the run could not start",
                    }));
                    continue;
                }
                let golden = judge_golden(on_golden, prepared);
                if let Judged::HarnessError { reason } = &golden {
                    tally.discarded += 1;
                    lines.push(json!({
                        "operator": operator, "sample": sample, "description": v.description,
                        "admissible": false,
                        "discard_reason": format!("it leaves no runnable repository: {reason}"),
                    }));
                    continue;
                }
                tally.admissible += 1;
                let generated = judge_files(on_generated);
                let exclusion = exclusion(on_generated);
                let cell = match &exclusion {
                    Some(why) => {
                        excluded.add(why);
                        None
                    }
                    None => {
                        matrix.add(generated.passed(), golden.passed());
                        Some(cell_name(generated.passed(), golden.passed()))
                    }
                };
                lines.push(json!({
                    "operator": operator, "sample": sample, "description": v.description,
                    "admissible": true,
                    "golden_tests": outcome_name(&golden),
                    "generated_test": outcome_name(&generated),
                    "cell": cell,
                    "excluded": exclusion,
                    "failed_golden": match &golden { Judged::Fail { failed } => json!(failed), _ => json!([]) },
                    "diff": format!("{}/{}-{:03}.diff", Store::pool_path(&inst.id, &generator).display(), operator, sample),
                }));
                admitted.push(v);
            }
        };
        let n = self.opts.samples_per_operator;
        let mut excluded = Excluded::default();
        match source(self.opts) {
            Source::Pool => {
                let dir = self
                    .opts
                    .pool_dir
                    .as_ref()
                    .map(|d| d.join(crate::sys::path_name::slug(&inst.id)))
                    .unwrap_or_default();
                let reader = pool::PoolDir {
                    dir,
                    base: &|p: &str| prepared.base_file(p),
                };
                match reader.read_all(&subject) {
                    Ok(drawn) if drawn.is_empty() => {
                        w.pair.reason =
                            Some(format!("--pool: no .diff file in {}", reader.dir.display()));
                        return self.finish(w.pair, &[]);
                    }
                    Ok(drawn) => judge(
                        drawn,
                        &mut tallies,
                        &mut lines,
                        &mut matrix,
                        &mut excluded,
                        &mut admitted,
                    ),
                    Err(e) => {
                        w.pair.reason = Some(format!("--pool: {e}"));
                        return self.finish(w.pair, &[]);
                    }
                }
            }
            kind => {
                let mut sampler: Box<dyn Sampler + '_> = match kind {
                    Source::Model => Box::new(pool::ModelSampler {
                        client: self.client,
                        templates: critic_sdk::templates::Templates::new(
                            pool::TEMPLATES,
                            &BTreeMap::new(),
                        )
                        .map_err(MpeError::Input)?,
                        temperature: self.opts.temperature,
                        max_tokens: self.opts.max_tokens,
                        seed: self.opts.seed,
                        batch_timeout: Duration::from_secs(6 * 3600),
                    }),
                    _ => Box::new(pool::Deterministic::new(n as usize)),
                };
                let operators: Vec<Operator> = pool::OPERATORS
                    .into_iter()
                    .filter(|&op| kind == Source::Model || op != Operator::Vanilla)
                    .collect();
                if kind == Source::Deterministic {
                    tallies.insert(
                        pool::operator_name(Operator::Vanilla).into(),
                        Tally {
                            exhausted: true,
                            ..Tally::default()
                        },
                    );
                }
                loop {
                    let mut wants = Vec::new();
                    for &op in &operators {
                        let name = pool::operator_name(op);
                        let t = tallies.entry(name.into()).or_default();
                        let need = n.saturating_sub(t.admissible);
                        if need == 0 || t.exhausted || t.cap_reached {
                            continue;
                        }
                        if t.sampled >= self.opts.max_attempts {
                            t.cap_reached = true;
                            continue;
                        }
                        if !sampler.has(&subject, op, t.sampled) {
                            t.exhausted = true;
                            continue;
                        }
                        wants.push((op, t.sampled, need.min(self.opts.max_attempts - t.sampled)));
                    }
                    if wants.is_empty() {
                        break;
                    }
                    let drawn = match sampler.draw(&subject, &wants) {
                        Ok(d) => d,
                        // Not a result: the pair stays unfinished work for a rerun.
                        Err(e) => {
                            w.pair.reason = Some(format!("drawing the pool: {e}"));
                            return self.finish(w.pair, &[]);
                        }
                    };
                    if drawn.is_empty() {
                        for (op, _, _) in wants {
                            tallies
                                .entry(pool::operator_name(op).into())
                                .or_default()
                                .exhausted = true;
                        }
                        continue;
                    }
                    judge(
                        drawn,
                        &mut tallies,
                        &mut lines,
                        &mut matrix,
                        &mut excluded,
                        &mut admitted,
                    );
                }
            }
        }
        // The admissible variants as a pool directory another run can take.
        if source(self.opts) != Source::Pool {
            let dir = Store::pool_path(&inst.id, &generator);
            for v in &admitted {
                let diff = pool::git_diff(&v.files, &|p| {
                    prepared.base_file(p).ok().flatten().unwrap_or_default()
                });
                self.store.write(
                    &dir.join(format!("{}-{:03}.diff", v.operator, v.sample)),
                    diff.as_bytes(),
                )?;
            }
        }
        w.pair.pool = tallies;
        w.pair.excluded = excluded;
        w.pair.laxity = matrix.laxity();
        w.pair.matrix = Some(matrix);
        if matrix.total == 0 && w.pair.excluded.count > 0 {
            // Every admissible variant's run said nothing: not a result.
            w.pair.reason = Some(format!(
                "every admissible variant's run was left out ({}); run again",
                w.pair
                    .excluded
                    .reasons
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        } else if matrix.total == 0 {
            w.pair.status = Status::NoPool;
            w.pair.reason = Some("no variant of the pool was admissible and judged".into());
        } else {
            w.pair.status = Status::Rated;
        }
        self.finish(w.pair, &lines)
    }
}

/// Why a variant's run of the generated test is left out of the matrix: it
/// says nothing either way (it could not start, timed out, collected
/// nothing, pytest failed). A test that no longer imports on a variant
/// rejects it, and counts as failing.
fn exclusion(run: &RunRecord) -> Option<String> {
    if run.error.is_some() {
        return Some("the run could not start".into());
    }
    if run.timed_out {
        return Some("timed out".into());
    }
    run.harness_error().filter(|_| !run.collection_failed())
}

/// The golden tests of a run judged by id; a run whose tests did not
/// import, or that says nothing, is a harness error (a variant that breaks
/// its repository is no plausible fix).
fn judge_golden(run: &RunRecord, prepared: &Prepared) -> Judged {
    if let Some(reason) = run.harness_error() {
        return Judged::HarnessError { reason };
    }
    judge_ids(
        run,
        &prepared.fail_to_pass,
        &prepared.pass_to_pass,
        prepared.eval_type,
    )
    .judged()
}

fn cell_name(generated: bool, golden: bool) -> &'static str {
    match (generated, golden) {
        (true, true) => "alpha",
        (true, false) => "beta",
        (false, true) => "gamma",
        (false, false) => "delta",
    }
}

fn outcome_name(j: &Judged) -> &'static str {
    match j {
        Judged::Pass => "pass",
        Judged::Fail { .. } => "fail",
        Judged::HarnessError { .. } => "harness_error",
    }
}
