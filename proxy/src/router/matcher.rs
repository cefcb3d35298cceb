//! Evaluates one route's conditions against a request.

use ferry_config::{
    HeaderMatch, ModelMatch, PathMatch, PathTemplate, RouteMatch, StringMatch, TemplateSegment,
};

use super::RequestView;

/// Whether every present condition of `m` holds for `req`.
pub(super) fn matches(m: &RouteMatch, req: &RequestView<'_>) -> bool {
    if !m.methods.is_empty() && !m.methods.iter().any(|x| x == req.method.as_str()) {
        return false;
    }
    if let Some(path) = &m.path
        && !path_matches(path, req.path)
    {
        return false;
    }
    if let Some(authority) = &m.authority {
        match req.authority {
            Some(a) if authority_matches(authority, a) => {}
            _ => return false,
        }
    }
    if !m.headers.iter().all(|h| header_matches(h, req)) {
        return false;
    }
    if let Some(model) = &m.model
        && !model_matches(model, req)
    {
        return false;
    }
    true
}

pub(super) fn string_matches(m: &StringMatch, value: &str) -> bool {
    match m {
        StringMatch::Exact(s) => s == value,
        StringMatch::Prefix(p) => value.starts_with(p.as_str()),
        StringMatch::Regex(r) => r.is_match(value),
    }
}

fn path_matches(m: &PathMatch, path: &str) -> bool {
    match m {
        PathMatch::Exact(s) => s == path,
        PathMatch::Prefix(p) => path.starts_with(p.as_str()),
        PathMatch::Regex(r) => r.is_match(path),
        PathMatch::Template(t) => template_matches(t, path),
    }
}

fn template_matches(t: &PathTemplate, path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let mut parts = rest.split('/');
    for seg in &t.segments {
        match seg {
            TemplateSegment::Rest(_) => return true,
            TemplateSegment::Literal(lit) => {
                if parts.next() != Some(lit.as_str()) {
                    return false;
                }
            }
            TemplateSegment::Var(_) => match parts.next() {
                Some(p) if !p.is_empty() => {}
                _ => return false,
            },
        }
    }
    parts.next().is_none()
}

/// Compares the authority case-insensitively, ignoring the request's port when the pattern
/// names none (so `models.svc` matches `models.svc:8000`).
fn authority_matches(m: &StringMatch, authority: &str) -> bool {
    let lowered;
    let authority = if authority.bytes().any(|b| b.is_ascii_uppercase()) {
        lowered = authority.to_ascii_lowercase();
        lowered.as_str()
    } else {
        authority
    };
    if string_matches(m, authority) {
        return true;
    }
    let pattern_has_port = match m {
        StringMatch::Exact(s) | StringMatch::Prefix(s) => s.contains(':'),
        StringMatch::Regex(_) => false,
    };
    if pattern_has_port {
        return false;
    }
    match strip_port(authority) {
        Some(host) => string_matches(m, host),
        None => false,
    }
}

fn strip_port(authority: &str) -> Option<&str> {
    let (host, port) = authority.rsplit_once(':')?;
    if port.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(':') {
        Some(host)
    } else {
        None
    }
}

fn header_matches(h: &HeaderMatch, req: &RequestView<'_>) -> bool {
    let found = match req.headers.get(h.name.as_str()) {
        None => false,
        Some(v) => match &h.value {
            None => true,
            Some(m) => v.to_str().is_ok_and(|v| string_matches(m, v)),
        },
    };
    found != h.invert
}

fn model_matches(m: &ModelMatch, req: &RequestView<'_>) -> bool {
    let Some(model) = req.model else {
        return false;
    };
    if !string_matches(&m.name, &model.name) {
        return false;
    }
    match (&m.version, &model.version) {
        (None, _) => true,
        (Some(want), Some(have)) => string_matches(want, have),
        (Some(_), None) => false,
    }
}
