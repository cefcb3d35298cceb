//! The route index: buckets of route indices keyed by a static condition.

use std::collections::HashMap;

use ferry_config::{PathMatch, RouteMatch, StringMatch, TemplateSegment};

use super::RequestView;

/// Route indices by key.
type Buckets = HashMap<Box<str>, Vec<usize>>;

/// Buckets of route indices, each in ascending (file) order. Every route is in exactly one
/// bucket, so the first match is the minimum over buckets of each bucket's first match.
#[derive(Debug, Default)]
pub(super) struct Index {
    exact_path: Buckets,
    model_name: Buckets,
    /// Prefix buckets grouped by prefix length, shortest first. The number of distinct
    /// lengths is bounded by the longest prefix, not by the number of routes.
    prefixes: Vec<(usize, Buckets)>,
    always: Vec<usize>,
}

enum Key {
    ExactPath(String),
    Model(String),
    Prefix(String),
    Always,
}

// === impl Index ===

impl Index {
    pub(super) fn build<'a>(routes: impl Iterator<Item = &'a RouteMatch>) -> Self {
        let mut index = Index::default();
        let mut by_len: HashMap<usize, Buckets> = HashMap::new();
        for (i, m) in routes.enumerate() {
            match key_of(m) {
                Key::ExactPath(p) => index.exact_path.entry(p.into()).or_default().push(i),
                Key::Model(name) => index.model_name.entry(name.into()).or_default().push(i),
                Key::Prefix(p) => by_len
                    .entry(p.len())
                    .or_default()
                    .entry(p.into())
                    .or_default()
                    .push(i),
                Key::Always => index.always.push(i),
            }
        }
        index.prefixes = by_len.into_iter().collect();
        index.prefixes.sort_by_key(|(len, _)| *len);
        index
    }

    /// The smallest route index for which `is_match` holds among the candidates of `req`.
    pub(super) fn first_match(
        &self,
        req: &RequestView<'_>,
        is_match: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut consider = |bucket: &[usize]| {
            for &i in bucket {
                if best.is_some_and(|b| i >= b) {
                    return;
                }
                if is_match(i) {
                    best = Some(i);
                    return;
                }
            }
        };
        if let Some(bucket) = self.exact_path.get(req.path) {
            consider(bucket);
        }
        if let Some(model) = req.model
            && let Some(bucket) = self.model_name.get(model.name.as_str())
        {
            consider(bucket);
        }
        for (len, bucket) in &self.prefixes {
            let Some(head) = req.path.get(..*len) else {
                // Shorter than this (and every longer) prefix, or not a char boundary.
                if req.path.len() < *len {
                    break;
                }
                continue;
            };
            if let Some(b) = bucket.get(head) {
                consider(b);
            }
        }
        consider(&self.always);
        best
    }
}

fn key_of(m: &RouteMatch) -> Key {
    if let Some(PathMatch::Exact(p)) = &m.path {
        return Key::ExactPath(p.clone());
    }
    if let Some(model) = &m.model
        && let StringMatch::Exact(name) = &model.name
    {
        return Key::Model(name.clone());
    }
    match &m.path {
        Some(PathMatch::Prefix(p)) if !p.is_empty() => Key::Prefix(p.clone()),
        Some(PathMatch::Template(t)) => {
            let mut prefix = String::from("/");
            let mut after_literals = None;
            for seg in &t.segments {
                match seg {
                    TemplateSegment::Literal(l) => {
                        prefix.push_str(l);
                        prefix.push('/');
                    }
                    other => {
                        after_literals = Some(other);
                        break;
                    }
                }
            }
            // The slash after the literals is required only before a variable (one non-empty
            // segment): a fully literal template ends without one, and a trailing `{rest=**}`
            // also matches no segment at all (`/v1/{rest=**}` matches `/v1`; found by the
            // route_match fuzz target).
            if !matches!(after_literals, Some(TemplateSegment::Var(_))) && prefix.len() > 1 {
                prefix.pop();
            }
            Key::Prefix(prefix)
        }
        _ => Key::Always,
    }
}
