//! The layers of `src/` only look down. Every `crate::` path in the code
//! (a `use`, or a path written out) names a module of its own layer or of a
//! layer below it; the order is written once, here, and drawn in
//! `docs/architecture.md`. A path into an item of `lib.rs` itself (the
//! library's facade) looks up from every layer. The binary (`src/bin/`)
//! is above them all and reaches the library through its public API.

use std::path::{Path, PathBuf};

/// The layers, top down. Modules in one entry are one layer.
const LAYERS: &[&[&str]] = &[
    &["experiment"],
    &["mpe"],
    &["grading"],
    &["frontend"],
    &["evaluate"],
    &["detector"],
    &["agents"],
    &["skill"],
    &["host"],
    &["sandbox"],
    &["workspace"],
    &["report_html", "sys"],
];

/// Imports that look up on purpose: the importing file, the layer it
/// reaches, and why (each also in `docs/architecture.md`).
const LOOKING_UP: &[(&str, &str, &str)] = &[];

/// The layer of a module name: its rank from the top, or `None` for an
/// item of `lib.rs` (above every layer).
fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// One import that looks up: where, what it names, and the two layers.
#[derive(Debug, PartialEq)]
struct Upward {
    file: String,
    path: String,
    from: String,
    to: String,
}

/// `text` without its comments and the contents of its string and char
/// literals, so a path in prose or in a message does not count.
fn code_of(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        match (c[i], c.get(i + 1).copied()) {
            ('/', Some('/')) => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                i += 2;
                while i + 1 < c.len() && !(c[i] == '*' && c[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            // A raw string: r"..." or r#"..."#, ended by its own quote.
            ('r', Some('#' | '"'))
                if i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_') =>
            {
                let hashes = c[i + 1..].iter().take_while(|h| **h == '#').count();
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                i += 1 + hashes + 1;
                while i < c.len() && !c[i..].starts_with(&close) {
                    i += 1;
                }
                out.push_str("\"\"");
                i += close.len();
            }
            ('"', _) => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
                i += 1;
            }
            // A char literal ('x', '\n'), not a lifetime ('a).
            ('\'', Some('\\')) => {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            ('\'', Some(_)) if c.get(i + 2) == Some(&'\'') => i += 3,
            (ch, _) => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// The first name of each `crate::` path in `code`: for a group
/// (`crate::{a, b::c}`), the first name of each member.
fn crate_roots(code: &str) -> Vec<(String, String)> {
    let mut roots = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while let Some(found) = code[at..].find("crate::") {
        let start = at + found;
        at = start + "crate::".len();
        if start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b':') {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut member = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        member.push(',');
                    }
                    _ => {}
                }
                member.push(c);
            }
            for m in member.split(',') {
                let name: String = m.trim().chars().take_while(|c| ident(*c as u8)).collect();
                if !name.is_empty() && name != "self" {
                    roots.push((name.clone(), format!("crate::{{{}}}", m.trim())));
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| ident(*c as u8)).collect();
            let path: String = rest
                .chars()
                .take_while(|c| ident(*c as u8) || *c == ':')
                .collect();
            if !name.is_empty() {
                roots.push((name, format!("crate::{}", path.trim_end_matches(':'))));
            }
        }
    }
    roots
}

/// The imports of `file` (its path under `src/`, with `text`) that look up.
fn upward(file: &str, text: &str) -> Vec<Upward> {
    let layer_of = |f: &str| -> String {
        let first = f.split('/').next().unwrap_or(f);
        first.trim_end_matches(".rs").to_string()
    };
    let from = layer_of(file);
    let Some(own) = rank(&from) else {
        return Vec::new();
    };
    crate_roots(&code_of(text))
        .into_iter()
        .filter(|(root, _)| rank(root).is_none_or(|r| r < own))
        .filter(|(root, _)| {
            !LOOKING_UP
                .iter()
                .any(|(f, to, _)| *f == file && *to == root.as_str())
        })
        .map(|(root, path)| Upward {
            file: file.to_string(),
            path,
            from: from.clone(),
            to: if rank(&root).is_some() {
                root
            } else {
                "lib.rs".into()
            },
        })
        .collect()
}

fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn every_import_of_src_looks_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for path in &files {
        let file = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if file == "lib.rs" || file.starts_with("bin/") {
            continue;
        }
        let top = file.split('/').next().unwrap().trim_end_matches(".rs");
        assert!(
            rank(top).is_some(),
            "src/{file}: its module `{top}` is in no layer; add it to LAYERS in tests/layers.rs \
             and to docs/architecture.md"
        );
        found.extend(upward(&file, &std::fs::read_to_string(path).unwrap()));
    }
    let lines: Vec<String> = found
        .iter()
        .map(|u| {
            format!(
                "src/{}: `{}` looks up from `{}` to `{}`",
                u.file, u.path, u.from, u.to
            )
        })
        .collect();
    assert!(
        lines.is_empty(),
        "imports that look up (the order is LAYERS in tests/layers.rs):\n{}",
        lines.join("\n")
    );
    assert!(LOOKING_UP.len() <= 2, "at most two imports may look up");
}

/// The most lines a source file of `src/` or `critic-sdk/src/` may have:
/// past it, a file holds more than one thing and should be split by what
/// each part does.
const MAX_LINES: usize = 900;

#[test]
fn no_source_file_is_over_900_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("critic-sdk/src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_LINES).then(|| {
                format!(
                    "{}: {lines} lines",
                    path.strip_prefix(root).unwrap().display()
                )
            })
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn a_planted_upward_import_is_named() {
    let planted = "//! A detector.\nuse crate::sys::atomic_file;\nuse crate::{\n    sys::x,\n    experiment::db::Run,\n};\nfn f() { crate::Error::Usage(String::new()); }\n// crate::mpe in a comment\nconst S: &str = \"crate::grading\";\nconst Q: char = '\"';\nconst R: &str = r#\"a \"crate::mpe\" b\"#;\nuse crate::mpe;\n";
    let found = upward("detector/planted.rs", planted);
    let named: Vec<(&str, &str)> = found
        .iter()
        .map(|u| (u.path.as_str(), u.to.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("crate::{experiment::db::Run}", "experiment"),
            ("crate::Error::Usage", "lib.rs"),
            ("crate::mpe", "mpe"),
        ]
    );
}
