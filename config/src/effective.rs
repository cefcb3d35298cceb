//! The effective config: the IR rendered back into the file format with every default spelled
//! out, for `/config_dump`, and its digest, [`Config::version`].
//!
//! Rendering from the IR (not from the raw file) means two files that differ only in spelling
//! (`to: a` vs `to: [{cluster: a, weight: 1}]`, omitted defaults) get the same version, and the
//! output is itself a valid config file.

use std::num::NonZeroU32;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::defaults::API_VERSION;
use crate::ir::{
    Action, Config, HeaderEdits, HeaderMatch, Listener, PathMatch, RetryOn, RetryPolicy, Route,
    RouteMatch, StringMatch,
};
use crate::validate::{Parts, format_duration, format_percent};

mod access_log;
mod cluster;
mod fault;
mod limits;
mod mirror;
mod tls;
mod tracing;
mod translate;

/// Builds the final [`Config`] from validated parts.
pub(crate) fn finish(parts: Parts) -> Config {
    let mut effective = Map::new();
    effective.insert("apiVersion".into(), API_VERSION.into());
    effective.insert(
        "admin".into(),
        json!({ "address": parts.admin.address.to_string() }),
    );
    effective.insert(
        "runtime".into(),
        json!({
            "worker_threads": parts.runtime.worker_threads,
            "drain_timeout": format_duration(parts.runtime.drain_timeout),
        }),
    );
    if let Some(identity) = &parts.identity {
        effective.insert("identity".into(), tls::identity(identity));
    }
    if let Some(redis) = &parts.redis {
        effective.insert("redis".into(), limits::redis(redis));
    }
    if let Some(t) = &parts.tracing {
        effective.insert("tracing".into(), tracing::tracing(t));
    }
    if !parts.access_log.is_empty() {
        effective.insert(
            "access_log".into(),
            access_log::access_log(&parts.access_log),
        );
    }
    effective.insert(
        "listeners".into(),
        parts.listeners.iter().map(listener).collect(),
    );
    effective.insert(
        "clusters".into(),
        parts.clusters.iter().map(cluster::cluster).collect(),
    );
    let effective = Value::Object(effective);
    let mut hasher = Sha256::new();
    hasher.update(effective.to_string().as_bytes());
    // The dump hides the Redis password; a new password must still be a new version (a reload
    // with an unchanged version does nothing).
    if let Some(redis) = &parts.redis {
        hasher.update(b"\0redis:");
        hasher.update(redis.url.as_bytes());
    }
    // Likewise the exporter's header values (API keys): a rotated key is a new version.
    for (name, value) in parts.tracing.iter().flat_map(|t| &t.otlp.headers) {
        hasher.update(b"\0tracing.otlp.headers:");
        hasher.update(name.as_bytes());
        hasher.update(b"\0");
        hasher.update(value.as_bytes());
    }
    let digest = hasher.finalize();
    let version = digest.iter().map(|b| format!("{b:02x}")).collect();
    Config {
        admin: parts.admin,
        runtime: parts.runtime,
        listeners: parts.listeners,
        clusters: parts.clusters,
        identity: parts.identity,
        redis: parts.redis,
        tracing: parts.tracing,
        access_log: parts.access_log,
        version,
        effective_json: Arc::new(effective),
    }
}

