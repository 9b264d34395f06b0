//! Promise 25 of docs/SECURITY.md: `critic hook install` and `uninstall`
//! change only the critic's own entry of an agent's configuration, refuse
//! what they must not rewrite, and give the check a time limit within the
//! agent's timeout.

use super::*;

/// A configuration file of `agent` holding a hook and a setting of someone else's.
fn foreign_config(agent: &str) -> (&'static str, Value) {
    let theirs = json!({"type": "command", "command": "notify-send done", "timeout": 5});
    match agent {
        "claude-code" => (
            ".claude/settings.json",
            json!({"model": "x", "hooks": {"Stop": [{"hooks": [theirs]}]}}),
        ),
        "codex" => (
            ".codex/hooks.json",
            json!({"hooks": {"Stop": [{"hooks": [theirs]}], "PreToolUse": [{"hooks": [theirs]}]}}),
        ),
        "gemini" => (
            ".gemini/settings.json",
            json!({"hooksConfig": {"enabled": true}, "hooks": {"AfterAgent": [{"hooks": [theirs]}]}}),
        ),
        "openhands" => (
            ".openhands/hooks.json",
            json!({"hooks": {"Stop": [{"matcher": "*", "hooks": [theirs]}]}}),
        ),
        "copilot" => (
            ".github/hooks/pluggable-critic.json",
            json!({"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./audit.sh"}]}}),
        ),
        "cursor" => (
            ".cursor/hooks.json",
            json!({"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}], "afterFileEdit": [{"command": "./fmt.sh"}]}}),
        ),
        _ => unreachable!(),
    }
}

#[test]
fn install_and_uninstall_leave_every_foreign_hook_intact() {
    let project = tempfile::tempdir().unwrap();
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let (rel, foreign) = foreign_config(agent);
        let file = project.path().join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let written = serde_json::to_string_pretty(&foreign).unwrap();
        std::fs::write(&file, &written).unwrap();
        let install = || {
            run(critic()
                .args(["hook", "install", agent, "--project"])
                .arg(project.path())
                .arg("--skill")
                .arg(&ran_tests)
                .args(["--", "--max-rejections", "3"]))
        };
        let out = install();
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("added"),
            "{agent}"
        );
        let installed = std::fs::read_to_string(&file).unwrap();
        assert!(
            installed.contains("hook") && installed.contains(&format!("hook {agent} --skill")),
            "{agent}: {installed}"
        );
        assert!(installed.contains("--max-rejections 3"));
        // Idempotent.
        let out = install();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("already"),
            "{agent}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);

        let out = run(critic()
            .args(["hook", "uninstall", agent, "--project"])
            .arg(project.path()));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written, "{agent}");
    }
}

#[test]
fn install_and_uninstall_keep_the_agents_example_settings_byte_for_byte() {
    for &(agent, rel, fixture, command_at) in AGENT_SETTINGS {
        let original =
            std::fs::read_to_string(common::fixture("agent-settings").join(fixture)).unwrap();
        assert_install_round_trip(agent, rel, &original, command_at);
    }
}

// Gemini CLI's package ships an example hooks file of its own: installed
// into, then uninstalled from, it comes back byte for byte.
#[test]
fn install_and_uninstall_keep_gemini_clis_own_example_hooks_file() {
    let gemini = common::agents::npm_bin("gemini");
    let package = gemini
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("@google/gemini-cli/bundle/examples/hooks/hooks/hooks.json");
    let original =
        std::fs::read_to_string(&package).unwrap_or_else(|e| panic!("{}: {e}", package.display()));
    assert_install_round_trip(
        "gemini",
        ".gemini/settings.json",
        &original,
        "/hooks/AfterAgent/0/hooks/0/command",
    );
}

/// `critic hook install` into `original` (the agent's file `rel` of a
/// project) adds one run of text and changes no other byte, puts the
/// command at `command_at`, changes nothing when run again, and `uninstall`
/// gives `original` back byte for byte.
fn assert_install_round_trip(agent: &str, rel: &str, original: &str, command_at: &str) {
    let ran_tests = skill("ran-tests");
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, original).unwrap();
    let install = || {
        run(critic()
            .args(["hook", "install", agent, "--project"])
            .arg(project.path())
            .arg("--skill")
            .arg(&ran_tests))
    };
    let out = install();
    assert!(out.status.success(), "{agent}: {}", stderr(&out));
    let installed = std::fs::read_to_string(&file).unwrap();
    // The install inserted one run of text, and every other byte is the
    // file's own: no number, escape or line of it was rewritten.
    let head = common_prefix(original, &installed);
    let tail = common_prefix(
        &original[head..].chars().rev().collect::<String>(),
        &installed[head..].chars().rev().collect::<String>(),
    );
    assert_eq!(head + tail, original.len(), "{agent}:\n{installed}");
    let added = &installed[head..installed.len() - tail];
    assert!(
        added.contains(&format!("hook {agent} --skill")),
        "{agent}: {added}"
    );
    // ... where the agent reads it.
    let doc: Value = serde_json::from_str(&installed).unwrap();
    let command = doc.pointer(command_at).and_then(Value::as_str);
    assert!(
        command.is_some_and(|c| c.contains(&format!("hook {agent} --skill"))),
        "{agent}: {installed}"
    );
    let out = install();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already"),
        "{agent}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        installed,
        "{agent}"
    );

    let out = run(critic()
        .args(["hook", "uninstall", agent, "--project"])
        .arg(project.path()));
    assert!(out.status.success(), "{agent}: {}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{agent}");
}

