//! The skill manifest (`critic.yaml`): loading, validation, typed form.
//!
//! `schemas/critic.schema.json` is the single source of truth for what a manifest
//! may contain. The loader validates the YAML (as JSON) against it and reports
//! every violation with file, line, column and field path; only then is the
//! document turned into the typed [`Manifest`], which therefore cannot fail on
//! shape. Checks the schema cannot express (unique signal names, detector files
//! that exist) follow, with the same kind of location.

mod build_error;
pub mod bundled_sdk;
pub mod compile;
pub mod compile_python;
pub mod confined_build;
pub(crate) mod schema;
pub(crate) mod yaml;

use crate::host::Capability;
pub use crate::workspace::DEFAULT_TEST_PATTERNS;
pub use build_error::BuildError;
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use yaml::Issue;
use yaml::{Located, Position};

/// The manifest file name inside a skill directory.
pub const MANIFEST_FILE: &str = "critic.yaml";

/// The largest `critic.yaml` the host reads (a manifest is a few KiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// The JSON Schema of `critic.yaml`, compiled into the binary.
pub const SCHEMA: &str = include_str!("../../schemas/critic.schema.json");

/// Default `threshold`: with only hard gates any value in (0, 1] behaves the same.
pub const DEFAULT_THRESHOLD: f64 = 0.5;
/// Default `max_iterations`: enough rounds for an agent to react to feedback,
/// few enough that a confused agent is not trapped.
pub const DEFAULT_MAX_ITERATIONS: u32 = 3;
/// Default per-signal timeout; detectors are pure computations over the input,
/// so a second is generous.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest per-signal timeout a manifest may set: a finish must be answered
/// while the agent still waits for it.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Default linear-memory cap per detector call.
pub const DEFAULT_MEMORY_MB: u64 = 256;
/// Default cap on a detector's returned JSON.
pub const DEFAULT_OUTPUT_KB: u64 = 4096;
/// Default cap on captured detector stdout/stderr, each.
pub const DEFAULT_STDIO_KB: u64 = 64;

/// Whether a failing detector counts as triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// A failure counts as triggered (the safe default for gates).
    FailClosed,
    /// A failure counts as not triggered.
    FailOpen,
}

/// Hard gates short-circuit; soft signals cost their weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// Triggered means reject, and later signals do not run.
    HardGate,
    /// Triggered lowers the score by its share of the soft weights.
    Soft,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum DurationSpec {
    Text(String),
    Seconds(f64),
}

impl DurationSpec {
    /// The duration, or `None` when it is not a finite, non-negative number
    /// of at most [`MAX_TIMEOUT`].
    fn to_duration(&self) -> Option<Duration> {
        let d = match self {
            DurationSpec::Seconds(s) => Duration::try_from_secs_f64(*s).ok()?,
            DurationSpec::Text(t) => {
                // The schema's pattern guarantees one of these suffixes and a number.
                let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
                    (n, 0.001)
                } else if let Some(n) = t.strip_suffix('s') {
                    (n, 1.0)
                } else {
                    (t.strip_suffix('m').unwrap_or(t), 60.0)
                };
                Duration::try_from_secs_f64(num.parse::<f64>().ok()? * scale).ok()?
            }
        };
        (d <= MAX_TIMEOUT).then_some(d)
    }
}

#[derive(Debug, Deserialize)]
struct RawManifest {
    name: String,
    version: String,
    #[serde(default)]
    description: String,
    threshold: Option<f64>,
    max_iterations: Option<u32>,
    on_error: Option<OnError>,
    #[serde(default)]
    capabilities: Vec<Capability>,
    test_patterns: Option<Vec<String>>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    followup: FollowupStyle,
    signals: Vec<RawSignal>,
}

