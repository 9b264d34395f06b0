//! YAML to JSON with source positions.
//!
//! The manifest is validated as JSON (the schema is JSON Schema), but errors must
//! point into the YAML file. So the document is loaded once with `saphyr`'s
//! marked nodes and converted to a `serde_json::Value` while recording where each
//! JSON-pointer path starts. `saphyr` is maintained, pure Rust and YAML 1.2;
//! `serde_yaml` is deprecated and its forks do not expose positions per node.
//! `saphyr` also rejects duplicate keys, which serde-based loaders let through.

use saphyr::{LoadableYamlNode, MarkedYaml, Marker, Scalar, ScanError, YamlData};
use saphyr_parser::{Event, Parser};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;

/// A 1-based line and column in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// A YAML document as JSON, with the position of every node and mapping key.
#[derive(Debug)]
pub struct Located {
    /// The document.
    pub value: Value,
    values: HashMap<String, Position>,
    keys: HashMap<String, Position>,
}

impl Located {
    /// Where the value at a JSON pointer (`/signals/0/name`) starts; falls back to
    /// the nearest ancestor that has a position.
    pub fn position(&self, pointer: &str) -> Position {
        let mut p = pointer;
        loop {
            if let Some(pos) = self.values.get(p) {
                return *pos;
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return Position { line: 1, column: 1 },
            }
        }
    }

    /// Where the key of the member at a JSON pointer starts (for "unknown field").
    pub fn key_position(&self, pointer: &str) -> Position {
        self.keys
            .get(pointer)
            .copied()
            .unwrap_or_else(|| self.position(pointer))
    }
}

/// A YAML syntax or conversion error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// Where it happened.
    pub position: Position,
    /// What happened.
    pub message: String,
}

/// The deepest nesting of sequences and mappings a document may have. Real
/// manifests nest a few levels; the loader, the tree it builds and the
/// conversion below each recurse once per level, so a hostile file nested
/// thousands deep would overflow the stack.
pub const MAX_DEPTH: usize = 64;

/// Parse one YAML document into JSON with positions.
pub fn parse(text: &str) -> Result<Located, YamlError> {
    check_depth(text)?;
    let docs = MarkedYaml::load_from_str(text).map_err(scan_error)?;
    let mut located = Located {
        value: Value::Null,
        values: HashMap::new(),
        keys: HashMap::new(),
    };
    match docs.len() {
        0 => Ok(located),
        1 => {
            located.value = convert(&docs[0], String::new(), &mut located)?;
            Ok(located)
        }
        _ => Err(YamlError {
            position: pos(&docs[1]),
            message: "more than one YAML document; a manifest is a single document".into(),
        }),
    }
}

fn position(marker: Marker) -> Position {
    Position {
        line: marker.line(),
        column: marker.col() + 1,
    }
}

fn scan_error(e: ScanError) -> YamlError {
    // The scanner's words are fixed phrases, save this one, which quotes
    // the character found; the file may be a secret, so it is not repeated.
    let message = match e.info() {
        info if info.starts_with("unexpected character") => {
            "a plain value cannot start with `%`, `@` or a backquote; quote the value".into()
        }
        info => info.to_string(),
    };
    YamlError {
        position: position(*e.marker()),
        message,
    }
}

