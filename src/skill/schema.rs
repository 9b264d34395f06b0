//! A bundled JSON Schema checked against a YAML document, each violation
//! placed at its line and column: the skill manifest's and the experiment
//! file's checks share it.

use super::yaml::{Issue, Located};
use serde_json::Value;
use std::sync::OnceLock;

/// A JSON Schema compiled into the binary, parsed and compiled on first use.
pub struct BundledSchema {
    /// Its path in the source tree, named in messages.
    name: &'static str,
    text: &'static str,
    value: OnceLock<Value>,
    validator: OnceLock<jsonschema::Validator>,
}

impl BundledSchema {
    /// The schema `text`, known to users as `name`.
    pub const fn new(name: &'static str, text: &'static str) -> BundledSchema {
        BundledSchema {
            name,
            text,
            value: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    fn value(&self) -> &Value {
        self.value
            .get_or_init(|| serde_json::from_str(self.text).expect("bundled schema is valid JSON"))
    }

    fn validator(&self) -> &jsonschema::Validator {
        self.validator.get_or_init(|| {
            jsonschema::validator_for(self.value()).expect("bundled schema is a valid JSON Schema")
        })
    }

    /// Every violation in `doc`, in document order; `describe` words each
    /// one (see [`describe`] for the general case).
    pub fn issues(
        &self,
        doc: &Located,
        describe: fn(&jsonschema::ValidationError, &str) -> String,
    ) -> Vec<Issue> {
        let mut issues = Vec::new();
        for error in self.validator().iter_errors(&doc.value) {
            let pointer = error.instance_path().as_str().to_string();
            match error.kind() {
                // The unknown key is placed, and quoted only when it is a
                // near miss of an allowed field: the file may be a symlink
                // to some secret file whose keys are the secret.
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    let allowed = self.allowed_fields(&pointer);
                    for name in unexpected {
                        let at =
                            format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                        let near = allowed
                            .iter()
                            .find(|f| strsim::levenshtein(f, name) <= 2 && name.len() <= 40);
                        let unknown = match near {
                            Some(f) => format!("unknown field `{name}` (did you mean `{f}`?)"),
                            None => "unknown field".to_string(),
                        };
                        issues.push(Issue {
                            position: doc.key_position(&at),
                            field: pointer.clone(),
                            message: format!(
                                "{unknown}; the fields allowed here are {} (see {})",
                                allowed.join(", "),
                                self.name
                            ),
                        });
                    }
                }
                _ => issues.push(Issue {
                    position: doc.position(&pointer),
                    message: describe(&error, &pointer),
                    field: pointer,
                }),
            }
        }
        issues.sort_by_key(|i| (i.position.line, i.position.column));
        issues
    }

    /// The fields the schema allows in the object at `pointer`, in the
    /// schema's order.
    fn allowed_fields(&self, pointer: &str) -> Vec<&str> {
        let root = self.value();
        fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
            match node.get("$ref").and_then(Value::as_str) {
                Some(target) => target
                    .strip_prefix('#')
                    .and_then(|p| root.pointer(p))
                    .unwrap_or(&Value::Null),
                None => node,
            }
        }
        let mut node = root;
        for part in pointer.split('/').skip(1) {
            node = resolve(root, node);
            node = match (part.parse::<usize>(), node.get("items")) {
                (Ok(_), Some(items)) => items,
                _ => match node.get("properties") {
                    Some(props) => &props[part.replace("~1", "/").replace("~0", "~")],
                    // A map whose values share one schema.
                    None => node.get("additionalProperties").unwrap_or(&Value::Null),
                },
            };
        }
        let mut node = resolve(root, node);
        if let Some(props) = node.get("properties") {
            node = props;
        } else {
            return Vec::new();
        }
        node.as_object()
            .map(|fields| fields.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// A schema error in general words: a missing field, a value not among the
/// allowed ones, else the validator's message without the value found.
pub fn describe(error: &jsonschema::ValidationError) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::Required { property } => format!("missing required field {property}"),
        K::Enum { options } => format!("must be one of {options}"),
        _ => error.masked().to_string(),
    }
}
