//! Shared helpers for integration tests: the real `critic` binary, real git
//! repositories in temp dirs, and the committed fixtures.
#![allow(dead_code)]

pub mod agents;
pub mod llm_stub;
pub mod python;
pub mod swebench;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod copy_tree;
pub use copy_tree::copy_tree;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture path under tests/fixtures.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

/// The misbehave fixture component.
pub fn misbehave_wasm() -> PathBuf {
    fixture("skills/misbehave/misbehave.wasm")
}

/// A shipped skill's directory.
pub fn skill(name: &str) -> PathBuf {
    root().join("skills").join(name)
}

/// One compile cache for the whole test run, so only the first test compiles.
pub fn cache_dir() -> PathBuf {
    root().join("target/test-component-cache")
}

/// `critic` with the shared cache and quiet logs.
pub fn critic() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_critic"));
    cmd.env("CRITIC_CACHE_DIR", cache_dir())
        .env_remove("CRITIC_LOG");
    cmd
}

/// Run and capture.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run critic")
}

/// stdout as JSON, with a helpful panic.
pub fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A git repository in a temp dir with one base commit.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// A repo whose base commit holds `files`.
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        for (p, c) in files {
            repo.write(p, c);
        }
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "base"]);
        repo
    }

    /// A repo with the demo package as base.
    pub fn demo() -> Repo {
        Repo::demo_in(&std::env::temp_dir())
    }

    /// [`Repo::demo`] in a directory under `parent` (outside `/tmp`, which a
    /// confined run does not see, for a test whose runs must see it).
    pub fn demo_in(parent: &Path) -> Repo {
        let dir = tempfile::tempdir_in(parent).unwrap();
        copy_tree(&root().join("examples/demo-repo"), dir.path());
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "base"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@localhost",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Apply a recorded patch to the work tree.
    pub fn apply(&self, patch: &Path) {
        if std::fs::metadata(patch).unwrap().len() > 0 {
            self.git(&["apply", patch.to_str().unwrap()]);
        }
    }
}

/// A skill directory in a temp dir with this manifest; `{misbehave}` (or the
/// fixture component's absolute path) in the text names a copy of the
/// fixture component in the skill, since detectors must live inside it.
pub fn temp_skill(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text = manifest
        .replace("{misbehave}", "misbehave.wasm")
        .replace(misbehave_wasm().to_str().unwrap(), "misbehave.wasm");
    if text.contains("misbehave.wasm") {
        std::fs::copy(misbehave_wasm(), dir.path().join("misbehave.wasm")).unwrap();
    }
    std::fs::write(dir.path().join("critic.yaml"), text).unwrap();
    dir
}

/// A skill directory holding a copy of `detector` named `file`, with this
/// manifest (`{detector}` in it names the copy).
pub fn skill_with_detector(detector: &Path, file: &str, manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(detector, dir.path().join(file)).unwrap();
    std::fs::write(
        dir.path().join("critic.yaml"),
        manifest.replace("{detector}", file),
    )
    .unwrap();
    dir
}

/// Recorded OpenHands events for finish `n` of the demo run (1-based).
pub fn demo_events(n: usize) -> PathBuf {
    root().join(format!("examples/demo-run/finish-{n}.jsonl"))
}

/// The working-tree diff recorded at finish `n` of the demo run.
pub fn demo_patch(n: usize) -> PathBuf {
    root().join(format!("examples/demo-run/finish-{n}.patch"))
}

/// `critic check` on a skill, workspace and events, with a private state dir.
pub fn check(skill: &Path, ws: &Path, events: &Path, state: &Path) -> Command {
    let mut cmd = critic();
    cmd.args(["check", "--skill"])
        .arg(skill)
        .arg("--workspace")
        .arg(ws)
        .arg("--events")
        .arg(events)
        .arg("--state-dir")
        .arg(state);
    cmd
}

