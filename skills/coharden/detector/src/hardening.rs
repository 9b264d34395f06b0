//! Rounds k >= 1: fail-to-pass of (t_k, c_k), the mutant pool C_k, the
//! Temporal Matrix against t_ref, the previous round's survivors against
//! t_k, and Algorithm 1's decision. With hardening off, fail-to-pass alone
//! decides.

use crate::carry::{carry, edits};
use crate::change::{syntax_problem, Change};
use crate::config::Source;
use crate::decide::{decide, RoundFacts};
use crate::evaluate::Runs;
use crate::issue;
use crate::llm::{self, Sampling};
use crate::matrix::Matrix;
use crate::pool::{self, Candidate, Origin};
use crate::prompts::file_texts;
use crate::report::{other_operators, survivors};
use crate::state::{
    CarryExclusion, Decision, Exclusion, MutantRecord, Phase, RoundRecord, State, Survivor,
    TestFiles, VsPrevious,
};
use crate::{Ctx, Step};
use critic_sdk::host::llm_complete;
use critic_sdk::mutants::FixFile;
use critic_sdk::python::same_test;
use critic_sdk::reproduction::{tail, Outcome};
use serde_json::{json, Value};

/// The feedback file every follow-up points to.
pub const FEEDBACK_FILE: &str = "latest.md";

/// Judge the finish of round `state.round`.
pub fn evaluate(ctx: &Ctx, state: &mut State) -> Result<Step, String> {
    let config = &ctx.config;
    let change = Change::read(&ctx.input.patch, &config.python_suffixes)
        .map_err(|u| format!("cannot read `{}` from the workspace: {}", u.path, u.reason))?;
    let test = change.present_tests();
    if let Some(step) = incomplete(ctx, state, &change, &test)? {
        return Ok(step.with_tests(test));
    }
    // Without lax-init the first joint round's test becomes the first
    // reference, once it holds fail-to-pass.
    let first_joint = state.t_ref.is_empty();
    let reference = if first_joint {
        test.clone()
    } else {
        state.t_ref.clone()
    };
    let runs = Runs {
        config,
        patch: &ctx.input.patch.raw,
        test: &change.tests,
        reference: &reference,
    };
    if let Some(step) = fail_to_pass(ctx, state, &runs)? {
        return Ok(step.with_tests(test));
    }
    if first_joint {
        state.t0 = test.clone();
        state.t_ref = test.clone();
    }
    let f2p = json!({"fails_on_base": true, "passes_on_patch": true});
    if !config.hardening {
        return Ok(accept_on_fail_to_pass(state, f2p).with_tests(test));
    }
    let Drawn {
        candidates,
        mut excluded,
        notes,
        issue_source,
    } = mutant_pool(ctx, &change, &test, state)?;
    if issue_source.is_some() {
        state.issue_source = issue_source;
    }
    let (admitted, rejected) = pool::admit(candidates, &change.fix);
    excluded.extend(rejected);
    let records = temporal_matrix(&runs, admitted, &mut excluded)?;
    let vs_previous = previous_survivors(&runs, &change.fix, &state.previous_survivors)?;
    let step = conclude(
        ctx,
        state,
        &change,
        &test,
        Pool {
            records,
            excluded,
            notes,
            vs_previous,
        },
    )?;
    let mut step = step.with_tests(test);
    step.metadata["f2p"] = f2p;
    Ok(step)
}

/// Hardening off: the pair holds fail-to-pass, so the round is accepted.
fn accept_on_fail_to_pass(state: &mut State, f2p: Value) -> Step {
    let k = state.round;
    state.rounds.push(RoundRecord {
        round: k,
        decision: Decision::FailToPass,
        matrix: Matrix::default(),
        laxity: None,
        inconclusive: false,
        test_changed: false,
        mutants: Vec::new(),
        excluded: Vec::new(),
        reverted: false,
        vs_previous: VsPrevious::default(),
    });
    state.phase = Phase::Done;
    Step::accept(format!(
        "Round {k}: the test fails without the fix and passes with it; hardening is off, so \
         the pair is accepted"
    ))
    .with_metadata(json!({ "decision": Decision::FailToPass, "f2p": f2p }))
}

