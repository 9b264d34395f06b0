//! How an instance's tests are run: the command and the format its log is
//! read in (an instance's own `test_cmd` and `log_parser`, else SWE-bench's
//! for its repository), the shell lines run before it (`eval_commands`),
//! and how the test files a test patch touches become its arguments, as
//! SWE-bench's harness makes them (Django's runner takes dotted module
//! names).

use crate::grading::log_parsers::LogFormat;
use crate::grading::pytest_report::{self, Mode};
use std::collections::BTreeMap;
use std::path::Path;

/// The command a format's repositories run by default before the test
/// files (SWE-bench's `test_cmd` for them); `{python}` is the instance's
/// interpreter.
fn default_command(format: LogFormat) -> &'static str {
    match format {
        LogFormat::Django => {
            "{python} ./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
        }
        LogFormat::Sympy => {
            "PYTHONWARNINGS=ignore::UserWarning,ignore::SyntaxWarning {python} bin/test -C --verbose"
        }
        _ => "{python} -m pytest -rA -p no:cacheprovider",
    }
}

/// Files whose changes SWE-bench does not pass to the runner as tests.
const NOT_TESTS: &[&str] = &[
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// An instance's test command, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    /// How its log is read.
    pub format: LogFormat,
    /// Variables the command line assigned before its program.
    pub env: BTreeMap<String, String>,
    /// The program and its arguments before the test files.
    pub argv: Vec<String>,
    /// How it starts pytest, when its format is pytest's.
    pytest: Option<Mode>,
    /// Shell lines run before it, in the same shell.
    pub setup: Vec<String>,
    /// The instance's interpreter, which runs a `pytest` script.
    python: String,
    /// Whose pytest runs the tests (the copy's when the repository under
    /// test is pytest: see [`TestCommand::testing_pytest`]).
    origin: pytest_report::Origin,
}

impl TestCommand {
    /// The command of an instance whose record gives `test_cmd` (argv),
    /// `log_parser` and `eval_commands`, from `repo`. `python` stands for
    /// `{python}`. An error says which field is wrong and why.
    pub fn new(
        repo: &str,
        test_cmd: Option<&[String]>,
        log_parser: Option<&str>,
        eval_commands: &[String],
        python: &Path,
    ) -> Result<TestCommand, String> {
        let format = match log_parser {
            Some(name) => LogFormat::of_name(name).ok_or_else(|| {
                format!(
                    "field `log_parser`: `{name}` is not a log format grading reads; it reads {}",
                    LogFormat::names().join(", ")
                )
            })?,
            None => LogFormat::for_repo(repo),
        };
        let words = match test_cmd {
            Some(argv) => argv.to_vec(),
            None => shlex::split(default_command(format)).expect("a valid default"),
        };
        let mut env = BTreeMap::new();
        let mut rest = words.as_slice();
        while let Some((name, value)) = rest.first().and_then(|w| assignment(w)) {
            env.insert(name.to_string(), value.to_string());
            rest = &rest[1..];
        }
        if rest.is_empty() {
            return Err("field `test_cmd`: it names no program".into());
        }
        let python = python.to_string_lossy();
        let argv: Vec<String> = rest
            .iter()
            .map(|a| a.replace("{python}", &python))
            .collect();
        let pytest = if format.is_pytest() {
            let (mode, _) = pytest_report::pytest_invocation(rest).ok_or_else(|| {
                format!(
                    "field `test_cmd`: `{}` does not start pytest, and the log format `{}` is \
                     read from pytest's own report: begin it with `pytest` or \
                     `{{python}} -m pytest`, or give the record the `log_parser` of the runner \
                     it starts",
                    rest.join(" "),
                    format.name()
                )
            })?;
            Some(mode)
        } else {
            None
        };
        Ok(TestCommand {
            format,
            env,
            argv,
            pytest,
            setup: eval_commands.to_vec(),
            python: python.into_owned(),
            origin: pytest_report::Origin::Environment,
        })
    }