#[derive(Debug, Default, Deserialize)]
struct RawLimits {
    memory_mb: Option<u64>,
    output_kb: Option<u64>,
    stdio_kb: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct RawSignal {
    name: String,
    #[serde(rename = "type")]
    kind: SignalKind,
    weight: Option<f64>,
    detector: String,
    #[serde(default)]
    config: Value,
    timeout: Option<DurationSpec>,
    on_error: Option<OnError>,
    memory_mb: Option<u64>,
}

/// How the default follow-up joins the triggered signals' texts.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct FollowupStyle {
    /// Printed before the signals' texts.
    #[serde(default)]
    pub header: Option<String>,
    /// Printed after them.
    #[serde(default)]
    pub footer: Option<String>,
    /// Between two texts; default a blank line.
    #[serde(default)]
    pub separator: Option<String>,
}

/// Resource caps for detector calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Linear-memory cap per call, bytes.
    pub memory_bytes: u64,
    /// Cap on the returned JSON, bytes.
    pub output_bytes: u64,
    /// Cap on captured stdout and stderr, each, bytes.
    pub stdio_bytes: u64,
}

/// One signal of the manifest.
#[derive(Debug, Clone)]
pub struct Signal {
    /// Unique name within the skill.
    pub name: String,
    /// Gate or soft.
    pub kind: SignalKind,
    /// Weight for soft signals (0 for gates).
    pub weight: f64,
    /// Detector path as written in the manifest.
    pub detector: String,
    /// Detector path resolved against the skill directory.
    pub detector_path: PathBuf,
    /// Passed to the detector as is.
    pub config: Value,
    /// Wall-clock limit for one call.
    pub timeout: Duration,
    /// What a failure means for this signal.
    pub on_error: OnError,
    /// Linear-memory cap, bytes.
    pub memory_bytes: u64,
    /// Where the signal is declared.
    pub position: Position,
}

/// A validated `critic.yaml`.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Skill name.
    pub name: String,
    /// Skill version.
    pub version: String,
    /// Free-form description.
    pub description: String,
    /// Accept iff score >= threshold.
    pub threshold: f64,
    /// Most rejections per session.
    pub max_iterations: u32,
    /// Capabilities the detectors may use.
    pub capabilities: Vec<Capability>,
    /// Test-file globs.
    pub test_patterns: Vec<String>,
    /// Default limits.
    pub limits: Limits,
    /// Follow-up composition.
    pub followup: FollowupStyle,
    /// Signals in manifest order.
    pub signals: Vec<Signal>,
}

/// A skill on disk: its directory and its manifest.
#[derive(Debug, Clone)]
pub struct Skill {
    /// The skill directory.
    pub dir: PathBuf,
    /// `dir/critic.yaml`.
    pub manifest_path: PathBuf,
    /// The validated manifest.
    pub manifest: Manifest,
}

/// Why a manifest could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The skill directory or manifest could not be read.
    #[error("{path}: cannot read: {source} (is this a skill directory with a {MANIFEST_FILE}?)")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// YAML syntax error.
    #[error("{path}:{}:{}: YAML syntax error: {message}", position.line, position.column)]
    Yaml {
        /// The manifest.
        path: PathBuf,
        /// Where.
        position: Position,
        /// What.
        message: String,
    },
    /// Schema or semantic violations, all of them.
    #[error("{path}: invalid manifest:\n{}", Issues(issues, path))]
    Invalid {
        /// The manifest.
        path: PathBuf,
        /// Every problem found.
        issues: Vec<Issue>,
    },
}

pub(crate) struct Issues<'a>(pub &'a [Issue], pub &'a Path);

impl fmt::Display for Issues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let field = if issue.field.is_empty() {
                "(root)".to_string()
            } else {
                field_path(&issue.field)
            };
            write!(
                f,
                "  {}:{}:{}: {}: {}",
                self.1.display(),
                issue.position.line,
                issue.position.column,
                field,
                issue.message
            )?;
        }
        Ok(())
    }
}

/// `/signals/0/weight` as `signals[0].weight`.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

