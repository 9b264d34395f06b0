//! The mutation patch pool C: plausible-but-incorrect variants of the golden
//! fix, drawn per operator from one of three sources: a model (the paper's
//! way: N samples of each of five operators, conditioned on the golden fix and
//! the two tests shown as an anonymous pair in a random order), the SDK's
//! deterministic operators (offline, no model), or a directory of ready-made
//! diffs. A draw gives variants or the reason a candidate was discarded
//! before it could run; whether a variant leaves a runnable repository is
//! decided by running it (see `mod.rs`).

use crate::grading::diff_files::apply_diff;
use crate::host::llm::LlmClient;
use critic_sdk::mutants::{FixFile, Operator};
use critic_sdk::python::edit_file;
use critic_sdk::{ChatMessage, LlmRequest};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where a pool's variants come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A model, through `llm-complete`'s client and its record/replay cache.
    Model,
    /// The SDK's deterministic operators (no model; four operators).
    Deterministic,
    /// Ready-made diffs from `--pool DIR`.
    Pool,
}

impl Source {
    /// The label results carry.
    pub fn label(self) -> &'static str {
        match self {
            Source::Model => "model",
            Source::Deterministic => "deterministic",
            Source::Pool => "pool",
        }
    }
}

/// The five operators, in the paper's order.
pub const OPERATORS: [Operator; 5] = [
    Operator::Vanilla,
    Operator::SymptomSuppression,
    Operator::IncompleteFix,
    Operator::InputShortcut,
    Operator::BehaviorSubstitution,
];

/// An operator's name in results and file names.
pub fn operator_name(op: Operator) -> &'static str {
    match op {
        Operator::IncompleteFix => "incomplete_fix",
        Operator::BehaviorSubstitution => "behavior_substitution",
        Operator::SymptomSuppression => "symptom_suppression",
        Operator::InputShortcut => "input_shortcut",
        Operator::Vanilla => "vanilla",
    }
}

/// One candidate fix: the full content of each file it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// The operator's name (`external` for a pool file whose name names none).
    pub operator: String,
    /// Its number among the operator's draws, from 0.
    pub sample: u32,
    /// One line on what it is.
    pub description: String,
    /// Path to content after the variant, for every file it changes.
    pub files: BTreeMap<String, String>,
}

/// A draw that gave no variant, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discard {
    /// The operator's name.
    pub operator: String,
    /// Its number among the operator's draws.
    pub sample: u32,
    /// Why it was discarded.
    pub reason: String,
}

/// What one draw gave.
pub type Drawn = Result<Variant, Discard>;

/// What the pool is drawn for: the golden fix, the two tests and the issue.
pub struct Subject<'a> {
    /// The instance, for prompts' order and messages.
    pub instance_id: &'a str,
    /// The generator, so each generator's pool orders its pairs apart.
    pub generator: &'a str,
    /// The issue text.
    pub issue: &'a str,
    /// The golden fix's files.
    pub golden: &'a [FixFile],
    /// The golden fix as a diff.
    pub golden_diff: &'a str,
    /// The generated test, as the diff that adds it.
    pub generated_test: &'a str,
    /// The golden test, as the diff that adds it.
    pub golden_test: &'a str,
    /// The sources of both tests' files (for the shortcut operator).
    pub test_sources: Vec<&'a str>,
}

