//! The issue text the mutation prompt shows: `config.issue` when set, else
//! the `<issue_description>` block of the task prompt (the first user
//! message), else that whole message. The state records which was used.

use critic_sdk::{first_user_message, issue_description, Event};
use serde::{Deserialize, Serialize};

/// Where the issue text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueSource {
    /// The signal's `config.issue`.
    Config,
    /// The `<issue_description>` block of the first user message.
    IssueDescription,
    /// The whole first user message (it has no such block).
    FirstUserMessage,
    /// Nothing: no configured issue and no user message.
    Missing,
}

/// The issue text and where it came from.
pub fn resolve(configured: Option<&str>, events: &[Event]) -> (String, IssueSource) {
    if let Some(text) = configured {
        return (text.to_string(), IssueSource::Config);
    }
    match first_user_message(events) {
        Some(message) => match issue_description(message) {
            Some(block) => (block.to_string(), IssueSource::IssueDescription),
            None => (message.to_string(), IssueSource::FirstUserMessage),
        },
        None => (
            "(the issue text is not available)".to_string(),
            IssueSource::Missing,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::EventKind;

    fn user(text: &str) -> Vec<Event> {
        let mut e = Event::new(0, EventKind::Message);
        e.source = Some("user".into());
        e.text = Some(text.into());
        vec![e]
    }

    #[test]
    fn configured_then_the_block_then_the_message() {
        let task = "Work in /w.\n<issue_description>\nTouching intervals are not merged.\n</issue_description>\nRound 0: write reproduction.py.";
        assert_eq!(
            resolve(Some("Given."), &user(task)),
            ("Given.".into(), IssueSource::Config)
        );
        assert_eq!(
            resolve(None, &user(task)),
            (
                "Touching intervals are not merged.".into(),
                IssueSource::IssueDescription
            )
        );
        assert_eq!(
            resolve(None, &user("Fix merge().")),
            ("Fix merge().".into(), IssueSource::FirstUserMessage)
        );
        assert_eq!(resolve(None, &[]).1, IssueSource::Missing);
    }
}
