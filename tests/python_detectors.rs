//! Detectors written in Python, end to end: the SDK's and the skills' own
//! pytest suites, `critic new --lang python` through `critic build` (the
//! pinned componentize-py from PyPI) to `critic check`, the build's errors,
//! the Python ran-tests against the Rust one on every committed transcript,
//! and llm-judge against a scripted model stand-in with record and replay.

mod common;

use common::llm_stub::{completion, Stub};
use common::python::{built_python_skill, componentize_py};
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A Python with pytest (the arms' pinned lock).
fn pytest_python() -> PathBuf {
    python_venv("arms", Some(&root().join("tests/arms/requirements.lock")))
}

/// Run pytest in `dir` with the SDK importable; its output.
fn pytest(dir: &Path) -> std::process::Output {
    Command::new(pytest_python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(dir)
        .env("PYTHONPATH", root().join("critic-sdk-py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap()
}

#[test]
fn the_sdk_installs_with_pip_from_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("venv");
    // A copy: a build writes its metadata beside the sources. pip fetches
    // the build backend (setuptools) from PyPI.
    let sdk = dir.path().join("critic-sdk-py");
    std::fs::create_dir(&sdk).unwrap();
    copy_tree(&root().join("critic-sdk-py"), &sdk);
    let out = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new(env.join("bin/pip"))
        .args(["install", "-q", "--no-deps", "--disable-pip-version-check"])
        .arg(&sdk)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new(env.join("bin/python"))
        .args([
            "-c",
            "import critic_sdk, critic_sdk.testing; print(critic_sdk.__file__, critic_sdk.Verdict.fire('x').to_json())",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        said.contains("site-packages/critic_sdk/__init__.py"),
        "{said}"
    );
    assert!(said.contains("'followup_text': 'x'"), "{said}");
}

#[test]
fn the_sdk_and_the_python_skills_pass_their_own_tests() {
    for dir in [
        "critic-sdk-py",
        "skills/ran-tests-py/detector",
        "skills/llm-judge/detector",
    ] {
        let out = pytest(&root().join(dir));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{dir}:\n{text}\n{}", stderr(&out));
        assert!(text.contains(" passed"), "{dir}: {text}");
    }
}

/// A git repository with one commit, and a change to it when `changed`.
fn small_repo(changed: bool) -> Repo {
    let repo = Repo::new(&[("m.py", "x = 1\n")]);
    if changed {
        std::fs::write(repo.path().join("m.py"), "x = 2\n").unwrap();
    }
    repo
}

/// `critic check` of `skill` on `repo` with the demo's first finish; the verdict.
fn verdict(skill: &Path, repo: &Repo, session: &str) -> (Option<i32>, Value) {
    let state = tempfile::tempdir().unwrap();
    let out =
        run(check(skill, repo.path(), &demo_events(1), state.path()).args(["--session", session]));
    (out.status.code(), json_out(&out))
}

#[test]
fn a_new_python_skill_builds_and_judges_from_scratch() {
    let parent = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args(["new", "first-gate", "--lang", "python", "--dir"])
        .arg(parent.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    let skill = parent.path().join("first-gate");
    for file in [
        "critic.yaml",
        "README.md",
        "detector/app.py",
        "detector/test_app.py",
        "detector/pyproject.toml",
    ] {
        assert!(skill.join(file).is_file(), "{file}");
    }
    // Its own test runs natively, as generated.
    let out = pytest(&skill.join("detector"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // A vendored pure-Python package goes into the component with it.
    let vendored = skill.join("detector/vendor/countlib");
    std::fs::create_dir_all(&vendored).unwrap();
    std::fs::write(
        vendored.join("__init__.py"),
        "def count(files):\n    return len(files)\n",
    )
    .unwrap();
    let app = skill.join("detector/app.py");
    let text = std::fs::read_to_string(&app).unwrap();
    let text = text
        .replace(
            "changed = len(finish.patch.files)",
            "changed = count(finish.patch.files)",
        )
        .replace(
            "from critic_sdk import",
            "from vendor.countlib import count\nfrom critic_sdk import",
        );
    assert!(text.contains("count(finish.patch.files)"));
    std::fs::write(&app, &text).unwrap();

    // The README's way: componentize-py found on PATH.
    let build = |skill: &Path| {
        let bin = componentize_py().parent().unwrap().to_path_buf();
        let path = std::env::join_paths(
            std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        run(critic()
            .arg("build")
            .arg(skill)
            .env_remove("CRITIC_COMPONENTIZE_PY")
            .env("PATH", path))
    };
    let out = build(&skill);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("first_gate.wasm") && said.contains("componentize-py"),
        "{said}"
    );
    let out = run(critic().arg("validate").arg(&skill));
    assert!(out.status.success(), "{}", stderr(&out));

    let (code, v) = verdict(&skill, &small_repo(false), "a");
    assert_eq!(code, Some(1), "{v:#}");
    assert!(v["followup"]
        .as_str()
        .unwrap()
        .contains("Your patch changes 0 file(s)"));
    // `critic validate` compiled the component; checks load it from the cache.
    assert_eq!(v["signals"][0]["compile_cache"], "hit");
    let (code, v) = verdict(&skill, &small_repo(true), "b");
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["signals"][0]["metadata"], json!({"changed_files": 1}));
    assert_eq!(v["signals"][0]["compile_cache"], "hit");

    // --check compares the sources the component was built from.
    let check_build = |skill: &Path| run(critic().args(["build", "--check"]).arg(skill));
    let out = check_build(&skill);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("same"));
    std::fs::write(
        &app,
        text.replace(
            "DEFAULTS = {\"min_changed_files\": 1}",
            "DEFAULTS = {\"min_changed_files\": 2}",
        ),
    )
    .unwrap();
    let out = check_build(&skill);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("DIFFERS"));
    // A test file is not a source of the component.
    std::fs::write(&app, &text).unwrap();
    std::fs::write(skill.join("detector/test_more.py"), "def test_x(): pass\n").unwrap();
    assert_eq!(check_build(&skill).status.code(), Some(0));
}

#[test]
fn a_build_that_cannot_be_made_says_why() {
    let parent = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args(["new", "gate", "--lang", "python", "--dir"])
        .arg(parent.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    let skill = parent.path().join("gate");
    let build = |tool: &Path| {
        let out = run(critic()
            .arg("build")
            .arg(&skill)
            .env("CRITIC_COMPONENTIZE_PY", tool));
        (out.status.code(), stderr(&out))
    };
    let (code, err) = build(Path::new("/nonexistent/componentize-py"));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("cannot run componentize-py")
            && err.contains("pip install componentize-py==0.25.1"),
        "{err}"
    );

    let project = skill.join("detector/pyproject.toml");
    let pinned = std::fs::read_to_string(&project).unwrap();
    std::fs::write(&project, pinned.replace("\"0.25.1\"", "\"0.24.0\"")).unwrap();
    let (code, err) = build(&componentize_py());
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "pyproject.toml: pins componentize-py 0.24.0, but the one found is \"0.25.1\""
        ),
        "{err}"
    );
    std::fs::write(&project, &pinned).unwrap();

    let native = skill.join("detector/vendor/fast/_speed.cpython-314-wasm32-wasi.so");
    std::fs::create_dir_all(native.parent().unwrap()).unwrap();
    std::fs::write(&native, b"\0asm").unwrap();
    let (code, err) = build(&componentize_py());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("_speed.cpython-314-wasm32-wasi.so: a native extension module"),
        "{err}"
    );
    std::fs::remove_dir_all(skill.join("detector/vendor")).unwrap();

    std::fs::write(
        skill.join("detector/app.py"),
        "def check(finish):\n    pass\n",
    )
    .unwrap();
    let (code, err) = build(&componentize_py());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("componentize-py failed") && err.contains("`detect(finish)`"),
        "{err}"
    );
    assert!(!skill.join("gate.wasm").exists());
}

