//! SWE-bench's environment specifications, carried as data
//! (`data/swebench-specs.json`, dumped from SWE-bench 4.1.0 by
//! `scripts/swebench_specs.py`): what a record that gives only SWE-bench's
//! own fields gets, per repository and version. The Python version its
//! environment is made with, what it installs with their dependencies (its
//! conda `packages` as pip requirements, the repository's requirements
//! file at `environment_setup_commit`, its `pip_packages`), the lines run
//! in a checkout of the base commit (`pre_install`, then `install`), the
//! test command and the lines run before it. A record's or the experiment
//! file's own fields win over these.
//!
//! What SWE-bench's images do to the system (`apt-get`, `locale-gen`,
//! edits of `/etc`) is not done on the user's machine: those lines are left
//! out, and said so. An environment SWE-bench makes from the repository's
//! conda `environment.yml` gets that file's pip equivalent (see
//! `conda_env.rs`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/swebench-specs.json"))
            .expect("data/swebench-specs.json is valid JSON (tested)")
    })
}


/// What SWE-bench's harness makes for one repository and version.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Defaults {
    /// The Python version of its environment (`3.9`).
    pub python: Option<String>,
    /// Requirements installed with their dependencies, in SWE-bench's
    /// order: its conda `packages` (pip's names are conda's for these),
    /// then `pip_packages`.
    pub packages: Vec<String>,
    /// Where its requirements file lies in the repository, when SWE-bench
    /// installs one (`packages: requirements.txt`): the first that exists
    /// at `environment_setup_commit`.
    pub requirements_paths: Vec<String>,
    /// Lines run in a checkout of the base commit: `pre_install`, then
    /// `install`, the system's lines left out.
    pub install: Vec<String>,
    /// The test command before the test files.
    pub test_cmd: Option<Vec<String>>,
    /// Lines run before each test command, the system's left out.
    pub eval_commands: Vec<String>,
    /// Where its conda `environment.yml` lies in the repository, when
    /// SWE-bench builds the environment from one: the first that exists at
    /// `environment_setup_commit` (see `conda_env.rs`).
    pub environment_yml_paths: Vec<String>,
    /// What SWE-bench does there that is not done here.
    pub left_out: Vec<String>,
}