/// The previous round's survivors, carried onto this round's fix and run
/// against t_k (the survivor check of the hardening prompt).
fn previous_survivors(
    runs: &Runs,
    fix: &[FixFile],
    previous: &[Survivor],
) -> Result<VsPrevious, String> {
    let mut vs = VsPrevious::default();
    let mut carried = Vec::new();
    let mut ids = Vec::new();
    for s in previous {
        let exclude = |reason: String| CarryExclusion {
            id: s.id.clone(),
            reason,
        };
        if s.edits.is_empty() {
            vs.excluded.push(exclude(format!(
                "its change to the previous fix was not kept (over {} KiB, or a state from \
                 before the survivor check)",
                crate::carry::MAX_KEPT_BYTES / 1024
            )));
            continue;
        }
        match carry(&s.edits, fix) {
            Ok(files) => {
                carried.push(Candidate {
                    operator: s.operator,
                    origin: Origin::Deterministic,
                    sample: None,
                    description: s.description.clone(),
                    files,
                });
                ids.push(s.id.clone());
            }
            Err(reason) => vs.excluded.push(exclude(reason)),
        }
    }
    for (id, survives) in ids.into_iter().zip(runs.survive(&carried)?) {
        match survives {
            Ok(true) => vs.persistent += 1,
            Ok(false) => vs.newly_killed += 1,
            Err(reason) => {
                vs.excluded.push(CarryExclusion { id, reason });
                continue;
            }
        }
        vs.carried += 1;
    }
    Ok(vs)
}

/// Every admissible mutant against t_k and t_ref: its record with its cell,
/// or (for a run that says nothing about the code) an exclusion.
fn temporal_matrix(
    runs: &Runs,
    admitted: Vec<Candidate>,
    excluded: &mut Vec<Exclusion>,
) -> Result<Vec<(Candidate, MutantRecord)>, String> {
    let cells = runs.matrix(&admitted)?;
    let mut records = Vec::new();
    for (c, cell) in admitted.into_iter().zip(cells) {
        match cell {
            Ok(cell) => {
                let record = MutantRecord {
                    id: format!("m{}", records.len() + 1),
                    operator: c.operator,
                    origin: c.origin.name().into(),
                    description: c.description.clone(),
                    digest: pool::digest(&c.files),
                    cell,
                };
                records.push((c, record));
            }
            Err(reason) => excluded.push(Exclusion {
                operator: c.operator,
                sample: c.sample,
                reason,
            }),
        }
    }
    Ok(records)
}

/// A rejection that does not advance the round: template `retry` with
/// `problem` set to `kind`.
fn retry(
    ctx: &Ctx,
    state: &mut State,
    kind: &str,
    extra: Value,
    summary: String,
) -> Result<Step, String> {
    let config = &ctx.config;
    state.retries += 1;
    let mut vars = json!({
        "problem": kind,
        "round": state.round,
        "test_files": [config.test_file],
        "test_command": config.command_line(),
        "bug_exit": config.bug_exit_code.phrase(),
        "output_tail": "",
        "reference": file_texts(&state.t_ref),
    });
    if let (Value::Object(v), Value::Object(e)) = (&mut vars, extra) {
        v.extend(e);
    }
    let text = ctx.prompts.render("retry", &vars)?;
    Ok(Step::reject(summary, text).with_metadata(json!({ "problem": kind, "f2p": null })))
}

/// A retry when the patch lacks the test or the fix, or the test does not parse.
fn incomplete(
    ctx: &Ctx,
    state: &mut State,
    change: &Change,
    test: &TestFiles,
) -> Result<Option<Step>, String> {
    let k = state.round;
    if test.is_empty() {
        let summary = format!("Round {k}: the patch holds no test");
        return retry(ctx, state, "no_test", json!({}), summary).map(Some);
    }
    if change.fix_paths.is_empty() {
        let summary = format!("Round {k}: the patch holds no fix");
        return retry(ctx, state, "no_fix", json!({}), summary).map(Some);
    }
    if let Some((path, e)) = syntax_problem(test, &ctx.config.python_suffixes) {
        let summary = format!("Round {k}: `{path}` is not valid Python ({e})");
        let extra = json!({ "path": path, "detail": e });
        return retry(ctx, state, "syntax_error", extra, summary).map(Some);
    }
    Ok(None)
}

