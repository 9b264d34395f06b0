//! `critic build`: compile a skill's detector crates to components, the same
//! bytes on every machine with the pinned toolchain.
//!
//! Reproducibility comes from three things: the `detector` profile (one
//! codegen unit, LTO, stripped), remapping the absolute paths that end up in
//! panic messages (workspace root and cargo home) to fixed names, and clearing
//! `RUSTFLAGS`, which would otherwise take precedence over the remapping.
//!
//! The compiler runs the skill's code (see [`super::confined_build`]), so
//! cargo works from `/` (the skill's `.cargo/config.toml`
//! and `rust-toolchain.toml` would otherwise choose its compiler, linker or
//! wrappers): the toolchain file's `channel` is read and passed on by name.
//! Dependencies are fetched first, then the build runs offline, confined,
//! into a private target directory (see [`target_dir_of`]).

use super::confined_build::{self, Trust};
use crate::skill::build_error::BuildError;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The guest target.
pub const TARGET: &str = "wasm32-wasip2";
/// The cargo profile detectors are built with.
pub const PROFILE: &str = "detector";

/// What a build did.
#[derive(Debug, Default)]
pub struct BuildReport {
    /// One line per detector.
    pub lines: Vec<String>,
    /// In `--check` mode: whether any committed file differs from the build.
    pub differs: bool,
}

/// The detector crates of a skill: `detector/` and `detectors/*/`.
pub fn detector_crates(skill: &Path) -> Vec<PathBuf> {
    let mut crates = Vec::new();
    if skill.join("detector/Cargo.toml").is_file() {
        crates.push(skill.join("detector"));
    }
    if let Ok(entries) = std::fs::read_dir(skill.join("detectors")) {
        let mut more: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("Cargo.toml").is_file())
            .collect();
        more.sort();
        crates.extend(more);
    }
    crates
}

#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct Target {
    kind: Vec<String>,
}

#[derive(Deserialize)]
struct Location {
    root: PathBuf,
}

/// cargo, from a directory where no configuration of the skill's is
/// read, with the caller's environment cleaned (see
/// [`confined_build::clean_env`]) and the skill's toolchain, if it names one.
fn cargo(toolchain: Option<&str>) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    confined_build::clean_env(&mut cmd);
    // The root: no one but the system's owner can plant a configuration
    // or toolchain file there (the shared temp directory, say, anyone can).
    cmd.current_dir("/");
    if let Some(channel) = toolchain {
        cmd.env("RUSTUP_TOOLCHAIN", channel);
    }
    cmd
}