/// Lines that change the machine rather than the environment.
fn touches_the_system(line: &str) -> bool {
    ["apt-get", "locale-gen", "/etc/", "dpkg", "wget ", "curl "]
        .iter()
        .any(|w| line.contains(w))
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// SWE-bench's specification of `repo` at `version`, as defaults.
pub fn defaults(repo: &str, version: &str) -> Option<Defaults> {
    let repo_spec = data()["repos"].get(repo)?;
    let spec = repo_spec["versions"].get(version)?;
    let mut d = Defaults {
        python: spec["python"].as_str().map(str::to_string),
        ..Defaults::default()
    };
    let mut keep = |lines: Vec<String>, what: &str, into: &mut Vec<String>| {
        for line in lines {
            if touches_the_system(&line) {
                d.left_out.push(format!("{what}: {line}"));
            } else {
                into.push(line);
            }
        }
    };
    let mut install = Vec::new();
    keep(strings(&spec["pre_install"]), "pre_install", &mut install);
    keep(strings(&spec["install"]), "install", &mut install);
    let mut eval_commands = Vec::new();
    keep(
        strings(&spec["eval_commands"]),
        "eval_commands",
        &mut eval_commands,
    );
    d.install = install;
    d.eval_commands = eval_commands;
    match spec["packages"].as_str() {
        Some("requirements.txt") => {
            d.requirements_paths = strings(&repo_spec["requirements_paths"])
        }
        Some("environment.yml") => {
            d.environment_yml_paths = strings(&repo_spec["environment_yml_paths"])
        }
        Some(list) => d.packages = shlex::split(list).unwrap_or_default(),
        None => {}
    }
    d.packages.extend(strings(&spec["pip_packages"]));
    d.test_cmd = spec["test_cmd"].as_str().map(test_command);
    Some(d)
}

/// SWE-bench's test command as critic runs it: a script the repository
/// ships (`./tests/runtests.py`, `bin/test`) is started by the
/// environment's interpreter, as its `#!` line would start it.
fn test_command(cmd: &str) -> Vec<String> {
    let mut words = shlex::split(cmd).unwrap_or_else(|| vec![cmd.to_string()]);
    let program = words.iter().position(|w| !is_assignment(w));
    if let Some(at) = program {
        let p = words[at].as_str();
        if p.ends_with(".py") || p == "bin/test" {
            words.insert(at, "{python}".into());
        }
    }
    words
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The requirements SWE-bench installs from `text`, a requirements file of
/// the repository at `dir`, as its harness reads it: `-e .`, comments and
/// `.[test` lines dropped, each `-r` file (read by `read`) inlined before
/// the file's own lines, and its package renames applied.
pub fn requirements_text(text: &str, dir: &str, read: &dyn Fn(&str) -> Option<String>) -> String {
    let excluded = |line: &str| {
        let l = line.trim();
        ["-e .", "#", ".[test"].iter().any(|p| l.starts_with(p))
    };
    let mut original = Vec::new();
    let mut additional = Vec::new();
    for line in text.split('\n') {
        if let Some(file) = line.trim().strip_prefix("-r") {
            let path = if dir.is_empty() {
                file.trim().to_string()
            } else {
                format!("{dir}/{}", file.trim())
            };
            if let Some(extra) = read(&path) {
                additional.extend(
                    extra
                        .split('\n')
                        .filter(|l| !excluded(l))
                        .map(str::to_string),
                );
            }
        } else if !excluded(line) {
            original.push(line.to_string());
        }
    }
    additional.push(original.join("\n"));
    let all = additional.join("\n");
    all.split('\n').map(replaced).collect::<Vec<_>>().join("\n")
}

/// A requirement line with SWE-bench's package renames applied: a package
/// pip no longer has becomes its replacement, the line, version and all
/// (`^pkg([<>=!~]=?.*|$)` in SWE-bench's harness).
pub fn replaced(line: &str) -> String {
    let replacements = data()["harness"]["replace_req_packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some((pair[0].as_str()?, pair[1].as_str()?)));
    for (from, to) in replacements {
        if let Some(rest) = line.strip_prefix(from) {
            if rest.is_empty() || rest.starts_with(['<', '>', '=', '!', '~']) {
                return to.to_string();
            }
        }
    }
    line.to_string()
}

/// An interpreter of Python `version` (`3.9`) on this machine: pyenv's
/// (`$PYENV_ROOT/versions/3.9.*`), uv's, then `python3.9` on `PATH`. An
/// error says how to get one.
pub fn find_python(version: &str) -> Result<PathBuf, String> {
    let exe = format!("python{version}");
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    let uv = std::env::var_os("UV_PYTHON_INSTALL_DIR")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".local/share/uv/python")));
    // The newest patch release of each place, by its directory's name.
    let newest = |dir: &Path, prefix: &str| -> Option<PathBuf> {
        let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rest = name.strip_prefix(prefix)?;
                let numbers: Vec<u32> = rest
                    .split(['.', '-'])
                    .map_while(|p| p.parse().ok())
                    .collect();
                let python = e.path().join("bin").join(&exe);
                let wanted = rest == version
                    || rest.starts_with(&format!("{version}."))
                    || rest.starts_with(&format!("{version}-"));
                (wanted && python.is_file()).then_some((numbers, python))
            })
            .collect();
        found.sort();
        found.pop().map(|(_, p)| p)
    };
    let places = [
        pyenv.and_then(|p| newest(&p.join("versions"), "")),
        uv.and_then(|u| newest(&u, "cpython-")),
    ];
    if let Some(found) = places.into_iter().flatten().next() {
        return Ok(found);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let candidate = dir.join(&exe);
        // pyenv's shims answer for versions it does not have selected.
        if candidate.is_file() && !dir.ends_with("shims") {
            return Ok(candidate);
        }
    }
    Err(format!(
        "no Python {version} on this machine (looked in pyenv's versions, uv's pythons and \
         `{exe}` on PATH): install it (`pyenv install {version}` or `uv python install \
         {version}`), or name an interpreter with `--python` or the record's `python`"
    ))
}

