//! An arm made ready: its skill copied into the output directory with the
//! arm's overrides written into the copy's manifest (so the skill cannot
//! change under a running experiment, and the manifest records exactly
//! what ran), its digest, and its task prompt rendered per instance.

use crate::experiment::file::Arm;
use crate::grading::dataset::Instance;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Names skipped when a skill is copied: build output and version control.
const SKIPPED: &[&str] = &["target", ".git", "node_modules", "__pycache__"];
/// The most bytes of a skill copied (its components, templates, sources).
const MAX_SKILL_BYTES: u64 = 256 << 20;

/// An arm's skill as the experiment runs it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The arm's name.
    pub name: String,
    /// The copy with the overrides applied.
    pub skill: PathBuf,
    /// SHA-256 of the copy's files (paths and contents, in path order).
    pub digest: String,
    /// The same of the skill as its author wrote it, before the arm's
    /// overrides.
    pub source_digest: String,
    /// The task template's source.
    pub task: String,
    /// Variables from the skill's config and the arm's `vars`.
    pub vars: Map<String, Value>,
    /// The signal config as the copy has it (the first signal's).
    pub config: Value,
    /// The copy's test patterns.
    pub test_patterns: Vec<String>,
}

/// Copy `arm`'s skill to `dest` (replacing what is there), apply its
/// overrides and load the result. An error names the arm and the file.
pub fn prepare(arm: &Arm, dest: &Path) -> Result<Prepared, String> {
    let at = |e: String| format!("arm {}: {e}", arm.name);
    if dest.exists() {
        crate::sys::remove_tree::remove_tree(dest)
            .map_err(|e| at(format!("{}: cannot replace: {e}", dest.display())))?;
    }
    let mut budget = MAX_SKILL_BYTES;
    copy_tree(&arm.skill, dest, &mut budget).map_err(at)?;
    let source_digest = digest(dest).map_err(at)?;
    let manifest_path = dest.join(crate::skill::MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest_path)
        .map_err(|e| at(format!("{}: {e}", manifest_path.display())))?;
    let mut doc = crate::skill::yaml::parse(&text)
        .map_err(|e| at(format!("{}: {}", manifest_path.display(), e.message)))?
        .value;
    if let Some(n) = arm.max_iterations {
        doc["max_iterations"] = json!(n);
    }
    if let Some(config) = &arm.config {
        let signals = doc["signals"]
            .as_array_mut()
            .ok_or_else(|| at("the skill's manifest has no signals".into()))?;
        let several = signals.len() > 1;
        for signal in signals.iter_mut() {
            let name = signal["name"].as_str().unwrap_or_default().to_string();
            let patch = if several {
                match config.get(&name) {
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => return Err(at(format!("config.{name}: expected a mapping"))),
                    None => continue,
                }
            } else {
                config.clone()
            };
            let target = signal
                .as_object_mut()
                .expect("a signal is a mapping (the schema says so)")
                .entry("config")
                .or_insert_with(|| json!({}));
            merge(target, &Value::Object(patch));
        }
    }
    // JSON is YAML: the copy's manifest is the resolved document.
    let resolved = serde_json::to_string_pretty(&doc).expect("JSON values serialize");
    std::fs::write(&manifest_path, resolved)
        .map_err(|e| at(format!("{}: {e}", manifest_path.display())))?;
    let skill = crate::skill::load(dest).map_err(|e| {
        at(format!(
            "the skill with the arm's overrides is invalid: {e}"
        ))
    })?;
    let task_path = arm
        .task
        .clone()
        .unwrap_or_else(|| arm.skill.join("templates/task.md.j2"));
    let task = std::fs::read_to_string(&task_path)
        .map_err(|e| at(format!("task template {}: {e}", task_path.display())))?;
    let config = skill
        .manifest
        .signals
        .first()
        .map(|s| s.config.clone())
        .unwrap_or(Value::Null);
    let mut vars = config_vars(&config);
    vars.extend(arm.vars.clone());
    Ok(Prepared {
        name: arm.name.clone(),
        digest: digest(dest).map_err(at)?,
        source_digest,
        skill: dest.to_path_buf(),
        task,
        vars,
        config,
        test_patterns: skill.manifest.test_patterns.clone(),
    })
}

/// Every signal config of `arm`'s skill copy that its detector refuses,
/// each naming the experiment `file`, the arm and the signal: checked
/// before anything runs, so a misspelt key is not a run's error later.
pub fn config_problems(
    arm: &Prepared,
    file: &Path,
    runtime: &crate::detector::wasm::Runtime,
) -> Result<Vec<String>, String> {
    let problems =
        crate::evaluate::scorer::SkillCritic::config_problems_of(&arm.skill, runtime, false)
            .map_err(|e| format!("arm {}: cannot check its config: {e}", arm.name))?;
    Ok(problems
        .into_iter()
        .map(|(signal, message)| {
            format!(
                "{}: arm `{}`: signal `{signal}`: {message}",
                file.display(),
                arm.name
            )
        })
        .collect())
}

/// Deep-merge `patch` into `target`: mappings merge key by key, anything
/// else replaces.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// Template variables a skill's config implies: its test file, its test
/// command as one line, and the bug exit as a phrase (CoHarden's task
/// prompt uses all three).
fn config_vars(config: &Value) -> Map<String, Value> {
    let mut vars = Map::new();
    if let Some(f) = config.get("test_file").and_then(Value::as_str) {
        vars.insert("test_file".into(), json!(f));
    }
    if let Some(argv) = config.get("test_command").and_then(Value::as_array) {
        let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
        vars.insert("test_command".into(), json!(words.join(" ")));
    }
    if let Some(bug) = config.get("bug_exit_code") {
        let phrase = match bug {
            Value::Number(n) => format!("code {n}"),
            _ => "a non-zero code".into(),
        };
        vars.insert("bug_exit".into(), json!(phrase));
    }
    vars
}

