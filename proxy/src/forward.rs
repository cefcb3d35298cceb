//! Forwarding, the innermost part of a route's stack: the weighted choice of a cluster
//! ([`Split`]), then per cluster the route's overall [`timeout`], [`retry`] within the route's
//! budget, the [`balance`]r that picks an endpoint and keeps its health, and the endpoint
//! [`client`] that sends on the endpoint's pooled connections.

pub mod balance;
pub mod client;
pub mod hash_key;
mod load_report;
pub mod retry;
pub mod timeout;
pub mod trace;

use std::task::{Context, Poll};

use http::{Request, Response};
use rand::Rng;

use crate::body::{BoxError, ProxyBody};

pub use self::balance::{Balance, BalanceLayer};
pub use self::client::{Dispatch, EndpointClient};
pub use self::hash_key::HashKeyLayer;
pub use self::retry::{Retry, RetryLayer};
pub use self::timeout::{Timeout, TimeoutLayer};

/// Weighted targets: each request goes to one, chosen at random by weight.
#[derive(Debug, Clone)]
pub struct Split<S> {
    /// (cumulative weight, target) in config order.
    targets: Vec<(u64, S)>,
    total: u64,
}

// === impl Split ===

impl<S> Split<S> {
    /// Targets with their weights (at least one).
    pub fn new(weighted: impl IntoIterator<Item = (u32, S)>) -> Self {
        let mut total = 0u64;
        let targets = weighted
            .into_iter()
            .map(|(w, s)| {
                total += u64::from(w);
                (total, s)
            })
            .collect();
        Split { targets, total }
    }

    fn pick(&mut self) -> Option<&mut S> {
        let x = match self.targets.len() {
            0 => return None,
            1 => 0,
            _ => rand::rng().random_range(0..self.total.max(1)),
        };
        self.targets
            .iter_mut()
            .find(|(cum, _)| x < *cum)
            .map(|(_, s)| s)
    }
}

impl<S> tower::Service<Request<ProxyBody>> for Split<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = futures_util::future::Either<
        S::Future,
        std::future::Ready<Result<Response<ProxyBody>, BoxError>>,
    >;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Every target is always ready (they shed load instead of applying back-pressure).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        match self.pick() {
            Some(target) => futures_util::future::Either::Left(target.call(req)),
            None => futures_util::future::Either::Right(std::future::ready(Err(
                crate::failure::Failure::BadGateway("route has no cluster".into()).into(),
            ))),
        }
    }
}
