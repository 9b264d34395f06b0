//! A `tox --current-env` test command (SWE-bench's for Sphinx: `tox
//! --current-env -epy39 -v --`) read as the pytest command it runs: the
//! tox environment's `commands` line that starts pytest, in the instance's
//! own environment (which is what `--current-env` means), with the
//! environment's `setenv` variables, the test files in place of
//! `{posargs}`. tox itself is not run: the tests go through the same
//! bootstrap, report and protections as any pytest command.
//!
//! The configuration is the base's `tox.ini` (after the install's lines,
//! such as SWE-bench's `sed` that adds `-rA`), never a patch's: what a
//! patch does to `tox.ini` is put back before a run anyway.

use std::collections::BTreeMap;

/// Whether `argv` (after its variable assignments) starts tox.
pub fn is_tox(argv: &[String]) -> bool {
    argv.iter()
        .find(|w| !is_assignment(w))
        .is_some_and(|w| w.rsplit('/').next() == Some("tox"))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The pytest command `argv` (a `tox --current-env` command) runs, as a
/// test command (`NAME=value` words first, `{python}` for the
/// interpreter), from the repository's `tox_ini` (`None`: it has none). An
/// error says what is not understood.
pub fn as_pytest(argv: &[String], tox_ini: Option<&str>) -> Result<Vec<String>, String> {
    let at = argv.iter().position(|w| !is_assignment(w)).unwrap_or(0);
    let (assignments, args) = (&argv[..at], &argv[at + 1..]);
    let mut env_name = None;
    let mut current = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "--current-env" => current = true,
            "-e" => {
                env_name = args.get(i + 1).cloned();
                i += 1;
            }
            "--" => break,
            a if a.starts_with("-e") => env_name = Some(a[2..].to_string()),
            a if a.starts_with("-v") || a == "-q" => {}
            other => return Err(format!("tox's option `{other}` is not understood here")),
        }
        i += 1;
    }
    if !current {
        return Err(
            "tox without `--current-env` builds environments of its own; \
                    the tests run in the instance's environment: add `--current-env`"
                .into(),
        );
    }
    if args.len() > i + 1 {
        return Err("tox's positional arguments go after `--` (the test files are added)".into());
    }
    let tox_ini = tox_ini.ok_or("it runs tox, but the base has no tox.ini")?;
    let ini = Ini::parse(tox_ini);
    let section = env_name
        .as_deref()
        .map(|e| format!("testenv:{e}"))
        .filter(|s| ini.sections.contains_key(s));
    let value = |key: &str| {
        section
            .as_ref()
            .and_then(|s| ini.get(s, key))
            .or_else(|| ini.get("testenv", key))
    };
    let commands =
        value("commands").ok_or("tox.ini has no `commands` for the environment (`[testenv]`)")?;
    let line = commands
        .lines()
        .map(str::trim)
        .find(|l| {
            l.split_whitespace()
                .any(|w| w == "pytest" || w == "py.test")
        })
        .ok_or_else(|| format!("no line of tox.ini's `commands` starts pytest: {commands:?}"))?;
    let mut words =
        shlex::split(line).ok_or_else(|| format!("tox.ini's command {line:?} cannot be split"))?;
    words.retain(|w| w != "{posargs}");
    if words
        .first()
        .is_some_and(|w| w == "python" || w.starts_with("python3") || w == "{envpython}")
    {
        words[0] = "{python}".into();
    }
    if let Some(w) = words.iter().skip(1).find(|w| w.contains('{')) {
        return Err(format!(
            "tox.ini's command uses `{w}`, which is not understood here"
        ));
    }
    let mut out: Vec<String> = assignments.to_vec();
    for (name, value) in setenv(value("setenv").unwrap_or_default())? {
        out.push(format!("{name}={value}"));
    }
    out.extend(words);
    Ok(out)
}

