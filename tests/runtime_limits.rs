//! Detectors are untrusted: traps, timeouts, memory blow-ups, huge output and
//! chatty stdio become clear per-signal errors, and `on_error` decides.

mod common;

use common::*;
use serde_json::Value;

fn one(mode_yaml: &str, extra: &str) -> tempfile::TempDir {
    temp_skill(&format!(
        "name: t\nversion: 0.1.0\ncapabilities: [log, read-file]\n{extra}signals:\n  - name: s\n    type: hard_gate\n    detector: {{misbehave}}\n    timeout: 1s\n    config: {mode_yaml}\n"
    ))
}

fn verdict(skill: &tempfile::TempDir, extra_args: &[&str]) -> (i32, Value, String) {
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(check(skill.path(), repo.path(), &demo_events(3), state.path()).args(extra_args));
    let code = out.status.code().unwrap();
    let err = stderr(&out);
    if code == 2 {
        return (code, Value::Null, err);
    }
    let v = json_out(&out);
    assert_schema("verdict.schema.json", &v);
    (code, v, err)
}

#[test]
fn a_trap_is_a_clear_error_and_fail_closed_rejects() {
    let (code, v, _) = verdict(&one("{mode: trap}", ""), &[]);
    assert_eq!(code, 1);
    let s = &v["signals"][0];
    assert_eq!(s["status"], "error");
    let e = s["error"].as_str().unwrap();
    assert!(e.contains("crashed"), "{e}");
    assert!(
        e.contains("deliberate panic"),
        "stderr tail is in the error: {e}"
    );
    assert!(v["followup"].as_str().unwrap().contains("could not run"));
}

#[test]
fn fail_open_accepts_on_error() {
    let (code, v, _) = verdict(&one("{mode: trap}", "on_error: fail_open\n"), &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["signals"][0]["status"], "error");
    assert_eq!(v["signals"][0]["triggered"], false);
}

#[test]
fn an_endless_loop_times_out() {
    let started = std::time::Instant::now();
    let (code, v, _) = verdict(&one("{mode: loop}", ""), &[]);
    assert_eq!(code, 1);
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("timed out after 1s"), "{e}");
    assert!(started.elapsed().as_secs_f64() < 10.0);
}

#[test]
fn memory_blow_up_hits_the_cap() {
    let (code, v, _) = verdict(&one("{mode: oom}", "limits: {memory_mb: 32}\n"), &[]);
    assert_eq!(code, 1);
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("exceeded its memory limit of 32 MiB"), "{e}");
}

#[test]
fn huge_output_is_refused() {
    let (_, v, _) = verdict(
        &one("{mode: huge, size: 300000}", "limits: {output_kb: 100}\n"),
        &[],
    );
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("more than the 100 KiB output limit"), "{e}");
}

#[test]
fn detector_stdio_is_captured_not_mixed_into_the_verdict() {
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, timeout: 20s, config: {mode: print, lines: 5000}}\n",
    );
    let (code, v, err) = verdict(&skill, &[]);
    assert_eq!(code, 0, "{v}");
    assert!(
        !err.contains("stdout line"),
        "detector output leaked to stderr"
    );
    assert_eq!(v["signals"][0]["status"], "passed");
}

#[test]
fn detector_reported_errors_are_kept() {
    let (_, v, _) = verdict(&one("{mode: error, text: config makes no sense}", ""), &[]);
    assert!(v["signals"][0]["error"]
        .as_str()
        .unwrap()
        .contains("reported an error: config makes no sense"));
}

#[test]
fn read_file_reads_the_workspace_only() {
    let (code, v, _) = verdict(&one("{mode: read, path: intervals/merge.py}", ""), &[]);
    assert_eq!(code, 0, "{v}");
    assert!(v["signals"][0]["metadata"]["text"]
        .as_str()
        .unwrap()
        .contains("def merge"));
    for (path, why) in [("../etc/passwd", "'..'"), ("/etc/passwd", "absolute")] {
        let (_, v, _) = verdict(&one(&format!("{{mode: read, path: \"{path}\"}}"), ""), &[]);
        let e = v["signals"][0]["metadata"]["error"].as_str().unwrap();
        assert!(e.contains(why), "{path}: {e}");
    }
}

