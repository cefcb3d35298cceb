//! ferry-proxy: everything that touches sockets — listeners, the HTTP server and upstream
//! client, routing, clusters and load balancing, the admin endpoint, reload and drain.
//! `main.rs` is a thin CLI over this library.

pub mod access_log;
pub mod admin;
pub mod app;
pub mod body;
pub mod cluster;
pub mod demo;
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
