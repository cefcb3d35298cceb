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

mod listener;
mod route;

use http::{Request, Response};
use tower::util::BoxCloneSyncService;

use crate::body::{BoxError, ProxyBody};

pub use self::listener::listener;
pub use self::route::{RouteParts, route};

/// A route's whole stack, boxed once at the route boundary so routes with different layers
/// share one type in the route table.
pub type RouteService = BoxCloneSyncService<Request<ProxyBody>, Response<ProxyBody>, BoxError>;

/// A listener's whole stack; it never fails (errors are rendered inside it).
pub type ListenerService = BoxCloneSyncService<Request<ProxyBody>, Response<ProxyBody>, BoxError>;
