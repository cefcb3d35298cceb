//! Routes: destination, direct responses, header edits, rewrites, timeouts, retries, and
//! (through `limits`) rate limits and concurrency.

use std::collections::HashMap;
use std::num::NonZeroU32;

use super::Ctx;
use super::limits::{RouteFacts, concurrency, rate_limits};
use super::matchers::route_match;
use super::values::{header_name, header_value, parse_duration, parse_percent};
use crate::defaults;
use crate::ir::{
    Action, DirectResponse, HeaderEdits, PrefixRewrite, RetryOn, RetryPolicy, Route,
    RouteLoadReport, WeightedCluster,
};
use crate::raw::{
    DirectResponseSpec, HeaderEditsSpec, HeaderValues, RawRoute, RetryOnSpec, RetrySpec, To,
};

pub(super) fn routes(
    ctx: &mut Ctx<'_>,
    listener: &str,
    raw: &[RawRoute],
    clusters: &[&str],
    has_redis: bool,
) -> Vec<Route> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let path = format!("{listener}.routes[{i}]");
        if let Some(first) = names.insert(r.name.as_str(), i) {
            ctx.error(
                &format!("{path}.name"),
                format!(
                    "duplicate route name {:?} (expected unique names within a listener; first used by {listener}.routes[{first}])",
                    r.name.as_str()
                ),
            );
        }
        out.push(route(ctx, &path, r, clusters, has_redis));
    }
    out
}

fn route(ctx: &mut Ctx<'_>, path: &str, r: &RawRoute, clusters: &[&str], has_redis: bool) -> Route {
    let matcher = r
        .matcher
        .as_ref()
        .map(|m| route_match(ctx, &format!("{path}.match"), m))
        .unwrap_or_default();
    let action = match (&r.to, &r.direct_response) {
        (Some(to), None) => forward(ctx, &format!("{path}.to"), to, clusters),
        (None, Some(d)) => direct_response(ctx, &format!("{path}.direct_response"), d),
        (Some(_), Some(_)) => {
            ctx.error(
                path,
                "both to and direct_response are set (expected exactly one)",
            );
            None
        }
        (None, None) => {
            ctx.error(
                path,
                "neither to nor direct_response is set (expected exactly one)",
            );
            None
        }
    };
    let timeout = match &r.timeout {
        None => Some(defaults::ROUTE_TIMEOUT),
        Some(t) => ctx
            .check(&format!("{path}.timeout"), parse_duration(t.as_str()))
            .filter(|d| !d.is_zero()),
    };
    let prefix_rewrite = r.prefix_rewrite.as_ref().and_then(|pr| {
        let from = ctx.check(
            &format!("{path}.prefix_rewrite.from"),
            absolute(pr.from.as_str()),
        );
        let to = ctx.check(
            &format!("{path}.prefix_rewrite.to"),
            absolute(pr.to.as_str()),
        );
        Some(PrefixRewrite {
            from: from?,
            to: to?,
        })
    });
    let facts = RouteFacts {
        has_redis,
        no_usage: if r.direct_response.is_some() {
            Some("a direct_response route has no upstream answer")
        } else if r.translate.is_some() {
            Some("translated answers (OIP or descriptor) carry none")
        } else {
            None
        },
    };
    Route {
        rate_limit: rate_limits(ctx, &format!("{path}.rate_limit"), &r.rate_limit, facts),
        concurrency: concurrency(ctx, &format!("{path}.concurrency"), r.concurrency.as_ref()),
        access_log: r.access_log.unwrap_or(true),
        load_report: route_load_report(ctx, path, r),
        fault: super::fault::fault(ctx, &format!("{path}.fault"), r.fault.as_ref()),
        mirror: super::mirror::mirrors(ctx, &format!("{path}.mirror"), r, clusters),
        name: r.name.0.clone(),
        matcher,
        // A stand-in when invalid: the errors already recorded stop this config being used.
        action: action.unwrap_or(Action::Forward(Vec::new())),
        request_headers: header_edits(
            ctx,
            &format!("{path}.request_headers"),
            r.request_headers.as_ref(),
        ),
        response_headers: header_edits(
            ctx,
            &format!("{path}.response_headers"),
            r.response_headers.as_ref(),
        ),
        prefix_rewrite,
        timeout,
        retry: r
            .retry
            .as_ref()
            .map(|spec| retry(ctx, &format!("{path}.retry"), spec)),
        translate: r
            .translate
            .as_ref()
            .and_then(|spec| super::translate::translate(ctx, &format!("{path}.translate"), spec)),
        validate_tensors: r.validate_tensors.as_ref().and_then(|spec| {
            super::tensors::validate_tensors(ctx, &format!("{path}.validate_tensors"), spec)
        }),
        authorization: super::tls::authorization(
            ctx,
            &format!("{path}.authorization"),
            r.authorization.as_ref(),
        ),
    }
}

