//! Capabilities: the host functions a detector may call.
//!
//! Deny by default. A call is allowed only when the skill declares the
//! capability in `critic.yaml` *and* the user has not denied it (`--deny`). The
//! check is one small function, [`Grants::check`], used by every host function.
//! Each capability's implementation has its own module.

pub(crate) mod artifacts;

pub mod llm;
pub(crate) mod log;
pub(crate) mod read_file;
pub(crate) mod run;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A host function family a detector can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// Write to the host log.
    Log,
    /// Read workspace files, read-only.
    ReadFile,
    /// Run a command in a scratch copy of the workspace.
    Run,
    /// Run many commands in parallel, each in a scratch copy.
    RunMatrix,
    /// Chat completions from the model the user configured.
    LlmComplete,
}

impl Capability {
    /// Every capability this host offers, in schema order.
    pub const ALL: &'static [Capability] = &[
        Capability::Log,
        Capability::ReadFile,
        Capability::Run,
        Capability::RunMatrix,
        Capability::LlmComplete,
    ];

    /// The name used in manifests and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Log => "log",
            Capability::ReadFile => "read-file",
            Capability::Run => "run",
            Capability::RunMatrix => "run-matrix",
            Capability::LlmComplete => "llm-complete",
        }
    }

    /// Whether a call has no effect outside the detector call itself (so the
    /// harness may run the call speculatively and discard it).
    pub fn is_pure(self) -> bool {
        match self {
            Capability::Log | Capability::ReadFile => true,
            Capability::Run | Capability::RunMatrix | Capability::LlmComplete => false,
        }
    }

    /// Parse a name as written in a manifest or `--deny`.
    pub fn from_name(name: &str) -> Option<Capability> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Capability {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::from_name(s).ok_or_else(|| {
            let known: Vec<_> = Capability::ALL.iter().map(|c| c.name()).collect();
            format!("unknown capability {s:?}; known: {}", known.join(", "))
        })
    }
}

/// What one skill run may do: declared by the skill, minus what the user denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    declared: Vec<Capability>,
    denied: Vec<Capability>,
}

impl Grants {
    /// Grants for a skill's declared capabilities with the user's denials applied.
    pub fn new(declared: &[Capability], denied: &[Capability]) -> Self {
        Self {
            declared: declared.to_vec(),
            denied: denied.to_vec(),
        }
    }

    /// `Ok` if `cap` may be used; otherwise an error a detector author can act on.
    pub fn check(&self, cap: Capability) -> Result<(), String> {
        if !self.declared.contains(&cap) {
            return Err(format!(
                "capability '{cap}' is not declared by this skill; add it to `capabilities:` in critic.yaml"
            ));
        }
        if self.denied.contains(&cap) {
            return Err(format!(
                "capability '{cap}' was denied by the user (--deny {cap})"
            ));
        }
        Ok(())
    }

    /// The capabilities in force, for reports.
    pub fn effective(&self) -> Vec<Capability> {
        self.declared
            .iter()
            .copied()
            .filter(|c| !self.denied.contains(c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_is_denied_by_default() {
        let g = Grants::new(&[], &[]);
        let e = g.check(Capability::ReadFile).unwrap_err();
        assert!(e.contains("not declared"), "{e}");
    }

    #[test]
    fn declared_is_allowed_until_the_user_denies_it() {
        let g = Grants::new(&[Capability::ReadFile, Capability::Log], &[]);
        assert!(g.check(Capability::ReadFile).is_ok());
        let g = Grants::new(
            &[Capability::ReadFile, Capability::Log],
            &[Capability::ReadFile],
        );
        assert!(g
            .check(Capability::ReadFile)
            .unwrap_err()
            .contains("--deny read-file"));
        assert_eq!(g.effective(), vec![Capability::Log]);
    }

    #[test]
    fn names_round_trip() {
        for c in Capability::ALL {
            assert_eq!(c.name().parse::<Capability>().unwrap(), *c);
        }
        assert!("network"
            .parse::<Capability>()
            .unwrap_err()
            .contains("known: log, read-file, run, run-matrix, llm-complete"));
    }
}
