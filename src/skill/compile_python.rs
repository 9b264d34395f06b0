//! `critic build` for a detector written in Python: a directory with
//! `app.py` (its `detect(finish)`) and a `pyproject.toml` that pins
//! componentize-py, built into a component with that componentize-py.
//!
//! The build stages the detector's sources, the Python SDK (`critic_sdk`,
//! compiled into this binary so host and guest always agree) and an entry
//! module exporting `Detector`, then runs componentize-py on them. It
//! pre-initializes the interpreter: the SDK and the app are imported at build
//! time, so no interpreter starts on a call.
//!
//! componentize-py 0.25.1 does not make the same bytes twice (its snapshot of
//! the initialized interpreter holds build-time clocks, randomness and file
//! times; upstream issue bytecodealliance/componentize-py#247). So the build
//! records a digest of everything it was made from in a custom section of
//! the component, and `critic build --check` compares that digest with the
//! sources' instead of comparing bytes.

use crate::skill::build_error::BuildError;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The componentize-py version this host is tested with; `critic new
/// --lang python` pins it.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// Names the componentize-py program to use instead of the one on `PATH`.
pub const COMPONENTIZE_PY_ENV: &str = "CRITIC_COMPONENTIZE_PY";

/// The custom section holding the digest of a Python detector's sources.
pub const SOURCE_SECTION: &str = "critic-python-sources";

/// The module componentize-py is pointed at; it exports `Detector`.
const ENTRY_MODULE: &str = "critic_detector_entry";

const ENTRY: &str = "\
# Written by `critic build`: the component's export, around app.detect.
import app
from critic_sdk._component import detector_class

Detector = detector_class(app.detect)
";

const WIT: &str = include_str!("../../critic-sdk/wit/detector.wit");

/// The Python SDK, staged into every build.
const SDK: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../critic-sdk-py/critic_sdk/__init__.py"),
    ),
    (
        "_component.py",
        include_str!("../../critic-sdk-py/critic_sdk/_component.py"),
    ),
    (
        "detector.py",
        include_str!("../../critic-sdk-py/critic_sdk/detector.py"),
    ),
    (
        "diff.py",
        include_str!("../../critic-sdk-py/critic_sdk/diff.py"),
    ),
    (
        "glob.py",
        include_str!("../../critic-sdk-py/critic_sdk/glob.py"),
    ),
    (
        "helpers.py",
        include_str!("../../critic-sdk-py/critic_sdk/helpers.py"),
    ),
    (
        "host.py",
        include_str!("../../critic-sdk-py/critic_sdk/host.py"),
    ),
    (
        "protocol.py",
        include_str!("../../critic-sdk-py/critic_sdk/protocol.py"),
    ),
    (
        "testing.py",
        include_str!("../../critic-sdk-py/critic_sdk/testing.py"),
    ),
];

/// File name endings of native extension modules, which cannot run inside a
/// WebAssembly component.
const NATIVE: [&str; 4] = [".so", ".pyd", ".dylib", ".dll"];

/// The Python detectors of a skill: `detector/` and `detectors/*/` holding
/// a `pyproject.toml` and an `app.py`.
pub fn python_detectors(skill: &Path) -> Vec<PathBuf> {
    let is_python = |d: &Path| d.join("pyproject.toml").is_file() && d.join("app.py").is_file();
    let mut found = Vec::new();
    if is_python(&skill.join("detector")) {
        found.push(skill.join("detector"));
    }
    if let Ok(entries) = std::fs::read_dir(skill.join("detectors")) {
        let mut more: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| is_python(p))
            .collect();
        more.sort();
        found.extend(more);
    }
    found
}

#[derive(Deserialize)]
struct PyProject {
    project: Option<ProjectTable>,
    tool: Option<ToolTable>,
}

#[derive(Deserialize)]
struct ProjectTable {
    name: Option<String>,
}

#[derive(Deserialize)]
struct ToolTable {
    critic: Option<CriticTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriticTable {
    #[serde(rename = "componentize-py")]
    componentize_py: Option<String>,
}

/// What a detector's `pyproject.toml` says of its build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The component's file name: the project's name, `-` made `_`, `.wasm`.
    pub wasm: String,
    /// The componentize-py version the build must use.
    pub componentize_py: String,
}

/// The largest `pyproject.toml` read.
const MAX_PROJECT_BYTES: u64 = 64 << 10;