#[test]
fn wasi_gives_a_detector_no_files_environment_or_network() {
    // Something listens, so only the sandbox can make the connection fail.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host_file = misbehave_wasm();
    let skill = one(
        &format!(
            "{{mode: escape, port: {port}, path: \"{}\"}}",
            host_file.display()
        ),
        "",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_TEST_SECRET", "leak"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = &json_out(&out)["signals"][0]["metadata"];
    assert!(
        m["file"]["Err"].is_string(),
        "a host path was readable: {m}"
    );
    assert!(m["dir"]["Err"].is_string(), "a directory was listable: {m}");
    assert_eq!(m["env"], serde_json::json!([]), "environment leaked: {m}");
    assert_eq!(m["args"], 0, "{m}");
    assert!(
        m["tcp"]["Err"].is_string(),
        "the network was reachable: {m}"
    );
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection arrived");
}

#[test]
fn capabilities_are_denied_by_default_and_by_flag() {
    let undeclared = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, config: {mode: read, path: README.md}}\n",
    );
    let (_, v, _) = verdict(&undeclared, &[]);
    let e = v["signals"][0]["metadata"]["error"].as_str().unwrap();
    assert!(e.contains("capability 'read-file' is not declared"), "{e}");
    let (_, v, _) = verdict(
        &one("{mode: read, path: README.md}", ""),
        &["--deny", "read-file"],
    );
    let e = v["signals"][0]["metadata"]["error"].as_str().unwrap();
    assert!(e.contains("denied by the user (--deny read-file)"), "{e}");
    assert_eq!(v["metadata"]["capabilities"], serde_json::json!(["log"]));
    let (code, _, err) = verdict(&one("{mode: pass}", ""), &["--deny", "network"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown capability \"network\""), "{err}");
}

#[test]
fn second_run_uses_the_compile_cache() {
    let cache = tempfile::tempdir().unwrap();
    let skill = one("{mode: pass}", "");
    let outcome = || {
        let (_, v, _) = verdict(&skill, &["--cache-dir", cache.path().to_str().unwrap()]);
        v["signals"][0]["compile_cache"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(outcome(), "compiled");
    assert_eq!(outcome(), "hit");
    let (_, v, _) = verdict(&skill, &["--no-cache"]);
    assert_eq!(v["signals"][0]["compile_cache"], "compiled");
}

#[test]
fn a_detector_rewritten_in_place_is_not_served_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let skill = skill_with_detector(
        &misbehave_wasm(),
        "d.wasm",
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: '{detector}', config: {mode: pass}}\n",
    );
    let wasm = skill.path().join("d.wasm");
    let args = ["--cache-dir", cache.path().to_str().unwrap()];
    let (_, v, _) = verdict(&skill, &args);
    assert_eq!(v["signals"][0]["compile_cache"], "compiled");
    let (_, v, _) = verdict(&skill, &args);
    assert_eq!(v["signals"][0]["compile_cache"], "hit");
    // Same path, same inode, other bytes: the remembered digest must not apply.
    std::fs::write(
        &wasm,
        std::fs::read(fixture("skills/future/future_detector.wasm")).unwrap(),
    )
    .unwrap();
    let (code, _, err) = verdict(&skill, &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("built for critic:detector@0.2.0"), "{err}");
}

#[test]
fn wrong_world_version_and_non_components_are_refused() {
    let future = fixture("skills/future/future_detector.wasm");
    let core = fixture("core-module.wasm");
    for (path, expect) in [
        (
            future,
            "built for critic:detector@0.2.0, but this host supports critic:detector@0.1.x",
        ),
        (core, "a core WebAssembly module, not a component"),
        (root().join("Cargo.toml"), "not a WebAssembly file"),
    ] {
        let skill = skill_with_detector(
            &path,
            "d.wasm",
            "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: '{detector}'}\n",
        );
        let (code, _, err) = verdict(&skill, &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(expect), "{err}");
        assert!(err.contains("critic.yaml:4: signal \"s\""), "{err}");
        let out = run(critic().arg("validate").arg(skill.path()));
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(expect));
    }
}

#[test]
fn native_detectors_need_opt_in() {
    // Its own target dir: the outer `cargo test` may still hold the default one.
    let target = root().join("target/native-fixture");
    let lib = target.join("debug/libnative_detector.so");
    let built = std::process::Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "native-detector"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(root())
        .status()
        .unwrap();
    assert!(built.success());
    let skill = skill_with_detector(
        &lib,
        "libnative_detector.so",
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: n, type: hard_gate, detector: '{detector}'}\n",
    );
    let (code, _, err) = verdict(&skill, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("load only with --allow-native"), "{err}");
    // The demo repo is unchanged, so the (native) empty-patch check fires.
    let (code, v, _) = verdict(&skill, &["--allow-native"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["followup"], "The patch is empty (native detector).");
}
