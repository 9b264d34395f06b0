//! Patches as `git apply` reads them: for many generated patches (text and
//! CRLF edits, files without a last newline, modes, symlinks, renames,
//! additions, deletions, binary changes as `git diff --binary` writes them;
//! with text before them, as plain unified diffs, against a drifted base
//! where hunks land at an offset, and corrupted), the tree critic's scratch
//! copy makes is the tree the real `git apply` makes, and what one refuses
//! the other refuses.

mod common;

use common::Repo;
use critic_sdk::RunRequest;
use pluggable_critic::sandbox::scratch::ScratchPool;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift), so a failure is reproducible
/// from its case number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Lines from a small vocabulary, so a hunk's context is found in more
/// than one place, as in real code.
const WORDS: &[&str] = &[
    "    return x",
    "",
    "def f(x):",
    "    x += 1",
    "# comment",
    "pass",
    "    if x:",
    "import os",
];

fn text(rng: &mut Rng, lines: usize, ending: &str) -> String {
    (0..lines)
        .map(|i| {
            let w = WORDS[rng.below(WORDS.len())];
            if rng.chance(60) {
                format!("{w} {i}{ending}")
            } else {
                format!("{w}{ending}")
            }
        })
        .collect()
}

fn binary(rng: &mut Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| (rng.next() % 256) as u8).collect()
}

/// Edit some lines of `content`: replace, insert, delete, keeping its line
/// ending style.
fn edit(rng: &mut Rng, content: &str) -> String {
    let ending = if content.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut lines: Vec<String> = content.split_inclusive('\n').map(str::to_string).collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(lines.len() + 1);
        match rng.below(3) {
            0 if at < lines.len() => {
                lines[at] = format!("changed {}{ending}", rng.below(1000));
            }
            1 => lines.insert(at, format!("added {}{ending}", rng.below(1000))),
            _ if at < lines.len() && lines.len() > 1 => {
                lines.remove(at);
            }
            _ => lines.push(format!("tail {}{ending}", rng.below(1000))),
        }
    }
    let mut out: String = lines.concat();
    if rng.chance(10) {
        // The last newline taken away, or given back.
        if out.ends_with('\n') {
            out.pop();
            if out.ends_with('\r') {
                out.pop();
            }
        } else {
            out.push_str(ending);
        }
    }
    out
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The base tree: text (LF, CRLF, no last newline), a script, a symlink, a
/// binary file, in nested directories.
fn base_repo(rng: &mut Rng) -> Repo {
    let repo = Repo::new(&[("README", "generated\n")]);
    for i in 0..6 {
        let n = 20 + rng.below(40);
        repo.write(&format!("pkg/mod{i}.py"), &text(rng, n, "\n"));
    }
    repo.write("pkg/sub/deep.py", &text(rng, 30, "\n"));
    repo.write("win.txt", &text(rng, 25, "\r\n"));
    let mut open = text(rng, 12, "\n");
    open.pop();
    repo.write("open.py", &open);
    repo.write("run.sh", "#!/bin/sh\necho run\n");
    chmod(&repo.path().join("run.sh"), 0o755);
    std::os::unix::fs::symlink("pkg/mod0.py", repo.path().join("link.py")).unwrap();
    std::fs::write(repo.path().join("blob.bin"), binary(rng, 3000)).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    repo.git(&["tag", "base"]);
    repo
}

/// A commit on `base` where some files have lines added at their top, so
/// the patches' hunks land at an offset (or no longer match).
fn drifted(repo: &Repo, rng: &mut Rng) {
    repo.git(&["checkout", "-q", "base"]);
    for i in 0..6 {
        if rng.chance(70) {
            let path = repo.path().join(format!("pkg/mod{i}.py"));
            let old = std::fs::read_to_string(&path).unwrap();
            let n = 1 + rng.below(8);
            let top = text(rng, n, "\n");
            std::fs::write(&path, format!("{top}{old}")).unwrap();
        }
    }
    repo.git(&["commit", "-qam", "drift"]);
    repo.git(&["tag", "drifted"]);
}

