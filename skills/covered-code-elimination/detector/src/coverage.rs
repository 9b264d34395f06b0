//! One run of the agent's tests under coverage.py, in a scratch copy of the
//! work tree as the agent left it (through the host's `run`), and what it
//! says about the target file: its statements and the ones no test ran.
//! Coverage is measured against the original source, never a slice.

use critic_sdk::python::Statements;
use critic_sdk::{RunRequest, RunResult};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Runs the test command under coverage.py, as `coverage run` would, and
/// prints the target's analysis on a marked last line; a Python without
/// coverage.py says so on a marked line instead. Before the tests run it
/// prints the target's statements on a marked first line.
const DRIVER: &str = r##"
import os, sys

# The work tree is on the path twice: Python puts the script's directory (its
# root) first, and the host's PYTHONPATH names the root and src/. A `json.py`
# or a `coverage` package of the agent's found there would be imported in place
# of the driver's own, and run before the driver reads its token. The driver
# imports from the installation only (os and sys are loaded already); the tests
# get the whole path back.
path = list(sys.path)
work = [sys.path[0]] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
work = {os.path.realpath(p) for p in work if p}
sys.path[:] = [p for p in sys.path if os.path.realpath(p) not in work]

import json, runpy

# coverage.py's default exclusion, the only one applied; the detector reads
# the same pragma in the target (critic_sdk::python::no_cover_pragma).
NO_COVER = r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)"


def main():
    # The result line carries a token the tests never see: it is read from
    # a file deleted before they run, so a test printing a result of its own
    # does not count.
    with open(".critic-coverage-token") as f:
        token = f.read().strip()
    os.remove(".critic-coverage-token")
    # Absolute, so a test that changes directory changes nothing analyzed.
    target, command = os.path.abspath(sys.argv[1]), sys.argv[2:]
    say = lambda marker, text: print("\n" + marker + " " + token + " " + text, flush=True)
    try:
        import coverage
    except ImportError:
        say("CRITIC-COVERAGE-MISSING", sys.executable)
        sys.exit(97)

    def measurer():
        # No configuration file is read: the agent can write .coveragerc,
        # setup.cfg, tox.ini, pyproject.toml and whatever COVERAGE_RCFILE
        # names, and their exclusions would pass for coverage.
        cov = coverage.Coverage(data_file=None, config_file=False, include=[target], branch=False)
        cov.clear_exclude()
        cov.exclude(NO_COVER)
        return cov

    # The target's statements before any code of the work tree runs: the
    # detector compares them with those of the final analysis, which a test
    # that excludes lines through coverage.py or rewrites the file changes.
    try:
        _, statements, _, _, _ = measurer().analysis2(target)
    except Exception as e:
        say("CRITIC-COVERAGE-ERROR", repr(e))
        sys.exit(98)
    say("CRITIC-COVERAGE-STATEMENTS", json.dumps(statements))
    # What `coverage run` does, in this process: measure, then run the
    # command as `python` would (`-m module args` or `script args`).
    cov = measurer()
    if command[:1] == ["-m"]:
        sys.argv = command[1:]
        run = lambda: runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = command
        run = lambda: runpy.run_path(command[0], run_name="__main__")
    sys.path[:] = path
    cov.start()
    try:
        run()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        cov.stop()
    try:
        _, statements, _, missing, _ = cov.analysis2(target)
    except Exception as e:
        say("CRITIC-COVERAGE-ERROR", repr(e))
        sys.exit(98)
    say("CRITIC-COVERAGE", json.dumps({"exit": code, "statements": statements, "missing": missing}))


main()
"##;

/// The driver's file in the scratch copy.
const DRIVER_FILE: &str = ".critic-coverage-driver.py";

/// The file the driver reads its token from (and deletes).
const TOKEN_FILE: &str = ".critic-coverage-token";

/// A token no one can guess: 128 bits from the host's randomness (through
/// the standard library's hash keys).
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let half = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        h.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

