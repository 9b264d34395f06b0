//! The log formats SWE-bench grades its Python repositories by, ported
//! line for line from `swebench.harness.log_parsers.python` (5.0.x) so that
//! a log reads into the same status map here as there: pytest's short
//! summary (three variants, and seaborn's and matplotlib's), Django's
//! `runtests.py` and SymPy's `bin/test`.
//!
//! Two deliberate differences, both on lines no honest run prints: a line
//! whose first word only *begins* with a status (`PASSEDX t`) is skipped
//! (SWE-bench would store the status `PASSEDX`, which then counts neither
//! way), and a Django `FAIL:`/`ERROR:` line with nothing after it is
//! skipped (SWE-bench's parser raises on it).

use crate::grading::status::{Status, StatusMap};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// How a test run's log is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// pytest's `-rA` summary, ids cut at their first space
    /// (`parse_log_pytest`).
    Pytest,
    /// As `Pytest`, a parameter that is an absolute path kept as its last
    /// component (`parse_log_pytest_options`: pydicom, requests, pylint).
    PytestOptions,
    /// Whole ids, colour codes removed, and `<id> STATUS` lines too
    /// (`parse_log_pytest_v2`: astropy, scikit-learn, sphinx).
    PytestV2,
    /// As `Pytest` with `MouseButton.LEFT`/`RIGHT` read as 1 and 3
    /// (`parse_log_matplotlib`).
    Matplotlib,
    /// seaborn's (`parse_log_seaborn`).
    Seaborn,
    /// Django's `tests/runtests.py --verbosity 2` (`parse_log_django`).
    Django,
    /// SymPy's `bin/test` (`parse_log_sympy`).
    Sympy,
}

/// SWE-bench's `MAP_REPO_TO_PARSER_PY`: the format of each repository of
/// its Python datasets.
const BY_REPO: &[(&str, LogFormat)] = &[
    ("astropy/astropy", LogFormat::PytestV2),
    ("django/django", LogFormat::Django),
    ("marshmallow-code/marshmallow", LogFormat::Pytest),
    ("matplotlib/matplotlib", LogFormat::Matplotlib),
    ("mwaskom/seaborn", LogFormat::Seaborn),
    ("pallets/flask", LogFormat::Pytest),
    ("psf/requests", LogFormat::PytestOptions),
    ("pvlib/pvlib-python", LogFormat::Pytest),
    ("pydata/xarray", LogFormat::Pytest),
    ("pydicom/pydicom", LogFormat::PytestOptions),
    ("pylint-dev/astroid", LogFormat::Pytest),
    ("pylint-dev/pylint", LogFormat::PytestOptions),
    ("pytest-dev/pytest", LogFormat::Pytest),
    ("pyvista/pyvista", LogFormat::Pytest),
    ("scikit-learn/scikit-learn", LogFormat::PytestV2),
    ("sqlfluff/sqlfluff", LogFormat::Pytest),
    ("sphinx-doc/sphinx", LogFormat::PytestV2),
    ("sympy/sympy", LogFormat::Sympy),
];

/// Every name a record may give, and its format: ours and SWE-bench's
/// `PARSER_REGISTRY` names of the Python parsers.
const NAMES: &[(&str, LogFormat)] = &[
    ("pytest", LogFormat::Pytest),
    ("pytest-options", LogFormat::PytestOptions),
    ("pytest-v2", LogFormat::PytestV2),
    ("matplotlib", LogFormat::Matplotlib),
    ("seaborn", LogFormat::Seaborn),
    ("django", LogFormat::Django),
    ("sympy", LogFormat::Sympy),
    ("parse_log_pytest", LogFormat::Pytest),
    ("parse_log_pytest_options", LogFormat::PytestOptions),
    ("parse_log_pytest_v2", LogFormat::PytestV2),
    ("parse_log_matplotlib", LogFormat::Matplotlib),
    ("parse_log_seaborn", LogFormat::Seaborn),
    ("parse_log_django", LogFormat::Django),
    ("parse_log_sympy", LogFormat::Sympy),
    ("parse_log_astroid", LogFormat::Pytest),
    ("parse_log_flask", LogFormat::Pytest),
    ("parse_log_marshmallow", LogFormat::Pytest),
    ("parse_log_pvlib", LogFormat::Pytest),
    ("parse_log_pyvista", LogFormat::Pytest),
    ("parse_log_sqlfluff", LogFormat::Pytest),
    ("parse_log_xarray", LogFormat::Pytest),
    ("parse_log_pydicom", LogFormat::PytestOptions),
    ("parse_log_requests", LogFormat::PytestOptions),
    ("parse_log_pylint", LogFormat::PytestOptions),
    ("parse_log_astropy", LogFormat::PytestV2),
    ("parse_log_scikit", LogFormat::PytestV2),
    ("parse_log_sphinx", LogFormat::PytestV2),
];

