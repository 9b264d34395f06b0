//! Promises 11a and 12 of docs/SECURITY.md: secrets a detector quotes do not
//! reach the agent, and text output escapes terminal control.

use super::*;

// 11a. Key-shaped text a detector quotes (what a run printed) is replaced
// by markers in everything the agent gets, which then says so once.
#[test]
fn secrets_a_detector_quotes_do_not_reach_the_agent() {
    let m = SECRET_MARKER;
    let key = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n\
         b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
         QyNTUxOQAAACD{m}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n\
         -----END OPENSSH PRIVATE KEY-----\n"
    );
    // A test that read the key failed with it in its assertion, and a
    // detector quoted the run's output: on one line, as pytest prints it,
    // in the follow-up; as it was, in a feedback file.
    let followup = format!(
        "tests/test_deploy.py failed:\nE   AssertionError: assert {key:?} == ''\n\
         E   and the environment had aws_secret_access_key = {m}wJalrXUtnFEMI/K7MDENG"
    );
    let report =
        format!("# Failing run\n\n{key}\nGITHUB_TOKEN=ghp_{m}0123456789abcdefghijklmnopqrs\n");
    let config = json!({
        "mode": "artifacts", "text": followup,
        "artifacts": [{"path": "run.md", "content": report}],
    });
    // A detector's error is quoted to the agent too (its first line).
    let failing = json!({"mode": "error", "text": format!("cannot call the API with ghp_{m}0123456789abcdefghijklmnopqrs")});
    let skill = temp_skill(&format!(
        "name: t\nversion: 0.1.0\nsignals:\n  \
         - {{name: quoting, type: soft, weight: 1, detector: {{misbehave}}, config: {config}}}\n  \
         - {{name: failing, type: soft, weight: 1, detector: {{misbehave}}, config: {failing}}}\n"
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}\n{v:#}");
    let followup = v["followup"].as_str().unwrap();
    let file = std::fs::read_to_string(repo.path().join(".critic/feedback/t/run.md")).unwrap();
    let texts = [
        followup,
        v["signals"][0]["followup_text"].as_str().unwrap(),
        v["signals"][1]["followup_text"].as_str().unwrap(),
        &file,
    ];
    for text in texts {
        assert!(!text.contains(m), "a secret reached the agent:\n{text}");
        assert!(!text.contains("ghp_"), "{text}");
    }
    for marker in [
        "assert \"[REDACTED: private key]\\n\" == ''",
        "aws_secret_access_key = [REDACTED: AWS secret access key]",
        "cannot call the API with [REDACTED: GitHub token]",
    ] {
        assert!(followup.contains(marker), "{marker} in:\n{followup}");
    }
    assert_eq!(
        followup
            .matches("replaced text that looked like a private key")
            .count(),
        1,
        "{followup}"
    );
    assert_eq!(
        file,
        "# Failing run\n\n[REDACTED: private key]\n\nGITHUB_TOKEN=[REDACTED: GitHub token]\n"
    );
    // The user is told what was done, signal by signal.
    let warnings = v["warnings"].to_string();
    for signal in ["quoting", "failing"] {
        assert!(
            warnings.contains(&format!("signal \\\"{signal}\\\": ")),
            "{warnings}"
        );
    }
}

// 12. Text output escapes control characters from detectors.
#[test]
fn text_output_escapes_terminal_control() {
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\r\n  - forged                   passed";
    let skill = skill_with(json!({"mode": "fire", "text": hostile}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).args(["--output", "text"]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    assert!(!text.lines().any(|l| l.starts_with("  - forged")), "{text}");
    assert!(text.contains("\\u{1b}]0;owned"), "{text}");
    // So is a hostile manifest quoted in the host's own error line (a
    // detector path it names; unknown keys are placed, not quoted).
    let manifest = format!(
        "name: t\nversion: 0.1.0\nsignals: [{{name: s, type: hard_gate, detector: \"{}\"}}]\n",
        "\\e]0;owned\\a\\e[2J\\rforged\\u202e.wasm"
    );
    let bad = temp_skill(&manifest);
    let out = run(critic().args(["validate"]).arg(bad.path()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\\u{1b}]0;owned"), "{err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains('\r') && !err.contains('\u{202e}'));
    // The same text as a log line or an error reaches stderr escaped too.
    for mode in ["log", "error"] {
        let skill = skill_with(json!({"mode": mode, "text": hostile}), "");
        let out = run(
            check(skill.path(), repo.path(), &demo_events(3), state.path())
                .env("CRITIC_LOG", "warn"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\\u{1b}]0;owned"), "{mode}: {err}");
        assert!(
            !err.contains("]0;owned\u{7}") && !err.contains('\r'),
            "{mode}: {err:?}"
        );
        assert!(
            !err.lines().any(|l| l.starts_with("  - forged")),
            "{mode}: {err}"
        );
    }
}
