//! Fuzzes route matching: an arbitrary table of up to 16 routes (exact, prefix, regex and
//! template paths; authorities; methods; header conditions, inverted or not; model name and
//! version) against an arbitrary request. The indexed lookup must never panic and must pick
//! exactly the route a plain in-order scan picks: the first one whose every condition holds.
//!
//! Strings come from a small alphabet of path pieces so that routes and requests collide
//! often; raw fuzz bytes are mixed in so odd bytes reach the matchers too.

#![no_main]

use std::sync::Arc;

use ferry_config::{
    HeaderMatch, ModelMatch, PathMatch, PathTemplate, RouteMatch, StringMatch, TemplateSegment,
};
use ferry_filters::model_name::ModelRef;
use ferry_proxy::router::{RequestView, Router};
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

const PIECES: [&str; 12] = [
    "/", "v2", "models", "m", "mm", "versions", "1", "infer", "", "a.svc", "A.SVC:80", "x",
];
const HEADERS: [&str; 3] = ["x-canary", "x-tenant", "content-type"];
const METHODS: [&str; 4] = ["GET", "POST", "PUT", "DELETE"];

fn text(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 8)? {
        let raw: &str = u.arbitrary()?;
        return Ok(raw.chars().take(24).collect());
    }
    let mut s = String::new();
    for _ in 0..u.int_in_range(0..=4)? {
        s.push_str(u.choose(&PIECES)?);
    }
    Ok(s)
}

fn path(u: &mut Unstructured<'_>) -> Result<String> {
    let mut s = String::new();
    for _ in 0..u.int_in_range(0..=5)? {
        s.push('/');
        s.push_str(u.choose(&PIECES[1..])?);
    }
    if s.is_empty() || u.ratio(1, 6)? {
        s.push('/');
    }
    Ok(s)
}

fn string_match(u: &mut Unstructured<'_>) -> Result<StringMatch> {
    let t = text(u)?;
    Ok(match u.int_in_range(0..=2)? {
        0 => StringMatch::Exact(t),
        1 => StringMatch::Prefix(t),
        // Anchored as validation anchors it; an invalid pattern becomes an exact match.
        // `m+` keeps some patterns from being plain literals.
        _ => match regex::Regex::new(&format!("^(?:{})$", regex::escape(&t).replace('m', "m+"))) {
            Ok(r) => StringMatch::Regex(Arc::new(r)),
            Err(_) => StringMatch::Exact(t),
        },
    })
}

fn template(u: &mut Unstructured<'_>) -> Result<PathTemplate> {
    let mut segments = Vec::new();
    let n = u.int_in_range(0..=5)?;
    for i in 0..n {
        segments.push(match u.int_in_range(0..=3)? {
            0 => TemplateSegment::Var(format!("v{i}")),
            1 if i + 1 == n => TemplateSegment::Rest("rest".into()),
            _ => TemplateSegment::Literal(u.choose(&PIECES[1..8])?.to_string()),
        });
    }
    Ok(PathTemplate {
        source: String::from("(fuzz)"),
        segments,
    })
}

fn route(u: &mut Unstructured<'_>) -> Result<RouteMatch> {
    let path = match u.int_in_range(0..=4)? {
        0 => None,
        1 => Some(PathMatch::Exact(path(u)?)),
        2 => Some(PathMatch::Prefix(path(u)?)),
        3 => Some(PathMatch::Template(template(u)?)),
        _ => match string_match(u)? {
            StringMatch::Regex(r) => Some(PathMatch::Regex(r)),
            // Validation requires literal paths to start with `/`.
            StringMatch::Exact(_) | StringMatch::Prefix(_) => Some(PathMatch::Prefix(path(u)?)),
        },
    };
    let authority = u.ratio(1, 4)?.then(|| string_match(u)).transpose()?;
    let mut methods = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        methods.push(u.choose(&METHODS)?.to_string());
    }
    let mut headers = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        headers.push(HeaderMatch {
            name: u.choose(&HEADERS)?.to_string(),
            value: u.arbitrary::<bool>()?.then(|| string_match(u)).transpose()?,
            invert: u.ratio(1, 4)?,
        });
    }
    let model = if u.ratio(1, 3)? {
        Some(ModelMatch {
            name: string_match(u)?,
            version: u.arbitrary::<bool>()?.then(|| string_match(u)).transpose()?,
        })
    } else {
        None
    };
    Ok(RouteMatch {
        authority,
        path,
        methods,
        headers,
        model,
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut routes = Vec::new();
    for i in 0..u.int_in_range(0..=16)? {
        routes.push((route(u)?, i));
    }
    let table = format!("{routes:?}");
    let router = Router::new(routes);

    let method = Method::from_bytes(u.choose(&METHODS)?.as_bytes()).unwrap_or(Method::GET);
    let authority = u.arbitrary::<bool>()?.then(|| text(u)).transpose()?;
    let path = path(u)?;
    let mut headers = HeaderMap::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let value = text(u)?;
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.append(HeaderName::from_static(u.choose(&HEADERS)?), v);
        }
    }
    let model = if u.arbitrary::<bool>()? {
        Some(ModelRef {
            name: text(u)?,
            version: u.arbitrary::<bool>()?.then(|| text(u)).transpose()?,
        })
    } else {
        None
    };
    let req = RequestView {
        method: &method,
        authority: authority.as_deref(),
        path: &path,
        headers: &headers,
        model: model.as_ref(),
    };
    assert_eq!(
        router.route(&req),
        router.route_by_scan(&req),
        "the index disagrees with the in-order scan for {req:?} over {table}"
    );
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
