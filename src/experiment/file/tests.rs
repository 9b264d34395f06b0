//! Unit tests of `file`.

use super::*;
use std::time::Duration;

/// A directory with an instances file, a repos dir and the fix-only skill.
fn place() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("instances.jsonl"), "").unwrap();
    std::fs::create_dir(dir.path().join("repos")).unwrap();
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    std::os::unix::fs::symlink(skills, dir.path().join("skills")).unwrap();
    dir
}

const GOOD: &str = "name: demo\ninstances: instances.jsonl\nrepos: repos\n\
agent:\n  command: [./agent.py, \"{prompt_file}\"]\n  timeout: 10m\n\
arms:\n  fix-only: {skill: skills/fix-only}\n  ralph: {skill: skills/ralph, max_iterations: 2}\n\
samples: 2\n";

#[test]
fn a_good_file_resolves_against_its_directory() {
    let dir = place();
    let path = dir.path().join("exp.yaml");
    let e = parse(GOOD, &path).unwrap();
    assert_eq!(e.name, "demo");
    assert_eq!(e.samples, 2);
    assert_eq!(e.agent.timeout, Duration::from_secs(600));
    let arms: Vec<&str> = e.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arms, ["fix-only", "ralph"], "file order");
    assert_eq!(e.arms[1].max_iterations, Some(2));
    assert!(Path::new(&e.agent.command[0]).is_absolute());
    assert_eq!(e.agent.command[1], "{prompt_file}");
    assert!(e.resolved["arms"]["ralph"]["skill"]
        .as_str()
        .unwrap()
        .ends_with("skills/ralph"));
}

#[test]
fn every_problem_is_placed_at_its_line() {
    let dir = place();
    let path = dir.path().join("exp.yaml");
    let text = GOOD
        .replace("instances.jsonl", "missing.jsonl")
        .replace("skills/ralph", "skills/nope")
        .replace("timeout: 10m", "timeout: soon");
    let e = parse(&text, &path).unwrap_err().to_string();
    assert!(e.contains("exp.yaml:6:"), "the timeout's line: {e}");
    assert!(e.contains("duration"), "{e}");
    let text = GOOD
        .replace("instances.jsonl", "missing.jsonl")
        .replace("skills/ralph", "skills/nope");
    let e = parse(&text, &path).unwrap_err().to_string();
    assert!(e.contains("exp.yaml:2:12: instances:"), "{e}");
    assert!(e.contains("missing.jsonl is not a file"), "{e}");
    assert!(e.contains("exp.yaml:9:"), "the arm's line: {e}");
    assert!(e.contains("skills/nope is not a directory"), "{e}");
}

#[test]
fn unknown_fields_and_bad_names_are_refused() {
    let dir = place();
    let path = dir.path().join("exp.yaml");
    let e = parse(&format!("{GOOD}sample: 3\n"), &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exp.yaml:11:1"), "{e}");
    assert!(
        e.contains(
            "unknown field `sample` (did you mean `samples`?); the fields allowed here are \
                 name, instances"
        ),
        "{e}"
    );
    // A key that is no near miss is placed, not quoted.
    let e = parse(&format!("{GOOD}hunter2-secret-token: 3\n"), &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exp.yaml:11:1: (root): unknown field; the fields"),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
    let e = parse(&GOOD.replace("fix-only:", "Fix Only:"), &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("an arm's name is lowercase"), "{e}");
    let e = parse(
        &GOOD.replace("skill: skills/fix-only", "skil: skills/fix-only"),
        &path,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("missing required field \"skill\""), "{e}");
    assert!(
        e.contains(
            "unknown field `skil` (did you mean `skill`?); the fields allowed here are \
                 skill, max_iterations"
        ),
        "{e}"
    );
}

#[test]
fn yaml_syntax_errors_say_where() {
    let e = parse("name: [a\n", Path::new("x.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("x.yaml:"), "{e}");
    assert!(e.contains("YAML syntax error"), "{e}");
}
