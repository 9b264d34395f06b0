//! The environments tests run in, as SWE-bench makes them: per repository
//! and version, a virtualenv built once from a base interpreter (its
//! `pre_install` lines, then its pinned `requirements`), and per instance,
//! the repository's own install (`install` lines, such as
//! `pip install -e .`) run in a checkout of the base commit, so that a
//! package that needs building (a src layout, a generated `_version.py`)
//! can run its tests.
//!
//! What an install leaves in its checkout (generated files, build output)
//! is committed on top of the base commit in the grader's copy of the
//! repository (see `private_copy.rs`): the *environment commit*. Workspaces
//! start from it and grading runs on it, so the critic's scratch copies and
//! the grader's see the same files; a patch is taken against it. The
//! checkout stays where the install ran, as editable installs point there.
//!
//! Environments and installs are built once, in critic's cache, and shared
//! by every output directory (a second output of the same instance gets
//! the install's commit into its own copy without installing again); a
//! lock file beside each one keeps two critics from building it at once.
//! Everything is built where it stays (scripts name their interpreter by
//! path) and marked finished last; an unfinished one is built again. Each
//! environment's digest covers how environments are made, the repository,
//! version, lines, requirements and base interpreter. What resolved
//! requirements came to is the output's lock (`OUT/envs/<env>.lock`).

use crate::grading::dataset::Instance;
use crate::sys::path_name::slug;
use crate::workspace::git;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How an instance's environment is made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Shell lines run once in the new environment, before its requirements.
    pub pre_install: Vec<String>,
    /// Pinned requirements (pip's format).
    pub requirements: Option<String>,
    /// Requirements installed with their dependencies, as SWE-bench
    /// installs them, in order (see `swebench_specs`). What they resolve
    /// to is kept as a lock beside the environment, which a rebuild
    /// installs instead, so it gets the same packages.
    pub resolve: Vec<Resolve>,
    /// When `resolve` is resolved, only packages uploaded before this
    /// (an ISO 8601 datetime) are considered, as when the environment
    /// SWE-bench's verdicts came from was built.
    pub resolved_before: Option<String>,
    /// Shell lines run per instance in a checkout of its base commit.
    pub install: Vec<String>,
}

/// One step of requirements installed with their dependencies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolve {
    /// A requirements file's text (`pip install -r`).
    File(String),
    /// Requirements as pip's arguments (`pip install A B==1`).
    Packages(Vec<String>),
    /// A conda environment file's packages as pip's arguments (see
    /// `conda_env.rs`): one PyPI does not have, or cannot build, is left
    /// out.
    Conda(Vec<String>),
}

impl Spec {
    /// The spec an instance's record gives.
    pub fn of(instance: &Instance) -> Spec {
        Spec {
            pre_install: instance.pre_install.clone(),
            requirements: instance.requirements.clone(),
            resolve: Vec::new(),
            resolved_before: None,
            install: instance.install.clone(),
        }
    }

    /// Whether there is an environment to build.
    pub fn builds(&self) -> bool {
        !self.pre_install.is_empty()
            || self.requirements.is_some()
            || !self.resolve.is_empty()
            || !self.install.is_empty()
    }
}

/// The most output of a failed step quoted in its error.
const TAIL_LINES: usize = 12;

