//! The runs of a round, all in scratch copies through the host's `run-matrix`
//! capability: fail-to-pass of (t_k, c_k), every mutant against t_k and
//! t_ref (the Temporal Matrix), and the previous round's survivors against
//! t_k.

use crate::config::Config;
use crate::matrix::Cell;
use crate::pool::Candidate;
use crate::state::TestFiles;
use critic_sdk::host::run_matrix;
use critic_sdk::reproduction::Outcome;
use critic_sdk::{RunRequest, RunResult};
use std::collections::BTreeMap;

/// Builds run requests for one round.
pub struct Runs<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The finish's whole patch (t_k and c_k).
    pub patch: &'a str,
    /// t_k.
    pub test: &'a TestFiles,
    /// t_ref.
    pub reference: &'a TestFiles,
}

impl Runs<'_> {
    fn request(&self, patch: Option<&str>, files: BTreeMap<String, Option<String>>) -> RunRequest {
        RunRequest {
            patch: patch.map(str::to_string),
            files,
            argv: self.config.test_command.clone(),
            timeout_ms: Some(self.config.test_timeout_secs * 1000),
            ..RunRequest::default()
        }
    }

    /// The base with `tests` written over it (and nothing else).
    pub fn test_on_base(&self, tests: &TestFiles) -> RunRequest {
        self.request(None, tests.clone())
    }

    /// The base with the finish's whole patch.
    pub fn with_patch(&self) -> RunRequest {
        self.request(Some(self.patch), BTreeMap::new())
    }

    /// The test files as t_ref has them: t_ref's content, and t_k's other
    /// test files removed.
    fn reference_files(&self) -> TestFiles {
        let mut files: TestFiles = self.test.keys().map(|p| (p.clone(), None)).collect();
        files.extend(self.reference.clone());
        files
    }

    /// What one run of t_k says.
    pub fn outcome(&self, run: &RunResult) -> Outcome {
        let paths: Vec<&str> = self.test.keys().map(String::as_str).collect();
        Outcome::of(run, self.config.bug_exit_code, &paths)
    }

    fn reference_outcome(&self, run: &RunResult) -> Outcome {
        let paths: Vec<&str> = self.reference.keys().map(String::as_str).collect();
        Outcome::of(run, self.config.bug_exit_code, &paths)
    }

    fn mutant(&self, c: &Candidate, reference: bool) -> RunRequest {
        let mut files: TestFiles = c
            .files
            .iter()
            .map(|(p, t)| (p.clone(), Some(t.clone())))
            .collect();
        if reference {
            files.extend(self.reference_files());
        }
        self.request(Some(self.patch), files)
    }

    /// Fail-to-pass: t_k alone on the base, then the whole patch.
    pub fn fail_to_pass(&self) -> Result<(RunResult, RunResult), String> {
        let mut results = run_matrix(&[self.test_on_base(self.test), self.with_patch()])?;
        let pass = results.pop().ok_or("run-matrix returned too few results")?;
        let fail = results.pop().ok_or("run-matrix returned too few results")?;
        Ok((fail, pass))
    }

    /// Each candidate's cell, or why it is excluded. When t_k and t_ref are
    /// the same files, each mutant runs once.
    pub fn matrix(&self, candidates: &[Candidate]) -> Result<Vec<Result<Cell, String>>, String> {
        let same = self.reference_files() == *self.test;
        let mut requests = Vec::new();
        for c in candidates {
            requests.push(self.mutant(c, false));
            if !same {
                requests.push(self.mutant(c, true));
            }
        }
        let results = run_matrix(&requests)?;
        let per = if same { 1 } else { 2 };
        if results.len() != candidates.len() * per {
            return Err(format!(
                "run-matrix returned {} results for {} requests",
                results.len(),
                candidates.len() * per
            ));
        }
        let secs = self.config.test_timeout_secs;
        Ok(results
            .chunks(per)
            .map(|runs| {
                let on_test = self.outcome(&runs[0]);
                let on_ref = match runs.get(1) {
                    Some(run) => self.reference_outcome(run),
                    None => on_test.clone(),
                };
                for (which, o) in [("the test", &on_test), ("the reference test", &on_ref)] {
                    if !o.is_verdict() {
                        return Err(format!("under {which} it {}", o.describe(secs)));
                    }
                }
                Ok(Cell::of(on_test == Outcome::Pass, on_ref == Outcome::Pass))
            })
            .collect())
    }

    /// Whether each of `mutants` passes t_k (`Ok(true)`: it survives), or why
    /// its run says nothing.
    pub fn survive(&self, mutants: &[Candidate]) -> Result<Vec<Result<bool, String>>, String> {
        if mutants.is_empty() {
            return Ok(Vec::new());
        }
        let requests: Vec<RunRequest> = mutants.iter().map(|c| self.mutant(c, false)).collect();
        let results = run_matrix(&requests)?;
        if results.len() != mutants.len() {
            return Err(format!(
                "run-matrix returned {} results for {} requests",
                results.len(),
                mutants.len()
            ));
        }
        let secs = self.config.test_timeout_secs;
        Ok(results
            .iter()
            .map(|run| match self.outcome(run) {
                o if o.is_verdict() => Ok(o == Outcome::Pass),
                o => Err(format!("under the test it {}", o.describe(secs))),
            })
            .collect())
    }
}
