//! ferry-filters: request-level building blocks usable on their own, like tower-http.
//!
//! Nothing here knows about listeners, sockets or the config file: each module takes its own
//! small settings type, and the proxy wires config into them.

pub mod authorization;
pub mod body_limit;
pub mod bridge;
pub mod connection;
pub mod failure;
pub mod fault;
pub mod limits;
pub mod load_report;
pub mod mirror_compare;
pub mod model_name;
pub mod prompt_prefix;
pub mod tensor_check;
pub mod trace_context;
pub mod transcode;
pub mod translate;
