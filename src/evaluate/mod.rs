//! Subclass mode: the [`Critic`] trait a program implements (or gets from a
//! skill through [`crate::evaluate::scorer::SkillCritic`]) to judge a finish.

mod critic;
pub mod error;
pub mod redact;
pub mod request;
pub mod scorer;
pub mod state;
pub mod verdict;

pub use critic::{decide, instance_key, with_followup, Critic, Finish};
