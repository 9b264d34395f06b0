//! Key-shaped text taken out of what the agent is sent.
//!
//! A detector quotes what its runs printed into its follow-up and feedback
//! files, and a run can print a file of the user's: a test that read
//! `~/.ssh/id_rsa` and failed with it in its assertion message put the key
//! in the follow-up, and so in the agent's next prompt and its model
//! provider's logs. Runs should not read such files in the first place;
//! this is the second line: before text leaves for the agent, whatever
//! looks like a private key or a credential is replaced by a marker naming
//! its kind (`[REDACTED: private key]`).
//!
//! What counts is what can be recognized without flagging ordinary test
//! output: private key blocks by their armor, tokens by the prefixes their
//! issuers give them, and assignments to secret-sounding names only when
//! the value looks random (letters and digits, no call or attribute).
//! Hashes, UUIDs and base64 in code have no such shape and pass. A bare
//! secret without any of these shapes cannot be told from data, and passes
//! too.
//!
//! All token shapes are one multi-pattern regex, scanned once (a lazy DFA,
//! ASCII only); a private key block is followed by hand to its end line.
//! Both are linear in the text: a megabyte takes milliseconds.

use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};
use std::borrow::Cow;
use std::sync::OnceLock;

/// What one call of [`redact`] left of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text, each secret replaced by its marker; borrowed when none was
    /// found.
    pub text: Cow<'a, str>,
    /// How many secrets were replaced.
    pub count: usize,
}

/// The note that ends a follow-up when anything the agent gets from a
/// finish (its follow-up texts, its feedback files) had secrets replaced:
/// what the markers are, and why.
pub const NOTICE: &str = "Note: the critic replaced text that looked like a private key or a \
credential with `[REDACTED: ...]` markers (here or in its feedback files): secrets must not \
reach the agent or its model. Do not print them; if the task needs one, ask the user.";

/// `text` with every private key block and credential-shaped token replaced
/// by `[REDACTED: <kind>]`.
pub fn redact(text: &str) -> Redacted<'_> {
    let shapes = shapes();
    let mut out = String::new();
    let mut count = 0;
    // Text before `copied` is in `out` already (when anything was found).
    let mut copied = 0;
    let mut at = 0;
    let mut ends: Option<Ends> = None;
    let mut caps = shapes.regex.create_captures();
    while at < text.len() {
        shapes
            .regex
            .search_captures(&Input::new(text).range(at..), &mut caps);
        let (Some(pattern), Some(whole)) = (caps.pattern(), caps.get_match()) else {
            break;
        };
        let shape = &SHAPES[pattern.as_usize()];
        let (start, end) = match shape.kind {
            Kind::PrivateKey => {
                let ends = ends.get_or_insert_with(|| Ends::of(text, &shapes.key_end));
                (whole.start(), key_block_end(text, whole.end(), ends))
            }
            _ => {
                // Group 1, where a pattern has one, is the secret without
                // the name or header that told it.
                let group = caps.get_group(1).map(|span| span.range());
                let secret = group.clone().unwrap_or(whole.range());
                if !shape.check.passes(&text[secret.clone()])
                    || (shape.kind == Kind::Assignment && of_known_kind(text, secret.clone()))
                {
                    // A value that is no secret may hold one of another
                    // shape (`token = eyJ...`, a JWT, is a dotted name), and
                    // one of a known kind is better told as that kind: it is
                    // searched again. A span without a group is short or of
                    // letters only, with no room for one.
                    at = group.map_or(whole.end(), |g| g.start);
                    continue;
                }
                (secret.start, secret.end)
            }
        };
        out.push_str(&text[copied..start]);
        out.push_str("[REDACTED: ");
        out.push_str(shape.kind.label());
        out.push(']');
        count += 1;
        copied = end;
        at = end.max(whole.end());
    }
    if count == 0 {
        return Redacted {
            text: Cow::Borrowed(text),
            count,
        };
    }
    out.push_str(&text[copied..]);
    Redacted {
        text: Cow::Owned(out),
        count,
    }
}

/// Whether a token of a shape other than an assignment's starts at `span`
/// (`GITHUB_TOKEN=ghp_...` holds a GitHub token).
fn of_known_kind(text: &str, span: std::ops::Range<usize>) -> bool {
    let input = Input::new(text).range(span).anchored(Anchored::Yes);
    shapes()
        .regex
        .search(&input)
        .is_some_and(|m| SHAPES[m.pattern().as_usize()].kind != Kind::Assignment)
}