/// The interpreter of `instance`'s environment under `root` (critic's
/// cache of environments, shared by every output), built from `spec` with
/// `base` if it is not there yet. When the spec resolves requirements, the
/// output's lock (`locks/<environment>.lock`) says what they resolve to: an
/// environment built from another lock is not used but built beside it,
/// and an output without a lock gets the one its environment was built
/// from. An error names the record and the field, and quotes the end of
/// what failed.
pub fn python_for(
    instance: &Instance,
    spec: &Spec,
    base: &Path,
    root: &Path,
    locks: &Path,
) -> Result<PathBuf, String> {
    let mut dir = env_dir(instance, spec, base, root);
    let name = dir.file_name().unwrap_or_default().to_os_string();
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    // Another critic may be building it (or the lock's twin) right now.
    let _building = hold(&dir)?;
    let output_lock = locks.join(lock_of(Path::new(&name)));
    if !spec.resolve.is_empty() {
        if let Ok(given) = std::fs::read(&output_lock) {
            let built = dir.join(".complete").is_file();
            if built && std::fs::read(lock_of(&dir)).ok().as_deref() != Some(given.as_slice()) {
                let digest = hex::encode(&Sha256::digest(&given)[..6]);
                let mut twin = name.clone();
                twin.push(format!("-lock-{digest}"));
                dir = root.join(twin);
            }
            if !dir.join(".complete").is_file() {
                crate::sys::atomic_file::write(&lock_of(&dir), &given, true)
                    .map_err(|e| format!("{}: {e}", lock_of(&dir).display()))?;
            }
        }
    }
    // A failed build is not kept: the error quotes what failed.
    let python = build(instance, spec, base, &dir).inspect_err(|_| {
        let _ = crate::sys::remove_tree::remove_tree(&dir);
    })?;
    if !spec.resolve.is_empty() {
        let kept = lock_of(&dir);
        let pinned = std::fs::read(&kept).map_err(|e| format!("{}: {e}", kept.display()))?;
        if std::fs::read(&output_lock).ok().as_deref() != Some(pinned.as_slice()) {
            std::fs::create_dir_all(locks).map_err(|e| format!("{}: {e}", locks.display()))?;
            crate::sys::atomic_file::write(&output_lock, &pinned, true)
                .map_err(|e| format!("{}: {e}", output_lock.display()))?;
        }
    }
    Ok(python)
}