/// The length in bytes of the longest common prefix of `a` and `b`, whole
/// characters only.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

#[test]
fn install_refuses_a_skill_it_cannot_load_and_a_file_it_cannot_read() {
    let project = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args([
            "hook",
            "install",
            "claude-code",
            "--skill",
            "/no/such/skill",
            "--project",
        ])
        .arg(project.path()));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("/no/such/skill"));
    assert!(!project.path().join(".claude").exists(), "nothing written");

    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ \"model\": \"x\", }").unwrap();
    let out = run(critic()
        .args(["hook", "install", "claude-code", "--project"])
        .arg(project.path())
        .arg("--skill")
        .arg(skill("ran-tests")));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("settings.json") && stderr(&out).contains("line 1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{ \"model\": \"x\", }"
    );
}

#[test]
fn install_refuses_files_it_must_not_rewrite() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let install = || {
        run(critic()
            .args(["hook", "install", "claude-code", "--project"])
            .arg(project.path())
            .arg("--skill")
            .arg(skill("ran-tests")))
    };
    std::os::unix::fs::symlink(project.path().join("dotfiles/settings.json"), &settings).unwrap();
    let out = install();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&settings)
        .unwrap()
        .file_type()
        .is_symlink());

    std::fs::remove_file(&settings).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = install();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{}");
}

#[test]
fn install_refuses_another_users_file() {
    use std::os::unix::fs::MetadataExt;
    // Only root can give a file away.
    common::as_root_to_act_as_another_user();
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    std::os::unix::fs::chown(&settings, Some(65534), Some(65534)).unwrap();
    let out = run(critic()
        .args(["hook", "install", "claude-code", "--project"])
        .arg(project.path())
        .arg("--skill")
        .arg(skill("ran-tests")));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("owned by user 65534"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::metadata(&settings).unwrap().uid(), 65534);
}

// The hook's check must answer before the agent gives up on the hook:
// `install` gives it a time limit a margin below the timeout it writes,
// in each agent's unit, and refuses one the agent would cut short.
#[test]
fn install_gives_the_check_a_time_limit_within_the_agents_timeout() {
    let ran_tests = skill("ran-tests");
    for (agent, rel, timeout_at) in [
        (
            "claude-code",
            ".claude/settings.json",
            "/hooks/Stop/0/hooks/0/timeout",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "/hooks/AfterAgent/0/hooks/0/timeout",
        ),
        (
            "copilot",
            ".github/hooks/pluggable-critic.json",
            "/hooks/agentStop/0/timeoutSec",
        ),
    ] {
        let project = tempfile::tempdir().unwrap();
        let install = |more: &[&str]| {
            run(critic()
                .args(["hook", "install", agent, "--project"])
                .arg(project.path())
                .arg("--skill")
                .arg(&ran_tests)
                .args(more))
        };
        let out = install(&["--timeout", "120"]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let doc: Value =
            serde_json::from_slice(&std::fs::read(project.path().join(rel)).unwrap()).unwrap();
        let unit = if agent == "gemini" { 1000 } else { 1 };
        assert_eq!(doc.pointer(timeout_at), Some(&json!(120 * unit)), "{doc:#}");
        assert!(
            doc.to_string().contains("--time-limit 108"),
            "{agent}: {doc:#}"
        );
        for (more, why) in [
            (&["--timeout", "5"][..], "at least 10 s"),
            (
                &["--timeout", "120", "--", "--time-limit", "115"][..],
                "at most 108 s",
            ),
        ] {
            let out = install(more);
            assert!(!out.status.success(), "{agent} {more:?}");
            assert!(stderr(&out).contains(why), "{}", stderr(&out));
        }
        // One within it is kept as given.
        let out = install(&["--timeout", "120", "--", "--time-limit", "60"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = std::fs::read_to_string(project.path().join(rel)).unwrap();
        assert!(
            text.contains("--time-limit 60") && !text.contains("--time-limit 108"),
            "{text}"
        );
    }
}

// A project-scope install's own configuration file is not part of the
// agent's work: it is kept out of the judged patch, and uninstall removes
// what install made (the file, its directory, the exclude line) when
// nothing else is in it.
#[test]
fn a_project_install_stays_out_of_the_patch_and_uninstall_leaves_nothing_behind() {
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let repo = Repo::demo();
        let exclude = repo.path().join(".git/info/exclude");
        let before = std::fs::read_to_string(&exclude).unwrap_or_default();
        let out = run(critic()
            .args(["hook", "install", agent, "--project"])
            .arg(repo.path())
            .arg("--skill")
            .arg(&ran_tests));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let untracked = Command::new("git")
            .args(["ls-files", "--others", "--exclude-standard"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&untracked.stdout),
            "",
            "{agent}: the install's file is not in the patch"
        );
        let out = run(critic()
            .args(["hook", "uninstall", agent, "--project"])
            .arg(repo.path()));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let left = Command::new("git")
            .args(["status", "--porcelain", "--ignored"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&left.stdout), "", "{agent}");
        assert_eq!(
            std::fs::read_to_string(&exclude).unwrap_or_default(),
            before
        );
    }
    // The help names how a hook is answered, for every agent.
    let help = run(critic().args(["hook", "--help"]));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("critic hook <AGENT>"), "{help}");
    for agent in AGENTS {
        assert!(help.contains(agent), "{agent}: {help}");
    }
}
