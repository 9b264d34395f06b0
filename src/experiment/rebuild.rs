//! A rerun into an output directory, as a build: a run is reused while it
//! finished under the definition it has now (see [`super::definition`]);
//! a run that is new, ended in an infrastructure error, or whose
//! definition changed is made; a changed or removed run's files and rows
//! move under `OUT/superseded/<n>/`, out of the results, the report and
//! the predictions. [`plan`] decides without touching anything (what
//! `--dry-run` prints); [`apply`] moves what it superseded.

use crate::experiment::db::{Db, DbError, RunKey, Status};
use crate::experiment::definition;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where superseded runs go, under the output directory.
pub const SUPERSEDED_DIR: &str = "superseded";

/// What a rerun does with each run.
#[derive(Debug, Default)]
pub struct Plan {
    /// Runs to make, with the attempts made before (retries go on counting).
    pub make: Vec<(RunKey, u32)>,
    /// Finished runs kept as they are.
    pub reused: usize,
    /// Stored runs that leave the results, and why.
    pub supersede: Vec<(RunKey, String)>,
    /// Runs of an older version, with no definition recorded, kept under
    /// the definition they have now (the manifest did not change).
    adopt: Vec<(RunKey, String)>,
    /// One line per arm and reason, in arm order.
    pub lines: Vec<String>,
}

/// What to do with `wanted` (each run's key and its definition as
/// [`definition::text`]) given what `db` holds (`None`: nothing yet).
/// Runs stored with no definition (made by an older version) are kept when
/// `same_manifest`, re-made when not. With `replay_then_live`, runs whose
/// replay diverged are made again.
pub fn plan(
    db: Option<&Db>,
    wanted: &[(RunKey, String)],
    same_manifest: bool,
    replay_then_live: bool,
) -> Result<Plan, DbError> {
    let mut plan = Plan::default();
    // (arm, what) -> runs, for the console.
    let mut tally: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut note = |arm: &str, what: String| {
        *tally.entry((arm.to_string(), what)).or_default() += 1;
    };
    for (key, def) in wanted {
        let stored = match db {
            Some(db) => db.stored(key)?,
            None => None,
        };
        let Some(stored) = stored else {
            plan.make.push((key.clone(), 0));
            note(&key.arm, "new: made".into());
            continue;
        };
        let changed = match &stored.definition {
            Some(old) if old == def => None,
            Some(old) => Some(changes_between(old, def)),
            None if same_manifest => {
                plan.adopt.push((key.clone(), def.clone()));
                None
            }
            None => Some("made by an older version under another manifest".to_string()),
        };
        if let Some(why) = changed {
            plan.supersede
                .push((key.clone(), format!("definition changed ({why})")));
            plan.make.push((key.clone(), 0));
            note(&key.arm, format!("definition changed ({why}): re-made"));
            continue;
        }
        match stored.status {
            Status::InfraError => {
                plan.make.push((key.clone(), stored.attempts));
                note(
                    &key.arm,
                    "an infrastructure error before: made again".into(),
                );
            }
            Status::ReplayDiverged if replay_then_live => {
                plan.make.push((key.clone(), stored.attempts));
                note(&key.arm, "its replay diverged: goes on live".into());
            }
            _ => {
                plan.reused += 1;
                note(&key.arm, "reused".into());
            }
        }
    }
    if let Some(db) = db {
        let keys: std::collections::BTreeSet<&RunKey> = wanted.iter().map(|(k, _)| k).collect();
        for key in db.keys()? {
            if !keys.contains(&key) {
                note(
                    &key.arm,
                    format!("no longer in the experiment: moved to {SUPERSEDED_DIR}/"),
                );
                plan.supersede
                    .push((key, "no longer in the experiment".to_string()));
            }
        }
    }
    plan.lines = tally
        .into_iter()
        .map(|((arm, what), n)| {
            let runs = if n == 1 {
                "1 run".into()
            } else {
                format!("{n} runs")
            };
            match what.split_once(": ") {
                Some((why, done)) => format!("{arm}: {why}: {runs} {done}"),
                None => format!("{arm}: {runs} {what}"),
            }
        })
        .collect();
    Ok(plan)
}

/// The changes from the stored definition `old` to `new`, in words.
fn changes_between(old: &str, new: &str) -> String {
    match (
        serde_json::from_str::<serde_json::Value>(old),
        serde_json::from_str::<serde_json::Value>(new),
    ) {
        (Ok(old), Ok(new)) => {
            let changes = definition::changes(&old, &new);
            if changes.is_empty() {
                "the stored definition is written differently".into()
            } else {
                changes.join("; ")
            }
        }
        _ => "the stored definition is unreadable".into(),
    }
}

