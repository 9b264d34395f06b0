//! Fires unless the agent's last action is a finish and the patch is non-empty.
//! Parity with the OpenHands SDK's `AgentFinishedCritic`, which checks the patch
//! first and then the last action.

use critic_sdk::{finished, DetectorInput, DetectorOutput, EventKind};
use serde_json::json;

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    if input.patch.raw.trim().is_empty() {
        return Ok(DetectorOutput::fire(
            "You finished without changing any file. Make the change the task asks for, then \
             finish again.",
        )
        .with_metadata(json!({ "reason": "empty patch" })));
    }
    // Only the stream from the last action on decides it.
    let tail =
        input.events_from_last(|e| matches!(e.kind, EventKind::Action | EventKind::Finish))?;
    if !finished(&tail) {
        return Ok(DetectorOutput::fire(
            "Your last action was not a finish: the run stopped before you declared the task \
             done. Complete the task and end with the finish tool.",
        )
        .with_metadata(json!({ "reason": "no finish action" })));
    }
    Ok(
        DetectorOutput::pass()
            .with_metadata(json!({ "reason": "finished with a non-empty patch" })),
    )
}

critic_sdk::export_detector!(detect);
