//! Front-ends' entry points: a [`CheckRequest`] in, a verdict out.

pub mod client;
pub mod hook;
mod inputs;
pub mod oneshot;
pub mod pinned;
pub mod project;
pub mod server;
pub mod service;
mod unjudged;
pub mod verdict_log;

pub use crate::evaluate::request::{CheckRequest, HostSettings, DEFAULT_SESSION, MAX_TIME_LIMIT};