/// Read `dir/pyproject.toml`: a regular file (not a link), of at most 64 KiB.
/// An error names the place, never quotes the file: the skill may be
/// someone else's, and its "pyproject.toml" any file of the user's.
pub fn read_project(dir: &Path) -> Result<Project, BuildError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("pyproject.toml");
    let bad = |what: String| BuildError::Usage(format!("{}: {what}", path.display()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| bad(format!("{e} (it must be a regular file, not a link)")))?;
    let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_PROJECT_BYTES {
        return Err(bad(format!(
            "must be a regular file of at most {} KiB",
            MAX_PROJECT_BYTES >> 10
        )));
    }
    let mut raw = Vec::new();
    file.take(MAX_PROJECT_BYTES)
        .read_to_end(&mut raw)
        .map_err(|e| bad(e.to_string()))?;
    let text = String::from_utf8(raw).map_err(|_| bad("not UTF-8".into()))?;
    let doc: PyProject = toml::from_str(&text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
            (line, column)
        });
        bad(format!(
            "line {line}, column {column}: {}",
            e.message().trim()
        ))
    })?;
    let name = doc
        .project
        .and_then(|p| p.name)
        .ok_or_else(|| bad("no [project] name; it names the component (name = \"my-detector\" builds my_detector.wasm)".into()))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad(format!(
            "[project] name {name:?}: use letters, digits, `-` and `_` only"
        )));
    }
    let pin = doc
        .tool
        .and_then(|t| t.critic)
        .and_then(|c| c.componentize_py)
        .ok_or_else(|| {
            bad("no [tool.critic] componentize-py version; pin the build tool, e.g. componentize-py = \"0.25.1\"".into())
        })?;
    Ok(Project {
        wasm: format!("{}.wasm", name.replace('-', "_")),
        componentize_py: pin,
    })
}

/// A staged build: the sources componentize-py reads, and their digest.
pub struct Staged {
    dir: tempfile::TempDir,
    /// SHA-256 over the staged files, the WIT and the pinned componentize-py.
    pub digest: String,
}

/// Copy the detector's sources, the SDK and the entry module into a fresh
/// directory. Tests (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`),
/// caches, hidden files and built components stay out; a native extension
/// or a symbolic link is an error.
pub fn stage(dir: &Path, project: &Project) -> Result<Staged, BuildError> {
    let staged = tempfile::Builder::new()
        .prefix("critic-build-py-")
        .tempdir()
        .map_err(|e| BuildError::Internal(format!("cannot make a build directory: {e}")))?;
    let root = staged.path().join("app");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    collect(dir, dir, &mut files)?;
    for (name, text) in SDK {
        files.push((format!("critic_sdk/{name}"), text.as_bytes().to_vec()));
    }
    files.push((format!("{ENTRY_MODULE}.py"), ENTRY.as_bytes().to_vec()));
    files.sort();
    let mut hash = Sha256::new();
    hash.update(format!("componentize-py {}\n", project.componentize_py));
    hash.update(WIT);
    for (rel, bytes) in &files {
        let dest = root.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| BuildError::Internal(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&dest, bytes)
            .map_err(|e| BuildError::Internal(format!("{}: {e}", dest.display())))?;
        hash.update((rel.len() as u64).to_le_bytes());
        hash.update(rel.as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    }
    let wit = staged.path().join("wit");
    std::fs::create_dir_all(&wit)
        .and_then(|()| std::fs::write(wit.join("detector.wit"), WIT))
        .map_err(|e| BuildError::Internal(format!("{}: {e}", wit.display())))?;
    Ok(Staged {
        dir: staged,
        digest: hex::encode(hash.finalize()),
    })
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) -> Result<(), BuildError> {
    let read_err = |p: &Path, e: std::io::Error| BuildError::Usage(format!("{}: {e}", p.display()));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| read_err(dir, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|e| read_err(&path, e))?;
        let top = dir == root;
        let skipped = name.starts_with('.')
            || name == "__pycache__"
            || (top && (name == "tests" || name == "pyproject.toml"))
            || name == "conftest.py"
            || (name.starts_with("test_") && name.ends_with(".py"))
            || name.ends_with("_test.py")
            || name.ends_with(".wasm")
            || name.ends_with(".pyc");
        if skipped {
            continue;
        }
        if kind.is_symlink() {
            return Err(BuildError::Usage(format!(
                "{}: a symbolic link; a detector's sources are copied, not followed (replace it with the file)",
                path.display()
            )));
        }
        if kind.is_dir() {
            collect(root, &path, files)?;
        } else if kind.is_file() {
            if NATIVE.iter().any(|ext| name.ends_with(ext)) {
                return Err(BuildError::Usage(format!(
                    "{}: a native extension module; a Python detector runs inside a WebAssembly component, where only pure-Python code can run (vendor a pure-Python package instead)",
                    path.display()
                )));
            }
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            files.push((rel, std::fs::read(&path).map_err(|e| read_err(&path, e))?));
        }
    }
    Ok(())
}

