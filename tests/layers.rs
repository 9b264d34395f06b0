//! The layers of `src/` only look down. Every `crate::` path in the code
//! (a `use`, or a path written out) names a module of its own layer or of a
//! layer below it; the order is written once, here, and drawn in
//! `docs/architecture.md`. A path into an item of `lib.rs` itself (the
//! library's public API) looks up from every layer. The command line,
//! `cli/`, is the top layer; the binary (`src/bin/`) only calls it.

use std::path::{Path, PathBuf};

/// The layers, top down. Modules in one entry are one layer.
const LAYERS: &[&[&str]] = &[
    &["cli"],
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

/// A module's path (`["experiment", "report"]`) from its file's path under
/// `src/` (`experiment/report/mod.rs`).
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The identifier starting at byte `at` of `code`.
fn ident_at(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Whether byte `at` of `code` starts a word (no identifier character or
/// `:` before it).
fn starts_word(code: &str, at: usize) -> bool {
    code[..at]
        .chars()
        .next_back()
        .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
}

/// A `use` tree (`a::{b, c::d}`) as its paths (`a::b`, `a::c::d`).
fn expand_tree(prefix: &str, tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![format!("{prefix}{tree}")];
    };
    let head = &tree[..open];
    let inner = tree[open + 1..].trim_end().trim_end_matches('}');
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.extend(expand_tree(&format!("{prefix}{head}"), &inner[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        out.extend(expand_tree(&format!("{prefix}{head}"), &inner[start..]));
    }
    out
}

/// The names of the inline modules (`mod tests { ... }`) around byte `at`.
fn inline_modules(code: &str, at: usize) -> Vec<String> {
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < at {
        let c = code.as_bytes()[i];
        if c == b'm' && code[i..].starts_with("mod ") && starts_word(code, i) {
            let name = ident_at(code, i + 4).to_string();
            let after = code[i + 4 + name.len()..].trim_start();
            if after.starts_with('{') {
                pending = Some(name);
            }
        } else if c == b'{' {
            stack.push(pending.take());
        } else if c == b'}' {
            stack.pop();
        }
        i += 1;
    }
    stack.into_iter().flatten().collect()
}

/// The files each file of `src/` imports from: every `use` and written-out
/// path (`crate::`, `super::`, `self::`, or a child module's name) resolved
/// to the file of the deepest module it names, and every `mod` declaration
/// (a parent reaches its children). A file's own tests (`mod tests`,
/// inline or in `tests.rs`) are part of it.
fn imports(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut paths = Vec::new();
    sources(src, &mut paths);
    let files: std::collections::BTreeMap<Vec<String>, String> = paths
        .iter()
        .map(|p| p.strip_prefix(src).unwrap().to_string_lossy().into_owned())
        .filter(|f| !f.starts_with("bin/"))
        .map(|f| (module_of(&f), f))
        .collect();
    let mut edges = std::collections::BTreeMap::new();
    for (module, file) in &files {
        let code = code_of(&std::fs::read_to_string(src.join(file)).unwrap());
        // `lib.rs` declares its layers through a macro, `layers!(a, b)`.
        let by_macro = code.find("layers!(").map_or("", |at| {
            let list = &code[at + "layers!(".len()..];
            &list[..list.find(')').unwrap_or(0)]
        });
        let kids: Vec<&str> = code
            .match_indices("mod ")
            .filter(|(i, _)| starts_word(&code, *i))
            .map(|(i, _)| ident_at(&code, i + 4))
            .chain(by_macro.split(',').map(str::trim))
            .filter(|name| {
                let mut child = module.clone();
                child.push(name.to_string());
                files.contains_key(&child)
            })
            .collect();
        let mut named: Vec<(String, usize)> = Vec::new();
        for (at, _) in code
            .match_indices("use ")
            .filter(|(i, _)| starts_word(&code, *i))
        {
            let tree: String = code[at + 4..]
                .split(';')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            named.extend(expand_tree("", &tree).into_iter().map(|p| (p, at)));
        }
        for root in ["crate::", "super::", "self::"] {
            for (at, _) in code
                .match_indices(root)
                .filter(|(i, _)| starts_word(&code, *i))
            {
                let path: String = code[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                // `super::{a, b}` in a `use` names `a` and `b`, which the
                // loop above reads; the path up to the brace names nothing
                // (a turbofish's `::<` ends a path that does). `pub(in
                // crate::a)` says who may see an item, not what it uses.
                let group = code[at + path.len()..].starts_with('{');
                if !group && !code[..at].ends_with("pub(in ") {
                    named.push((path.trim_end_matches("::").to_string(), at));
                }
            }
        }
        let mut to = std::collections::BTreeSet::new();
        for kid in kids.iter().filter(|k| **k != "tests") {
            let mut child = module.clone();
            child.push(kid.to_string());
            to.insert(files[&child].clone());
        }
        for (path, at) in named {
            let mut segments: Vec<&str> = path
                .split("::")
                .map(|s| s.split(" as ").next().unwrap_or(s))
                .filter(|s| !s.is_empty() && *s != "*")
                .collect();
            let inline = inline_modules(&code, at);
            let mut base: Vec<String> = module.clone();
            let mut depth = inline.len();
            match segments.first().copied() {
                Some("crate") => {
                    base.clear();
                    depth = 0;
                    segments.remove(0);
                }
                Some("super" | "self") => {
                    while let Some(s @ ("super" | "self")) = segments.first().copied() {
                        if s == "super" {
                            if depth > 0 {
                                depth -= 1;
                            } else {
                                base.pop();
                            }
                        }
                        segments.remove(0);
                    }
                }
                Some(first) if kids.contains(&first) && depth == 0 => {}
                _ => continue,
            }
            if depth > 0 {
                // Within the file's own inline modules.
                continue;
            }
            let mut full = base;
            full.extend(segments.iter().map(|s| s.to_string()));
            let target = (0..=full.len())
                .rev()
                .find_map(|n| files.get(&full[..n]))
                .cloned();
            if let Some(target) = target.filter(|t| t != file) {
                to.insert(target);
            }
        }
        edges.insert(file.clone(), to);
    }
    edges
}

/// The circles of `edges`: strongly connected sets of more than one file.
fn circles(
    edges: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        index: std::collections::HashMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, (self.next, self.next));
            self.next += 1;
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[v].1.min(self.index[w].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[v].1.min(self.index[w].0);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut circle = Vec::new();
                while let Some(w) = self.stack.pop() {
                    circle.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if circle.len() > 1 {
                    circle.sort();
                    self.found.push(circle);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: Default::default(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found
}

#[test]
fn no_circle_of_imports() {
    let edges = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|circle| {
            circle
                .iter()
                .map(|f| {
                    let to: Vec<String> = edges[f]
                        .iter()
                        .filter(|t| circle.contains(t))
                        .map(|t| format!("src/{t}"))
                        .collect();
                    format!("  src/{f} -> {}", to.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(
        found.is_empty(),
        "files importing each other, each with what it reaches of the others (move what \
         both use into a leaf file of its own; a child importing its parent's items counts, \
         since the parent declares the child):\n{}",
        found.join("\n\n")
    );
}

#[test]
fn a_planted_circle_is_found_and_test_modules_are_their_files_own() {
    let src = tempfile::tempdir().unwrap();
    let write = |file: &str, text: &str| {
        let path = src.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod c;\nmod d;\n");
    // b imports an item of its parent a, which declares it.
    write("a/mod.rs", "mod b;\npub struct Other;\n");
    write("a/b.rs", "use super::Other;\npub struct Thing;\n");
    // c's tests, inline and in a file, import c.
    write(
        "c/mod.rs",
        "use crate::a::Other;\n#[cfg(test)]\nmod tests;\nmod inline {\n    use super::*;\n}\n",
    );
    write("c/tests.rs", "use super::*;\n");
    // d's children name each other through a group, and say who may see
    // their items: neither reaches d itself.
    write("d/mod.rs", "mod e;\nmod f;\n");
    write(
        "d/e.rs",
        "use super::{f, f::Leaf};\npub(in crate::d) struct E;\n",
    );
    write("d/f.rs", "pub(in crate::d) struct Leaf;\n");
    let edges = imports(src.path());
    assert_eq!(
        circles(&edges),
        [vec!["a/b.rs".to_string(), "a/mod.rs".into()]]
    );
    assert!(edges["c/mod.rs"].iter().eq(["a/mod.rs"]), "{edges:?}");
    assert!(edges["d/e.rs"].iter().eq(["d/f.rs"]), "{edges:?}");
}
