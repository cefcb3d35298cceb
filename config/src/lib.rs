//! ferry-config: the route config file.
//!
//! Text in, [`Config`] (validated IR) or every error with `file:line:col` out. Pure: no sockets,
//! no async runtime.

pub mod ir;

pub use ir::*;