/// What a run found.
pub struct Coverage {
    /// The test command's exit code.
    pub exit: i32,
    /// The target file's statement lines.
    pub statements: Vec<usize>,
    /// Those no test ran.
    pub missing: Vec<usize>,
    /// The run, for its output.
    pub run: RunResult,
}

#[derive(Deserialize)]
struct Report {
    exit: i32,
    statements: Vec<usize>,
    missing: Vec<usize>,
}

/// Run `command` (its first word the Python) with `tests` appended, under
/// coverage of `target`, on the work tree with `patch` applied.
pub fn measure(
    command: &[String],
    target: &str,
    tests: &[String],
    patch: &str,
    timeout_secs: u64,
) -> Result<Coverage, String> {
    let (python, rest) = command
        .split_first()
        .ok_or("config.test_command is empty")?;
    let token = token();
    let mut argv = vec![python.clone(), DRIVER_FILE.to_string(), target.to_string()];
    argv.extend(rest.iter().cloned());
    argv.extend(tests.iter().cloned());
    let run = critic_sdk::host::run(&RunRequest {
        patch: Some(patch.to_string()).filter(|p| !p.trim().is_empty()),
        files: BTreeMap::from([
            (DRIVER_FILE.to_string(), Some(DRIVER.to_string())),
            (TOKEN_FILE.to_string(), Some(token.clone())),
        ]),
        argv,
        timeout_ms: Some(timeout_secs.saturating_mul(1000)),
        output_bytes: Some(256 << 10),
        ..RunRequest::default()
    })?;
    if let Some(error) = &run.error {
        return Err(format!("the test run could not start: {error}"));
    }
    if run.timed_out {
        return Err(format!(
            "the tests under coverage did not finish in {timeout_secs} s (config.test_timeout_secs)"
        ));
    }
    let prefix = |marker: &str| format!("{marker} {token} ");
    let marked = |marker: &str| -> Option<String> {
        run.stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(&prefix(marker)).map(str::to_string))
    };
    if let Some(python) = marked("CRITIC-COVERAGE-MISSING") {
        return Err(format!(
            "coverage.py is not installed for {python}; install it with `{python} -m pip install \
             coverage` (the skill measures the agent's tests with it)"
        ));
    }
    if let Some(error) = marked("CRITIC-COVERAGE-ERROR") {
        return Err(format!("coverage.py could not analyze {target}: {error}"));
    }
    let Some(line) = marked("CRITIC-COVERAGE") else {
        return Err(format!(
            "the coverage run printed no result (exit {:?}); its output ends:\n{}",
            run.exit_code,
            tail(&format!("{}{}", run.stdout, run.stderr), 2000)
        ));
    };
    let report: Report =
        serde_json::from_str(&line).map_err(|e| format!("the coverage result: {e}"))?;
    // The statements the driver printed before the tests ran: the first
    // such line, since no code of the work tree had run yet.
    let before: Vec<usize> = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix("CRITIC-COVERAGE-STATEMENTS")))
        .ok_or("the coverage run printed no statements before the tests ran")
        .and_then(|l| {
            serde_json::from_str(l).map_err(|_| "the statements before the tests ran do not parse")
        })?;
    if report.statements != before {
        let gone = difference(&before, &report.statements);
        let new = difference(&report.statements, &before);
        return Err(format!(
            "{target}: coverage.py's statements changed while the tests ran (no longer counted: \
             {}; newly counted: {}): something in the run took lines out of measurement or \
             rewrote the file",
            lines(&gone),
            lines(&new)
        ));
    }
    Ok(Coverage {
        exit: report.exit,
        statements: report.statements,
        missing: report.missing,
        run,
    })
}