/// Validate `value` against a schema in schemas/.
pub fn assert_schema(schema: &str, value: &Value) {
    let text = std::fs::read_to_string(root().join("schemas").join(schema)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    assert!(
        errors.is_empty(),
        "{schema} violations: {errors:#?}\n{value:#}"
    );
}

/// Every file under `dir` (the git dir included) with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A virtual environment `target/<name>-venv` of the default `python3`
/// holding the packages of `lock` (none when `lock` is `None`); its Python.
pub fn python_venv(name: &str, lock: Option<&Path>) -> PathBuf {
    venv(&root().join(format!("target/{name}-venv")), None, lock)
}

/// The virtual environment `dir`, of `python3` (the pyenv version
/// `python`, if given), holding the pinned packages of `lock` (pip checks
/// their hashes when the lock has them); made once per checkout, again
/// when the lock changes, one process at a time. Its Python.
pub fn venv(dir: &Path, python: Option<&str>, lock: Option<&Path>) -> PathBuf {
    let parent = dir.parent().unwrap();
    std::fs::create_dir_all(parent).unwrap();
    let name = dir.file_name().unwrap().to_string_lossy();
    let guard = std::fs::File::create(parent.join(format!(".{name}.lock"))).unwrap();
    rustix::fs::flock(&guard, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let wanted = lock.map(|l| std::fs::read(l).unwrap()).unwrap_or_default();
    let stamp = dir.join(".installed-lock");
    if std::fs::read(&stamp).ok().as_deref() != Some(&wanted[..]) {
        let _ = std::fs::remove_dir_all(dir);
        let mut make = Command::new("python3");
        if let Some(version) = python {
            make.env("PYENV_VERSION", version);
        }
        make.args(["-m", "venv"]);
        if lock.is_none() {
            make.arg("--without-pip");
        }
        let out = make.arg(dir).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(lock) = lock {
            let out = Command::new(dir.join("bin/pip"))
                .args([
                    "install",
                    "-q",
                    "--no-deps",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(lock)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "installing {}: {}",
                lock.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::write(&stamp, &wanted).unwrap();
    }
    dir.join("bin/python")
}

/// What every file of [`secret_files`] holds, and must never be quoted.
pub const SECRET_MARKER: &str = "SECRETMARKER";

/// Files shaped like the secrets a request or flag could name instead of
/// its input, each holding [`SECRET_MARKER`]: a private key, AWS
/// credentials, a one-line secret, a JSON token store whose fields share
/// names with transcript and state fields (so readers get far enough to
/// complain about a value), and a JSON list of recovery codes. Returns
/// their paths, written under `dir`.
pub fn secret_files(dir: &Path) -> Vec<PathBuf> {
    let m = SECRET_MARKER;
    let files = [
        (
            "id_rsa",
            format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{m}b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n\
                 -----END OPENSSH PRIVATE KEY-----\n"
            ),
        ),
        (
            "credentials",
            format!(
                "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
                 aws_secret_access_key = {m}wJalrXUtnFEMI/K7MDENG\n"
            ),
        ),
        ("secret.env", format!("aws_secret_access_key = {m}\n")),
        (
            "tokens.json",
            format!(
                "{{\"ghp_{m}0123456789abcdefghijklmnopqrstu\": {{\"scopes\": \"repo\"}},\n\
                 \"schema_version\": \"{m}\", \"history\": \"{m}\", \"trajectory\": \"{m}\", \
                 \"messages\": \"{m}\", \"type\": \"{m}\"}}\n"
            ),
        ),
        ("codes.json", format!("[\"{m}-1111\", \"{m}-2222\"]\n")),
    ];
    files
        .into_iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

/// Whether `text` names `file` with a line and a column (`file:3:7`).
pub fn names_line_and_column(text: &str, file: &str) -> bool {
    text.match_indices(&format!("{file}:")).any(|(at, found)| {
        let rest = &text[at + found.len()..];
        let line = rest.bytes().take_while(u8::is_ascii_digit).count();
        let rest = &rest[line..];
        let column = rest
            .strip_prefix(':')
            .map_or(0, |r| r.bytes().take_while(u8::is_ascii_digit).count());
        line > 0 && column > 0
    })
}

/// Whether `text` quotes the file `secret` of [`secret_files`]: its marker,
/// or any of its lines.
pub fn quotes(text: &str, secret: &Path) -> bool {
    text.contains(SECRET_MARKER)
        || std::fs::read_to_string(secret)
            .unwrap()
            .lines()
            .any(|line| line.trim().len() >= 8 && text.contains(line.trim()))
}

/// `git args` in `dir` (a committer set, no hooks, no signing); its stdout.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Panics unless the tests run as root: a test that acts as another user
/// (uid 65534) runs everywhere or fails, never passes without testing.
pub fn as_root_to_act_as_another_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        panic!(
            "this test acts as another user (uid 65534), which only root can: run the suite \
             as root (`sudo scripts/test`), as CI does"
        );
    }
}