/// Refuse documents nested deeper than [`MAX_DEPTH`], walking the parser's
/// events (which keep their own stack on the heap) before anything recurses.
fn check_depth(text: &str) -> Result<(), YamlError> {
    let mut depth = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(scan_error)?;
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(YamlError {
                        position: position(span.start),
                        message: format!(
                            "nested deeper than {MAX_DEPTH} levels of lists and mappings; \
                             a manifest needs only a few"
                        ),
                    });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn pos(node: &MarkedYaml) -> Position {
    position(node.span.start)
}

/// Escape a mapping key for a JSON pointer (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn convert(node: &MarkedYaml, pointer: String, out: &mut Located) -> Result<Value, YamlError> {
    out.values.insert(pointer.clone(), pos(node));
    let fail = |message: String| YamlError {
        position: pos(node),
        message,
    };
    Ok(match &node.data {
        YamlData::Value(scalar) => {
            scalar_to_json(scalar).ok_or_else(|| fail("number out of range".into()))?
        }
        YamlData::Representation(text, _, _) => Value::String(text.to_string()),
        YamlData::Sequence(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| convert(item, format!("{pointer}/{i}"), out))
                .collect::<Result<_, _>>()?,
        ),
        YamlData::Mapping(map) => {
            let mut obj = Map::new();
            for (k, v) in map {
                let key = match &k.data {
                    YamlData::Value(Scalar::String(s)) => s.to_string(),
                    YamlData::Value(s) => match scalar_to_json(s) {
                        Some(Value::String(s)) => s,
                        Some(other) => other.to_string(),
                        None => return Err(fail("unsupported mapping key".into())),
                    },
                    YamlData::Representation(text, _, _) => text.to_string(),
                    _ => {
                        return Err(YamlError {
                            position: pos(k),
                            message: "mapping keys must be plain scalars".into(),
                        })
                    }
                };
                let child = format!("{pointer}/{}", escape(&key));
                out.keys.insert(child.clone(), pos(k));
                let value = convert(v, child, out)?;
                obj.insert(key, value);
            }
            Value::Object(obj)
        }
        YamlData::Tagged(_, inner) => convert(inner, pointer, out)?,
        YamlData::Alias(_) => return Err(fail("YAML aliases are not supported".into())),
        YamlData::BadValue => return Err(fail("value cannot be represented".into())),
    })
}

fn scalar_to_json(s: &Scalar) -> Option<Value> {
    Some(match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Number((*i).into()),
        Scalar::FloatingPoint(f) => Value::Number(Number::from_f64(f.into_inner())?),
        Scalar::String(s) => Value::String(s.to_string()),
    })
}

/// One problem in a manifest, located.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    /// Where.
    pub position: Position,
    /// JSON-pointer style path of the field (`/signals/0/weight`), empty for
    /// the root; for an unknown field, the object holding it.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn converts_and_locates_nodes_and_keys() {
        let text = "name: demo\nsignals:\n  - name: a\n    weight: 0.5\n";
        let doc = parse(text).unwrap();
        assert_eq!(
            doc.value,
            json!({"name": "demo", "signals": [{"name": "a", "weight": 0.5}]})
        );
        assert_eq!(
            doc.position("/signals/0/weight"),
            Position {
                line: 4,
                column: 13
            }
        );
        assert_eq!(
            doc.key_position("/signals/0/weight"),
            Position { line: 4, column: 5 }
        );
        assert_eq!(doc.position("/signals/0/missing").line, 3);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        for text in [
            "- ".repeat(5000) + "x\n",
            "[".repeat(5000),
            "? ".repeat(2000),
            "a:\n".to_string() + &"{b: ".repeat(3000),
        ] {
            // The scanner has its own limit for flow collections.
            let e = parse(&text).unwrap_err();
            assert!(
                e.message.contains("nested deeper than 64")
                    || e.message.contains("recursion limit exceeded"),
                "{e:?}"
            );
        }
        let ok = "- ".repeat(MAX_DEPTH) + "x\n";
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("name: [unclosed\n").unwrap_err();
        assert!(e.position.line >= 1);
        assert!(!e.message.is_empty());
    }

    #[test]
    fn syntax_errors_quote_nothing_of_the_text() {
        let e = parse("password: @hunter2\n").unwrap_err();
        assert_eq!(
            e.position,
            Position {
                line: 1,
                column: 11
            }
        );
        assert!(e.message.contains("quote the value"), "{e:?}");
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.position.line, 2);
        assert!(e.message.contains("duplicate"));
    }
}
