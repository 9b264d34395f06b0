//! The container back end of grading (`critic experiment run --env
//! container`): each test run happens in a fresh container of the
//! instance's image, as SWE-bench's harness grades, instead of a confined
//! scratch copy of the clone. The image holds the repository at the base
//! commit in its working directory (`/testbed` in SWE-bench's images) and
//! its environment; the run's patch and files reach it through a read-only
//! mount, the container has no network, and it is killed at the run's time
//! limit. It implements the MPE runner's [`Backend`], so grading is the same
//! code either way.

use crate::grading::runner::Backend;
use critic_sdk::{RunRequest, RunResult};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How an instance's container is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// `podman` or `docker`.
    pub engine: String,
    /// The image name; `{instance_id}` and `{swebench_id}` (the id with
    /// `__` as `_1776_`, as SWE-bench names its images) are replaced.
    pub image: String,
    /// Where the repository is in the image.
    pub workdir: String,
    /// Shell lines run before each test command (activating the image's
    /// environment).
    pub setup: Vec<String>,
}

impl Default for Spec {
    /// SWE-bench's evaluation images.
    fn default() -> Spec {
        Spec {
            engine: "podman".into(),
            image: "docker.io/swebench/sweb.eval.x86_64.{swebench_id}:latest".into(),
            workdir: "/testbed".into(),
            setup: vec![
                "source /opt/miniconda3/bin/activate".into(),
                "conda activate testbed".into(),
            ],
        }
    }
}

impl Spec {
    /// The image of `instance_id`.
    pub fn image_of(&self, instance_id: &str) -> String {
        self.image
            .replace("{instance_id}", instance_id)
            .replace("{swebench_id}", &instance_id.replace("__", "_1776_"))
    }
}

/// An instance's container back end.
pub struct Containers {
    spec: Spec,
    image: String,
    /// Where each run's input is written, on the host.
    scratch: PathBuf,
    identity: String,
}

impl Containers {
    /// The back end of `instance_id` under `spec`; inputs are written under
    /// `scratch`.
    pub fn new(spec: &Spec, instance_id: &str, scratch: &Path) -> Containers {
        let image = spec.image_of(instance_id);
        Containers {
            identity: serde_json::json!({"container": spec.engine, "image": image}).to_string(),
            spec: spec.clone(),
            image,
            scratch: scratch.to_path_buf(),
        }
    }

