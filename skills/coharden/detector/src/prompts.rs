//! The text CoHarden writes, rendered with minijinja from the templates in
//! the skill's `templates/` directory (compiled in). `config.templates` can
//! replace any of them by name without rebuilding the detector.

use serde::Serialize;
use std::collections::BTreeMap;

/// The shipped templates, by name.
const SHIPPED: &[(&str, &str)] = &[
    ("task", include_str!("../../templates/task.md.j2")),
    (
        "task-no-lax-init",
        include_str!("../../templates/task-no-lax-init.md.j2"),
    ),
    ("round0", include_str!("../../templates/round0.md.j2")),
    ("bootstrap", include_str!("../../templates/bootstrap.md.j2")),
    ("retry", include_str!("../../templates/retry.md.j2")),
    ("hardening", include_str!("../../templates/hardening.md.j2")),
    (
        "regression",
        include_str!("../../templates/regression.md.j2"),
    ),
    ("feedback", include_str!("../../templates/feedback.md.j2")),
    ("mutation", include_str!("../../templates/mutation.md.j2")),
    (
        "operators/symptom_suppression",
        include_str!("../../templates/operators/symptom_suppression.md.j2"),
    ),
    (
        "operators/incomplete_fix",
        include_str!("../../templates/operators/incomplete_fix.md.j2"),
    ),
    (
        "operators/input_shortcut",
        include_str!("../../templates/operators/input_shortcut.md.j2"),
    ),
    (
        "operators/behavior_substitution",
        include_str!("../../templates/operators/behavior_substitution.md.j2"),
    ),
    (
        "operators/vanilla",
        include_str!("../../templates/operators/vanilla.md.j2"),
    ),
];

/// The loaded templates.
pub type Prompts = critic_sdk::templates::Templates;

/// The shipped templates, with `overrides` (`config.templates`) in place of
/// the ones they name.
pub fn load(overrides: &BTreeMap<String, String>) -> Result<Prompts, String> {
    Prompts::new(SHIPPED, overrides)
}

/// A test file for a template: path and content ending in a newline.
#[derive(Debug, Clone, Serialize)]
pub struct FileText {
    /// Workspace-relative path.
    pub path: String,
    /// Content (`(deleted)` for a deleted file).
    pub content: String,
}

/// Test files as template items.
pub fn file_texts(files: &BTreeMap<String, Option<String>>) -> Vec<FileText> {
    files
        .iter()
        .map(|(path, content)| {
            let mut content = content.clone().unwrap_or_else(|| "(deleted)".into());
            if !content.ends_with('\n') {
                content.push('\n');
            }
            FileText {
                path: path.clone(),
                content,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_shipped_template_compiles_and_overrides_are_checked() {
        let p = load(&BTreeMap::new()).unwrap();
        let text = p
            .render(
                "round0",
                json!({"problem": "passes_on_base", "test_command": "python reproduction.py",
                       "output_tail": "", "bug_exit": "a non-zero code"}),
            )
            .unwrap();
        assert!(text.contains("exits 0 on the unfixed code"), "{text}");
        let mine = BTreeMap::from([("bootstrap".to_string(), "Next: {{ round }}".to_string())]);
        let p = load(&mine).unwrap();
        assert_eq!(
            p.render("bootstrap", json!({"round": 1})).unwrap(),
            "Next: 1\n"
        );
        let bad = BTreeMap::from([("bootstrp".to_string(), "x".to_string())]);
        assert!(load(&bad).err().unwrap().contains("no such template"));
        let broken = BTreeMap::from([("bootstrap".to_string(), "{% if %}".to_string())]);
        assert!(load(&broken)
            .err()
            .unwrap()
            .starts_with("config.templates.bootstrap"));
    }

    #[test]
    fn a_missing_variable_is_an_error_not_an_empty_string() {
        let p = load(&BTreeMap::new()).unwrap();
        let e = p.render("bootstrap", json!({})).unwrap_err();
        assert!(e.contains("bootstrap"), "{e}");
    }
}