/// Change the work tree (at `base`) at random and return `git diff
/// --binary --full-index -M base` of it, made with git itself.
fn random_change(repo: &Repo, rng: &mut Rng) -> String {
    repo.git(&["checkout", "-q", "-f", "base"]);
    repo.git(&["clean", "-qfdx"]);
    let p = |rel: &str| repo.path().join(rel);
    for i in 0..6 {
        let rel = format!("pkg/mod{i}.py");
        if rng.chance(40) {
            let old = std::fs::read_to_string(p(&rel)).unwrap();
            std::fs::write(p(&rel), edit(rng, &old)).unwrap();
        }
    }
    if rng.chance(30) {
        let old = std::fs::read_to_string(p("win.txt")).unwrap();
        std::fs::write(p("win.txt"), edit(rng, &old)).unwrap();
    }
    if rng.chance(30) {
        let old = std::fs::read_to_string(p("open.py")).unwrap();
        std::fs::write(p("open.py"), edit(rng, &old)).unwrap();
    }
    if rng.chance(20) {
        chmod(&p("run.sh"), 0o644);
    }
    if rng.chance(20) {
        chmod(&p("pkg/mod1.py"), 0o755);
    }
    if rng.chance(20) {
        std::fs::remove_file(p("link.py")).unwrap();
        std::os::unix::fs::symlink("pkg/mod2.py", p("link.py")).unwrap();
    }
    if rng.chance(15) {
        std::fs::rename(p("pkg/sub/deep.py"), p("pkg/moved.py")).unwrap();
        if rng.chance(50) {
            let old = std::fs::read_to_string(p("pkg/moved.py")).unwrap();
            std::fs::write(p("pkg/moved.py"), edit(rng, &old)).unwrap();
        }
    }
    if rng.chance(20) {
        std::fs::remove_file(p("pkg/mod5.py")).unwrap();
    }
    if rng.chance(25) {
        std::fs::create_dir_all(p("new/dir")).unwrap();
        std::fs::write(p("new/dir/added.py"), text(rng, 5, "\n")).unwrap();
    }
    if rng.chance(20) {
        let mut blob = std::fs::read(p("blob.bin")).unwrap();
        let at = rng.below(blob.len());
        blob[at] ^= 0xff;
        let n = rng.below(50);
        blob.extend(binary(rng, n));
        std::fs::write(p("blob.bin"), blob).unwrap();
    }
    if rng.chance(10) {
        std::fs::write(p("new.bin"), binary(rng, 200)).unwrap();
    }
    if rng.chance(10) {
        std::fs::write(p("empty.txt"), "").unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&[
        "diff",
        "--cached",
        "--binary",
        "--full-index",
        "-M",
        "--no-color",
        "base",
    ])
}

/// The patch as a plain unified diff (`--- a/x`, `+++ b/x` only), when
/// every section is a plain text change of a file that stays.
fn as_plain(patch: &str) -> Option<String> {
    let files = critic_sdk::diff::parse(patch).ok()?;
    let sections = critic_sdk::diff::sections(patch);
    let mut out = String::new();
    for (f, section) in files.iter().zip(sections) {
        let mode_or_more = section.lines().any(|l| {
            l.starts_with("old mode")
                || l.starts_with("new file")
                || l.starts_with("deleted file")
                || l.starts_with("similarity")
                || l.starts_with("GIT binary")
        });
        if mode_or_more || f.hunks.is_empty() {
            return None;
        }
        out.extend(
            section
                .split_inclusive('\n')
                .filter(|l| !l.starts_with("diff --git ") && !l.starts_with("index ")),
        );
    }
    (!out.is_empty()).then_some(out)
}

/// One context or removed line of the patch changed, so that it may no
/// longer match.
fn corrupted(rng: &mut Rng, patch: &str) -> Option<String> {
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    let candidates: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            (lines[i].starts_with('-') && !lines[i].starts_with("---"))
                || (lines[i].starts_with(' ') && i > 0)
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let at = candidates[rng.below(candidates.len())];
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let first = &out[at][..1];
    out[at] = format!("{first}corrupted {}\n", rng.below(100));
    Some(out.concat())
}

/// Every entry of a tree: path, kind, executable bit, and a digest of the
/// content (a link's target for a link); empty directories too.
const MANIFEST: &str = r#"
import hashlib, os, stat, sys
out = []
for top, dirs, files in os.walk('.'):
    dirs.sort()
    if top != '.' and not dirs and not files:
        out.append(f'{top} dir')
    for name in sorted(files):
        p = os.path.join(top, name)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out.append(f'{p} link {os.readlink(p)}')
        else:
            data = open(p, 'rb').read()
            exe = 'x' if st.st_mode & 0o100 else '-'
            out.append(f'{p} file {exe} {hashlib.sha256(data).hexdigest()}')
