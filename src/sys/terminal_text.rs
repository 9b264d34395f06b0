//! Text shown on a terminal that others wrote (agents, skills, detectors):
//! control characters and bidi controls turned into visible escapes, so a
//! message cannot move the cursor, retitle the window or reorder a line.

/// `text` with every control character (newlines included) and bidi
/// control shown as an escape, for one line of a terminal report.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    escape_terminal(text, false)
}

/// `text` for a terminal: control characters and bidi controls shown as
/// escapes, except newlines when `keep_newlines` (for a message of several
/// lines the host composed, such as an error and its causes).
pub fn escape_terminal(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && !(keep_newlines && c == '\n'))
            || matches!(
                c,
                '\u{061c}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    };
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    text.chars()
        .map(|c| match c {
            '\t' => "    ".to_string(),
            c if unsafe_char(c) => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(one_line("plain text"), "plain text");
        let hostile = "ok\x1b]0;pwned\x07\x1b[2J\r\n  - forged passed\u{9b}31m\u{202e}";
        let shown = one_line(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        assert!(shown.contains("\\u{1b}]0;pwned"), "{shown}");
        assert!(!shown.contains('\u{202e}'));
    }

    #[test]
    fn multi_line_messages_keep_only_their_newlines() {
        use super::escape_terminal;
        let text = "line one\nkey \x1b]52;c;Zm9v\x07\r\u{200f}\u{2028}";
        let shown = escape_terminal(text, true);
        assert!(shown.starts_with("line one\nkey "), "{shown}");
        for raw in ['\x1b', '\x07', '\r', '\u{200f}', '\u{2028}'] {
            assert!(!shown.contains(raw), "{raw:?} in {shown:?}");
        }
        assert!(!escape_terminal(text, false).contains('\n'));
    }
}