/// Packages uploaded after this are not considered when SWE-bench's
/// requirements are resolved (uv's `--exclude-newer`): the environment images behind the
/// leaderboard's official verdicts were built before it, and later releases
/// change what the tests see (docutils 0.22, of mid-2025, no longer carries
/// the `roman` module Sphinx 3's LaTeX builder imports).
pub const RESOLVED_BEFORE: &str = "2025-01-01T00:00:00Z";

/// The environment SWE-bench's specification makes for an instance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Environment {
    /// Its Python version, found on this machine by [`find_python`].
    pub python: Option<String>,
    /// What it installs with their dependencies.
    pub resolve: Vec<crate::grading::environment::Resolve>,
}

impl Environment {
    /// Make `spec` this environment for `instance`: its requirements,
    /// resolved as of [`RESOLVED_BEFORE`], and its Python version found on
    /// the machine unless `base_python` already names an interpreter.
    pub fn apply(
        self,
        instance: &crate::grading::dataset::Instance,
        spec: &mut crate::grading::environment::Spec,
        base_python: &mut Option<PathBuf>,
    ) -> Result<(), String> {
        spec.resolve = self.resolve;
        spec.resolved_before = Some(RESOLVED_BEFORE.into());
        if let (None, Some(version)) = (&base_python, &self.python) {
            let found = find_python(version).map_err(|e| {
                format!(
                    "{}: SWE-bench's environment of {} {}: {e}",
                    instance.place,
                    instance.repo,
                    instance.version.as_deref().unwrap_or("")
                )
            })?;
            *base_python = Some(found);
        }
        Ok(())
    }
}

