//! Hops recorded through the real `HopTrace`, encoded by the batch as the exporter's sink does,
//! and decoded by `opentelemetry-proto`'s prost messages (the OTLP protos as the OpenTelemetry
//! project generates them): every field ferry writes must read back.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferry_filters::trace_context::{
    FixedAttributes, HopStart, HopTrace, KeptHop, Marks, Propagation, SpanId, SpanRecord, SpanSink,
    TailRules, TraceId,
};
use http::HeaderValue;
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_sdk::Resource;
use proptest::prelude::*;
use prost::Message;

use super::*;

/// The exporter's sink without its queue: hops encoded into one batch.
#[derive(Debug)]
struct Encode(Mutex<Batch>);

impl SpanSink for Encode {
    fn export(&self, hop: &KeptHop<'_>) {
        let mut b = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for span in hop.spans() {
            b.push(&span);
        }
    }
}

impl Encode {
    fn new(resource: &Resource) -> Arc<Self> {
        Arc::new(Encode(Mutex::new(Batch::new(resource))))
    }

    fn request(&self, grpc: bool) -> ExportTraceServiceRequest {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let next = held.empty_like();
        let batch = std::mem::replace(&mut *held, next);
        let out = batch.into_request(grpc);
        let body = if grpc {
            assert_eq!(out[0], 0, "uncompressed");
            let len = u32::from_be_bytes([out[1], out[2], out[3], out[4]]) as usize;
            assert_eq!(
                len,
                out.len() - 5,
                "the gRPC prefix carries the message length"
            );
            &out[5..]
        } else {
            &out[..]
        };
        match ExportTraceServiceRequest::decode(body) {
            Ok(r) => r,
            Err(e) => panic!("not a valid ExportTraceServiceRequest: {e}"),
        }
    }
}

/// One hop: a SERVER span (a remote parent, `tracestate`, an event, a failure) and a CLIENT
/// child with `attributes`.
fn record(sink: Arc<Encode>, attributes: Vec<KeyValue>, fixed: Arc<FixedAttributes>) -> Instant {
    let start = Instant::now();
    let hop = HopTrace::new(
        HopStart {
            trace_id: TraceId([1; 16]),
            parent: Some(SpanId([3; 8])),
            sampled: true,
            tracestate: Some(HeaderValue::from_static("vendor=x")),
            start,
        },
        "POST infer",
        Arc::from([Propagation::W3c]),
        TailRules::default(),
        sink,
    )
    .with_fixed(fixed);
    hop.add_attributes([KeyValue::new("http.request.method", "POST")]);
    hop.event(
        "first_byte",
        start + Duration::from_millis(5),
        vec![KeyValue::new("n", 3)],
    );
    hop.add_span(SpanRecord {
        span_id: SpanId([2; 8]),
        parent: hop.span_id(),
        kind: SpanKind::Client,
        name: "POST triton".into(),
        start: start + Duration::from_millis(1),
        end: start + Duration::from_millis(9),
        attributes,
        marks: {
            let mut m = Marks::default();
            m.push("response.headers", start + Duration::from_millis(4));
            m
        },
        events: Vec::new(),
        error: None,
    });
    hop.fail(Some("HTTP 503".into()));
    hop.end(start + Duration::from_millis(10));
    start
}

