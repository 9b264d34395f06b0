//! A run's definition: everything that decides what the run does and how
//! it is graded (the instance record, the arm with its skill's digest and
//! task, the sample, the agent, the model, the budgets, the environment and
//! the grading code's version, [`crate::grading::VERSION`]). An output directory keeps each finished run's
//! definition; a rerun reuses a run only while its definition is unchanged
//! (see [`super::rebuild`]).

use crate::experiment::arm;
use crate::experiment::file::Experiment;
use crate::grading::dataset::Instance;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Texts longer than this are kept as their digest: a definition names
/// what changed, it does not hold the patches.
const INLINE_TEXT: usize = 120;

/// What defines one run of `arm` (an arm of the file) or of the control
/// named `name` (`arm` is `None`), on `instance` with `python`.
pub fn of(
    exp: &Experiment,
    instance: &Instance,
    python: &Path,
    arm: Option<&arm::Prepared>,
    name: &str,
    sample: u32,
    environment: &Value,
) -> Value {
    let resolved = &exp.resolved;
    let mut def = json!({
        "instance": of_instance(instance),
        "python": python,
        "sample": sample,
        "test_timeout": resolved["test_timeout"],
        "container": resolved["container"],
        "environment": environment,
        "grading": crate::grading::VERSION,
    });
    match arm {
        Some(a) => {
            // The arm as written, less the paths its digests stand for.
            let mut written = resolved["arms"][&a.name].clone();
            if let Some(o) = written.as_object_mut() {
                o.remove("skill");
                o.remove("task");
            }
            def["arm"] = json!({
                "as_written": written,
                "skill": a.source_digest,
                "task": digest(&a.task),
            });
            def["seed"] = json!(exp.seed);
            for part in ["agent", "model", "budget"] {
                def[part] = resolved[part].clone();
            }
            // The experiment's cost cap decides which runs start, not what
            // a run does: raising it to go on keeps the runs made.
            if let Some(b) = def["budget"].as_object_mut() {
                b.remove("total_cost");
            }
        }
        None => def["control"] = json!(name),
    }
    def
}

/// The instance's record as it defines a run (not where it is written),
/// each field longer than a few words kept as its digest (a SWE-bench
/// record's test lists run to thousands of ids).
fn of_instance(i: &Instance) -> Value {
    let record = json!({
        "id": i.id,
        "repo": i.repo,
        "base_commit": i.base_commit,
        "patch": i.patch,
        "test_patch": i.test_patch,
        "FAIL_TO_PASS": i.fail_to_pass,
        "PASS_TO_PASS": i.pass_to_pass,
        "problem_statement": i.problem_statement,
        "test_cmd": i.test_cmd,
        "version": i.version,
        "environment_setup_commit": i.environment_setup_commit,
        "requirements": i.requirements,
        "log_parser": i.log_parser,
        "eval_type": format!("{:?}", i.eval_type),
        "eval_commands": i.eval_commands,
        "pre_install": i.pre_install,
        "install": i.install,
    });
    let short = |v: &Value| {
        let text = match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        if text.len() > INLINE_TEXT {
            json!(digest(&text))
        } else {
            v.clone()
        }
    };
    Value::Object(
        record
            .as_object()
            .expect("a record is an object")
            .iter()
            .map(|(k, v)| (k.clone(), short(v)))
            .collect(),
    )
}

/// `sha256:<hex>` of `text`.
fn digest(text: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// What differs from `old` to `new`, one entry per changed field, in
/// words: `max_iterations 2 -> 3`, `the skill's files changed`.
pub fn changes(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", old, new, &mut out);
    out
}

fn walk(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    if old == new {
        return;
    }
    if let (Value::Object(a), Value::Object(b)) = (old, new) {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        let none = Value::Null;
        for k in keys {
            let at = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            walk(
                &at,
                a.get(k).unwrap_or(&none),
                b.get(k).unwrap_or(&none),
                out,
            );
        }
        return;
    }
    let name = match path {
        "arm.skill" => return out.push("the skill's files changed".into()),
        "arm.task" => return out.push("the task template changed".into()),
        "grading" => "grading code version",
        p => p.strip_prefix("arm.as_written.").unwrap_or(p),
    };
    let digested = |v: &Value| v.as_str().is_some_and(|s| s.starts_with("sha256:"));
    if digested(old) || digested(new) {
        out.push(format!("{name} changed"));
    } else {
        out.push(format!("{name} {} -> {}", shown(old), shown(new)));
    }
}

/// `v` in a few characters.
fn shown(v: &Value) -> String {
    let s = match v {
        Value::Null => "(none)".to_string(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s
    }
}

/// The definition as stored: compact JSON, keys in order.
pub fn text(def: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into_iter()
                    .collect::<Map<_, _>>(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            v => v.clone(),
        }
    }
    sorted(def).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_name_the_fields_in_words() {
        let old = json!({"arm": {"as_written": {"max_iterations": 2}, "skill": "sha256:a", "task": "sha256:t"},
                         "sample": 0, "grading": 1, "instance": {"patch": "sha256:p"}});
        let new = json!({"arm": {"as_written": {"max_iterations": 3}, "skill": "sha256:b", "task": "sha256:t"},
                         "sample": 0, "grading": 2, "instance": {"patch": "sha256:q"}});
        assert_eq!(
            changes(&old, &new),
            [
                "max_iterations 2 -> 3",
                "the skill's files changed",
                "grading code version 1 -> 2",
                "instance.patch changed",
            ]
        );
        assert!(changes(&old, &old).is_empty());
        let added = json!({"arm": {"as_written": {"max_iterations": 2, "config": {"k": 1}}, "skill": "sha256:a", "task": "sha256:t"},
                           "sample": 0, "grading": 1, "instance": {"patch": "sha256:p"}});
        assert_eq!(changes(&old, &added), [r#"config (none) -> {"k":1}"#]);
    }

    #[test]
    fn long_fields_of_the_record_are_kept_as_digests() {
        let i = Instance {
            id: "a__b-1".into(),
            patch: "x".repeat(1000),
            pass_to_pass: (0..500).map(|n| format!("tests/t.py::test_{n}")).collect(),
            fail_to_pass: vec!["tests/t.py::test_x".into()],
            ..Instance::default()
        };
        let def = of_instance(&i);
        assert_eq!(def["id"], "a__b-1");
        assert_eq!(def["FAIL_TO_PASS"], json!(["tests/t.py::test_x"]));
        for long in ["patch", "PASS_TO_PASS"] {
            assert!(def[long].as_str().unwrap().starts_with("sha256:"), "{def}");
        }
        assert!(text(&def).len() < 1500, "{}", text(&def));
        let mut changed = i.clone();
        changed.pass_to_pass.pop();
        assert_eq!(
            changes(&def, &of_instance(&changed)),
            ["PASS_TO_PASS changed"]
        );
    }

    #[test]
    fn the_stored_text_does_not_depend_on_key_order() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"d": 2, "c": 3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"c": 3, "d": 2}, "b": 1}"#).unwrap();
        assert_eq!(text(&a), text(&b));
    }
}
