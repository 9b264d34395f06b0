//! What the target needs to be understood (the seed's Section 3.1): the
//! module's own functions, classes and constants it uses, transitively,
//! quoted whole (with the target, the code slice); and what it uses from
//! other modules of the project, summarized to a signature and the first
//! line of a docstring (or, with the model, the seed's one-shot summary:
//! see [`summarize_with_model`]). Modules not in the work tree
//! (third-party packages) are left to the model's own knowledge.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_python_parser::parse_module;
use ruff_text_size::Ranged;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The target's context.
#[derive(Debug, Default, Serialize)]
pub struct Context {
    /// The module's definitions the target uses, transitively, in file order.
    pub code: String,
    /// Summaries of what it uses from the project's other modules.
    pub summaries: Vec<Summary>,
}

/// One dependency from another module of the project.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Where it is defined (`package.module.name`).
    pub name: String,
    /// Its signature and the first line of its docstring, or the model's
    /// summary of its definition.
    pub text: String,
    /// Its whole definition, for the model to summarize.
    #[serde(skip)]
    pub source: String,
}

/// The most dependencies from other modules summarized (each may cost a
/// model request): a target importing more is summarized in part.
pub const MAX_SUMMARIES: usize = 32;

/// The longest summary kept from the model, in characters.
const MAX_SUMMARY_CHARS: usize = 800;

/// Names used in a part of the code: plain names, and `alias.attr` pairs.
#[derive(Default)]
struct Uses {
    names: BTreeSet<String>,
    attributes: BTreeSet<(String, String)>,
}