/// `instance` (cloned at `clone`) completed from SWE-bench's specification
/// of its repository and version, when its record (with the experiment
/// file's block) makes no environment of its own (no `python`,
/// `requirements`, `pre_install` or `install`): its install lines, and its
/// test command and the lines before it where the record gives none; and
/// the environment to make. `Ok(None)`: nothing to add. An error names the
/// record and the field.
pub fn fill(
    instance: &mut crate::grading::dataset::Instance,
    clone: &Path,
) -> Result<Option<Environment>, String> {
    use crate::grading::environment::Resolve;
    let own = instance.python.is_some()
        || instance.requirements.is_some()
        || !instance.pre_install.is_empty()
        || !instance.install.is_empty();
    let Some(version) = instance.version.clone().filter(|_| !own) else {
        return Ok(None);
    };
    let Some(d) = defaults(&instance.repo, &version) else {
        return Ok(None);
    };
    let at = &instance.place;
    for line in &d.left_out {
        tracing::info!(
            "{at}: SWE-bench's {line} changes the machine, not the environment: left out"
        );
    }
    let commit = instance
        .environment_setup_commit
        .clone()
        .unwrap_or_else(|| instance.base_commit.clone());
    let read = |path: &str| -> Option<String> {
        let mut show = crate::workspace::git::command(clone);
        show.args(["cat-file", "blob", &format!("{commit}:{path}")]);
        crate::workspace::git::run(show)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    // The first of `paths` at the environment's commit.
    let first = |paths: &[String], what: &str| {
        paths
            .iter()
            .find_map(|p| read(p).map(|t| (p.clone(), t)))
            .ok_or_else(|| {
                format!(
                    "{at}: field `environment_setup_commit`: none of {} is in {} at {commit}, \
                     where SWE-bench reads the environment's {what}",
                    paths.join(", "),
                    clone.display()
                )
            })
    };
    let mut resolve = Vec::new();
    if !d.requirements_paths.is_empty() {
        let (path, text) = first(&d.requirements_paths, "requirements")?;
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        resolve.push(Resolve::File(requirements_text(&text, dir, &read)));
    }
    if !d.environment_yml_paths.is_empty() {
        let (path, text) = first(&d.environment_yml_paths, "conda environment file")?;
        let file = format!(
            "{}@{}:{path}",
            instance.repo,
            &commit[..commit.len().min(12)]
        );
        let conda = crate::grading::conda_env::requirements(&text, &file, replaced)
            .map_err(|e| format!("{at}: {e}"))?;
        for line in &conda.left_out {
            tracing::info!("{at}: {file}: {line}: left out");
        }
        resolve.push(Resolve::Conda(conda.requirements));
    }
    if !d.packages.is_empty() {
        resolve.push(Resolve::Packages(d.packages.clone()));
    }
    instance.install = d.install.clone();
    if instance.test_cmd.is_none() {
        instance.test_cmd = d.test_cmd.clone();
    }
    if instance.eval_commands.is_empty() {
        instance.eval_commands = d.eval_commands.clone();
    }
    Ok(Some(Environment {
        python: d.python.clone(),
        resolve,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_version_gets_swe_benchs_environment_and_command() {
        let flask = defaults("pallets/flask", "2.3").unwrap();
        assert_eq!(flask.python.as_deref(), Some("3.11"));
        assert_eq!(flask.requirements_paths, ["requirements/dev.txt"]);
        assert!(flask.packages.contains(&"Werkzeug==2.3.7".to_string()));
        assert_eq!(flask.install, ["python -m pip install -e ."]);
        assert_eq!(
            flask.test_cmd.as_deref(),
            Some(&["pytest".to_string(), "-rA".into()][..])
        );
        // Django: its runner started by the interpreter, its image's
        // system lines left out.
        let django = defaults("django/django", "2.2").unwrap();
        assert_eq!(
            django.test_cmd.as_ref().unwrap()[..2],
            ["{python}", "./tests/runtests.py"]
        );
        assert!(
            django.left_out.iter().any(|l| l.contains("locale-gen")),
            "{django:?}"
        );
        assert!(
            django.install.iter().all(|l| !l.contains("apt-get")),
            "{django:?}"
        );
        let sympy = defaults("sympy/sympy", "1.12").unwrap();
        let cmd = sympy.test_cmd.unwrap();
        assert!(
            cmd[0].starts_with("PYTHONWARNINGS=") && cmd[1] == "{python}",
            "{cmd:?}"
        );
        // Conda's package list becomes pip's.
        let requests = defaults("psf/requests", "2.26").unwrap();
        assert_eq!(requests.packages, ["pytest"]);
        assert_eq!(
            defaults("matplotlib/matplotlib", "3.7")
                .unwrap()
                .environment_yml_paths,
            ["environment.yml"]
        );
        assert!(defaults("pallets/flask", "0.1").is_none());
    }

    #[test]
    fn requirements_files_are_read_as_swe_benchs_harness_reads_them() {
        let read =
            |p: &str| (p == "requirements/tests.txt").then(|| "pytest==8\n# c\n".to_string());
        let text = requirements_text(
            "-e .\n-r tests.txt\nclick==8\n.[test]\ntypes-pkg_resources==0.1.3\n",
            "requirements",
            &read,
        );
        assert_eq!(text, "pytest==8\n\nclick==8\ntypes-setuptools\n");
    }

    #[test]
    fn a_missing_python_says_how_to_get_one() {
        let e = find_python("2.1").unwrap_err();
        assert!(
            e.contains("no Python 2.1") && e.contains("pyenv install 2.1"),
            "{e}"
        );
    }
}
