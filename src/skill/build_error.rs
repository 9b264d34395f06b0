//! [`BuildError`]: why a skill's detectors could not be built (`critic
//! build`, `critic new`, a Python detector's staging).

/// Why a build failed; the message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The skill, its tools or the machine are not as the build needs.
    #[error("{0}")]
    Usage(String),
    /// A failure of the build itself.
    #[error("internal error: {0}")]
    Internal(String),
}