/// Hold `place` (a lock file beside it) until the result is dropped,
/// saying so while another process holds it.
fn hold(place: &Path) -> Result<std::fs::File, String> {
    let mut name = place.file_name().unwrap_or_default().to_os_string();
    name.push(".building");
    let path = place.with_file_name(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if file.try_lock().is_err() {
        eprintln!(
            "waiting for another critic to finish with {} ...",
            place.display()
        );
        file.lock()
            .map_err(|e| format!("{}: cannot lock: {e}", path.display()))?;
    }
    Ok(file)
}

/// The environment at `dir`, built from `spec` with `base` unless a build
/// finished there.
fn build(instance: &Instance, spec: &Spec, base: &Path, dir: &Path) -> Result<PathBuf, String> {
    let python = dir.join("bin/python");
    let done = dir.join(".complete");
    if done.is_file() {
        return Ok(python);
    }
    let at = &instance.place;
    if dir.exists() {
        crate::sys::remove_tree::remove_tree(dir)
            .map_err(|e| format!("{}: an unfinished environment: {e}", dir.display()))?;
    }
    // Minutes, the first time: say what is happening.
    let started = std::time::Instant::now();
    eprintln!(
        "building the environment {} from {}{} ...",
        dir.display(),
        base.display(),
        if lock_of(dir).is_file() {
            " and its lock"
        } else {
            ""
        }
    );
    let venv = Command::new(base)
        .args(["-m", "venv"])
        .arg(dir)
        .output()
        .map_err(|e| format!("{at}: cannot run {}: {e}", base.display()))?;
    if !venv.status.success() {
        return Err(failed(
            at,
            "python",
            &format!("{} -m venv", base.display()),
            &venv,
        ));
    }
    if !spec.pre_install.is_empty() {
        let out = shell(&spec.pre_install, dir, &python)
            .output()
            .map_err(|e| format!("{at}: field `pre_install`: cannot run bash: {e}"))?;
        if !out.status.success() {
            return Err(failed(at, "pre_install", "its lines", &out));
        }
    }
    if let Some(requirements) = &spec.requirements {
        let file = dir.join("requirements.txt");
        std::fs::write(&file, requirements).map_err(|e| format!("{}: {e}", file.display()))?;
        // Pinned as given: nothing but the listed packages (hashes, when the
        // file has them, are checked by pip).
        let pip = pip_install(
            &python,
            &["--no-deps".as_ref(), "-r".as_ref(), file.as_os_str()],
            at,
        )?;
        if !pip.status.success() {
            return Err(failed(at, "requirements", "pip install", &pip));
        }
    }
    if !spec.resolve.is_empty() {
        resolve(instance, spec, dir, &python)?;
    }
    eprintln!(
        "built the environment {} in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(python)
}

/// Install `spec.resolve` into the environment at `dir`: from the lock
/// beside it when a build before this one wrote it, else with pip
/// resolving each step's dependencies, then the resolved set written as
/// that lock.
fn resolve(instance: &Instance, spec: &Spec, dir: &Path, python: &Path) -> Result<(), String> {
    let at = &instance.place;
    let lock = lock_of(dir);
    let pip = |args: &[&std::ffi::OsStr]| pip_install(python, args, at);
    if lock.is_file() {
        let out = pip(&["--no-deps".as_ref(), "-r".as_ref(), lock.as_os_str()])?;
        if !out.status.success() {
            return Err(failed(
                at,
                "requirements",
                &format!("pip install -r {}", lock.display()),
                &out,
            ));
        }
        return Ok(());
    }
    // As of a date: uv's resolver, which leaves out later uploads for any
    // interpreter (pip learned to in 26.1, which the oldest ones cannot
    // run), installing into the environment.
    let dated = match &spec.resolved_before {
        Some(date) => Some((uv(dir.parent().unwrap_or(dir), at)?, date)),
        None => None,
    };
    let install = |args: &[std::ffi::OsString]| -> Result<std::process::Output, String> {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        match &dated {
            Some((uv, date)) => Command::new(uv)
                .args([
                    "pip",
                    "install",
                    "--quiet",
                    "--compile-bytecode",
                    "--python",
                ])
                .arg(python)
                .args(["--exclude-newer", date.as_str()])
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("{at}: cannot run {}: {e}", uv.display())),
            None => pip(&args),
        }
    };
    for (i, step) in spec.resolve.iter().enumerate() {
        let mut packages: Vec<String> = Vec::new();
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        match step {
            Resolve::File(text) => {
                let file = dir.join(format!("requirements-{i}.txt"));
                std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
                args.extend(["-r".into(), file.into_os_string()]);
            }
            Resolve::Packages(p) | Resolve::Conda(p) => packages.clone_from(p),
        }
        let mut out = install(&[args.clone(), packages.iter().map(Into::into).collect()].concat())?;
        // A conda package PyPI does not have, or cannot build, has no pip
        // equivalent: left out, and the rest resolved again.
        while !out.status.success() && matches!(step, Resolve::Conda(_)) {
            let Some(missing) = not_on_pypi(&String::from_utf8_lossy(&out.stderr)) else {
                break;
            };
            let before = packages.len();
            packages.retain(|p| !same_package(p, &missing));
            if packages.len() == before {
                break;
            }
            tracing::warn!(
                "{at}: conda's {missing} is not on PyPI as of the date, or does not build here: \
                 left out of the environment"
            );
            out = install(&packages.iter().map(Into::into).collect::<Vec<_>>())?;
        }
        if !out.status.success() {
            return Err(failed(
                at,
                "requirements",
                "pip install (SWE-bench's requirements, with their dependencies)",
                &out,
            ));
        }
    }
    let freeze = Command::new(python)
        .args([
            "-m",
            "pip",
            "freeze",
            "--all",
            "--disable-pip-version-check",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{at}: cannot run pip: {e}"))?;
    if !freeze.status.success() {
        return Err(failed(at, "requirements", "pip freeze", &freeze));
    }
    let pinned: String = String::from_utf8_lossy(&freeze.stdout)
        .lines()
        // An editable or local install is the repository's own, made per
        // instance.
        .filter(|l| !l.starts_with("-e ") && !l.contains(" @ file:"))
        .map(|l| format!("{l}\n"))
        .collect();
    crate::sys::atomic_file::write(&lock, pinned.as_bytes(), true)
        .map_err(|e| format!("{}: {e}", lock.display()))
}

/// The package an installer's error says PyPI does not have, or could not
/// build: uv's "Because X was not found in the package registry" and
/// "Failed to build `X==1.0`", pip's "No matching distribution found for X".
fn not_on_pypi(stderr: &str) -> Option<String> {
    let text = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    let after = |marker: &str| {
        text.split_once(marker)
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .map(|w| w.trim_matches(|c: char| "`',.".contains(c)).to_string())
    };
    after("Because ")
        .filter(|_| text.contains("was not found in the package registry"))
        .or_else(|| after("Failed to build "))
        .or_else(|| after("No matching distribution found for "))
        .map(|r| {
            let end = r.find(|c: char| "=<>!~[ ".contains(c)).unwrap_or(r.len());
            r[..end].to_string()
        })
        .filter(|n| !n.is_empty())
}

/// Whether requirement `req` is of package `name` (names compared as PyPI
/// does: case, `-`, `_` and `.` alike).
fn same_package(req: &str, name: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    let end = req
        .find(|c: char| "=<>!~[ ;".contains(c))
        .unwrap_or(req.len());
    norm(&req[..end]) == norm(name)
}

/// Bash functions that send an install line's `pip install` (as `pip` or
/// `python -m pip`) to uv, as of `CRITIC_RESOLVED_BEFORE`; pip's
/// `--no-use-pep517`, which uv has no use for, is dropped. What uv cannot
/// build (an editable install of a project whose pinned setuptools predates
/// PEP 660, which pip builds the old way) is left to pip.
const PIP_AS_OF: &str = r#"__critic_pip_install() {
  local a; local args=()
  for a in "$@"; do case "$a" in --no-use-pep517) ;; *) args+=("$a") ;; esac; done
  "$CRITIC_UV" pip install --python "$VIRTUAL_ENV/bin/python" --exclude-newer "$CRITIC_RESOLVED_BEFORE" --compile-bytecode "${args[@]}" \
    || command python -m pip install "$@"
}
python() { if [ "${1-}" = -m ] && [ "${2-}" = pip ] && [ "${3-}" = install ]; then shift 3; __critic_pip_install "$@"; else command python "$@"; fi; }
pip() { if [ "${1-}" = install ]; then shift; __critic_pip_install "$@"; else command pip "$@"; fi; }"#;

