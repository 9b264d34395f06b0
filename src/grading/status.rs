//! SWE-bench's grading rules (`swebench.harness.grading`, 5.0.x): the five
//! statuses its log parsers give a test, the status map they build (a
//! Python dict: a key keeps its first place, a later line overwrites its
//! status), how an expected id is found in it, and which ids count as
//! resolved for `FAIL_TO_PASS` and `PASS_TO_PASS`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A test's status as SWE-bench's parsers name it. `XPASS` is none of
/// them: a test that passed against its `xfail` mark is absent from the
/// map, so it counts as missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// `PASSED`.
    Passed,
    /// `FAILED`.
    Failed,
    /// `SKIPPED`.
    Skipped,
    /// `ERROR`.
    Error,
    /// `XFAIL`.
    Xfail,
}

impl Status {
    /// The word a parser reads at the start of a line, if it is one.
    pub fn of_word(word: &str) -> Option<Status> {
        Some(match word {
            "PASSED" => Status::Passed,
            "FAILED" => Status::Failed,
            "SKIPPED" => Status::Skipped,
            "ERROR" => Status::Error,
            "XFAIL" => Status::Xfail,
            _ => return None,
        })
    }

    /// Its word.
    pub fn word(self) -> &'static str {
        match self {
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Skipped => "SKIPPED",
            Status::Error => "ERROR",
            Status::Xfail => "XFAIL",
        }
    }

    /// Every status, in the order SWE-bench's enum lists them (the order a
    /// parser tries prefixes in).
    pub const ALL: [Status; 5] = [
        Status::Failed,
        Status::Passed,
        Status::Skipped,
        Status::Error,
        Status::Xfail,
    ];

    /// `PASSED` and `XFAIL` grade the same: the test did what it should.
    pub fn passing(self) -> bool {
        matches!(self, Status::Passed | Status::Xfail)
    }
}

/// Test id to status, in the order ids first appeared: a Python dict.
pub type StatusMap = IndexMap<String, Status>;

/// How an instance's ids are graded (`eval_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalType {
    /// An id passes only when found passing (every Python repository).
    #[default]
    PassAndFail,
    /// An id fails only when found `FAILED`.
    FailOnly,
}

impl EvalType {
    /// The record's `eval_type`.
    pub fn of_name(name: &str) -> Option<EvalType> {
        match name {
            "pass_and_fail" => Some(EvalType::PassAndFail),
            "fail_only" => Some(EvalType::FailOnly),
            _ => None,
        }
    }
}

/// How an expected id was found in the status map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The map holds it as it is.
    Exact,
    /// The map holds it as it is, but only because the parser cut the
    /// test's id at its first space (a parameter with a space in it); the
    /// whole id is recorded beside it.
    FirstSpace,
    /// An id cut inside its parameters: the first map id it begins, when
    /// every id it begins passes, or every one fails.
    Prefix,
    /// Not found.
    Missing,
}

/// Which list an id is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum List {
    /// `FAIL_TO_PASS`: must pass.
    #[serde(rename = "FAIL_TO_PASS")]
    FailToPass,
    /// `PASS_TO_PASS`: must still pass (a skip is no regression).
    #[serde(rename = "PASS_TO_PASS")]
    PassToPass,
}

/// One expected id, graded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdGrade {
    /// The id as the instance gives it.
    pub id: String,
    /// Its list.
    pub list: List,
    /// The map id it was found as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Its status there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// How it was found.
    pub rule: Rule,
    /// The test's whole id, where the runner's report names one the map id
    /// stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// Whether it counts as a success.
    pub success: bool,
}

/// SWE-bench's `_resolve_case`: the map id `case` is found as.
pub fn resolve_case<'a>(case: &str, map: &'a StatusMap) -> Option<(&'a str, Rule)> {
    if let Some((k, _)) = map.get_key_value(case) {
        return Some((k.as_str(), Rule::Exact));
    }
    // Only an id cut inside its parameters (more `[` than `]`) is looked
    // up by prefix, and only when the ids it begins agree on passing.
    if case.matches('[').count() > case.matches(']').count() {
        let mut matches = map.iter().filter(|(k, _)| k.starts_with(case));
        let (first, status) = matches.next()?;
        if matches.all(|(_, s)| s.passing() == status.passing()) {
            return Some((first.as_str(), Rule::Prefix));
        }
    }
    None
}