/// The manifest's schema, compiled once.
static MANIFEST_SCHEMA: schema::BundledSchema =
    schema::BundledSchema::new("schemas/critic.schema.json", SCHEMA);

fn schema_issues(doc: &Located) -> Vec<Issue> {
    MANIFEST_SCHEMA.issues(doc, describe)
}

/// A schema error in words a manifest author can act on.
fn describe(error: &jsonschema::ValidationError, pointer: &str) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::Not { .. } if pointer.contains("/signals/") => {
            "weight is only allowed on soft signals; remove it or set type: soft".into()
        }
        K::OneOfNotValid { .. } if pointer.ends_with("/timeout") => {
            "must be a duration like \"500ms\", \"10s\", \"2m\", or a positive number of \
             seconds, of at most one hour"
                .into()
        }
        _ => schema::describe(error),
    }
}

/// Load and validate `dir/critic.yaml`.
pub fn load(dir: &Path) -> Result<Skill, ManifestError> {
    load_with_memo(dir, None)
}

/// [`load`], remembering under `memo_dir` which manifest texts already passed
/// the JSON Schema, so a skill checked on every finish compiles the schema
/// only the first time. The typed and semantic checks run every time (they
/// depend on the skill directory, and are cheap).
pub fn load_with_memo(dir: &Path, memo_dir: Option<&Path>) -> Result<Skill, ManifestError> {
    let manifest_path = dir.join(MANIFEST_FILE);
    let io = |source| ManifestError::Io {
        path: manifest_path.clone(),
        source,
    };
    // Not a FIFO or a device planted as the manifest, nor an endless file.
    let bytes = crate::sys::bounded_read::read_regular_file(&manifest_path, MAX_MANIFEST_BYTES)
        .map_err(io)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let memo = memo_dir.map(|d| d.join(memo_name(&text)));
    let known_valid = memo.as_ref().is_some_and(|m| m.is_file());
    let manifest = parse_inner(&text, dir, &manifest_path, !known_valid)?;
    if let Some(memo) = memo.filter(|_| !known_valid) {
        // A lost memo only costs a schema check next time.
        let _ = memo
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::write(&memo, b""));
    }
    Ok(Skill {
        dir: dir.to_path_buf(),
        manifest_path,
        manifest,
    })
}