impl<'a> Visitor<'a> for Uses {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) => {
                self.names.insert(n.id.to_string());
            }
            Expr::Attribute(a) => {
                if let Expr::Name(n) = &*a.value {
                    self.attributes
                        .insert((n.id.to_string(), a.attr.to_string()));
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

fn uses_of(stmt: &Stmt) -> Uses {
    let mut uses = Uses::default();
    uses.visit_stmt(stmt);
    uses
}

/// An imported name: the module and, for `from m import x`, the name.
struct Import {
    module: String,
    name: Option<String>,
}

/// The context of `function` (`f` or `Class.m`) in `source`, the module at
/// `path`; `read` gives a work-tree file's text, `None` when there is none.
pub fn retrieve(
    source: &str,
    path: &str,
    function: &str,
    read: impl Fn(&str) -> Option<String>,
) -> Context {
    let Ok(parsed) = parse_module(source) else {
        return Context::default();
    };
    let body = &parsed.syntax().body;
    let package: Vec<&str> = {
        let mut parts: Vec<&str> = path.trim_end_matches(".py").split('/').collect();
        parts.pop();
        parts
    };
    // The module's top-level definitions and imports, by name.
    let mut defined: BTreeMap<String, usize> = BTreeMap::new();
    let mut imports: BTreeMap<String, Import> = BTreeMap::new();
    for (i, stmt) in body.iter().enumerate() {
        match stmt {
            Stmt::FunctionDef(f) => {
                defined.insert(f.name.to_string(), i);
            }
            Stmt::ClassDef(c) => {
                defined.insert(c.name.to_string(), i);
            }
            Stmt::Assign(a) => {
                for target in &a.targets {
                    if let Expr::Name(n) = target {
                        defined.insert(n.id.to_string(), i);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let Expr::Name(n) = &*a.target {
                    defined.insert(n.id.to_string(), i);
                }
            }
            Stmt::Import(s) => {
                for alias in &s.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    imports.insert(
                        local.split('.').next().unwrap_or_default().to_string(),
                        Import {
                            module: alias.name.to_string(),
                            name: None,
                        },
                    );
                }
            }
            Stmt::ImportFrom(s) => {
                let base: Vec<&str> = match s.level {
                    0 => Vec::new(),
                    level => package[..package.len().saturating_sub(level as usize - 1)].to_vec(),
                };
                let mut module: Vec<String> = base.iter().map(|p| p.to_string()).collect();
                module.extend(s.module.iter().map(|m| m.to_string()));
                for alias in &s.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    imports.insert(
                        local,
                        Import {
                            module: module.join("."),
                            name: Some(alias.name.to_string()),
                        },
                    );
                }
            }
            _ => {}
        }
    }
    // The target, then what it uses, transitively.
    let (class, method) = match function.split_once('.') {
        Some((class, method)) => (Some(class), method),
        None => (None, function),
    };
    let mut included: BTreeSet<usize> = BTreeSet::new();
    let mut queue: Vec<Uses> = Vec::new();
    let mut external: BTreeSet<(String, String)> = BTreeSet::new();
    // For a method: its class, and the class's methods by name; the
    // methods it calls on `self` join the context, transitively.
    let mut owner: Option<&ruff_python_ast::StmtClassDef> = None;
    let mut methods: BTreeMap<&str, &Stmt> = BTreeMap::new();
    let mut siblings: BTreeSet<&str> = BTreeSet::new();
    for stmt in body {
        match (stmt, class) {
            (Stmt::FunctionDef(f), None) if f.name.as_str() == method => queue.push(uses_of(stmt)),
            (Stmt::ClassDef(c), Some(name)) if c.name.as_str() == name => {
                owner = Some(c);
                for member in &c.body {
                    if let Stmt::FunctionDef(f) = member {
                        methods.insert(f.name.as_str(), member);
                    }
                }
                queue.extend(methods.get(method).map(|m| uses_of(m)));
                // The class's bases are the method's context too.
                if let Some(arguments) = &c.arguments {
                    let mut uses = Uses::default();
                    for base in arguments.args.iter() {
                        uses.visit_expr(base);
                    }
                    queue.push(uses);
                }
            }
            _ => {}
        }
    }
    while let Some(uses) = queue.pop() {
        for name in &uses.names {
            if let Some(&i) = defined.get(name) {
                if class != Some(name.as_str()) && name != method && included.insert(i) {
                    queue.push(uses_of(&body[i]));
                }
            } else if let Some(import) = imports.get(name) {
                if let Some(imported) = &import.name {
                    external.insert((import.module.clone(), imported.clone()));
                }
            }
        }
        for (alias, attr) in &uses.attributes {
            if let Some(Import { module, name: None }) = imports.get(alias) {
                external.insert((module.clone(), attr.clone()));
            } else if alias == "self" || alias == "cls" {
                if let Some((name, member)) = methods.get_key_value(attr.as_str()) {
                    if *name != method && siblings.insert(name) {
                        queue.push(uses_of(member));
                    }
                }
            }
        }
    }
    let mut parts: Vec<String> = included
        .iter()
        .map(|&i| {
            source[body[i].range().start().to_usize()..body[i].range().end().to_usize()].to_string()
        })
        .collect();
    if let (Some(c), false) = (owner, siblings.is_empty()) {
        // The class's header, then the sibling methods as the file has them.
        let header_end = c.body.first().map_or(c.end(), |b| b.start());
        let header = source[c.start().to_usize()..header_end.to_usize()].trim_end();
        let mut text = header.to_string();
        for name in &siblings {
            let m = methods[name];
            let line_start = source[..m.start().to_usize()]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            text.push_str("\n    ...\n");
            text.push_str(&source[line_start..m.end().to_usize()]);
        }
        parts.push(text);
    }
    let code = parts.join("\n\n");
    let summaries = external
        .into_iter()
        .filter_map(|(module, name)| summarize(&module, &name, &read))
        .take(MAX_SUMMARIES)
        .collect();
    Context { code, summaries }
}

/// `module.name` summarized, if `module` is a file of the work tree that
/// defines `name` (a submodule imported by name is left out).
fn summarize(module: &str, name: &str, read: &impl Fn(&str) -> Option<String>) -> Option<Summary> {
    let base = module.replace('.', "/");
    let source = [
        format!("{base}.py"),
        format!("{base}/__init__.py"),
        format!("src/{base}.py"),
        format!("src/{base}/__init__.py"),
    ]
    .iter()
    .find_map(|p| read(p))?;
    let parsed = parse_module(&source).ok()?;
    parsed.syntax().body.iter().find_map(|stmt| {
        let (header_end, body) = match stmt {
            Stmt::FunctionDef(f) if f.name.as_str() == name => (f.body.first()?.start(), &f.body),
            Stmt::ClassDef(c) if c.name.as_str() == name => (c.body.first()?.start(), &c.body),
            _ => return None,
        };
        let start = match stmt {
            Stmt::FunctionDef(f) => f.decorator_list.last().map_or(f.start(), |d| d.end()),
            Stmt::ClassDef(c) => c.decorator_list.last().map_or(c.start(), |d| d.end()),
            _ => stmt.start(),
        };
        let header = source[start.to_usize()..header_end.to_usize()]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let header = header.trim_end_matches(|c: char| c != ':').to_string();
        let doc = match body.first() {
            Some(Stmt::Expr(e)) => e.value.as_string_literal_expr().map(|s| {
                s.value
                    .to_str()
                    .trim()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string()
            }),
            _ => None,
        };
        Some(Summary {
            source: source[stmt.start().to_usize()..stmt.end().to_usize()].to_string(),
            name: format!("{module}.{name}"),
            text: match doc {
                Some(doc) if !doc.is_empty() => format!("{header}\n    \"\"\"{doc}\"\"\""),
                _ => header,
            },
        })
    })
}

/// Replace each summary's text with the model's one-shot summary of the
/// definition. `known` holds the model's earlier summaries by name (kept in
/// the state, so a session asks once per definition; the host's
/// record/replay cache, when on, keeps them across sessions). `Err` when the
/// model cannot be used at all; the summaries then stay as they are.
pub fn summarize_with_model(
    summaries: &mut [Summary],
    known: &mut BTreeMap<String, String>,
    prompts: &crate::prompts::Prompts,
) -> Result<(), String> {
    let asked: Vec<usize> = (0..summaries.len())
        .filter(|&i| !known.contains_key(&summaries[i].name))
        .collect();
    if !asked.is_empty() {
        let requests = asked
            .iter()
            .map(|&i| {
                let s = &summaries[i];
                let prompt = prompts.render(
                    "summary",
                    serde_json::json!({"name": s.name, "source": s.source}),
                )?;
                Ok(critic_sdk::LlmRequest {
                    messages: vec![critic_sdk::ChatMessage {
                        role: "user".into(),
                        content: prompt,
                    }],
                    temperature: Some(0.0),
                    max_tokens: Some(400),
                    sample: 0,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let answers = critic_sdk::host::llm_complete(&requests)?;
        for (&i, answer) in asked.iter().zip(answers) {
            if let Some(text) = answer.content.filter(|t| !t.trim().is_empty()) {
                // A model's answer is kept in the state: bounded.
                let text: String = text
                    .trim()
                    .trim_matches('`')
                    .trim()
                    .chars()
                    .take(MAX_SUMMARY_CHARS)
                    .collect();
                known.insert(summaries[i].name.clone(), text);
            }
        }
    }
    for summary in summaries.iter_mut() {
        if let Some(text) = known.get(&summary.name) {
            summary.text = text.clone();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_methods_context_is_what_it_uses_and_the_methods_it_calls_on_self() {
        let source = "\
TAX = 2

def unused():
    return 0

def helper(v):
    return v * TAX

class Cart:
    \"\"\"A cart.\"\"\"

    def total(self):
        return self._sum() + 1

    def _sum(self):
        return helper(self._raw())

    def _raw(self):
        return 3

    def other(self):
        return unused()
";
        let c = retrieve(source, "shop.py", "Cart.total", |_| None);
        assert_eq!(
            c.code,
            "TAX = 2\n\ndef helper(v):\n    return v * TAX\n\nclass Cart:\n    ...\n    def _raw(self):\n        return 3\n    ...\n    def _sum(self):\n        return helper(self._raw())"
        );
    }

    #[test]
    fn summaries_are_bounded_in_number() {
        let imports: String = (0..100)
            .map(|i| format!("from pkg.m import f{i}\n"))
            .collect();
        let calls: String = (0..100).map(|i| format!("    f{i}()\n")).collect();
        let source = format!("{imports}\ndef target():\n{calls}");
        let module: String = (0..100)
            .map(|i| format!("def f{i}():\n    pass\n"))
            .collect();
        let c = retrieve(&source, "t.py", "target", |p| {
            (p == "pkg/m.py").then(|| module.clone())
        });
        assert_eq!(c.summaries.len(), MAX_SUMMARIES);
    }

    #[test]
    fn module_definitions_are_quoted_and_project_imports_summarized() {
        let source = "\
import os
from .helpers import scale, unused
import pkg
import pkg.other as other

LIMIT = 10

def helper(v):
    return v * LIMIT

def unrelated():
    return 1

def target(x):
    if x > LIMIT:
        return helper(x) + scale(x) + pkg.clamp(x) + other.go()
    return os.sep
";
        let files: BTreeMap<&str, &str> = BTreeMap::from([
            (
                "pkg/helpers.py",
                "def scale(v: int) -> int:\n    \"\"\"Scale v.\n\n    More.\"\"\"\n    return v\n",
            ),
            ("pkg/__init__.py", "def clamp(v):\n    return v\n"),
            ("pkg/other.py", "class go:\n    \"\"\"Go.\"\"\"\n"),
        ]);
        let c = retrieve(source, "pkg/mod.py", "target", |p| {
            files.get(p).map(|s| s.to_string())
        });
        assert_eq!(c.code, "LIMIT = 10\n\ndef helper(v):\n    return v * LIMIT");
        let names: Vec<&str> = c.summaries.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pkg.clamp", "pkg.helpers.scale", "pkg.other.go"]);
        assert_eq!(
            c.summaries[1].text,
            "def scale(v: int) -> int:\n    \"\"\"Scale v.\"\"\""
        );
        assert_eq!(c.summaries[2].text, "class go:\n    \"\"\"Go.\"\"\"");
    }
}
