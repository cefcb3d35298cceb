//! Scalar fields kept as text until validation, so one bad value does not hide the others.
//!
//! YAML's plain scalars are typed by their look (`2` is an integer, `2s` a string); these types
//! accept any scalar and keep its text, and validation then reports `invalid duration "5 sec"`
//! rather than serde's first-error-wins type mismatch.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// Accepts any scalar and keeps its text.
pub(crate) struct TextVisitor(pub(crate) &'static str);

impl Visitor<'_> for TextVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
}

macro_rules! text_type {
    ($(#[$meta:meta])* $name:ident, $expecting:literal, $schema:tt) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub String);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(TextVisitor($expecting)).map($name)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                // Plain text needs no named definition; the others carry patterns worth sharing.
                stringify!($name) == "Text"
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }

        impl $name {
            /// The text as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
    };
}

text_type!(
    /// Any text (a name, a header value, a pattern).
    Text,
    "a string",
    { "type": "string" }
);

text_type!(
    /// A duration: an integer or decimal number followed by `ms`, `s`, `m` or `h`.
    DurationText,
    "a duration such as \"500ms\", \"2s\" or \"5m\"",
    {
        "type": "string",
        "description": "A duration: a number followed by ms, s, m or h.",
        "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$",
        "examples": ["500ms", "2s", "1.5s", "5m", "1h", "0s"]
    }
);

text_type!(
    /// A percentage such as `20%`.
    PercentText,
    "a percentage such as \"20%\"",
    {
        "type": "string",
        "description": "A percentage between 0% and 100%.",
        "pattern": "^[0-9]+(\\.[0-9]+)?%$",
        "examples": ["20%", "12.5%"]
    }
);

text_type!(
    /// A socket address `ip:port` (IPv6 in brackets).
    SocketAddrText,
    "a socket address such as \"127.0.0.1:8080\"",
    {
        "type": "string",
        "description": "A socket address ip:port; IPv6 in brackets.",
        "examples": ["127.0.0.1:8080", "0.0.0.0:15006", "[::1]:8080"]
    }
);

text_type!(
    /// A DNS name and port, `host:port`.
    HostPortText,
    "a host:port such as \"svc.ns.svc.cluster.local:8000\"",
    {
        "type": "string",
        "description": "A DNS name (or IP literal) and port.",
        "examples": ["vllm.models.svc.cluster.local:8000"]
    }
);

text_type!(
    /// An HTTP header name (case-insensitive; stored lower-case).
    HeaderNameText,
    "an HTTP header name",
    {
        "type": "string",
        "description": "An HTTP header name; matched case-insensitively.",
        "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
    }
);

text_type!(
    /// A ratio: a number from 0 to 1 (YAML keeps `0.01` as text; validation parses it).
    RatioText,
    "a number from 0 to 1 such as 0.01",
    {
        "type": "number",
        "description": "A number from 0 to 1.",
        "minimum": 0,
        "maximum": 1,
        "examples": [0.01, 0.5, 1]
    }
);

text_type!(
    /// A positive number such as `1.0` (YAML keeps decimals as text; validation parses it).
    WeightText,
    "a number > 0 such as 1.0",
    {
        "type": "number",
        "description": "A finite number > 0.",
        "exclusiveMinimum": 0,
        "examples": [1.0, 0.5, 4]
    }
);

text_type!(
    /// A percentage as a plain number from 0 to 100, such as `10` or `0.5` (fault injection).
    PercentNumberText,
    "a number from 0 to 100 such as 10",
    {
        "type": "number",
        "description": "A percentage from 0 to 100.",
        "minimum": 0,
        "maximum": 100,
        "examples": [10, 1, 0.5]
    }
);

text_type!(
    /// `lb.bounded_load`: 0 (unbounded) or a factor >= 1 such as `1.25`.
    LoadFactorText,
    "0 or a number >= 1 such as 1.25",
    {
        "description": "0 (no bound) or a factor >= 1 on the mean in-flight requests.",
        "anyOf": [
            { "type": "number", "const": 0 },
            { "type": "number", "minimum": 1 }
        ],
        "examples": [1.25, 2, 0]
    }
);

text_type!(
    /// A part of a hash key: `header:NAME`, `cookie:NAME`, `model`, `client`, `prompt_prefix:N`.
    HashKeyPartText,
    "a key part such as header:x-session-id or prompt_prefix:512",
    {
        "type": "string",
        "description": "header:NAME, cookie:NAME, model, client or prompt_prefix:N (N >= 1 bytes).",
        "pattern": "^(model|client|header:[!#$%&'*+.^_`|~0-9A-Za-z-]+|cookie:[!#$%&'*+.^_`|~0-9A-Za-z-]+|prompt_prefix:[0-9]+)$",
        "examples": ["header:x-session-id", "cookie:session", "model", "client", "prompt_prefix:512"]
    }
);

text_type!(
    /// A number >= 0 such as `1e-4` (a comparison tolerance).
    NonNegativeText,
    "a number >= 0 such as 1e-4",
    {
        "type": "number",
        "description": "A finite number >= 0.",
        "minimum": 0,
        "examples": [0.0001, 0.001, 0]
    }
);

text_type!(
    /// A size in bytes: an integer, or a number with `B`, `KiB`, `MiB` or `GiB`.
    ByteSizeText,
    "a size such as 16MiB or 65536",
    {
        "anyOf": [
            { "type": "integer", "minimum": 0 },
            {
                "type": "string",
                "description": "A size: an integer number of bytes, optionally followed by B, KiB, MiB or GiB.",
                "pattern": "^[0-9]+(B|KiB|MiB|GiB)?$"
            }
        ],
        "examples": ["16MiB", "64KiB", 65536]
    }
);
