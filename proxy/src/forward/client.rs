//! The endpoint client, innermost: sends one attempt on the chosen endpoint's pooled
//! connections (or to the cluster's in-memory upstream in tests).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::upstream::MemoryUpstream;

use crate::body::ProxyBody;
use crate::cluster::{Cluster, Endpoint};
use crate::upstream::{SendError, Transport, Wire};

/// One attempt: the request and where it goes.
#[derive(Debug)]
pub struct Dispatch {
    /// The endpoint the balancer chose.
    pub endpoint: Arc<Endpoint>,
    /// The wire protocol for this request.
    pub wire: Wire,
    /// The request.
    pub request: Request<ProxyBody>,
}

/// The future of one attempt.
pub type DispatchFuture =
    Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, SendError>> + Send>>;

/// Sends attempts to one cluster's endpoints.
#[derive(Debug, Clone)]
pub struct EndpointClient {
    cluster: Arc<Cluster>,
}

impl EndpointClient {
    /// A client for `cluster`'s endpoints.
    pub fn new(cluster: Arc<Cluster>) -> Self {
        EndpointClient { cluster }
    }
}

impl tower::Service<Dispatch> for EndpointClient {
    type Response = Response<ProxyBody>;
    type Error = SendError;
    type Future = DispatchFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, d: Dispatch) -> Self::Future {
        let cluster = self.cluster.clone();
        Box::pin(async move {
            match &cluster.transport {
                Transport::Network => {
                    let resp = cluster
                        .client
                        .send(d.request, &d.endpoint.conns, d.wire)
                        .await?;
                    Ok(resp.map(|b| b.map_err(Into::into).boxed_unsync()))
                }
                Transport::Memory(upstream) => {
                    memory_call(upstream.clone(), d.endpoint.addr, d.request).await
                }
            }
        })
    }
}

/// Named and boxed outside the caller's `async` block (see [`crate::body::BoxFuture`]).
fn memory_call(
    upstream: MemoryUpstream,
    addr: std::net::SocketAddr,
    req: Request<ProxyBody>,
) -> DispatchFuture {
    Box::pin(upstream.oneshot((addr, req)))
}
