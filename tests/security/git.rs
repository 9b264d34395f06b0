//! Promises 9c and 9g of docs/SECURITY.md: nothing a repository's configuration
//! names runs with the host's rights, and no git call of the host's waits
//! forever or outlives an interrupted check.

use super::*;

// 9c. The repository's own configuration is the agent's to write: nothing
// it names (hooks, the file-system monitor, filter drivers, in a
// submodule too) may run with the host's rights, in a check or while a
// scratch copy is made.
#[test]
fn repository_configuration_cannot_make_the_host_run_programs() {
    let marks = tempfile::tempdir().unwrap();
    let mark = |name: &str| format!("sh -c 'touch {}/{name}; cat'", marks.path().display());
    let inner = Repo::new(&[(".gitattributes", "* filter=sub\n"), ("a.txt", "a\n")]);
    let repo = Repo::new(&[
        (
            ".gitattributes",
            "*.py filter=evil\n*.txt filter=a=b\n*.dat filter=user\n",
        ),
        ("m.py", "x = 1\n"),
        ("n.txt", "t\n"),
        ("g.dat", "g\n"),
    ]);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        inner.path().to_str().unwrap(),
        "sub",
    ]);
    repo.git(&["commit", "-qm", "sub"]);
    let hooks = marks.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "post-index-change",
        "post-checkout",
        "reference-transaction",
    ] {
        let path = hooks.join(hook);
        std::fs::write(&path, format!("#!/bin/sh\n{}\n", mark(hook))).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let included = marks.path().join("included.cfg");
    std::fs::write(
        &included,
        format!("[filter \"inc\"]\n\tclean = \"{}\"\n", mark("included")),
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".git/info/attributes"),
        "*.md filter=inc\n",
    )
    .unwrap();
    for (key, value) in [
        ("core.fsmonitor", mark("fsmonitor")),
        ("core.hooksPath", hooks.display().to_string()),
        ("filter.evil.clean", mark("clean")),
        ("filter.evil.smudge", mark("smudge")),
        ("filter.a=b.process", mark("process")),
        ("filter.a=b.required", "true".into()),
        ("include.path", included.display().to_string()),
        ("diff.external", mark("external")),
        ("core.pager", mark("pager")),
    ] {
        repo.git(&["config", key, &value]);
    }
    let sub = repo.path().join("sub");
    let sub_git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&sub)
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?} in the submodule");
    };
    // A new commit in the submodule, which `diff.submodule=diff` would diff
    // with a git started inside it, under its own external diff.
    std::fs::write(sub.join("b.txt"), "b\n").unwrap();
    sub_git(&["add", "b.txt"]);
    sub_git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@l",
        "commit",
        "-qm",
        "b",
    ]);
    sub_git(&["config", "filter.sub.clean", &mark("submodule")]);
    sub_git(&["config", "diff.external", &mark("submodule-external")]);
    repo.git(&["config", "diff.submodule", "diff"]);
    // The agent's edits: tracked files of each filter, new files, the
    // submodule's file.
    repo.write("m.py", "x = 2\n");
    repo.write("n.txt", "u\n");
    repo.write("README.md", "new\n");
    repo.write("new.py", "y = 1\n");
    repo.write("sub/a.txt", "b\n");

    // A filter of the user's own configuration (Git LFS's, say) is off too:
    // such a program reads names of further programs from the repository.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!("[filter \"user\"]\n\tclean = \"{}\"\n", mark("global")),
    )
    .unwrap();
    // A diff driver whose function-name pattern backtracks for hours.
    let redos = "(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2\\1c";
    repo.git(&["config", "diff.slow.xfuncname", redos]);
    std::fs::write(
        repo.path().join(".git/info/attributes"),
        "*.md filter=inc\n*.py diff=slow\n",
    )
    .unwrap();
    repo.write("g.dat", "h\n");
    let line = format!("{}\n", "a".repeat(80));
    repo.write("m.py", &format!("{}x = 2\n", line.repeat(10)));

    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["sh", "-c", "head -c 6 m.py; cat n.txt"]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (code, v, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("HOME", home.path())
            .env("CRITIC_GIT_TIMEOUT", "30")
            // Would make `git config` read that file alone, hiding the
            // repository's drivers from the host.
            .env("GIT_CONFIG", "/dev/null"),
    );
    assert_eq!(code, 0, "{err}\n{v:#}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    let result = &v["signals"][0]["metadata"]["results"][0];
    assert_eq!(result["stdout"], "x = 1\nt\n", "{result:#}");
    assert_eq!(listing(marks.path()), ["hooks", "included.cfg"]);

    // Armed: the same repository runs them for git itself (the pattern
    // aside, which would hold this test for hours).
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "diff.slow.xfuncname=x^",
            "diff",
            "--no-ext-diff",
            "HEAD",
        ])
        .current_dir(repo.path())
        .env("HOME", home.path())
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "filter.a=b.required")
        .env("GIT_CONFIG_VALUE_0", "false")
        .output()
        .unwrap();
    assert!(out.status.success() || !out.stderr.is_empty());
    let ran = listing(marks.path());
    for armed in ["clean", "fsmonitor", "global"] {
        assert!(ran.contains(&armed.to_string()), "{armed}: {ran:?}");
    }
}

