//! How the runner drives an agent, in the run's workspace. `command` runs a
//! program once per turn, its exit the finish, and the runner checks each
//! finish itself; `claude_code`, `codex` and `openhands` run the real
//! program once, with the critic as its own Stop hook, and `mini_swe_agent` with its critic
//! agent class (`hooked.rs` is what they share); the verdict log tells the
//! runner what happened at each finish. Each adapter is one file here.

pub mod claude_code;
pub mod codex;
pub mod command;
pub mod confined;
pub mod hooked;
pub mod mini_swe_agent;
pub mod openhands;
mod turn;

pub use turn::{Turn, TurnEnd};