/// A retry naming the half of fail-to-pass that does not hold: t_k alone
/// on the base must detect the bug, the whole patch must pass.
fn fail_to_pass(ctx: &Ctx, state: &mut State, runs: &Runs) -> Result<Option<Step>, String> {
    let config = &ctx.config;
    let k = state.round;
    let (fail, pass) = runs.fail_to_pass()?;
    let secs = config.test_timeout_secs;
    let passes = match runs.outcome(&pass) {
        Outcome::NotRun(why) => return Err(config.cannot_run(&why)),
        o if o.is_verdict() => Some(o == Outcome::Pass),
        _ => None,
    };
    let halves = [
        (&fail, Outcome::BugDetected, "fails_to_fail", "without"),
        (&pass, Outcome::Pass, "fails_to_pass", "with"),
    ];
    for (run, wanted, kind, side) in halves {
        match runs.outcome(run) {
            got if got == wanted => {}
            Outcome::NotRun(why) => return Err(config.cannot_run(&why)),
            other => {
                let detail = other.describe(secs);
                let summary =
                    format!("Round {k}: fail-to-pass broken: {side} the fix the test {detail}");
                let extra =
                    json!({ "detail": detail, "output_tail": tail(run, config.output_tail_chars) });
                let mut step = retry(ctx, state, kind, extra, summary)?;
                step.metadata["f2p"] = json!({
                    "fails_on_base": kind != "fails_to_fail",
                    "passes_on_patch": passes,
                });
                return Ok(Some(step));
            }
        }
    }
    Ok(None)
}

/// What a round's runs produced: the Temporal Matrix's records, the
/// variants left out, notes, and the previous-round survivor check.
struct Pool {
    records: Vec<(Candidate, MutantRecord)>,
    excluded: Vec<Exclusion>,
    notes: Vec<String>,
    vs_previous: VsPrevious,
}

