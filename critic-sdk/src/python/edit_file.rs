//! Reading a model's answer: the `edit_file(filename, start, end, content)`
//! calls inside its fenced Python blocks, parsed with Ruff's Python parser
//! (so triple-quoted, concatenated and keyword arguments all work), and
//! applied to the files they name.

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{Expr, Number};
use ruff_python_parser::parse_module;
use std::collections::BTreeMap;

/// One `edit_file` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// File to edit, as the model wrote it.
    pub filename: String,
    /// First line replaced (1-based).
    pub start: usize,
    /// Last line replaced (inclusive).
    pub end: usize,
    /// Replacement text.
    pub content: String,
}

/// `text` with 1-based line numbers in a right-aligned margin, as the
/// prompts that ask for `edit_file` calls show the files to edit.
pub fn numbered(text: &str) -> String {
    let width = text.lines().count().max(1).to_string().len();
    text.lines()
        .enumerate()
        .map(|(i, l)| format!("{:>width$} {l}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fenced code blocks of `answer` tagged `python` (or untagged), in order.
fn python_blocks(answer: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in answer.lines() {
        let trimmed = line.trim_start();
        match current.as_mut() {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    let tag = tag.trim();
                    if tag.is_empty() || tag.eq_ignore_ascii_case("python") || tag == "py" {
                        current = Some(String::new());
                    }
                }
            }
            Some(block) => {
                if trimmed.starts_with("```") {
                    blocks.push(std::mem::take(block));
                    current = None;
                } else {
                    block.push_str(line);
                    block.push('\n');
                }
            }
        }
    }
    blocks
}

#[derive(Default)]
struct Calls {
    edits: Vec<Result<Edit, String>>,
}

impl<'a> Visitor<'a> for Calls {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "edit_file") {
                self.edits.push(edit_of(&call.arguments));
                return;
            }
        }
        walk_expr(self, expr);
    }
}

fn edit_of(args: &ruff_python_ast::Arguments) -> Result<Edit, String> {
    const NAMES: [&str; 4] = ["filename", "start", "end", "content"];
    let mut slots: [Option<&Expr>; 4] = [None; 4];
    for (i, arg) in args.args.iter().enumerate() {
        *slots.get_mut(i).ok_or("edit_file takes four arguments")? = Some(arg);
    }
    for kw in args.keywords.iter() {
        let name = kw.arg.as_ref().map(|a| a.as_str()).unwrap_or("**");
        let i = NAMES
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| format!("edit_file has no argument `{name}`"))?;
        slots[i] = Some(&kw.value);
    }
    let get = |i: usize| slots[i].ok_or_else(|| format!("edit_file is missing `{}`", NAMES[i]));
    let string = |i: usize| match get(i)? {
        Expr::StringLiteral(s) => Ok(s.value.to_str().to_string()),
        _ => Err(format!(
            "`{}` of edit_file is not a string literal",
            NAMES[i]
        )),
    };
    let line = |i: usize| match get(i)? {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(v) => v
                .as_usize()
                .ok_or_else(|| format!("`{}` of edit_file is out of range", NAMES[i])),
            _ => Err(format!("`{}` of edit_file is not an integer", NAMES[i])),
        },
        _ => Err(format!(
            "`{}` of edit_file is not an integer literal",
            NAMES[i]
        )),
    };
    Ok(Edit {
        filename: string(0)?,
        start: line(1)?,
        end: line(2)?,
        content: string(3)?,
    })
}

/// Every `edit_file` call in `answer`. `Err` when there is none, or when a
/// block does not parse or a call is malformed: such an answer is unusable.
pub fn parse(answer: &str) -> Result<Vec<Edit>, String> {
    let mut edits = Vec::new();
    for (b, block) in python_blocks(answer).iter().enumerate() {
        if !block.contains("edit_file") {
            continue;
        }
        // Walking and dropping the tree recurse once per level of nesting:
        // both happen on a stack sized for the block.
        let calls = super::with_stack_for(block, || -> Result<Calls, String> {
            let module = parse_module(block)
                .map_err(|e| format!("code block {} is not valid Python: {}", b + 1, e.error))?;
            let mut calls = Calls::default();
            for stmt in &module.syntax().body {
                ruff_python_ast::visitor::walk_stmt(&mut calls, stmt);
            }
            Ok(calls)
        })?;
        for edit in calls.edits {
            edits.push(edit?);
        }
    }
    if edits.is_empty() {
        return Err("the answer contains no edit_file command in a ```python block".into());
    }
    Ok(edits)
}

