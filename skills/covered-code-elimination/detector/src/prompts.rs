//! The text the skill writes, rendered with minijinja from the templates in
//! the skill's `templates/` directory (compiled in); `config.templates`
//! replaces any of them by name without rebuilding the detector.

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
    ("refused", include_str!("../../templates/refused.md.j2")),
    ("summary", include_str!("../../templates/summary.md.j2")),
];

/// The loaded templates.
pub type Prompts = critic_sdk::templates::Templates;

/// The shipped templates, with `overrides` (`config.templates`) in place of
/// the ones they name.
pub fn load(overrides: &BTreeMap<String, String>) -> Result<Prompts, String> {
    Prompts::new(SHIPPED, overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_template_compiles() {
        load(&BTreeMap::new()).unwrap();
    }
}