fn string(v: &Option<AnyValue>) -> Option<&str> {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[test]
fn every_span_field_reads_back() {
    let resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "ferry-test"),
            KeyValue::new("k8s.pod.name", "p-1"),
        ])
        .build();
    let sink = Encode::new(&resource);
    // Shared by both hops: encoded on the first, copied as bytes on the second.
    let fixed = Arc::new(FixedAttributes::new(vec![
        KeyValue::new("ferry.route", "infer"),
        KeyValue::new("ferry.listener", "inbound"),
    ]));
    for grpc in [true, false] {
        let before = nanos(SystemTime::now());
        record(
            sink.clone(),
            vec![
                KeyValue::new("http.response.status_code", 200i64),
                KeyValue::new("negative", -5i64),
                KeyValue::new("ratio", 0.25f64),
                KeyValue::new("flag", false),
                KeyValue::new("empty", ""),
                KeyValue::new(
                    "dims",
                    Value::Array(opentelemetry::Array::I64(vec![1, 3, 224])),
                ),
            ],
            fixed.clone(),
        );
        let req = sink.request(grpc);
        let rs = &req.resource_spans[0];
        let res: Vec<_> = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .map(|kv| (kv.key.as_str(), string(&kv.value)))
            .collect();
        assert!(res.contains(&("service.name", Some("ferry-test"))));
        assert!(res.contains(&("k8s.pod.name", Some("p-1"))));
        let ss = &rs.scope_spans[0];
        assert_eq!(ss.scope.as_ref().map(|s| s.name.as_str()), Some("ferry"));
        let [server, client] = &ss.spans[..] else {
            panic!("two spans: {:?}", ss.spans);
        };
        assert_eq!(server.trace_id, vec![1; 16]);
        assert_eq!(server.parent_span_id, vec![3; 8]);
        assert_eq!(server.trace_state, "vendor=x");
        assert_eq!(server.name, "POST infer");
        assert_eq!(server.kind, 2, "SERVER");
        assert!(server.start_time_unix_nano >= before - 1_000_000_000);
        assert_eq!(
            server.end_time_unix_nano - server.start_time_unix_nano,
            10_000_000,
            "ends 10 ms after it starts"
        );
        assert_eq!(server.flags, 0x301, "sampled, parent known remote");
        let status = server.status.as_ref().map(|s| (s.code, s.message.as_str()));
        assert_eq!(status, Some((2, "HTTP 503")));
        let server_attrs: Vec<_> = server
            .attributes
            .iter()
            .map(|kv| (kv.key.as_str(), string(&kv.value)))
            .collect();
        assert_eq!(
            server_attrs,
            vec![
                ("ferry.route", Some("infer")),
                ("ferry.listener", Some("inbound")),
                ("http.request.method", Some("POST")),
            ],
            "the route's shared attributes first"
        );
        assert_eq!(server.events.len(), 1);
        assert_eq!(server.events[0].name, "first_byte");
        assert_eq!(
            server.events[0].time_unix_nano - server.start_time_unix_nano,
            5_000_000
        );
        assert_eq!(client.trace_id, vec![1; 16]);
        assert_eq!(client.span_id, vec![2; 8]);
        assert_eq!(client.parent_span_id, server.span_id);
        assert_eq!(client.kind, 3, "CLIENT");
        assert_eq!(client.flags, 0x101, "sampled, parent known local");
        assert!(client.status.is_none(), "unset");
        let [mark] = &client.events[..] else {
            panic!("one event: {:?}", client.events);
        };
        assert_eq!(mark.name, "response.headers");
        assert!(mark.attributes.is_empty());
        assert_eq!(mark.time_unix_nano - server.start_time_unix_nano, 4_000_000);
        let attr = |k: &str| {
            client
                .attributes
                .iter()
                .find(|kv| kv.key == k)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        use any_value::Value as V;
        assert_eq!(attr("http.response.status_code"), Some(V::IntValue(200)));
        assert_eq!(attr("negative"), Some(V::IntValue(-5)));
        assert_eq!(attr("ratio"), Some(V::DoubleValue(0.25)));
        assert_eq!(attr("flag"), Some(V::BoolValue(false)));
        assert_eq!(attr("empty"), Some(V::StringValue(String::new())));
        let Some(V::ArrayValue(dims)) = attr("dims") else {
            panic!("dims is not an array");
        };
        let dims: Vec<_> = dims.values.into_iter().filter_map(|v| v.value).collect();
        assert_eq!(dims, vec![V::IntValue(1), V::IntValue(3), V::IntValue(224)]);
    }
}

proptest! {
    /// Lengths cross every varint size boundary the in-place writer must move across.
    #[test]
    fn any_attribute_sizes_and_hop_counts_read_back(
        values in proptest::collection::vec(".{0,300}", 0..40),
        hops in 1usize..6,
    ) {
        let sink = Encode::new(&Resource::builder_empty().build());
        let attributes: Vec<KeyValue> = values
            .iter()
            .enumerate()
            .map(|(i, v)| KeyValue::new(format!("k{i}"), v.clone()))
            .collect();
        let fixed = Arc::new(FixedAttributes::new(Vec::new()));
        for _ in 0..hops {
            record(sink.clone(), attributes.clone(), fixed.clone());
        }
        let req = sink.request(true);
        let got = &req.resource_spans[0].scope_spans[0].spans;
        prop_assert_eq!(got.len(), 2 * hops);
        for s in got.iter().filter(|s| s.kind == 3) {
            let read: Vec<_> = s.attributes.iter().map(|kv| string(&kv.value)).collect();
            let want: Vec<_> = values.iter().map(|v| Some(v.as_str())).collect();
            prop_assert_eq!(read, want);
        }
    }
}

#[test]
fn varint_lengths_match_the_writer() {
    for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
        let mut b = Vec::new();
        varint(&mut b, v);
        assert_eq!(b.len(), varint_len(v), "{v}");
    }
}
