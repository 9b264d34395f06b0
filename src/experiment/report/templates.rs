//! The report's and the run pages' HTML: minijinja templates in
//! `templates/`, compiled into the binary. Every value a template prints
//! is escaped unless Rust marked it safe (the charts plotters draws, whose
//! text it escapes itself); the Rust side only gathers what a page shows.

use minijinja::{AutoEscape, Environment, Output, State, UndefinedBehavior, Value};
use serde::Serialize;
use std::sync::OnceLock;

const TEMPLATES: [(&str, &str); 5] = [
    ("page.html", include_str!("templates/page.html")),
    ("style.css", include_str!("templates/style.css")),
    ("macros.html", include_str!("templates/macros.html")),
    ("report.html", include_str!("templates/report.html")),
    ("run.html", include_str!("templates/run.html")),
];

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        // A value printed that the page's context lacks is a bug to report,
        // not an empty cell.
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.set_formatter(print);
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .expect("the report's templates parse (their unit test renders each)");
        }
        env
    })
}

/// How a template prints a value. A string is escaped for HTML text and
/// quoted attributes (`&<>"'`) by `html-escape`: minijinja's own escape
/// also writes each `/` as `&#x2f;`, which makes the pages' paths, diffs
/// and logs a fifth larger and slower to write, and no safer.
fn print(out: &mut Output, state: &State, value: &Value) -> Result<(), minijinja::Error> {
    match value.as_str() {
        Some(text) if state.auto_escape() == AutoEscape::Html && !value.is_safe() => {
            // Most of a page's text (logs, outputs) has nothing to escape:
            // two vectorized searches tell, and it is written as it is.
            let bytes = text.as_bytes();
            if memchr::memchr3(b'&', b'<', b'>', bytes).is_none()
                && memchr::memchr2(b'"', b'\'', bytes).is_none()
            {
                return Ok(out.write_str(text)?);
            }
            Ok(out.write_str(&html_escape::encode_quoted_attribute(text))?)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// Template `name` rendered with `context`.
pub(super) fn render(name: &str, context: impl Serialize) -> Result<String, minijinja::Error> {
    environment().get_template(name)?.render(context)
}

/// HTML made in Rust that a page shows as it is (a chart's SVG).
pub(super) fn safe(html: String) -> Value {
    Value::from_safe_string(html)
}

/// A piece of text on a page: plain, or a link.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Span {
    text: String,
    href: Option<String>,
}

impl Span {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            href: None,
        }
    }

    /// `text` linking to `href`.
    pub fn link(href: impl Into<String>, text: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            href: Some(href.into()),
        }
    }
}

/// A table: its id, its header, its rows of cells.
#[derive(Debug, Serialize)]
pub(super) struct Table {
    pub id: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Span>>,
}

/// A list of what is behind a number: its anchor, its title, and its
/// items, each one or more spans.
#[derive(Debug, Serialize)]
pub(super) struct Behind {
    id: String,
    title: String,
    count: usize,
    items: Vec<Span>,
}

impl Behind {
    pub fn new(id: String, title: impl Into<String>, items: Vec<Vec<Span>>) -> Behind {
        Behind {
            id,
            title: title.into(),
            count: items.len(),
            items: joined(items, " "),
        }
    }
}

/// A chart: its anchor, its drawing, and the runs it is drawn from.
#[derive(Debug, Serialize)]
pub(super) struct Figure {
    pub id: &'static str,
    pub svg: Value,
    pub from: Vec<Span>,
}

/// `html` with its apostrophes put back, so that a test reads prose as
/// written; `<`, `>`, `&` and `"` stay escaped.
#[cfg(test)]
pub(super) fn as_written(html: &str) -> String {
    html.replace("&#x27;", "'")
}

/// `parts` joined by `separator`, as one list of spans.
pub(super) fn joined(parts: Vec<Vec<Span>>, separator: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(Span::text(separator));
        }
        out.extend(part);
    }
    out
}
