//! Which test the algorithm returns. Algorithm 1 puts t0 back on a
//! regression (t_k := t0) and, when the budget ends after one, returns
//! (t0, c_K); the host never writes the workspace, so instead every verdict
//! says which test stands, with its digest, and when it is t0 the feedback
//! directory carries t0 under `final-test/` for a runner to put in place.

use crate::state::{Phase, State, TestFiles};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Which test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Returned {
    /// The Round 0 test, t0: the workspace's test is not the one returned.
    #[serde(rename = "t0")]
    T0,
    /// The agent's current test, as in the workspace.
    #[serde(rename = "t_k")]
    Tk,
}

/// The `outcome` of a verdict's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// Which test.
    pub test: Returned,
    /// SHA-256 of `test_file`'s content in that test (`None`: it has no such file).
    pub test_sha256: Option<String>,
    /// The test file (the configured one when the test has it, else its first file).
    pub test_file: String,
}

/// The directory under the skill's feedback directory that holds t0.
pub const FINAL_TEST_DIR: &str = "final-test";

/// The outcome after this finish: the stored one once the algorithm has
/// returned, t0 after a regression, else the agent's test `current`; plus
/// the feedback files that go with it (t0's files under [`FINAL_TEST_DIR`]).
pub fn of(
    state: &State,
    current: &TestFiles,
    test_file: &str,
) -> (TestOutcome, Vec<(String, String)>) {
    if let (Phase::Done, Some(done)) = (state.phase, &state.outcome) {
        let files = final_files(done, &state.t0);
        return (done.clone(), files);
    }
    let (test, files) = if state.reverted() {
        (Returned::T0, &state.t0)
    } else {
        (Returned::Tk, current)
    };
    let outcome = describe(test, files, test_file);
    let artifacts = final_files(&outcome, &state.t0);
    (outcome, artifacts)
}

fn describe(test: Returned, files: &TestFiles, test_file: &str) -> TestOutcome {
    let path = if files.contains_key(test_file) {
        test_file.to_string()
    } else {
        files
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| test_file.to_string())
    };
    let test_sha256 = files
        .get(&path)
        .and_then(Option::as_deref)
        .map(|text| hex(&Sha256::digest(text.as_bytes())));
    TestOutcome {
        test,
        test_sha256,
        test_file: path,
    }
}

fn final_files(outcome: &TestOutcome, t0: &TestFiles) -> Vec<(String, String)> {
    if outcome.test != Returned::T0 {
        return Vec::new();
    }
    t0.iter()
        .filter_map(|(path, text)| Some((format!("{FINAL_TEST_DIR}/{path}"), text.clone()?)))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Decision, RoundRecord};

    fn files(text: &str) -> TestFiles {
        TestFiles::from([("reproduction.py".to_string(), Some(text.to_string()))])
    }

    fn round(reverted: bool) -> RoundRecord {
        RoundRecord {
            round: 1,
            decision: Decision::Regression,
            matrix: Default::default(),
            laxity: None,
            inconclusive: true,
            test_changed: true,
            mutants: Vec::new(),
            excluded: Vec::new(),
            reverted,
            vs_previous: Default::default(),
        }
    }

    #[test]
    fn t0_after_a_regression_with_its_file_else_the_agents_test() {
        let mut s = State::new("abc", true);
        s.t0 = files("T0\n");
        let (o, art) = of(&s, &files("TK\n"), "reproduction.py");
        assert_eq!((o.test, art.len()), (Returned::Tk, 0));
        assert_eq!(
            o.test_sha256.as_deref(),
            Some("b8e790f65dae6ef7cf6bcc84a90deca10f0a9d0a1baca304e0346b3ec0f59552")
        );
        s.rounds.push(round(true));
        let (o, art) = of(&s, &files("TK\n"), "reproduction.py");
        assert_eq!(o.test, Returned::T0);
        assert_eq!(
            art,
            vec![("final-test/reproduction.py".to_string(), "T0\n".to_string())]
        );
        assert_ne!(
            o.test_sha256,
            of(&State::new("abc", true), &files("TK\n"), "reproduction.py")
                .0
                .test_sha256
        );
    }

    #[test]
    fn once_returned_the_outcome_stays() {
        let mut s = State::new("abc", true);
        s.t0 = files("T0\n");
        s.phase = Phase::Done;
        s.outcome = Some(describe(Returned::T0, &s.t0, "reproduction.py"));
        let (o, art) = of(&s, &files("LATER\n"), "reproduction.py");
        assert_eq!(o.test, Returned::T0);
        assert_eq!(art.len(), 1);
    }
}
