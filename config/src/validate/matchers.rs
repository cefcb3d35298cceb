//! Route match conditions: authority, path, methods, headers and model.

use std::sync::Arc;

use super::Ctx;
use super::template::parse_template;
use super::values::{anchored_regex, header_name, method};
use crate::ir::{HeaderMatch, ModelMatch, PathMatch, RouteMatch, StringMatch};
use crate::raw::{
    HeaderMatchSpec, MatchSpec, ModelMatchSpec, PathMatchSpec, RouteMatchSpec, StringMatchSpec,
    Text,
};

pub(super) fn route_match(ctx: &mut Ctx<'_>, path: &str, m: &RouteMatchSpec) -> RouteMatch {
    let authority = m
        .authority
        .as_ref()
        .and_then(|a| string_match(ctx, &format!("{path}.authority"), a, true));
    let path_match = m
        .path
        .as_ref()
        .and_then(|p| path_match(ctx, &format!("{path}.path"), p));
    let mut methods = Vec::new();
    if let Some(list) = &m.method {
        let single = list.0.len() == 1;
        for (i, text) in list.0.iter().enumerate() {
            let p = if single {
                format!("{path}.method")
            } else {
                format!("{path}.method[{i}]")
            };
            methods.extend(ctx.check(&p, method(text)));
        }
    }
    let headers = m
        .headers
        .iter()
        .enumerate()
        .filter_map(|(i, h)| header_match(ctx, &format!("{path}.headers[{i}]"), h))
        .collect();
    let model = m
        .model
        .as_ref()
        .and_then(|mm| model_match(ctx, &format!("{path}.model"), mm));
    RouteMatch {
        authority,
        path: path_match,
        methods,
        headers,
        model,
    }
}

/// `authority` compares case-insensitively, so its patterns are folded to lower case here.
fn string_match(
    ctx: &mut Ctx<'_>,
    path: &str,
    spec: &StringMatchSpec,
    case_insensitive: bool,
) -> Option<StringMatch> {
    let fold = |s: &str| {
        if case_insensitive {
            s.to_ascii_lowercase()
        } else {
            s.to_owned()
        }
    };
    match spec {
        StringMatchSpec::Exact(s) => Some(StringMatch::Exact(fold(s))),
        StringMatchSpec::Spec(MatchSpec {
            exact,
            prefix,
            regex,
        }) => match (exact, prefix, regex) {
            (Some(e), None, None) => Some(StringMatch::Exact(fold(e.as_str()))),
            (None, Some(p), None) => Some(StringMatch::Prefix(fold(p.as_str()))),
            (None, None, Some(r)) => {
                let p = format!("{path}.regex");
                ctx.check(&p, anchored_regex(r.as_str(), case_insensitive))
                    .map(|r| StringMatch::Regex(Arc::new(r)))
            }
            _ => {
                ctx.error(path, "exactly one of exact, prefix, regex must be set (expected e.g. {prefix: \"llama-\"})");
                None
            }
        },
    }
}

fn path_match(ctx: &mut Ctx<'_>, path: &str, spec: &PathMatchSpec) -> Option<PathMatch> {
    let set: Vec<(&str, &Text)> = [
        ("exact", &spec.exact),
        ("prefix", &spec.prefix),
        ("regex", &spec.regex),
        ("template", &spec.template),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    .collect();
    let [(kind, value)] = set.as_slice() else {
        ctx.error(
            path,
            "exactly one of exact, prefix, regex, template must be set (expected e.g. {prefix: /v2/})",
        );
        return None;
    };
    let p = format!("{path}.{kind}");
    let text = value.as_str();
    let must_be_absolute = |what: &str| {
        if text.starts_with('/') {
            Ok(text.to_owned())
        } else {
            Err(format!(
                "{what} path {text:?} does not start with \"/\" (expected e.g. \"/v2/\")"
            ))
        }
    };
    match *kind {
        "exact" => ctx
            .check(&p, must_be_absolute("exact"))
            .map(PathMatch::Exact),
        "prefix" => ctx
            .check(&p, must_be_absolute("prefix"))
            .map(PathMatch::Prefix),
        "regex" => ctx
            .check(&p, anchored_regex(text, false))
            .map(|r| PathMatch::Regex(Arc::new(r))),
        _ => ctx.check(&p, parse_template(text)).map(PathMatch::Template),
    }
}

fn header_match(ctx: &mut Ctx<'_>, path: &str, spec: &HeaderMatchSpec) -> Option<HeaderMatch> {
    let name = ctx.check(&format!("{path}.name"), header_name(spec.name.as_str()));
    if spec.present == Some(false) {
        ctx.error(
            &format!("{path}.present"),
            "present: false is not supported (expected present: true, with invert: true for \"absent\")",
        );
        return None;
    }
    let value = match (&spec.exact, &spec.prefix, &spec.regex, spec.present) {
        (Some(e), None, None, None) => Some(Some(StringMatch::Exact(e.0.clone()))),
        (None, Some(p), None, None) => Some(Some(StringMatch::Prefix(p.0.clone()))),
        (None, None, Some(r), None) => ctx
            .check(&format!("{path}.regex"), anchored_regex(r.as_str(), false))
            .map(|r| Some(StringMatch::Regex(Arc::new(r)))),
        (None, None, None, Some(true)) => Some(None),
        _ => {
            ctx.error(
                path,
                "exactly one of exact, prefix, regex, present: true must be set (expected e.g. {name: x-tenant, exact: gold})",
            );
            None
        }
    };
    Some(HeaderMatch {
        name: name?,
        value: value?,
        invert: spec.invert.unwrap_or(false),
    })
}

fn model_match(ctx: &mut Ctx<'_>, path: &str, spec: &ModelMatchSpec) -> Option<ModelMatch> {
    let name = string_match(ctx, &format!("{path}.name"), &spec.name, false);
    let version = match &spec.version {
        None => Some(None),
        Some(v) => string_match(ctx, &format!("{path}.version"), v, false).map(Some),
    };
    Some(ModelMatch {
        name: name?,
        version: version?,
    })
}
