//! Prompt templates for detectors (feature `templates`): a skill's minijinja
//! templates, compiled into its detector, any of which the signal's
//! `config.templates` can replace by name without rebuilding it. A variable
//! a template uses but is not given is an error, never an empty string.

use serde::Serialize;
use std::collections::BTreeMap;

/// A skill's templates, loaded.
pub struct Templates {
    env: minijinja::Environment<'static>,
}

impl Templates {
    /// The `shipped` templates (name, source), with `overrides` (from
    /// `config.templates`) in place of the ones they name.
    pub fn new(
        shipped: &'static [(&'static str, &'static str)],
        overrides: &BTreeMap<String, String>,
    ) -> Result<Templates, String> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, source) in shipped {
            if !overrides.contains_key(*name) {
                env.add_template(name, source)
                    .map_err(|e| format!("shipped template `{name}`: {e}"))?;
            }
        }
        for (name, source) in overrides {
            if !shipped.iter().any(|(n, _)| n == name) {
                let known: Vec<&str> = shipped.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "config.templates.{name}: no such template; known: {}",
                    known.join(", ")
                ));
            }
            env.add_template_owned(name.clone(), source.clone())
                .map_err(|e| format!("config.templates.{name}: {e}"))?;
        }
        Ok(Templates { env })
    }

    /// Render template `name` with `context`, trimmed, ending in a newline.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHIPPED: &[(&str, &str)] = &[("next", "Round {{ round }}.")];

    #[test]
    fn overrides_replace_by_name_and_are_checked() {
        let t = Templates::new(SHIPPED, &BTreeMap::new()).unwrap();
        assert_eq!(t.render("next", json!({"round": 2})).unwrap(), "Round 2.\n");
        let mine = BTreeMap::from([("next".to_string(), "Next: {{ round }}".to_string())]);
        let t = Templates::new(SHIPPED, &mine).unwrap();
        assert_eq!(t.render("next", json!({"round": 1})).unwrap(), "Next: 1\n");
        let bad = BTreeMap::from([("nxt".to_string(), "x".to_string())]);
        let e = Templates::new(SHIPPED, &bad).err().unwrap();
        assert_eq!(e, "config.templates.nxt: no such template; known: next");
        let broken = BTreeMap::from([("next".to_string(), "{% if %}".to_string())]);
        let e = Templates::new(SHIPPED, &broken).err().unwrap();
        assert!(e.starts_with("config.templates.next"), "{e}");
    }

    #[test]
    fn a_missing_variable_is_an_error_not_an_empty_string() {
        let t = Templates::new(SHIPPED, &BTreeMap::new()).unwrap();
        let e = t.render("next", json!({})).unwrap_err();
        assert!(e.contains("next"), "{e}");
    }
}
