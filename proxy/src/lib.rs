//! ferry-proxy: everything that touches sockets — listeners, the HTTP server and upstream
//! client, routing, clusters and load balancing, the admin endpoint, reload and drain. Only
//! the data plane lives here: the `ferry` binary (`cli/`) is a thin CLI over this library, and
//! `ferry demo` (`demo/`) drives it through the same public API.

pub mod access_log;
pub mod admin;
pub mod app;
pub mod body;
pub mod cluster;
pub mod descriptors;
pub mod failure;
pub mod forward;
pub mod headers;
pub mod listener;
pub mod metrics;
mod reload;
pub mod router;
pub mod state;
pub mod table;
pub mod upstream;