/// `pip install ARGS` into `python`'s environment, compiled as an image's
/// packages are: a module whose source warns when compiled (an invalid
/// escape) then imports without warning, as in SWE-bench's, under a
/// repository's `filterwarnings = error`.
fn pip_install(
    python: &Path,
    args: &[&std::ffi::OsStr],
    at: &str,
) -> Result<std::process::Output, String> {
    Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--compile",
        ])
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{at}: cannot run pip: {e}"))
}

/// The uv that resolves requirements as of a date, installed once under
/// `root` (beside the environments) from PyPI, pinned.
fn uv(root: &Path, at: &str) -> Result<PathBuf, String> {
    const UV: &str = "uv==0.5.31";
    let tool = root.join(".uv");
    let _installing = hold(&tool)?;
    let uv = tool.join("bin/uv");
    let done = tool.join(".complete");
    if done.is_file() && uv.is_file() {
        return Ok(uv);
    }
    let _ = crate::sys::remove_tree::remove_tree(&tool);
    let venv = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&tool)
        .output()
        .map_err(|e| format!("{at}: cannot run python3 to install {UV}: {e}"))?;
    if !venv.status.success() {
        return Err(failed(
            at,
            "requirements",
            "python3 -m venv (for uv)",
            &venv,
        ));
    }
    let pip = pip_install(&tool.join("bin/python"), &[UV.as_ref()], at)?;
    if !pip.status.success() {
        return Err(failed(
            at,
            "requirements",
            &format!("pip install {UV}"),
            &pip,
        ));
    }
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(uv)
}

/// The lock of the environment at `dir`: beside it, so it outlives a
/// rebuild of it.
pub fn lock_of(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    dir.with_file_name(name)
}