// 9c (race). The configuration is read once per check: a process the agent
// left running that swaps `.git/config` in a loop never gets a filter past
// the host's vetting.
#[test]
fn a_configuration_swapped_during_checks_runs_nothing() {
    let marks = tempfile::tempdir().unwrap();
    let repo = Repo::new(&[
        (".gitattributes", "*.py filter=evil\n"),
        ("m.py", "x = 1\n"),
    ]);
    let config = repo.path().join(".git/config");
    let benign = std::fs::read_to_string(&config).unwrap();
    let evil = format!(
        "{benign}[filter \"evil\"]\n\tclean = \"sh -c 'touch {}/ran; cat'\"\n",
        marks.path().display()
    );
    let (benign_file, evil_file) = (repo.path().join(".git/b"), repo.path().join(".git/e"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, config) = (stop.clone(), config.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (file, text) in [(&benign_file, &benign), (&evil_file, &evil)] {
                    std::fs::write(file, text).unwrap();
                    std::fs::rename(file, &config).unwrap();
                }
            }
        })
    };
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    for i in 0..15 {
        // A tracked file changed each time, so git reads it through the filter.
        repo.write("m.py", &format!("x = {i}\n"));
        let (code, _, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert_eq!(code, 0, "{err}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(listing(marks.path()).is_empty(), "a filter ran in the host");
}

// 9c''. With the repository's configuration clean, a filter of the user's
// own (a system- or user-wide Git LFS) is still off: the host cannot vet
// what such a program reads from the repository.
#[test]
fn a_filter_of_the_users_own_configuration_does_not_run() {
    let marks = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!(
            "[filter \"user\"]\n\tclean = \"sh -c 'touch {}/ran; cat'\"\n",
            marks.path().display()
        ),
    )
    .unwrap();
    let repo = Repo::new(&[(".gitattributes", "*.dat filter=user\n"), ("g.dat", "g\n")]);
    repo.write("g.dat", "h\n");
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, _, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).env("HOME", home.path()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        listing(marks.path()).is_empty(),
        "the filter ran in the host"
    );
    // Armed: git itself runs it.
    let out = std::process::Command::new("git")
        .args(["diff", "--no-ext-diff", "HEAD"])
        .current_dir(repo.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(listing(marks.path()), ["ran"]);
}

// 9c'. `core.worktree` in the agent's configuration cannot point the host's
// diff at a directory outside the workspace (whose files would reach every
// detector, and any model one calls).
#[test]
fn the_diff_stays_in_the_workspace_whatever_core_worktree_says() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY\n").unwrap();
    let repo = Repo::demo();
    repo.write("new.py", "x = 1\n");
    repo.git(&["config", "core.worktree", outside.path().to_str().unwrap()]);
    let skill = skill_with(json!({"mode": "echo"}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(!v.to_string().contains("id_rsa"), "{v:#}");
    assert!(!err.contains("PRIVATE KEY"), "{err}");
    if code == 0 {
        let files = v["signals"][0]["metadata"]["files"].to_string();
        assert!(files.contains("new.py"), "{files}");
    } else {
        assert!(err.contains("core.worktree"), "{err}");
    }
}

// 9g. git reads files the agent controls; one that never ends (a FIFO as
// `.gitignore`, or as the configured excludes file) stops git at its
// timeout, and the finish is a rejection that says why (the agent caused
// it, so it must not stop unchecked).
#[test]
fn git_cannot_be_made_to_wait_forever() {
    let skill = skill_with(json!({"mode": "pass"}), "");
    for planted in ["work tree", "config", "HEAD"] {
        let repo = Repo::demo();
        // An untracked directory's: git reads it while listing new files.
        let fifo = repo.path().join("pkg/.gitignore");
        std::fs::create_dir(repo.path().join("pkg")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        if planted == "HEAD" {
            let head = repo.path().join(".git/HEAD");
            std::fs::remove_file(&head).unwrap();
            std::fs::rename(&fifo, &head).unwrap();
        }
        if planted == "config" {
            let outside = repo.path().join(".git/excludes");
            std::fs::rename(&fifo, &outside).unwrap();
            repo.git(&["config", "core.excludesFile", outside.to_str().unwrap()]);
        }
        let state = tempfile::tempdir().unwrap();
        let mut child = check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_GIT_TIMEOUT", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("{planted}: the check hung");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{planted}: {err}");
        assert!(
            err.contains("did not finish within 1 s") && err.contains("counted as a rejection"),
            "{planted}: {err}"
        );
    }
}

// 9g'. An interrupted check takes a git process that has been running for a
// while, and its private index copy, with it; a killed one's index copy is
// swept by the next check.
#[test]
fn an_interrupted_check_leaves_no_git_process_or_index_copy() {
    let repo = Repo::demo();
    std::fs::create_dir(repo.path().join("pkg")).unwrap();
    let fifo = repo.path().join("pkg/.gitignore");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let skill = skill_with(json!({"mode": "pass"}), "");
    let state = tempfile::tempdir().unwrap();
    let hanging = || {
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_GIT_TIMEOUT", "60")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let children = |pid: u32| -> Vec<u32> {
        let mut out = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
        {
            let list = std::fs::read_to_string(task.unwrap().path().join("children"));
            out.extend(
                list.unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        out
    };
    // The git process listing new files waits on the FIFO; find it and the
    // index copy it was given.
    let git_of = |critic: u32| -> (u32, PathBuf) {
        let started = Instant::now();
        loop {
            let found = children(critic).into_iter().find_map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                if !String::from_utf8_lossy(&cmdline).contains("ls-files") {
                    return None;
                }
                let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
                let index = environ
                    .split(|&b| b == 0)
                    .find_map(|v| v.strip_prefix(b"GIT_INDEX_FILE="))?;
                Some((
                    pid,
                    PathBuf::from(String::from_utf8_lossy(index).into_owned()),
                ))
            });
            if let Some(found) = found {
                return found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "git never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let gone = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };

    let mut child = hanging();
    let (git, index) = git_of(child.id());
    assert!(index.exists());
    // Once git has run for a second, the host arms its interrupt handler
    // (it counts the process as worth cleaning up after): wait for that,
    // seen in the signals it catches.
    let catches_sigterm = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
                u64::from_str_radix(mask.trim(), 16).ok()
            })
            .is_some_and(|mask| mask & (1 << (libc::SIGTERM - 1)) != 0)
    };
    let armed = Instant::now();
    while !catches_sigterm(child.id()) {
        assert!(
            armed.elapsed() < Duration::from_secs(20),
            "the host never armed its handler"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(!index.exists(), "{} left behind", index.display());
    let waited = Instant::now();
    while !gone(git) {
        assert!(
            waited.elapsed() < Duration::from_secs(5),
            "git {git} still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Killed outright, it cannot clean up; the next check sweeps the copy.
    // Other tests' checks run meanwhile and sweep a dead check's copy too,
    // so its existence is asserted while its check still lives.
    let mut child = hanging();
    let (git, index) = git_of(child.id());
    assert!(index.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    // SAFETY: kill(2) on the orphaned git process this test made.
    unsafe { libc::kill(git as i32, libc::SIGKILL) };
    std::fs::remove_file(&fifo).unwrap();
    let (code, _, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert!(!index.exists(), "{} not swept", index.display());
}
