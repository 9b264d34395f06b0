//! The FIX-only arm, the paper's no-BRT baseline: the agent fixes the issue
//! from its description alone and nothing checks the fix. Any non-empty
//! patch is accepted; an empty one is rejected (the manifest's
//! `max_iterations` bounds how often). The verdict records what changed:
//! each file, its added and removed lines, and which files are tests.

use critic_sdk::arms::{self, answer};
use critic_sdk::{DetectorInput, DetectorOutput};
use serde::Deserialize;
use serde_json::json;

/// The arm's name in the verdict's metadata.
pub const ARM: &str = "fix-only";

/// The follow-up to an empty patch.
const EMPTY: &str = "Your patch is empty: the working tree has no change against the base \
commit. Make the changes to the non-test files that resolve the issue, keep them in the \
working tree (uncommitted), and call `finish` again.";

/// The detector's configuration: nothing to set, but a key given is checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let Config {} = arms::config(input)?;
    let patch = &input.patch;
    if patch.is_empty() {
        return Ok(answer(
            ARM,
            patch,
            Some(EMPTY.into()),
            "empty patch",
            json!({}),
        ));
    }
    let (tests, sources) = (patch.test_files().count(), patch.source_files().count());
    let summary = format!(
        "{} files changed ({sources} source, {tests} test), +{} -{}",
        patch.files.len(),
        patch.files.iter().map(|f| f.added).sum::<usize>(),
        patch.files.iter().map(|f| f.removed).sum::<usize>(),
    );
    Ok(answer(ARM, patch, None, summary, json!({})))
}

critic_sdk::export_detector!(detect);

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::TestInput;
    use serde_json::Value;

    const FIX: &str = "diff --git a/intervals/merge.py b/intervals/merge.py\n\
        --- a/intervals/merge.py\n+++ b/intervals/merge.py\n@@ -1,2 +1,2 @@\n x = 1\n\
        -if a < b:\n+if a <= b:\n";
    const TEST: &str = "diff --git a/tests/test_merge.py b/tests/test_merge.py\n\
        --- a/tests/test_merge.py\n+++ b/tests/test_merge.py\n@@ -1 +1,3 @@\n x = 1\n+y = 2\n+z = 3\n";

    #[test]
    fn a_patch_is_accepted_with_what_it_changes() {
        let out = TestInput::new()
            .diff(&format!("{FIX}{TEST}"))
            .run(detect)
            .unwrap();
        assert!(!out.triggered);
        let m = &out.metadata;
        assert_eq!(m["arm"], "fix-only");
        assert!(m.get("f2p").is_none(), "no test ran: {m}");
        assert_eq!(m["summary"], "2 files changed (1 source, 1 test), +3 -1");
        let c = &m["changes"];
        assert_eq!(c["source_files"], json!(["intervals/merge.py"]));
        assert_eq!(c["test_files"], json!(["tests/test_merge.py"]));
        assert_eq!(c["files"][0]["added"], 1);
        assert_eq!(c["files"][1]["is_test"], true);
        assert_eq!(
            (c["added"].as_u64(), c["removed"].as_u64()),
            (Some(3), Some(1))
        );
    }

    #[test]
    fn an_empty_patch_is_rejected() {
        let out = TestInput::new().run(detect).unwrap();
        assert!(out.triggered);
        assert!(out.followup_text.unwrap().contains("Your patch is empty"));
        assert_eq!(out.metadata["changes"]["files"], json!([]));
        assert_eq!(out.metadata["arm"], "fix-only");
    }

    #[test]
    fn unknown_config_is_an_error() {
        let e = TestInput::new()
            .config(json!({"gate": true}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.gate: unknown field"), "{e}");
        let ok = TestInput::new().config(Value::Null).run(detect);
        assert!(ok.is_ok());
    }
}
