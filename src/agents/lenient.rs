//! Field types that take what they understand and skip the rest.
//!
//! Adapters deserialize events straight into typed structs (one pass, no
//! intermediate `serde_json::Value`), which is what makes multi-megabyte
//! streams cheap. Agents' formats drift, so a field of an unexpected JSON type
//! must not make the event unreadable: these visitors turn it into `None` and
//! skip it without buffering.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A string, or `None` for any other JSON value.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct OptStr(pub Option<String>);

/// An integer, or `None` for any other JSON value.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct OptI64(pub Option<i64>);

/// Message content: a plain string, or a list of parts whose `text` fields are
/// joined with newlines (OpenHands' `[{"type": "text", "text": ...}]`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Text(pub Option<String>);

/// An object read as a `T` (whose fields should be lenient themselves), or
/// `None` for any other JSON value; read in the one pass that skips it.
pub(super) struct Object<T>(pub Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

/// Consume a map or sequence the caller has no use for.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the "anything else is None" arms shared by the visitors below.
macro_rules! ignore_others {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok(Default::default())
        })*
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}

struct OptStrVisitor;

impl<'de> Visitor<'de> for OptStrVisitor {
    type Value = OptStr;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<OptStr, E> {
        Ok(OptStr(Some(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<OptStr, E> {
        Ok(OptStr(Some(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OptStr, A::Error> {
        skip_map(map).map(|_| OptStr(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OptStr, A::Error> {
        skip_seq(seq).map(|_| OptStr(None))
    }

    ignore_others!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
}

impl<'de> Deserialize<'de> for OptStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OptStrVisitor)
    }
}

struct OptI64Visitor;

impl<'de> Visitor<'de> for OptI64Visitor {
    type Value = OptI64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<OptI64, E> {
        Ok(OptI64(Some(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<OptI64, E> {
        Ok(OptI64(i64::try_from(v).ok()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OptI64, A::Error> {
        skip_map(map).map(|_| OptI64(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OptI64, A::Error> {
        skip_seq(seq).map(|_| OptI64(None))
    }

    ignore_others!(visit_bool: bool, visit_f64: f64, visit_str: &str);
}

impl<'de> Deserialize<'de> for OptI64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OptI64Visitor)
    }
}

/// One element of a content list: its `text` when it has a string one.
#[derive(Default)]
struct Part(Option<String>);

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        let mut text = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "text" {
                text = map.next_value::<OptStr>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Part(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Part, A::Error> {
        skip_seq(seq).map(|_| Part(None))
    }

    ignore_others!(
        visit_bool: bool,
        visit_i64: i64,
        visit_u64: u64,
        visit_f64: f64,
        visit_str: &str
    );
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PartVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text(Some(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text(Some(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
        let mut texts: Vec<String> = Vec::new();
        while let Some(part) = seq.next_element::<Part>()? {
            texts.extend(part.0);
        }
        Ok(Text((!texts.is_empty()).then(|| texts.join("\n"))))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text, A::Error> {
        skip_map(map).map(|_| Text(None))
    }

    ignore_others!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct ObjectVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Object<T>, A::Error> {
        skip_seq(seq).map(|_| Object(None))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Object<T>, E> {
        Ok(Object(None))
    }

    ignore_others!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Probe {
        s: OptStr,
        n: OptI64,
        t: Text,
        after: OptStr,
    }

    fn probe(json: &str) -> Probe {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn well_typed_fields_are_read() {
        let p = probe(r#"{"s": "x", "n": -3, "t": [{"type":"text","text":"a"},{"text":"b"}]}"#);
        assert_eq!(p.s.0.as_deref(), Some("x"));
        assert_eq!(p.n.0, Some(-3));
        assert_eq!(p.t.0.as_deref(), Some("a\nb"));
        assert_eq!(probe(r#"{"t": "plain"}"#).t.0.as_deref(), Some("plain"));
    }

    #[test]
    fn ill_typed_fields_become_none_and_the_rest_still_parses() {
        let p = probe(
            r#"{"s": {"deep": [1, {"x": null}]}, "n": "7", "t": [1, {"text": 2}, {"image": "x"}], "after": "ok"}"#,
        );
        assert_eq!(p.s.0, None);
        assert_eq!(p.n.0, None);
        assert_eq!(p.t.0, None);
        assert_eq!(p.after.0.as_deref(), Some("ok"));
        let p = probe(r#"{"s": null, "n": 1.5, "t": {"text": "x"}, "after": [true]}"#);
        assert_eq!((p.s.0, p.n.0, p.t.0, p.after.0), (None, None, None, None));
    }
}
