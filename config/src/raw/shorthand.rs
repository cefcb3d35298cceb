//! Fields with a short and a long form (`to: triton` vs `to: [{cluster, weight}]`).
//!
//! Each is deserialized with a hand-written visitor rather than `#[serde(untagged)]`: untagged
//! enums buffer the input and lose both the field path and a useful message, while a visitor
//! keeps nested errors (an unknown field inside `to[1]`) pointing at the right place.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::scalars::{HeaderNameText, Text, TextVisitor};

/// A string condition: a plain string means `exact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StringMatchSpec {
    /// The short form: equal to this text.
    Exact(String),
    /// The long form.
    Spec(MatchSpec),
}

/// `{exact|prefix|regex: ...}`: exactly one must be given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MatchSpec")]
pub struct MatchSpec {
    /// Equal to this text.
    pub exact: Option<Text>,
    /// Starts with this text.
    pub prefix: Option<Text>,
    /// Matches this regular expression (anchored: the whole value must match).
    pub regex: Option<Text>,
}

impl<'de> Deserialize<'de> for StringMatchSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringMatchSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or {exact|prefix|regex: ...}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StringMatchSpec::Exact(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StringMatchSpec::Exact(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StringMatchSpec::Exact(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StringMatchSpec::Exact(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                MatchSpec::deserialize(MapAccessDeserializer::new(map)).map(StringMatchSpec::Spec)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for StringMatchSpec {
    fn schema_name() -> Cow<'static, str> {
        "StringMatch".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let spec = generator.subschema_for::<MatchSpec>();
        json_schema!({
            "description": "A plain string (exact match) or {exact|prefix|regex: ...}.",
            "anyOf": [{ "type": "string" }, spec]
        })
    }
}

/// A route's destination: one cluster name, or a weighted split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum To {
    /// All traffic to this cluster.
    Cluster(String),
    /// Split by weight.
    Split(Vec<WeightedTarget>),
}

/// One target of a weighted split.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedTarget {
    /// Cluster name.
    pub cluster: Text,
    /// Relative weight, > 0. Default 1.
    pub weight: Option<i64>,
}

impl<'de> Deserialize<'de> for To {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = To;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a cluster name or a list of {cluster, weight}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(To::Cluster(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element::<WeightedTarget>()? {
                    out.push(t);
                }
                Ok(To::Split(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for To {
    fn schema_name() -> Cow<'static, str> {
        "To".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let target = generator.subschema_for::<WeightedTarget>();
        json_schema!({
            "description": "A cluster name, or a list of {cluster, weight} to split traffic.",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": target, "minItems": 1 }
            ]
        })
    }
}

/// One method or a list of methods.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Methods(pub Vec<String>);

impl<'de> Deserialize<'de> for Methods {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Methods;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a method or a list of methods")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Methods(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element::<Text>()? {
                    out.push(t.0);
                }
                Ok(Methods(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Methods {
    fn schema_name() -> Cow<'static, str> {
        "Methods".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An HTTP method or a list of methods (case-insensitive).",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" } }
            ],
            "examples": ["POST", ["GET", "POST"]]
        })
    }
}

/// Header name → value pairs, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderValues(pub Vec<(HeaderNameText, String)>);

impl<'de> Deserialize<'de> for HeaderValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HeaderValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of header name to value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let value = map.next_value::<HeaderValue>()?;
                    out.push((HeaderNameText(name), value.0));
                }
                Ok(HeaderValues(out))
            }
        }
        d.deserialize_map(V)
    }
}

struct HeaderValue(String);

impl<'de> Deserialize<'de> for HeaderValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor("a header value"))
            .map(HeaderValue)
    }
}

impl JsonSchema for HeaderValues {
    fn schema_name() -> Cow<'static, str> {
        "HeaderValues".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Header name to value.",
            "type": "object",
            "additionalProperties": { "type": "string" },
            "examples": [{ "x-ferry-route": "oip-infer" }]
        })
    }
}

/// One file path or a list of them (`trust: ca.crt` or `trust: [old.crt, new.crt]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paths {
    /// The short form: a single path.
    One(Text),
    /// The long form, in file order.
    Many(Vec<Text>),
}

impl Paths {
    /// Each path with its field path below `field` (`field` itself for the short form,
    /// `field[i]` for the long one), so errors point at the right text.
    pub fn located<'a>(&'a self, field: &'a str) -> impl Iterator<Item = (String, &'a Text)> {
        let list = match self {
            Paths::One(text) => std::slice::from_ref(text),
            Paths::Many(list) => list.as_slice(),
        };
        let single = matches!(self, Paths::One(_));
        list.iter().enumerate().map(move |(i, text)| {
            let at = if single {
                field.to_owned()
            } else {
                format!("{field}[{i}]")
            };
            (at, text)
        })
    }

    /// True for an empty list.
    pub fn is_empty(&self) -> bool {
        matches!(self, Paths::Many(list) if list.is_empty())
    }
}

impl<'de> Deserialize<'de> for Paths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Paths;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a file path or a list of file paths")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Paths::One(Text(v.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element::<Text>()? {
                    out.push(t);
                }
                Ok(Paths::Many(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Paths {
    fn schema_name() -> Cow<'static, str> {
        "Paths".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A file path or a list of file paths, relative to the config file's directory.",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" } }
            ],
            "examples": ["/var/run/ferry/ca.crt", ["old-ca.crt", "new-ca.crt"]]
        })
    }
}