/// Algorithm 1's decision on the evaluated pool, the state update it
/// implies, and the follow-up and feedback file.
fn conclude(
    ctx: &Ctx,
    state: &mut State,
    change: &Change,
    test: &TestFiles,
    pool: Pool,
) -> Result<Step, String> {
    let Pool {
        records,
        excluded,
        notes,
        mut vs_previous,
    } = pool;
    let config = &ctx.config;
    let k = state.round;
    let matrix = Matrix::count(records.iter().map(|(_, r)| r.cell));
    vs_previous.regressed = matrix.beta;
    let laxity = matrix.laxity();
    let test_changed = !same_tests(test, &state.t_ref, &config.python_suffixes);
    let facts = RoundFacts {
        round: k,
        max_rounds: config.max_rounds,
        laxity,
        tau: config.tau,
        test_changed,
    };
    let decision = decide(facts);
    // Algorithm 1 sets t_k := t0 on a regression, also in the last round.
    let reverted = facts.regressed();
    let inconclusive = laxity.is_none();
    if inconclusive {
        state.inconclusive_streak += 1;
        state.inconclusive_count += 1;
    } else {
        state.inconclusive_streak = 0;
    }
    let views = survivors(
        &records,
        &change.fix,
        &config.mutation.operators,
        &state.previous_survivors,
    );
    let laxity_text = laxity.map_or("n/a".to_string(), |l| format!("{l:.2}"));
    let has_previous = !state.rounds.is_empty();
    let feedback = ctx.prompts.render(
        "feedback",
        json!({
            "round": k,
            "decision": decision,
            "test_files": test.keys().collect::<Vec<_>>(),
            "total": matrix.total(),
            "matrix": matrix,
            "laxity": laxity_text,
            "survivors": views,
            "has_previous": has_previous,
            "vs_previous": vs_previous,
            "excluded": excluded.iter().map(|e| json!({
                "operator": crate::report::operator_title(e.operator),
                "sample": e.sample.map(|s| s + 1),
                "reason": e.reason,
            })).collect::<Vec<_>>(),
        }),
    )?;
    let record = RoundRecord {
        round: k,
        decision,
        matrix,
        laxity,
        inconclusive,
        test_changed,
        mutants: records.iter().map(|(_, r)| r.clone()).collect(),
        excluded: excluded.clone(),
        reverted,
        vs_previous: vs_previous.clone(),
    };
    let evidence = json!({
        "decision": decision,
        "matrix": matrix,
        "total": matrix.total(),
        "laxity": laxity,
        "inconclusive": inconclusive,
        "test_changed": test_changed,
        "reverted_to_t0": reverted,
        "mutants": record.mutants.len(),
        "excluded": excluded.len(),
        "vs_previous": {
            "persistent": vs_previous.persistent,
            "regressed": vs_previous.regressed,
            "newly_killed": vs_previous.newly_killed,
            "carried": vs_previous.carried,
            "excluded": vs_previous.excluded.len(),
        },
        "notes": notes,
    });
    state.rounds.push(record);
    state.previous_fix = Some(change.fix_diff.clone());
    state.previous_survivors = records
        .iter()
        .filter(|(_, r)| r.cell.survives())
        .map(|(c, r)| Survivor {
            id: r.id.clone(),
            operator: r.operator,
            description: r.description.clone(),
            digest: r.digest.clone(),
            edits: edits(&change.fix, &c.files),
        })
        .collect();
    let feedback_path = format!(".critic/feedback/{}/{FEEDBACK_FILE}", ctx.input.skill.name);
    let top = views.first();
    let mut vars = json!({
        "round": k,
        "total": matrix.total(),
        "accepted": matrix.accepted(),
        "has_previous": has_previous,
        "persistent": vs_previous.persistent,
        "regressed": vs_previous.regressed,
        "newly_killed": vs_previous.newly_killed,
        "carried": vs_previous.carried,
        "not_carried": vs_previous.excluded.len(),
        "inconclusive": inconclusive,
        "laxity": laxity_text,
        "tau": format!("{:.2}", config.tau),
        "top": top,
        "other_operators": other_operators(&views),
        "test_files": test.keys().collect::<Vec<_>>(),
        "test_command": config.command_line(),
        "feedback_path": feedback_path,
    });
    let counts = format!(
        "{}/{} mutants pass the test (alpha {}, beta {}, gamma {}, delta {}; laxity {laxity_text}); \
         vs the previous round: {} persistent, {} regressed, {} newly killed",
        matrix.accepted(),
        matrix.total(),
        matrix.alpha,
        matrix.beta,
        matrix.gamma,
        matrix.delta,
        vs_previous.persistent,
        vs_previous.regressed,
        vs_previous.newly_killed,
    );
    if reverted {
        state.t_ref = state.t0.clone();
    }
    let mut step = match decision {
        Decision::Clean => {
            state.phase = Phase::Done;
            Step::accept(format!(
                "Round {k} is clean: the test changed and its laxity is within {:.2}; {counts}",
                config.tau
            ))
        }
        Decision::BudgetExhausted => {
            state.phase = Phase::Done;
            let returned = if reverted {
                "the test regressed, so the algorithm returns t0 with the last fix"
            } else {
                "the last test and fix are accepted"
            };
            Step::accept(format!(
                "Round {k} of {} ended without a clean round: the round budget is spent and \
                 {returned}; {counts}",
                config.max_rounds
            ))
        }
        Decision::Regression => {
            state.round += 1;
            let regressed: Vec<String> = views
                .iter()
                .filter(|v| v.cell == "beta")
                .map(|v| v.id.clone())
                .collect();
            vars["t0"] = json!(file_texts(&state.t0));
            vars["regressed_list"] = json!(regressed);
            vars["top"] = json!(views.iter().find(|v| v.cell == "beta"));
            let text = ctx.prompts.render("regression", &vars)?;
            Step::reject(
                format!("Round {k}: regression, the test is back to t0; {counts}"),
                text,
            )
        }
        Decision::Continue => {
            state.t_ref = test.clone();
            state.round += 1;
            let text = ctx.prompts.render("hardening", &vars)?;
            Step::reject(
                format!("Round {k}: the test did not change; hardening goes on; {counts}"),
                text,
            )
        }
        Decision::FailToPass => return Err("hardening decided without hardening".into()),
    }
    .with_metadata(evidence);
    step.artifacts = vec![
        (format!("round-{k}.md"), feedback.clone()),
        (FEEDBACK_FILE.to_string(), feedback),
    ];
    Ok(step)
}

