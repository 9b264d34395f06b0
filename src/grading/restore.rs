//! What steers the test runner, put back to the instance's version before
//! a patch is graded, so that a patch can change the code under test but
//! not how its tests are run and reported: every `conftest.py`, pytest's
//! own configuration files, the pytest sections of `setup.cfg`, `tox.ini`
//! and `pyproject.toml`, `.pth` files, `sitecustomize`/`usercustomize`, the
//! `__init__.py` of the test files' directories, a runner's own scripts
//! (Django's `tests/runtests.py`), and new modules in the directories on a
//! run's path (the root, `src/`, the test files' directories) that would
//! stand in for pytest, its plugins or the standard library. SWE-bench's
//! harness resets the test patch's files the same way (the caller writes
//! those over everything); each restoration is recorded.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One file put back, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// The path.
    pub path: String,
    /// Why it steers the test runner.
    pub why: String,
}

/// Files whose whole content is the runner's configuration or code.
const WHOLE: &[(&str, &str)] = &[
    ("conftest.py", "pytest loads it as a plugin"),
    ("pytest.ini", "pytest's configuration"),
    (".pytest.ini", "pytest's configuration"),
    ("pytest.toml", "pytest's configuration (pytest 9)"),
    (".pytest.toml", "pytest's configuration (pytest 9)"),
    ("sitecustomize.py", "Python runs it at start-up"),
    ("usercustomize.py", "Python runs it at start-up"),
];

/// Top-level names a new module may not take: pytest, what it imports, its
/// plugins' usual names, and the standard library (on the path ahead of it
/// in a run, a module of the copy would be imported instead).
const RUNNER: &[&str] = &[
    "pytest",
    "_pytest",
    "py",
    "pluggy",
    "iniconfig",
    "packaging",
    "exceptiongroup",
    "tomli",
    "attr",
    "attrs",
    "more_itertools",
    "atomicwrites",
    "six",
    "importlib_metadata",
    "zipp",
    "colorama",
    "xdist",
    "execnet",
    "coverage",
    "hypothesis",
    "typing_extensions",
];

/// `sys.stdlib_module_names` of CPython 3.11 to 3.13, and modules older
/// versions still have.
const STDLIB: &str = "\
__future__ _abc _aix_support _android_support _ast _asyncio _bisect _blake2
_bootsubprocess _bz2 _codecs _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr
_codecs_tw _collections _collections_abc _colorize _compat_pickle _compression
_contextvars _crypt _csv _ctypes _curses _curses_panel _datetime _dbm _decimal
_dummy_thread _elementtree _frozen_importlib _frozen_importlib_external _functools _gdbm
_hashlib _heapq _imp _interpchannels _interpqueues _interpreters _io _ios_support _json
_locale _lsprof _lzma _markupbase _md5 _msi _multibytecodec _multiprocessing _opcode
_opcode_metadata _operator _osx_support _overlapped _pickle _posixshmem _posixsubprocess
_py_abc _pydatetime _pydecimal _pyio _pylong _pyrepl _queue _random _scproxy _sha1 _sha2
_sha256 _sha3 _sha512 _signal _sitebuiltins _socket _sqlite3 _sre _ssl _stat _statistics
_string _strptime _struct _suggestions _symtable _sysconfig _thread _threading_local
_tkinter _tokenize _tracemalloc _typing _uuid _warnings _weakref _weakrefset _winapi
_wmi _zoneinfo abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit
audioop base64 bdb binascii binhex bisect builtins bz2 cProfile calendar cgi cgitb chunk
cmath cmd code codecs codeop collections colorsys compileall concurrent configparser
contextlib contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm
decimal difflib dis distutils doctest dummy_threading email encodings ensurepip enum
errno faulthandler fcntl filecmp fileinput fnmatch formatter fractions ftplib functools
gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib heapq hmac html
http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json keyword
lib2to3 linecache locale logging lzma macpath mailbox mailcap marshal math mimetypes
mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath nturl2path
numbers opcode operator optparse os ossaudiodev parser pathlib pdb pickle pickletools
pipes pkgutil platform plistlib poplib posix posixpath pprint profile pstats pty pwd
py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib
resource rlcompleter runpy sched secrets select selectors shelve shlex shutil signal
site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants
sre_parse ssl stat statistics string stringprep struct subprocess sunau symbol symtable
sys sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap this threading
time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty turtle
turtledemo types typing unicodedata unittest urllib uu uuid venv warnings wave weakref
webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp zipfile zipimport zlib
zoneinfo";

