//! Model-made mutants: for each operator, N samples of the sampling prompt
//! (issue, the fix's files before the fix, the operator's instructions, the
//! two tests as an anonymous pair in a per-sample order, and the fix as the
//! reference), sent in one parallel batch; each answer's `edit_file` calls
//! become one candidate, or an exclusion saying why not.

use crate::pool::{Candidate, Origin};
use crate::prompts::Prompts;
use crate::state::Exclusion;
use critic_sdk::mutants::{FixFile, Operator};
use critic_sdk::python::edit_file;
use critic_sdk::{ChatMessage, LlmRequest, LlmResult};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;

/// What every sample of a round is prompted with.
pub struct Sampling<'a> {
    /// The issue text.
    pub issue: &'a str,
    /// The fix's Python files.
    pub fix: &'a [FixFile],
    /// The fix as a git diff.
    pub fix_diff: &'a str,
    /// The round's test t_k.
    pub test: String,
    /// The reference test t_ref.
    pub reference: String,
    /// k, so each round orders its pairs differently.
    pub round: u32,
}

/// One request of the batch: which operator and sample it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Operator.
    pub operator: Operator,
    /// Sample number, 0-based.
    pub sample: u32,
}

/// The snake_case name of an operator (also its template's name).
pub fn operator_name(op: Operator) -> &'static str {
    match op {
        Operator::IncompleteFix => "incomplete_fix",
        Operator::BehaviorSubstitution => "behavior_substitution",
        Operator::SymptomSuppression => "symptom_suppression",
        Operator::InputShortcut => "input_shortcut",
        Operator::Vanilla => "vanilla",
    }
}

#[derive(Serialize)]
struct NumberedFile {
    path: String,
    numbered: String,
}

/// Whether sample `job` of round `round` shows t_k second: a fixed function
/// of the round, so record/replay sees identical prompts, but varying from
/// sample to sample so neither position means "the new test".
fn swapped(s: &Sampling, job: Job) -> bool {
    let key = format!(
        "{}|{}|{}|{}",
        s.fix_diff,
        s.round,
        operator_name(job.operator),
        job.sample
    );
    let mut h: u32 = 0x811c_9dc5;
    for b in key.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h & 1 == 1
}

/// The batch: `samples` requests per operator.
pub fn requests(
    prompts: &Prompts,
    s: &Sampling,
    operators: &[Operator],
    samples: u32,
    temperature: f64,
    max_tokens: u32,
) -> Result<(Vec<Job>, Vec<LlmRequest>), String> {
    let files: Vec<NumberedFile> = s
        .fix
        .iter()
        .map(|f| NumberedFile {
            path: f.path.clone(),
            numbered: edit_file::numbered(&f.base),
        })
        .collect();
    let mut jobs = Vec::new();
    let mut requests = Vec::new();
    for &operator in operators {
        let instructions =
            prompts.render(&format!("operators/{}", operator_name(operator)), json!({}))?;
        for sample in 0..samples {
            let job = Job { operator, sample };
            let (t1, t2) = if swapped(s, job) {
                (&s.reference, &s.test)
            } else {
                (&s.test, &s.reference)
            };
            let prompt = prompts.render(
                "mutation",
                json!({
                    "issue": s.issue,
                    "files": files,
                    "operator": instructions,
                    "test_1": t1,
                    "test_2": t2,
                    "reference_fix": s.fix_diff,
                }),
            )?;
            jobs.push(job);
            requests.push(LlmRequest {
                messages: vec![ChatMessage {
                    role: "user".into(),
                    content: prompt,
                }],
                temperature: Some(temperature),
                max_tokens: Some(max_tokens),
                sample,
            });
        }
    }
    Ok((jobs, requests))
}

/// Turn the answers into candidates (every Python file of the fix, at the
/// base with the answer's edits applied) or exclusions.
pub fn candidates(
    jobs: &[Job],
    answers: &[LlmResult],
    fix: &[FixFile],
) -> (Vec<Candidate>, Vec<Exclusion>) {
    let base: BTreeMap<String, String> = fix
        .iter()
        .map(|f| (f.path.clone(), f.base.clone()))
        .collect();
    let mut out = Vec::new();
    let mut excluded = Vec::new();
    for (job, answer) in jobs.iter().zip(answers) {
        let exclude = |reason: String| Exclusion {
            operator: job.operator,
            sample: Some(job.sample),
            reason,
        };
        let text = match (&answer.content, &answer.error) {
            (_, Some(e)) => {
                excluded.push(exclude(format!("the model request failed: {e}")));
                continue;
            }
            (Some(t), None) => t,
            (None, None) => {
                excluded.push(exclude("the model returned no text".into()));
                continue;
            }
        };
        let edits = match edit_file::parse(text) {
            Ok(e) => e,
            Err(e) => {
                excluded.push(exclude(format!("unparseable answer: {e}")));
                continue;
            }
        };
        match edit_file::apply(&base, &edits) {
            Ok(files) => {
                let spans: Vec<String> = edits
                    .iter()
                    .map(|e| {
                        format!(
                            "{} {}-{}",
                            e.filename.trim_start_matches("./"),
                            e.start,
                            e.end
                        )
                    })
                    .collect();
                out.push(Candidate {
                    operator: job.operator,
                    origin: Origin::Llm,
                    sample: Some(job.sample),
                    description: format!(
                        "model sample {}: rewrites {}",
                        job.sample + 1,
                        spans.join(", ")
                    ),
                    files,
                });
            }
            Err(e) => excluded.push(exclude(format!("the edits do not apply: {e}"))),
        }
    }
    (out, excluded)
}

