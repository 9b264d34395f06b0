//! Tokens and cost from an agent's transcript, whatever its format: the
//! `usage` objects of model responses (Anthropic's `input_tokens` and
//! `output_tokens`, OpenAI's `prompt_tokens` and `completion_tokens`),
//! counted once per response id (Claude Code repeats a response's usage on
//! each of its content blocks); a running total where the format keeps one
//! (Codex's `total_token_usage`, OpenHands' `accumulated_token_usage`),
//! whose last value wins; and a cost where the format reports one
//! (`total_cost_usd`, `accumulated_cost`, `instance_cost`).

use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// The largest transcript read for its usage.
const MAX_BYTES: u64 = 512 << 20;
/// How deep a record is searched.
const MAX_DEPTH: usize = 32;

/// What a transcript says its model calls used.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Input tokens, cache reads and writes included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// The cost the transcript reports, USD.
    pub cost: Option<f64>,
    /// Whether any usage was found.
    pub found: bool,
}

impl Usage {
    /// Input and output tokens, when the transcript reports any.
    pub fn tokens(&self) -> Option<u64> {
        self.found.then_some(self.input.saturating_add(self.output))
    }
}

#[derive(Default)]
struct Scan {
    summed: (u64, u64),
    seen: HashSet<String>,
    running: Option<(u64, u64)>,
    cost: Option<f64>,
    found: bool,
}

fn num(v: &Value, keys: &[&str]) -> u64 {
    keys.iter()
        .filter_map(|k| v.get(*k)?.as_u64())
        .fold(0, u64::saturating_add)
}

impl Scan {
    fn record(&mut self, v: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(m) => {
                if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
                    let input = num(
                        u,
                        &[
                            "input_tokens",
                            "prompt_tokens",
                            "cache_creation_input_tokens",
                            "cache_read_input_tokens",
                        ],
                    );
                    let output = num(u, &["output_tokens", "completion_tokens"]);
                    let fresh = match m.get("id").and_then(Value::as_str) {
                        Some(id) => self.seen.insert(id.to_string()),
                        None => true,
                    };
                    if fresh && input.saturating_add(output) > 0 {
                        self.summed.0 = self.summed.0.saturating_add(input);
                        self.summed.1 = self.summed.1.saturating_add(output);
                        self.found = true;
                    }
                }
                for key in ["total_token_usage", "accumulated_token_usage"] {
                    if let Some(u) = m.get(key).filter(|u| u.is_object()) {
                        let input = num(u, &["input_tokens", "prompt_tokens"]);
                        let output = num(u, &["output_tokens", "completion_tokens"]);
                        self.running = Some((input, output));
                        self.found = true;
                    }
                }
                for key in ["total_cost_usd", "accumulated_cost", "instance_cost"] {
                    // A negative or non-finite cost is no cost at all.
                    if let Some(c) = m.get(key).and_then(Value::as_f64) {
                        if c.is_finite() && c >= 0.0 {
                            self.cost = Some(c);
                        }
                    }
                }
                for (k, child) in m {
                    if k != "usage" {
                        self.record(child, depth + 1);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.record(i, depth + 1)),
            _ => {}
        }
    }
}

/// The usage in `text`: JSONL, or one JSON document.
pub fn of_text(text: &str) -> Usage {
    let mut scan = Scan::default();
    match serde_json::from_str::<Value>(text) {
        Ok(doc) => scan.record(&doc, 0),
        Err(_) => {
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    scan.record(&v, 0);
                }
            }
        }
    }
    let (input, output) = scan.running.unwrap_or(scan.summed);
    Usage {
        input,
        output,
        cost: scan.cost,
        found: scan.found,
    }
}

/// The usage in the transcript at `path` (nothing found when it cannot be
/// read).
pub fn of_file(path: &Path) -> Usage {
    crate::sys::bounded_read::read_regular_file(path, MAX_BYTES)
        .map(|b| of_text(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_repeated_per_block_counts_once() {
        let usage = r#"{"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}"#;
        let text = format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_1\",\"usage\":{usage}}}}}\n\
             {{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_1\",\"usage\":{usage}}}}}\n\
             {{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_2\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":2}}}}}}\n"
        );
        let u = of_text(&text);
        assert_eq!((u.input, u.output, u.tokens()), (111, 7, Some(118)));
    }

    #[test]
    fn a_running_total_wins_and_its_last_value_counts() {
        let line = |n: u64| {
            format!(
                "{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"input_tokens\":{n},\"output_tokens\":{}}}}}}}}}\n",
                n / 10
            )
        };
        let u = of_text(&format!("{}{}", line(100), line(300)));
        assert_eq!((u.input, u.output), (300, 30));
    }

    #[test]
    fn absurd_numbers_saturate_and_negative_costs_are_ignored() {
        let text = "{\"usage\": {\"input_tokens\": 18446744073709551615, \"output_tokens\": 5}}\n\
                    {\"usage\": {\"input_tokens\": 7}}\n{\"total_cost_usd\": -1000000}\n";
        let u = of_text(text);
        assert_eq!(u.tokens(), Some(u64::MAX), "over any budget, not wrapped");
        assert_eq!(u.cost, None);
    }

    #[test]
    fn openai_usage_and_a_reported_cost_are_read() {
        let doc = r#"{"info": {"model_stats": {"instance_cost": 0.42}},
                      "messages": [{"extra": {"response": {"usage": {"prompt_tokens": 7, "completion_tokens": 3}}}}]}"#;
        let u = of_text(doc);
        assert_eq!((u.tokens(), u.cost), (Some(10), Some(0.42)));
        assert_eq!(of_text("not json\n").tokens(), None);
    }
}