impl Subject<'_> {
    fn base(&self) -> BTreeMap<String, String> {
        self.golden
            .iter()
            .map(|f| (f.path.clone(), f.base.clone()))
            .collect()
    }

    /// A variant's files, checked: a change against the base, in files that
    /// still parse.
    fn admit(
        &self,
        operator: &str,
        sample: u32,
        description: String,
        files: BTreeMap<String, String>,
    ) -> Drawn {
        let discard = |reason: String| Discard {
            operator: operator.into(),
            sample,
            reason,
        };
        let base = self.base();
        let changed: BTreeMap<String, String> = files
            .into_iter()
            .filter(|(p, text)| base.get(p) != Some(text))
            .collect();
        if changed.is_empty() {
            return Err(discard(
                "it changes nothing: it is the buggy program".into(),
            ));
        }
        for (path, text) in &changed {
            // A fix variant is code: one that edits the tests or the test
            // configuration judges itself. The golden fix's own files are code
            // wherever they lie.
            let golden = self.golden.iter().any(|f| &f.path == path);
            if !golden && (!path.ends_with(".py") || crate::grading::instance::is_test_path(path)) {
                return Err(discard(format!(
                    "it changes {path}, which is not code the fix may change (a test, or not \
                     Python)"
                )));
            }
            if path.ends_with(".py") {
                if let Some(e) = critic_sdk::python::syntax_error(text) {
                    return Err(discard(format!("{path} does not parse: {e}")));
                }
            }
        }
        Ok(Variant {
            operator: operator.into(),
            sample,
            description,
            files: changed,
        })
    }
}

/// A source of variants for one subject.
pub trait Sampler {
    /// For each `(operator, first, n)`: draws `first..first + n` of that
    /// operator, in order; fewer when the source has no more. An error is
    /// the source's failure (the model could not be reached), not a variant's.
    fn draw(
        &mut self,
        subject: &Subject,
        wants: &[(Operator, u32, u32)],
    ) -> Result<Vec<Drawn>, String>;

    /// Whether `op` can give a draw number `sample` at all.
    fn has(&mut self, subject: &Subject, op: Operator, sample: u32) -> bool;
}

/// The model path.
pub struct ModelSampler<'a> {
    /// The client (with its cache directory).
    pub client: &'a LlmClient,
    /// The prompts.
    pub templates: critic_sdk::templates::Templates,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Cap on an answer's tokens.
    pub max_tokens: Option<u32>,
    /// Mixed into the pair order, so a run can be repeated with another.
    pub seed: u64,
    /// How long one batch of requests may take in all.
    pub batch_timeout: Duration,
}

/// The shipped prompt and the operators' instructions (shared with
/// CoHarden's skill, so both describe an operator in the same words).
pub const TEMPLATES: &[(&str, &str)] = &[
    ("mutation", include_str!("templates/mutation.md.j2")),
    (
        "operators/vanilla",
        include_str!("../../skills/coharden/templates/operators/vanilla.md.j2"),
    ),
    (
        "operators/symptom_suppression",
        include_str!("../../skills/coharden/templates/operators/symptom_suppression.md.j2"),
    ),
    (
        "operators/incomplete_fix",
        include_str!("../../skills/coharden/templates/operators/incomplete_fix.md.j2"),
    ),
    (
        "operators/input_shortcut",
        include_str!("../../skills/coharden/templates/operators/input_shortcut.md.j2"),
    ),
    (
        "operators/behavior_substitution",
        include_str!("../../skills/coharden/templates/operators/behavior_substitution.md.j2"),
    ),
];

#[derive(Serialize)]
struct NumberedFile<'a> {
    path: &'a str,
    numbered: String,
}

/// Whether draw `sample` of `op` shows the generated test second: a fixed
/// function of the subject and the seed (so replay sees the same prompts),
/// varying from draw to draw so neither position means "generated".
fn swapped(s: &Subject, seed: u64, op: Operator, sample: u32) -> bool {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(format!(
        "{seed}|{}|{}|{}|{sample}",
        s.instance_id,
        s.generator,
        operator_name(op)
    ));
    h.finalize()[0] & 1 == 1
}

