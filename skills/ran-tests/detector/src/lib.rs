//! A trajectory gate: fires when the event stream shows no run of the configured
//! test command after the agent's last file edit. Only a critic that sees the
//! events can know this; the patch alone cannot tell.

use critic_sdk::{commands, is_file_edit, last_file_edit, DetectorInput, DetectorOutput};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// A command counts as a test run when it contains one of these strings.
    #[serde(default = "default_commands")]
    test_commands: Vec<String>,
    /// Also require that run to exit 0.
    #[serde(default)]
    require_pass: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            test_commands: default_commands(),
            require_pass: false,
        }
    }
}

fn default_commands() -> Vec<String> {
    vec!["pytest".into()]
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    if config.test_commands.iter().any(|c| c.trim().is_empty()) {
        return Err("config.test_commands has an empty entry".into());
    }
    // Only the stream from the last file edit on can hold the runs that count.
    let events = input.events_from_last(is_file_edit)?;
    let last_edit = last_file_edit(&events);
    let runs = commands(&events);
    let is_test = |cmd: &str| {
        config
            .test_commands
            .iter()
            .any(|t| cmd.contains(t.as_str()))
    };
    let after_edit = runs
        .iter()
        .filter(|r| last_edit.is_none_or(|e| r.index > e))
        .filter(|r| is_test(r.command))
        .collect::<Vec<_>>();
    let wanted = config.test_commands.join("` or `");
    let metadata = json!({
        "last_edit_event": last_edit,
        "test_runs_after_edit": after_edit.iter().map(|r| json!({
            "event": r.index, "command": r.command, "exit_code": r.exit_code
        })).collect::<Vec<_>>(),
    });
    let Some(last_run) = after_edit.last() else {
        let when = match last_edit {
            Some(i) => format!("after your last file edit (event {i})"),
            None => "at all".to_string(),
        };
        return Ok(DetectorOutput::fire(format!(
            "You did not run the tests {when}. Run `{wanted}` on the current code, read the \
             result, fix what fails, and finish again."
        ))
        .with_metadata(metadata));
    };
    if config.require_pass && last_run.exit_code != Some(0) {
        let code = last_run
            .exit_code
            .map_or("an unknown status".to_string(), |c| {
                format!("exit code {c}")
            });
        return Ok(DetectorOutput::fire(format!(
            "Your last test run (`{}`) ended with {code}. Make the tests pass, then finish again.",
            last_run.command
        ))
        .with_metadata(metadata));
    }
    Ok(DetectorOutput::pass().with_metadata(metadata))
}

critic_sdk::export_detector!(detect);
