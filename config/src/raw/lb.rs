//! `clusters[].lb`: a policy name, or `{policy, load_report}` to balance on the endpoints' own
//! load reports (ORCA), or `{policy: hash, key, bounded_load, fallback}` for consistent hashing. Deserialized with a visitor, as the other short/long forms
//! (`shorthand`), so an error inside the long form keeps its field path.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::cluster::RawLb;
use super::scalars::{HashKeyPartText, LoadFactorText, Text, WeightText};

/// `lb` in either form.
#[derive(Debug, Clone)]
pub enum LbSpec {
    /// The short form: a policy name.
    Policy(RawLb),
    /// The long form.
    Spec(LbObjectSpec),
}

/// `lb` as an object.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LbObject")]
pub struct LbObjectSpec {
    /// Load-balancing policy. Default `p2c-ewma`.
    pub policy: Option<RawLb>,
    /// Fold a metric from each endpoint's load reports into the pick (`p2c-ewma` only);
    /// omitted = latency and in-flight requests alone.
    pub load_report: Option<LoadReportLbSpec>,
    /// `hash` only (required there): what the hash key is made of, in order: `header:NAME`,
    /// `cookie:NAME`, `model`, `client` (SPIFFE ID over mutual TLS, else the IP),
    /// `prompt_prefix:N` (the first N bytes of an OpenAI-style prompt or `messages` text).
    pub key: Option<Vec<HashKeyPartText>>,
    /// `hash` only: no endpoint takes a request while it has more than `bounded_load` × the
    /// mean in-flight requests (the request counted); it goes to the next endpoint on the
    /// ring. `0` = no bound. Default `1.25`.
    pub bounded_load: Option<LoadFactorText>,
    /// `hash` only: the policy for requests with no key part present (`p2c-ewma` or
    /// `round-robin`). Default `p2c-ewma`.
    pub fallback: Option<RawLb>,
}

/// Which load-report metric the balancer reads, and how much it counts.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LoadReportLb")]
pub struct LoadReportLbSpec {
    /// `cpu_utilization`, `mem_utilization`, `application_utilization`, `rps_fractional`,
    /// `eps`, or `named_metrics.<name>`, `utilization.<name>`, `request_cost.<name>` (e.g.
    /// `named_metrics.kv_cache_usage_perc` from vLLM, `named_metrics.ferry_inflight` from an
    /// inbound ferry).
    pub metric: Text,
    /// Cost multiplier is `1 + weight × metric`; > 0. Default 1.
    pub weight: Option<WeightText>,
}

// === impl LbSpec ===

impl LbSpec {
    /// The policy, whichever form was written.
    pub fn policy(&self) -> Option<RawLb> {
        match self {
            LbSpec::Policy(p) => Some(*p),
            LbSpec::Spec(s) => s.policy,
        }
    }
}

impl<'de> Deserialize<'de> for LbSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LbSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a policy name (p2c-ewma, round-robin) or {policy, load_report} or {policy: hash, key}",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                // The enum's own error ("unknown variant ..., expected one of ...").
                RawLb::deserialize(StrDeserializer::<E>::new(v)).map(LbSpec::Policy)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                LbObjectSpec::deserialize(MapAccessDeserializer::new(map)).map(LbSpec::Spec)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for LbSpec {
    fn schema_name() -> Cow<'static, str> {
        "LbSpec".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let name = generator.subschema_for::<RawLb>();
        let object = generator.subschema_for::<LbObjectSpec>();
        json_schema!({
            "description": "A policy name, or {policy, load_report} to balance on the endpoints' load reports, or {policy: hash, key, bounded_load, fallback} for consistent hashing.",
            "anyOf": [name, object]
        })
    }
}