impl ModelSampler<'_> {
    /// The request for draw `sample` of `op`.
    pub fn request(&self, s: &Subject, op: Operator, sample: u32) -> Result<LlmRequest, String> {
        let files: Vec<NumberedFile> = s
            .golden
            .iter()
            .map(|f| NumberedFile {
                path: &f.path,
                numbered: edit_file::numbered(&f.base),
            })
            .collect();
        let instructions = self
            .templates
            .render(&format!("operators/{}", operator_name(op)), json!({}))?;
        let (t1, t2) = if swapped(s, self.seed, op, sample) {
            (s.golden_test, s.generated_test)
        } else {
            (s.generated_test, s.golden_test)
        };
        let prompt = self.templates.render(
            "mutation",
            json!({
                "issue": s.issue,
                "files": files,
                "reference_fix": s.golden_diff,
                "test_1": t1,
                "test_2": t2,
                "operator": instructions,
            }),
        )?;
        Ok(LlmRequest {
            messages: vec![ChatMessage {
                role: "user".into(),
                content: prompt,
            }],
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            sample,
        })
    }
}

impl Sampler for ModelSampler<'_> {
    fn draw(&mut self, s: &Subject, wants: &[(Operator, u32, u32)]) -> Result<Vec<Drawn>, String> {
        let mut jobs = Vec::new();
        let mut out = Vec::new();
        let mut requests = Vec::new();
        for &(op, first, n) in wants {
            for sample in first..first + n {
                match self.request(s, op, sample) {
                    Ok(r) => {
                        jobs.push((op, sample));
                        requests.push(r);
                    }
                    Err(e) => out.push(Err(Discard {
                        operator: operator_name(op).into(),
                        sample,
                        reason: format!("the prompt could not be made: {e}"),
                    })),
                }
            }
        }
        let answers = self
            .client
            .complete(&requests, Instant::now() + self.batch_timeout)?;
        let base = s.base();
        for ((op, sample), answer) in jobs.into_iter().zip(answers) {
            let name = operator_name(op);
            let discard = |reason: String| Discard {
                operator: name.into(),
                sample,
                reason,
            };
            let text = match (answer.content, answer.error) {
                (_, Some(e)) => return Err(format!("the model request failed: {e}")),
                (Some(t), None) => t,
                (None, None) => {
                    out.push(Err(discard("the model returned no text".into())));
                    continue;
                }
            };
            let drawn = edit_file::parse(&text)
                .map_err(|e| format!("unusable answer: {e}"))
                .and_then(|edits| {
                    edit_file::apply(&base, &edits)
                        .map_err(|e| format!("the edits do not apply: {e}"))
                });
            out.push(match drawn {
                Ok(files) => s.admit(name, sample, format!("model sample {}", sample + 1), files),
                Err(reason) => Err(discard(reason)),
            });
        }
        Ok(out)
    }

    fn has(&mut self, _: &Subject, _: Operator, _: u32) -> bool {
        true
    }
}

/// The SDK's deterministic operators: every mutant of each operator, in an
/// order that spreads the first `budget` draws over the candidates.
pub struct Deterministic {
    /// Samples per operator (the spread's first picks).
    pub budget: usize,
    by_operator: Option<BTreeMap<&'static str, Vec<critic_sdk::mutants::Mutant>>>,
}

impl Deterministic {
    /// A sampler whose first `budget` draws of an operator are spread.
    pub fn new(budget: usize) -> Deterministic {
        Deterministic {
            budget,
            by_operator: None,
        }
    }

    fn candidates(
        &mut self,
        s: &Subject,
    ) -> &BTreeMap<&'static str, Vec<critic_sdk::mutants::Mutant>> {
        self.by_operator.get_or_insert_with(|| {
            let mut by: BTreeMap<&'static str, Vec<_>> = BTreeMap::new();
            for m in critic_sdk::mutants::all(s.golden, &s.test_sources) {
                by.entry(operator_name(m.operator)).or_default().push(m);
            }
            by
        })
    }
}

/// `0..len` with `n` evenly spaced indices first, then the rest in order.
fn spread(len: usize, n: usize) -> Vec<usize> {
    let picks = n.min(len);
    let mut order: Vec<usize> = (0..picks).map(|i| i * len / picks.max(1)).collect();
    order.dedup();
    let rest: Vec<usize> = (0..len).filter(|i| !order.contains(i)).collect();
    order.extend(rest);
    order
}