fn listener(l: &Listener) -> Value {
    let mut limits = Map::new();
    limits.insert(
        "max_request_headers_bytes".into(),
        l.limits.max_request_headers_bytes.into(),
    );
    if let Some(max) = l.limits.max_request_body_bytes {
        limits.insert("max_request_body_bytes".into(), max.into());
    }
    limits.insert(
        "model_sniff_bytes".into(),
        l.limits.model_sniff_bytes.into(),
    );
    limits.insert(
        "idle_timeout".into(),
        format_duration(l.limits.idle_timeout.unwrap_or_default()).into(),
    );
    limits.insert(
        "request_headers_timeout".into(),
        format_duration(l.limits.request_headers_timeout.unwrap_or_default()).into(),
    );
    // 0 = unlimited, as in the file.
    limits.insert(
        "max_connections".into(),
        l.limits.max_connections.map_or(0, NonZeroU32::get).into(),
    );
    limits.insert(
        "h2_max_concurrent_streams".into(),
        l.limits
            .h2_max_concurrent_streams
            .map_or(0, NonZeroU32::get)
            .into(),
    );
    limits.insert(
        "stalled_write_timeout".into(),
        format_duration(l.limits.stalled_write_timeout.unwrap_or_default()).into(),
    );
    let mut out = Map::new();
    out.insert("name".into(), l.name.clone().into());
    out.insert("address".into(), l.address.to_string().into());
    out.insert("limits".into(), limits.into());
    out.insert("tls".into(), tls::listener_tls(&l.tls));
    if let Some(a) = &l.authorization {
        out.insert("authorization".into(), tls::authorization(a));
    }
    out.insert("routes".into(), l.routes.iter().map(route).collect());
    Value::Object(out)
}

fn route(r: &Route) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), r.name.clone().into());
    out.insert("match".into(), route_match(&r.matcher));
    match &r.action {
        Action::Forward(targets) => {
            let list: Vec<Value> = targets
                .iter()
                .map(|t| json!({ "cluster": t.cluster, "weight": t.weight.get() }))
                .collect();
            out.insert("to".into(), list.into());
        }
        Action::DirectResponse(d) => {
            out.insert(
                "direct_response".into(),
                json!({ "status": d.status, "body": d.body, "content_type": d.content_type }),
            );
        }
    }
    for (key, edits) in [
        ("request_headers", &r.request_headers),
        ("response_headers", &r.response_headers),
    ] {
        if *edits != HeaderEdits::default() {
            out.insert(key.into(), header_edits(edits));
        }
    }
    if let Some(pr) = &r.prefix_rewrite {
        out.insert(
            "prefix_rewrite".into(),
            json!({ "from": pr.from, "to": pr.to }),
        );
    }
    let timeout = r.timeout.map_or_else(|| "0s".to_owned(), format_duration);
    out.insert("timeout".into(), timeout.into());
    if let Some(retry) = &r.retry {
        out.insert("retry".into(), retry_policy(retry));
    }
    if let Some(t) = &r.translate {
        out.insert("translate".into(), translate::translate(t));
    }
    if let Some(v) = &r.validate_tensors {
        out.insert("validate_tensors".into(), validate_tensors(v));
    }
    if let Some(a) = &r.authorization {
        out.insert("authorization".into(), tls::authorization(a));
    }
    if !r.rate_limit.is_empty() {
        let list: Vec<Value> = r.rate_limit.iter().map(limits::rate_limit).collect();
        out.insert("rate_limit".into(), list.into());
    }
    if let Some(c) = &r.concurrency {
        out.insert("concurrency".into(), limits::concurrency(c));
    }
    if !r.access_log {
        out.insert("access_log".into(), false.into());
    }
    if r.load_report != crate::ir::RouteLoadReport::default() {
        out.insert(
            "load_report".into(),
            json!({ "report": r.load_report.report, "strip": r.load_report.strip }),
        );
    }
    if let Some(f) = &r.fault {
        out.insert("fault".into(), fault::fault(f));
    }
    if !r.mirror.is_empty() {
        out.insert("mirror".into(), mirror::mirrors(&r.mirror));
    }
    Value::Object(out)
}

fn validate_tensors(v: &crate::ir::ValidateTensors) -> Value {
    use crate::ir::TensorMetadataSource;
    match &v.source {
        TensorMetadataSource::Upstream { refresh } => {
            json!({ "metadata": "upstream", "refresh": format_duration(*refresh) })
        }
        TensorMetadataSource::Static(models) => {
            let models: Vec<Value> = models
                .iter()
                .map(|m| {
                    let inputs: Vec<Value> = m
                        .inputs
                        .iter()
                        .map(
                            |t| json!({ "name": t.name, "datatype": t.datatype, "shape": t.shape }),
                        )
                        .collect();
                    json!({ "name": m.name, "inputs": inputs })
                })
                .collect();
            json!({ "metadata": "static", "models": models })
        }
    }
}