impl LogFormat {
    /// The format a record names (`log_parser`), ours or SWE-bench's name.
    pub fn of_name(name: &str) -> Option<LogFormat> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// The names a record may give, for an error message.
    pub fn names() -> Vec<&'static str> {
        NAMES.iter().map(|(n, _)| *n).collect()
    }

    /// Its own name.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .expect("every format has a name")
    }

    /// SWE-bench's format for `repo`; pytest's for a repository it does not
    /// list.
    pub fn for_repo(repo: &str) -> LogFormat {
        BY_REPO
            .iter()
            .find(|(r, _)| *r == repo)
            .map_or(LogFormat::Pytest, |(_, f)| *f)
    }

    /// Whether pytest runs the tests (and so writes the report grading
    /// reads first).
    pub fn is_pytest(self) -> bool {
        !matches!(self, LogFormat::Django | LogFormat::Sympy)
    }

    /// The log read into a status map, as SWE-bench's parser reads it.
    pub fn parse(self, log: &str) -> StatusMap {
        match self {
            LogFormat::Pytest => pytest(log, false),
            LogFormat::PytestOptions => pytest(log, true),
            LogFormat::PytestV2 => pytest_v2(log),
            LogFormat::Matplotlib => pytest(
                &log.replace("MouseButton.LEFT", "1")
                    .replace("MouseButton.RIGHT", "3"),
                false,
            ),
            LogFormat::Seaborn => seaborn(log),
            LogFormat::Django => django(log),
            LogFormat::Sympy => sympy(log),
        }
    }

    /// The key this format's parser gives the test pytest names `id` on a
    /// summary line of `status` (the message after the id left out).
    pub fn key_of(self, id: &str, status: Status) -> String {
        let first = |id: &str| py_split(id).next().unwrap_or_default().to_string();
        match self {
            LogFormat::Pytest | LogFormat::Seaborn => first(id),
            LogFormat::Matplotlib => first(
                &id.replace("MouseButton.LEFT", "1")
                    .replace("MouseButton.RIGHT", "3"),
            ),
            LogFormat::PytestOptions => options(&first(id)),
            LogFormat::PytestV2 => {
                let id = match status {
                    Status::Failed => id.split(" - ").next().unwrap_or_default(),
                    _ => id,
                };
                py_split(id).collect::<Vec<_>>().join(" ")
            }
            LogFormat::Django | LogFormat::Sympy => id.to_string(),
        }
    }
}

/// Python's `str.isspace` characters, which `str.split()` splits on.
fn py_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\x0b'
            | '\x0c'
            | '\r'
            | '\x1c'..='\x1f'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `str.split()` with no argument.
fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(py_space).filter(|w| !w.is_empty())
}

/// Python's `str.strip()` with no argument.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// The status a line starts with, when its first word is exactly one.
fn leading_status(line: &str) -> Option<Status> {
    if !Status::ALL.iter().any(|s| line.starts_with(s.word())) {
        return None;
    }
    Status::of_word(py_split(line).next()?)
}

/// pytest's `SKIPPED [N] path:line: reason` summary, where `[N]` is a count,
/// not a test.
fn skip_summary(status: Status, name: &str) -> bool {
    status == Status::Skipped
        && name.len() > 2
        && name.starts_with('[')
        && name.ends_with(']')
        && name[1..name.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

/// `parse_log_pytest` (and `parse_log_pytest_options` with `options`).
fn pytest(log: &str, with_options: bool) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(status) = leading_status(line) else {
            continue;
        };
        let line = if status == Status::Failed {
            line.replace(" - ", " ")
        } else {
            line.to_string()
        };
        let words: Vec<&str> = py_split(&line).collect();
        if words.len() <= 1 || skip_summary(status, words[1]) {
            continue;
        }
        let name = if with_options {
            options(words[1])
        } else {
            words[1].to_string()
        };
        map.insert(name, status);
    }
    map
}