/// The toolchain `root`'s `rust-toolchain.toml` (or `rust-toolchain`)
/// names by its channel; one named otherwise (a `path` to a toolchain of
/// the skill's own) is not used.
fn toolchain_of(root: &Path) -> Option<String> {
    use crate::sys::bounded_read::read_regular_file_nofollow;
    #[derive(Deserialize)]
    struct File {
        toolchain: Toolchain,
    }
    #[derive(Deserialize)]
    struct Toolchain {
        channel: Option<String>,
    }
    let plain = |channel: &str| {
        let channel = channel.trim();
        (!channel.is_empty()
            && channel
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
        .then(|| channel.to_string())
    };
    if let Ok(text) = read_regular_file_nofollow(&root.join("rust-toolchain.toml"), 64 << 10) {
        let file: File = toml::from_slice(&text).ok()?;
        return file.toolchain.channel.as_deref().and_then(plain);
    }
    let text = read_regular_file_nofollow(&root.join("rust-toolchain"), 64 << 10).ok()?;
    let text = String::from_utf8(text).ok()?;
    if text.contains('[') {
        let file: File = toml::from_str(&text).ok()?;
        return file.toolchain.channel.as_deref().and_then(plain);
    }
    plain(&text)
}

/// What is missing when `toolchain` (the default one when `None`) has no
/// standard library for [`TARGET`], with the command that installs it;
/// `None` when it has one, or when that cannot be told (cargo's own error
/// then says).
pub fn missing_target(toolchain: Option<&str>) -> Option<String> {
    missing_target_of(Path::new("rustc"), toolchain)
}

/// [`missing_target`], asking `rustc` where its sysroot is.
fn missing_target_of(rustc: &Path, toolchain: Option<&str>) -> Option<String> {
    let mut rustc = Command::new(rustc);
    confined_build::clean_env(&mut rustc);
    rustc.current_dir("/").args(["--print", "sysroot"]);
    if let Some(channel) = toolchain {
        rustc.env("RUSTUP_TOOLCHAIN", channel);
    }
    let out = rustc.stderr(std::process::Stdio::null()).output().ok()?;
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if !out.status.success() || sysroot.as_os_str().is_empty() {
        return None;
    }
    if sysroot.join("lib/rustlib").join(TARGET).is_dir() {
        return None;
    }
    let which = toolchain.map_or_else(String::new, |t| format!(" --toolchain {t}"));
    Some(format!(
        "the {TARGET} target is not installed for the Rust toolchain at {}; detectors compile \
         to it: `rustup target add {TARGET}{which}`",
        sysroot.display()
    ))
}

fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

fn workspace_root(manifest: &Path) -> Result<PathBuf, BuildError> {
    let out = cargo(None)
        .args([
            "locate-project",
            "--workspace",
            "--message-format",
            "json",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|e| {
            BuildError::Usage(format!(
                "cannot run cargo: {e} (is a Rust toolchain installed?)"
            ))
        })?;
    if !out.status.success() {
        return Err(BuildError::Usage(format!(
            "{}: {}",
            manifest.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let loc: Location = serde_json::from_slice(&out.stdout)
        .map_err(|e| BuildError::Internal(format!("cargo locate-project: {e}")))?;
    Ok(loc.root.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// Run the cargo step `cmd` (no code of the skill's runs in it) to its end.
fn cargo_step(mut cmd: Command, manifest: &Path, what: &str) -> Result<(), BuildError> {
    let status = cmd
        .arg("--manifest-path")
        .arg(manifest)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| BuildError::Usage(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(BuildError::Usage(format!(
            "{}: cannot {what} (see cargo's output above)",
            manifest.display()
        )));
    }
    Ok(())
}

/// The directories of the local (path) packages `manifest`'s build reads,
/// as cargo resolves them (`cargo metadata`, which builds nothing), with
/// their workspaces' roots.
fn local_packages(toolchain: Option<&str>, manifest: &Path) -> Result<Vec<PathBuf>, BuildError> {
    #[derive(Deserialize)]
    struct Metadata {
        packages: Vec<Package>,
    }
    #[derive(Deserialize)]
    struct Package {
        source: Option<String>,
        manifest_path: PathBuf,
    }
    let mut cmd = cargo(toolchain);
    cmd.args([
        "metadata",
        "--offline",
        "--locked",
        "--format-version",
        "1",
        "--filter-platform",
        TARGET,
        "--manifest-path",
    ])
    .arg(manifest)
    .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| BuildError::Usage(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        return Err(BuildError::Usage(format!(
            "{}: cannot list its packages (see cargo's output above)",
            manifest.display()
        )));
    }
    let metadata: Metadata = serde_json::from_slice(&out.stdout).map_err(|e| {
        BuildError::Usage(format!(
            "{}: cargo metadata: {}",
            manifest.display(),
            crate::sys::json_error::describe(&e)
        ))
    })?;
    let mut dirs = Vec::new();
    for package in metadata.packages.into_iter().filter(|p| p.source.is_none()) {
        // A package inherits from its workspace's manifest, read too.
        let mut locate = cargo(toolchain);
        locate
            .args([
                "locate-project",
                "--workspace",
                "--message-format",
                "plain",
                "--manifest-path",
            ])
            .arg(&package.manifest_path)
            .stderr(Stdio::null());
        let workspace = locate
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        dirs.extend(
            workspace
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
        );
        dirs.extend(package.manifest_path.parent().map(Path::to_path_buf));
    }
    Ok(dirs)
}

/// The private target directory of the workspace at `root`: the one the
/// user names (`CARGO_TARGET_DIR`), else one under the user's cache that
/// no other build uses. Never the workspace's own `target/`, which the
/// user's own, unconfined `cargo build` would run what a confined build
/// left there from.
fn target_dir_of(root: &Path) -> Result<PathBuf, BuildError> {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        if dir.is_absolute() {
            return Ok(dir);
        }
    }
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let cache = crate::sys::private_dir::user_dir("XDG_CACHE_HOME", ".cache").ok_or_else(|| {
        BuildError::Usage(
            "no place for the build's target directory: set XDG_CACHE_HOME or HOME, or \
             CARGO_TARGET_DIR"
                .into(),
        )
    })?;
    let name = crate::sys::path_name::slug(
        &root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let hash = hex::encode(&Sha256::digest(root.as_os_str().as_bytes())[..8]);
    let dir = cache.join("builds").join(format!("{name}-{hash}"));
    crate::sys::private_dir::ensure(&dir).map_err(BuildError::Usage)?;
    Ok(dir)
}

/// Build one crate; returns the produced components' names and bytes.
fn build_crate(dir: &Path, trust: Trust) -> Result<Vec<(std::ffi::OsString, Vec<u8>)>, BuildError> {
    // cargo runs elsewhere (see [`cargo`]).
    let manifest = std::path::absolute(dir.join("Cargo.toml"))
        .map_err(|e| BuildError::Usage(format!("{}: {e}", dir.display())))?;
    let root = workspace_root(&manifest)?;
    let toolchain = toolchain_of(&root);
    // Found now rather than after a minute of compiling dependencies.
    if let Some(missing) = missing_target(toolchain.as_deref()) {
        return Err(BuildError::Usage(missing));
    }
    let target_dir = target_dir_of(&root)?;
    // The target directory is where the workspace's own would be, to the
    // compiler's output: the same bytes wherever it lies.
    let mut flags = vec![
        format!(
            "--remap-path-prefix={}=/critic/target",
            target_dir.display()
        ),
        format!("--remap-path-prefix={}=/critic", root.display()),
    ];
    if let Some(home) = cargo_home() {
        flags.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    // A committed lock file pins the dependencies; a new skill gets one on its
    // first build (commit it to make later builds reproducible).
    if !root.join("Cargo.lock").is_file() {
        let mut lock = cargo(toolchain.as_deref());
        lock.arg("generate-lockfile");
        cargo_step(lock, &manifest, "resolve its dependencies")?;
    }
    let mut fetch = cargo(toolchain.as_deref());
    fetch.args(["fetch", "--locked"]);
    cargo_step(fetch, &manifest, "fetch its dependencies")?;
    // The build's only writable place.
    std::fs::create_dir_all(&target_dir)
        .map_err(|e| BuildError::Usage(format!("{}: {e}", target_dir.display())))?;
    let mut cmd = cargo(toolchain.as_deref());
    cmd.args([
        "build",
        "--offline",
        "--locked",
        "--profile",
        PROFILE,
        "--target",
        TARGET,
        "--message-format",
        "json-render-diagnostics",
        "--target-dir",
    ])
    .arg(&target_dir)
    .arg("--manifest-path")
    .arg(&manifest)
    .env("CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS", flags.join(" "))
    .stderr(Stdio::inherit());
    // Path dependencies outside the workspace (the SDK a new skill names by
    // its absolute path, in a clone under the home, say) are read too.
    let local = local_packages(toolchain.as_deref(), &manifest)?;
    let mut seen: Vec<&Path> = vec![&root];
    seen.extend(
        local
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| !p.starts_with(&root)),
    );
    confined_build::confine(&mut cmd, trust, &[&target_dir], &seen)?;
    let out = cmd
        .output()
        .map_err(|e| BuildError::Usage(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        // The target was checked before the build: what failed is in
        // cargo's own words.
        return Err(BuildError::Usage(format!(
            "{}: build failed (see cargo's output above)",
            manifest.display()
        )));
    }
    let mut wasm = Vec::new();
    for line in out.stdout.split(|b| *b == b'\n') {
        let Ok(msg) = serde_json::from_slice::<Message>(line) else {
            continue;
        };
        if msg.reason == "compiler-artifact"
            && msg
                .target
                .is_some_and(|t| t.kind.iter().any(|k| k == "cdylib"))
        {
            wasm.extend(
                msg.filenames
                    .into_iter()
                    .filter(|f| f.extension().is_some_and(|e| e == "wasm")),
            );
        }
    }
    if wasm.is_empty() {
        return Err(BuildError::Usage(format!(
            "{}: produced no .wasm; a detector crate needs `crate-type = [\"cdylib\"]`",
            manifest.display()
        )));
    }
    // The build ran the skill's code, which may also have written to
    // cargo's output: only regular files in the target directory are read.
    let real_target = target_dir
        .canonicalize()
        .map_err(|e| BuildError::Usage(format!("{}: {e}", target_dir.display())))?;
    let mut built = Vec::new();
    for path in wasm {
        let inside = path
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| p.starts_with(&real_target));
        let name = path.file_name().map(ToOwned::to_owned);
        let bytes =
            crate::sys::bounded_read::read_regular_file_nofollow(&path, MAX_COMPONENT_BYTES)
                .map_err(|e| BuildError::Usage(format!("{}: {e}", path.display())));
        match (inside, name, bytes) {
            (true, Some(name), Ok(bytes)) => built.push((name, bytes)),
            (_, _, Err(e)) => return Err(e),
            _ => {
                return Err(BuildError::Usage(format!(
                    "{}: the build named a component outside its target directory {}",
                    path.display(),
                    target_dir.display()
                )))
            }
        }
    }
    Ok(built)
}

/// Build every detector of `skill` (Rust crates and Python detectors) and
/// copy the components next to its `critic.yaml`; with `check`, compare
/// instead of copying: bytes for a Rust detector, the recorded source digest
/// for a Python one (see [`compile_python`](super::compile_python)).
/// Their build tools run as `trust` says (see [`super::confined_build`]).
pub fn build_skill(skill: &Path, check: bool, trust: Trust) -> Result<BuildReport, BuildError> {
    use super::compile_python;
    let crates = detector_crates(skill);
    let python = compile_python::python_detectors(skill);
    if crates.is_empty() && python.is_empty() {
        return Err(BuildError::Usage(format!(
            "{}: no detector found (expected detector/Cargo.toml or detectors/*/Cargo.toml for Rust, detector/pyproject.toml with detector/app.py for Python)",
            skill.display()
        )));
    }
    let mut report = BuildReport::default();
    for dir in crates {
        for (name, new) in build_crate(&dir, trust)? {
            let dest = skill.join(name);
            if check {
                let same = committed(&dest).is_some_and(|old| old == new);
                report.compared(
                    &dest,
                    same,
                    &format!("{} bytes, sha256 {}", new.len(), sha(&new)),
                );
            } else {
                report.write(&dest, &new)?;
            }
        }
    }
    for dir in python {
        let project = compile_python::read_project(&dir)?;
        let dest = skill.join(&project.wasm);
        if check {
            let digest = compile_python::stage(&dir, &project)?.digest;
            let recorded = committed(&dest).and_then(|old| compile_python::recorded_digest(&old));
            let same = recorded.as_deref() == Some(digest.as_str());
            report.compared(&dest, same, &format!("sources {}", &digest[..16]));
        } else {
            let started = std::time::Instant::now();
            let new = compile_python::build(&dir, &project, trust)?;
            report.write(&dest, &new)?;
            if let Some(line) = report.lines.last_mut() {
                line.push_str(&format!(
                    "; componentize-py {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
            }
        }
    }
    Ok(report)
}

/// The largest committed component `--check` reads.
const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// The committed component at `path`, when it is a regular file of at most
/// [`MAX_COMPONENT_BYTES`]: a skill may be someone else's, and a link to
/// `/dev/zero` or a FIFO in its place must not hang or exhaust the build.
fn committed(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_COMPONENT_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_COMPONENT_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

impl BuildReport {
    /// Put `bytes` at `dest` by renaming a new file over it: never through a
    /// link planted there, and a file that is not a regular one is refused.
    fn write(&mut self, dest: &Path, bytes: &[u8]) -> Result<(), BuildError> {
        if let Ok(meta) = std::fs::symlink_metadata(dest) {
            if !meta.is_file() {
                return Err(BuildError::Usage(format!(
                    "{}: not a regular file (a link, a directory...); remove it, then build again",
                    dest.display()
                )));
            }
        }
        crate::sys::atomic_file::write(dest, bytes, false)
            .map_err(|e| BuildError::Usage(format!("{}: {e}", dest.display())))?;
        self.lines.push(format!(
            "built {} ({} bytes, sha256 {})",
            dest.display(),
            bytes.len(),
            sha(bytes)
        ));
        Ok(())
    }

    fn compared(&mut self, dest: &Path, same: bool, what: &str) {
        self.differs |= !same;
        self.lines.push(format!(
            "{} {} ({what})",
            if same { "same   " } else { "DIFFERS" },
            dest.display()
        ));
    }
}

fn sha(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(bytes)[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toolchain_without_the_wasm_target_is_found_before_any_compiling() {
        use std::os::unix::fs::PermissionsExt;
        // A rustc whose sysroot has no standard library for the target.
        let t = tempfile::tempdir().unwrap();
        let sysroot = t.path().join("sysroot");
        std::fs::create_dir_all(sysroot.join("lib/rustlib/x86_64-unknown-linux-gnu")).unwrap();
        let bin = t.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let rustc = bin.join("rustc");
        std::fs::write(&rustc, format!("#!/bin/sh\necho {}\n", sysroot.display())).unwrap();
        std::fs::set_permissions(&rustc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let missing = missing_target_of(&rustc, Some("1.95.0")).expect("the target is missing");
        assert!(
            missing.contains(&format!("rustup target add {TARGET} --toolchain 1.95.0")),
            "{missing}"
        );
        assert!(
            missing.contains(&sysroot.display().to_string()),
            "{missing}"
        );
        std::fs::create_dir_all(sysroot.join("lib/rustlib").join(TARGET)).unwrap();
        assert_eq!(missing_target_of(&rustc, None), None);
        // A rustc that cannot say leaves it to cargo's own error.
        assert_eq!(missing_target_of(&t.path().join("none"), None), None);
    }

    #[test]
    fn a_component_is_never_written_or_read_through_what_a_skill_planted() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "mine").unwrap();
        let dest = dir.path().join("gate.wasm");
        std::os::unix::fs::symlink(&victim, &dest).unwrap();
        let mut report = BuildReport::default();
        let e = report.write(&dest, b"\0asm").unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert_eq!(committed(&dest), None, "a link is not read");
        std::fs::remove_file(&dest).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &dest,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(committed(&dest), None, "a FIFO is not waited on");
        std::fs::remove_file(&dest).unwrap();
        report.write(&dest, b"\0asm").unwrap();
        assert_eq!(committed(&dest).as_deref(), Some(&b"\0asm"[..]));
    }
}