fn absolute(text: &str) -> Result<String, String> {
    if text.starts_with('/') {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "path prefix {text:?} does not start with \"/\" (expected e.g. \"/v1/\")"
        ))
    }
}

fn forward(ctx: &mut Ctx<'_>, path: &str, to: &To, clusters: &[&str]) -> Option<Action> {
    let known = |ctx: &mut Ctx<'_>, p: &str, name: &str| {
        if clusters.contains(&name) {
            true
        } else {
            ctx.error(
                p,
                format!(
                    "unknown cluster {name:?} (expected one of: {})",
                    clusters.join(", ")
                ),
            );
            false
        }
    };
    match to {
        To::Cluster(name) => known(ctx, path, name).then(|| {
            Action::Forward(vec![WeightedCluster {
                cluster: name.clone(),
                weight: NonZeroU32::MIN,
            }])
        }),
        To::Split(targets) if targets.is_empty() => {
            ctx.error(
                path,
                "empty list (expected a cluster name or at least one {cluster, weight})",
            );
            None
        }
        To::Split(targets) => {
            let mut out = Vec::with_capacity(targets.len());
            for (i, t) in targets.iter().enumerate() {
                let ok = known(ctx, &format!("{path}[{i}].cluster"), t.cluster.as_str());
                let w = t.weight.unwrap_or(i64::from(defaults::WEIGHT));
                let weight = ctx.check(
                    &format!("{path}[{i}].weight"),
                    u32::try_from(w)
                        .ok()
                        .and_then(NonZeroU32::new)
                        .ok_or_else(|| format!("invalid weight {w} (expected an integer > 0)")),
                );
                if let (true, Some(weight)) = (ok, weight) {
                    out.push(WeightedCluster {
                        cluster: t.cluster.0.clone(),
                        weight,
                    });
                }
            }
            (out.len() == targets.len()).then_some(Action::Forward(out))
        }
    }
}

fn direct_response(ctx: &mut Ctx<'_>, path: &str, d: &DirectResponseSpec) -> Option<Action> {
    let status = ctx.check(
        &format!("{path}.status"),
        u16::try_from(d.status)
            .ok()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| format!("invalid status {} (expected 100 to 599)", d.status)),
    );
    let content_type = match &d.content_type {
        None => Some(defaults::DIRECT_RESPONSE_CONTENT_TYPE.to_owned()),
        Some(ct) => ctx.check(&format!("{path}.content_type"), header_value(ct.as_str())),
    };
    Some(Action::DirectResponse(DirectResponse {
        status: status?,
        body: d.body.clone().unwrap_or_default(),
        content_type: content_type?,
    }))
}