/// `parse_log_pytest_options`' rewrite of a parameter: one that is an
/// absolute path (`/a/b/c`, not `//x` and without `*`) is kept as `/c`.
fn options(name: &str) -> String {
    // `(.*?)\[(.*)\]`, searched: up to the first `[` with a `]` after it,
    // then up to the last `]`.
    let Some(close) = name.rfind(']') else {
        return name.to_string();
    };
    let Some(open) = name[..close].find('[') else {
        return name.to_string();
    };
    let (main, mut option) = (&name[..open], name[open + 1..close].to_string());
    if option.starts_with('/') && !option.starts_with("//") && !option.contains('*') {
        option = format!("/{}", option.rsplit('/').next().unwrap_or_default());
    }
    format!("{main}[{option}]")
}

static COLOUR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[(\d+)m").expect("valid"));

/// `parse_log_pytest_v2`.
fn pytest_v2(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let line = COLOUR.replace_all(line, "");
        let line: String = line
            .chars()
            .filter(|c| !('\x01'..='\x1f').contains(c))
            .collect();
        if let Some(status) = leading_status(&line) {
            let line = if status == Status::Failed {
                line.split(" - ").next().unwrap_or_default()
            } else {
                &line
            };
            let words: Vec<&str> = py_split(line).collect();
            if words.len() >= 2 && !skip_summary(status, words[1]) {
                map.insert(words[1..].join(" "), status);
            }
        } else if Status::ALL.iter().any(|s| line.ends_with(s.word())) {
            let words: Vec<&str> = py_split(&line).collect();
            if words.len() >= 2 {
                if let Some(status) = Status::of_word(words[words.len() - 1]) {
                    map.insert(words[..words.len() - 1].join(" "), status);
                }
            }
        }
    }
    map
}

/// `parse_log_seaborn`.
fn seaborn(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let words: Vec<&str> = py_split(line).collect();
        if words.len() < 2 {
            continue;
        }
        if line.starts_with("FAILED") {
            map.insert(words[1].to_string(), Status::Failed);
        } else if line.contains(" PASSED ") {
            if words[1] == "PASSED" {
                map.insert(words[0].to_string(), Status::Passed);
            }
        } else if line.starts_with("PASSED") {
            map.insert(words[1].to_string(), Status::Passed);
        }
    }
    map
}

static DJANGO_SPLIT: LazyLock<[Regex; 3]> = LazyLock::new(|| {
    [
        r"(?m)^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
        r"(?m)^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ /(.*)/\nok$",
        r"(?m)^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
    ]
    .map(|p| Regex::new(p).expect("valid"))
});

/// `parse_log_django`.
fn django(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut prev_test: Option<String> = None;
    for line in log.split('\n') {
        let mut line = py_strip(line).to_string();
        if line.contains("--version is equivalent to version") {
            map.insert("--version is equivalent to version".into(), Status::Passed);
        }
        if let Some((test, _)) = line.split_once(" ... ") {
            prev_test = Some(test.to_string());
        }
        for suffix in [" ... ok", " ... OK", " ...  OK"] {
            if line.ends_with(suffix) {
                // SWE-bench's own fix for one django instance (7188).
                if py_strip(&line)
                    .starts_with("Applying sites.0002_alter_domain_unique...test_no_migrations")
                {
                    line =
                        py_strip(line.split_once("...").map_or(&line[..], |(_, r)| r)).to_string();
                }
                let test = line.rsplit_once(suffix).map_or(&line[..], |(t, _)| t);
                map.insert(test.to_string(), Status::Passed);
                break;
            }
        }
        if let Some((test, _)) = line.split_once(" ... skipped") {
            map.insert(test.to_string(), Status::Skipped);
        }
        if line.ends_with(" ... FAIL") {
            let test = line.split_once(" ... FAIL").map_or("", |(t, _)| t);
            map.insert(test.to_string(), Status::Failed);
        }
        if line.starts_with("FAIL:") {
            if let Some(test) = py_split(&line).nth(1) {
                map.insert(py_strip(test).to_string(), Status::Failed);
            }
        }
        if line.ends_with(" ... ERROR") {
            let test = line.split_once(" ... ERROR").map_or("", |(t, _)| t);
            map.insert(test.to_string(), Status::Error);
        }
        if line.starts_with("ERROR:") {
            if let Some(test) = py_split(&line).nth(1) {
                map.insert(py_strip(test).to_string(), Status::Error);
            }
        }
        if line.trim_start_matches(py_space).starts_with("ok") {
            if let Some(test) = &prev_test {
                map.insert(test.clone(), Status::Passed);
            }
        }
    }
    // A test's `ok` pushed to the next line by a message Django prints.
    for pattern in DJANGO_SPLIT.iter() {
        for caps in pattern.captures_iter(log) {
            map.insert(caps[1].to_string(), Status::Passed);
        }
    }
    map
}

