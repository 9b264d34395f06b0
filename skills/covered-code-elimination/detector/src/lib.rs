//! Covered-code elimination at a test-writing agent's finish boundary (the
//! seed's Algorithm 1, one step per finish). At each finish the agent's
//! tests run under coverage.py; the target function's uncovered lines then
//! decide: none left accepts (flag 1); fewer than at the last finish
//! rejects with the next, smaller slice of the function (flag 0); no
//! progress rejects with the uncovered lines and the failing tests' errors,
//! until `limit` such refinements accept the session as far as it got
//! (flag -1). See the skill's README.

pub mod config;
pub mod context;
pub mod coverage;
pub mod prompts;
pub mod state;

use config::{Config, Summaries};
use critic_sdk::python::{eliminate, no_cover_pragma, statements, Elimination};
use critic_sdk::{DetectorInput, DetectorOutput, FileStatus, LineKind, Patch};
use prompts::Prompts;
use serde_json::{json, Value};
use state::{Flag, Measure, State};

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    config.validate()?;
    let prompts = prompts::load(&config.templates)?;
    let (path, function) = config.target()?;
    let source = critic_sdk::host::read_file_string(path)
        .map_err(|e| format!("config.target: cannot read {path}: {e}"))?;
    let (mut state, reset) = State::load(&input.state, &config.target);
    if let Some(flag) = state.done {
        return Ok(DetectorOutput::pass()
            .with_metadata(
                json!({"summary": "this session's elimination is already over", "flag": flag}),
            )
            .with_state(serde_json::to_value(&state).map_err(|e| e.to_string())?));
    }
    if let Some(pragmas) = changes(&input.patch, path) {
        let text = prompts.render(
            "refused",
            json!({
                "target": config.target,
                "path": path,
                "function": function,
                "pragmas": pragmas,
            }),
        )?;
        let summary = match pragmas.is_empty() {
            true => format!("the patch changes {path}, the target's file; nothing was measured"),
            false => format!("the patch adds `# pragma: no cover` to {path}; nothing was measured"),
        };
        return Ok(DetectorOutput::fire(text)
            .with_metadata(json!({
                "summary": summary,
                "flag": Flag::Refused,
                "pragmas": pragmas,
                "state_reset": reset,
            }))
            .with_state(serde_json::to_value(&state).map_err(|e| e.to_string())?));
    }
    // The whole function, as the first slice, and the bounds of the
    // statements coverage.py may report for it.
    let whole =
        eliminate(&source, function, &[]).map_err(|e| format!("config.target: {path}: {e}"))?;
    let bounds =
        statements(&source, function).map_err(|e| format!("config.target: {path}: {e}"))?;
    let mut context = context::retrieve(&source, path, function, |p| {
        critic_sdk::host::read_file_string(p).ok()
    });
    let summarized_by = match config.summaries {
        _ if context.summaries.is_empty() => "none",
        Summaries::Deterministic => "signature",
        Summaries::Auto => {
            match context::summarize_with_model(
                &mut context.summaries,
                &mut state.model_summaries,
                &prompts,
            ) {
                Ok(()) => "model",
                Err(_) => "signature",
            }
        }
        Summaries::Llm => {
            context::summarize_with_model(
                &mut context.summaries,
                &mut state.model_summaries,
                &prompts,
            )
            .map_err(|e| format!("config.summaries is `llm`, but the model cannot be used: {e}"))?;
            "model"
        }
    };
    let view = View {
        config: &config,
        prompts: &prompts,
        path,
        function,
        context: &context,
    };
    let tests: Vec<String> = input
        .patch
        .test_files()
        .filter(|f| f.status != FileStatus::Deleted && f.path.ends_with(".py"))
        .map(|f| f.path.clone())
        .collect();
    if tests.is_empty() {
        let round = Round {
            slice: &whole,
            uncovered: &[],
            covered: 0,
            total: whole.kept.len(),
            errors: "",
            refinement: 0,
        };
        let text = view.render("task", &round)?;
        let out = DetectorOutput::fire(text)
            .with_metadata(json!({"summary": "no test file yet; the task was given", "flag": Flag::NoTests, "state_reset": reset}))
            .with_state(serde_json::to_value(&state).map_err(|e| e.to_string())?);
        return Ok(out);
    }
    let measured = coverage::measure(
        &config.test_command,
        path,
        &tests,
        &input.patch.raw,
        config.test_timeout_secs,
    )?;
    // The target's lines: coverage's statements in the function's body,
    // once they are what its source says they can be.
    let statements = coverage::check_statements(&config.target, &bounds, &measured.statements)?;
    let uncovered: Vec<usize> = measured
        .missing
        .iter()
        .copied()
        .filter(|l| bounds.body.contains(l))
        .collect();
    let covered = statements.len() - uncovered.len();
    let previous = state
        .uncovered
        .clone()
        .unwrap_or_else(|| statements.clone());
    let flag = if uncovered.is_empty() {
        Flag::Covered
    } else if uncovered.len() < previous.len() {
        Flag::Progress
    } else if state.refinements + 1 > config.limit {
        Flag::LimitReached
    } else {
        Flag::Refine
    };
    state.history.push(Measure {
        finish: input.iteration,
        covered,
        total: statements.len(),
        uncovered: uncovered.clone(),
        flag,
    });
    state.uncovered = Some(uncovered.clone());
    let errors = match measured.exit {
        0 => String::new(),
        _ => coverage::errors(&measured.run, config.error_chars),
    };
    // The lines the slice keeps for: those of the function's statements.
    let targets: Vec<usize> = uncovered
        .iter()
        .copied()
        .filter(|l| whole.kept.contains(l))
        .collect();
    let slice = eliminate(&source, function, &targets).map_err(|e| format!("{path}: {e}"))?;
    let mut round = Round {
        slice: &slice,
        uncovered: &uncovered,
        covered,
        total: statements.len(),
        errors: &errors,
        refinement: state.refinements,
    };
    let report = view.render("report", &round)?;
    let mut artifacts = vec![(format!("coverage-finish-{}.md", input.iteration), report)];
    let summary;
    let followup = match flag {
        Flag::Covered => {
            state.done = Some(flag);
            summary = format!(
                "all {} statements of {} covered",
                statements.len(),
                config.target
            );
            None
        }
        Flag::LimitReached => {
            state.done = Some(flag);
            summary = format!(
                "the refinement limit ({}) was reached without new coverage: {covered} of {} statements of {} covered",
                config.limit,
                statements.len(),
                config.target
            );
            None
        }
        Flag::Progress => {
            state.slice_round += 1;
            state.refinements = 0;
            summary = format!(
                "coverage rose to {covered} of {}: slice {} given ({} of {} statements)",
                statements.len(),
                state.slice_round,
                slice.slice_statements,
                slice.original_statements
            );
            artifacts.push((
                format!("slice-{}.py", state.slice_round),
                slice.slice.clone(),
            ));
            Some(view.render("next_slice", &round)?)
        }
        _ => {
            state.refinements += 1;
            summary = format!(
                "no new line covered ({covered} of {}); refinement {} of {}",
                statements.len(),
                state.refinements,
                config.limit
            );
            round.refinement = state.refinements;
            Some(view.render("refine", &round)?)
        }
    };
    let metadata = json!({
        "summary": summary,
        "flag": flag,
        "seed_flag": flag.seed(),
        "covered": covered,
        "statements": statements.len(),
        "uncovered": uncovered,
        "slice_round": state.slice_round,
        "refinements": state.refinements,
        "slice_statements": slice.slice_statements,
        "tests": tests,
        "test_exit": measured.exit,
        "summaries": summarized_by,
        "state_reset": reset,
    });
    let mut out = match followup {
        Some(text) => DetectorOutput::fire(text),
        None => DetectorOutput::pass(),
    }
    .with_metadata(metadata)
    .with_state(serde_json::to_value(&state).map_err(|e| e.to_string())?);
    for (path, content) in artifacts {
        out = out.with_artifact(path, content);
    }
    Ok(out)
}