    /// The command for a repository that is pytest itself (its base holds
    /// pytest's package): the tests run under the graded copy's pytest, as
    /// SWE-bench's editable install of the checkout runs them, not under
    /// the environment's (installed from the base commit).
    pub fn testing_pytest(mut self) -> TestCommand {
        self.origin = pytest_report::Origin::Copy;
        self
    }

    #[cfg(any(test, feature = "internals"))]
    /// The default command of a repository with no record to say more.
    pub fn for_repo(repo: &str, python: &Path) -> TestCommand {
        TestCommand::new(repo, None, None, &[], python).expect("the defaults are valid")
    }

    /// The variables its command line assigned, as the run gets them (a
    /// `PYTHONPATH` reaches pytest through the bootstrap).
    pub fn run_env(&self) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| {
                let k = if k == "PYTHONPATH" && self.pytest.is_some() {
                    pytest_report::PYTHONPATH_VAR.to_string()
                } else {
                    k.clone()
                };
                (k, v.clone())
            })
            .collect()
    }

    /// The full argv that runs `targets` (pytest through the report's
    /// bootstrap; with shell setup lines, through bash).
    pub fn argv_for(&self, targets: &[String]) -> Vec<String> {
        let mut argv = match self.pytest {
            Some(mode) => {
                let (_, args) = pytest_report::pytest_invocation(&self.argv)
                    .expect("checked when the command was made");
                let python = match mode {
                    Mode::Module => self.argv[0].clone(),
                    // A `pytest` script runs the instance's interpreter.
                    Mode::Script => self.python.clone(),
                };
                let mut args = args.to_vec();
                args.extend(targets.iter().cloned());
                let options = pytest_report::python_options(&self.argv);
                pytest_report::bootstrapped(&python, options, mode, self.origin, &args)
            }
            None => {
                let mut argv = self.argv.clone();
                argv.extend(targets.iter().cloned());
                argv
            }
        };
        if !self.setup.is_empty() {
            // What the setup lines put on PYTHONPATH reaches the bootstrap.
            let keep = if self.pytest.is_some() {
                format!(
                    "\nexport {}=\"${{PYTHONPATH-}}\"",
                    pytest_report::PYTHONPATH_VAR
                )
            } else {
                String::new()
            };
            let script = format!("{}{keep}\nexec \"$@\"", self.setup.join("\n"));
            let mut shell = vec!["bash".into(), "-c".into(), script, "critic-eval".into()];
            shell.append(&mut argv);
            argv = shell;
        }
        argv
    }

    /// Files of the runner itself, which a patch may not change: Django's
    /// script and settings, SymPy's script.
    pub fn runner_files(&self) -> Vec<String> {
        let files: &[&str] = match self.format {
            LogFormat::Django => &["tests/runtests.py", "tests/test_sqlite.py"],
            LogFormat::Sympy => &["bin/test"],
            _ => &[],
        };
        files.iter().map(|f| f.to_string()).collect()
    }

    /// The runner's arguments for the test files a test patch touches, as
    /// SWE-bench's `get_test_directives` makes them.
    pub fn directives(&self, files: &[String]) -> Vec<String> {
        files
            .iter()
            .filter(|f| !NOT_TESTS.iter().any(|ext| f.ends_with(ext)))
            .map(|f| match self.format {
                LogFormat::Django => {
                    let f = f.strip_suffix(".py").unwrap_or(f);
                    let f = f.strip_prefix("tests/").unwrap_or(f);
                    f.replace('/', ".")
                }
                _ => f.clone(),
            })
            .collect()
    }
}

/// `NAME=value` at the start of a command line.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some((name, value))
}

#[cfg(test)]
mod tests {

    /// The extensions SWE-bench leaves out of a test command's arguments,
    /// as `data/swebench-specs.json` carries them.
    #[test]
    fn files_left_out_of_the_arguments_agree_with_swe_benchs_data() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../data/swebench-specs.json")).unwrap();
        let theirs: Vec<&str> = data["harness"]["non_test_exts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(theirs, NOT_TESTS);
    }

    use super::*;

