//! The report's and the run pages' HTML: minijinja templates in
//! `templates/`, compiled into the binary. Every value a template prints
//! is escaped unless Rust marked it safe (the charts plotters draws, whose
//! text it escapes itself); the Rust side only gathers what a page shows.

use minijinja::{Environment, UndefinedBehavior};
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
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .expect("the report's templates parse (their unit test renders each)");
        }
        env
    })
}

/// Template `name` rendered with `context`.
pub(super) fn render(name: &str, context: impl Serialize) -> Result<String, minijinja::Error> {
    environment().get_template(name)?.render(context)
}

/// HTML made in Rust that a page shows as it is (a chart's SVG).
pub(super) fn safe(html: String) -> minijinja::Value {
    minijinja::Value::from_safe_string(html)
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
        let count = items.len();
        let mut spans = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::text(" "));
            }
            spans.extend(item);
        }
        Behind {
            id,
            title: title.into(),
            count,
            items: spans,
        }
    }
}

/// A chart: its anchor, its drawing, and the runs it is drawn from.
#[derive(Debug, Serialize)]
pub(super) struct Figure {
    pub id: &'static str,
    pub svg: minijinja::Value,
    pub from: Vec<Span>,
}

/// `html` with the two characters minijinja escapes beyond HTML's own
/// (`/` and `'`) put back, so that a test reads paths and prose as written;
/// `<`, `>`, `&` and `"` stay escaped.
#[cfg(test)]
pub(super) fn as_written(html: &str) -> String {
    html.replace("&#x2f;", "/").replace("&#x27;", "'")
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
