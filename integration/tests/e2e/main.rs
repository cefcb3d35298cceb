//! ferry's end-to-end tests: the real `ferry` binary (built once per run) between real clients
//! and real upstreams, everything on 127.0.0.1 with ports from the kernel. Modules are grouped
//! by topic; `upstreams` checks the test upstreams on their own, without ferry.

mod admin;
mod balancing;
mod chart;
mod drain;
mod envoy_mtls;
mod failures;
mod floods;
mod grpc;
mod idle;
mod load_report;
mod model_routing;
mod peers;
mod protocols;
mod reload;
mod security_defaults;
mod slow_clients;
mod smuggling;
mod streaming;
mod support;
mod tensor_check;
mod upgrade;
mod upstreams;
