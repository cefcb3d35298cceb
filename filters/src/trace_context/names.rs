//! Span names and attribute strings made once (per route, cluster or connection) instead of
//! per recorded request: each was an allocation, and a recorded request made several.

use std::sync::Arc;

use http::Method;
use opentelemetry::StringValue;

/// The methods with a static name (the others are rare and named per request).
const KNOWN: [(Method, &str); 9] = [
    (Method::GET, "GET"),
    (Method::POST, "POST"),
    (Method::PUT, "PUT"),
    (Method::DELETE, "DELETE"),
    (Method::HEAD, "HEAD"),
    (Method::OPTIONS, "OPTIONS"),
    (Method::PATCH, "PATCH"),
    (Method::CONNECT, "CONNECT"),
    (Method::TRACE, "TRACE"),
];

/// A method's name as an attribute value, without allocating for the standard methods.
pub fn method_value(m: &Method) -> StringValue {
    match KNOWN.iter().find(|(k, _)| k == m) {
        Some((_, name)) => StringValue::from(*name),
        None => StringValue::from(m.as_str().to_owned()),
    }
}

/// `"{METHOD} {target}"` span names (OpenTelemetry's HTTP convention, the target being a
/// route or cluster name) for the standard methods, shared by every span that uses them.
#[derive(Debug, Clone)]
pub struct SpanNames {
    target: Arc<str>,
    known: [StringValue; 9],
}

impl SpanNames {
    /// The names for spans of `target`.
    pub fn new(target: &str) -> Self {
        SpanNames {
            target: Arc::from(target),
            known: KNOWN.map(|(_, m)| StringValue::from(Arc::<str>::from(join_name(m, target)))),
        }
    }

    /// The name of a `method` span: shared for a standard method, built for another.
    pub fn get(&self, method: &Method) -> StringValue {
        match KNOWN.iter().position(|(k, _)| k == method) {
            Some(i) => self.known[i].clone(),
            None => StringValue::from(join_name(method.as_str(), &self.target)),
        }
    }
}

/// `a b`, sized once.
pub fn join_name(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + 1 + b.len());
    s.push_str(a);
    s.push(' ');
    s.push_str(b);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_methods_share_one_name_and_others_are_built() {
        let names = SpanNames::new("infer");
        let a = names.get(&Method::POST);
        let b = names.get(&Method::POST);
        assert_eq!(a.as_str(), "POST infer");
        assert_eq!(
            a.as_str().as_ptr(),
            b.as_str().as_ptr(),
            "shared, not rebuilt"
        );
        assert_eq!(names.get(&Method::GET).as_str(), "GET infer");
        let custom = Method::from_bytes(b"PURGE").unwrap();
        assert_eq!(names.get(&custom).as_str(), "PURGE infer");
        assert_eq!(method_value(&Method::PATCH).as_str(), "PATCH");
        assert_eq!(method_value(&custom).as_str(), "PURGE");
    }
}