impl Prepared {
    /// The task prompt for `instance` in `workspace`. A variable the
    /// template uses and nothing gives is an error.
    pub fn render(&self, instance: &Instance, workspace: &Path) -> Result<String, String> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_template("task", &self.task)
            .map_err(|e| format!("arm {}: task template: {e}", self.name))?;
        let mut vars = Map::new();
        vars.insert("workspace".into(), json!(workspace));
        vars.insert("issue".into(), json!(instance.problem_statement));
        vars.insert("base_commit".into(), json!(instance.base_commit));
        vars.insert("instance_id".into(), json!(instance.id));
        vars.insert("repo".into(), json!(instance.repo));
        vars.extend(self.vars.clone());
        env.get_template("task")
            .and_then(|t| t.render(Value::Object(vars)))
            .map(|s| s.trim().to_string() + "\n")
            .map_err(|e| {
                format!(
                    "arm {}: task template failed to render for {}: {e} (give missing \
                     variables in the arm's `vars`)",
                    self.name, instance.id
                )
            })
    }
}

/// Copy the regular files and directories under `from` to `to`, symlinks
/// resolved, at most `budget` bytes in all.
fn copy_tree(from: &Path, to: &Path, budget: &mut u64) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let name = entry.file_name();
        if SKIPPED.iter().any(|s| name == *s) {
            continue;
        }
        let src = entry.path();
        let meta = std::fs::metadata(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        if meta.is_dir() {
            copy_tree(&src, &to.join(&name), budget)?;
        } else if meta.is_file() {
            *budget = budget.checked_sub(meta.len()).ok_or_else(|| {
                format!(
                    "{}: the skill is over {} MiB (build output left in it?)",
                    from.display(),
                    MAX_SKILL_BYTES >> 20
                )
            })?;
            std::fs::copy(&src, to.join(&name)).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// SHA-256 of every file under `dir`: relative path, NUL, length, content.
fn digest(dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let path = entry.map_err(|e| format!("{}: {e}", d.display()))?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        let bytes = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let rel = f.strip_prefix(dir).unwrap_or(&f);
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::file::Arm;

    fn arm(skill: &str, config: Option<Value>, max: Option<u32>) -> Arm {
        Arm {
            name: "a".into(),
            skill: Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("skills")
                .join(skill),
            max_iterations: max,
            config: config.map(|c| c.as_object().unwrap().clone()),
            task: None,
            vars: Map::new(),
        }
    }

    fn instance() -> Instance {
        Instance {
            id: "o__r-1".into(),
            repo: "o/r".into(),
            base_commit: "abc".into(),
            patch: String::new(),
            test_patch: String::new(),
            fail_to_pass: vec![],
            pass_to_pass: vec![],
            problem_statement: "Touching intervals are not merged.".into(),
            place: "i.jsonl:1".into(),
            ..Instance::default()
        }
    }

    #[test]
    fn overrides_land_in_the_copy_and_change_its_digest() {
        let out = tempfile::tempdir().unwrap();
        let plain = prepare(&arm("coharden", None, None), &out.path().join("p")).unwrap();
        let tuned = prepare(
            &arm(
                "coharden",
                Some(json!({"tau": 0.3, "mutation": {"samples": 1}})),
                Some(4),
            ),
            &out.path().join("t"),
        )
        .unwrap();
        assert_ne!(plain.digest, tuned.digest);
        let skill = crate::skill::load(&tuned.skill).unwrap();
        assert_eq!(skill.manifest.max_iterations, 4);
        let config = &skill.manifest.signals[0].config;
        assert_eq!(config["tau"], json!(0.3));
        assert_eq!(config["mutation"]["samples"], json!(1));
        assert_eq!(
            config["mutation"]["source"],
            json!("auto"),
            "merged, not replaced"
        );
        assert!(!tuned.skill.join("detector/target").exists());
        let again = prepare(&arm("coharden", None, None), &out.path().join("p")).unwrap();
        assert_eq!(again.digest, plain.digest, "the digest is of the content");
    }

    #[test]
    fn coharden_prompt_takes_its_variables_from_the_config() {
        let out = tempfile::tempdir().unwrap();
        let p = prepare(&arm("coharden", None, None), &out.path().join("c")).unwrap();
        let text = p.render(&instance(), Path::new("/ws/r")).unwrap();
        assert!(text.contains(
            "<issue_description>\nTouching intervals are not merged.\n</issue_description>"
        ));
        assert!(text.contains("python3 reproduction.py"), "{text}");
        assert!(text.contains("a non-zero code"), "{text}");
    }

    #[test]
    fn a_missing_variable_is_an_error_naming_the_arm() {
        let out = tempfile::tempdir().unwrap();
        let p = prepare(&arm("tdd", None, None), &out.path().join("t")).unwrap();
        let e = p.render(&instance(), Path::new("/ws")).unwrap_err();
        assert!(
            e.contains("arm a: task template failed to render for o__r-1"),
            "{e}"
        );
        assert!(e.contains("vars"), "{e}");
    }
}