/// Apply `edits` to `files` (path to content). Line numbers refer to the
/// files before any edit; overlapping edits, unknown files and ranges outside
/// a file are errors.
pub fn apply(
    files: &BTreeMap<String, String>,
    edits: &[Edit],
) -> Result<BTreeMap<String, String>, String> {
    let mut by_file: BTreeMap<&str, Vec<&Edit>> = BTreeMap::new();
    for e in edits {
        let path = resolve(files, &e.filename).ok_or_else(|| {
            format!(
                "edit_file names `{}`, which is not one of the files shown",
                e.filename
            )
        })?;
        by_file.entry(path).or_default().push(e);
    }
    let mut out = files.clone();
    for (path, mut list) in by_file {
        let lines: Vec<&str> = files[path].lines().collect();
        list.sort_by_key(|e| e.start);
        for pair in list.windows(2) {
            if pair[1].start <= pair[0].end {
                return Err(format!(
                    "edits to `{path}` overlap (lines {}-{} and {}-{})",
                    pair[0].start, pair[0].end, pair[1].start, pair[1].end
                ));
            }
        }
        let mut new: Vec<&str> = Vec::with_capacity(lines.len());
        let mut next = 0;
        for e in &list {
            if e.start < 1 || e.end < e.start || e.end > lines.len() {
                return Err(format!(
                    "edit_file({path}, {}, {}) is outside the file's {} lines",
                    e.start,
                    e.end,
                    lines.len()
                ));
            }
            new.extend_from_slice(&lines[next..e.start - 1]);
            new.extend(e.content.lines());
            next = e.end;
        }
        new.extend_from_slice(&lines[next..]);
        let mut text = new.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        out.insert(path.to_string(), text);
    }
    Ok(out)
}

/// The shown file `name` refers to: exact, or with a leading `./`, `/`, or
/// absolute prefix that ends in the path.
fn resolve<'a>(files: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    let name = name.trim().trim_start_matches("./");
    files
        .keys()
        .find(|p| name == p.as_str() || name.ends_with(&format!("/{p}")))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"Here is a variant that only handles one case.

```python
edit_file("intervals/merge.py", 12, 12, "        if merged and start == merged[-1][1]:")
edit_file(
    filename="intervals/merge.py",
    start=3,
    end=4,
    content="""def merge(intervals):
    # variant
""",
)
```
Some words after.
```text
edit_file("ignored.py", 1, 1, "x")
```
"#;

    #[test]
    fn parses_positional_keyword_and_triple_quoted_calls() {
        let edits = parse(ANSWER).unwrap();
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0].start, 12);
        assert_eq!(
            edits[0].content,
            "        if merged and start == merged[-1][1]:"
        );
        assert_eq!((edits[1].start, edits[1].end), (3, 4));
        assert_eq!(edits[1].content, "def merge(intervals):\n    # variant\n");
    }

    #[test]
    fn a_deeply_nested_answer_is_no_crash() {
        let deep = format!(
            "```python\nedit_file(\"a.py\", 1, 1, {}0{})\n```\n",
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        // Parsed or refused, but never a stack overflow.
        let _ = parse(&deep);
    }

    #[test]
    fn unusable_answers_say_why() {
        assert!(parse("I cannot help with that.")
            .unwrap_err()
            .contains("no edit_file"));
        let e = parse("```python\nedit_file('a.py', 1, 2\n```").unwrap_err();
        assert!(e.contains("not valid Python"), "{e}");
        let e = parse("```python\nedit_file('a.py', 'one', 2, 'x')\n```").unwrap_err();
        assert!(e.contains("`start`"), "{e}");
        let e = parse("```python\nedit_file('a.py', 1, 2)\n```").unwrap_err();
        assert!(e.contains("missing `content`"), "{e}");
        let e = parse("```python\nedit_file('a.py', 1, 2, f'{x}')\n```").unwrap_err();
        assert!(e.contains("not a string literal"), "{e}");
    }

    #[test]
    fn applies_against_the_original_numbering() {
        let files = BTreeMap::from([("m.py".to_string(), "a\nb\nc\nd\n".to_string())]);
        let edits = vec![
            Edit {
                filename: "m.py".into(),
                start: 4,
                end: 4,
                content: "D".into(),
            },
            Edit {
                filename: "/workspace/repo/m.py".into(),
                start: 1,
                end: 2,
                content: "A\nA2\nA3".into(),
            },
        ];
        assert_eq!(apply(&files, &edits).unwrap()["m.py"], "A\nA2\nA3\nc\nD\n");
        let outside = vec![Edit {
            filename: "m.py".into(),
            start: 4,
            end: 5,
            content: String::new(),
        }];
        assert!(apply(&files, &outside).unwrap_err().contains("outside"));
        let overlap = vec![
            edits[1].clone(),
            Edit {
                start: 2,
                end: 3,
                ..edits[0].clone()
            },
        ];
        assert!(apply(&files, &overlap).unwrap_err().contains("overlap"));
        let unknown = vec![Edit {
            filename: "other.py".into(),
            ..edits[0].clone()
        }];
        assert!(apply(&files, &unknown)
            .unwrap_err()
            .contains("not one of the files"));
    }
}