/// The memo file for a manifest text that passed this binary's schema.
fn memo_name(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(SCHEMA.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    format!("{}.valid", hex::encode(&h.finalize()[..16]))
}

#[cfg(any(test, feature = "internals"))]
/// Validate manifest text; `dir` resolves detector paths, `path` names the file in errors.
pub fn parse(text: &str, dir: &Path, path: &Path) -> Result<Manifest, ManifestError> {
    parse_inner(text, dir, path, true)
}

fn parse_inner(
    text: &str,
    dir: &Path,
    path: &Path,
    check_schema: bool,
) -> Result<Manifest, ManifestError> {
    let doc = yaml::parse(text).map_err(|e| ManifestError::Yaml {
        path: path.to_path_buf(),
        position: e.position,
        message: e.message,
    })?;
    let invalid = |issues| ManifestError::Invalid {
        path: path.to_path_buf(),
        issues,
    };
    if check_schema {
        let issues = schema_issues(&doc);
        if !issues.is_empty() {
            return Err(invalid(issues));
        }
    }
    let raw: RawManifest = serde_json::from_value(doc.value.clone()).map_err(|e| {
        invalid(vec![Issue {
            position: Position { line: 1, column: 1 },
            field: String::new(),
            message: format!("does not match the manifest structure: {e}"),
        }])
    })?;
    let mut issues = Vec::new();
    let manifest = build(raw, dir, &doc, &mut issues);
    issues.extend(semantic_issues(&manifest, &doc));
    if !issues.is_empty() {
        return Err(invalid(issues));
    }
    Ok(manifest)
}

fn build(raw: RawManifest, dir: &Path, doc: &Located, issues: &mut Vec<Issue>) -> Manifest {
    let on_error = raw.on_error.unwrap_or(OnError::FailClosed);
    let limits = Limits {
        // The schema bounds these; `min` keeps the shifts in range even so.
        memory_bytes: raw.limits.memory_mb.unwrap_or(DEFAULT_MEMORY_MB).min(4096) << 20,
        output_bytes: raw
            .limits
            .output_kb
            .unwrap_or(DEFAULT_OUTPUT_KB)
            .min(262_144)
            << 10,
        stdio_bytes: raw.limits.stdio_kb.unwrap_or(DEFAULT_STDIO_KB).min(65_536) << 10,
    };
    let signals = raw
        .signals
        .into_iter()
        .enumerate()
        .map(|(i, s)| Signal {
            detector_path: dir.join(&s.detector),
            position: doc.position(&format!("/signals/{i}")),
            weight: s.weight.unwrap_or(0.0),
            timeout: match s.timeout.as_ref().map(DurationSpec::to_duration) {
                None => DEFAULT_TIMEOUT,
                Some(Some(t)) => t,
                Some(None) => {
                    let field = format!("/signals/{i}/timeout");
                    issues.push(Issue {
                        position: doc.position(&field),
                        field,
                        message: format!(
                            "timeout must be a duration of at most {}s",
                            MAX_TIMEOUT.as_secs()
                        ),
                    });
                    DEFAULT_TIMEOUT
                }
            },
            on_error: s.on_error.unwrap_or(on_error),
            memory_bytes: s
                .memory_mb
                .map_or(limits.memory_bytes, |m| m.min(4096) << 20),
            name: s.name,
            kind: s.kind,
            detector: s.detector,
            config: s.config,
        })
        .collect();
    Manifest {
        name: raw.name,
        version: raw.version,
        description: raw.description,
        threshold: raw.threshold.unwrap_or(DEFAULT_THRESHOLD),
        max_iterations: raw.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
        capabilities: raw.capabilities,
        test_patterns: raw.test_patterns.unwrap_or_else(|| {
            DEFAULT_TEST_PATTERNS
                .iter()
                .map(|s| s.to_string())
                .collect()
        }),
        limits,
        followup: raw.followup,
        signals,
    }
}

/// Largest detector file a skill may ship; larger ones are refused before
/// they are read.
pub const MAX_DETECTOR_BYTES: u64 = 64 << 20;

/// A detector must be a regular file inside the skill directory: the skill is
/// untrusted, and its manifest must not make the host read (or hang on)
/// anything else.
fn check_detector_path(declared: &str, path: &Path) -> Result<(), String> {
    let rel = Path::new(declared);
    if rel.is_absolute()
        || rel.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return Err(format!(
            "detector path {declared:?} leaves the skill directory; use a path relative to the \
             skill directory without `..` (copy the component into the skill)"
        ));
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "detector file {} does not exist (build it with `critic build <skill dir>`)",
                path.display()
            ))
        }
        Err(e) => return Err(format!("detector file {}: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("detector {} is not a regular file", path.display()));
    }
    if meta.len() > MAX_DETECTOR_BYTES {
        return Err(format!(
            "detector {} is {} bytes, more than the {} MiB a detector may be",
            path.display(),
            meta.len(),
            MAX_DETECTOR_BYTES >> 20
        ));
    }
    // A symlink inside the skill may not point out of it.
    let skill_dir = path
        .ancestors()
        .nth(rel.components().count())
        .and_then(|d| d.canonicalize().ok());
    match (skill_dir, path.canonicalize()) {
        (Some(dir), Ok(real)) if real.starts_with(&dir) => Ok(()),
        _ => Err(format!(
            "detector {} resolves outside the skill directory (a symlink); copy the component into the skill",
            path.display()
        )),
    }
}

/// The most memory a skill's detectors may ask for together: a check may
/// run them all at once, so each one's limit alone bounds nothing.
pub const MAX_TOTAL_MEMORY_MB: u64 = 4096;

