//! Unit tests of `workspace`.

use super::*;

#[test]
fn diff_errors_say_what_was_expected_and_quote_nothing() {
    let secret = "hunter2";
    for (raw, place, words) in [
        (format!("{secret}\n"), ":1:1:", "expected a `diff --git"),
        (
            format!("{secret}\n@@ -1 +1 @@\n"),
            ":2:1:",
            "no file's header before it",
        ),
        (format!("diff --git {secret}\n"), ":1:1:", "two paths"),
        (
            format!("diff --git a/x b/x\n@@ -1,{secret} +1 @@\n"),
            ":2:1:",
            "malformed hunk header",
        ),
        (
            format!("diff --git a/x b/x\n@@ -1 +4294967295,3 @@ {secret}\n"),
            ":2:1:",
            "lines past",
        ),
        (
            format!("diff --git a/x b/x\n@@ -1 +1 @@ {secret}\n{secret}\n"),
            ":3:1:",
            "none of those its hunk still owes",
        ),
        (
            "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n".to_string(),
            ":4:1:",
            "ends inside a hunk",
        ),
    ] {
        let e = parse_patch(raw, "base", PatchOrigin::File, "p.diff", &defaults())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("p.diff{place} not a valid git diff: ")),
            "{e}"
        );
        assert!(e.contains(words), "{e}");
        assert!(!e.contains(secret), "{e}");
    }
}

fn defaults() -> TestClassifier {
    let p: Vec<String> = DEFAULT_TEST_PATTERNS
        .iter()
        .map(|s| s.to_string())
        .collect();
    TestClassifier::new(&p).unwrap()
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn an_edit_in_the_second_the_index_was_written_is_seen() {
    // The racy-git case, made deterministic: the file, its index entry
    // and the index itself all carry one past second, and the edit keeps
    // the file's size and that timestamp. Only git's rereading of
    // "racily clean" entries (a file changed in the second its index was
    // written) can see the edit, and only if the index git reads still
    // carries that second.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("a.py");
    let stamp = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let set = |path: &Path| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(stamp)
            .unwrap()
    };
    std::fs::write(&file, "x = 1\n").unwrap();
    set(&file);
    git(&root, &["init", "-q"]);
    git(&root, &["config", "core.trustctime", "false"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "base"]);
    std::fs::write(&file, "x = 2\n").unwrap();
    set(&file);
    set(&root.join(".git/index"));
    let ws = Workspace::open(&root).unwrap();
    let patch = ws
        .worktree_patch(&ws.head, &TestClassifier::new(&[]).unwrap())
        .unwrap();
    assert!(patch.raw.contains("+x = 2"), "edit missed:\n{}", patch.raw);
}

#[test]
fn native_untracked_sections_match_git_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let write = |p: &str, text: &[u8]| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("a.py", b"x = 1\n");
    write("m/z.py", b"z = 1\n");
    write(".gitignore", b"*.log\n");
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "base"]);
    write("a.py", b"x = 2\n");
    write("m/z.py", b"z = 1\nzz = 2\n");
    write("a/b.py", b"def f():\n    return 1\n");
    write("a-b.py", b"no newline at end");
    write("one.py", b"single\n");
    write("empty.py", b"");
    write(
        "with space/t\u{e9}st \u{e9}.py",
        "caf\u{e9} = 1\n".as_bytes(),
    );
    write(
        "tests/test_new.py",
        b"import a\n\n\ndef test_x():\n    assert a.x == 2\n",
    );
    // Names git would read as globs or pathspec magic.
    write("*.py", b"star = 1\n");
    write(":(exclude)a.py", b"magic = 1\n");
    write("debug.log", b"ignored\n");
    let git_dir = root.join(".git");
    let head = Workspace::open(&root).unwrap().head;
    let native = diff_with(&root, &git_dir, &head, true).unwrap();
    let reference = diff_with(&root, &git_dir, &head, false).unwrap();
    assert!(
        native.contains("+++ b/with space/t\u{e9}st \u{e9}.py"),
        "{native}"
    );
    assert!(native.contains("\\ No newline at end of file"), "{native}");
    assert!(native.contains("+++ b/*.py") && native.contains("+++ b/:(exclude)a.py"));
    assert!(!native.contains("debug.log"));
    assert_eq!(native, reference);
    // A deletion next to a new file may be a rename: git decides.
    write("m/z.py", b"z = 1\n");
    std::fs::rename(root.join("m/z.py"), root.join("m/moved.py")).unwrap();
    let native = diff_with(&root, &git_dir, &head, true).unwrap();
    assert!(native.contains("rename from m/z.py"), "{native}");
    assert_eq!(native, diff_with(&root, &git_dir, &head, false).unwrap());
}

#[test]
fn the_python_sdk_has_the_same_default_test_patterns() {
    let py = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("critic-sdk-py/critic_sdk/glob.py"),
    )
    .unwrap();
    let tuple = py
        .split_once("DEFAULT_TEST_PATTERNS = (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(inside, _)| inside)
        .expect("glob.py defines DEFAULT_TEST_PATTERNS as a tuple");
    let python: Vec<&str> = tuple
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(python, DEFAULT_TEST_PATTERNS);
}

#[test]
fn default_patterns_classify_common_layouts() {
    let c = defaults();
    for t in [
        "tests/test_calc.py",
        "test_calc.py",
        "pkg/tests/helpers.py",
        "calc_test.py",
        "reproduction.py",
        "web/src/app.test.ts",
        "conftest.py",
    ] {
        assert!(c.is_test(t), "{t} should be a test");
    }
    for s in [
        "src/calc.py",
        "testing.py",
        "pkg/contest.py",
        "lib/reproduction.py",
    ] {
        assert!(!c.is_test(s), "{s} should be source");
    }
}

#[test]
fn classifier_agrees_with_globset() {
    let patterns = [
        "**/test_*.py",
        "**/tests/**",
        "src/*.rs",
        "docs/**/*.md",
        "[ab]?.txt",
        "*.{yml,yaml}",
        "odd name/**",
    ];
    let owned: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    let ours = TestClassifier::new(&owned).unwrap();
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        set.add(GlobBuilder::new(p).literal_separator(true).build().unwrap());
    }
    let set = set.build().unwrap();
    for path in [
        "test_a.py",
        "x/y/test_a.py",
        "x/test_a.pyc",
        "tests",
        "tests/a",
        "a/tests/b/c",
        "src/main.rs",
        "src/bin/main.rs",
        "docs/a.md",
        "docs/x/y/a.md",
        "a1.txt",
        "c1.txt",
        "ab.txt",
        "ci.yml",
        "x/ci.yaml",
        "odd name/f",
        "caf\u{e9}/tests/t.py",
        "",
    ] {
        assert_eq!(ours.is_test(path), set.is_match(path), "{path:?}");
    }
    assert!(!TestClassifier::new(&[]).unwrap().is_test("tests/a.py"));
}