/// A patched file's content, read from the patch applied to the base.
pub type Content<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// Path to what to write there (`None`: remove it).
pub type Writes = BTreeMap<String, Option<String>>;

/// Where a run looks, besides the files named in [`WHOLE`].
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// Directories on the run's path besides the root and `src/` (each
    /// golden test file's directory and its parents: pytest puts the first
    /// one without an `__init__.py` first on the path), relative, no
    /// trailing `/`.
    pub test_dirs: Vec<String>,
    /// The directories that hold golden test files themselves: their
    /// `__init__.py` is the tests' own, while one above them is the code's
    /// (a fix may change `pkg/__init__.py` of a `pkg/tests/`).
    pub test_file_dirs: Vec<String>,
    /// Files of the test runner itself (Django's `tests/runtests.py`).
    pub runner_files: Vec<String>,
}

/// What to write over a copy with `patch` applied, so that nothing the
/// patch changed steers the runner: path to base content (`None`: remove
/// it), and what was restored. `base` reads the base commit's file,
/// `patched` the file as the patch leaves it, `base_has` whether the base
/// commit has a path (file or directory).
pub fn steering(
    patch: &str,
    base: Content,
    patched: Content,
    base_has: &dyn Fn(&str) -> bool,
    places: &Places,
) -> Result<(Writes, Vec<Restored>), String> {
    let files = critic_sdk::diff::parse(patch).map_err(|e| format!("not a git diff: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    let mut paths: Vec<String> = Vec::new();
    for f in &files {
        for p in std::iter::once(&f.path).chain(&f.old_path) {
            if seen.insert(p.clone()) {
                paths.push(p.clone());
            }
        }
    }
    let mut writes = BTreeMap::new();
    let mut restored = Vec::new();
    for path in paths {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", &path));
        let why: Option<String> = if let Some((_, why)) = WHOLE.iter().find(|(n, _)| *n == name) {
            Some((*why).into())
        } else if name.ends_with(".pth") {
            Some("Python's site module runs it".into())
        } else if places.runner_files.contains(&path) {
            Some("the test runner's own file".into())
        } else if name == "__init__.py" && places.test_file_dirs.iter().any(|d| d == dir) {
            Some("pytest imports it to collect the golden tests".into())
        } else if name == "__init__.py"
            && (dir.is_empty() || places.test_dirs.iter().any(|d| d == dir))
            && !base_has(&path)
        {
            // A package the base does not have, on the way from the root to
            // a golden test, would make pytest import code no test names
            // (pytest 8 imports a root `__init__.py` as the root package).
            Some("a new package pytest would import to collect the golden tests".into())
        } else if let Some(module) = shadowing(&path, base_has, &places.test_dirs) {
            Some(format!(
                "a new module `{module}` would stand in for the runner's own"
            ))
        } else if matches!(name, "setup.cfg" | "tox.ini" | "pyproject.toml") {
            let (was, now) = (base(&path)?, patched(&path)?);
            match pytest_settings(name, was.as_deref(), now.as_deref()) {
                Settings::Same => None,
                Settings::New => {
                    Some("a new configuration file pytest would read (or root at)".into())
                }
                Settings::Changed(merged) => {
                    writes.insert(path.clone(), Some(merged));
                    restored.push(Restored {
                        path: path.clone(),
                        why: "its pytest settings changed; those are the base's again".into(),
                    });
                    None
                }
            }
        } else {
            None
        };
        if let Some(why) = why {
            writes.insert(path.clone(), base(&path)?);
            restored.push(Restored { path, why });
        }
    }
    Ok((writes, restored))
}

/// The module a new path directly in a directory on a run's path (the
/// root, `src/`, a test directory) would make importable in place of the
/// runner's, the standard library's or a plugin's, when the base has
/// nothing by that name there.
fn shadowing(path: &str, base_has: &dyn Fn(&str) -> bool, test_dirs: &[String]) -> Option<String> {
    let dirs = ["", "src"]
        .into_iter()
        .chain(test_dirs.iter().map(String::as_str));
    for dir in dirs {
        let rest = if dir.is_empty() {
            path
        } else {
            match path.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
                Some(rest) => rest,
                None => continue,
            }
        };
        let Some(top) = rest.split('/').next() else {
            continue;
        };
        let (module, is_file) = match top.strip_suffix(".py") {
            Some(m) if !rest.contains('/') => (m, true),
            _ if rest.contains('/') => (top, false),
            _ => continue,
        };
        let known = RUNNER.contains(&module)
            || module.starts_with("pytest_")
            || STDLIB.split_whitespace().any(|n| n == module);
        if !known {
            continue;
        }
        let at = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let at_base = if is_file {
            base_has(&format!("{at}{top}"))
        } else {
            base_has(&format!("{at}{module}"))
        };
        if !at_base {
            return Some(module.to_string());
        }
    }
    None
}

enum Settings {
    /// Its pytest settings are the base's.
    Same,
    /// A new file: removed whole.
    New,
    /// The patched file with the base's pytest settings.
    Changed(String),
}

/// Compare the pytest settings of a `setup.cfg`, `tox.ini` or
/// `pyproject.toml` at the base (`was`) and patched (`now`).
fn pytest_settings(name: &str, was: Option<&str>, now: Option<&str>) -> Settings {
    let (Some(was), Some(now)) = (was, now) else {
        return match now {
            // Deleted by the patch: restored whole, as a changed file is.
            None => Settings::Changed(was.unwrap_or_default().to_string()),
            Some(_) => Settings::New,
        };
    };
    if name == "pyproject.toml" {
        return toml_settings(was, now);
    }
    let sections: &[&str] = if name == "setup.cfg" {
        &["tool:pytest", "pytest"]
    } else {
        &["pytest"]
    };
    let pick = |text: &str| -> (String, String) {
        let (mut ours, mut rest) = (String::new(), String::new());
        let mut inside = false;
        for line in py_lines(text) {
            if let Some(header) = line.strip_prefix('[') {
                let name = header.split(']').next().unwrap_or_default().trim();
                inside = sections.contains(&name);
            }
            if inside {
                ours.push_str(line);
            } else {
                rest.push_str(line);
            }
        }
        (ours, rest)
    };
    let ((base_ours, _), (now_ours, now_rest)) = (pick(was), pick(now));
    if base_ours.trim_end() == now_ours.trim_end() {
        return Settings::Same;
    }
    let mut merged = now_rest;
    if !merged.is_empty() && !merged.ends_with('\n') {
        merged.push('\n');
    }
    merged.push_str(&base_ours);
    Settings::Changed(merged)
}

/// `text`'s lines as Python's `str.splitlines(keepends=True)` makes them
/// (iniconfig reads pytest's INI files so): `\r\n`, `\n`, `\r`, `\x0b`,
/// `\x0c`, `\x1c`-`\x1e`, `\x85`, `\u2028` and `\u2029` each end one.
fn py_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '\r' => match chars.peek() {
                Some(&(j, '\n')) => {
                    chars.next();
                    j + 1
                }
                _ => i + 1,
            },
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => i + c.len_utf8(),
            _ => continue,
        };
        lines.push(&text[start..end]);
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// `tool.pytest` of two `pyproject.toml`s; a patched file that does not
/// parse is the base's again.
fn toml_settings(was: &str, now: &str) -> Settings {
    let (Ok(base), Ok(mut patched)) = (was.parse::<toml::Table>(), now.parse::<toml::Table>())
    else {
        return Settings::Changed(was.to_string());
    };
    let pytest = |t: &toml::Table| t.get("tool").and_then(|t| t.get("pytest")).cloned();
    let before = pytest(&base);
    if pytest(&patched) == before {
        return Settings::Same;
    }
    let tool = patched
        .entry("tool")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match (tool.as_table_mut(), before) {
        (Some(tool), Some(p)) => {
            tool.insert("pytest".into(), p);
        }
        (Some(tool), None) => {
            tool.remove("pytest");
        }
        (None, _) => return Settings::Changed(was.to_string()),
    }
    match toml::to_string(&patched) {
        Ok(text) => Settings::Changed(text),
        Err(_) => Settings::Changed(was.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(paths: &[&str]) -> String {
        paths
            .iter()
            .map(|p| {
                format!("diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+x\n")
            })
            .collect()
    }

    fn at_base(path: &str) -> Result<Option<String>, String> {
        Ok(match path {
            "conftest.py" => Some("# base\n".into()),
            "setup.cfg" => Some("[metadata]\nname = w\n[tool:pytest]\naddopts = -q\n".into()),
            "pyproject.toml" => Some(
                "[project]\nname = \"w\"\n[tool.pytest.ini_options]\naddopts = \"--color=yes\"\n"
                    .into(),
            ),
            _ => None,
        })
    }

    #[test]
    fn runner_files_go_back_to_the_base_and_new_ones_go() {
        let patch = diff(&[
            "conftest.py",
            "tests/sub/conftest.py",
            "tests/pytest.ini",
            "src/pkg/sitecustomize.py",
            "x.pth",
            "pytest_forge.py",
            "src/json.py",
            "encodings/__init__.py",
            "pkg/json.py",
            "src/pkg/core.py",
            "docs/tox.ini",
            "pytest.toml",
            "tests/__init__.py",
            "tests/pickle.py",
            "tests/runtests.py",
            "tests/helpers.py",
        ]);
        let patched = |_: &str| Ok(Some("[pytest]\naddopts = -p forge\n".to_string()));
        let places = Places {
            test_dirs: vec!["tests".into()],
            test_file_dirs: vec!["tests".into()],
            runner_files: vec!["tests/runtests.py".into()],
        };
        let (writes, restored) =
            steering(&patch, &at_base, &patched, &|p| p == "src/_pytest", &places).unwrap();
        assert_eq!(writes.get("conftest.py"), Some(&Some("# base\n".into())));
        for gone in [
            "tests/sub/conftest.py",
            "tests/pytest.ini",
            "src/pkg/sitecustomize.py",
            "x.pth",
            "pytest_forge.py",
            "src/json.py",
            "encodings/__init__.py",
            "docs/tox.ini",
            "pytest.toml",
            "tests/__init__.py",
            "tests/pickle.py",
            "tests/runtests.py",
        ] {
            assert_eq!(writes.get(gone), Some(&None), "{gone}: {writes:?}");
        }
        // Inside a package, or the project's own code: left alone.
        assert!(!writes.contains_key("pkg/json.py"));
        assert!(!writes.contains_key("src/pkg/core.py"));
        assert!(!writes.contains_key("tests/helpers.py"));
        assert_eq!(restored.len(), writes.len());
        // The project's own `src/_pytest` (pytest's repository) is its code.
        let (w, _) = steering(
            &diff(&["src/_pytest/x.py"]),
            &at_base,
            &patched,
            &|p| p == "src/_pytest",
            &places,
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        // The package above a test directory is the code under test: a fix
        // of its `__init__.py` stands; the tests' own goes back.
        let nested = Places {
            test_dirs: vec!["pkg".into(), "pkg/tests".into()],
            test_file_dirs: vec!["pkg/tests".into()],
            runner_files: vec![],
        };
        let (w, _) = steering(
            &diff(&["pkg/__init__.py", "pkg/tests/__init__.py"]),
            &at_base,
            &patched,
            &|_| true,
            &nested,
        )
        .unwrap();
        assert_eq!(w.keys().collect::<Vec<_>>(), ["pkg/tests/__init__.py"]);
        // One the base lacks, at the root or above a test directory, goes.
        let (w, _) = steering(
            &diff(&["__init__.py", "pkg/__init__.py", "docs/__init__.py"]),
            &at_base,
            &patched,
            &|p| p == "pkg/__init__.py",
            &nested,
        )
        .unwrap();
        assert_eq!(w.keys().collect::<Vec<_>>(), ["__init__.py"]);
        assert_eq!(w["__init__.py"], None);
    }

    /// docs/SECURITY.md (promise 29) names every file put back whole and
    /// every runner module a new one may not shadow.
    #[test]
    fn the_security_promise_lists_what_the_code_puts_back() {
        let doc = include_str!("../../docs/SECURITY.md");
        let row = doc
            .lines()
            .find(|l| l.starts_with("| 29 |"))
            .expect("promise 29");
        for name in WHOLE.iter().map(|(n, _)| *n).chain(RUNNER.iter().copied()) {
            assert!(
                row.contains(&format!("`{name}`")),
                "{name} is not in promise 29"
            );
        }
    }

    #[test]
    fn only_the_pytest_sections_of_shared_files_go_back() {
        let patch = diff(&["setup.cfg", "pyproject.toml"]);
        let patched = |p: &str| {
            Ok(Some(match p {
                "setup.cfg" => "[metadata]\nname = w2\n[tool:pytest]\naddopts = -p forge\n".into(),
                _ => {
                    "[project]\nname = \"w2\"\n[tool.pytest.ini_options]\naddopts = \"-p forge\"\n"
                        .into()
                }
            }))
        };
        let (writes, restored) =
            steering(&patch, &at_base, &patched, &|_| false, &Places::default()).unwrap();
        let cfg = writes["setup.cfg"].clone().unwrap();
        assert!(
            cfg.contains("name = w2") && cfg.contains("addopts = -q") && !cfg.contains("forge"),
            "{cfg}"
        );
        let toml: toml::Table = writes["pyproject.toml"].clone().unwrap().parse().unwrap();
        assert_eq!(toml["project"]["name"].as_str(), Some("w2"));
        assert_eq!(
            toml["tool"]["pytest"]["ini_options"]["addopts"].as_str(),
            Some("--color=yes")
        );
        assert_eq!(restored.len(), 2);
        // Unchanged pytest settings: nothing restored.
        let same = |p: &str| at_base(p).map(|c| c.map(|c| c.replace("name = w", "name = v")));
        let (writes, _) =
            steering(&patch, &at_base, &same, &|_| false, &Places::default()).unwrap();
        assert!(writes.is_empty(), "{writes:?}");
        // A section pytest's INI reader sees after a form feed is one.
        let hidden = |p: &str| {
            Ok(Some(match p {
                "setup.cfg" => {
                    "[metadata]\nname = w\x0c[tool:pytest]\x0caddopts = -p forge\n".into()
                }
                _ => at_base(p)?.unwrap(),
            }))
        };
        let base_cfg = |p: &str| {
            Ok(match p {
                "setup.cfg" => Some("[metadata]\nname = w\n".to_string()),
                _ => at_base(p)?,
            })
        };
        let (writes, _) = steering(
            &diff(&["setup.cfg"]),
            &base_cfg,
            &hidden,
            &|_| false,
            &Places::default(),
        )
        .unwrap();
        assert!(
            !writes["setup.cfg"].clone().unwrap().contains("forge"),
            "{writes:?}"
        );
    }
}
