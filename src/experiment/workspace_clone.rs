//! An agent's workspace: a clone holding its base commit's history and
//! nothing later, made from a template of the base kept beside the
//! grader's copy.

use crate::workspace::git;
use std::path::{Path, PathBuf};

/// A workspace at `dest`: a clone holding `base` and its history and
/// nothing else, HEAD detached at `base`. Its objects come from the
/// grader's `copy` (every object copied: a hard-linked object the agent
/// rewrote in place would change the copy) through a template of `base`
/// made once beside the copy, so no later commit of the user's clone (the
/// fix itself, its tags) and no other instance's base is in the agent's
/// reach, and nothing of the user's clone is carried over (its hooks, its
/// config, its address as a remote). `repo` names the clone in errors.
pub fn make_workspace(repo: &Path, copy: &Path, base: &str, dest: &Path) -> Result<(), String> {
    if dest.exists() {
        crate::sys::remove_tree::remove_tree(dest)
            .map_err(|e| format!("{}: cannot remove an old workspace: {e}", dest.display()))?;
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let template = base_template(copy, base)?;
    let mut clone = git::command(Path::new("."));
    clone
        .env("GIT_ALLOW_PROTOCOL", "file")
        .args([
            "clone",
            "--quiet",
            "--no-checkout",
            "--no-hardlinks",
            "--no-tags",
            "--",
        ])
        .arg(&template)
        .arg(dest);
    git::run(clone).map_err(|e| {
        format!(
            "cannot clone {base} of {}: {}",
            repo.display(),
            e.message.trim()
        )
    })?;
    let in_dest = |args: &[&str], what: &str| {
        let mut cmd = git::command(dest);
        cmd.args(args);
        git::run(cmd).map_err(|e| format!("{what}: {}", e.message.trim()))
    };
    in_dest(
        &["checkout", "--quiet", "--detach", base, "--"],
        &format!("cannot check out {base} in a clone of {}", repo.display()),
    )?;
    for gone in [
        "refs/heads/base",
        "refs/remotes/origin/base",
        "refs/remotes/origin/HEAD",
    ] {
        let _ = in_dest(
            &["update-ref", "-d", gone],
            "cannot drop the template's refs",
        );
    }
    in_dest(
        &["remote", "remove", "origin"],
        "cannot drop the clone's remote",
    )?;
    Ok(())
}

/// A bare repository beside the grader's `copy` holding `base` and what it
/// reaches, and nothing else, made once (under a lock) and reused by every
/// run of that base.
fn base_template(copy: &Path, base: &str) -> Result<PathBuf, String> {
    let name = copy.file_name().unwrap_or_default().to_string_lossy();
    let dir = copy.with_file_name(format!("{}.bases", name.trim_end_matches(".git")));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let template = dir.join(format!("{base}.git"));
    let done = dir.join(format!("{base}.complete"));
    let lock_path = dir.join(format!("{base}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("{}: cannot lock: {e}", lock_path.display()))?;
    if done.is_file() {
        return Ok(template);
    }
    if template.exists() {
        crate::sys::remove_tree::remove_tree(&template)
            .map_err(|e| format!("{}: {e}", template.display()))?;
    }
    let run = |dir: &Path, args: &[&str]| {
        let mut cmd = git::command(dir);
        cmd.env("GIT_ALLOW_PROTOCOL", "file").args(args);
        git::run(cmd).map_err(|e| {
            format!(
                "cannot make the workspace template of {base}: {}",
                e.message.trim()
            )
        })
    };
    let ws_ref = format!("refs/critic/ws/{base}");
    run(copy, &["update-ref", &ws_ref, base])?;
    run(
        Path::new("."),
        &["init", "--quiet", "--bare", &template.to_string_lossy()],
    )?;
    let from = format!(
        "file://{}",
        std::path::absolute(copy)
            .unwrap_or_else(|_| copy.to_path_buf())
            .display()
    );
    run(
        &template,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            &from,
            &format!("{ws_ref}:refs/heads/base"),
        ],
    )?;
    run(&template, &["symbolic-ref", "HEAD", "refs/heads/base"])?;
    std::fs::write(&done, base).map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(template)
}
