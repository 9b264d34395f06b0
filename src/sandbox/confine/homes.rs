//! The user's home directories as a confined command sees them: covered
//! whole by an empty file system, with only what toolchains need bound back,
//! read-only. A list of the places credentials are kept always misses one
//! (a glab token, a kaggle key, `~/.my.cnf`, a sops age key), so what a run
//! sees of a home is an allow-list:
//!
//! - the toolchains' own homes: pyenv, rustup, cargo, nvm, npm's global
//!   prefix, Go's `GOPATH`, the Python user base's `lib` and `bin`, each
//!   where its variable names it, else at its usual place;
//! - every directory on `PATH` that lies in a home, with its prefix (the
//!   virtual environment above a `bin`), which is how the interpreter the
//!   user named reaches a run;
//! - what the caller says the command needs: the prefix of the program it
//!   starts, a directory it reads (a skill being built).
//!
//! A moved `XDG_CONFIG_HOME` outside every home is covered too. What is
//! bound back may still hold a credential (cargo's, in `~/.cargo`): the
//! known places are covered again afterwards (see [`super::places::SECRET_PLACES`]).

use std::path::{Path, PathBuf};

/// Most directories bound back (their mounts are cloned into a fixed array
/// in the forked child, which cannot allocate).
pub(super) const MAX_KEPT: usize = 24;

/// A toolchain's home: the variable that moves it, where it is otherwise
/// (relative to a home), and which of its subdirectories a run needs (all
/// of it when empty).
const TOOLCHAINS: &[(&str, &str, &[&str])] = &[
    ("PYENV_ROOT", ".pyenv", &[]),
    ("RUSTUP_HOME", ".rustup", &[]),
    ("CARGO_HOME", ".cargo", &[]),
    ("NVM_DIR", ".nvm", &[]),
    ("NPM_CONFIG_PREFIX", ".npm-global", &[]),
    ("GOPATH", "go", &[]),
    ("PYTHONUSERBASE", ".local", &["lib", "bin"]),
];

/// The homes to cover and the directories in them to bind back.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Plan {
    /// Directories covered by an empty file system, parents first, none
    /// inside another (canonical paths).
    pub covered: Vec<PathBuf>,
    /// Directories bound back read-only, none inside another (canonical
    /// paths, each inside one of `covered`).
    pub kept: Vec<PathBuf>,
}

/// The plan for a command that needs to see `seen` (its program, with that
/// program's prefix; directories as they are), given the user's `homes`,
/// `PATH` and the variables `var` reads.
pub(super) fn plan(
    homes: &[PathBuf],
    path: Option<&std::ffi::OsStr>,
    seen: &[&Path],
    var: &dyn Fn(&str) -> Option<PathBuf>,
) -> Plan {
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let mut covered: Vec<PathBuf> = homes.iter().filter_map(|h| real(h)).collect();
    if let Some(config) = var("XDG_CONFIG_HOME").and_then(|c| real(&c)) {
        covered.push(config);
    }
    covered.retain(|c| c != Path::new("/"));
    covered.sort();
    covered.dedup();
    // A home inside another is covered with it.
    let outer = covered.clone();
    covered.retain(|c| !outer.iter().any(|o| o != c && c.starts_with(o)));

    let mut wanted: Vec<PathBuf> = Vec::new();
    for home in homes {
        for (name, usual, parts) in TOOLCHAINS {
            let base = var(name)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(usual));
            if parts.is_empty() {
                wanted.push(base);
            } else {
                wanted.extend(parts.iter().map(|p| base.join(p)));
            }
        }
        if let Some(prefix) = npm_prefix(home) {
            wanted.push(prefix);
        }
    }
    let on_path: Vec<PathBuf> = path.map_or_else(Vec::new, |p| std::env::split_paths(p).collect());
    for dir in &on_path {
        wanted.extend(with_prefix(dir, homes));
    }
    for s in seen {
        wanted.extend(needed(s, homes));
    }
    let mut kept: Vec<PathBuf> = wanted
        .iter()
        .filter_map(|w| real(w))
        .filter(|w| w.is_dir())
        .filter(|w| covered.iter().any(|c| w.starts_with(c) && w != c))
        .collect();
    kept.sort();
    kept.dedup();
    let all = kept.clone();
    kept.retain(|k| !all.iter().any(|o| o != k && k.starts_with(o)));
    if kept.len() > MAX_KEPT {
        tracing::warn!(
            "{} toolchain directories in the home directories; a run sees the first {MAX_KEPT}",
            kept.len()
        );
        kept.truncate(MAX_KEPT);
    }
    Plan { covered, kept }
}

