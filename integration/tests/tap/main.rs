//! Live taps through the real `ferry` binary: the `ferry tap` CLI (a real process) receives
//! the access records of requests sent while it listens, filtered by route, model, status and
//! authority, and nothing its filter excludes; the admin `/tap` refuses an unknown filter with
//! a 400 naming it and a tap over the limit with a 503, frees a slot when its client goes away;
//! and a tap that never reads neither fails nor stalls traffic: it loses records and says how
//! many. Everything on 127.0.0.1 with ports from the kernel.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

mod cli;
mod endpoint;
mod slow_reader;
mod support;
