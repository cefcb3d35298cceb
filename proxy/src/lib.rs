//! ferry-proxy: everything that touches sockets — listeners, the HTTP server and upstream
//! client, the per-listener and per-route stacks, routing, clusters and load balancing, the
//! admin endpoint, reload and drain. The `ferry` binary is a thin CLI over this library.

pub mod access_log;
pub mod admin;
pub mod app;
pub mod body;
pub mod cluster;
pub mod descriptors;
pub mod direct;
pub mod failure;
pub mod filter_settings;
pub mod filter_settings_torchserve;
pub mod forward;
pub mod h2_settings;
pub mod headers;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod mirror;
pub mod recent;
mod reload;
pub mod request_body;
pub mod request_id;
pub mod request_meta;
pub mod rewrite;
pub mod route;
pub mod router;
pub mod routing;
pub mod shared;
pub mod stack;
pub mod state;
pub mod stats;
pub mod table;
pub mod tap;
pub mod tls;
pub mod traces;
pub mod upstream;
