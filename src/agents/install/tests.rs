//! Unit tests of `install`.

use super::*;
use serde_json::json;

const GROUPED: HookConfig = HookConfig {
    project_file: ".agent/settings.json",
    user_file: None,
    shape: Shape::Grouped {
        event: "Stop",
        matcher: None,
        timeout_millis: false,
    },
    note: None,
};

const LISTED: HookConfig = HookConfig {
    project_file: ".agent/hooks.json",
    user_file: None,
    shape: Shape::Listed {
        event: "stop",
        command_key: "command",
        timeout_key: None,
        extra: &[],
    },
    note: None,
};

#[test]
fn a_skill_or_state_directory_inside_the_project_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("critic-skill")).unwrap();
    let outside = dir.path().join("skill");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(project.join("critic-skill"), dir.path().join("link")).unwrap();
    assert!(refuse_within_project(&project, &outside, None).is_ok());
    assert!(refuse_within_project(&project, &outside, Some(&dir.path().join("state"))).is_ok());
    for (skill, state) in [
        (project.join("critic-skill"), None),
        // A link from outside into the project is inside it.
        (dir.path().join("link"), None),
        (outside.clone(), Some(project.join(".state"))),
        // A relative state directory is the project's.
        (outside.clone(), Some(PathBuf::from(".critic-state"))),
    ] {
        let e = refuse_within_project(&project, &skill, state.as_deref()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("inside the project") && text.contains("nothing was installed"),
            "{text}"
        );
    }
}

#[test]
fn recognizes_only_its_own_commands() {
    let cmd = command_line(
        Path::new("/opt/my tools/critic"),
        "claude-code",
        &["--skill".into(), "/s k".into()],
    );
    assert_eq!(
        cmd,
        "'/opt/my tools/critic' hook claude-code --skill '/s k'"
    );
    assert!(is_critic_hook(&cmd, "claude-code"));
    assert!(!is_critic_hook(&cmd, "codex"));
    assert!(!is_critic_hook(
        "/bin/critics hook claude-code",
        "claude-code"
    ));
    assert!(!is_critic_hook(
        "echo critic hook claude-code",
        "claude-code"
    ));
    assert!(!is_critic_hook("critic check --skill x", "claude-code"));
    assert!(!is_critic_hook(
        "critic hook claude-code --skill x; rm -rf ~",
        "claude-code"
    ));
    assert!(!is_critic_hook(
        "critic hook claude-code --skill $(pwd)",
        "claude-code"
    ));
    assert!(is_critic_hook(
        "critic hook claude-code --skill '/a;b'",
        "claude-code"
    ));
    assert!(!is_critic_hook("'unterminated", "claude-code"));
}

#[test]
fn grouped_install_keeps_foreign_hooks_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    let foreign = json!({
        "model": "x",
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
        }
    });
    std::fs::write(&file, serde_json::to_string_pretty(&foreign).unwrap()).unwrap();
    let cmd = "/bin/critic hook claude-code --skill /s";
    assert_eq!(
        install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
        Change::Added
    );
    let once = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
        Change::Unchanged
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), once);
    let doc: Value = serde_json::from_str(&once).unwrap();
    assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["command"], cmd);
    // Keys keep their order: "model" first, as the user wrote it.
    assert!(once.find("\"model\"").unwrap() < once.find("\"hooks\"").unwrap());
    let other = "/bin/critic hook claude-code --skill /other";
    assert_eq!(
        install(&GROUPED, &file, "claude-code", other, 600).unwrap(),
        Change::Replaced
    );
    assert_eq!(
        uninstall(&GROUPED, &file, "claude-code").unwrap(),
        Change::Removed(1)
    );
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(back, foreign);
}

#[test]
fn a_critic_hook_sharing_a_group_leaves_the_others() {
    let doc = json!({"hooks": {"Stop": [{"matcher": "", "hooks": [
        {"type": "command", "command": "critic hook claude-code --skill /a"},
        {"type": "command", "command": "critic hook claude-code --skill /a && notify-send done"},
        {"type": "command", "command": "/opt/other/critic hook claude-code --lint"},
        {"type": "command", "command": "say done"}
    ]}]}});
    let mut doc = Document::parse(&doc.to_string()).unwrap();
    let (removed, _) = GROUPED.remove(&mut doc.root, "claude-code", true).unwrap();
    assert_eq!(removed, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&doc.print()).unwrap(),
        json!({"hooks": {"Stop": [{"matcher": "", "hooks": [
            {"type": "command", "command": "critic hook claude-code --skill /a && notify-send done"},
            {"type": "command", "command": "/opt/other/critic hook claude-code --lint"},
            {"type": "command", "command": "say done"}
        ]}]}})
    );
}