fn semantic_issues(m: &Manifest, doc: &Located) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (i, s) in m.signals.iter().enumerate() {
        if m.signals[..i].iter().any(|o| o.name == s.name) {
            let field = format!("/signals/{i}/name");
            issues.push(Issue {
                position: doc.position(&field),
                field,
                message: format!(
                    "duplicate signal name {:?}; signal names must be unique",
                    s.name
                ),
            });
        }
        if let Err(message) = check_detector_path(&s.detector, &s.detector_path) {
            let field = format!("/signals/{i}/detector");
            issues.push(Issue {
                position: doc.position(&field),
                field,
                message,
            });
        }
        if s.timeout.is_zero() {
            let field = format!("/signals/{i}/timeout");
            issues.push(Issue {
                position: doc.position(&field),
                field,
                message: "timeout must be longer than zero".into(),
            });
        }
    }
    let memory: u64 = m.signals.iter().map(|s| s.memory_bytes >> 20).sum();
    if memory > MAX_TOTAL_MEMORY_MB {
        issues.push(Issue {
            position: doc.position("/signals"),
            field: "/signals".into(),
            message: format!(
                "the detectors together ask for {memory} MiB of memory, more than {MAX_TOTAL_MEMORY_MB}; they may run at once, so lower limits.memory_mb or a signal's memory_mb"
            ),
        });
    }
    for (i, p) in m.test_patterns.iter().enumerate() {
        if let Err(e) = globset::Glob::new(p) {
            let field = format!("/test_patterns/{i}");
            issues.push(Issue {
                position: doc.position(&field),
                field,
                message: format!("not a valid glob: {e}"),
            });
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.wasm"), b"\0asm").unwrap();
        dir
    }

    fn parse_in(dir: &Path, text: &str) -> Result<Manifest, ManifestError> {
        parse(text, dir, &dir.join(MANIFEST_FILE))
    }

    const GOOD: &str = "name: demo
version: 0.1.0
threshold: 0.7
capabilities: [log]
signals:
  - name: gate
    type: hard_gate
    detector: d.wasm
    timeout: 500ms
  - name: soft-one
    type: soft
    weight: 2
    detector: d.wasm
    config: {x: 1}
";

    #[test]
    fn good_manifest_loads_with_defaults() {
        let dir = skill_dir();
        let m = parse_in(dir.path(), GOOD).unwrap();
        assert_eq!(m.name, "demo");
        assert_eq!(m.threshold, 0.7);
        assert_eq!(m.max_iterations, DEFAULT_MAX_ITERATIONS);
        assert_eq!(m.signals[0].timeout, Duration::from_millis(500));
        assert_eq!(m.signals[0].on_error, OnError::FailClosed);
        assert_eq!(m.signals[1].weight, 2.0);
        assert_eq!(m.signals[1].config["x"], 1);
        assert_eq!(m.signals[1].timeout, DEFAULT_TIMEOUT);
        assert_eq!(m.capabilities, vec![Capability::Log]);
    }

    fn issues(text: &str) -> Vec<Issue> {
        let dir = skill_dir();
        match parse_in(dir.path(), text) {
            Err(ManifestError::Invalid { issues, .. }) => issues,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn unknown_field_points_at_the_key() {
        let text = GOOD.replace("    timeout: 500ms", "    timout: 500ms");
        let found = issues(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].field, "/signals/0");
        assert_eq!(found[0].position, Position { line: 9, column: 5 });
        assert_eq!(
            found[0].message,
            "unknown field `timout` (did you mean `timeout`?); the fields allowed here are name, \
             type, weight, detector, config, timeout, on_error, memory_mb (see \
             schemas/critic.schema.json)"
        );
        // A key that is no near miss of a field is placed, not quoted.
        let dir = skill_dir();
        let text = GOOD.replace("    timeout: 500ms", "    sk-live-0123456789: 500ms");
        let err = parse_in(dir.path(), &text).unwrap_err().to_string();
        assert!(
            !err.contains("sk-live") && err.contains("unknown field;"),
            "the key is placed, not quoted: {err}"
        );
        for (text, allowed) in [
            (
                GOOD.replace("threshold: 0.7", "thresh: 0.7"),
                "name, version, description",
            ),
            (
                format!("{GOOD}limits: {{memory: 1}}\n"),
                "memory_mb, output_kb, stdio_kb",
            ),
            (
                format!("{GOOD}followup: {{head: x}}\n"),
                "header, footer, separator",
            ),
        ] {
            let found = issues(&text);
            assert!(found[0].message.contains(allowed), "{found:?}");
        }
    }

    #[test]
    fn every_violation_is_reported_with_its_place() {
        let text = GOOD
            .replace("threshold: 0.7", "threshold: 7")
            .replace("    weight: 2\n", "")
            .replace("capabilities: [log]", "capabilities: [network]");
        let found = issues(&text);
        let fields: Vec<_> = found.iter().map(|i| i.field.as_str()).collect();
        assert!(fields.contains(&"/threshold"), "{found:?}");
        assert!(fields.contains(&"/capabilities/0"), "{found:?}");
        assert!(fields.contains(&"/signals/1"), "{found:?}");
        let cap = found.iter().find(|i| i.field == "/capabilities/0").unwrap();
        assert_eq!(cap.position.line, 4);
        assert!(cap.message.contains("read-file"), "{}", cap.message);
    }

    #[test]
    fn signals_and_their_memory_together_are_bounded() {
        let signal = |i: usize, mb: u64| {
            format!("  - {{name: s{i}, type: hard_gate, detector: d.wasm, memory_mb: {mb}}}\n")
        };
        let head = "name: demo\nversion: 0.1.0\nsignals:\n";
        let many: String = (0..65).map(|i| signal(i, 64)).collect();
        let found = issues(&format!("{head}{many}"));
        assert_eq!(found[0].field, "/signals", "{found:?}");
        let heavy: String = (0..3).map(|i| signal(i, 2048)).collect();
        let found = issues(&format!("{head}{heavy}"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("6144 MiB"), "{found:?}");
        let dir = skill_dir();
        let fits: String = (0..2).map(|i| signal(i, 2048)).collect();
        parse_in(dir.path(), &format!("{head}{fits}")).unwrap();
    }

    #[test]
    fn weight_on_a_gate_is_explained() {
        let text = GOOD.replace("    timeout: 500ms", "    weight: 1");
        let found = issues(&text);
        assert!(
            found[0].message.contains("only allowed on soft"),
            "{found:?}"
        );
    }

    #[test]
    fn duplicate_names_and_missing_detectors_are_located() {
        let text = GOOD.replace("name: soft-one", "name: gate").replace(
            "    detector: d.wasm\n    config",
            "    detector: nope.wasm\n    config",
        );
        let found = issues(&text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].field, "/signals/1/name");
        assert_eq!(found[0].position.line, 10);
        assert!(found[1].message.contains("nope.wasm"));
        assert!(found[1].message.contains("critic build"));
    }

    #[test]
    fn yaml_errors_name_file_line_and_column() {
        let dir = skill_dir();
        let err = parse_in(dir.path(), "name: demo\nsignals: [\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("critic.yaml:"), "{text}");
        assert!(text.contains("YAML syntax error"), "{text}");
    }

    #[test]
    fn display_lists_field_paths() {
        let text = GOOD.replace("    timeout: 500ms", "    timeout: soon");
        let dir = skill_dir();
        let err = parse_in(dir.path(), &text).unwrap_err().to_string();
        assert!(
            err.contains("critic.yaml:9:14: signals[0].timeout: must be a duration"),
            "{err}"
        );
    }

    #[test]
    fn schema_capabilities_match_the_host() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let listed: Vec<&str> = schema["$defs"]["capability"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let known: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(listed, known);
    }
}
