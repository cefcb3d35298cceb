//! ferry-config: the route config file.
//!
//! Text in, [`Config`] (validated IR) or every error with `file:line:col` out. Pure: no sockets,
//! no async runtime.
//!
//! - [`parse`] / [`load`]: a file to IR, or [`ConfigErrors`] listing every problem as
//!   `file:line:col: field.path: problem (expected …)`.
//! - [`default_config`] / [`DEFAULT_YAML`]: what `ferry run` uses without a file.
//! - [`one_route_config`]: `ferry run --listen A --upstream B`.
//! - [`json_schema`]: the file's JSON Schema (`ferry schema`).

mod builtin;
pub mod defaults;
mod effective;
mod error;
pub mod ir;
mod parse;
pub mod raw;
mod validate;
mod yaml;

pub use builtin::{DEFAULT_YAML, default_config, one_route_config, one_route_translate_config};
pub use error::{ConfigError, ConfigErrors};
pub use ir::*;
pub use parse::{LoadOptions, load, load_with, parse, parse_with};
pub use validate::{format_duration, parse_duration};

/// The JSON Schema of the config file, derived from the [`raw`] types.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(raw::RawConfig).to_value()
}
