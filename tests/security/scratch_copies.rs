//! Promises 3, 7, 9d and 9e of docs/SECURITY.md: a run's scratch copy is
//! prepared without following links, captured within a ceiling, reset to the
//! base before each run and removed after the check.

use super::*;

// 3. Host-side writes into a scratch copy stay in it.
#[test]
fn scratch_preparation_does_not_follow_committed_symlinks() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), "keep").unwrap();
    let repo = Repo::demo();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("lnk")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), repo.path().join("vic")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "links"]);
    let patch = "diff --git a/lnk/p.txt b/lnk/p.txt\nnew file mode 100644\n--- /dev/null\n+++ b/lnk/p.txt\n@@ -0,0 +1 @@\n+x\n";
    let results = run_results(
        &repo,
        json!([
            {"argv": ["true"], "files": {"lnk/t.txt": "x"}},
            {"argv": ["true"], "files": {"lnk/victim": null}},
            {"argv": ["true"], "files": {"vic": "overwritten"}},
            {"argv": ["true"], "patch": patch},
        ]),
        &[],
    );
    for r in &results {
        let e = r["error"].as_str().unwrap_or_default();
        assert!(e.contains("symlink"), "refused: {r:#}");
    }
    assert_eq!(listing(outside.path()), ["victim"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim")).unwrap(),
        "keep"
    );
}