/// What makes environments: a change to how they are built changes this,
/// so that no environment built the old way is taken from the cache.
const RECIPE: &str = "1";

/// Where environments are kept across outputs: `envs` in critic's cache
/// (see [`crate::sys::private_dir::cache_root`]), private to the user.
pub fn cache_root() -> Option<PathBuf> {
    crate::sys::private_dir::cache_root()
        .map(|d| d.join("envs"))
        .filter(|d| crate::sys::private_dir::ensure(d).is_ok())
}

/// `ROOT/<owner>__<name>-<version>-<digest>`.
fn env_dir(instance: &Instance, spec: &Spec, base: &Path, root: &Path) -> PathBuf {
    let mut h = Sha256::new();
    let lines = |l: &[String]| l.join("\n");
    let resolve: Vec<String> = spec
        .resolve
        .iter()
        .map(|r| match r {
            Resolve::File(text) => format!("file\n{text}"),
            Resolve::Packages(p) => format!("packages\n{}", p.join("\n")),
            Resolve::Conda(p) => format!("conda\n{}", p.join("\n")),
        })
        .collect();
    for part in [
        RECIPE,
        instance.repo.as_str(),
        instance.version.as_deref().unwrap_or(""),
        spec.requirements.as_deref().unwrap_or(""),
        &base.to_string_lossy(),
        &lines(&spec.pre_install),
        &lines(&spec.install),
        &lines(&resolve),
        spec.resolved_before.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest = hex::encode(&h.finalize()[..6]);
    root.join(format!(
        "{}-{}-{digest}",
        instance.repo.replace('/', "__"),
        slug(instance.version.as_deref().unwrap_or("any")),
    ))
}

/// Run the instance's `install` lines in a checkout of `base` taken from
/// the grader's copy `copy`, with `python`'s environment first on `PATH`;
/// the environment commit: `base` plus what the install left in the
/// checkout (`base` itself when it left nothing). Done once per instance
/// and environment.
pub fn install(
    instance: &Instance,
    spec: &Spec,
    python: &Path,
    copy: &Path,
    base: &str,
    clone: &Path,
) -> Result<String, String> {
    let at = &instance.place;
    // Beside the environment it installs into.
    let env = python
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{at}: {} is not in an environment", python.display()))?;
    let dir = env.join("installs").join(format!(
        "{}-{}",
        slug(&instance.id),
        &base[..base.len().min(12)]
    ));
    let installs = env.join("installs");
    std::fs::create_dir_all(&installs).map_err(|e| format!("{}: {e}", installs.display()))?;
    // Another output may be installing the same instance right now.
    let _installing = hold(&dir)?;
    let done = dir.join(".complete");
    if let Ok(commit) = std::fs::read_to_string(&done) {
        let commit = commit.trim().to_string();
        if exists(copy, &commit) {
            return Ok(commit);
        }
        // Installed for another output: its files committed in this
        // output's copy make the same commit.
        if commit_testbed(copy, base, &dir).as_deref() == Ok(commit.as_str()) {
            return Ok(commit);
        }
    }
    if dir.exists() {
        crate::sys::remove_tree::remove_tree(&dir)
            .map_err(|e| format!("{}: an unfinished install: {e}", dir.display()))?;
    }
    let testbed = dir.join("testbed");
    std::fs::create_dir_all(&testbed).map_err(|e| format!("{}: {e}", testbed.display()))?;
    let index = dir.join("index");
    for args in [
        &["read-tree", base][..],
        &["checkout-index", "--all", "--force"],
    ] {
        let mut checkout = git::command(copy);
        checkout
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_WORK_TREE", &testbed)
            .args(args);
        git::run(checkout).map_err(|e| e.to_string())?;
    }
    // The checkout is no git repository: setuptools-scm is told the version
    // it would have read from the clone's tags.
    // Resolved as of a date, what the install pulls in too: its `pip
    // install`s go through uv (see `resolve`).
    let lines = match &spec.resolved_before {
        Some(_) => std::iter::once(PIP_AS_OF.to_string())
            .chain(spec.install.iter().cloned())
            .collect(),
        None => spec.install.clone(),
    };
    let mut cmd = shell(&lines, &testbed, python);
    if let Some(date) = &spec.resolved_before {
        cmd.env("CRITIC_UV", uv(env.parent().unwrap_or(env), at)?)
            .env("CRITIC_RESOLVED_BEFORE", date);
    }
    if let Some(version) = scm_version(clone, &instance.base_commit) {
        cmd.env("SETUPTOOLS_SCM_PRETEND_VERSION", version);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{at}: field `install`: cannot run bash: {e}"))?;
    if !out.status.success() {
        return Err(failed(at, "install", "its lines", &out));
    }
    let commit = commit_testbed(copy, base, &dir)?;
    std::fs::write(&done, &commit).map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(commit)
}

/// The commit of what the install at `dir` left in its checkout, on top of
/// `base` in the grader's copy `copy` (`base` itself when it left nothing):
/// new files (ignored ones too: a generated `_version.py` usually is) and
/// changed ones, without bytecode. Fixed names and dates: the same files
/// make the same commit, in any copy.
fn commit_testbed(copy: &Path, base: &str, dir: &Path) -> Result<String, String> {
    let index = dir.join("index");
    let with_index = |args: &[&str]| {
        let mut cmd = git::command(copy);
        cmd.env("GIT_INDEX_FILE", &index)
            .env("GIT_WORK_TREE", dir.join("testbed"))
            .args(args);
        git::run(cmd).map_err(|e| e.to_string())
    };
    with_index(&["read-tree", base])?;
    with_index(&[
        "add",
        "--all",
        "--force",
        "--",
        ".",
        ":(exclude,glob)**/__pycache__/**",
        ":(exclude,glob)**/*.pyc",
    ])?;
    let tree = String::from_utf8_lossy(&with_index(&["write-tree"])?)
        .trim()
        .to_string();
    let _ = std::fs::remove_file(&index);
    let mut base_tree = git::command(copy);
    base_tree.args(["rev-parse", &format!("{base}^{{tree}}")]);
    let unchanged = git::run(base_tree)
        .map(|out| String::from_utf8_lossy(&out).trim() == tree)
        .unwrap_or(false);
    if unchanged {
        return Ok(base.to_string());
    }
    let mut commit = git::command(copy);
    for (k, v) in [
        ("GIT_AUTHOR_NAME", "critic"),
        ("GIT_AUTHOR_EMAIL", "critic@localhost"),
        ("GIT_AUTHOR_DATE", "@0 +0000"),
        ("GIT_COMMITTER_NAME", "critic"),
        ("GIT_COMMITTER_EMAIL", "critic@localhost"),
        ("GIT_COMMITTER_DATE", "@0 +0000"),
    ] {
        commit.env(k, v);
    }
    commit.args([
        "commit-tree",
        &tree,
        "-p",
        base,
        "-m",
        "The files the environment's install made (critic experiment)",
    ]);
    let id = String::from_utf8_lossy(&git::run(commit).map_err(|e| e.to_string())?)
        .trim()
        .to_string();
    let mut keep = git::command(copy);
    keep.args(["update-ref", &format!("refs/critic/env/{id}"), &id]);
    git::run(keep).map_err(|e| e.to_string())?;
    Ok(id)
}

/// Whether `commit` is in the copy.
fn exists(copy: &Path, commit: &str) -> bool {
    let mut check = git::command(copy);
    check.args(["cat-file", "-e", &format!("{commit}^{{commit}}")]);
    git::run(check).is_ok()
}

/// `lines` as one bash script in `dir`, with `python`'s environment
/// active (its `bin` first on `PATH`, `VIRTUAL_ENV` set).
fn shell(lines: &[String], dir: &Path, python: &Path) -> Command {
    let bin = python.parent().unwrap_or(Path::new("."));
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .unwrap_or_default();
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", &lines.join("\n")])
        .current_dir(dir)
        .env("PATH", path)
        .env("VIRTUAL_ENV", bin.parent().unwrap_or(bin))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(std::process::Stdio::null());
    cmd
}

/// The version setuptools-scm gives `commit` in `clone` by its default
/// scheme (the nearest tag, the next patch release plus `.devN+g<id>`
/// past it), for an install in a checkout that has no history of its own;
/// `None` when no tag names a version.
fn scm_version(clone: &Path, commit: &str) -> Option<String> {
    let mut describe = git::command(clone);
    describe.args([
        "describe",
        "--tags",
        "--long",
        "--abbrev=7",
        "--match",
        "*[0-9]*",
        "--end-of-options",
        commit,
    ]);
    let text = String::from_utf8(git::run(describe).ok()?).ok()?;
    scm_version_of(text.trim())
}

/// [`scm_version`] of `git describe --long`'s words (`v5.4.1-23-gabc1234`).
fn scm_version_of(described: &str) -> Option<String> {
    let mut parts = described.rsplitn(3, '-');
    let (node, distance, tag) = (parts.next()?, parts.next()?, parts.next()?);
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let distance: u32 = distance.parse().ok()?;
    if !tag.chars().next()?.is_ascii_digit() {
        return None;
    }
    if distance == 0 {
        return Some(tag.to_string());
    }
    // A development tag counts on from itself.
    if let Some((release, _)) = tag.split_once(".dev") {
        return Some(format!("{release}.dev{distance}+{node}"));
    }
    // guess-next-dev: the last number of the release, plus one.
    let release: Vec<&str> = tag.split('.').collect();
    let last = release.last()?;
    let digits: String = last.chars().take_while(char::is_ascii_digit).collect();
    let next = digits.parse::<u64>().ok()? + 1;
    let mut bumped: Vec<String> = release[..release.len() - 1]
        .iter()
        .map(|s| s.to_string())
        .collect();
    bumped.push(next.to_string());
    Some(format!("{}.dev{distance}+{node}", bumped.join(".")))
}

/// A step's failure: the record, the field, and the end of its output.
fn failed(at: &str, field: &str, what: &str, out: &std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tail: Vec<&str> = text.lines().rev().take(TAIL_LINES).collect();
    format!(
        "{at}: field `{field}`: {what} failed ({}):\n{}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_pypi_lacks_is_read_from_the_installers_error() {
        let uv = "  × No solution found when resolving dependencies:\n  ╰─▶ Because hdf5 was not found in the package registry and you require hdf5,\n      we can conclude that your requirements are unsatisfiable.\n";
        assert_eq!(not_on_pypi(uv).as_deref(), Some("hdf5"));
        let build =
            "  × Failed to build `pygraphviz==1.14`\n  ├─▶ The build backend returned an error\n";
        assert_eq!(not_on_pypi(build).as_deref(), Some("pygraphviz"));
        let pip = "ERROR: Could not find a version that satisfies the requirement cdms2 (from versions: none)\nERROR: No matching distribution found for cdms2\n";
        assert_eq!(not_on_pypi(pip).as_deref(), Some("cdms2"));
        assert_eq!(not_on_pypi("Because numpy==1 depends on x, ..."), None);
        assert!(same_package("PyQt5>=5", "pyqt5"));
        assert!(same_package("typing_extensions", "typing-extensions"));
        assert!(!same_package("numpy", "numpyx"));
    }

    #[test]
    fn setuptools_scm_versions_are_read_from_the_clones_tags() {
        assert_eq!(
            scm_version_of("5.4.1-23-gabc1234").as_deref(),
            Some("5.4.2.dev23+gabc1234")
        );
        assert_eq!(
            scm_version_of("v2.3.0-0-gabc1234").as_deref(),
            Some("2.3.0")
        );
        assert_eq!(
            scm_version_of("v3.0.0rc1-4-gabc1234").as_deref(),
            Some("3.0.1.dev4+gabc1234")
        );
        assert_eq!(scm_version_of("release-x-1-gabc"), None);
        assert_eq!(
            scm_version_of("6.3.0.dev0-202-g4964b46").as_deref(),
            Some("6.3.0.dev202+g4964b46")
        );
    }
}