/// What a command that needs `seen` must see of it: a program's prefix (see
/// [`with_prefix`]), a directory as it is; nothing for a relative path.
pub(super) fn needed(seen: &Path, homes: &[PathBuf]) -> Vec<PathBuf> {
    // `..` would escape the prefix rules (`~/.local/lib/../bin`).
    let plain = seen
        .components()
        .all(|c| !matches!(c, std::path::Component::ParentDir));
    if !seen.is_absolute() || !plain {
        return Vec::new();
    }
    match seen.parent() {
        Some(parent) if !seen.is_dir() => {
            let mut dirs = with_prefix(parent, homes);
            // An npm program is a link in `node_modules/.bin` into its
            // package, which needs its dependencies beside it: all of
            // `node_modules`. Any other link brings its target's prefix.
            if parent.file_name() == Some(".bin".as_ref())
                && parent.parent().and_then(Path::file_name) == Some("node_modules".as_ref())
            {
                dirs.extend(parent.parent().map(Path::to_path_buf));
            } else if let Some(target) = std::fs::canonicalize(seen)
                .ok()
                .filter(|t| t != seen)
                .and_then(|t| t.parent().map(Path::to_path_buf))
            {
                dirs.extend(with_prefix(&target, homes));
            }
            dirs
        }
        _ => vec![seen.to_path_buf()],
    }
}

/// A directory on `PATH` and what a program there needs with it: a `bin`
/// brings its prefix (a virtual environment, a toolchain), except the
/// home's own `~/bin`, and `~/.local/bin`, which brings the user base's
/// `lib` only.
pub(super) fn with_prefix(dir: &Path, homes: &[PathBuf]) -> Vec<PathBuf> {
    let Some(parent) = dir
        .parent()
        .filter(|_| dir.file_name() == Some("bin".as_ref()))
    else {
        return vec![dir.to_path_buf()];
    };
    if homes.iter().any(|h| h == parent) {
        vec![dir.to_path_buf()]
    } else if homes.iter().any(|h| h.join(".local") == parent) {
        vec![dir.to_path_buf(), parent.join("lib")]
    } else {
        vec![parent.to_path_buf()]
    }
}

/// npm's global prefix as `home`'s `.npmrc` sets it (its `prefix` line
/// only; the file holds tokens too, which are not read further).
fn npm_prefix(home: &Path) -> Option<PathBuf> {
    let text = crate::sys::bounded_read::read_regular_file_nofollow(&home.join(".npmrc"), 64 << 10)
        .ok()?;
    let text = String::from_utf8_lossy(&text);
    let value = text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "prefix").then(|| value.trim().to_string())
    })?;
    let value = value
        .strip_prefix("~/")
        .or_else(|| value.strip_prefix("${HOME}/"))
        .map_or_else(|| PathBuf::from(&value), |rest| home.join(rest));
    value.is_absolute().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_npm_program_brings_its_node_modules_and_a_link_its_target() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let modules = home.join("clone/target/agents/node_modules");
        std::fs::create_dir_all(modules.join(".bin")).unwrap();
        std::fs::create_dir_all(modules.join("@scope/agent")).unwrap();
        std::fs::write(modules.join("@scope/agent/cli.js"), "").unwrap();
        std::os::unix::fs::symlink("../@scope/agent/cli.js", modules.join(".bin/agent")).unwrap();
        let homes = [home.clone()];
        let got = needed(&modules.join(".bin/agent"), &homes);
        assert_eq!(got, [modules.join(".bin"), modules.clone()]);
        // A link elsewhere brings the prefix of what it points to.
        std::fs::create_dir_all(home.join("venv/bin")).unwrap();
        std::fs::create_dir_all(home.join("tools")).unwrap();
        std::fs::write(home.join("venv/bin/python3.12"), "").unwrap();
        std::os::unix::fs::symlink(home.join("venv/bin/python3.12"), home.join("tools/py"))
            .unwrap();
        let got = needed(&home.join("tools/py"), &homes);
        let venv = home.join("venv").canonicalize().unwrap();
        assert_eq!(got, [home.join("tools"), venv]);
    }

    #[test]
    fn toolchains_path_and_program_prefixes_are_kept_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let config = t.path().join("config");
        for dir in [
            ".pyenv/versions",
            ".cargo/bin",
            ".local/bin",
            ".local/lib",
            ".local/share/keyrings",
            "venv/bin",
            "tools/bin",
            "bin",
            "work",
            "npm-prefix",
            ".ssh",
        ] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            home.join(".npmrc"),
            "//registry/:_authToken=x\nprefix=~/npm-prefix\n",
        )
        .unwrap();
        let homes = [home.clone()];
        let path =
            std::env::join_paths([home.join(".local/bin"), home.join("bin"), "/usr/bin".into()])
                .unwrap();
        let vars = |name: &str| (name == "XDG_CONFIG_HOME").then(|| config.clone());
        let p = plan(
            &homes,
            Some(&path),
            &[&home.join("venv/bin/python"), &home.join("work")],
            &vars,
        );
        let real = |p: &Path| p.canonicalize().unwrap();
        assert_eq!(p.covered, vec![real(&config), real(&home)]);
        let rel: Vec<String> = p
            .kept
            .iter()
            .map(|k| k.strip_prefix(real(&home)).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                ".cargo",
                ".local/bin",
                ".local/lib",
                ".pyenv",
                "bin",
                "npm-prefix",
                "venv",
                "work"
            ]
        );
    }
}