// 7. The host caps what it captures of a run, whatever the request asks.
#[test]
fn run_output_has_a_host_ceiling() {
    let request = json!({"argv": ["sh", "-c", "head -c 60000000 /dev/zero | tr '\\0' x"], "output_bytes": 4_000_000_000u64});
    let skill = skill_with(
        json!({"mode": "run", "requests": [request]}),
        "limits: {output_kb: 20000}\n",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    let out = v["signals"][0]["metadata"]["results"][0]["stdout"]
        .as_str()
        .unwrap();
    assert!(out.len() <= (8 << 20) + 100, "{} bytes captured", out.len());
    assert!(out.contains("bytes cut"));

    // A matrix shares one ceiling among its runs, and has a most requests.
    let eight = json!({"argv": ["sh", "-c", "head -c 8000000 /dev/zero | tr '\\0' x"], "output_bytes": 8_000_000});
    let skill = skill_with(
        json!({"mode": "run", "requests": vec![eight; 8]}),
        "limits: {output_kb: 100000}\n",
    );
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    let results = v["signals"][0]["metadata"]["results"].as_array().unwrap();
    let total: usize = results
        .iter()
        .map(|r| r["stdout"].as_str().unwrap().len())
        .sum();
    assert!(
        total <= (16 << 20) + 8 * 100,
        "{total} bytes captured in all"
    );
    let skill = skill_with(
        json!({"mode": "run", "requests": vec![json!({"argv": ["true"]}); 1001]}),
        "",
    );
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    let e = v["signals"][0]["error"].as_str().unwrap();
    assert!(e.contains("at most 1000"), "{e}");
}

// 9d. Runs reuse scratch slots: whatever one run does to the base files,
// the next run sees the base commit again. Each attack below keeps the
// file's length and puts its modification time back, or writes through a
// name the slot's directories never see.
#[test]
fn a_run_cannot_leave_changes_for_the_next() {
    let repo = Repo::demo();
    let target = "intervals/merge.py";
    let base = std::fs::read(repo.path().join(target)).unwrap();
    let attack = |body: &str| {
        let script = format!(
            r#"
import mmap, os
p = '{target}'
st = os.stat(p)
def poison(data):
    return (b'raise SystemExit("POISONED")\n' + data)[:len(data)]
{body}
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
print('attacked')
"#
        );
        json!({"argv": ["python3", "-c", script]})
    };
    let checker = json!({"argv": ["sh", "-c", format!("stat -c %a {target}; cat {target}")]});
    let attacks = [
        // Same length, in place.
        "data = open(p, 'rb').read()\nopen(p, 'r+b').write(poison(data))",
        // Through a shared mapping.
        "f = open(p, 'r+b'); m = mmap.mmap(f.fileno(), 0); f.close()\nm[:] = poison(m[:]); m.flush(); del m",
        // Through a hard link in a new directory, both gone at the end.
        "os.mkdir('d'); os.link(p, 'd/h'); data = open(p, 'rb').read()\n\
         open('d/h', 'r+b').write(poison(data)); os.unlink('d/h'); os.rmdir('d')",
        // Through a hard link in the private temporary directory.
        "h = os.path.join(os.environ['TMPDIR'], 'h')\ntry:\n    os.link(p, h)\n    \
         open(h, 'r+b').write(poison(open(p, 'rb').read()))\nexcept OSError as e:\n    print('link refused', e.errno)",
        // The mode.
        "os.chmod(p, 0o777)",
    ];
    let mut requests = Vec::new();
    for body in attacks {
        requests.push(attack(body));
        requests.push(checker.clone());
    }
    let results = run_results(&repo, Value::Array(requests), &["--jobs", "1"]);
    let expected = format!("644\n{}", String::from_utf8_lossy(&base));
    for (i, pair) in results.chunks(2).enumerate() {
        assert!(
            pair[0]["stdout"].as_str().unwrap().contains("attacked"),
            "attack {i}: {:#}",
            pair[0]
        );
        assert_eq!(
            pair[1]["stdout"],
            expected.as_str(),
            "after attack {i}: {:#}",
            pair[0]
        );
    }
}

// 9e. A run cannot make its scratch copy outlive the check: not with a
// tree deeper than the host's descriptor limit, nor with directories it
// took the permissions off.
#[test]
fn a_run_cannot_keep_its_scratch_copy_alive() {
    let repo = Repo::demo();
    let place = tempfile::tempdir().unwrap();
    let script = r#"
import os
for base in ('.', os.environ['TMPDIR']):
    os.chdir(base)
    for _ in range(400):
        os.mkdir('d'); os.chdir('d')
    open('big', 'wb').write(b'x' * 1000000)
    os.chdir(base)
    os.makedirs('locked/inner'); open('locked/inner/f', 'w').write('x')
    os.chmod('locked/inner', 0); os.chmod('locked', 0)
print('shaped')
"#;
    let skill = skill_with(
        json!({"mode": "run", "requests": [{"argv": ["python3", "-c", script]}]}),
        "",
    );
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_SCRATCH_DIR", place.path());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (code, v, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    let r = &v["signals"][0]["metadata"]["results"][0];
    assert_eq!(r["stdout"], "shaped\n", "{r:#}");
    assert!(!err.contains("cannot remove"), "{err}");
    assert_eq!(listing(place.path()), Vec::<String>::new(), "{err}");
}

// 9e'. The place scratch pools live in may be shared: the sweep of pools a
// killed host left behind removes only this user's private ones, never a
// directory another user named like one.
#[test]
fn the_stale_pool_sweep_removes_only_this_users_pools() {
    use std::os::unix::fs::{chown, PermissionsExt};
    let place = tempfile::tempdir().unwrap();
    let dead = 4_194_305; // above the kernel's largest pid_max: never alive
    let make = |name: &str, mode: u32| {
        let dir = place.path().join(name);
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/keep"), "x").unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    };
    let stale = make(&format!("critic-scratch-{dead}-mine"), 0o700);
    let shared = make(&format!("critic-scratch-{dead}-open"), 0o755);
    let foreign = make(&format!("critic-scratch-{dead}-theirs"), 0o700);
    as_root_to_act_as_another_user();
    chown(&foreign, Some(65534), Some(65534)).unwrap();
    let repo = Repo::demo();
    let skill = skill_with(json!({"mode": "run", "requests": [{"argv": ["true"]}]}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, _, err, _) = verdict_of(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .env("CRITIC_SCRATCH_DIR", place.path()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!stale.exists(), "this user's stale pool is swept");
    assert!(
        shared.join("inner/keep").exists(),
        "a pool others can enter is not"
    );
    assert!(foreign.join("inner/keep").exists(), "another user's is not");
}