/// The kinds of secret told apart, each with its marker's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PrivateKey,
    AwsKeyId,
    AwsSecret,
    GitHub,
    GitLab,
    Slack,
    Anthropic,
    OpenAi,
    Google,
    Stripe,
    Npm,
    PyPi,
    HuggingFace,
    Jwt,
    Authorization,
    UrlPassword,
    Assignment,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::PrivateKey => "private key",
            Kind::AwsKeyId => "AWS access key id",
            Kind::AwsSecret => "AWS secret access key",
            Kind::GitHub => "GitHub token",
            Kind::GitLab => "GitLab token",
            Kind::Slack => "Slack token",
            Kind::Anthropic => "Anthropic API key",
            Kind::OpenAi => "OpenAI API key",
            Kind::Google => "Google API key",
            Kind::Stripe => "Stripe key",
            Kind::Npm => "npm token",
            Kind::PyPi => "PyPI token",
            Kind::HuggingFace => "Hugging Face token",
            Kind::Jwt => "JWT",
            Kind::Authorization => "authorization credentials",
            Kind::UrlPassword => "password in URL",
            Kind::Assignment => "secret value",
        }
    }
}

/// What a match must also look like to count, beyond its pattern.
#[derive(Debug, Clone, Copy)]
enum Check {
    /// The pattern alone is specific enough.
    None,
    /// At least this long (patterns whose class could not say it).
    MinLen(usize),
    /// A lower- and an upper-case letter (tokens of letters only).
    MixedCase,
    /// A value assigned to a secret-sounding name: long, and not a dotted
    /// name (`settings.api_key_v2`), which is code.
    Value,
}

impl Check {
    fn passes(self, secret: &str) -> bool {
        let has = |f: fn(&u8) -> bool| secret.bytes().any(|b| f(&b));
        match self {
            Check::None => true,
            Check::MinLen(len) => secret.len() >= len,
            Check::MixedCase => has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase),
            Check::Value => secret.len() >= 12 && !is_dotted_name(secret),
        }
    }
}

/// `a.b` or longer, each part an identifier.
fn is_dotted_name(text: &str) -> bool {
    let identifier = |part: &str| {
        part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    text.contains('.') && text.split('.').all(identifier)
}

/// A run of the class `$class` holding a digit and a letter: what a
/// generated secret has and a word, an identifier, a dotted path or a
/// number lacks. (Said in the pattern rather than checked after, a value
/// without them is no match, and the shapes that could start inside it are
/// still looked for.)
macro_rules! random_run {
    ($class:literal) => {
        concat!(
            "(?:",
            $class,
            "*[0-9]",
            $class,
            "*[A-Za-z]|",
            $class,
            "*[A-Za-z]",
            $class,
            "*[0-9])",
            $class,
            "*"
        )
    };
}

/// One shape of secret: its kind, its pattern (whose group 1, if any, is
/// the secret itself) and what the match must also pass.
struct Shape {
    kind: Kind,
    pattern: &'static str,
    check: Check,
}

/// The shapes, in the order they are preferred where two start at one
/// place. Patterns are ASCII-only (`\b` and `\s` are ASCII's).
const SHAPES: &[Shape] = &[
    Shape {
        kind: Kind::PrivateKey,
        pattern: r"-{4,5} ?BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}",
        check: Check::None,
    },
    Shape {
        kind: Kind::AwsKeyId,
        pattern: r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
        check: Check::None,
    },
    Shape {
        kind: Kind::AwsSecret,
        pattern: r#"(?i:aws_?secret_?access_?key)["']?\s*(?::=|=>|[:=])\s*["']?([A-Za-z0-9/+=]{20,})"#,
        check: Check::None,
    },
    Shape {
        kind: Kind::GitHub,
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
        check: Check::None,
    },
    Shape {
        kind: Kind::GitLab,
        pattern: r"\bglpat-[A-Za-z0-9_-]{20,}",
        check: Check::None,
    },
    Shape {
        kind: Kind::Slack,
        pattern: r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
        check: Check::None,
    },
    Shape {
        kind: Kind::Anthropic,
        pattern: r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        check: Check::None,
    },
    Shape {
        kind: Kind::OpenAi,
        pattern: concat!(r"\bsk-", random_run!("[A-Za-z0-9_-]")),
        check: Check::MinLen(23),
    },
    Shape {
        kind: Kind::Google,
        pattern: r"\bAIza[A-Za-z0-9_-]{35}",
        check: Check::None,
    },
    Shape {
        kind: Kind::Stripe,
        pattern: r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}",
        check: Check::None,
    },
    Shape {
        kind: Kind::Npm,
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        check: Check::None,
    },
    Shape {
        kind: Kind::PyPi,
        pattern: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        check: Check::None,
    },
    Shape {
        kind: Kind::HuggingFace,
        pattern: r"\bhf_[A-Za-z]{34}\b",
        check: Check::MixedCase,
    },
    Shape {
        kind: Kind::Jwt,
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        check: Check::None,
    },
    Shape {
        kind: Kind::Authorization,
        pattern: r#"(?i:authorization)["']?\s*[:=]\s*["']?(?i:basic|bearer|token)\s+([A-Za-z0-9._~+/-]{8,}=*)"#,
        check: Check::None,
    },
    Shape {
        kind: Kind::Authorization,
        pattern: concat!(
            r"(?i:\bbearer)\s+(",
            random_run!("[A-Za-z0-9._~+/-]"),
            "=*)"
        ),
        check: Check::MinLen(16),
    },
    Shape {
        kind: Kind::UrlPassword,
        pattern: r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[A-Za-z0-9._~%-]+:([A-Za-z0-9._~%!$*+,;=-]+)@",
        check: Check::None,
    },
    Shape {
        kind: Kind::Assignment,
        pattern: concat!(
            r#"(?i:\b[a-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key|credentials?)[a-z0-9_]*)"#,
            r#"["']?\s*(?::=|=>|[:=])\s*["']?("#,
            random_run!("[A-Za-z0-9+/=_.~!@#$%^*-]"),
            ")"
        ),
        check: Check::Value,
    },
];

