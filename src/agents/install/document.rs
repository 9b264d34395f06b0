//! A hook configuration file as a tree of its own text. Each scalar keeps
//! the bytes it was written with and each container the whitespace around
//! its items, so an unedited tree prints back byte for byte and an edit
//! changes only the items it adds or removes.
//!
//! Why not `serde_json::Value`: without the `arbitrary_precision` feature it
//! rounds `12345678901234567890123` and `0.1000000000000000055511151231257827`,
//! prints `1.0e3` as `1000.0`, refuses `1e400`, decodes escapes such as
//! `\u00e9` and forgets the layout; and that feature cannot be turned on for
//! this file alone (Cargo unifies it across the host, where it changes how
//! every number is parsed).

use serde_json::Value;

/// Deeper nesting is refused, as serde_json refuses it, so that parsing and
/// printing, which recurse, stay well within the stack.
const MAX_DEPTH: usize = 128;

/// A configuration file: a JSON object and the whitespace around it.
#[derive(Debug, Clone)]
pub(super) struct Document {
    lead: String,
    /// The top-level object.
    pub(super) root: List,
    trail: String,
    /// How items the edit adds are laid out.
    pub(super) layout: Layout,
}

/// The file's own layout, which added items follow.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// One level of indentation: the file's first, or two spaces.
    unit: String,
    /// `"\r\n"` if the file's lines end so.
    newline: &'static str,
    /// Whether items of a container that had none go on lines of their own:
    /// false only in a file written on one line.
    multiline: bool,
}

/// A value: a scalar as written, or a container of items.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// A string (with its quotes and escapes), number, `true`, `false` or
    /// `null`, exactly as the file spells it.
    Scalar(String),
    /// `{...}`.
    Object(List),
    /// `[...]`.
    Array(List),
}

/// The items of an object or array.
#[derive(Debug, Clone, Default)]
pub(super) struct List {
    items: Vec<Item>,
    /// The whitespace before the closing bracket.
    tail: String,
    /// The indentation of the line the opening bracket is on, for the first
    /// item added to an empty container.
    indent: String,
}

#[derive(Debug, Clone)]
struct Item {
    /// The whitespace before the item (after the comma or opening bracket).
    before: String,
    /// The member's name, in an object.
    key: Option<Key>,
    value: Node,
    /// The whitespace between the value and the comma or closing bracket.
    after: String,
}

#[derive(Debug, Clone)]
struct Key {
    /// The name as written, quotes and escapes included.
    raw: String,
    /// The colon and the whitespace around it.
    colon: String,
}

impl Document {
    /// Parse a file's text; an empty (or blank) file is an empty object.
    /// The error names the place, as `line L, column C: what`.
    pub(super) fn parse(text: &str) -> Result<Document, String> {
        if text.trim().is_empty() {
            return Ok(Document {
                lead: String::new(),
                root: List::default(),
                trail: "\n".into(),
                layout: Layout {
                    unit: "  ".into(),
                    newline: "\n",
                    multiline: true,
                },
            });
        }
        // serde_json checks the syntax and words its errors; skipping the
        // value as IgnoredAny converts no number, so none is out of range.
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            return Err(format!(
                "line {}, column {}: {}",
                e.line(),
                e.column(),
                crate::sys::json_error::describe(&e)
            ));
        }
        let mut parser = Parser {
            text,
            at: 0,
            depth: 0,
            indent: "",
        };
        let lead = parser.space().to_owned();
        let root = match parser.value()? {
            Node::Object(root) => root,
            _ => return Err("expected a JSON object at the top".into()),
        };
        let trail = parser.space().to_owned();
        if parser.at != text.len() {
            return Err(parser.unexpected());
        }
        let unit = root
            .items
            .first()
            .and_then(|first| first.before.rsplit_once('\n'))
            .map(|(_, indent)| indent)
            .filter(|indent| !indent.is_empty())
            .unwrap_or("  ")
            .to_owned();
        let layout = Layout {
            unit,
            newline: if text.contains("\r\n") { "\r\n" } else { "\n" },
            multiline: root.items.is_empty() || text.trim().contains('\n'),
        };
        Ok(Document {
            lead,
            root,
            trail,
            layout,
        })
    }

    /// The file's text.
    pub(super) fn print(&self) -> String {
        let mut out = self.lead.clone();
        self.root.print(&mut out, ('{', '}'), true);
        out.push_str(&self.trail);
        out
    }

    /// The text without the whitespace between tokens: equal for two
    /// documents holding the same values, keys and order however laid out.
    pub(super) fn content(&self) -> String {
        let mut out = String::new();
        self.root.print(&mut out, ('{', '}'), false);
        out
    }
}