impl Sampler for Deterministic {
    fn draw(&mut self, s: &Subject, wants: &[(Operator, u32, u32)]) -> Result<Vec<Drawn>, String> {
        let budget = self.budget;
        let base = s.base();
        let mut out = Vec::new();
        for &(op, first, n) in wants {
            let Some(list) = self.candidates(s).get(operator_name(op)) else {
                continue;
            };
            let order = spread(list.len(), budget);
            for sample in first..first + n {
                let Some(m) = order.get(sample as usize).map(|&i| &list[i]) else {
                    break;
                };
                let mut files = base.clone();
                files.extend(m.files.clone());
                out.push(s.admit(operator_name(op), sample, m.description.clone(), files));
            }
        }
        Ok(out)
    }

    fn has(&mut self, s: &Subject, op: Operator, sample: u32) -> bool {
        self.candidates(s)
            .get(operator_name(op))
            .is_some_and(|l| (sample as usize) < l.len())
    }
}

/// Ready-made diffs, `DIR/<instance_id>/*.diff`, read in name order. A file
/// named `<operator>...` counts for that operator; any other name is
/// `external`.
pub struct PoolDir<'a> {
    /// The directory of this instance's diffs.
    pub dir: PathBuf,
    /// Base contents by path, to apply the diffs to.
    pub base: &'a dyn Fn(&str) -> Result<Option<String>, String>,
}

/// The largest pool diff read.
const MAX_POOL_DIFF_BYTES: u64 = 16 << 20;

impl PoolDir<'_> {
    /// The `.diff` files, in name order.
    pub fn files(dir: &Path) -> Result<Vec<PathBuf>, String> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "diff"))
            .collect();
        files.sort();
        Ok(files)
    }

    /// The operator a pool file's name gives.
    pub fn operator_of(path: &Path) -> String {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        OPERATORS
            .iter()
            .map(|&op| operator_name(op))
            .find(|name| stem.starts_with(name))
            .unwrap_or("external")
            .to_string()
    }

    /// Every diff of the directory as a variant or a discard.
    pub fn read_all(&self, s: &Subject) -> Result<Vec<Drawn>, String> {
        let mut count: BTreeMap<String, u32> = BTreeMap::new();
        let mut out = Vec::new();
        for path in Self::files(&self.dir)? {
            let operator = Self::operator_of(&path);
            let sample = {
                let c = count.entry(operator.clone()).or_default();
                *c += 1;
                *c - 1
            };
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let discard = |reason: String| Discard {
                operator: operator.clone(),
                sample,
                reason: format!("{name}: {reason}"),
            };
            let drawn =
                crate::sys::bounded_read::read_regular_file_nofollow(&path, MAX_POOL_DIFF_BYTES)
                    .map_err(|e| format!("cannot read it: {e}"))
                    .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()))
                    .and_then(|text| apply_diff(&text, &*self.base));
            out.push(match drawn {
                Ok(files) => {
                    let mut all = s.base();
                    all.extend(files);
                    s.admit(&operator, sample, format!("pool file {name}"), all)
                }
                Err(reason) => Err(discard(reason)),
            });
        }
        Ok(out)
    }
}