/// A private key block's end line.
const KEY_END: &str = r"-{4,5} ?END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}";

/// The longest private key block followed to its end line (a 16384-bit RSA
/// key is about 13 KB); a begin line with no end within it is a truncated
/// block, followed as far as it looks like one.
const MAX_KEY_BLOCK: usize = 64 << 10;

/// The compiled shapes.
struct Shapes {
    regex: Regex,
    key_end: Regex,
}

fn shapes() -> &'static Shapes {
    static SHAPES_REGEX: OnceLock<Shapes> = OnceLock::new();
    SHAPES_REGEX.get_or_init(|| {
        // ASCII only: the lazy DFA then never gives up on a non-ASCII byte,
        // and every match is ASCII, so it starts and ends on a character.
        let build = |patterns: &[&str]| {
            Regex::builder()
                .syntax(syntax::Config::new().unicode(false))
                .build_many(patterns)
                .expect("the redaction patterns compile")
        };
        let patterns: Vec<&str> = SHAPES.iter().map(|s| s.pattern).collect();
        Shapes {
            regex: build(&patterns),
            key_end: build(&[KEY_END]),
        }
    })
}

/// The end lines of private key blocks in a text, found once (when it has
/// a begin line), so that however many begin lines it has, it is searched
/// once.
struct Ends {
    spans: Vec<(usize, usize)>,
    next: usize,
}

impl Ends {
    fn of(text: &str, key_end: &Regex) -> Ends {
        Ends {
            spans: key_end
                .find_iter(text)
                .map(|m| (m.start(), m.end()))
                .collect(),
            next: 0,
        }
    }

    /// The first end line starting at or after `from`.
    fn after(&mut self, from: usize) -> Option<(usize, usize)> {
        while self.spans.get(self.next).is_some_and(|&(s, _)| s < from) {
            self.next += 1;
        }
        self.spans.get(self.next).copied()
    }
}

/// Where the private key block whose begin line ends at `body` ends: after
/// its end line, or, with none near, after what still looks like its body.
fn key_block_end(text: &str, body: usize, ends: &mut Ends) -> usize {
    match ends.after(body) {
        Some((start, end)) if start - body <= MAX_KEY_BLOCK => end,
        _ => truncated_block_end(text, body),
    }
}

