//! Capability `log`: a detector writes a line to the host's log, tagged with
//! the skill and signal. Lines are capped so a chatty detector cannot flood it.

/// Longest log line kept; the rest is cut with a marker.
pub const MAX_LINE_BYTES: usize = 4096;

/// Severity, mirroring the WIT enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Very detailed.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// Most lines kept from one detector call; later ones are counted, not kept.
pub const MAX_LINES_PER_CALL: usize = 1000;

/// A line a detector logged, held until the harness knows the call counts
/// (a call made ahead of a gate that then fires is discarded with its lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Severity.
    pub level: Level,
    /// The text, already capped at `MAX_LINE_BYTES`.
    pub message: String,
}

/// The lines of one call, capped at `MAX_LINES_PER_CALL`.
#[derive(Debug, Default)]
pub struct LogBuffer {
    lines: Vec<LogLine>,
    dropped: usize,
}

impl LogBuffer {
    /// Keep a line (or count it once the buffer is full).
    pub fn push(&mut self, level: Level, message: &str) {
        if self.lines.len() < MAX_LINES_PER_CALL {
            self.lines.push(LogLine {
                level,
                message: truncate(message, MAX_LINE_BYTES),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// The kept lines, plus a warning line when some were dropped.
    pub fn into_lines(self) -> Vec<LogLine> {
        let mut lines = self.lines;
        if self.dropped > 0 {
            lines.push(LogLine {
                level: Level::Warn,
                message: format!("{} more log lines dropped", self.dropped),
            });
        }
        lines
    }
}

/// Emit one detector log line through `tracing`, its control and bidi
/// characters escaped (a guest's `\r`, `\n` or escape sequence must not
/// rewrite or forge lines on the user's terminal).
pub fn emit(skill: &str, signal: &str, level: Level, message: &str) {
    let line = truncate(message, MAX_LINE_BYTES);
    let line = crate::sys::terminal_text::one_line(&line);
    match level {
        Level::Trace => tracing::trace!(skill, signal, "{line}"),
        Level::Debug => tracing::debug!(skill, signal, "{line}"),
        Level::Info => tracing::info!(skill, signal, "{line}"),
        Level::Warn => tracing::warn!(skill, signal, "{line}"),
        Level::Error => tracing::error!(skill, signal, "{line}"),
    }
}

/// `s` cut to at most `max` bytes on a char boundary, marked when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Promise 5: a call keeps at most 1000 lines of at most 4 KiB each,
    /// and says how many it dropped.
    #[test]
    fn a_chatty_detector_keeps_a_thousand_lines_of_four_kib() {
        let mut buffer = LogBuffer::default();
        let long = "x".repeat(100_000);
        for _ in 0..MAX_LINES_PER_CALL + 500 {
            buffer.push(Level::Info, &long);
        }
        let lines = buffer.into_lines();
        assert_eq!(lines.len(), MAX_LINES_PER_CALL + 1);
        assert!(lines[..MAX_LINES_PER_CALL]
            .iter()
            .all(|l| l.message.len() <= MAX_LINE_BYTES + 32));
        assert_eq!(lines.last().unwrap().message, "500 more log lines dropped");
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("abc", 5), "abc");
        let cut = truncate("ééé", 3);
        assert!(cut.starts_with("é…"), "{cut}");
        assert!(cut.contains("4 bytes cut"));
    }
}
