//! How `critic build` runs the tools that build a skill's detectors.
//!
//! A skill may be someone else's, and building it runs its code: a Rust
//! crate's build scripts and procedural macros, what componentize-py
//! imports. So those tools run confined (see [`crate::sandbox::confine`]): the
//! system and the skill read-only, of the user's homes only the toolchains
//! (and the skill, when it lies in one), no network, and only the build's
//! own output directory writable. Rust dependencies come from the lockfile
//! and the local registry cache, which `cargo fetch` fills beforehand
//! (fetching runs nothing of the skill's). Where this machine cannot
//! confine, a build is refused unless the user vouches for the skill
//! ([`Trust::Trusted`], `--trust-skill`).

use crate::skill::build_error::BuildError;
use std::path::Path;
use std::process::Command;

/// Whether the user vouches for the skill being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// Its build tools run confined; refused where this machine cannot.
    #[default]
    Confined,
    /// Its build tools run with the user's full rights.
    Trusted,
}

/// The variables a build tool keeps of the caller's environment: where the
/// toolchains are, and the terminal's.
const KEPT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "LANG",
    "LC_ALL",
    "TERM",
    "NO_COLOR",
];

/// Clear `cmd`'s environment but for [`KEPT_ENV`]: the caller's tokens and
/// keys are not the skill's to read.
pub(crate) fn clean_env(cmd: &mut Command) {
    cmd.env_clear();
    for key in KEPT_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
}

/// Make `cmd` (a build tool run on someone else's code) start confined,
/// writing only under `writable` and seeing `seen` (see
/// [`crate::sandbox::confine::Confinement::new`]); left as it is when the user
/// trusts the skill.
pub(crate) fn confine(
    cmd: &mut Command,
    trust: Trust,
    writable: &[&Path],
    seen: &[&Path],
) -> Result<(), BuildError> {
    if trust == Trust::Trusted {
        return Ok(());
    }
    let confinement = crate::sandbox::confine::Confinement::new(writable, seen).map_err(|e| {
        BuildError::Usage(format!(
            "cannot confine the build: {e}. Building a skill runs its code (build scripts, \
             procedural macros, what its Python imports); `critic doctor` shows what this \
             machine lacks. For a skill you trust, pass --trust-skill to build it with your \
             full rights"
        ))
    })?;
    confinement.apply(cmd);
    Ok(())
}
