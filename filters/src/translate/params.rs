//! REST `parameters` objects: string keys to bare bool / integer / float / string values, mapped
//! to `InferParameter` (integers beyond i64 to `uint64_param`, as Triton does).

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Visitor};

use super::pb::{InferParameter, infer_parameter::ParameterChoice};

/// A `parameters` object: string keys to bool / integer / float / string values.
pub(crate) struct Params(pub(crate) HashMap<String, InferParameter>);

impl<'de> de::Deserialize<'de> for Params {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: Option<HashMap<String, Param>> = de::Deserialize::deserialize(d)?;
        Ok(Params(
            raw.unwrap_or_default()
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        InferParameter {
                            parameter_choice: Some(v.0),
                        },
                    )
                })
                .collect(),
        ))
    }
}

struct Param(ParameterChoice);

impl<'de> de::Deserialize<'de> for Param {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ParamVisitor)
    }
}

struct ParamVisitor;

impl Visitor<'_> for ParamVisitor {
    type Value = Param;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a parameter value: bool, number or string")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Param, E> {
        Ok(Param(ParameterChoice::BoolParam(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Param, E> {
        Ok(Param(ParameterChoice::Int64Param(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Param, E> {
        Ok(Param(match i64::try_from(v) {
            Ok(v) => ParameterChoice::Int64Param(v),
            Err(_) => ParameterChoice::Uint64Param(v),
        }))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Param, E> {
        Ok(Param(ParameterChoice::DoubleParam(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Param, E> {
        Ok(Param(ParameterChoice::StringParam(v.to_owned())))
    }
}