/// The componentize-py to run, as an absolute path: `$CRITIC_COMPONENTIZE_PY`
/// (relative to the working directory), else the first on `PATH`. Resolved
/// here because the build itself runs with a `PATH` of no programs.
fn componentize_py(install: &str) -> Result<PathBuf, BuildError> {
    let missing =
        |what: String| BuildError::Usage(format!("cannot run componentize-py: {what}; {install}"));
    let cwd = std::env::current_dir().map_err(|e| missing(e.to_string()))?;
    if let Some(named) = std::env::var_os(COMPONENTIZE_PY_ENV) {
        let path = cwd.join(&named);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(missing(format!(
                "${COMPONENTIZE_PY_ENV} names {}, which is not a file",
                path.display()
            )))
        };
    }
    let executable = |p: &PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| cwd.join(dir).join("componentize-py"))
        .find(executable)
        .ok_or_else(|| missing("none on PATH".into()))
}

/// The componentize-py at hand, checked to be the pinned one.
fn check_tool(dir: &Path, project: &Project) -> Result<PathBuf, BuildError> {
    let install = format!(
        "install it with `pip install componentize-py=={}` (or name one in ${COMPONENTIZE_PY_ENV})",
        project.componentize_py
    );
    let tool = componentize_py(&install)?;
    let out = Command::new(&tool)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .map_err(|e| BuildError::Usage(format!("cannot run componentize-py: {e}; {install}")))?;
    let version = String::from_utf8_lossy(&out.stdout);
    let version = version.trim().trim_start_matches("componentize-py").trim();
    if version != project.componentize_py {
        return Err(BuildError::Usage(format!(
            "{}: pins componentize-py {}, but the one found is {version:?}; {install}",
            dir.join("pyproject.toml").display(),
            project.componentize_py
        )));
    }
    Ok(tool)
}

/// Build the detector in `dir`: its component's bytes, with the sources'
/// digest in a custom section.
/// componentize-py runs as `trust` says (see [`super::confined_build`]):
/// confined, it writes only the staging directory.
pub fn build(
    dir: &Path,
    project: &Project,
    trust: super::confined_build::Trust,
) -> Result<Vec<u8>, BuildError> {
    let tool = check_tool(dir, project)?;
    let staged = stage(dir, project)?;
    let out = staged.dir.path().join("detector.wasm");
    let app = staged.dir.path().join("app");
    let no_programs = staged.dir.path().join("no-programs");
    std::fs::create_dir_all(&no_programs)
        .map_err(|e| BuildError::Internal(format!("{}: {e}", no_programs.display())))?;
    let mut cmd = Command::new(&tool);
    cmd.arg("-d")
        .arg(staged.dir.path().join("wit"))
        .args(["-w", "critic-detector", "-q", "componentize", "-p"])
        .arg(&app)
        .arg(ENTRY_MODULE)
        .arg("-o")
        .arg(&out)
        .current_dir(&app)
        // Only the staged sources: componentize-py adds the site-packages
        // of the environment it runs in (`$VIRTUAL_ENV`, else `pipenv` or
        // `python` found on PATH) to the component's path, so it gets
        // neither.
        .env_remove("VIRTUAL_ENV")
        .env("PATH", &no_programs)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    super::confined_build::confine(&mut cmd, trust, &[staged.dir.path()], &[&tool])?;
    let status = cmd
        .status()
        .map_err(|e| BuildError::Usage(format!("cannot run componentize-py: {e}")))?;
    if !status.success() {
        return Err(BuildError::Usage(format!(
            "{}: componentize-py failed (see its output above; app.py must define `detect(finish)`, and every import must be pure Python)",
            dir.display()
        )));
    }
    // Written by the tool that ran the detector's imports: a regular file,
    // not a link it left in its place.
    let mut bytes = crate::sys::bounded_read::read_regular_file_nofollow(&out, 256 << 20)
        .map_err(|e| BuildError::Usage(format!("{}: {e}", out.display())))?;
    append_custom_section(&mut bytes, SOURCE_SECTION, staged.digest.as_bytes());
    Ok(bytes)
}

