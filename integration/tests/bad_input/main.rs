//! The bad-input suite (issue 18): malformed and abusive requests against the real `ferry`
//! binary, HTTP/1.1 over raw sockets, HTTP/2 from hand-written frames, Open Inference Protocol
//! bodies through REST → gRPC translation. One ferry per module, in front of an upstream that
//! records what it received. Every case asserts the answer (status, RST_STREAM or GOAWAY
//! code), whether ferry closed the connection, and what reached the upstream; each module then
//! asserts that a background client on its own connections got 200 for every request
//! throughout, and that ferry's RSS stayed under a ceiling.

mod h1;
mod h2;
mod harness;
mod oip;
mod raw_h1;
mod raw_h2;