/// A git diff from `old` to `new` for each file, that
/// [`crate::grading::diff_files::apply_diff`] (and `git apply`) take back.
pub fn git_diff(files: &BTreeMap<String, String>, old: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    for (path, new) in files {
        let before = old(path);
        let body = critic_sdk::diff::unified(path, &before, new);
        if body.is_empty() {
            continue;
        }
        out.push_str(&format!("diff --git a/{path} b/{path}\n"));
        out.push_str(&body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden() -> Vec<FixFile> {
        let base = "def merge(a, b):\n    if a[1] < b[0]:\n        return None\n    return (a[0], max(a[1], b[1]))\n";
        let fixed = base.replace("a[1] < b[0]", "a[1] <= b[0] - 1");
        let diff = format!(
            "diff --git a/pkg/m.py b/pkg/m.py\n{}",
            critic_sdk::diff::unified("pkg/m.py", base, &fixed)
        );
        let hunks = critic_sdk::diff::parse(&diff).unwrap().remove(0).hunks;
        vec![FixFile {
            path: "pkg/m.py".into(),
            base: base.into(),
            fixed,
            hunks,
        }]
    }

    fn subject(golden: &[FixFile]) -> Subject<'_> {
        Subject {
            instance_id: "i-1",
            generator: "gen",
            issue: "Touching intervals are not merged.",
            golden,
            golden_diff: "GOLDEN DIFF",
            generated_test: "ALPHA TEST",
            golden_test: "BETA TEST",
            test_sources: vec!["merge((1, 2), (2, 3))"],
        }
    }

    #[test]
    fn prompts_show_the_tests_as_an_anonymous_pair_in_both_orders() {
        let client = LlmClient::new(None);
        let sampler = ModelSampler {
            client: &client,
            templates: critic_sdk::templates::Templates::new(TEMPLATES, &BTreeMap::new()).unwrap(),
            temperature: Some(1.0),
            max_tokens: None,
            seed: 0,
            batch_timeout: Duration::from_secs(1),
        };
        let g = golden();
        let s = subject(&g);
        let mut firsts = Vec::new();
        for op in OPERATORS {
            for sample in 0..4 {
                let r = sampler.request(&s, op, sample).unwrap();
                let text = &r.messages[0].content;
                assert!(text.contains("Touching intervals are not merged."));
                assert!(text.contains("2     if a[1] < b[0]:"), "{text}");
                assert!(text.contains("GOLDEN DIFF"));
                assert!(
                    !text.to_lowercase().contains("generated"),
                    "the pair is anonymous"
                );
                assert_eq!(r, sampler.request(&s, op, sample).unwrap(), "replayable");
                firsts.push(text.find("ALPHA TEST") < text.find("BETA TEST"));
            }
        }
        assert!(firsts.contains(&true) && firsts.contains(&false));
    }

    #[test]
    fn deterministic_draws_spread_and_end() {
        let g = golden();
        let s = subject(&g);
        let mut d = Deterministic::new(2);
        let drawn = d
            .draw(&s, &[(Operator::BehaviorSubstitution, 0, 100)])
            .unwrap();
        assert!(drawn.len() >= 2 && drawn.len() < 100, "{}", drawn.len());
        assert!(drawn.iter().all(|v| v
            .as_ref()
            .is_ok_and(|v| v.operator == "behavior_substitution")));
        assert!(!d.has(&s, Operator::Vanilla, 0));
        assert!(d.draw(&s, &[(Operator::Vanilla, 0, 3)]).unwrap().is_empty());
        assert_eq!(spread(10, 3), [0, 3, 6, 1, 2, 4, 5, 7, 8, 9]);
    }

    #[test]
    fn a_variant_that_is_the_base_or_does_not_parse_is_discarded() {
        let g = golden();
        let s = subject(&g);
        let base = s.base();
        assert!(s
            .admit("vanilla", 0, String::new(), base.clone())
            .unwrap_err()
            .reason
            .contains("changes nothing"));
        let broken: BTreeMap<String, String> =
            [("pkg/m.py".to_string(), "def (:\n".to_string())].into();
        assert!(s
            .admit("vanilla", 1, String::new(), broken)
            .unwrap_err()
            .reason
            .contains("does not parse"));
        for path in ["tests/conftest.py", "pkg/test_m.py", "setup.cfg"] {
            let mut files = base.clone();
            files.insert(path.into(), "x = 1\n".into());
            files.insert("pkg/m.py".into(), g[0].fixed.clone());
            let e = s.admit("vanilla", 2, String::new(), files).unwrap_err();
            assert!(e.reason.contains(path), "{}", e.reason);
        }
    }
}
