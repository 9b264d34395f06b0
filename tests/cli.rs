//! `critic demo`, `critic new`, `critic build` and `critic validate`.

mod common;

use common::*;
use std::path::PathBuf;

/// Run `critic demo ARGS`; its output and the verdict lines in it.
fn demo(args: &[&str]) -> (String, Vec<String>) {
    let out = run(critic().arg("demo").args(args));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let verdicts = text
        .lines()
        .filter(|l| l.starts_with("ACCEPT") || l.starts_with("REJECT"))
        .map(str::to_string)
        .collect();
    (text, verdicts)
}

#[test]
fn demo_replays_the_recorded_run() {
    let (text, verdicts) = demo(&[]);
    assert_eq!(verdicts.len(), 3, "{text}");
    assert!(
        verdicts[0].starts_with("REJECT")
            && verdicts[1].starts_with("REJECT")
            && verdicts[2].starts_with("ACCEPT"),
        "{text}"
    );
    assert!(text.contains("rejected by hard gate empty-patch"), "{text}");
    assert!(text.contains("rejected by hard gate ran-tests"), "{text}");
}

#[test]
fn demo_coharden_replays_a_full_session_with_live_test_runs() {
    let (text, verdicts) = demo(&["coharden"]);
    assert_eq!(verdicts.len(), 3, "{text}");
    assert!(verdicts[2].starts_with("ACCEPT coharden"), "{text}");
    assert!(
        text.contains("Round 0 complete: the test detects the bug"),
        "{text}"
    );
    assert!(
        text.contains("Round 1: the test did not change; hardening goes on"),
        "{text}"
    );
    assert!(text.contains("Top surviving mutant"), "{text}");
    assert!(text.contains("Round 2 is clean"), "{text}");
    assert!(
        text.contains("alpha 0, beta 0"),
        "the hardened test kills every mutant: {text}"
    );
}

#[test]
fn demo_elimination_replays_a_test_writing_session_with_live_coverage_runs() {
    // The skill runs `python3` from PATH: the one with pytest and coverage.py.
    let python = python_venv(
        "coverage",
        Some(&root().join("tests/eliminate/coverage-requirements.lock")),
    );
    let path = format!(
        "{}:{}",
        python.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(critic().args(["demo", "elimination"]).env("PATH", path));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("ACCEPT") || l.starts_with("REJECT"))
        .collect();
    assert_eq!(verdicts.len(), 3, "{text}");
    assert!(
        verdicts[0].starts_with("REJECT") && verdicts[1].starts_with("REJECT"),
        "{text}"
    );
    assert!(verdicts[2].starts_with("ACCEPT"), "{text}");
    assert!(
        text.contains("slice 1 given (24 of 28 statements)"),
        "{text}"
    );
    assert!(
        text.contains("slice 2 given (16 of 28 statements)"),
        "{text}"
    );
    assert!(
        text.contains("all 28 statements of shipping/rates.py::quote covered"),
        "{text}"
    );
}

