//! The access log through the real `ferry` binary: one line per request on every listener,
//! written to files by `ferry run` with the documented fields, for HTTP/1.1, h2c, gRPC and a
//! translated route; `sample` and `slower_than` over 1 000 requests; errors always written;
//! silenced routes; a rotated file reopened (rename, SIGUSR1); a sink that fails never fails a
//! request; `ferry validate` refusing unwritable sinks; sinks added, refused and removed by
//! reloads; and two sidecars in a chain whose lines
//! join on `request_id` and `trace_id`. Everything on 127.0.0.1 with ports from the kernel.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

mod cancel;
mod chain;
mod fields;
mod reload;
mod rotation;
mod sampling;
mod support;
mod tokens;