    fn cmd(
        repo: &str,
        test_cmd: Option<&str>,
        parser: Option<&str>,
    ) -> Result<TestCommand, String> {
        let argv = test_cmd.map(|s| shlex::split(s).unwrap());
        TestCommand::new(
            repo,
            argv.as_deref(),
            parser,
            &[],
            Path::new("/env/bin/python"),
        )
    }

    #[test]
    fn repositories_get_swe_benchs_runner_and_format() {
        let d = cmd("django/django", None, None).unwrap();
        assert_eq!(d.format, LogFormat::Django);
        assert_eq!(
            d.argv_for(
                &d.directives(&["tests/admin_views/tests.py".into(), "tests/x.json".into()])
            ),
            [
                "/env/bin/python",
                "./tests/runtests.py",
                "--verbosity",
                "2",
                "--settings=test_sqlite",
                "--parallel",
                "1",
                "admin_views.tests"
            ]
        );
        let s = cmd("sympy/sympy", None, None).unwrap();
        assert_eq!(s.format, LogFormat::Sympy);
        assert_eq!(
            s.env.get("PYTHONWARNINGS").map(String::as_str),
            Some("ignore::UserWarning,ignore::SyntaxWarning")
        );
        assert_eq!(s.argv[..2], ["/env/bin/python", "bin/test"]);
    }

    #[test]
    fn pytest_runs_through_the_report_bootstrap_with_a_plain_summary() {
        let p = cmd("acme/widgets", None, None).unwrap();
        let argv = p.argv_for(&["tests/test_a.py".into()]);
        assert_eq!(
            argv[..5],
            ["env", "-u", "PYTHONPATH", "/env/bin/python", "-c"]
        );
        assert_eq!(argv[5], pytest_report::BOOTSTRAP);
        assert_eq!(
            argv[6..],
            [
                "module",
                "environment",
                "-rA",
                "-p",
                "no:cacheprovider",
                "tests/test_a.py",
                "-rA",
                "--color=no"
            ]
        );
        // pytest's own repository runs under its own pytest.
        let own_runner = p.clone().testing_pytest().argv_for(&[]);
        assert_eq!(own_runner[7], "copy");
        let script = cmd("acme/widgets", Some("pytest -x"), None).unwrap();
        let argv = script.argv_for(&[]);
        assert_eq!(
            (argv[3].as_str(), argv[6].as_str()),
            ("/env/bin/python", "script")
        );
        // A PYTHONPATH the command sets reaches pytest through the bootstrap.
        let own = cmd("acme/widgets", Some("PYTHONPATH=lib pytest"), None).unwrap();
        assert_eq!(
            own.run_env()
                .get(pytest_report::PYTHONPATH_VAR)
                .map(String::as_str),
            Some("lib")
        );
    }

    #[test]
    fn shell_setup_lines_run_first_and_commands_that_are_not_pytest_are_refused() {
        let mut p = cmd("acme/widgets", None, None).unwrap();
        p.setup = vec!["export A=1".into()];
        let argv = p.argv_for(&[]);
        assert_eq!(
            argv[..4],
            [
                "bash",
                "-c",
                "export A=1\nexport CRITIC_PYTHONPATH=\"${PYTHONPATH-}\"\nexec \"$@\"",
                "critic-eval"
            ]
        );
        assert_eq!(argv[4..8], ["env", "-u", "PYTHONPATH", "/env/bin/python"]);
        let e = cmd("acme/widgets", Some("tox -e py"), None).unwrap_err();
        assert!(e.contains("does not start pytest"), "{e}");
        let e = cmd("acme/widgets", None, Some("parse_log_jest")).unwrap_err();
        assert!(e.contains("field `log_parser`: `parse_log_jest`"), "{e}");
        // A runner of its own with its format named is taken as it is.
        let own = cmd("acme/widgets", Some("./runtests.py -v2"), Some("django")).unwrap();
        assert_eq!(
            own.argv_for(&["a.b".into()]),
            ["./runtests.py", "-v2", "a.b"]
        );
    }
}