/// Every committed event stream the Rust ran-tests can read.
fn transcripts() -> Vec<PathBuf> {
    let mut found = vec![
        fixture("openhands/events"),
        fixture("openhands-v0/output.jsonl"),
        fixture("transcripts/cursor.reconstructed.jsonl"),
        fixture("transcripts/swe-agent.reconstructed.traj"),
    ];
    let mut finishes: Vec<PathBuf> = ["demo-run", "coharden-run", "elimination-run", "arms-run/*"]
        .iter()
        .flat_map(|d| {
            let pattern = root().join("examples").join(d).join("finish-*.jsonl");
            glob(&pattern)
        })
        .collect();
    finishes.sort();
    found.extend(finishes);
    found
}

/// The files matching `pattern` (`*` in any part), by listing directories.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    for part in pattern.components().skip(1) {
        let part = part.as_os_str().to_string_lossy().into_owned();
        let (prefix, suffix) = part.split_once('*').unwrap_or((&part, ""));
        let wild = part.contains('*');
        found = found
            .iter()
            .flat_map(|dir| {
                if !wild {
                    return vec![dir.join(&part)];
                }
                std::fs::read_dir(dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        let name = p.file_name().unwrap().to_string_lossy();
                        name.starts_with(prefix) && name.ends_with(suffix)
                    })
                    .collect()
            })
            .filter(|p| p.exists())
            .collect();
    }
    found
}