#[test]
fn listed_install_and_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hooks.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}"#,
    )
    .unwrap();
    let cmd = "critic hook cursor --skill /s";
    assert_eq!(
        install(&LISTED, &file, "cursor", cmd, 60).unwrap(),
        Change::Added
    );
    // The new entry is laid out like the one beside it.
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}, {"command": "critic hook cursor --skill /s"}]}}"#
    );
    assert_eq!(
        uninstall(&LISTED, &file, "cursor").unwrap(),
        Change::Removed(1)
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        r#"{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}"#
    );
    assert_eq!(
        uninstall(&LISTED, &file, "cursor").unwrap(),
        Change::Removed(0)
    );
}

#[test]
fn a_replaced_entry_keeps_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hooks.json");
    let old = "critic hook cursor --skill /old";
    std::fs::write(
        &file,
        json!({"version": 1, "hooks": {"stop": [
            {"command": "./first.sh"}, {"command": old}, {"command": "./last.sh"}
        ]}})
        .to_string(),
    )
    .unwrap();
    let new = "critic hook cursor --skill /new";
    assert_eq!(
        install(&LISTED, &file, "cursor", new, 60).unwrap(),
        Change::Replaced
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["hooks"]["stop"][1]["command"], new, "{doc}");
    assert_eq!(doc["hooks"]["stop"][2]["command"], "./last.sh");
}

#[test]
fn a_broken_file_is_left_alone_with_the_place_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, "{\n  \"hooks\": {,\n}").unwrap();
    let e = install(&GROUPED, &file, "claude-code", "critic hook claude-code", 5).unwrap_err();
    assert!(e.to_string().contains("line 2, column 13"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"hooks\": {,\n}"
    );
    std::fs::write(&file, "[1]").unwrap();
    assert!(install(&GROUPED, &file, "claude-code", "c", 5).is_err());
    std::fs::write(&file, r#"{"hooks": {"Stop": "oops"}}"#).unwrap();
    let e = install(&GROUPED, &file, "claude-code", "c", 5).unwrap_err();
    assert!(e.to_string().contains("hooks.Stop"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        r#"{"hooks": {"Stop": "oops"}}"#
    );
}

#[test]
fn writes_through_a_symlink_and_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles-settings.json");
    std::fs::write(&real, "{}").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    install(&GROUPED, &link, "claude-code", "critic hook claude-code", 5).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("critic hook"));
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

/// A settings file holding what serde_json's `Value` would change:
/// integers past u64 and f64, a decimal longer than f64 holds, -0.0, 1.0
/// beside 1, exponents, a trailing zero, escapes, nested containers, a
/// key given twice, and a layout of the user's own.
const FOREIGN: &str = r##"{
  "cleanupPeriodDays": 12345678901234567890123,
  "ratio": 0.1000000000000000055511151231257827,
  "offset": -0.0,
  "weights": [1.0, 1, 1E+2, -1e-7, 1.50],
  "greeting": "caf\u00e9 \/ \"quoted\" \ud83d\ude00\ttab",
  "nested": [[[]], {"a": [{"b": null}]}, {}],
  "env": {"MODE": "first", "MODE": "second"},
  "hooks": {
    "Stop": [
      {
        "matcher": "",
        "hooks": [
          { "type": "command", "command": "notify-send done", "timeout": 30.0 }
        ]
      }
    ],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
  }
}
"##;