/// Whether two versions of the test files are the same test, file by file:
/// Python files by their normalized syntax trees (docstrings, comments,
/// prints, logging and local names aside), others byte for byte.
fn same_tests(a: &TestFiles, b: &TestFiles, python_suffixes: &[String]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((pa, ca), (pb, cb))| {
            let python = python_suffixes.iter().any(|s| pa.ends_with(s.as_str()));
            pa == pb
                && match (ca, cb) {
                    (Some(x), Some(y)) if python => same_test(x, y),
                    (x, y) => x == y,
                }
        })
}

/// The candidates of C_k before admission, the exclusions met on the way,
/// and notes for the evidence (e.g. a fallback from the model).
#[derive(Default)]
struct Drawn {
    candidates: Vec<Candidate>,
    excluded: Vec<Exclusion>,
    notes: Vec<String>,
    /// Where the issue text of the model's prompts came from, when asked.
    issue_source: Option<issue::IssueSource>,
}

/// Draw C_k from the configured source.
fn mutant_pool(
    ctx: &Ctx,
    change: &Change,
    test: &TestFiles,
    state: &State,
) -> Result<Drawn, String> {
    let m = &ctx.config.mutation;
    let n = m.samples as usize;
    let test_sources: Vec<&str> = test.values().flatten().map(String::as_str).collect();
    let ref_sources: Vec<&str> = state.t_ref.values().flatten().map(String::as_str).collect();
    let all_tests: Vec<&str> = test_sources.iter().chain(&ref_sources).copied().collect();
    let deterministic = || pool::deterministic(&change.fix, &all_tests, &m.operators, n);
    if m.source == Source::Deterministic {
        return Ok(Drawn {
            candidates: deterministic(),
            ..Drawn::default()
        });
    }
    let sampled = sample(ctx, change, &test_sources, &ref_sources, state.round);
    match (m.source, sampled) {
        (Source::Llm, result) => result,
        (Source::Both, result) => {
            let mut drawn = result?;
            drawn.candidates.extend(deterministic());
            Ok(drawn)
        }
        (_, Ok(drawn)) => Ok(drawn),
        (_, Err(e)) => Ok(Drawn {
            candidates: deterministic(),
            notes: vec![format!(
                "model unavailable ({e}); the deterministic operators were used"
            )],
            ..Drawn::default()
        }),
    }
}

/// The model's candidates (none when the fix has no Python file to rewrite).
/// `Err` when the model cannot be used at all: not configured, denied, or
/// every request failed.
fn sample(
    ctx: &Ctx,
    change: &Change,
    test: &[&str],
    reference: &[&str],
    round: u32,
) -> Result<Drawn, String> {
    let m = &ctx.config.mutation;
    let fix: &[FixFile] = &change.fix;
    if fix.is_empty() {
        return Ok(Drawn::default());
    }
    let events = match &ctx.config.issue {
        Some(_) => &[][..],
        None => ctx.input.events()?,
    };
    let (issue, issue_source) = issue::resolve(ctx.config.issue.as_deref(), events);
    let sampling = Sampling {
        issue: &issue,
        fix,
        fix_diff: &change.fix_diff,
        test: test.join("\n"),
        reference: reference.join("\n"),
        round,
    };
    let (jobs, requests) = llm::requests(
        &ctx.prompts,
        &sampling,
        &m.operators,
        m.samples,
        m.temperature,
        m.max_tokens,
    )?;
    let answers = llm_complete(&requests)?;
    if let Some(e) = llm::all_failed(&answers) {
        return Err(format!("every model request failed, the first with: {e}"));
    }
    let (candidates, excluded) = llm::candidates(&jobs, &answers, fix);
    Ok(Drawn {
        candidates,
        excluded,
        notes: Vec::new(),
        issue_source: Some(issue_source),
    })
}