for top, dirs, files in os.walk('.'):
    for d in dirs:
        p = os.path.join(top, d)
        if os.path.islink(p):
            out.append(f'{p} link {os.readlink(p)}')
print('\n'.join(sorted(out)))
"#;

/// What the real `git apply` makes of `patch` on a fresh export of `rev`:
/// the tree's manifest, or git's refusal.
fn git_apply(repo: &Repo, rev: &str, patch: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let export = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -C '{}' archive {rev} | tar -x -C '{}'",
            repo.path().display(),
            dir.path().display()
        ))
        .status()
        .unwrap();
    assert!(export.success());
    let file = dir.path().join("..").join(format!(
        "{}.patch",
        dir.path().file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&file, patch).unwrap();
    // Outside any repository: `git apply` works on the files alone, as it
    // does in SWE-bench's container.
    let out = Command::new("git")
        .args(["apply"])
        .arg(&file)
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let listed = Command::new("python3")
        .args(["-c", MANIFEST])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(listed.status.success());
    Ok(String::from_utf8(listed.stdout).unwrap())
}

/// What critic's scratch copy of `rev` makes of `patch`.
fn scratch_apply(pool: &ScratchPool, patch: &str) -> Result<String, String> {
    let request = RunRequest {
        patch: Some(patch.to_string()),
        argv: vec!["python3".into(), "-c".into(), MANIFEST.into()],
        ..RunRequest::default()
    };
    let result = pool.run(&request, Instant::now() + Duration::from_secs(60));
    match result.error {
        Some(e) => Err(e),
        None => {
            assert_eq!(result.exit_code, Some(0), "{}", result.stderr);
            Ok(result.stdout)
        }
    }
}

#[test]
fn every_patch_applies_in_a_scratch_copy_exactly_as_git_apply_applies_it() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let repo = base_repo(&mut rng);
    drifted(&repo, &mut rng);
    let on_base = ScratchPool::new(repo.path(), "base", 1, false).unwrap();
    let on_drift = ScratchPool::new(repo.path(), "drifted", 1, false).unwrap();
    let cases: usize = std::env::var("CRITIC_APPLY_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let (mut agreed, mut applied, mut refused) = (0, 0, 0);
    for case in 0..cases {
        let patch = random_change(&repo, &mut rng);
        if patch.is_empty() {
            continue;
        }
        let mut variants: Vec<(&str, &ScratchPool, String)> = vec![
            ("as written", &on_base, patch.clone()),
            (
                "after prose",
                &on_base,
                format!("\nThe fix, as requested:\n\n{patch}-- \n2.47.3\n"),
            ),
            ("on a drifted base", &on_drift, patch.clone()),
        ];
        if let Some(plain) = as_plain(&patch) {
            variants.push(("plain unified", &on_base, plain));
        }
        if let Some(bad) = corrupted(&mut rng, &patch) {
            variants.push(("corrupted", &on_base, bad));
        }
        for (what, pool, text) in &variants {
            let (what, pool, text): (&str, &ScratchPool, &str) = (what, pool, text);
            let rev = if std::ptr::eq(pool, &on_drift) {
                "drifted"
            } else {
                "base"
            };
            let git = git_apply(&repo, rev, text);
            let ours = scratch_apply(pool, text);
            match (&git, &ours) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "case {case} ({what}): the trees differ\n{text}");
                    applied += 1;
                }
                (Err(_), Err(e)) => {
                    assert!(e.contains("does not apply"), "case {case} ({what}): {e}");
                    refused += 1;
                }
                _ => panic!(
                    "case {case} ({what}): git apply {} but the scratch copy {}\n{text}",
                    if git.is_ok() {
                        "applies it"
                    } else {
                        "refuses it"
                    },
                    match &ours {
                        Ok(_) => "applies it".to_string(),
                        Err(e) => format!("refuses it: {e}"),
                    }
                ),
            }
            agreed += 1;
        }
    }
    eprintln!("{agreed} patches agreed: {applied} applied, {refused} refused by both");
    // The generator must reach both outcomes, or the test proves little.
    assert!(applied > cases, "{applied} applied");
    assert!(refused > cases / 10, "{refused} refused");
}