fn header_edits(ctx: &mut Ctx<'_>, path: &str, spec: Option<&HeaderEditsSpec>) -> HeaderEdits {
    let Some(spec) = spec else {
        return HeaderEdits::default();
    };
    let pairs = |ctx: &mut Ctx<'_>, what: &str, values: Option<&HeaderValues>| {
        let mut out = Vec::new();
        for (name, value) in values.map(|v| v.0.as_slice()).unwrap_or_default() {
            let p = format!("{path}.{what}.{}", name.as_str());
            let n = ctx.check(&p, header_name(name.as_str()));
            let v = ctx.check(&p, header_value(value));
            if let (Some(n), Some(v)) = (n, v) {
                out.push((n, v));
            }
        }
        out
    };
    let set = pairs(ctx, "set", spec.set.as_ref());
    let add = pairs(ctx, "add", spec.add.as_ref());
    let remove = spec
        .remove
        .iter()
        .enumerate()
        .filter_map(|(i, n)| ctx.check(&format!("{path}.remove[{i}]"), header_name(n.as_str())))
        .collect();
    HeaderEdits { set, add, remove }
}

fn retry(ctx: &mut Ctx<'_>, path: &str, spec: &RetrySpec) -> RetryPolicy {
    let attempts = match spec.attempts {
        None => defaults::RETRY_ATTEMPTS,
        Some(n) => ctx
            .check(
                &format!("{path}.attempts"),
                u32::try_from(n)
                    .ok()
                    .filter(|n| (1..=defaults::MAX_RETRY_ATTEMPTS).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "invalid attempts {n} (expected 1 to {}, counting the first try)",
                            defaults::MAX_RETRY_ATTEMPTS
                        )
                    }),
            )
            .unwrap_or(defaults::RETRY_ATTEMPTS),
    };
    let on = match &spec.on {
        None => defaults::RETRY_ON.to_vec(),
        Some(list) if list.is_empty() => {
            ctx.error(
                &format!("{path}.on"),
                "empty list (expected at least one retry condition)",
            );
            Vec::new()
        }
        Some(list) => {
            let mut on: Vec<RetryOn> = Vec::with_capacity(list.len());
            for r in list.iter().map(|r| retry_on(*r)) {
                if !on.contains(&r) {
                    on.push(r);
                }
            }
            on
        }
    };
    let budget_ratio = spec
        .budget
        .as_ref()
        .and_then(|b| ctx.check(&format!("{path}.budget"), parse_percent(b.as_str())))
        .unwrap_or(defaults::RETRY_BUDGET_RATIO);
    let per_try_timeout = spec.per_try_timeout.as_ref().and_then(|t| {
        ctx.check(
            &format!("{path}.per_try_timeout"),
            parse_duration(t.as_str()),
        )
        .filter(|d| !d.is_zero())
    });
    RetryPolicy {
        attempts,
        on,
        budget_ratio,
        min_retries_per_second: spec
            .min_retries_per_second
            .unwrap_or(defaults::MIN_RETRIES_PER_SECOND),
        max_body_bytes: spec
            .max_body_bytes
            .unwrap_or(defaults::RETRY_MAX_BODY_BYTES),
        per_try_timeout,
    }
}

fn retry_on(spec: RetryOnSpec) -> RetryOn {
    match spec {
        RetryOnSpec::ConnectFailure => RetryOn::ConnectFailure,
        RetryOnSpec::Http503 => RetryOn::Http503,
        RetryOnSpec::Http5xx => RetryOn::Http5xx,
        RetryOnSpec::Unavailable => RetryOn::Unavailable,
        RetryOnSpec::ResourceExhausted => RetryOn::ResourceExhausted,
        RetryOnSpec::Reset => RetryOn::Reset,
    }
}

/// `load_report` on a route: a direct response has no upstream answer to strip, and no
/// upstream load to report.
fn route_load_report(ctx: &mut Ctx<'_>, path: &str, r: &RawRoute) -> RouteLoadReport {
    let Some(spec) = &r.load_report else {
        return RouteLoadReport::default();
    };
    let out = RouteLoadReport {
        report: spec.report.unwrap_or(false),
        strip: spec.strip.unwrap_or(false),
    };
    if r.direct_response.is_some() && (out.report || out.strip) {
        ctx.error(
            &format!("{path}.load_report"),
            "a direct_response route forwards nothing to report on (expected load_report on a route with `to`)",
        );
    }
    out
}
