//! Replaying a recorded run's model calls: which recorded exchange answers
//! a request, and, when none does, where the request first differs from the
//! one the recording expected next.
//!
//! Requests are compared as the agent would make them again in another
//! output directory on another day: the run's own paths (its directory, its
//! workspace, the output directory, and Claude Code's project names made of
//! them) stand as placeholders, and so do UUIDs, dates, times and
//! durations, which agents put in ids, system prompts and tool outputs (a
//! test run's "passed in 0.12s"); `metadata`, `user`, `prompt_cache_key`
//! and `client_metadata` (session ids, a turn's start time) are left out.
//! Everything else (the messages, the tools, the model, the sampling
//! settings) must be equal.

use super::exchange::Exchange;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// Top-level request fields that name the session, not the trajectory.
const SESSION_FIELDS: [&str; 4] = ["metadata", "user", "prompt_cache_key", "client_metadata"];

/// How one run's requests are made comparable across output directories.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    /// Paths of this run and what stands for them, longest first.
    paths: Vec<(String, &'static str)>,
}

fn volatile() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            // UUIDs, dates, times of day, durations (a test run's "in
            // 0.12s"), and Codex's id of a command's output.
            r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b|\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds)\b|Chunk ID: [0-9a-f]+",
        )
        .expect("a valid pattern")
    })
}

impl Normalizer {
    /// Placeholders for `paths` (each with its name), applied longest first.
    pub fn new(paths: Vec<(String, &'static str)>) -> Normalizer {
        let mut paths: Vec<_> = paths.into_iter().filter(|(p, _)| p.len() > 1).collect();
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        Normalizer { paths }
    }

    fn string(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (path, name) in &self.paths {
            if out.contains(path.as_str()) {
                out = out.replace(path.as_str(), name);
            }
        }
        volatile().replace_all(&out, "$ID").into_owned()
    }

    /// `request` as replay compares it.
    pub fn request(&self, request: &Value) -> Value {
        let mut v = self.value(request);
        if let Some(map) = v.as_object_mut() {
            for field in SESSION_FIELDS {
                map.remove(field);
            }
        }
        v
    }

    fn value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.string(s)),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.value(i)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.string(k), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The digest replay matches by: method, path and the request as
    /// compared, its object keys in sorted order.
    pub fn digest(&self, method: &str, path: &str, request: &Value) -> String {
        let mut h = Sha256::new();
        h.update(method.as_bytes());
        h.update(b"\0");
        h.update(self.string(path).as_bytes());
        h.update(b"\0");
        canonical(&self.request(request), &mut h);
        hex::encode(h.finalize())
    }
}

/// Feed `v` to `h` with object keys sorted, so that key order does not count.
fn canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                h.update(serde_json::to_string(k).unwrap_or_default().as_bytes());
                h.update(b":");
                canonical(&map[k], h);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(items) => {
            h.update(b"[");
            for i in items {
                canonical(i, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

/// Where two values first differ, as a JSON pointer, with a short account.
pub fn first_difference(recorded: &Value, now: &Value) -> Option<String> {
    fn short(v: &Value) -> String {
        let s = v.to_string();
        if s.chars().count() > 80 {
            format!("{}...", s.chars().take(80).collect::<String>())
        } else {
            s
        }
    }
    fn walk(a: &Value, b: &Value, at: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                keys.into_iter().find_map(|k| {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, &here),
                        (Some(p), None) => {
                            Some(format!("{here}: recorded {}, now absent", short(p)))
                        }
                        (None, Some(q)) => Some(format!(
                            "{here}: absent from the recording, now {}",
                            short(q)
                        )),
                        (None, None) => None,
                    }
                })
            }
            (Value::Array(x), Value::Array(y)) => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| walk(p, q, &format!("{at}/{i}")))
                .or_else(|| {
                    (x.len() != y.len())
                        .then(|| format!("{at}: {} items recorded, {} now", x.len(), y.len()))
                }),
            _ if a == b => None,
            (Value::String(x), Value::String(y)) => {
                // Long texts (system prompts) differ somewhere inside:
                // where, with a little around it.
                let at_char = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
                let around = |s: &str| {
                    let from = at_char.saturating_sub(30);
                    let part: String = s.chars().skip(from).take(70).collect();
                    serde_json::to_string(&part).unwrap_or_default()
                };
                Some(format!(
                    "{}: from character {at_char}, recorded {}, now {}",
                    if at.is_empty() { "/" } else { at },
                    around(x),
                    around(y)
                ))
            }
            _ => Some(format!(
                "{}: recorded {}, now {}",
                if at.is_empty() { "/" } else { at },
                short(a),
                short(b)
            )),
        }
    }
    walk(recorded, now, "")
}