/// The end of a key block's body that has no end line (the output was cut):
/// base64 lines, the armor's header lines right after the begin line, and
/// the separators a quoting added (escaped line breaks, a margin of a few
/// short words such as pytest's `E   + `). It ends after the last full
/// base64 line, or after a short one that ends its line (the block's last).
fn truncated_block_end(text: &str, body: usize) -> usize {
    /// The shortest run of base64 taken as a line of a key's body.
    const FULL: usize = 40;
    /// Short words allowed between two body lines.
    const MARGIN: usize = 3;
    let bytes = text.as_bytes();
    let mut at = body;
    let mut end = body;
    let mut short = 0;
    let mut headers = true;
    loop {
        at = skip_separators(bytes, at);
        if headers {
            if let Some(next) = armor_header(bytes, at) {
                at = next;
                end = next;
                continue;
            }
            headers = false;
        }
        let word = at + bytes[at..].iter().take_while(|b| is_base64(**b)).count();
        if word - at >= FULL {
            end = word;
            short = 0;
        } else if word > at && short < MARGIN {
            if ends_line(bytes, word) {
                return word;
            }
            short += 1;
        } else {
            return end;
        }
        at = word;
    }
}

/// Whether a base64 run ending at `at` ends its line: a line break (real
/// or escaped), the end of the text, or a cut (`...`, a closing quote).
fn ends_line(bytes: &[u8], at: usize) -> bool {
    let rest = &bytes[at..];
    rest.is_empty()
        || rest.starts_with(b"...")
        || matches!(rest[0], b'\n' | b'\r' | b'\'' | b'"')
        || (rest[0] == b'\\' && matches!(rest.get(1), Some(b'n' | b'r')))
}

/// Past spaces, line breaks and escaped line breaks (`\n`, `\\n`).
fn skip_separators(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => at += 1,
            Some(b'\\') => {
                let slashes = bytes[at..].iter().take_while(|&&b| b == b'\\').count();
                match bytes.get(at + slashes) {
                    Some(b'n' | b'r' | b't') => at += slashes + 1,
                    _ => return at,
                }
            }
            _ => return at,
        }
    }
}