/// The `setenv` lines, `{env:NAME:default}` read as its default (the run's
/// environment has none of the user's).
fn setenv(text: String) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once('=')
            .ok_or_else(|| format!("tox.ini's setenv line {line:?} is not NAME = value"))?;
        let mut value = value.trim().to_string();
        while let Some(start) = value.find("{env:") {
            let end = value[start..]
                .find('}')
                .map(|e| start + e)
                .ok_or_else(|| format!("tox.ini's setenv line {line:?} is not closed"))?;
            let inner = &value[start + 5..end];
            let default = inner.split_once(':').map_or("", |(_, d)| d).to_string();
            value.replace_range(start..=end, &default);
        }
        if value.contains('{') {
            return Err(format!(
                "tox.ini's setenv line {line:?} is not understood here"
            ));
        }
        vars.insert(name.trim().to_string(), value.trim().to_string());
    }
    Ok(vars)
}

/// An INI file as tox reads it: sections, keys, values continued on
/// indented lines; comments dropped.
struct Ini {
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

impl Ini {
    fn parse(text: &str) -> Ini {
        let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut section = String::new();
        let mut key: Option<String> = None;
        for raw in text.lines() {
            let line = raw.trim_end();
            if line.trim_start().starts_with(['#', ';']) || line.trim().is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.trim().to_string();
                key = None;
                continue;
            }
            let entries = sections.entry(section.clone()).or_default();
            if raw.starts_with([' ', '\t']) {
                if let Some(k) = &key {
                    let v = entries.entry(k.clone()).or_default();
                    v.push('\n');
                    v.push_str(line.trim());
                }
                continue;
            }
            if let Some((k, v)) = line.split_once('=') {
                let k = k.trim().to_string();
                entries.insert(k.clone(), v.trim().to_string());
                key = Some(k);
            }
        }
        Ini { sections }
    }

    fn get(&self, section: &str, key: &str) -> Option<String> {
        self.sections.get(section)?.get(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    /// Sphinx 7.1's `[testenv]`, after SWE-bench's `sed` added `-rA`.
    const SPHINX: &str = "\
[tox]
minversion = 2.4.0
envlist = docs,flake8,mypy,twine,py{39,310,311,312}

[testenv]
usedevelop = True
passenv =
    https_proxy
description =
    py{39,310,311,312}: Run unit tests against {envname}.
extras =
    test
setenv =
    PYTHONWARNINGS = error
    PYTEST_ADDOPTS = {env:PYTEST_ADDOPTS:} --color yes
commands=
    python -X dev -X warn_default_encoding -m pytest -rA --durations 25 {posargs}

[testenv:docs]
commands =
    python -X dev -m sphinx -M html ./doc ./build/sphinx -W
";

    #[test]
    fn swe_benchs_sphinx_command_is_the_pytest_command_tox_would_run() {
        let cmd = as_pytest(&argv("tox --current-env -epy39 -v --"), Some(SPHINX)).unwrap();
        assert_eq!(
            cmd,
            argv(
                "'PYTEST_ADDOPTS=--color yes' PYTHONWARNINGS=error {python} -X dev \
                 -X warn_default_encoding -m pytest -rA --durations 25"
            )
        );
        assert!(is_tox(&argv("tox --current-env -epy39 -v --")));
        assert!(!is_tox(&argv("pytest -rA")));
    }

    #[test]
    fn what_is_not_understood_is_said() {
        let e = as_pytest(&argv("tox -epy39 --"), None).unwrap_err();
        assert!(e.contains("--current-env"), "{e}");
        let e = as_pytest(&argv("tox --current-env -r -epy39"), Some(SPHINX)).unwrap_err();
        assert!(e.contains("`-r`"), "{e}");
        let e = as_pytest(
            &argv("tox --current-env -edocs"),
            Some("[testenv:docs]\ncommands = sphinx-build x\n"),
        )
        .unwrap_err();
        assert!(e.contains("starts pytest"), "{e}");
        let e = as_pytest(&argv("tox --current-env -epy39"), None).unwrap_err();
        assert!(e.contains("no tox.ini"), "{e}");
    }
}
