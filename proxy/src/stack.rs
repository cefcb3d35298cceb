//! The request path as data: each listener's stack and each route's stack, built once per
//! config load by [`crate::table`] from tower layers, and read in request order in one file
//! per level:
//!
//! - [`listener`]: from the connection inward to routing (request id, metadata, error
//!   rendering, body framing and limit, routing);
//! - [`route`]: from routing to the upstream (the route's edits, the filters the route names,
//!   the weighted split, timeout, retry, balancer, endpoint client).
//!
//! A route without a filter has no layer for it. Layers fail with typed errors; the one
//! renderer in the listener stack answers them. docs/architecture.md has the picture.

mod filters;
mod listener;
mod route;

use std::sync::Arc;

use crate::access_log::AccessLog;
use crate::limits::LimitStates;
use crate::metrics::Metrics;
use crate::request_body::RequestBody;
use crate::request_id::RequestId;
use crate::request_meta::RequestMeta;
use crate::routing::Routing;
use crate::state::RouteStates;
use crate::tap::Taps;
use crate::tls::{IdentityStore, TlsFiles};
use crate::traces::RouteTracing;
use crate::upstream::Transport;
use ferry_filters::failure::RenderErrors;

pub use self::listener::listener;
pub use self::route::{RouteParts, route, route_trace_layer};

pub use crate::route::RouteService;

/// A listener's whole stack; it never fails (errors are rendered inside it). A concrete type,
/// not a boxed one: it is cloned per request (a few `Arc` increments) and its futures are
/// written out, so the layers every request crosses cost no allocation of their own.
pub type ListenerService = RequestId<RequestMeta<RenderErrors<RequestBody<Routing>>>>;

/// What a table is built with besides the config: the process-wide pieces that outlive it.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Metrics registry.
    pub metrics: &'a Arc<Metrics>,
    /// Route states kept across reloads.
    pub states: &'a RouteStates,
    /// How clusters reach their endpoints.
    pub transport: &'a Transport,
    /// The config's access-log sinks (and `ferry demo`'s channel); `None` = nothing recorded.
    pub access_log: Option<&'a Arc<AccessLog>>,
    /// The workload identity listeners and mesh clusters present (swapped on rotation).
    pub identity: &'a Arc<IdentityStore>,
    /// The TLS files this config names (server-mode clusters' CA bundles).
    pub tls: &'a TlsFiles,
    /// Rate-limit and concurrency state kept across reloads.
    pub limits: &'a LimitStates,
    /// How routes trace, when the config has a `tracing` block.
    pub tracing: Option<&'a RouteTracing>,
    /// The process's live taps (admin `/tap`), which outlive every table.
    pub taps: &'a Arc<Taps>,
}
