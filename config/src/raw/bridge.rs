//! Raw types of protocol bridging on a route's `translate`: the caller protocols (`from`, one
//! name or a list) and the tensor `signature` for protocols that carry no types or shapes.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::value::StrDeserializer;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::route::WireSpec;
use super::tensors::TensorSpec;

/// What the callers speak: one protocol, or a list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireList(pub Vec<WireSpec>);

/// The tensors of a bridged model, for protocols that carry no datatypes or shapes
/// (`kserve-v1`), or to check requests against (`tfserving-grpc`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Signature")]
pub struct SignatureSpec {
    /// The model's inputs, in the order a V1 request lists them.
    #[serde(default)]
    pub inputs: Vec<TensorSpec>,
    /// The model's outputs: their datatypes and shapes type the V1 answer for OIP callers.
    #[serde(default)]
    pub outputs: Vec<TensorSpec>,
}

// === impl WireList ===

impl WireList {
    /// The first protocol (a validated list is never empty).
    pub fn first(&self) -> Option<WireSpec> {
        self.0.first().copied()
    }
}

impl<'de> Deserialize<'de> for WireList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WireList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a protocol name or a list of them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                WireSpec::deserialize(StrDeserializer::<E>::new(v)).map(|w| WireList(vec![w]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(w) = seq.next_element::<WireSpec>()? {
                    out.push(w);
                }
                Ok(WireList(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for WireList {
    fn schema_name() -> Cow<'static, str> {
        "WireList".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let one = generator.subschema_for::<WireSpec>();
        json_schema!({
            "description": "A protocol name, or a list of them (callers may speak any).",
            "anyOf": [one, { "type": "array", "items": one, "minItems": 1 }]
        })
    }
}
