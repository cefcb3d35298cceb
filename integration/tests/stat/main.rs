//! `ferry stat` and the admin `/stats` and `/recent` endpoints through the real `ferry`
//! binary: after known HTTP and gRPC answers from real upstreams, the request counts, success
//! rates and groupings are the ones sent; bad queries and windows are refused by name; the
//! recent ring holds the failed and the slowest answers with no access-log sink configured;
//! `ferry top` shows the routes in a real terminal (tmux) and quits on `q`.
//! Everything on 127.0.0.1 with ports from the kernel.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

mod recent;
mod support;
mod top;
mod traffic;
