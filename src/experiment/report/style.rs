//! The look the report and the run pages share: their stylesheet, their
//! content security policy, and how each run is marked.

use crate::experiment::db::{Run, Status};

/// The look of the report and the run pages: type large enough to read,
/// wide content scrolling inside its own box rather than the page.
pub(super) const STYLE: &str = r#"
:root { font-size: 16px; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; line-height: 1.45;
  color: #1b1b1b; max-width: 1360px; margin: 1.5em auto; padding: 0 1.5em; }
h1 { font-size: 1.9rem; margin-bottom: 0.3em; }
h2 { font-size: 1.4rem; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1.1rem; margin: 1.2em 0 0.4em; }
nav a { margin-right: 1.2em; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.95rem; }
th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: right; vertical-align: top; }
th { background: #f2f2f2; }
th:first-child, td:first-child { text-align: left; white-space: nowrap; }
td.text, th.text { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { display: inline-block; margin: 0 1.2em 1.2em 0; vertical-align: top; max-width: 100%; }
figure svg { max-width: 100%; height: auto; }
figcaption, .from { font-size: 0.95rem; margin-top: 0.3em; }
.key { margin-right: 1.2em; white-space: nowrap; }
.swatch { display: inline-block; width: 1.6em; height: 0.4em; vertical-align: middle; margin-right: 0.4em; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.6em 0.8em; font-size: 0.88rem;
  overflow: auto; max-height: 42em; max-width: 100%; box-sizing: border-box; }
pre.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.diff .add { background: #e3f7e6; } .diff .del { background: #fde8e6; }
.diff .hunk { color: #0b4fa8; } .diff .file { font-weight: bold; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
.run, .chip { display: inline-block; min-width: 1.7em; padding: 1px 5px; margin: 1px;
  border-radius: 4px; text-align: center; font-weight: bold; text-decoration: none; color: #fff; }
.resolved { background: #2e7d32; } .unresolved { background: #c62828; }
.agent-fail { background: #b34700; } .infra-error { background: #6a1b9a; }
.chip.ok { background: #455a64; }
.not-run { color: #666; background: none; font-weight: normal; }
.chip.broken { background: #8d6e63; font-weight: normal; }
#runs td { text-align: left; } #runs td:first-child { font-family: ui-monospace, monospace; }
.facts th { text-align: left; width: 14em; } .facts td { text-align: left; }
.note { color: #444; }
#failures td { text-align: left; }
"#;

/// Nothing but the page's own styles: no script, nothing fetched.
pub(super) const CSP: &str = "<meta http-equiv=\"Content-Security-Policy\" \
    content=\"default-src 'none'; style-src 'unsafe-inline'\">";

/// How a run shows in the grid and on its page: its CSS class, its mark,
/// and in words.
pub(super) fn mark(run: &Run) -> (&'static str, &'static str, &'static str) {
    let resolved = run.resolved == Some(true);
    match (run.status, resolved) {
        (Status::InfraError, _) => ("infra-error", "!", "infrastructure error (not a result)"),
        (Status::ReplayDiverged, _) => ("infra-error", "↯", "replay diverged (not a result)"),
        (Status::AgentFail, true) => ("agent-fail", "✓", "agent failure, patch resolves"),
        (Status::AgentFail, false) => ("agent-fail", "✗", "agent failure"),
        (Status::Ok, true) => ("resolved", "✓", "resolved"),
        (Status::Ok, false) => ("unresolved", "✗", "not resolved"),
    }
}
