//! Grading the patch judged at each finish, for the critic's own accuracy:
//! did the critic accept or reject a patch that resolves the instance? A
//! rejected finish is graded while the agent takes its next turn (it has
//! one); the others once the run is done, each distinct patch once.

use super::db::Round;
use super::run_grade::{Graded, Grader};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::thread::{Scope, ScopedJoinHandle};

/// The most of a finish's saved patch graded.
const MAX_FINISH_PATCH: u64 = 64 << 20;

/// The most of one grading log moved beside its round: far above what a
/// grading run's capped output makes.
const MAX_LOG: u64 = 256 << 20;

/// A finish graded while the agent went on: its patch, its grade, and the
/// runner's own directory holding the grading's logs until the agent is
/// done (the run's directory is within an unconfined agent's reach).
pub struct Early {
    patch: String,
    round: u32,
    logs: tempfile::TempDir,
    resolved: Option<bool>,
}

impl Drop for Early {
    fn drop(&mut self) {
        // Its directory goes with it; an interrupt need not remove it.
        crate::sys::interrupt::forget_dir(self.logs.path());
    }
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
        crate::sys::interrupt::remember_dir(logs.path());
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
    for mut e in early {
        let into = dir.join(format!("round-{}", e.round)).join("grade");
        move_logs(&e.logs.path().join("grade"), &into);
        early_rounds.insert(e.round, e.resolved);
        known
            .entry(std::mem::take(&mut e.patch))
            .or_insert(e.resolved);
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
        let read = crate::sys::bounded_read::read_regular_file_nofollow(&entry.path(), MAX_LOG);
        if let Ok(bytes) = read {
            let _ = crate::sys::atomic_file::write(&into.join(entry.file_name()), &bytes, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Mutex;
    use std::time::Duration;

    fn round(k: u32, verdict: &str) -> Round {
        Round {
            round: k,
            turn_exit: Some(0),
            turn_s: 0.0,
            verdict: verdict.into(),
            budget_exhausted: false,
            followup: None,
            critic_error: None,
            resolved: None,
        }
    }

    fn save(dir: &Path, k: u32, patch: &str) -> PathBuf {
        let round = dir.join(format!("round-{k}"));
        std::fs::create_dir_all(&round).unwrap();
        std::fs::write(round.join("patch.diff"), patch).unwrap();
        round
    }

    #[test]
    fn a_rejected_finish_is_graded_while_the_agent_goes_on_and_not_again() {
        let run = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let (dir, work) = (run.path(), scratch.path());
        // A test double for the golden tests: it blocks until the "next
        // turn" lets it go, writes a log as grading does, and says patch
        // "good" resolves.
        let (release, wait) = mpsc::channel::<()>();
        let wait = Mutex::new(wait);
        let graded = Mutex::new(Vec::new());
        let grader = |patch: &str, at: &Path| {
            let released = wait.lock().unwrap().recv_timeout(Duration::from_secs(10));
            released.expect("grading ran before the next turn let it");
            graded.lock().unwrap().push(patch.to_string());
            std::fs::create_dir_all(at.join("grade")).unwrap();
            std::fs::write(at.join("grade/golden.json"), patch).unwrap();
            Graded {
                resolved: Some(patch == "good"),
                ..Graded::default()
            }
        };
        let mut rounds = vec![
            round(1, "rejected"),
            round(2, "rejected"),
            round(3, "accepted"),
        ];
        let early = std::thread::scope(|scope| {
            let mut started = Started::new(scope, &grader, work);
            started.start(1, &save(dir, 1, "good"));
            // The agent's next turn: it rewrites round 1's file, and
            // finishes with the same patch once more.
            assert!(
                graded.lock().unwrap().is_empty(),
                "start waited for grading"
            );
            std::fs::write(dir.join("round-1/patch.diff"), "tampered").unwrap();
            started.start(2, &save(dir, 2, "good"));
            release.send(()).unwrap();
            started.join()
        });
        assert_eq!(*graded.lock().unwrap(), ["good"], "one grading per patch");
        save(dir, 3, "final");
        release.send(()).unwrap();
        grade_finishes(&mut rounds, ("final", false), dir, &grader, early);
        // Round 1 is what it was judged as; round 2 shares its grading; the
        // final patch's grade is not made again.
        let resolved: Vec<_> = rounds.iter().map(|r| r.resolved).collect();
        assert_eq!(resolved, [Some(true), Some(true), Some(false)]);
        assert_eq!(*graded.lock().unwrap(), ["good"]);
        assert_eq!(
            std::fs::read_to_string(dir.join("round-1/grade/golden.json")).unwrap(),
            "good"
        );
        assert_eq!(std::fs::read_dir(work).unwrap().count(), 0, "scratch left");
    }
}
