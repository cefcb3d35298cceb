//! ferry's mutual-TLS tests: real `ferry` processes as client and server sidecars with
//! throwaway certificates (rcgen, one CA per test), real upstreams behind them, and third-party
//! TLS peers (curl, openssl, Python grpcio) and a rustls client in front. Everything on
//! 127.0.0.1 with ports from the kernel.

mod access_log;
mod authz;
mod grpcio;
mod hop;
mod modes;
mod refusals;
mod regressions;
mod reload;
mod rotation;
mod support;
mod validate;