/// A skill with one `ran-tests` signal of `wasm` and `config`.
fn ran_tests_skill(wasm: &Path, config: &Value) -> tempfile::TempDir {
    skill_with_detector(
        wasm,
        wasm.file_name().unwrap().to_str().unwrap(),
        &format!(
            "name: ran-tests\nversion: 0.1.0\nsignals:\n  - {{name: ran-tests, type: hard_gate, detector: {{detector}}, timeout: 30s, config: {config}}}\n"
        ),
    )
}

/// What a verdict says of its one signal, less what differs by nature:
/// timings, cache use, and the exception a Python detector names before
/// its reason ("ValueError: ...").
fn signal(v: &Value) -> Value {
    let s = &v["signals"][0];
    let unnamed = |field: &Value| {
        field
            .as_str()
            .map(|t| Value::from(t.replace("ValueError: ", "")))
            .unwrap_or(Value::Null)
    };
    json!({
        "status": s["status"],
        "triggered": s["triggered"],
        "followup": unnamed(&s["followup_text"]),
        "metadata": s["metadata"],
        // The first line: a Python detector's reason goes on with where it failed.
        "error": unnamed(&s["error"]).as_str().map(|e| {
            e.lines().next().unwrap_or("").replace("ran_tests_py.wasm", "ran_tests.wasm")
        }),
    })
}

#[test]
fn the_python_ran_tests_gives_the_rust_verdicts_on_every_transcript() {
    let rust = root().join("skills/ran-tests/ran_tests.wasm");
    let python = built_python_skill(&root().join("skills/ran-tests-py")).join("ran_tests_py.wasm");
    let configs = [
        json!({}),
        json!({"test_commands": ["pytest"], "require_pass": true}),
        json!({"test_commands": ["python -m pytest", "tox", "npm test"]}),
        json!({"test_commands": ["-q"], "require_pass": true}),
        json!({"test_commands": ["pytest", " "]}),
    ];
    let repo = small_repo(true);
    let transcripts = transcripts();
    assert!(transcripts.len() >= 20, "{transcripts:?}");
    let mut compared = 0;
    for config in &configs {
        let (r, p) = (
            ran_tests_skill(&rust, config),
            ran_tests_skill(&python, config),
        );
        for events in &transcripts {
            let state = tempfile::tempdir().unwrap();
            let judge = |skill: &Path, session: &str| {
                let out =
                    run(check(skill, repo.path(), events, state.path())
                        .args(["--session", session]));
                let v = json_out(&out);
                (out.status.code(), signal(&v))
            };
            let (rust_code, rust_said) = judge(r.path(), "rust");
            let (py_code, py_said) = judge(p.path(), "python");
            assert_eq!(
                (rust_code, &rust_said),
                (py_code, &py_said),
                "{} with config {config}",
                events.display()
            );
            compared += 1;
        }
    }
    assert_eq!(compared, configs.len() * transcripts.len());
}