impl Node {
    /// The items of an object.
    pub(super) fn as_object(&self) -> Option<&List> {
        match self {
            Node::Object(list) => Some(list),
            _ => None,
        }
    }

    /// The items of an object, to edit.
    pub(super) fn as_object_mut(&mut self) -> Option<&mut List> {
        match self {
            Node::Object(list) => Some(list),
            _ => None,
        }
    }

    /// The items of an array, to edit.
    pub(super) fn as_array_mut(&mut self) -> Option<&mut List> {
        match self {
            Node::Array(list) => Some(list),
            _ => None,
        }
    }

    /// A string's value, its escapes decoded.
    pub(super) fn as_str(&self) -> Option<String> {
        match self {
            Node::Scalar(raw) if raw.starts_with('"') => serde_json::from_str(raw).ok(),
            _ => None,
        }
    }

    /// `value` as a node whose containers open on a line indented by
    /// `indent`, laid out one item a line or all on one line.
    fn new(value: &Value, indent: &str, multiline: bool, layout: &Layout) -> Node {
        let list = |members: Vec<(Option<&String>, &Value)>| {
            let inner = format!("{indent}{}", layout.unit);
            let empty = members.is_empty();
            let items = members
                .into_iter()
                .enumerate()
                .map(|(i, (name, value))| Item {
                    before: match (multiline, i) {
                        (true, _) => format!("{}{inner}", layout.newline),
                        (false, 0) => String::new(),
                        (false, _) => " ".into(),
                    },
                    key: name.map(|name| Key::new(name)),
                    value: Node::new(value, &inner, multiline, layout),
                    after: String::new(),
                })
                .collect();
            List {
                items,
                tail: if multiline && !empty {
                    format!("{}{indent}", layout.newline)
                } else {
                    String::new()
                },
                indent: indent.to_owned(),
            }
        };
        match value {
            Value::Object(map) => {
                Node::Object(list(map.iter().map(|(k, v)| (Some(k), v)).collect()))
            }
            Value::Array(values) => Node::Array(list(values.iter().map(|v| (None, v)).collect())),
            scalar => Node::Scalar(scalar.to_string()),
        }
    }

    fn print(&self, out: &mut String, spaced: bool) {
        match self {
            Node::Scalar(raw) => out.push_str(raw),
            Node::Object(list) => list.print(out, ('{', '}'), spaced),
            Node::Array(list) => list.print(out, ('[', ']'), spaced),
        }
    }
}