fn leb128(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn append_custom_section(wasm: &mut Vec<u8>, name: &str, payload: &[u8]) {
    let mut body = Vec::new();
    leb128(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    wasm.push(0);
    leb128(body.len(), wasm);
    wasm.extend_from_slice(&body);
}

/// The source digest `build` recorded in a component, if it has one: a
/// custom section of the component itself (not of a module inside it).
pub fn recorded_digest(wasm: &[u8]) -> Option<String> {
    // A component's preamble: the magic, version 0xd, layer 1.
    if wasm.get(..8)? != b"\0asm\x0d\0\x01\0" {
        return None;
    }
    let mut rest = &wasm[8..];
    let mut found = None;
    while !rest.is_empty() {
        let id = rest[0];
        let (size, n) = read_leb128(&rest[1..])?;
        let body = rest.get(1 + n..(1 + n).checked_add(size)?)?;
        if id == 0 {
            let (len, m) = read_leb128(body)?;
            let name = body.get(m..m.checked_add(len)?)?;
            if name == SOURCE_SECTION.as_bytes() {
                found = std::str::from_utf8(&body[m + len..])
                    .ok()
                    .map(str::to_string);
            }
        }
        rest = &rest[1 + n + size..];
    }
    found
}

fn read_leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value: usize = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_section_round_trips_in_a_component() {
        // The smallest component: the preamble alone.
        let mut wasm = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        assert_eq!(recorded_digest(&wasm), None);
        let digest = "ab".repeat(32);
        append_custom_section(&mut wasm, SOURCE_SECTION, digest.as_bytes());
        assert_eq!(recorded_digest(&wasm), Some(digest));
        assert_eq!(recorded_digest(&wasm[..wasm.len() - 3]), None);
    }

    #[test]
    fn the_project_names_the_component_and_pins_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| std::fs::write(dir.path().join("pyproject.toml"), text).unwrap();
        write("[project]\nname = \"my-gate\"\n[tool.critic]\ncomponentize-py = \"0.25.1\"\n");
        assert_eq!(
            read_project(dir.path()).unwrap(),
            Project {
                wasm: "my_gate.wasm".into(),
                componentize_py: "0.25.1".into()
            }
        );
        write("[project]\nname = \"my-gate\"\n");
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("pyproject.toml: no [tool.critic] componentize-py"),
            "{e}"
        );
        write("[project]\nname = \"../x\"\n[tool.critic]\ncomponentize-py = \"0.25.1\"\n");
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(e.contains("use letters, digits"), "{e}");
        write("[project\nname = 1");
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(e.contains("pyproject.toml") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn a_project_file_that_is_a_link_or_huge_is_refused_and_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "TOKEN=SECRETMARKER\n").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("pyproject.toml")).unwrap();
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("not a link") && !e.contains("SECRETMARKER"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("pyproject.toml")).unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), "x = SECRETMARKER\n").unwrap();
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 1, column 5") && !e.contains("SECRETMARKER"),
            "{e}"
        );
        std::fs::write(dir.path().join("pyproject.toml"), "#".repeat(70_000)).unwrap();
        let e = read_project(dir.path()).unwrap_err().to_string();
        assert!(e.contains("at most 64 KiB"), "{e}");
    }

    #[test]
    fn staging_keeps_sources_and_refuses_native_code_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("app.py"), "def detect(f): ...\n").unwrap();
        std::fs::write(d.join("test_app.py"), "x").unwrap();
        std::fs::create_dir_all(d.join("tests")).unwrap();
        std::fs::write(d.join("tests/t.py"), "x").unwrap();
        std::fs::create_dir_all(d.join("vendor/pkg/__pycache__")).unwrap();
        std::fs::write(d.join("vendor/pkg/__init__.py"), "y = 1\n").unwrap();
        std::fs::write(d.join("vendor/pkg/__pycache__/x.pyc"), "z").unwrap();
        let project = Project {
            wasm: "x.wasm".into(),
            componentize_py: "0.25.1".into(),
        };
        let staged = stage(d, &project).unwrap();
        let app = staged.dir.path().join("app");
        assert!(app.join("app.py").is_file());
        assert!(app.join("vendor/pkg/__init__.py").is_file());
        assert!(app.join("critic_sdk/_component.py").is_file());
        assert!(app.join(format!("{ENTRY_MODULE}.py")).is_file());
        assert!(!app.join("test_app.py").exists() && !app.join("tests").exists());
        assert!(!app.join("vendor/pkg/__pycache__").exists());
        // The digest follows the sources, and only them.
        let again = stage(d, &project).unwrap();
        assert_eq!(staged.digest, again.digest);
        std::fs::write(d.join("test_app.py"), "changed").unwrap();
        assert_eq!(stage(d, &project).unwrap().digest, staged.digest);
        std::fs::write(d.join("app.py"), "def detect(f): return 1\n").unwrap();
        assert_ne!(stage(d, &project).unwrap().digest, staged.digest);

        std::fs::write(
            d.join("vendor/pkg/_speedups.cpython-311-x86_64-linux-gnu.so"),
            "",
        )
        .unwrap();
        let e = stage(d, &project).err().unwrap().to_string();
        assert!(
            e.contains("_speedups") && e.contains("native extension"),
            "{e}"
        );
        std::fs::remove_file(d.join("vendor/pkg/_speedups.cpython-311-x86_64-linux-gnu.so"))
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("secrets.py")).unwrap();
        let e = stage(d, &project).err().unwrap().to_string();
        assert!(e.contains("secrets.py: a symbolic link"), "{e}");
    }
}
