//! The experiment's results database (`OUT/results.sqlite`): one row per
//! run, per round and per attempt. A run's row and rounds are written in
//! one transaction when it ends, so an interrupted run leaves nothing and
//! a rerun starts it over.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One run's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RunKey {
    /// The instance.
    pub instance_id: String,
    /// The arm.
    pub arm: String,
    /// 0-based sample.
    pub sample: u32,
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", self.instance_id, self.arm, self.sample)
    }
}

/// How a run ended: exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The agent finished and the critic accepted (or its budget ended).
    Ok,
    /// The agent gave up or broke its budget: a result.
    AgentFail,
    /// The harness failed: not a result; a rerun retries it.
    InfraError,
    /// A replay's request matched nothing recorded (`--replay`): not a
    /// result of the arm, and not retried (it would depart again).
    ReplayDiverged,
}

impl Status {
    /// Its name in the database and the exports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::AgentFail => "agent_fail",
            Status::InfraError => "infra_error",
            Status::ReplayDiverged => "replay_diverged",
        }
    }

    /// Whether a run that ended so is a result of its arm (counted in the rates).
    pub fn is_result(self) -> bool {
        matches!(self, Status::Ok | Status::AgentFail)
    }

    fn parse(s: &str) -> Option<Status> {
        [
            Status::Ok,
            Status::AgentFail,
            Status::InfraError,
            Status::ReplayDiverged,
        ]
        .into_iter()
        .find(|x| x.name() == s)
    }
}

/// Fail-to-pass of the test a run wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct F2p {
    /// It fails on the base.
    pub fails_on_base: bool,
    /// It passes on the golden fix.
    pub passes_on_golden: bool,
}

/// What is stored of a run (see [`Db::stored`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// How it ended.
    pub status: Status,
    /// Attempts made.
    pub attempts: u32,
    /// The definition it was made under (see
    /// [`crate::experiment::definition`]); `None`: made by an older version.
    pub definition: Option<String>,
}

/// One finished run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Which.
    #[serde(flatten)]
    pub key: RunKey,
    /// How it ended.
    pub status: Status,
    /// The class of failure (`agent_start`, `turn_budget`, ...).
    pub error_class: Option<String>,
    /// What failed, in words.
    pub error: Option<String>,
    /// The golden tests pass on the final patch (`None`: not graded).
    pub resolved: Option<bool>,
    /// Fail-to-pass of the run's own test (`None`: it wrote none).
    pub f2p: Option<F2p>,
    /// Why the final patch's grading run could not be believed (it then
    /// resolves nothing): it did not apply, timed out, contradicted itself.
    pub grade_problem: Option<String>,
    /// Finishes the critic judged.
    pub finishes: u32,
    /// Agent turns.
    pub rounds: u32,
    /// Accepted only because the skill's budget ran out.
    pub budget_exhausted: bool,
    /// Which test the final patch carries (`t0` when CoHarden reverted).
    pub outcome_test: Option<String>,
    /// Tokens the model's answers reported (`None`: none known).
    pub tokens: Option<u64>,
    /// What the run's calls cost, in USD.
    pub cost: Option<f64>,
    /// Where `tokens` and `cost` come from: `proxy` (the runner counted the
    /// model's answers) or `transcript` (the agent's own, where no proxy was
    /// in the path).
    pub usage_source: Option<String>,
    /// Model calls the proxy took.
    pub model_calls: Option<u32>,
    /// Wall time of the run.
    pub duration_s: f64,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// The final patch.
    #[serde(skip)]
    pub model_patch: String,
}

/// One round of a run: an agent turn and the critic's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// 1-based.
    pub round: u32,
    /// The agent's exit code (`None`: killed).
    pub turn_exit: Option<i32>,
    /// The turn's wall time.
    pub turn_s: f64,
    /// `accepted`, `rejected`, or `none` (no check: the turn failed).
    pub verdict: String,
    /// Accepted because the budget ran out.
    pub budget_exhausted: bool,
    /// The follow-up sent back.
    pub followup: Option<String>,
    /// A detector that failed on this finish (the verdict then followed
    /// the skill's `on_error`).
    pub critic_error: Option<String>,
    /// Whether the patch judged at this finish resolves the instance (its
    /// golden tests pass); `None`: not graded.
    pub resolved: Option<bool>,
}