static SYMPY_FAILURE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(_*) (.*)\.py:(.*) (_*)").expect("valid"));

/// `parse_log_sympy`.
fn sympy(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for caps in SYMPY_FAILURE.captures_iter(log) {
        map.insert(format!("{}.py:{}", &caps[2], &caps[3]), Status::Failed);
    }
    for line in log.split('\n') {
        let line = py_strip(line);
        if !line.starts_with("test_") {
            continue;
        }
        let first = py_split(line).next().unwrap_or_default().to_string();
        if line.ends_with(" E") {
            map.insert(first.clone(), Status::Error);
        }
        if line.ends_with(" F") {
            map.insert(first.clone(), Status::Failed);
        }
        if line.ends_with(" ok") {
            map.insert(first, Status::Passed);
        }
    }
    map
}

#[cfg(test)]
mod tests {

    /// The tables above against SWE-bench's own, as `data/swebench-specs.json`
    /// carries them (regenerated by `scripts/swebench_specs.py`): every
    /// repository's format, and every parser name it uses.
    #[test]
    fn repositories_and_parser_names_agree_with_swe_benchs_data() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../data/swebench-specs.json")).unwrap();
        let mut checked = 0;
        for (repo, spec) in data["repos"].as_object().unwrap() {
            let (Some(alias), Some(function)) = (
                spec["log_parser"].as_str(),
                spec["log_parser_function"].as_str(),
            ) else {
                continue;
            };
            let by_function = LogFormat::of_name(function)
                .unwrap_or_else(|| panic!("{repo}: {function} is not a name grading reads"));
            assert_eq!(
                LogFormat::of_name(alias),
                Some(by_function),
                "{repo}: {alias}"
            );
            assert_eq!(LogFormat::for_repo(repo), by_function, "{repo}");
            checked += 1;
        }
        assert_eq!(checked, BY_REPO.len());
    }

    use super::*;

    fn entries(map: &StatusMap) -> Vec<(&str, &str)> {
        map.iter().map(|(k, s)| (k.as_str(), s.word())).collect()
    }

    const SUMMARY: &str = "\
=========================== short test summary info ============================
PASSED tests/test_f.py::test_size[test_args58-1 Byte]
PASSED tests/test_f.py::test_size[test_args59-2 Bytes]
SKIPPED [1] tests/test_f.py:24: nope
XFAIL tests/test_f.py::test_known - reason: later
XPASS tests/test_f.py::test_lucky
ERROR tests/test_g.py::test_setup - RuntimeError: boom
FAILED tests/test_f.py::test_p[x - y] - AssertionError: assert 1
FAILED tests/test_f.py::test_paths[/usr/lib/a.txt] - ValueError
";

    #[test]
    fn pytest_ids_are_cut_at_their_first_space_and_xpass_is_dropped() {
        let m = LogFormat::Pytest.parse(SUMMARY);
        assert_eq!(
            entries(&m),
            [
                ("tests/test_f.py::test_size[test_args58-1", "PASSED"),
                ("tests/test_f.py::test_size[test_args59-2", "PASSED"),
                ("tests/test_f.py::test_known", "XFAIL"),
                ("tests/test_g.py::test_setup", "ERROR"),
                ("tests/test_f.py::test_p[x", "FAILED"),
                ("tests/test_f.py::test_paths[/usr/lib/a.txt]", "FAILED"),
            ]
        );
        assert_eq!(
            LogFormat::Pytest.key_of(
                "tests/test_f.py::test_size[test_args58-1 Byte]",
                Status::Passed
            ),
            "tests/test_f.py::test_size[test_args58-1"
        );
        assert_eq!(
            LogFormat::PytestV2.key_of("t.py::test_p[x - y]", Status::Failed),
            "t.py::test_p[x"
        );
        assert_eq!(
            LogFormat::PytestV2.key_of("t.py::test_p[x - y]", Status::Passed),
            "t.py::test_p[x - y]"
        );
    }

    #[test]
    fn the_options_variant_keeps_a_path_parameter_as_its_last_part() {
        let m = LogFormat::PytestOptions.parse(SUMMARY);
        assert_eq!(
            m.get("tests/test_f.py::test_paths[/a.txt]"),
            Some(&Status::Failed)
        );
        assert_eq!(options("t::x[//net/a]"), "t::x[//net/a]");
        assert_eq!(options("t::x[/a/*.py]"), "t::x[/a/*.py]");
        assert_eq!(options("t::x[a]b"), "t::x[a]");
        assert_eq!(options("t::x[a"), "t::x[a");
    }

    #[test]
    fn the_v2_variant_keeps_whole_ids_and_reads_colour_and_verbose_lines() {
        let coloured = "\x1b[32mPASSED\x1b[0m tests/t.py::test_a[1 Byte]\n\
                        FAILED tests/t.py::test_p[x - y] - AssertionError\n\
                        tests/t.py::test_old PASSED\n\
                        XFAIL tests/t.py::test_x - reason: later\n";
        let m = LogFormat::PytestV2.parse(coloured);
        assert_eq!(
            entries(&m),
            [
                ("tests/t.py::test_a[1 Byte]", "PASSED"),
                ("tests/t.py::test_p[x", "FAILED"),
                ("tests/t.py::test_old", "PASSED"),
                ("tests/t.py::test_x - reason: later", "XFAIL"),
            ]
        );
    }

    #[test]
    fn a_later_line_overwrites_a_status_but_not_its_place() {
        let m = LogFormat::Pytest.parse("PASSED t::a\nPASSED t::b\nFAILED t::a - boom\n");
        assert_eq!(entries(&m), [("t::a", "FAILED"), ("t::b", "PASSED")]);
        // Not a status word, though it begins with one.
        assert!(LogFormat::Pytest.parse("PASSEDX t::a\n").is_empty());
    }

    #[test]
    fn django_runtests_lines_are_read() {
        let log = "\
test_add (admin_views.tests.AdminViewTests) ... ok
test_skip (admin_views.tests.AdminViewTests) ... skipped 'no db'
test_fail (admin_views.tests.AdminViewTests) ... FAIL
test_err (admin_views.tests.AdminViewTests) ... ERROR
test_slow (admin_views.tests.AdminViewTests) ... System check identified no issues (0 silenced).
ok
test_msg (admin_views.tests.AdminViewTests) ... Internal Server Error: /admin/x/
ok
======================================================================
FAIL: test_fail (admin_views.tests.AdminViewTests)
";
        let m = LogFormat::Django.parse(log);
        let get = |k: &str| m.get(k).map(|s| s.word());
        assert_eq!(
            get("test_add (admin_views.tests.AdminViewTests)"),
            Some("PASSED")
        );
        assert_eq!(
            get("test_skip (admin_views.tests.AdminViewTests)"),
            Some("SKIPPED")
        );
        assert_eq!(
            get("test_fail (admin_views.tests.AdminViewTests)"),
            Some("FAILED")
        );
        assert_eq!(
            get("test_err (admin_views.tests.AdminViewTests)"),
            Some("ERROR")
        );
        assert_eq!(
            get("test_slow (admin_views.tests.AdminViewTests)"),
            Some("PASSED")
        );
        assert_eq!(
            get("test_msg (admin_views.tests.AdminViewTests)"),
            Some("PASSED")
        );
        assert_eq!(get("test_fail"), Some("FAILED"));
    }

    #[test]
    fn sympy_bin_test_lines_are_read() {
        let log = "\
sympy/core/tests/test_basic.py[3]
test_a ok
test_b F
test_c E
________________________________ sympy/core/tests/test_basic.py:test_b ________________________________
";
        let m = LogFormat::Sympy.parse(log);
        let get = |k: &str| m.get(k).map(|s| s.word());
        assert_eq!(get("test_a"), Some("PASSED"));
        assert_eq!(get("test_b"), Some("FAILED"));
        assert_eq!(get("test_c"), Some("ERROR"));
        assert_eq!(get("sympy/core/tests/test_basic.py:test_b"), Some("FAILED"));
    }

    #[test]
    fn names_are_ours_or_swe_benchs_and_repositories_have_theirs() {
        assert_eq!(
            LogFormat::of_name("parse_log_django"),
            Some(LogFormat::Django)
        );
        assert_eq!(LogFormat::of_name("pytest-v2"), Some(LogFormat::PytestV2));
        assert_eq!(LogFormat::of_name("parse_log_jest"), None);
        assert_eq!(LogFormat::for_repo("sympy/sympy"), LogFormat::Sympy);
        assert_eq!(LogFormat::for_repo("acme/widgets"), LogFormat::Pytest);
        for (name, f) in NAMES {
            assert_eq!(LogFormat::of_name(f.name()), Some(*f), "{name}");
        }
    }
}