#[test]
fn demo_arms_replays_one_session_per_arm_and_tabulates_them() {
    // brt-only, cogen and tdd run the agent's pytest tests: `python3` from
    // PATH must have pytest.
    let python = python_venv("arms", Some(&root().join("tests/arms/requirements.lock")));
    let path = format!(
        "{}:{}",
        python.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(critic().args(["demo", "arms"]).env("PATH", path));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let table = &text[text.rfind("\narm ").expect("a table") + 1..];
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let row = |arm: &str| {
        rows.iter()
            .find(|r| r[0] == arm)
            .unwrap_or_else(|| panic!("no row for {arm}:\n{table}"))
            .clone()
    };
    assert_eq!(
        rows[0],
        ["arm", "finishes", "decisions", "outcome"],
        "{table}"
    );
    assert_eq!(rows.len(), 7, "six arms: {table}");
    assert_eq!(row("fix-only")[1..3], ["2", "R A"], "{table}");
    assert_eq!(row("brt-only")[1..3], ["2", "R A"], "{table}");
    assert!(
        row("brt-only")[3].contains("test fails on the base"),
        "{table}"
    );
    assert_eq!(row("tdd")[1..3], ["1", "A"], "{table}");
    assert!(row("tdd")[3].contains("test F->P"), "{table}");
    assert_eq!(
        row("cogen")[1..4],
        ["2", "R A", "accepted; test F->P"],
        "{table}"
    );
    assert_eq!(
        row("ralph")[1..4],
        ["6", "R R R R R A", "accepted, budget spent"],
        "{table}"
    );
    assert_eq!(row("coharden")[1..3], ["3", "R R A"], "{table}");
    assert!(row("coharden")[3].contains("returns t_k"), "{table}");
}

#[test]
fn demo_with_an_unknown_name_lists_the_recorded_runs() {
    let out = run(critic().args(["demo", "nope"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("no demo named \"nope\"") && e.contains(", coharden"),
        "{e}"
    );
}

/// A researcher's clone lies in their home, which confinement covers: a
/// new skill names the SDK there by its absolute path, and the confined
/// build still reads it (bound back read-only, as cargo's metadata lists
/// it), instead of failing with a misleading word about the wasm target.
#[test]
fn a_new_skill_builds_against_an_sdk_in_the_home_directory() {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let clone = tempfile::tempdir_in(home.join(".cache")).unwrap();
    // A workspace of the SDK alone, as the project's root declares it.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let start = manifest.find("[workspace.package]").unwrap();
    let end = manifest[start..]
        .find("\n[package]")
        .map_or(manifest.len(), |e| start + e);
    std::fs::write(
        clone.path().join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [\"critic-sdk\"]\n\n{}",
            &manifest[start..end]
        ),
    )
    .unwrap();
    copy_tree(&root().join("critic-sdk"), &clone.path().join("critic-sdk"));
    let dir = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args(["new", "home-gate", "--dir"])
        .arg(dir.path())
        .arg("--sdk")
        .arg(clone.path().join("critic-sdk")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let skill = dir.path().join("home-gate");
    let out = run(critic()
        .arg("build")
        .arg(&skill)
        .env("CARGO_TARGET_DIR", root().join("target/scaffold-test")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(skill.join("home_gate.wasm").is_file());
}

/// This checkout under the user's home (its parent made `HOME`): a new
/// skill depends on the SDK copy in critic's cache, in the user's home,
/// which the confined build binds back from the covered home.
#[test]
fn a_new_skill_builds_from_a_checkout_under_the_home() {
    let home = root().parent().unwrap().to_path_buf();
    let real_home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let toolchain = |var: &str, usual: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| real_home.join(usual))
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args(["new", "checkout-gate", "--dir"])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let skill = dir.path().join("checkout-gate");
    let out = run(critic()
        .arg("build")
        .arg(&skill)
        .env("HOME", &home)
        .env("CARGO_HOME", toolchain("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", toolchain("RUSTUP_HOME", ".rustup"))
        .env("CARGO_TARGET_DIR", root().join("target/scaffold-test")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(skill.join("checkout_gate.wasm").is_file());
}

/// `critic new` gives a skill the SDK the binary carries, copied into
/// critic's cache: the skill names no path of the checkout it was built
/// from (which an installed `critic` may not have), and builds.
#[test]
fn a_new_skill_depends_on_the_sdk_the_binary_carries() {
    let cache = tempfile::tempdir_in(root().join("target")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args(["new", "carried-gate", "--dir"])
        .arg(dir.path())
        .env("CRITIC_CACHE_DIR", cache.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let skill = dir.path().join("carried-gate");
    let manifest = std::fs::read_to_string(skill.join("detector/Cargo.toml")).unwrap();
    let sdk = cache.path().join("sdk").canonicalize().unwrap();
    assert!(
        manifest.contains(&format!("path = \"{}/critic-sdk-", sdk.display())),
        "{manifest}"
    );
    assert!(!manifest.contains(&format!("{}/critic-sdk\"", root().display())));
    let out = run(critic()
        .arg("build")
        .arg(&skill)
        .env("CRITIC_CACHE_DIR", cache.path())
        .env("CARGO_TARGET_DIR", root().join("target/scaffold-test")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(skill.join("carried_gate.wasm").is_file());
}

#[test]
fn new_skill_builds_validates_and_passes_its_test() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(critic().args(["new", "my-gate", "--dir"]).arg(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let skill = dir.path().join("my-gate");
    // Share a target dir across runs so the guest dependencies compile once.
    let target = root().join("target/scaffold-test");
    let out = run(critic()
        .arg("build")
        .arg(&skill)
        .env("CARGO_TARGET_DIR", &target));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(skill.join("my_gate.wasm").is_file());
    let out = run(critic().arg("validate").arg(&skill));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("component, critic:detector@0.1.0"));
    let test = std::process::Command::new(env!("CARGO"))
        .args(["test", "-q", "--manifest-path"])
        .arg(skill.join("detector/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        test.status.success(),
        "{}",
        String::from_utf8_lossy(&test.stderr)
    );
    // And it judges a real finish.
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        &skill,
        repo.path(),
        &demo_events(1),
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(json_out(&out)["followup"]
        .as_str()
        .unwrap()
        .contains("at least 1"));
    let again = run(critic().args(["new", "my-gate", "--dir"]).arg(dir.path()));
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("already exists"));
}

#[test]
fn shipped_skills_validate() {
    for name in [
        "agent-finished",
        "empty-patch",
        "clean-patch",
        "structural-validity",
        "test-only",
        "ran-tests",
    ] {
        let out = run(critic().arg("validate").arg(skill(name)));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    }
    let out = run(critic()
        .arg("validate")
        .arg(root().join("examples/demo-skill")));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

// A demo whose tests cannot run would print rejections that look like the
// critic's: without pytest (or coverage.py) it refuses to start, naming
// what to install.
#[test]
fn demos_refuse_to_start_without_the_python_packages_their_runs_need() {
    let bare = python_venv("no-pytest", None);
    let path = format!(
        "{}:{}",
        bare.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (demo, wanted) in [
        ("arms", "pytest"),
        ("elimination", "pytest coverage"),
        ("experiment", "pytest"),
    ] {
        let out = run(critic().args(["demo", demo]).env("PATH", &path));
        assert_eq!(out.status.code(), Some(2), "{demo}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains(&format!("pip install {wanted}")), "{demo}: {e}");
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "{demo}: no table"
        );
    }
}