/// The function's statements among `measured` (coverage.py's statements of
/// its file), checked against the bounds its source sets
/// ([`critic_sdk::python::statements`]). None at all, one that compiles to
/// code but is not counted (taken out of measurement), or one where the
/// function has none (another version of the file measured) is an error
/// naming `target` and the lines.
pub fn check_statements(
    target: &str,
    bounds: &Statements,
    measured: &[usize],
) -> Result<Vec<usize>, String> {
    let statements: Vec<usize> = measured
        .iter()
        .copied()
        .filter(|l| bounds.body.contains(l))
        .collect();
    if statements.is_empty() {
        return Err(format!(
            "{target}: coverage.py counts no statement of the function, so there is nothing to \
             cover (a `# pragma: no cover` on it or on its class excludes all of it)"
        ));
    }
    let uncounted: Vec<usize> = bounds
        .required
        .iter()
        .copied()
        .filter(|l| !statements.contains(l))
        .collect();
    if !uncounted.is_empty() {
        return Err(format!(
            "{target}: coverage.py does not count {} as statements, though they compile to code: \
             they were taken out of measurement",
            lines(&uncounted)
        ));
    }
    let foreign: Vec<usize> = statements
        .iter()
        .copied()
        .filter(|l| !bounds.lines.contains(l) && !bounds.nested.contains(l))
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "{target}: coverage.py counts statements on {}, where the function has none: it \
             measured another version of the file",
            lines(&foreign)
        ));
    }
    Ok(statements)
}

/// What of `a` is not in `b`.
fn difference(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().copied().filter(|l| !b.contains(l)).collect()
}

/// `line 3` or `lines 3, 5` (`none` for no lines).
fn lines(lines: &[usize]) -> String {
    let list: Vec<String> = lines.iter().map(usize::to_string).collect();
    match list.len() {
        0 => "none".to_string(),
        1 => format!("line {}", list[0]),
        _ => format!("lines {}", list.join(", ")),
    }
}

/// What failing tests said: pytest's summary lines and error lines, then
/// the end of the output, at most `max` characters.
pub fn errors(run: &RunResult, max: usize) -> String {
    let output = format!("{}\n{}", run.stdout, run.stderr);
    let picked: Vec<&str> = output
        .lines()
        .filter(|l| {
            !l.starts_with("CRITIC-COVERAGE")
                && (l.starts_with("FAILED ")
                    || l.starts_with("ERROR ")
                    || l.starts_with("E   ")
                    || l.contains("Error:"))
        })
        .collect();
    let text = if picked.is_empty() {
        output
            .lines()
            .filter(|l| !l.starts_with("CRITIC-COVERAGE"))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        picked.join("\n")
    };
    tail(&text, max)
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> String {
    let chars = text.chars().count();
    if chars <= max {
        return text.trim().to_string();
    }
    let rest: String = text.chars().skip(chars - max).collect();
    format!("[...]\n{}", rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
def f(x):
    global g
    if x:
        return 1

    def inner():
        return 2
    return 3
";

    fn check(measured: &[usize]) -> Result<Vec<usize>, String> {
        let bounds = critic_sdk::python::statements(SOURCE, "f").unwrap();
        check_statements("m.py::f", &bounds, measured)
    }

    #[test]
    fn statements_within_the_bounds_pass_and_others_name_the_lines() {
        // The `def` line and line 9 are the module's; `global` compiles to
        // nothing; the nested function's body is its own.
        assert_eq!(check(&[1, 3, 4, 6, 7, 8, 9]).unwrap(), [3, 4, 6, 7, 8]);
        assert_eq!(check(&[3, 4, 6, 8]).unwrap(), [3, 4, 6, 8]);
        let e = check(&[1]).unwrap_err();
        assert!(
            e.starts_with("m.py::f: coverage.py counts no statement"),
            "{e}"
        );
        let e = check(&[3, 6]).unwrap_err();
        assert!(e.contains("does not count lines 4, 8 as statements"), "{e}");
        let e = check(&[3, 4, 5, 6, 8]).unwrap_err();
        assert!(
            e.contains("counts statements on line 5, where the function has none"),
            "{e}"
        );
    }
}