#[test]
fn install_and_uninstall_keep_every_foreign_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, FOREIGN).unwrap();
    let cmd = "/bin/critic hook claude-code --skill /s";
    assert_eq!(
        install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
        Change::Added
    );
    // The one change: the critic's group after the other.
    let ours = r#",
      {
        "hooks": [
          {
            "type": "command",
            "command": "/bin/critic hook claude-code --skill /s",
            "timeout": 600
          }
        ]
      }"#;
    let at = FOREIGN.find("\n    ],\n    \"PreToolUse\"").unwrap();
    let installed = format!("{}{ours}{}", &FOREIGN[..at], &FOREIGN[at..]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
    assert_eq!(
        install(&GROUPED, &file, "claude-code", cmd, 600).unwrap(),
        Change::Unchanged
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
    let other = "/bin/critic hook claude-code --skill /other";
    assert_eq!(
        install(&GROUPED, &file, "claude-code", other, 600).unwrap(),
        Change::Replaced
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        installed.replace(cmd, other)
    );
    assert_eq!(
        uninstall(&GROUPED, &file, "claude-code").unwrap(),
        Change::Removed(1)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FOREIGN);
}

#[test]
fn a_file_on_one_line_stays_on_one_line_and_keeps_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hooks.json");
    let old = r#"{"command":"critic hook cursor --skill /old"}"#;
    let text = format!(
        r#"{{"version":1,"hooks":{{"stop":[{{"command":"./audit.sh","timeout":1e400}},{old},{{"command":"./last.sh"}}]}},"limit":-0.0,"big":[12345678901234567890123,1.0]}}"#
    );
    std::fs::write(&file, &text).unwrap();
    let new = "critic hook cursor --skill /new";
    assert_eq!(
        install(&LISTED, &file, "cursor", new, 60).unwrap(),
        Change::Replaced
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text.replace(old, &format!(r#"{{"command": "{new}"}}"#))
    );
    assert_eq!(
        uninstall(&LISTED, &file, "cursor").unwrap(),
        Change::Removed(1)
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text.replace(&format!("{old},"), "")
    );
}

#[test]
fn the_files_own_indentation_and_line_ends_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    let cmd = "critic hook claude-code --skill /s";
    let crlf = |text: &str| text.replace('\n', "\r\n");
    let tabbed = crlf("{\n\t\"model\": \"x\"\n}\n");
    std::fs::write(&file, &tabbed).unwrap();
    install(&GROUPED, &file, "claude-code", cmd, 5).unwrap();
    assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            crlf(
                "{\n\t\"model\": \"x\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\n\t\t\t\t\"hooks\": [\n\
                 \t\t\t\t\t{\n\t\t\t\t\t\t\"type\": \"command\",\n\
                 \t\t\t\t\t\t\"command\": \"critic hook claude-code --skill /s\",\n\
                 \t\t\t\t\t\t\"timeout\": 5\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t]\n\t}\n}\n"
            )
        );
    uninstall(&GROUPED, &file, "claude-code").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), tabbed);

    // A new file is laid out as the examples in examples/<agent>/ are.
    std::fs::remove_file(&file).unwrap();
    install(&GROUPED, &file, "claude-code", cmd, 5).unwrap();
    assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \
             \"type\": \"command\",\n            \"command\": \"critic hook claude-code --skill /s\",\n            \
             \"timeout\": 5\n          }\n        ]\n      }\n    ]\n  }\n}\n"
        );
    std::fs::write(&file, "{}").unwrap();
    install(&GROUPED, &file, "claude-code", cmd, 5).unwrap();
    uninstall(&GROUPED, &file, "claude-code").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}

#[test]
fn a_key_given_twice_where_the_hook_goes_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    for (text, place) in [
        (r#"{"hooks": {"Stop": []}, "hooks": {}}"#, "\"hooks\""),
        (r#"{"hooks": {"Stop": [], "Stop": []}}"#, "\"hooks.Stop\""),
        (
            r#"{"hooks": {"Stop": [{"hooks": [{"command": "critic hook claude-code --skill /a", "command": "true"}]}]}}"#,
            "\"hooks.Stop[0].hooks[0].command\"",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let e = install(
            &GROUPED,
            &file,
            "claude-code",
            "critic hook claude-code --skill /s",
            5,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{place} appears more than once")),
            "{e}"
        );
        let e = uninstall(&GROUPED, &file, "claude-code").unwrap_err();
        assert!(e.to_string().contains(place), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
}

#[test]
fn uninstall_leaves_a_file_without_the_critics_entry_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    let text = "{\n  \"hooks\": {\n    \"Stop\": []\n  },\n  \"n\": 1e400\n}\n";
    std::fs::write(&file, text).unwrap();
    assert_eq!(
        uninstall(&GROUPED, &file, "claude-code").unwrap(),
        Change::Removed(0)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}