/// Carry out `plan`'s moves in `out`: each superseded run's rows leave
/// `db` and its directory (from `run_dir`) goes to
/// `OUT/superseded/<n>/runs/...` beside a `superseded.json` holding its
/// stored rows, definition and why. Returns the directory used, if any.
pub fn apply(
    plan: &Plan,
    db: &Db,
    out: &Path,
    run_dir: impl Fn(&RunKey) -> PathBuf,
) -> Result<Option<PathBuf>, String> {
    for (key, def) in &plan.adopt {
        db.set_definition(key, def).map_err(|e| e.to_string())?;
    }
    if plan.supersede.is_empty() {
        return Ok(None);
    }
    let root = out.join(SUPERSEDED_DIR);
    let mut n = 1;
    while root.join(n.to_string()).exists() {
        n += 1;
    }
    let dest_root = root.join(n.to_string());
    let keys: Vec<RunKey> = plan.supersede.iter().map(|(k, _)| k.clone()).collect();
    // The files move first: a crash between leaves a run that is re-made,
    // never rows without their files.
    let mut moved = Vec::new();
    for (key, why) in &plan.supersede {
        let from = run_dir(key);
        let rel = from.strip_prefix(out).unwrap_or(&from).to_path_buf();
        let to = dest_root.join(&rel);
        let parent = to.parent().unwrap_or(&dest_root);
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        match std::fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            }
            Err(e) => return Err(format!("{} -> {}: {e}", from.display(), to.display())),
        }
        moved.push((key, why, to));
    }
    let taken = db.take(&keys).map_err(|e| e.to_string())?;
    for (key, why, to) in moved {
        let stored = taken
            .iter()
            .find(|t| {
                t["run"]["instance_id"] == key.instance_id.as_str()
                    && t["run"]["arm"] == key.arm.as_str()
                    && t["run"]["sample"] == key.sample
            })
            .cloned()
            .unwrap_or_default();
        let record = serde_json::json!({"why": why, "stored": stored});
        let file = to.join("superseded.json");
        let text = serde_json::to_string_pretty(&record).expect("JSON values serialize") + "\n";
        crate::sys::atomic_file::write(&file, text.as_bytes(), true)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(Some(dest_root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::db::Run;

    fn key(arm: &str, sample: u32) -> RunKey {
        RunKey {
            instance_id: "i".into(),
            arm: arm.into(),
            sample,
        }
    }

    fn finished(db: &Db, key: &RunKey, status: Status, def: &str) {
        let run = Run {
            key: key.clone(),
            status,
            error_class: None,
            error: None,
            resolved: Some(true),
            f2p: None,
            grade_problem: None,
            finishes: 1,
            rounds: 1,
            budget_exhausted: false,
            outcome_test: None,
            tokens: None,
            cost: None,
            usage_source: None,
            model_calls: None,
            duration_s: 1.0,
            attempts: 1,
            model_patch: String::new(),
        };
        db.finish(&run, &[], Some(def)).unwrap();
    }

    #[test]
    fn a_rerun_makes_what_is_new_changed_or_failed_and_moves_what_left() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let db = Db::open(&out.join("r.sqlite")).unwrap();
        let def = |n: u32| format!(r#"{{"arm":{{"as_written":{{"max_iterations":{n}}}}}}}"#);
        finished(&db, &key("a", 0), Status::Ok, &def(2));
        finished(&db, &key("b", 0), Status::Ok, &def(2));
        finished(&db, &key("b", 1), Status::InfraError, &def(2));
        finished(&db, &key("gone", 0), Status::AgentFail, &def(2));
        std::fs::create_dir_all(out.join("runs/i/a/0")).unwrap();
        std::fs::write(out.join("runs/i/a/0/final.patch"), "old").unwrap();
        let wanted = [
            (key("a", 0), def(3)),
            (key("b", 0), def(2)),
            (key("b", 1), def(2)),
            (key("b", 2), def(2)),
        ];
        let plan = plan(Some(&db), &wanted, false, false).unwrap();
        assert_eq!(
            plan.make,
            [(key("a", 0), 0), (key("b", 1), 1), (key("b", 2), 0)]
        );
        assert_eq!(plan.reused, 1);
        assert_eq!(
            plan.lines,
            [
                "a: definition changed (max_iterations 2 -> 3): 1 run re-made",
                "b: an infrastructure error before: 1 run made again",
                "b: new: 1 run made",
                "b: 1 run reused",
                "gone: no longer in the experiment: 1 run moved to superseded/",
            ]
        );
        let dest = apply(&plan, &db, out, |k| {
            out.join("runs")
                .join(&k.instance_id)
                .join(&k.arm)
                .join(k.sample.to_string())
        })
        .unwrap()
        .unwrap();
        assert_eq!(dest, out.join("superseded/1"));
        assert_eq!(
            std::fs::read_to_string(dest.join("runs/i/a/0/final.patch")).unwrap(),
            "old"
        );
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dest.join("runs/i/gone/0/superseded.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(record["why"], "no longer in the experiment");
        assert_eq!(record["stored"]["run"]["status"], "agent_fail");
        let left: Vec<RunKey> = db.keys().unwrap();
        assert_eq!(left, [key("b", 0), key("b", 1)]);
        // Nothing changed since: what finished is reused, what failed made.
        let again = super::plan(Some(&db), &wanted[1..3], false, false).unwrap();
        assert!(again.supersede.is_empty());
        assert_eq!((again.reused, again.make), (1, vec![(key("b", 1), 1)]));
    }

    #[test]
    fn runs_of_an_older_version_are_kept_only_under_the_same_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("r.sqlite")).unwrap();
        let run = key("a", 0);
        finished(&db, &run, Status::Ok, "x");
        // As an older version left it: no definition.
        rusqlite::Connection::open(dir.path().join("r.sqlite"))
            .unwrap()
            .execute("UPDATE runs SET definition = NULL", [])
            .unwrap();
        let wanted = [(run.clone(), "{}".to_string())];
        let kept = plan(Some(&db), &wanted, true, false).unwrap();
        assert_eq!((kept.reused, kept.make.len()), (1, 0));
        let remade = plan(Some(&db), &wanted, false, false).unwrap();
        assert_eq!(remade.make, [(run.clone(), 0)]);
        apply(&kept, &db, dir.path(), |_| dir.path().join("none")).unwrap();
        assert_eq!(
            db.stored(&run).unwrap().unwrap().definition.as_deref(),
            Some("{}")
        );
    }
}