/// When the patch changes the target's file, the lines (of the patched
/// file) where it adds coverage.py's `# pragma: no cover`. Such a finish is
/// refused before its tests run: coverage is measured on the file as
/// committed, and a change there would change what is measured instead of
/// what is tested (the pragma takes lines out of measurement altogether).
fn changes(patch: &Patch, path: &str) -> Option<Vec<u32>> {
    let file = patch
        .files
        .iter()
        .find(|f| f.path == path || f.old_path.as_deref() == Some(path))?;
    Some(
        file.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Added && no_cover_pragma(&l.text))
            .filter_map(|l| l.new_line)
            .collect(),
    )
}

/// One finish's numbers, as the prompts show them.
struct Round<'a> {
    slice: &'a Elimination,
    uncovered: &'a [usize],
    covered: usize,
    total: usize,
    errors: &'a str,
    refinement: u32,
}

/// What every prompt shows.
struct View<'a> {
    config: &'a Config,
    prompts: &'a Prompts,
    path: &'a str,
    function: &'a str,
    context: &'a context::Context,
}

impl View<'_> {
    /// The slice with the file's line numbers in the margin, uncovered
    /// lines marked `>>`.
    fn margin(slice: &Elimination, uncovered: &[usize]) -> String {
        slice
            .line_map
            .iter()
            .zip(slice.slice.lines())
            .map(|((_, line), text)| {
                let mark = if uncovered.contains(line) { ">>" } else { "  " };
                format!("{mark}{line:>5} | {text}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Template `name` for a round: `slice` with `uncovered` marked.
    fn render(&self, name: &str, round: &Round) -> Result<String, String> {
        self.prompts.render(name, self.values(round))
    }

    fn values(&self, round: &Round) -> Value {
        let Round {
            slice,
            uncovered,
            covered,
            total,
            errors,
            refinement,
        } = round;
        json!({
            "target": self.config.target,
            "path": self.path,
            "function": self.function,
            "slice": Self::margin(slice, uncovered),
            "slice_code": slice.slice,
            "slice_statements": slice.slice_statements,
            "original_statements": slice.original_statements,
            "uncovered": uncovered,
            "covered": covered,
            "total": total,
            "errors": errors,
            "refinement": refinement,
            "limit": self.config.limit,
            "context_code": self.context.code,
            "summaries": self.context.summaries,
            "test_command": self.config.test_command.join(" "),
        })
    }
}

critic_sdk::export_detector!(detect);
