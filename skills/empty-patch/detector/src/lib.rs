//! Fires when the working-tree diff is empty: the agent says it is done but
//! changed nothing. Parity with the OpenHands SDK's `EmptyPatchCritic`.

use critic_sdk::{DetectorInput, DetectorOutput};
use serde_json::json;

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    if input.patch.raw.trim().is_empty() {
        return Ok(DetectorOutput::fire(
            "Your working tree has no changes against the base commit, so there is nothing to \
             evaluate. Make the change the task asks for, then finish again.",
        )
        .with_metadata(json!({ "reason": "empty patch" })));
    }
    Ok(DetectorOutput::pass().with_metadata(json!({ "files": input.patch.files.len() })))
}

critic_sdk::export_detector!(detect);