/// A run's recording, answering its requests in turn.
#[derive(Debug)]
pub struct Recording {
    exchanges: Vec<Exchange>,
    used: Vec<bool>,
    /// How the recorded run's requests are compared (its own paths).
    recorded_as: Normalizer,
}

/// What the recording says to a request.
pub enum Answer {
    /// This recorded exchange answers it.
    Recorded(Box<Exchange>),
    /// None does: where it departs from what was expected next.
    Diverged(String),
}

impl Recording {
    /// The exchanges the model answered (those the proxy refused itself
    /// are not answers to replay), made in a run whose places
    /// `recorded_as` names.
    pub fn new(exchanges: Vec<Exchange>, recorded_as: Normalizer) -> Recording {
        let exchanges: Vec<Exchange> = exchanges
            .into_iter()
            .filter(|e| e.refused.is_none() && e.status.is_some())
            .collect();
        let used = vec![false; exchanges.len()];
        Recording {
            exchanges,
            used,
            recorded_as,
        }
    }

    /// The first unused recorded exchange with this digest (calls made in
    /// parallel may come in another order), else why none matches: the
    /// first difference from the next unused exchange to the same path.
    pub fn answer(
        &mut self,
        normalizer: &Normalizer,
        method: &str,
        path: &str,
        request: &Value,
    ) -> Answer {
        let digest = normalizer.digest(method, path, request);
        let found = (0..self.exchanges.len())
            .find(|&i| !self.used[i] && self.exchanges[i].digest == digest);
        if let Some(i) = found {
            self.used[i] = true;
            return Answer::Recorded(Box::new(self.exchanges[i].clone()));
        }
        let next = (0..self.exchanges.len())
            .filter(|&i| !self.used[i])
            .find(|&i| self.exchanges[i].path == path && self.exchanges[i].method == method)
            .or_else(|| (0..self.exchanges.len()).find(|&i| !self.used[i]));
        Answer::Diverged(match next {
            None => format!(
                "the recording has no more calls ({} recorded, all answered)",
                self.exchanges.len()
            ),
            Some(i) => {
                let e = &self.exchanges[i];
                if e.path != path || e.method != method {
                    format!(
                        "recorded call {} was {} {}, now {method} {path}",
                        e.call, e.method, e.path
                    )
                } else {
                    let diff = first_difference(
                        &self.recorded_as.request(&e.request),
                        &normalizer.request(request),
                    )
                    .unwrap_or_else(|| {
                        "equal bodies, other digest (a recording from another version)".into()
                    });
                    format!(
                        "against recorded call {} (round {}): {diff}",
                        e.call, e.round
                    )
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_in_other_directories_on_other_days_compare_equal() {
        let a = Normalizer::new(vec![
            ("/out1/runs/x".into(), "$RUN"),
            ("/out1".into(), "$OUT"),
        ]);
        let b = Normalizer::new(vec![("/o2/runs/x".into(), "$RUN"), ("/o2".into(), "$OUT")]);
        let ra = json!({"system": "cwd /out1/runs/x/ws, 2026-12-07", "metadata": {"user_id": "a"},
            "messages": [{"id": "0f8fad5b-d9cb-469f-a165-70867728950e"}]});
        let rb = json!({"messages": [{"id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}],
            "system": "cwd /o2/runs/x/ws, 2027-01-01", "metadata": {"user_id": "b"}});
        assert_eq!(
            a.digest("POST", "/v1/messages", &ra),
            b.digest("POST", "/v1/messages", &rb)
        );
        let rc = json!({"messages": [{"id": "x"}], "system": "cwd /o2/runs/x/ws, 2027-01-01"});
        assert_ne!(
            a.digest("POST", "/v1/messages", &ra),
            b.digest("POST", "/v1/messages", &rc)
        );
    }

    #[test]
    fn tool_outputs_differing_in_timings_and_output_ids_compare_equal() {
        let n = Normalizer::default();
        let a = json!({"input": [{"output": "Chunk ID: aeab01\nWall time: 0.0000 seconds\n1 passed in 0.12s at 10:01:02"}]});
        let b = json!({"input": [{"output": "Chunk ID: 9f00c2\nWall time: 0.0131 seconds\n1 passed in 0.31s at 11:59:00"}]});
        assert_eq!(
            n.digest("POST", "/v1/responses", &a),
            n.digest("POST", "/v1/responses", &b)
        );
        let c = json!({"input": [{"output": "Chunk ID: 9f00c2\nWall time: 0.0131 seconds\n1 failed in 0.31s at 11:59:00"}]});
        assert_ne!(
            n.digest("POST", "/v1/responses", &a),
            n.digest("POST", "/v1/responses", &c)
        );
    }

    #[test]
    fn the_first_difference_is_named_by_its_place() {
        let a = json!({"messages": [{"content": "fix it"}, {"content": "no"}], "model": "m"});
        let b = json!({"messages": [{"content": "fix it"}, {"content": "yes"}], "model": "m"});
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "/messages/1/content: from character 0, recorded \"no\", now \"yes\""
        );
        let c = json!({"messages": [{"content": "fix it"}], "model": "m"});
        assert_eq!(
            first_difference(&a, &c).unwrap(),
            "/messages: 2 items recorded, 1 now"
        );
        assert_eq!(first_difference(&a, &a), None);
    }

    fn recorded(call: u32, path: &str, request: Value, n: &Normalizer) -> Exchange {
        Exchange {
            call,
            round: 1,
            at_ms: 0,
            method: "POST".into(),
            path: path.into(),
            request_headers: Default::default(),
            digest: n.digest("POST", path, &request),
            request,
            status: Some(200),
            content_type: None,
            response: json!({"n": call}),
            raw: None,
            stream: false,
            usage: Default::default(),
            first_byte_ms: 0.0,
            total_ms: 0.0,
            refused: None,
            error: None,
            source: "live".into(),
        }
    }

    #[test]
    fn requests_are_answered_in_order_and_a_new_one_diverges() {
        let n = Normalizer::default();
        let mut r = Recording::new(
            vec![
                recorded(1, "/v1/messages", json!({"q": 1}), &n),
                recorded(2, "/v1/messages", json!({"q": 1}), &n),
                recorded(3, "/v1/messages", json!({"q": 2}), &n),
            ],
            Normalizer::default(),
        );
        let call = |r: &mut Recording, q: Value| match r.answer(&n, "POST", "/v1/messages", &q) {
            Answer::Recorded(e) => Ok(e.call),
            Answer::Diverged(why) => Err(why),
        };
        assert_eq!(call(&mut r, json!({"q": 2})), Ok(3));
        assert_eq!(call(&mut r, json!({"q": 1})), Ok(1));
        let why = call(&mut r, json!({"q": 3})).unwrap_err();
        assert_eq!(
            why,
            "against recorded call 2 (round 1): /q: recorded 1, now 3"
        );
        assert_eq!(call(&mut r, json!({"q": 1})), Ok(2));
        assert!(call(&mut r, json!({"q": 1}))
            .unwrap_err()
            .contains("no more calls"));
    }
}