fn route_match(m: &RouteMatch) -> Value {
    let mut out = Map::new();
    if let Some(a) = &m.authority {
        out.insert("authority".into(), string_match(a));
    }
    if let Some(p) = &m.path {
        let (kind, text) = match p {
            PathMatch::Exact(s) => ("exact", s.clone()),
            PathMatch::Prefix(s) => ("prefix", s.clone()),
            PathMatch::Regex(r) => ("regex", pattern(r)),
            PathMatch::Template(t) => ("template", t.source.clone()),
        };
        out.insert("path".into(), json!({ kind: text }));
    }
    if !m.methods.is_empty() {
        out.insert("method".into(), m.methods.clone().into());
    }
    if !m.headers.is_empty() {
        out.insert(
            "headers".into(),
            m.headers.iter().map(header_match).collect(),
        );
    }
    if let Some(model) = &m.model {
        let mut mm = Map::new();
        mm.insert("name".into(), string_match(&model.name));
        if let Some(v) = &model.version {
            mm.insert("version".into(), string_match(v));
        }
        out.insert("model".into(), Value::Object(mm));
    }
    Value::Object(out)
}

fn string_match(m: &StringMatch) -> Value {
    match m {
        StringMatch::Exact(s) => json!({ "exact": s }),
        StringMatch::Prefix(s) => json!({ "prefix": s }),
        StringMatch::Regex(r) => json!({ "regex": pattern(r) }),
    }
}

/// The pattern as written: validation wrapped it in `^(?:…)$`.
fn pattern(r: &regex::Regex) -> String {
    let s = r.as_str();
    s.strip_prefix("^(?:")
        .and_then(|s| s.strip_suffix(")$"))
        .unwrap_or(s)
        .to_owned()
}

fn header_match(h: &HeaderMatch) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), h.name.clone().into());
    match &h.value {
        None => {
            out.insert("present".into(), true.into());
        }
        Some(StringMatch::Exact(s)) => {
            out.insert("exact".into(), s.clone().into());
        }
        Some(StringMatch::Prefix(s)) => {
            out.insert("prefix".into(), s.clone().into());
        }
        Some(StringMatch::Regex(r)) => {
            out.insert("regex".into(), pattern(r).into());
        }
    }
    out.insert("invert".into(), h.invert.into());
    Value::Object(out)
}

fn header_edits(e: &HeaderEdits) -> Value {
    let pairs = |list: &[(String, String)]| -> Map<String, Value> {
        list.iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect()
    };
    json!({ "set": pairs(&e.set), "add": pairs(&e.add), "remove": e.remove })
}

fn retry_policy(r: &RetryPolicy) -> Value {
    let mut out = Map::new();
    out.insert("attempts".into(), r.attempts.into());
    out.insert("on".into(), r.on.iter().map(|o| retry_on(*o)).collect());
    out.insert("budget".into(), format_percent(r.budget_ratio).into());
    out.insert(
        "min_retries_per_second".into(),
        r.min_retries_per_second.into(),
    );
    out.insert("max_body_bytes".into(), r.max_body_bytes.into());
    if let Some(t) = r.per_try_timeout {
        out.insert("per_try_timeout".into(), format_duration(t).into());
    }
    Value::Object(out)
}

fn retry_on(r: RetryOn) -> Value {
    let name = match r {
        RetryOn::ConnectFailure => "connect-failure",
        RetryOn::Http503 => "http-503",
        RetryOn::Http5xx => "http-5xx",
        RetryOn::Unavailable => "unavailable",
        RetryOn::ResourceExhausted => "resource-exhausted",
        RetryOn::Reset => "reset",
    };
    name.into()
}