/// Why the database failed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: results database: {source}")]
pub struct DbError {
    path: PathBuf,
    source: rusqlite::Error,
}

/// The database, shared by the workers.
pub struct Db {
    path: PathBuf,
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  instance_id TEXT NOT NULL, arm TEXT NOT NULL, sample INTEGER NOT NULL,
  status TEXT NOT NULL, error_class TEXT, error TEXT,
  resolved INTEGER, f2p_fails_on_base INTEGER, f2p_passes_on_golden INTEGER,
  finishes INTEGER NOT NULL, rounds INTEGER NOT NULL, budget_exhausted INTEGER NOT NULL,
  outcome_test TEXT, tokens INTEGER, cost REAL, duration_s REAL NOT NULL,
  attempts INTEGER NOT NULL, model_patch TEXT NOT NULL, grade_problem TEXT,
  usage_source TEXT, model_calls INTEGER, definition TEXT,
  PRIMARY KEY (instance_id, arm, sample));
CREATE TABLE IF NOT EXISTS rounds (
  instance_id TEXT NOT NULL, arm TEXT NOT NULL, sample INTEGER NOT NULL, round INTEGER NOT NULL,
  turn_exit INTEGER, turn_s REAL NOT NULL, verdict TEXT NOT NULL,
  budget_exhausted INTEGER NOT NULL, followup TEXT, critic_error TEXT, resolved INTEGER,
  PRIMARY KEY (instance_id, arm, sample, round));
CREATE TABLE IF NOT EXISTS instances (
  instance_id TEXT NOT NULL PRIMARY KEY, broken INTEGER NOT NULL, reason TEXT, log_tail TEXT);
CREATE TABLE IF NOT EXISTS attempts (
  instance_id TEXT NOT NULL, arm TEXT NOT NULL, sample INTEGER NOT NULL, attempt INTEGER NOT NULL,
  status TEXT NOT NULL, error_class TEXT, error TEXT, duration_s REAL NOT NULL,
  PRIMARY KEY (instance_id, arm, sample, attempt));
";

