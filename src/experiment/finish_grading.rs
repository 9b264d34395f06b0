//! Grading the patch judged at each finish, for the critic's own accuracy:
//! did the critic accept or reject a patch that resolves the instance? A
//! rejected finish is graded while the agent takes its next turn (it has
//! one); the others once the run is done, each distinct patch once.

use super::db::Round;
use super::grade::{Graded, Grader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::thread::{Scope, ScopedJoinHandle};

/// The most of a finish's saved patch graded.
const MAX_FINISH_PATCH: u64 = 64 << 20;

/// A finish graded while the agent went on: its patch, its grade, and the
/// runner's own directory holding the grading's logs until the agent is
/// done (the run's directory is within an unconfined agent's reach).
pub struct Early {
    patch: String,
    round: u32,
    logs: tempfile::TempDir,
    resolved: Option<bool>,
}

/// One grading under way: the patch, its round, where its logs go, and
/// the thread.
type Running<'scope> = (
    String,
    u32,
    tempfile::TempDir,
    ScopedJoinHandle<'scope, Option<bool>>,
);

/// The gradings of rejected finishes, started as the agent takes its
/// next turn.
pub struct Started<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    grader: &'env Grader<'env>,
    scratch: PathBuf,
    running: Vec<Running<'scope>>,
}

impl<'scope, 'env> Started<'scope, 'env> {
    /// Gradings run in `scope` by `grader`, their logs kept under
    /// `scratch` (a directory of the runner's) until [`grade_finishes`].
    pub fn new(
        scope: &'scope Scope<'scope, 'env>,
        grader: &'env Grader<'env>,
        scratch: &Path,
    ) -> Self {
        Started {
            scope,
            grader,
            scratch: scratch.to_path_buf(),
            running: Vec::new(),
        }
    }

    /// Start grading the patch saved for finish `round` in `round_dir`,
    /// unless the same patch is under way already. Read now, before the
    /// agent's next turn can touch it.
    pub fn start(&mut self, round: u32, round_dir: &Path) {
        let Some(patch) = read_patch(round_dir) else {
            return;
        };
        if self.running.iter().any(|(p, ..)| *p == patch) {
            return;
        }
        // Without a directory for its logs, the finish is graded after the
        // run instead.
        let Ok(logs) = tempfile::Builder::new()
            .prefix("finish-grade-")
            .tempdir_in(&self.scratch)
        else {
            return;
        };
        let (grader, text, at) = (self.grader, patch.clone(), logs.path().to_path_buf());
        let handle = self.scope.spawn(move || verdict(&grader(&text, &at)));
        self.running.push((patch, round, logs, handle));
    }

    /// Wait for every grading started.
    pub fn join(self) -> Vec<Early> {
        self.running
            .into_iter()
            .map(|(patch, round, logs, handle)| Early {
                patch,
                round,
                logs,
                resolved: handle.join().ok().flatten(),
            })
            .collect()
    }
}

/// What a grade says of the patch: nothing when grading itself failed.
fn verdict(graded: &Graded) -> Option<bool> {
    graded.infra.is_none().then_some(graded.resolved).flatten()
}

fn read_patch(round_dir: &Path) -> Option<String> {
    crate::sys::bounded_read::read_regular_file_nofollow(
        &round_dir.join("patch.diff"),
        MAX_FINISH_PATCH,
    )
    .ok()
    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Set whether the patch judged at each finish of `rounds` resolved
/// (`round-<k>/patch.diff` under `dir`, its logs in `round-<k>/grade/`):
/// from `early` gradings (their logs moved beside their rounds), from the
/// final patch's grade (`resolved`), or graded now by `grader`. A finish
/// whose grading failed stays ungraded.
pub fn grade_finishes(
    rounds: &mut [Round],
    (final_patch, resolved): (&str, bool),
    dir: &Path,
    grader: &Grader,
    early: Vec<Early>,
) {
    let mut known: HashMap<String, Option<bool>> = HashMap::new();
    known.insert(final_patch.to_string(), Some(resolved));
    // The patch an early grading read is the one judged, whatever the
    // agent did to its file afterwards.
    let mut early_rounds = HashMap::new();
    for e in early {
        let into = dir.join(format!("round-{}", e.round)).join("grade");
        move_logs(&e.logs.path().join("grade"), &into);
        early_rounds.insert(e.round, e.resolved);
        known.entry(e.patch).or_insert(e.resolved);
    }
    for r in rounds.iter_mut() {
        if !matches!(r.verdict.as_str(), "accepted" | "rejected") {
            continue;
        }
        if let Some(resolved) = early_rounds.get(&r.round) {
            r.resolved = *resolved;
            continue;
        }
        let round = dir.join(format!("round-{}", r.round));
        let Some(patch) = read_patch(&round) else {
            continue;
        };
        r.resolved = *known
            .entry(patch)
            .or_insert_with_key(|patch| verdict(&grader(patch, &round)));
    }
}

/// Move the logs an early grading wrote into its round's directory, each
/// written anew there (a link planted in the run's directory is replaced,
/// never written through).
fn move_logs(from: &Path, into: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        if let Ok(bytes) = std::fs::read(entry.path()) {
            let _ = crate::sys::atomic_file::write(&into.join(entry.file_name()), &bytes, false);
        }
    }
}
