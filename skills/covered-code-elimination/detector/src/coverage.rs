//! One run of the agent's tests under coverage.py, in a scratch copy of the
//! work tree as the agent left it (through the host's `run`), and what it
//! says about the target file: its statements and the ones no test ran.
//! Coverage is measured against the original source, never a slice.

use critic_sdk::{RunRequest, RunResult};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Runs the test command under coverage.py, as `coverage run` would, and
/// prints the target's analysis on a marked last line; a Python without
/// coverage.py says so on a marked line instead.
const DRIVER: &str = r#"
import json, os, runpy, sys


def main():
    # The result line carries a token the tests never see: it is read from
    # a file deleted before they run, so a test printing a result of its own
    # does not count.
    with open(".critic-coverage-token") as f:
        token = f.read().strip()
    os.remove(".critic-coverage-token")
    target, command = sys.argv[1], sys.argv[2:]
    say = lambda marker, text: print("\n" + marker + " " + token + " " + text, flush=True)
    try:
        import coverage
    except ImportError:
        say("CRITIC-COVERAGE-MISSING", sys.executable)
        sys.exit(97)
    # What `coverage run` does, in this process: measure, then run the
    # command as `python` would (`-m module args` or `script args`).
    cov = coverage.Coverage(data_file=None, include=[target])
    if command[:1] == ["-m"]:
        sys.argv = command[1:]
        run = lambda: runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = command
        run = lambda: runpy.run_path(command[0], run_name="__main__")
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
"#;

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
    let marked = |marker: &str| -> Option<String> {
        let prefix = format!("{marker} {token} ");
        run.stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
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
    Ok(Coverage {
        exit: report.exit,
        statements: report.statements,
        missing: report.missing,
        run,
    })
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
