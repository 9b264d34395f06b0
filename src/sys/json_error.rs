//! serde_json's errors in words that quote nothing of the text they came
//! from. A file a request names may be a secret instead of the JSON it
//! should be; its error goes back to whoever named it (an HTTP answer, a
//! hook's notice to the agent), so it may say where and what was expected,
//! never what was found.
//!
//! A syntax error's words are serde_json's fixed phrases ("expected `,` or
//! `}`"). A data error's words come from serde, and most quote the value
//! found: `invalid type: string "hunter2", expected u32`, `unknown field
//! `ghp_...``. Of those only the expectation is kept, which the Rust type
//! wrote; a message of any other form is replaced as a whole.

/// What `e` says went wrong, without its position (callers name the place,
/// with their own line numbering) and without any text of the input.
pub fn describe(e: &serde_json::Error) -> String {
    let words = strip_position(&e.to_string());
    if !e.is_data() {
        return words;
    }
    data_words(&words)
}

/// serde_json appends " at line L column C" to its messages.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// serde's words for a value of the wrong kind, with the value left out.
fn data_words(words: &str) -> String {
    // Each of these names only what the Rust type declares.
    const FROM_THE_TYPE: [&str; 3] = [
        "missing field `",
        "duplicate field `",
        "data did not match any variant of untagged enum ",
    ];
    if FROM_THE_TYPE.iter().any(|p| words.starts_with(p)) {
        return words.to_string();
    }
    // serde's `{what} {found}, {expected}`, where `found` is the input's.
    const QUOTING: [(&str, &str); 5] = [
        ("invalid type: ", "a value of another type"),
        ("invalid value: ", "an invalid value"),
        ("invalid length ", "a list or map of another length"),
        ("unknown variant ", "an unknown variant"),
        ("unknown field ", "an unknown field"),
    ];
    let Some((_, found)) = QUOTING.iter().find(|(p, _)| words.starts_with(p)) else {
        return "a value of another shape than expected".into();
    };
    // The expectation is last, and the type's own text: searching from the
    // end, a found value that itself holds ", expected " is passed over.
    for tail in [", there are no fields", ", there are no variants"] {
        if words.ends_with(tail) {
            return format!("{found}{tail}");
        }
    }
    match words.rfind(", expected ") {
        Some(i) => format!("{found}, {}", &words[i + 2..]),
        None => found.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        count: u32,
        list: Option<Vec<u8>>,
        kind: Option<Kind>,
        pair: Option<(u8, u8)>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Gate,
        Soft,
    }

    fn words(text: &str) -> String {
        describe(&serde_json::from_str::<Doc>(text).unwrap_err())
    }

    #[test]
    fn data_errors_keep_the_expectation_and_drop_the_value() {
        let secret = "hunter2, expected nothing";
        for (text, want) in [
            (
                format!(r#"{{"count": "{secret}"}}"#),
                "a value of another type, expected u32",
            ),
            (
                format!(r#"{{"{secret}": 1}}"#),
                "an unknown field, expected one of `count`, `list`, `kind`, `pair`",
            ),
            (
                format!(r#"{{"count": 1, "kind": "{secret}"}}"#),
                "an unknown variant, expected `gate` or `soft`",
            ),
            (
                r#"{"count": 1, "pair": [1]}"#.to_string(),
                "a list or map of another length, expected a tuple of size 2",
            ),
            (
                r#"{"count": -7}"#.to_string(),
                "an invalid value, expected u32",
            ),
            ("{}".to_string(), "missing field `count`"),
        ] {
            let got = words(&text);
            assert_eq!(got, want, "{text}");
            assert!(!got.contains("hunter2"), "{got}");
        }
    }

    #[test]
    fn a_message_of_unknown_form_is_replaced_whole() {
        assert_eq!(
            data_words("hunter2 is not allowed"),
            "a value of another shape than expected"
        );
        assert_eq!(
            data_words("unknown field `hunter2, expected x`, there are no fields"),
            "an unknown field, there are no fields"
        );
    }

    #[test]
    fn syntax_errors_keep_serde_jsons_words_without_the_position() {
        let e = serde_json::from_str::<Doc>("{\"count\": 1,,}").unwrap_err();
        assert_eq!(describe(&e), "key must be a string");
        let e = serde_json::from_str::<Doc>("{\"count\": ").unwrap_err();
        assert_eq!(describe(&e), "EOF while parsing a value");
    }
}