/// Whether no answer of the batch arrived at all (the model is unreachable
/// or refuses every request), as opposed to answers that were unusable.
pub fn all_failed(answers: &[LlmResult]) -> Option<String> {
    if answers.is_empty() || answers.iter().any(|a| a.error.is_none()) {
        return None;
    }
    answers[0].error.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling<'a>(fix: &'a [FixFile]) -> Sampling<'a> {
        Sampling {
            issue: "Touching intervals are not merged.",
            fix,
            fix_diff: "diff --git a/m.py b/m.py\n",
            test: "NEW TEST".into(),
            reference: "OLD TEST".into(),
            round: 2,
        }
    }

    fn fix() -> Vec<FixFile> {
        vec![FixFile {
            path: "m.py".into(),
            base: "def f(x):\n    return x < 1\n".into(),
            fixed: "def f(x):\n    return x <= 1\n".into(),
            hunks: Vec::new(),
        }]
    }

    #[test]
    fn prompts_carry_issue_files_operator_and_an_anonymous_pair() {
        let prompts = crate::prompts::load(&BTreeMap::new()).unwrap();
        let f = fix();
        let ops = [Operator::SymptomSuppression, Operator::InputShortcut];
        let (jobs, reqs) = requests(&prompts, &sampling(&f), &ops, 3, 0.7, 100).unwrap();
        assert_eq!(jobs.len(), 6);
        assert_eq!(
            reqs.iter().map(|r| r.sample).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1, 2]
        );
        let text = &reqs[0].messages[0].content;
        assert!(text.contains("Touching intervals are not merged."));
        assert!(text.contains("1 def f(x):\n2     return x < 1"), "{text}");
        assert!(text.contains("symptom suppression"));
        assert!(text.contains("NEW TEST") && text.contains("OLD TEST"));
        assert!(!text.contains("reproduction.py"));
        // Both orders occur, and the same job always gets the same one.
        let firsts: Vec<bool> = reqs
            .iter()
            .map(|r| {
                r.messages[0].content.find("NEW TEST") < r.messages[0].content.find("OLD TEST")
            })
            .collect();
        assert!(
            firsts.contains(&true) && firsts.contains(&false),
            "{firsts:?}"
        );
        let (_, again) = requests(&prompts, &sampling(&f), &ops, 3, 0.7, 100).unwrap();
        assert_eq!(reqs, again);
    }

    #[test]
    fn answers_become_candidates_or_exclusions() {
        let f = fix();
        let job = Job {
            operator: Operator::BehaviorSubstitution,
            sample: 0,
        };
        let answers = vec![
            LlmResult {
                content: Some(
                    "```python\nedit_file('m.py', 2, 2, '    return x >= 1')\n```".into(),
                ),
                ..LlmResult::default()
            },
            LlmResult {
                content: Some("no code".into()),
                ..LlmResult::default()
            },
            LlmResult {
                content: Some("```python\nedit_file('m.py', 7, 9, 'x')\n```".into()),
                ..LlmResult::default()
            },
            LlmResult {
                error: Some("HTTP 500".into()),
                ..LlmResult::default()
            },
        ];
        let (cands, excluded) = candidates(&[job; 4], &answers, &f);
        assert_eq!(cands.len(), 1);
        assert_eq!(cands[0].files["m.py"], "def f(x):\n    return x >= 1\n");
        assert_eq!(cands[0].description, "model sample 1: rewrites m.py 2-2");
        let reasons: Vec<&str> = excluded.iter().map(|e| e.reason.as_str()).collect();
        assert!(reasons[0].starts_with("unparseable answer"), "{reasons:?}");
        assert!(
            reasons[1].starts_with("the edits do not apply"),
            "{reasons:?}"
        );
        assert!(reasons[2].contains("HTTP 500"), "{reasons:?}");
        assert_eq!(all_failed(&answers), None);
        assert_eq!(all_failed(&answers[3..]), Some("HTTP 500".into()));
    }
}
