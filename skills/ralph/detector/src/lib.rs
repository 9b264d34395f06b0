//! The Ralph arm, the paper's budget-matched self-refinement baseline: the
//! same generic "review and improve" follow-up after every finish, with no
//! check of the work behind it. The gate fires on every finish; the host's
//! rejection budget (the manifest's `max_iterations`, K) ends the loop by
//! accepting the finish after the K-th rejection with `budget_exhausted`.

use critic_sdk::arms::{self, answer};
use critic_sdk::{DetectorInput, DetectorOutput};
use serde::Deserialize;
use serde_json::json;

/// The arm's name in the verdict's metadata.
pub const ARM: &str = "ralph";

/// The follow-up unless configured: generic, the same every time, and
/// without any diagnosis of the work.
pub const REVIEW: &str = "Review your work and improve it. Re-read the issue description and \
your changes: does the fix address the cause of the issue, not only its symptom, and does \
your test check the behavior the issue describes? Run the tests, improve the fix and the test \
where you can, keep both in your patch, and call `finish` again.";

/// The detector's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Config {
    /// The text sent after every finish.
    followup: String,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            followup: REVIEW.into(),
        }
    }
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = arms::config(input)?;
    if config.followup.trim().is_empty() {
        return Err("config.followup: give the text to send after every finish".into());
    }
    Ok(answer(
        ARM,
        &input.patch,
        Some(config.followup),
        format!("finish {}: review and improve", input.iteration),
        json!({ "iteration": input.iteration }),
    ))
}

critic_sdk::export_detector!(detect);

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::TestInput;

    #[test]
    fn every_finish_gets_the_same_follow_up() {
        let texts: Vec<String> = (1..=3)
            .map(|i| {
                let out = TestInput::new().iteration(i).run(detect).unwrap();
                assert!(out.triggered);
                assert_eq!(out.metadata["arm"], "ralph");
                assert_eq!(out.metadata["iteration"], i);
                out.followup_text.unwrap()
            })
            .collect();
        assert!(texts.iter().all(|t| t == REVIEW));
    }

    #[test]
    fn the_follow_up_is_configurable_but_not_empty() {
        let out = TestInput::new()
            .config(json!({"followup": "Improve it."}))
            .run(detect)
            .unwrap();
        assert_eq!(out.followup_text.unwrap(), "Improve it.");
        let e = TestInput::new()
            .config(json!({"followup": " "}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.followup: "), "{e}");
        let e = TestInput::new()
            .config(json!({"rounds": 5}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.rounds: unknown field"), "{e}");
    }
}