impl List {
    /// How many items there are.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The values, to edit.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.items.iter_mut().map(|item| &mut item.value)
    }

    /// Where the member `name` is; an error naming `path` if the object
    /// has it twice (agents differ in which one they read).
    pub(super) fn position(&self, name: &str, path: &str) -> Result<Option<usize>, String> {
        let mut found = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.key.as_ref().is_some_and(|key| key.is(name)))
            .map(|(i, _)| i);
        let first = found.next();
        if found.next().is_some() {
            return Err(format!("\"{path}\" appears more than once"));
        }
        Ok(first)
    }

    /// The member `name`'s value (see [`List::position`]).
    pub(super) fn get(&self, name: &str, path: &str) -> Result<Option<&Node>, String> {
        Ok(self.position(name, path)?.map(|i| &self.items[i].value))
    }

    /// The member `name`'s value, to edit (see [`List::position`]).
    pub(super) fn get_mut(&mut self, name: &str, path: &str) -> Result<Option<&mut Node>, String> {
        Ok(self
            .position(name, path)?
            .map(move |i| &mut self.items[i].value))
    }

    /// Remove the item at `i`.
    pub(super) fn remove(&mut self, i: usize) {
        let gone = self.items.remove(i);
        // The new first item takes the place right after the bracket.
        if i == 0 {
            if let Some(first) = self.items.first_mut() {
                first.before = gone.before;
            }
        }
        if self.items.is_empty() {
            self.tail.clear();
        }
    }

    /// Remove the members named `name`.
    pub(super) fn remove_member(&mut self, name: &str) {
        while let Some(i) = self
            .items
            .iter()
            .position(|item| item.key.as_ref().is_some_and(|key| key.is(name)))
        {
            self.remove(i);
        }
    }

    /// Remove the items `doomed` picks (it is given each value and its
    /// index in the file); how many, and where the first was among the
    /// items kept.
    pub(super) fn remove_where(
        &mut self,
        mut doomed: impl FnMut(&Node, usize) -> Result<bool, String>,
    ) -> Result<(usize, Option<usize>), String> {
        let (mut removed, mut first, mut i) = (0, None, 0);
        for n in 0..self.items.len() {
            if doomed(&self.items[i].value, n)? {
                self.remove(i);
                removed += 1;
                first.get_or_insert(i);
            } else {
                i += 1;
            }
        }
        Ok((removed, first))
    }

    /// Insert `value` at `at` (as member `name`, in an object), laid out
    /// like the items beside it.
    pub(super) fn insert(&mut self, at: usize, name: Option<&str>, value: &Value, layout: &Layout) {
        let mut before = match self.items.as_slice() {
            [] if layout.multiline => format!("{}{}{}", layout.newline, self.indent, layout.unit),
            [] => String::new(),
            [only] if only.before.contains('\n') => only.before.clone(),
            [_] => " ".into(),
            [_, second, ..] => second.before.clone(),
        };
        if self.items.is_empty() && layout.multiline {
            self.tail = format!("{}{}", layout.newline, self.indent);
        }
        let (indent, multiline) = match before.rsplit_once('\n') {
            Some((_, indent)) => (indent.to_owned(), true),
            None => (self.indent.clone(), false),
        };
        // A new first item takes the place right after the bracket, and the
        // old first one the separator.
        if at == 0 {
            if let Some(first) = self.items.first_mut() {
                std::mem::swap(&mut before, &mut first.before);
            }
        }
        let item = Item {
            before,
            key: name.map(Key::new),
            value: Node::new(value, &indent, multiline, layout),
            after: String::new(),
        };
        self.items.insert(at.min(self.items.len()), item);
    }

    /// Append `value` (as member `name`, in an object).
    pub(super) fn push(&mut self, name: Option<&str>, value: &Value, layout: &Layout) {
        self.insert(self.items.len(), name, value, layout);
    }

    fn print(&self, out: &mut String, (open, close): (char, char), spaced: bool) {
        out.push(open);
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if spaced {
                out.push_str(&item.before);
            }
            if let Some(key) = &item.key {
                out.push_str(&key.raw);
                out.push_str(if spaced { &key.colon } else { ":" });
            }
            item.value.print(out, spaced);
            if spaced {
                out.push_str(&item.after);
            }
        }
        if spaced {
            out.push_str(&self.tail);
        }
        out.push(close);
    }
}

impl Key {
    fn new(name: &str) -> Key {
        Key {
            raw: Value::from(name).to_string(),
            colon: ": ".into(),
        }
    }

    /// Whether the name, its escapes decoded, is `name`.
    fn is(&self, name: &str) -> bool {
        serde_json::from_str::<String>(&self.raw).is_ok_and(|own| own == name)
    }
}