impl Db {
    /// Open (or create) the database at `path`.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        let err = |source| DbError {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(err)?;
        // Workers of several processes (shards into one OUT are refused,
        // but `status` reads while a run writes) wait instead of failing.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        // Databases of older versions get the columns added since, in
        // the order a new one has them.
        for (table, column, kind) in [
            ("runs", "grade_problem", "TEXT"),
            ("runs", "usage_source", "TEXT"),
            ("runs", "model_calls", "INTEGER"),
            ("rounds", "critic_error", "TEXT"),
            ("runs", "definition", "TEXT"),
            ("rounds", "resolved", "INTEGER"),
        ] {
            let has: bool = conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
                    [column],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(err)?
                > 0;
            if !has {
                conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                    .map_err(err)?;
            }
        }
        Ok(Db {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    fn err(&self, source: rusqlite::Error) -> DbError {
        DbError {
            path: self.path.clone(),
            source,
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What is stored of `key`: its status, attempts so far and definition.
    pub fn stored(&self, key: &RunKey) -> Result<Option<Stored>, DbError> {
        let row: Option<(String, u32, Option<String>)> = self
            .conn()
            .query_row(
                "SELECT status, attempts, definition FROM runs \
                 WHERE instance_id=?1 AND arm=?2 AND sample=?3",
                params![key.instance_id, key.arm, key.sample],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(s, attempts, definition)| {
            Status::parse(&s).map(|status| Stored {
                status,
                attempts,
                definition,
            })
        }))
    }

    /// Record `definition` as the one `key` was made under (a run of an
    /// older version, adopted as it is).
    pub fn set_definition(&self, key: &RunKey, definition: &str) -> Result<(), DbError> {
        self.conn()
            .execute(
                "UPDATE runs SET definition=?4 WHERE instance_id=?1 AND arm=?2 AND sample=?3",
                params![key.instance_id, key.arm, key.sample, definition],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Remove the runs `keys` (rows, rounds and attempts) and give back
    /// what was stored of each, as JSON.
    pub fn take(&self, keys: &[RunKey]) -> Result<Vec<serde_json::Value>, DbError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: std::collections::BTreeSet<&RunKey> = keys.iter().collect();
        let mut rounds = self.rounds()?;
        let mut taken = Vec::new();
        for run in self.runs()?.into_iter().filter(|r| wanted.contains(&r.key)) {
            let definition = self.stored(&run.key)?.and_then(|s| s.definition);
            taken.push(serde_json::json!({
                "run": run,
                "rounds": rounds.remove(&run.key).unwrap_or_default(),
                "definition": definition
                    .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok()),
            }));
        }
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        for k in keys {
            for table in ["runs", "rounds", "attempts"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE instance_id=?1 AND arm=?2 AND sample=?3"),
                    params![k.instance_id, k.arm, k.sample],
                )
                .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(taken)
    }

    /// Every stored run's key.
    pub fn keys(&self) -> Result<Vec<RunKey>, DbError> {
        Ok(self.runs()?.into_iter().map(|r| r.key).collect())
    }

    /// Store a finished run with its rounds and `definition`, replacing an
    /// earlier attempt's, and log the attempt.
    pub fn finish(
        &self,
        run: &Run,
        rounds: &[Round],
        definition: Option<&str>,
    ) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let k = &run.key;
        let write = |tx: &rusqlite::Transaction| -> rusqlite::Result<()> {
            tx.execute(
                "DELETE FROM rounds WHERE instance_id=?1 AND arm=?2 AND sample=?3",
                params![k.instance_id, k.arm, k.sample],
            )?;
            tx.execute(
                "INSERT OR REPLACE INTO runs VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
                params![
                    k.instance_id,
                    k.arm,
                    k.sample,
                    run.status.name(),
                    run.error_class,
                    run.error,
                    run.resolved,
                    run.f2p.map(|f| f.fails_on_base),
                    run.f2p.map(|f| f.passes_on_golden),
                    run.finishes,
                    run.rounds,
                    run.budget_exhausted,
                    run.outcome_test,
                    run.tokens.map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
                    run.cost,
                    run.duration_s,
                    run.attempts,
                    run.model_patch,
                    run.grade_problem,
                    run.usage_source,
                    run.model_calls,
                    definition,
                ],
            )?;
            for r in rounds {
                tx.execute(
                    "INSERT INTO rounds VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
                    params![
                        k.instance_id,
                        k.arm,
                        k.sample,
                        r.round,
                        r.turn_exit,
                        r.turn_s,
                        r.verdict,
                        r.budget_exhausted,
                        r.followup,
                        r.critic_error,
                        r.resolved
                    ],
                )?;
            }
            tx.execute(
                "INSERT OR REPLACE INTO attempts VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                params![
                    k.instance_id,
                    k.arm,
                    k.sample,
                    run.attempts,
                    run.status.name(),
                    run.error_class,
                    run.error,
                    run.duration_s
                ],
            )?;
            Ok(())
        };
        write(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// Replace the status and grade of `run` (a regrade), its rounds kept.
    pub fn regrade(&self, run: &Run) -> Result<(), DbError> {
        let k = &run.key;
        self.conn()
            .execute(
                "UPDATE runs SET status=?4, error_class=?5, error=?6, resolved=?7, \
                 f2p_fails_on_base=?8, f2p_passes_on_golden=?9, grade_problem=?10 \
                 WHERE instance_id=?1 AND arm=?2 AND sample=?3",
                params![
                    k.instance_id,
                    k.arm,
                    k.sample,
                    run.status.name(),
                    run.error_class,
                    run.error,
                    run.resolved,
                    run.f2p.map(|f| f.fails_on_base),
                    run.f2p.map(|f| f.passes_on_golden),
                    run.grade_problem,
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Take every run of the database at `other` (its rounds and attempts
    /// too). A run both hold must agree on its result; the runs that do
    /// not are returned and nothing is taken.
    pub fn absorb(&self, other: &Path) -> Result<Vec<RunKey>, DbError> {
        // Its tables as this version writes them (an older one gains columns).
        drop(Db::open(other)?);
        let mut conn = self.conn();
        conn.execute(
            "ATTACH DATABASE ?1 AS other",
            params![other.to_string_lossy()],
        )
        .map_err(|e| self.err(e))?;
        let result = (|| -> rusqlite::Result<Vec<RunKey>> {
            let tx = conn.transaction()?;
            let clashes = {
                let mut stmt = tx.prepare(
                    "SELECT o.instance_id, o.arm, o.sample FROM other.runs o JOIN main.runs m \
                     USING (instance_id, arm, sample) \
                     WHERE o.status != 'infra_error' AND m.status != 'infra_error' \
                     AND (o.status IS NOT m.status \
                     OR o.resolved IS NOT m.resolved \
                     OR o.f2p_fails_on_base IS NOT m.f2p_fails_on_base \
                     OR o.f2p_passes_on_golden IS NOT m.f2p_passes_on_golden \
                     OR o.finishes IS NOT m.finishes OR o.rounds IS NOT m.rounds \
                     OR o.model_patch IS NOT m.model_patch) ORDER BY 1, 2, 3",
                )?;
                let rows = stmt.query_map([], |r| {
                    Ok(RunKey {
                        instance_id: r.get(0)?,
                        arm: r.get(1)?,
                        sample: r.get(2)?,
                    })
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            if clashes.is_empty() {
                // An infrastructure error is not a result: the other's
                // result for the same run takes its place.
                for table in ["rounds", "runs"] {
                    tx.execute(
                        &format!(
                            "DELETE FROM main.{table} WHERE (instance_id, arm, sample) IN \
                             (SELECT m.instance_id, m.arm, m.sample FROM main.runs m \
                              JOIN other.runs o USING (instance_id, arm, sample) \
                              WHERE m.status = 'infra_error' AND o.status != 'infra_error')"
                        ),
                        [],
                    )?;
                }
                for table in ["runs", "rounds", "attempts"] {
                    tx.execute(
                        &format!("INSERT OR IGNORE INTO main.{table} SELECT * FROM other.{table}"),
                        [],
                    )?;
                }
                // A shard's pre-flight of an instance: a broken one stays so.
                tx.execute(
                    "INSERT INTO main.instances SELECT * FROM other.instances WHERE true \
                     ON CONFLICT(instance_id) DO UPDATE SET broken = max(broken, excluded.broken), \
                     reason = coalesce(reason, excluded.reason), \
                     log_tail = coalesce(log_tail, excluded.log_tail)",
                    [],
                )?;
                tx.commit()?;
            }
            Ok(clashes)
        })();
        let detached = conn.execute("DETACH DATABASE other", []);
        let clashes = result.map_err(|e| self.err(e))?;
        detached.map_err(|e| self.err(e))?;
        Ok(clashes)
    }

    /// Every stored run, in key order.
    pub fn runs(&self) -> Result<Vec<Run>, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT instance_id, arm, sample, status, error_class, error, resolved, \
                 f2p_fails_on_base, f2p_passes_on_golden, finishes, rounds, budget_exhausted, \
                 outcome_test, tokens, cost, duration_s, attempts, model_patch, grade_problem, \
                 usage_source, model_calls FROM runs \
                 ORDER BY instance_id, arm, sample",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let status: String = r.get(3)?;
                let fails: Option<bool> = r.get(7)?;
                let passes: Option<bool> = r.get(8)?;
                Ok(Run {
                    key: RunKey {
                        instance_id: r.get(0)?,
                        arm: r.get(1)?,
                        sample: r.get(2)?,
                    },
                    status: Status::parse(&status).unwrap_or(Status::InfraError),
                    error_class: r.get(4)?,
                    error: r.get(5)?,
                    resolved: r.get(6)?,
                    f2p: fails.zip(passes).map(|(f, p)| F2p {
                        fails_on_base: f,
                        passes_on_golden: p,
                    }),
                    finishes: r.get(9)?,
                    rounds: r.get(10)?,
                    budget_exhausted: r.get(11)?,
                    outcome_test: r.get(12)?,
                    tokens: r.get::<_, Option<i64>>(13)?.map(|t| t.max(0) as u64),
                    cost: r.get(14)?,
                    duration_s: r.get(15)?,
                    attempts: r.get(16)?,
                    model_patch: r.get(17)?,
                    grade_problem: r.get(18)?,
                    usage_source: r.get(19)?,
                    model_calls: r.get(20)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Every stored round, by run, in round order.
    pub fn rounds(&self) -> Result<BTreeMap<RunKey, Vec<Round>>, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT instance_id, arm, sample, round, turn_exit, turn_s, verdict, \
                 budget_exhausted, followup, critic_error, resolved FROM rounds \
                 ORDER BY instance_id, arm, sample, round",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    RunKey {
                        instance_id: r.get(0)?,
                        arm: r.get(1)?,
                        sample: r.get(2)?,
                    },
                    Round {
                        round: r.get(3)?,
                        turn_exit: r.get(4)?,
                        turn_s: r.get(5)?,
                        verdict: r.get(6)?,
                        budget_exhausted: r.get(7)?,
                        followup: r.get(8)?,
                        critic_error: r.get(9)?,
                        resolved: r.get(10)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut by_run: BTreeMap<RunKey, Vec<Round>> = BTreeMap::new();
        for row in rows {
            let (key, round) = row.map_err(|e| self.err(e))?;
            by_run.entry(key).or_default().push(round);
        }
        Ok(by_run)
    }

    #[cfg(test)]
    /// Every attempt logged, in key and attempt order.
    pub fn attempts(&self) -> Result<Vec<Attempt>, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT instance_id, arm, sample, attempt, status, error_class FROM attempts \
                 ORDER BY instance_id, arm, sample, attempt",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Attempt {
                    key: RunKey {
                        instance_id: r.get(0)?,
                        arm: r.get(1)?,
                        sample: r.get(2)?,
                    },
                    attempt: r.get(3)?,
                    status: r.get(4)?,
                    error_class: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

/// An instance whose golden patch the pre-flight could not grade resolved:
/// its environment or record is broken, and its runs are not made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Broken {
    /// The instance.
    pub instance_id: String,
    /// Why.
    pub reason: String,
    /// The end of its grading run's log (console, summary, pytest's report).
    pub log_tail: String,
}

impl Db {
    /// Record the pre-flight of `instance_id`: `None` when its golden patch
    /// resolved it.
    pub fn set_preflight(&self, instance_id: &str, broken: Option<&Broken>) -> Result<(), DbError> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO instances VALUES (?1, ?2, ?3, ?4)",
                params![
                    instance_id,
                    broken.is_some(),
                    broken.map(|b| &b.reason),
                    broken.map(|b| &b.log_tail)
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every instance the last pre-flight found broken, in id order.
    pub fn broken(&self) -> Result<Vec<Broken>, DbError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT instance_id, reason, log_tail FROM instances WHERE broken \
                 ORDER BY instance_id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Broken {
                    instance_id: r.get(0)?,
                    reason: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    log_tail: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
/// One logged attempt of a run.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The run.
    pub key: RunKey,
    /// 1-based.
    pub attempt: u32,
    /// How it ended.
    pub status: String,
    /// The class of its failure.
    pub error_class: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: Status, attempts: u32) -> Run {
        Run {
            key: RunKey {
                instance_id: "a__b-1".into(),
                arm: "fix-only".into(),
                sample: 0,
            },
            status,
            error_class: (status == Status::InfraError).then(|| "workspace".into()),
            error: None,
            resolved: Some(true),
            grade_problem: None,
            f2p: Some(F2p {
                fails_on_base: true,
                passes_on_golden: false,
            }),
            finishes: 2,
            rounds: 2,
            budget_exhausted: false,
            outcome_test: None,
            tokens: None,
            cost: None,
            usage_source: None,
            model_calls: None,
            duration_s: 1.5,
            attempts,
            model_patch: "diff".into(),
        }
    }

    #[test]
    fn a_merge_takes_a_result_over_an_infrastructure_error_and_refuses_disagreements() {
        let dir = tempfile::tempdir().unwrap();
        let merged = Db::open(&dir.path().join("m.sqlite")).unwrap();
        let shard = Db::open(&dir.path().join("s.sqlite")).unwrap();
        merged
            .finish(&run(Status::InfraError, 1), &[], None)
            .unwrap();
        shard.finish(&run(Status::Ok, 2), &[], None).unwrap();
        assert!(merged
            .absorb(&dir.path().join("s.sqlite"))
            .unwrap()
            .is_empty());
        assert_eq!(merged.runs().unwrap()[0].status, Status::Ok);
        // An error does not displace a result either way.
        let late = Db::open(&dir.path().join("late.sqlite")).unwrap();
        late.finish(&run(Status::InfraError, 3), &[], None).unwrap();
        assert!(merged
            .absorb(&dir.path().join("late.sqlite"))
            .unwrap()
            .is_empty());
        assert_eq!(merged.runs().unwrap()[0].status, Status::Ok);
        // Two results that differ are refused.
        let other = Db::open(&dir.path().join("o.sqlite")).unwrap();
        let mut differs = run(Status::Ok, 1);
        differs.resolved = Some(false);
        other.finish(&differs, &[], None).unwrap();
        assert_eq!(
            merged.absorb(&dir.path().join("o.sqlite")).unwrap().len(),
            1
        );
        assert_eq!(merged.runs().unwrap()[0].resolved, Some(true));
    }

    #[test]
    fn a_rerun_replaces_the_row_and_keeps_every_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("r.sqlite")).unwrap();
        let key = run(Status::Ok, 1).key;
        assert_eq!(db.stored(&key).unwrap(), None);
        let round = Round {
            round: 1,
            turn_exit: Some(0),
            turn_s: 0.5,
            verdict: "rejected".into(),
            budget_exhausted: false,
            followup: Some("again".into()),
            critic_error: None,
            resolved: None,
        };
        db.finish(
            &run(Status::InfraError, 1),
            std::slice::from_ref(&round),
            Some("{}"),
        )
        .unwrap();
        assert_eq!(
            db.stored(&key).unwrap(),
            Some(Stored {
                status: Status::InfraError,
                attempts: 1,
                definition: Some("{}".into())
            })
        );
        db.finish(&run(Status::Ok, 2), &[round], None).unwrap();
        let db = Db::open(&dir.path().join("r.sqlite")).unwrap();
        let runs = db.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, Status::Ok);
        assert!(runs[0].f2p.unwrap().fails_on_base);
        let attempts = db.attempts().unwrap();
        let statuses: Vec<&str> = attempts.iter().map(|a| a.status.as_str()).collect();
        assert_eq!(statuses, ["infra_error", "ok"]);
        // A superseded run leaves the database whole, and is given back.
        db.set_definition(&key, "{\"sample\":0}").unwrap();
        let taken = db.take(std::slice::from_ref(&key)).unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0]["run"]["status"], "ok");
        assert_eq!(taken[0]["rounds"][0]["followup"], "again");
        assert_eq!(taken[0]["definition"]["sample"], 0);
        assert_eq!(db.stored(&key).unwrap(), None);
        assert!(db.attempts().unwrap().is_empty() && db.rounds().unwrap().is_empty());
    }
}
