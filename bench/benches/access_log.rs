//! `access_log/*`: formatting one access-log line, as each request does when a sink admits it:
//! ferry's hand-written JSON and text writers into a reused buffer, against the naive
//! alternative, a `serde_json::Value` built per line and serialized into the same buffer.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use ferry_filters::trace_context::{SpanId, TraceId};
use ferry_proxy::access_log::{AccessRecord, RequestText, json_line, text_line};
use serde_json::{Map, Value};

/// A translated OIP infer call with every usual fact present.
fn record() -> AccessRecord {
    AccessRecord {
        start: SystemTime::now(),
        listener: Arc::from("inbound"),
        route: Some(Arc::from("infer")),
        model: Some("resnet50".into()),
        model_version: Some("3".into()),
        cluster: Some(Arc::from("triton")),
        endpoint: Some(std::net::SocketAddr::from(([10, 1, 2, 3], 8001))),
        protocol: http::Version::HTTP_11,
        method: http::Method::POST,
        request: RequestText::new(
            "/v2/models/resnet50/versions/3/infer",
            Some("resnet.models.svc:8080"),
            Some("2f1c7d3e-5a8b-4c1d-9e2f-6a7b8c9d0e1f"),
        ),
        grpc: false,
        status: Some(200),
        grpc_status: None,
        translate: Some("rest->grpc"),
        bytes_in: 4213,
        bytes_out: 388,
        duration: Duration::from_micros(12_373),
        total: Duration::from_micros(12_412),
        upstream_duration: Some(Duration::from_micros(11_802)),
        ferry_duration: Duration::from_micros(571),
        attempts: 1,
        failure: None,
        peer_identity: None,
        ratelimit: None,
        tokens: None,
        trace_id: Some(TraceId([0x4b; 16])),
        span_id: Some(SpanId([0x0a; 8])),
    }
}

/// The naive writer: a `Value` per line with the same keys, absent facts left out.
fn serde_line(out: &mut Vec<u8>, r: &AccessRecord) {
    let ms = |d: Duration| Value::from(d.as_secs_f64() * 1000.0);
    let mut m = Map::new();
    let since = r
        .start
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    m.insert("ts".into(), since.as_millis().to_string().into());
    m.insert("listener".into(), r.listener.to_string().into());
    let opt = |m: &mut Map<String, Value>, k: &str, v: Option<&str>| {
        if let Some(v) = v {
            m.insert(k.into(), v.into());
        }
    };
    opt(&mut m, "route", r.route.as_deref());
    opt(&mut m, "cluster", r.cluster.as_deref());
    if let Some(e) = r.endpoint {
        m.insert("endpoint".into(), e.to_string().into());
    }
    m.insert("protocol".into(), "HTTP/1.1".into());
    m.insert("method".into(), r.method.as_str().into());
    opt(&mut m, "authority", r.authority());
    m.insert("path".into(), r.path().into());
    if let Some(status) = r.status {
        m.insert("status".into(), status.into());
    }
    opt(&mut m, "model", r.model.as_deref());
    opt(&mut m, "model_version", r.model_version.as_deref());
    opt(&mut m, "translate", r.translate);
    m.insert("bytes_in".into(), r.bytes_in.into());
    m.insert("bytes_out".into(), r.bytes_out.into());
    m.insert("duration_ms".into(), ms(r.total));
    if let Some(u) = r.upstream_duration {
        m.insert("upstream_ms".into(), ms(u));
    }
    m.insert("ferry_ms".into(), ms(r.ferry_duration));
    m.insert("ttfb_ms".into(), ms(r.duration));
    m.insert("attempts".into(), r.attempts.into());
    opt(&mut m, "request_id", r.request_id());
    if let Some(t) = r.trace_id {
        m.insert("trace_id".into(), t.to_hex().into());
    }
    if let Some(s) = r.span_id {
        m.insert("span_id".into(), s.to_hex().into());
    }
    let _ = serde_json::to_writer(&mut *out, &Value::Object(m));
    out.push(b'\n');
}

fn bench(c: &mut Criterion) {
    let r = record();
    let mut group = c.benchmark_group("access_log");
    let mut buf = Vec::with_capacity(4096);
    group.bench_function("json/hand_written", |b| {
        b.iter(|| {
            buf.clear();
            json_line(&mut buf, black_box(&r));
            black_box(buf.len())
        })
    });
    group.bench_function("json/serde_json_value", |b| {
        b.iter(|| {
            buf.clear();
            serde_line(&mut buf, black_box(&r));
            black_box(buf.len())
        })
    });
    group.bench_function("text/hand_written", |b| {
        b.iter(|| {
            buf.clear();
            text_line(&mut buf, black_box(&r));
            black_box(buf.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
