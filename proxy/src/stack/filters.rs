//! The route's filters as one layer: the ones the route names, in order, over the rest of the
//! route. A route with none gets its inner service as it is (one enum match per request, no
//! allocation); each filter the route does not name is simply not there.

use std::task::{Context, Poll};

use futures_util::future::Either;
use http::{Request, Response};
use tower::Layer;

use crate::body::{BoxError, BoxFuture, ProxyBody, StackService};
use crate::route::{RouteService, ShareableService};

type Wrap = Box<dyn Fn(RouteService) -> RouteService + Send + Sync>;

/// The filters a route names, outermost first.
#[derive(Default)]
pub(super) struct Filters {
    wraps: Vec<Wrap>,
}

/// The route's inner service, with its filters (boxed once each) or without any.
#[derive(Debug, Clone)]
pub(super) enum Filtered<S> {
    /// No filters: the inner service itself.
    Bare(S),
    /// The filters over the inner service.
    Wrapped(RouteService),
}

impl Filters {
    /// Adds `layer` (if the route has it) inside the filters added before.
    pub(super) fn then<L>(mut self, layer: Option<L>) -> Self
    where
        L: Layer<RouteService> + Send + Sync + 'static,
        L::Service: StackService + Clone + Send + Sync + 'static,
    {
        if let Some(layer) = layer {
            self.wraps.push(Box::new(move |inner| {
                RouteService::from_boxed(layer.layer(inner))
            }));
        }
        self
    }

    /// [`Filters::then`] for a layer whose futures are written out rather than boxed (they
    /// are boxed here, once, as the route's stack erases types at each filter anyway).
    pub(super) fn then_unboxed<L>(mut self, layer: Option<L>) -> Self
    where
        L: Layer<RouteService> + Send + Sync + 'static,
        L::Service: ShareableService,
    {
        if let Some(layer) = layer {
            self.wraps
                .push(Box::new(move |inner| RouteService::new(layer.layer(inner))));
        }
        self
    }
}

impl<S> Layer<S> for Filters
where
    S: ShareableService,
{
    type Service = Filtered<S>;

    fn layer(&self, inner: S) -> Filtered<S> {
        if self.wraps.is_empty() {
            return Filtered::Bare(inner);
        }
        let innermost = RouteService::new(inner);
        Filtered::Wrapped(self.wraps.iter().rev().fold(innermost, |s, wrap| wrap(s)))
    }
}

impl<S> tower::Service<Request<ProxyBody>> for Filtered<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = Either<S::Future, BoxFuture>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Filtered::Bare(s) => s.poll_ready(cx),
            Filtered::Wrapped(_) => Poll::Ready(Ok(())),
        }
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        match self {
            Filtered::Bare(s) => Either::Left(s.call(req)),
            Filtered::Wrapped(s) => Either::Right(s.call_ref(req)),
        }
    }
}
