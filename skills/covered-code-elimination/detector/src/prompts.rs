//! The text the skill writes, rendered with minijinja from the templates in
//! the skill's `templates/` directory (compiled in); `config.templates`
//! replaces any of them by name without rebuilding the detector.

use serde::Serialize;
use std::collections::BTreeMap;

/// The shipped templates, by name.
const SHIPPED: &[(&str, &str)] = &[
    ("task", include_str!("../../templates/task.md.j2")),
    (
        "next_slice",
        include_str!("../../templates/next_slice.md.j2"),
    ),
    ("refine", include_str!("../../templates/refine.md.j2")),
    ("report", include_str!("../../templates/report.md.j2")),
    ("summary", include_str!("../../templates/summary.md.j2")),
];

/// The loaded templates.
pub struct Prompts {
    env: minijinja::Environment<'static>,
}

impl Prompts {
    /// The shipped templates, with `overrides` in place of the ones they name.
    pub fn new(overrides: &BTreeMap<String, String>) -> Result<Prompts, String> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, source) in SHIPPED {
            if !overrides.contains_key(*name) {
                env.add_template(name, source)
                    .map_err(|e| format!("shipped template `{name}`: {e}"))?;
            }
        }
        for (name, source) in overrides {
            if !SHIPPED.iter().any(|(n, _)| n == name) {
                let known: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "config.templates.{name}: no such template; known: {}",
                    known.join(", ")
                ));
            }
            env.add_template_owned(name.clone(), source.clone())
                .map_err(|e| format!("config.templates.{name}: {e}"))?;
        }
        Ok(Prompts { env })
    }

    /// Render template `name` with `context`.
    pub fn render(&self, name: &str, context: impl Serialize) -> Result<String, String> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| format!("template `{name}`: {e}"))?;
        template
            .render(context)
            .map(|s| s.trim().to_string() + "\n")
            .map_err(|e| format!("template `{name}` failed to render: {e}"))
    }
}
