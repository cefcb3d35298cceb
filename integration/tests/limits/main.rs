//! ferry's rate limits and concurrency limits end to end: the real `ferry` binary between real
//! clients (hyper, tonic, Python grpcio) and real upstreams, on 127.0.0.1 with kernel ports.
//! Local limits only: `scope: global` and token budgets have tests of their own.
//!
//! Each module is one topic: `rate` (bursts, refill, per-key isolation, overrides, shadow
//! mode), `concurrency` (the in-flight cap seen from the upstream, the queue, streams holding
//! their slot, per-model slots), `grpc` (what gRPC callers see), `reload` (limit state across
//! reloads), `eviction` (a caller rotating keys cannot grow ferry without bound) and
//! `autoscaling` (the chart's KEDA ScaledObject and the gauges it queries).

mod autoscaling;
mod concurrency;
mod eviction;
mod grpc;
mod rate;
mod reload;
mod support;