    /// The engine's command line for `request`, whose input is at `input`
    /// on the host, in a container named `name`.
    pub fn command(&self, request: &RunRequest, input: &Path, name: &str) -> Vec<String> {
        let quote = |s: &str| {
            shlex::try_quote(s)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| "''".into())
        };
        let mut script = vec!["set -e".to_string()];
        script.extend(self.spec.setup.iter().cloned());
        script.push(format!("cd {}", quote(&self.spec.workdir)));
        if request
            .patch
            .as_deref()
            .is_some_and(|p| !p.trim().is_empty())
        {
            script.push("git apply --whitespace=nowarn /critic-input/patch.diff".into());
        }
        script.push("cp -a /critic-input/files/. .".into());
        script
            .push("while IFS= read -r f; do rm -f -- \"$f\"; done < /critic-input/deleted".into());
        if let Some(cwd) = &request.cwd {
            script.push(format!("cd {}", quote(cwd)));
        }
        script.push(format!(
            "exec {}",
            request
                .argv
                .iter()
                .map(|a| quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let mut argv = vec![
            self.spec.engine.clone(),
            "run".into(),
            "--rm".into(),
            "--name".into(),
            name.into(),
            "--network=none".into(),
            "-v".into(),
            format!("{}:/critic-input:ro", input.display()),
        ];
        for (k, v) in &request.env {
            argv.push("-e".into());
            argv.push(format!("{k}={v}"));
        }
        argv.extend([
            self.image.clone(),
            "bash".into(),
            "-c".into(),
            script.join("\n"),
        ]);
        argv
    }

    /// Write `request`'s patch and files where the container will see them.
    fn input(&self, request: &RunRequest, dir: &Path) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
        std::fs::create_dir_all(dir.join("files")).map_err(|e| err(dir, e))?;
        std::fs::write(
            dir.join("patch.diff"),
            request.patch.as_deref().unwrap_or(""),
        )
        .map_err(|e| err(dir, e))?;
        let mut deleted = String::new();
        for (path, content) in &request.files {
            let rel = crate::sandbox::scratch::relative(path)?;
            match content {
                Some(text) => {
                    let to = dir.join("files").join(rel);
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| err(parent, e))?;
                    }
                    std::fs::write(&to, text).map_err(|e| err(&to, e))?;
                }
                None => {
                    deleted.push_str(&rel.to_string_lossy());
                    deleted.push('\n');
                }
            }
        }
        std::fs::write(dir.join("deleted"), deleted).map_err(|e| err(dir, e))
    }

    fn run_one(&self, request: &RunRequest, index: usize) -> RunResult {
        let failed = |e: String| RunResult {
            error: Some(e),
            ..RunResult::default()
        };
        let name = format!("critic-{}-{index}-{}", std::process::id(), nanos());
        let input = self.scratch.join(&name);
        if let Err(e) = self.input(request, &input) {
            return failed(e);
        }
        let argv = self.command(request, &input, &name);
        let started = Instant::now();
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = crate::sys::remove_tree::remove_tree(&input);
                return failed(format!("cannot start {}: {e}", argv[0]));
            }
        };
        let cap = request
            .output_bytes
            .unwrap_or(crate::sandbox::scratch::DEFAULT_OUTPUT_BYTES)
            .min(crate::sandbox::scratch::MAX_OUTPUT_BYTES);
        let read = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                if let Some(mut p) = pipe {
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = p.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        // The end is kept: pytest's summary comes last.
                        out.extend_from_slice(&buf[..n]);
                        if out.len() > 2 * cap {
                            out.drain(..out.len() - cap);
                        }
                    }
                }
                let start = out.len().saturating_sub(cap);
                String::from_utf8_lossy(&out[start..]).into_owned()
            })
        };
        let stdout = read(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = read(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let limit = Duration::from_millis(request.timeout_ms.unwrap_or(60_000));
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if started.elapsed() >= limit => {
                    timed_out = true;
                    let _ = Command::new(&self.spec.engine)
                        .args(["kill", &name])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    let _ = child.kill();
                    break child.wait().ok();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break None,
            }
        };
        let _ = crate::sys::remove_tree::remove_tree(&input);
        use std::os::unix::process::ExitStatusExt;
        RunResult {
            exit_code: status.and_then(|s| s.code()).filter(|_| !timed_out),
            signal: status.and_then(|s| s.signal()),
            timed_out,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            error: None,
        }
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Backend for Containers {
    fn run_all(&self, requests: &[RunRequest]) -> Vec<RunResult> {
        crate::sys::parallel::map(requests.len(), requests.len(), |i| {
            self.run_one(&requests[i], i)
        })
    }

    fn identity(&self) -> &str {
        &self.identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn swebench_images_are_named_as_swebench_names_them() {
        let spec = Spec::default();
        assert_eq!(
            spec.image_of("astropy__astropy-12907"),
            "docker.io/swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
        );
    }

    #[test]
    fn a_run_is_a_fresh_networkless_container_given_its_input_read_only() {
        let spec = Spec {
            engine: "podman".into(),
            image: "local/{instance_id}".into(),
            workdir: "/testbed".into(),
            setup: vec!["conda activate testbed".into()],
        };
        let c = Containers::new(&spec, "o__r-1", Path::new("/scratch"));
        let request = RunRequest {
            patch: Some("diff --git a/x b/x\n".into()),
            files: BTreeMap::from([("tests/test_x.py".into(), Some("x".into()))]),
            argv: vec![
                "python".into(),
                "-m".into(),
                "pytest".into(),
                "tests/test x.py".into(),
            ],
            env: BTreeMap::from([("PYTHONHASHSEED".into(), "0".into())]),
            cwd: None,
            timeout_ms: Some(1000),
            output_bytes: None,
        };
        let argv = c.command(&request, Path::new("/scratch/in"), "critic-1");
        assert_eq!(
            &argv[..11],
            [
                "podman",
                "run",
                "--rm",
                "--name",
                "critic-1",
                "--network=none",
                "-v",
                "/scratch/in:/critic-input:ro",
                "-e",
                "PYTHONHASHSEED=0",
                "local/o__r-1"
            ]
        );
        assert_eq!(&argv[11..13], ["bash", "-c"]);
        let script = &argv[13];
        assert!(
            script.starts_with("set -e\nconda activate testbed\ncd /testbed\n"),
            "{script}"
        );
        assert!(script.contains("git apply --whitespace=nowarn /critic-input/patch.diff"));
        assert!(
            script.ends_with("exec python -m pytest 'tests/test x.py'"),
            "{script}"
        );
        let no_patch = RunRequest {
            patch: None,
            ..request
        };
        let script = &c.command(&no_patch, Path::new("/i"), "n")[13];
        assert!(!script.contains("git apply"), "{script}");
    }

    #[test]
    fn inputs_are_written_for_the_container_and_paths_out_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = Containers::new(&Spec::default(), "o__r-1", dir.path());
        let mut request = RunRequest {
            patch: None,
            files: BTreeMap::from([
                ("a/b.py".into(), Some("b".into())),
                ("gone.py".into(), None),
            ]),
            argv: vec!["true".into()],
            env: BTreeMap::new(),
            cwd: None,
            timeout_ms: None,
            output_bytes: None,
        };
        c.input(&request, &dir.path().join("in")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("in/files/a/b.py")).unwrap(),
            "b"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("in/deleted")).unwrap(),
            "gone.py\n"
        );
        request.files = BTreeMap::from([("../out.py".into(), Some("x".into()))]);
        assert!(c.input(&request, &dir.path().join("in2")).is_err());
        assert!(!dir.path().join("out.py").exists());
    }

    #[test]
    fn an_engine_that_is_not_there_is_an_error_not_a_result() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            engine: "/nonexistent/podman".into(),
            ..Spec::default()
        };
        let c = Containers::new(&spec, "o__r-1", dir.path());
        let request = RunRequest {
            patch: None,
            files: BTreeMap::new(),
            argv: vec!["true".into()],
            env: BTreeMap::new(),
            cwd: None,
            timeout_ms: None,
            output_bytes: None,
        };
        let r = &c.run_all(&[request])[0];
        assert!(
            r.error
                .as_deref()
                .unwrap()
                .contains("cannot start /nonexistent/podman"),
            "{r:?}"
        );
    }
}
