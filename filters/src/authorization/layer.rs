//! [`AuthorizationSettings`] as a tower layer: the decision is synchronous, so an allowed
//! request costs one policy walk and no allocation, and a denied one never reaches the inner
//! service. A refusal is a typed [`PermissionDenied`] for the stack's error renderer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Request;

use super::{AuthorizationSettings, PermissionDenied};
use crate::connection::Connection;
use crate::model_name::ModelRef;
use crate::translate::BoxError;

/// Called for each denied request, with the refusal (for the proxy's denial counter).
pub type OnDeny = Arc<dyn Fn(&PermissionDenied) + Send + Sync>;

/// Tower layer refusing requests its policy does not allow.
#[derive(Clone)]
pub struct AuthorizationLayer {
    settings: Arc<AuthorizationSettings>,
    on_deny: Option<OnDeny>,
}

/// The service made by [`AuthorizationLayer`].
#[derive(Clone)]
pub struct Authorization<S> {
    inner: S,
    settings: Arc<AuthorizationSettings>,
    on_deny: Option<OnDeny>,
}

pin_project_lite::pin_project! {
    /// The future of [`Authorization`]: the inner service's answer, or the refusal. Written
    /// out rather than boxed: it runs for every request of a route with a policy.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    #[derive(Debug)]
    enum State<F> {
        Allowed { #[pin] inner: F },
        Denied { denied: Option<PermissionDenied> },
    }
}

impl std::fmt::Debug for AuthorizationLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationLayer")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Authorization<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("inner", &self.inner)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

// === impl AuthorizationLayer ===

impl AuthorizationLayer {
    /// A layer enforcing these settings.
    pub fn new(settings: AuthorizationSettings) -> Self {
        Self::from_shared(Arc::new(settings))
    }

    /// A layer sharing these settings (one policy for a listener's or route's stacks).
    pub fn from_shared(settings: Arc<AuthorizationSettings>) -> Self {
        AuthorizationLayer {
            settings,
            on_deny: None,
        }
    }

    /// Calls `f` for each denied request.
    pub fn on_deny(mut self, f: OnDeny) -> Self {
        self.on_deny = Some(f);
        self
    }
}

impl<S> tower::Layer<S> for AuthorizationLayer {
    type Service = Authorization<S>;

    fn layer(&self, inner: S) -> Authorization<S> {
        Authorization {
            inner,
            settings: self.settings.clone(),
            on_deny: self.on_deny.clone(),
        }
    }
}

// === impl Authorization ===

impl<S> Authorization<S> {
    fn check<B>(&self, req: &Request<B>) -> Result<(), PermissionDenied> {
        let connection = Connection::of(req);
        let identity = connection.and_then(|c| c.identity.as_ref());
        let model = req.extensions().get::<ModelRef>();
        let cause = match self.settings.decide(identity, model) {
            Ok(()) => return Ok(()),
            Err(cause) => cause,
        };
        tracing::debug!(
            listener = connection.map(|c| &*c.listener),
            identity = identity.map(|i| &*i.0),
            model = model.map(|m| m.name.as_str()),
            cause = cause.as_str(),
            "authorization denied the request",
        );
        let denied = PermissionDenied::new(cause, identity.cloned());
        if let Some(f) = &self.on_deny {
            f(&denied);
        }
        Err(denied)
    }
}

impl<S, B> tower::Service<Request<B>> for Authorization<S>
where
    S: tower::Service<Request<B>>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let state = match self.check(&req) {
            Ok(()) => State::Allowed {
                inner: self.inner.call(req),
            },
            Err(denied) => State::Denied {
                denied: Some(denied),
            },
        };
        ResponseFuture { state }
    }
}

// === impl ResponseFuture ===

impl<F, R, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<R, E>>,
    E: Into<BoxError>,
{
    type Output = Result<R, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Allowed { inner } => inner.poll(cx).map_err(Into::into),
            StateProj::Denied { denied } => Poll::Ready(match denied.take() {
                Some(denied) => Err(Box::new(denied)),
                // Polled again after it completed: a caller bug, answered rather than panicking.
                None => Err("authorization future polled after completion".into()),
            }),
        }
    }
}
