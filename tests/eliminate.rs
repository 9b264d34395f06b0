//! `critic eliminate`: the command, its errors, and the seed's
//! Proposition 3.1 checked by tracing real functions of PyPI packages.

mod common;

use common::*;
use std::process::Command;

const SOURCE: &str = "\
def f(x):
    \"\"\"Doc.\"\"\"
    a = 1
    if x > 0:
        return a
    else:
        c = 3
    return c
";

fn eliminate(file: &std::path::Path, args: &[&str]) -> std::process::Output {
    run(critic().arg("eliminate").arg(file).args(args))
}

#[test]
fn json_and_text_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.py");
    std::fs::write(&file, SOURCE).unwrap();
    let out = eliminate(&file, &["--function", "f", "--uncovered", "7"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json_out(&out);
    assert_eq!(
        v["slice"],
        "def f(x):\n    a = 1\n    if not (x > 0):\n        c = 3\n        return c\n"
    );
    assert_eq!(
        v["line_map"],
        serde_json::json!([[1, 1], [2, 3], [3, 4], [4, 7], [5, 8]])
    );
    assert_eq!(v["kept"], serde_json::json!([3, 4, 7, 8]));
    assert_eq!(
        (
            v["original_statements"].as_u64(),
            v["slice_statements"].as_u64()
        ),
        (Some(5), Some(4))
    );
    let out = eliminate(
        &file,
        &["--function", "f", "--uncovered", "7,5", "--output", "text"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("    1 | def f(x):\n    3 |     a = 1\n    4 |     if x > 0:\n"),
        "{text}"
    );
    assert!(
        text.contains("    6 |     else:\n    7 |         c = 3\n"),
        "{text}"
    );
}

#[test]
fn bad_input_names_the_file_and_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.py");
    std::fs::write(&file, SOURCE).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--function", "g", "--uncovered", "3"],
            "no function \"g\"; the file defines: f",
        ),
        (
            &["--function", "f", "--uncovered", "12"],
            "line 12 is outside the function (lines 1-8)",
        ),
        (
            &["--function", "f", "--uncovered", "2"],
            "line 2 holds no statement of the function",
        ),
        (
            &["--function", "f", "--uncovered", "6"],
            "line 6 holds no statement of the function",
        ),
    ];
    for (args, want) in cases {
        let out = eliminate(&file, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = stderr(&out);
        assert!(
            e.contains(&format!("{}: {want}", file.display())),
            "{args:?}: {e}"
        );
    }
    std::fs::write(&file, "def f(:\n    pass\n").unwrap();
    let e = stderr(&eliminate(&file, &["--function", "f", "--uncovered", "2"]));
    assert!(
        e.contains("the file does not parse: line 1, column 7"),
        "{e}"
    );
    let e = stderr(&eliminate(
        &dir.path().join("none.py"),
        &["--function", "f", "--uncovered", "2"],
    ));
    assert!(e.contains("none.py: cannot read the source"), "{e}");
    // A FIFO is refused, not waited on.
    let fifo = dir.path().join("fifo.py");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = stderr(&eliminate(&fifo, &["--function", "f", "--uncovered", "2"]));
    assert!(e.contains("not a regular file"), "{e}");
    let out = eliminate(&file, &["--function", "f"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn slices_of_real_functions_reach_uncovered_lines_with_the_same_values() {
    let python = python_venv(
        "eliminate",
        Some(&root().join("tests/eliminate/requirements.lock")),
    );
    let out = Command::new(python)
        .arg(root().join("tests/eliminate/property.py"))
        .arg(env!("CARGO_BIN_EXE_critic"))
        .env("CRITIC_CACHE_DIR", cache_dir())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let functions = v["functions"].as_array().unwrap();
    assert_eq!(functions.len(), 6, "{report}");
    for f in functions {
        assert!(f["checked_runs"].as_u64().unwrap() > 0, "{report}");
    }
    println!("{report}");
}