/// Splits text serde_json has found to be JSON into its tokens and the
/// whitespace between them.
struct Parser<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
    /// The indentation of the line being read.
    indent: &'a str,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// The whitespace from here.
    fn space(&mut self) -> &'a str {
        let start = self.at;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
        let space = &self.text[start..self.at];
        if let Some((_, line)) = space.rsplit_once('\n') {
            let end = line.find(|c| c != ' ' && c != '\t').unwrap_or(line.len());
            self.indent = &line[..end];
        }
        space
    }

    fn value(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(b'{') => self.list(b'}').map(Node::Object),
            Some(b'[') => self.list(b']').map(Node::Array),
            Some(b'"') => self.string().map(|s| Node::Scalar(s.to_owned())),
            Some(_) => {
                let start = self.at;
                while let Some(c) = self.peek() {
                    if b",:]} \t\n\r".contains(&c) {
                        break;
                    }
                    self.at += 1;
                }
                match &self.text[start..self.at] {
                    "" => Err(self.unexpected()),
                    scalar => Ok(Node::Scalar(scalar.to_owned())),
                }
            }
            None => Err(self.unexpected()),
        }
    }

    /// A string token, quotes included.
    fn string(&mut self) -> Result<&'a str, String> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'\\') => self.at += 2,
                Some(b'"') => {
                    self.at += 1;
                    return Ok(&self.text[start..self.at]);
                }
                Some(_) => self.at += 1,
                None => return Err(self.unexpected()),
            }
        }
    }

    fn list(&mut self, close: u8) -> Result<List, String> {
        if self.depth == MAX_DEPTH {
            return Err(format!(
                "{}: nested more than {MAX_DEPTH} deep",
                self.place()
            ));
        }
        self.depth += 1;
        let indent = self.indent.to_owned();
        self.at += 1;
        let mut items = Vec::new();
        let tail = loop {
            let before = self.space().to_owned();
            if items.is_empty() && self.peek() == Some(close) {
                break before;
            }
            let key = if close == b'}' {
                let raw = self.string()?.to_owned();
                let mut colon = self.space().to_owned();
                if self.peek() != Some(b':') {
                    return Err(self.unexpected());
                }
                self.at += 1;
                colon.push(':');
                colon.push_str(self.space());
                Some(Key { raw, colon })
            } else {
                None
            };
            let value = self.value()?;
            let space = self.space().to_owned();
            let last = self.peek() == Some(close);
            if !last && self.peek() != Some(b',') {
                return Err(self.unexpected());
            }
            let (after, tail) = if last {
                (String::new(), space)
            } else {
                (space, String::new())
            };
            items.push(Item {
                before,
                key,
                value,
                after,
            });
            if last {
                break tail;
            }
            self.at += 1;
        };
        self.at += 1;
        self.depth -= 1;
        Ok(List {
            items,
            tail,
            indent,
        })
    }

    /// `line L, column C` of the byte being read.
    fn place(&self) -> String {
        let before = &self.text.as_bytes()[..self.at.min(self.text.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        format!("line {line}, column {column}")
    }

    /// Not reached on text serde_json accepted; an error rather than a panic
    /// all the same.
    fn unexpected(&self) -> String {
        format!("{}: unexpected character", self.place())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_what_it_read_byte_for_byte() {
        for text in [
            "{}",
            " { } \n",
            "{\"a\":1}",
            "{\r\n\t\"a\" : [ 1 , 2.50 ,\r\n\t\t-0.0, 1e400 ] ,\"b\":{}\r\n}\r\n",
            r#"{"n": 12345678901234567890123, "d": 0.1000000000000000055511151231257827}"#,
            r#"{"s": "caf\u00e9 \/ \"q\" \\ \ud83d\ude00", "caf\u00e9": null, "x": [[[]], {}]}"#,
            "{\"a\": 1, \"a\": 2}",
        ] {
            let doc = Document::parse(text).unwrap();
            assert_eq!(doc.print(), text);
        }
    }

    #[test]
    fn content_ignores_layout_only() {
        let a = Document::parse("{\n  \"a\": [1.0, \"\\u00e9\"]\n}\n").unwrap();
        let b = Document::parse("{\"a\":[1.0,\"\\u00e9\"]}").unwrap();
        let c = Document::parse("{\"a\":[1,\"\\u00e9\"]}").unwrap();
        assert_eq!(a.content(), b.content());
        assert_ne!(a.content(), c.content());
    }

    #[test]
    fn refuses_what_is_not_an_object_naming_the_place() {
        let e = Document::parse("{\n  \"a\": [1,]\n}").unwrap_err();
        assert!(e.starts_with("line 2, column"), "{e}");
        assert!(Document::parse("[1]").unwrap_err().contains("object"));
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(Document::parse(&deep).unwrap_err().contains("nested"));
    }

    #[test]
    fn keys_match_by_their_decoded_names() {
        let doc = Document::parse(r#"{"ho\u006fks": 1, "other": 2}"#).unwrap();
        assert_eq!(doc.root.position("hooks", "hooks").unwrap(), Some(0));
        let doc = Document::parse(r#"{"hooks": 1, "hooks": 2}"#).unwrap();
        let e = doc.root.position("hooks", "hooks").unwrap_err();
        assert_eq!(e, "\"hooks\" appears more than once");
    }
}