/// Grade every id of `fail_to_pass` and `pass_to_pass` against `map` as
/// SWE-bench's `get_eval_tests_report` does; `whole_id` names the full
/// test id behind a map id, where a report gives one.
pub fn grade_ids(
    map: &StatusMap,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
    whole_id: &dyn Fn(&str) -> Option<String>,
) -> Vec<IdGrade> {
    let lists = fail_to_pass
        .iter()
        .map(|id| (id, List::FailToPass))
        .chain(pass_to_pass.iter().map(|id| (id, List::PassToPass)));
    lists
        .map(|(id, list)| {
            let found = match eval_type {
                EvalType::PassAndFail => resolve_case(id, map),
                // `check_fail_only` looks the id up as it is.
                EvalType::FailOnly => map
                    .get_key_value(id.as_str())
                    .map(|(k, _)| (k.as_str(), Rule::Exact)),
            };
            let status = found.map(|(k, _)| map[k]);
            let success = match (eval_type, list) {
                (EvalType::FailOnly, _) => status != Some(Status::Failed),
                (EvalType::PassAndFail, List::FailToPass) => status.is_some_and(Status::passing),
                (EvalType::PassAndFail, List::PassToPass) => {
                    status.is_some_and(|s| s.passing() || s == Status::Skipped)
                }
            };
            let test = found.and_then(|(k, _)| whole_id(k));
            let rule = match found {
                None => Rule::Missing,
                Some((k, Rule::Exact)) if test.as_deref().is_some_and(|t| t != k) => {
                    Rule::FirstSpace
                }
                Some((_, rule)) => rule,
            };
            IdGrade {
                id: id.clone(),
                list,
                key: found.map(|(k, _)| k.to_string()),
                status,
                rule,
                test,
                success,
            }
        })
        .collect()
}

/// SWE-bench's `get_resolution_status` is `RESOLVED_FULL`: every id of
/// both lists succeeded.
pub fn resolved(grades: &[IdGrade]) -> bool {
    grades.iter().all(|g| g.success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Status)]) -> StatusMap {
        entries.iter().map(|(k, s)| (k.to_string(), *s)).collect()
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn statuses_count_as_swe_bench_counts_them() {
        let m = map(&[
            ("t::pass", Status::Passed),
            ("t::xfail", Status::Xfail),
            ("t::skip", Status::Skipped),
            ("t::fail", Status::Failed),
            ("t::error", Status::Error),
        ]);
        let all = ids(&[
            "t::pass", "t::xfail", "t::skip", "t::fail", "t::error", "t::gone",
        ]);
        let f2p = grade_ids(&m, &all, &[], EvalType::PassAndFail, &none);
        let ok: Vec<bool> = f2p.iter().map(|g| g.success).collect();
        assert_eq!(ok, [true, true, false, false, false, false]);
        // A skip is no regression for PASS_TO_PASS.
        let p2p = grade_ids(&m, &[], &all, EvalType::PassAndFail, &none);
        let ok: Vec<bool> = p2p.iter().map(|g| g.success).collect();
        assert_eq!(ok, [true, true, true, false, false, false]);
        assert_eq!(p2p[5].rule, Rule::Missing);
        // fail_only: only FAILED fails; a missing id succeeds.
        let fo = grade_ids(&m, &all, &[], EvalType::FailOnly, &none);
        let ok: Vec<bool> = fo.iter().map(|g| g.success).collect();
        assert_eq!(ok, [true, true, true, false, true, true]);
        assert!(!resolved(&f2p));
        assert!(resolved(&f2p[..2]));
    }

    #[test]
    fn cut_ids_are_found_by_prefix_only_when_their_matches_agree() {
        let m = map(&[
            ("t.py::test_a[log(photon", Status::Passed),
            ("t.py::test_a[log(photon)]", Status::Passed),
            ("t.py::test_a[log(photon)-x]", Status::Xfail),
            ("t.py::test_b[x-1]", Status::Passed),
            ("t.py::test_b[x-2]", Status::Failed),
        ]);
        // Exact first.
        assert_eq!(
            resolve_case("t.py::test_a[log(photon", &m),
            Some(("t.py::test_a[log(photon", Rule::Exact))
        );
        assert_eq!(
            resolve_case("t.py::test_a[log(pho", &m),
            Some(("t.py::test_a[log(photon", Rule::Prefix))
        );
        // The matches disagree on passing: not found.
        assert_eq!(resolve_case("t.py::test_b[x", &m), None);
        // Balanced brackets are never looked up by prefix.
        assert_eq!(resolve_case("t.py::test_b[x-]", &m), None);
        assert_eq!(resolve_case("t.py::test_", &m), None);
    }

    #[test]
    fn an_id_the_parser_cut_at_its_space_is_recorded_with_the_whole_id() {
        let m = map(&[("t.py::test_size[1", Status::Passed)]);
        let whole = |k: &str| (k == "t.py::test_size[1").then(|| "t.py::test_size[1 Byte]".into());
        let g = grade_ids(
            &m,
            &ids(&["t.py::test_size[1"]),
            &[],
            EvalType::PassAndFail,
            &whole,
        );
        assert_eq!(g[0].rule, Rule::FirstSpace);
        assert_eq!(g[0].test.as_deref(), Some("t.py::test_size[1 Byte]"));
        assert!(g[0].success);
    }
}