/// Past an armor header line at `at` (`Proc-Type: 4,ENCRYPTED`,
/// `DEK-Info: ...`, `Comment: ...`, `Version: ...`), if one starts there.
fn armor_header(bytes: &[u8], at: usize) -> Option<usize> {
    let name = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .count();
    if name == 0 || bytes.get(at + name..at + name + 2) != Some(b": ") {
        return None;
    }
    let rest = &bytes[at + name..];
    let line = rest
        .iter()
        .position(|&b| b == b'\n' || b == b'\r' || b == b'\\')
        .unwrap_or(rest.len());
    Some(at + name + line)
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body line of a key, 70 characters (an OpenSSH key's width).
    const LINE: &str = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW";

    fn openssh_key() -> String {
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{LINE}\n{LINE}\nQyNTUxOQAAACB=\n\
             -----END OPENSSH PRIVATE KEY-----"
        )
    }

    fn redacted(text: &str) -> String {
        redact(text).text.into_owned()
    }

    #[test]
    fn private_key_blocks_are_replaced_whole() {
        let text = format!(
            "assert read_key() == ''\n{}\nwhere read_key = <fn>",
            openssh_key()
        );
        let r = redact(&text);
        assert_eq!(r.count, 1);
        assert_eq!(
            r.text,
            "assert read_key() == ''\n[REDACTED: private key]\nwhere read_key = <fn>"
        );
        for armor in [
            "RSA PRIVATE KEY",
            "EC PRIVATE KEY",
            "PRIVATE KEY",
            "ENCRYPTED PRIVATE KEY",
            "DSA PRIVATE KEY",
            "PGP PRIVATE KEY BLOCK",
        ] {
            let block = format!(
                "-----BEGIN {armor}-----\nProc-Type: 4,ENCRYPTED\n\n{LINE}\n-----END {armor}-----\n"
            );
            assert_eq!(redacted(&block), "[REDACTED: private key]\n", "{armor}");
        }
        let ssh2 = format!(
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n{LINE}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
        );
        assert_eq!(redacted(&ssh2), "[REDACTED: private key]");
    }

    #[test]
    fn a_key_quoted_on_one_line_is_replaced() {
        // pytest's repr of a string read from the key file.
        let repr = openssh_key().replace('\n', "\\n");
        let text = format!("E       AssertionError: assert '{repr}\\n' == ''");
        assert_eq!(
            redacted(&text),
            "E       AssertionError: assert '[REDACTED: private key]\\n' == ''"
        );
    }

    #[test]
    fn a_truncated_block_is_replaced_to_the_end_of_its_body() {
        // Cut by pytest's repr.
        let text = format!(
            "E   assert '-----BEGIN OPENSSH PRIVATE KEY-----\\n{LINE}\\n{}...' == ''\nnext line",
            &LINE[..20]
        );
        assert_eq!(
            redacted(&text),
            "E   assert '[REDACTED: private key]...' == ''\nnext line"
        );
        // Cut by an output limit, and in a diff's margin.
        let text = format!("-----BEGIN RSA PRIVATE KEY-----\n{LINE}\n{}", &LINE[..9]);
        assert_eq!(redacted(&text), "[REDACTED: private key]");
        let text = format!(
            "E         + -----BEGIN OPENSSH PRIVATE KEY-----\nE         + {LINE}\nE         + {LINE}\nE         + ab\n\nThe test failed because of it."
        );
        assert_eq!(
            redacted(&text),
            "E         + [REDACTED: private key]\n\nThe test failed because of it."
        );
        // A truncated header, then prose: the prose stays.
        let text = format!("-----BEGIN EC PRIVATE KEY-----\n{LINE}\nThe key above is not yours.");
        assert_eq!(
            redacted(&text),
            "[REDACTED: private key]\nThe key above is not yours."
        );
    }

    #[test]
    fn a_begin_line_with_an_end_far_away_does_not_take_the_text_between() {
        let far = format!(
            "-----BEGIN PRIVATE KEY-----\n{LINE}\n{}\n-----END PRIVATE KEY-----",
            "ordinary output\n".repeat(MAX_KEY_BLOCK / 16 + 1)
        );
        let out = redacted(&far);
        assert!(
            out.starts_with("[REDACTED: private key]\nordinary output\n"),
            "{}",
            &out[..80]
        );
        assert!(out.ends_with("ordinary output\n\n-----END PRIVATE KEY-----"));
    }

    #[test]
    fn public_keys_and_certificates_stay() {
        for text in [
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
        ] {
            assert_eq!(redact(text).count, 0, "{text}");
        }
    }

    #[test]
    fn each_token_shape_is_replaced_by_its_marker() {
        for (secret, label) in [
            ("AKIAIOSFODNN7EXAMPLE", "AWS access key id"),
            ("ASIAY34FZKBOKMUTVV7A", "AWS access key id"),
            ("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", "GitHub token"),
            ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "GitHub token"),
            ("ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", "GitHub token"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
                "GitHub token",
            ),
            ("glpat-xxxxXXXX1234yyyyZZZZ", "GitLab token"),
            ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "Slack token"),
            ("xoxp-1234567890-abcdef", "Slack token"),
            (
                "sk-ant-api03-AbCdEf0123456789_AbCdEf0123456789-AbCdEf0123456789AA",
                "Anthropic API key",
            ),
            ("sk-proj-AbCdEf0123456789AbCdEf0123456789T3BlbkFJ", "OpenAI API key"),
            ("sk-AbCdEf0123456789AbCdEf0123456789AbCdEf01234567", "OpenAI API key"),
            ("AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "Google API key"),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "Stripe key"),
            ("rk_test_51H8AbCdEfGhIjKlMnOpQrSt", "Stripe key"),
            ("npm_AbCdEf0123456789AbCdEf0123456789AbCd", "npm token"),
            (
                "pypi-AgEIcHlwaS5vcmcCJGE0ZjM5YjQ4LTJiNTctNDQ1Yy1hZGM1LWVhNmFhMDk5NDVkMgACKlszLCJmMzBi",
                "PyPI token",
            ),
            ("hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "Hugging Face token"),
            (
                "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "JWT",
            ),
        ] {
            let text = format!("login failed with {secret}, giving up");
            assert_eq!(
                redacted(&text),
                format!("login failed with [REDACTED: {label}], giving up"),
                "{secret}"
            );
        }
    }

    #[test]
    fn named_secrets_lose_their_value_and_keep_their_name() {
        for (text, want) in [
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED: AWS secret access key]",
            ),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "AWS_SECRET_ACCESS_KEY=[REDACTED: AWS secret access key]",
            ),
            (
                "Authorization: Bearer 0123456789abcdefABCDEF.xyz",
                "Authorization: Bearer [REDACTED: authorization credentials]",
            ),
            (
                "headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}",
                "headers={'Authorization': 'Basic [REDACTED: authorization credentials]'}",
            ),
            (
                "curl -H 'bearer abc123def456ghi789jkl'",
                "curl -H 'bearer [REDACTED: authorization credentials]'",
            ),
            (
                "fatal: could not read https://deploy:s3cr3t-Pa55@git.example.com/x.git",
                "fatal: could not read https://deploy:[REDACTED: password in URL]@git.example.com/x.git",
            ),
            (
                "DB_PASSWORD=Xk9#mQ2$vL7pR4wZ",
                "DB_PASSWORD=[REDACTED: secret value]",
            ),
            (
                r#"{"client_secret": "f3c1b2a4d5e6f7a8b9c0", "x": 1}"#,
                r#"{"client_secret": "[REDACTED: secret value]", "x": 1}"#,
            ),
            (
                "GET /cb?state=1&api_key=Zm9vYmFyYmF6cXV4MTIz&next=/",
                "GET /cb?state=1&api_key=[REDACTED: secret value]&next=/",
            ),
            (
                "self.token = 'tok_8f7d6c5b4a3e2f1d'",
                "self.token = '[REDACTED: secret value]'",
            ),
            (
                "token = eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "token = [REDACTED: JWT]",
            ),
            (
                "GITHUB_TOKEN=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",
                "GITHUB_TOKEN=[REDACTED: GitHub token]",
            ),
        ] {
            assert_eq!(redacted(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_output_and_code_stay() {
        let texts = [
            // Hashes, ids, base64 in code, numbers.
            "commit 2a38d26e9c1f0b7d4e3a5b6c7d8e9f0a1b2c3d4e",
            "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "request id 550e8400-e29b-41d4-a716-446655440000 failed",
            "data = base64.b64decode('aGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NA==')",
            "image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
            "FAILED tests/test_tokens.py::test_tokenize_handles_unicode - AssertionError",
            // Secret-sounding names with values that are code or words.
            "password = getpass.getpass()",
            "token = tokens[0]",
            "tokens = tokenize(source_code_that_is_long)",
            "secret = os.environ['APP_SECRET_VALUE']",
            "api_key = settings.OPENAI_API_KEY",
            "self.secret = config.secret_v2_value_x",
            "max_tokens = 4096000000000",
            "password: str = Field(default_factory=generate_password)",
            "the bearer of this certificate is the owner",
            "token_type: bearer",
            // Prefixes inside words, and words after them.
            "risk-assessment-framework-for-large-systems",
            "sk-learn-compatible-estimators-for-pipelines",
            "task_AKIAIOSFODNN7EXAMPLEx",
            "http://localhost:8080/path?q=1",
            "git@github.com:org/repo.git",
            "hf_model_name_or_path_for_the_tokenizer",
        ];
        for text in texts {
            let r = redact(text);
            assert_eq!((r.count, r.text.as_ref()), (0, text), "{text}");
            assert!(matches!(r.text, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn several_secrets_and_multibyte_text_around_them() {
        let text = format!(
            "é AKIAIOSFODNN7EXAMPLE — {} — 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 ✓",
            openssh_key()
        );
        let r = redact(&text);
        assert_eq!(r.count, 3);
        assert_eq!(
            r.text,
            "é [REDACTED: AWS access key id] — [REDACTED: private key] — [REDACTED: GitHub token] ✓"
        );
    }

    #[test]
    fn a_megabyte_is_redacted_in_linear_time() {
        // Output a test suite prints, with a key in its middle; and a text
        // of nothing but begin lines, which must not be searched once per
        // begin line.
        let line = "tests/test_calc.py::test_add[3-4] PASSED  550e8400-e29b-41d4 \
                    e3b0c44298fc1c149afbf4c8996fb92427ae41e4\n";
        let mut output = line.repeat((1 << 20) / line.len());
        output.insert_str(output.len() / 2, &openssh_key());
        let begin = "-----BEGIN RSA PRIVATE KEY-----\nab\n";
        let begins = begin.repeat((1 << 20) / begin.len());
        // And assignments of values that are no secret, each long.
        let value = format!("a.b.c.d.password={}\n", "x".repeat(4096));
        let values = value.repeat((1 << 20) / value.len());
        for (text, count) in [
            (&output, 1),
            (&begins, begins.len() / begin.len()),
            (&values, 0),
        ] {
            let started = std::time::Instant::now();
            let r = redact(text);
            let took = started.elapsed();
            assert_eq!(r.count, count);
            // Linear time is a few milliseconds (optimized dependencies,
            // even in a test build); the bound leaves room for a busy machine
            // and catches a quadratic search, which takes minutes.
            assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
        }
    }
}