#[test]
fn llm_judge_scores_the_patch_with_the_model_and_replays_offline() {
    let skill = built_python_skill(&root().join("skills/llm-judge"));
    let stub = Stub::start(Duration::ZERO, |_, body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let score = if user.contains("+x = 2") { 0.9 } else { 0.1 };
        (
            200,
            completion(&format!(
                "{{\"score\": {score}, \"reason\": \"judged by the stand-in\"}}"
            )),
        )
    });
    let cache = tempfile::tempdir().unwrap();
    let events = tempfile::tempdir().unwrap();
    let transcript = events.path().join("events.json");
    // The host's own event format: the task as the first user message.
    std::fs::write(
        &transcript,
        json!([{"index": 0, "kind": "message", "source": "user",
                "text": "Fix m.py.\n<issue_description>\nx must be 2\n</issue_description>"},
               {"index": 1, "kind": "finish", "source": "agent", "text": "done"}])
        .to_string(),
    )
    .unwrap();
    let judge = |repo: &Repo| {
        let state = tempfile::tempdir().unwrap();
        let out = run(check(&skill, repo.path(), &transcript, state.path())
            .env("STUB_KEY", "sk-stand-in")
            .args(["--llm-base-url", &stub.url, "--llm-model", "stand-in"])
            .args(["--llm-api-key-env", "STUB_KEY", "--llm-cache"])
            .arg(cache.path()));
        (out.status.code(), json_out(&out))
    };
    let good = small_repo(true);
    let (code, v) = judge(&good);
    assert_eq!(code, Some(0), "{v:#}");
    let m = &v["signals"][0]["metadata"];
    assert_eq!(
        (m["score"].clone(), m["cached"].clone()),
        (json!(0.9), json!([false])),
        "{v:#}"
    );
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let asked = seen[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(asked.contains("<issue>\nx must be 2\n</issue>"), "{asked}");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-stand-in"));

    // The same finish again: the answer comes from the cache, not the model.
    let (code, v) = judge(&good);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["signals"][0]["metadata"]["cached"], json!([true]));
    assert_eq!(
        stub.seen.lock().unwrap().len(),
        1,
        "the replay called the model"
    );

    // A patch that does not address the issue scores low and fires.
    let bad = Repo::new(&[("m.py", "x = 1\n")]);
    std::fs::write(bad.path().join("m.py"), "x = 1  # looked at it\n").unwrap();
    let (code, v) = judge(&bad);
    assert_eq!(code, Some(1), "{v:#}");
    let followup = v["followup"].as_str().unwrap();
    assert!(
        followup.contains("score 0.10 of 1") && followup.contains("judged by the stand-in"),
        "{followup}"
    );
}

/// The hostile Python fixture in `mode`: its verdict on a changed repository.
fn misbehave_py(mode: &str) -> (Option<i32>, Value) {
    let built = built_python_skill(&root().join("tests/python/misbehave-py"));
    let skill = skill_with_detector(
        &built.join("misbehave_py.wasm"),
        "misbehave_py.wasm",
        &format!("name: t\nversion: 0.1.0\nsignals:\n  - {{name: s, type: hard_gate, detector: '{{detector}}', config: {{mode: {mode}}}}}\n"),
    );
    verdict(skill.path(), &small_repo(true), mode)
}

#[test]
fn the_build_leaves_out_the_site_packages_it_runs_beside() {
    // The tests build with python3 on PATH, whose site-packages
    // componentize-py would map in as `/1` beside the sources' `/0`.
    let (code, v) = misbehave_py("path");
    assert_eq!(code, Some(0), "{v:#}");
    let path: Vec<String> =
        serde_json::from_value(v["signals"][0]["metadata"]["path"].clone()).unwrap();
    assert!(path.iter().any(|p| p == "/0"), "{path:?}");
    assert!(
        !path
            .iter()
            .any(|p| p.contains("site-packages") || p == "/1"),
        "{path:?}"
    );
}

#[test]
fn a_module_imported_late_fails_with_a_hint() {
    let (code, v) = misbehave_py("late-import");
    assert_eq!(code, Some(1), "{v:#}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("ModuleNotFoundError") && e.contains("import every module at the top of app.py"),
        "{e}"
    );
}
