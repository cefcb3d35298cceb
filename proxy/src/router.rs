//! Route matching: first route (in file order) whose every condition holds wins.
//!
//! Matching must not slow down with table size, so routes are indexed by their most selective
//! static condition (exact path, exact model name, path prefix) and only the few candidates a
//! request can reach are checked. Because the earliest matching route must win, each bucket
//! keeps its routes in file order and the answer is the smallest index over all buckets.

mod index;
mod matcher;

use ferry_config::RouteMatch;
use ferry_filters::model_name::ModelRef;
use http::{HeaderMap, Method};

use self::index::Index;

/// What a route condition may look at.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// Request method.
    pub method: &'a Method,
    /// `:authority` or `Host`, if any.
    pub authority: Option<&'a str>,
    /// Path without the query.
    pub path: &'a str,
    /// Request headers.
    pub headers: &'a HeaderMap,
    /// The model the request names, if known.
    pub model: Option<&'a ModelRef>,
}

/// An indexed, ordered route table over routes of type `R`.
#[derive(Debug)]
pub struct Router<R> {
    routes: Vec<(RouteMatch, R)>,
    index: Index,
    uses_model: bool,
}

// === impl Router ===

impl<R> Router<R> {
    /// Builds the table; `routes` are in priority order.
    pub fn new(routes: Vec<(RouteMatch, R)>) -> Self {
        let index = Index::build(routes.iter().map(|(m, _)| m));
        let uses_model = routes.iter().any(|(m, _)| m.model.is_some());
        Self {
            routes,
            index,
            uses_model,
        }
    }

    /// Whether any route looks at the model: only then is it worth reading request bodies.
    pub fn uses_model(&self) -> bool {
        self.uses_model
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the table has no routes.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Every route, in priority order.
    pub fn iter(&self) -> impl Iterator<Item = &R> {
        self.routes.iter().map(|(_, r)| r)
    }

    /// The first route matching `req`.
    pub fn route(&self, req: &RequestView<'_>) -> Option<&R> {
        let idx = self.index.first_match(req, |i| {
            self.routes
                .get(i)
                .is_some_and(|(m, _)| matcher::matches(m, req))
        })?;
        self.routes.get(idx).map(|(_, r)| r)
    }

    /// The first route matching `req` found by checking every route in file order, without
    /// the index: the answer [`Router::route`] must always agree with. Linear in the table
    /// size, so only the router's tests and the `route_match` fuzz target call it.
    pub fn route_by_scan(&self, req: &RequestView<'_>) -> Option<&R> {
        self.routes
            .iter()
            .find(|(m, _)| matcher::matches(m, req))
            .map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests;
