//! The proxy's whole request path, in memory: each test builds a routing table from a config,
//! serves a listener's stack over `tokio::io::duplex` and answers from an in-memory upstream.
//! The real-process tests in `integration/` stay the users' view; these pin the stack's
//! behaviour (routing, retries, timeouts, translation, error answers, reload) without sockets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

mod support;

mod authorization;
mod errors;
mod limits;
mod reload;
mod retries;
mod routing;
mod tracing;
mod translation;
