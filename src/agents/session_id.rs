//! The session id a transcript records, where its agent writes one: Claude
//! Code's and Gemini CLI's `sessionId`, Codex's `session_meta` id, a
//! `session_id` field. `critic check` keys its state by it when no
//! `--session` is given, so that two sessions of an agent never share a
//! count.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// How much of a transcript's start is read for its id.
const HEAD_BYTES: u64 = 256 << 10;

/// The longest id taken (longer ones are not ids).
const MAX_ID_CHARS: usize = 200;

/// The session id recorded near the start of `path`, if any (a regular
/// file only: a directory or anything else has none here).
pub fn of_file(path: &Path) -> Option<String> {
    // Without waiting on a FIFO in the transcript's place.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let reader = BufReader::new(file.take(HEAD_BYTES));
    for line in reader.lines().take(200) {
        let Ok(value) = serde_json::from_str::<Value>(&line.ok()?) else {
            continue;
        };
        if let Some(id) = of_record(&value) {
            return Some(id);
        }
    }
    None
}

/// The id one JSON record carries.
fn of_record(record: &Value) -> Option<String> {
    let id = if record["type"] == "session_meta" {
        &record["payload"]["id"]
    } else if record.get("sessionId").is_some() {
        &record["sessionId"]
    } else {
        &record["session_id"]
    };
    id.as_str()
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.chars().count() <= MAX_ID_CHARS)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agents_id_is_found_and_none_is_made_up() {
        let t = tempfile::tempdir().unwrap();
        let cases = [
            (
                "{\"type\":\"user\",\"sessionId\":\"2008df70\",\"message\":{}}\n",
                Some("2008df70"),
            ),
            (
                "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"0199-ab\"}}\n",
                Some("0199-ab"),
            ),
            ("not json\n{\"session_id\": \"s-1\"}\n", Some("s-1")),
            ("{\"index\":0,\"kind\":\"finish\"}\n", None),
            ("{\"sessionId\": \"\"}\n", None),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let path = t.path().join(format!("{i}.jsonl"));
            std::fs::write(&path, text).unwrap();
            assert_eq!(of_file(&path).as_deref(), *want, "{text}");
        }
        assert_eq!(of_file(t.path()), None);
    }
}
