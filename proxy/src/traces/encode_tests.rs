//! The encoder's output decoded by `opentelemetry-proto`'s prost messages (the OTLP protos as
//! the OpenTelemetry project generates them): every field ferry writes must read back.

use std::borrow::Cow;
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use proptest::prelude::*;
use prost::Message;

use super::*;

fn span(name: &'static str, attributes: Vec<KeyValue>) -> SpanData {
    let state: TraceState = "vendor=x".parse().unwrap_or_default();
    let mut events = SpanEvents::default();
    events.events = vec![Event::new(
        "first_byte",
        UNIX_EPOCH + Duration::from_nanos(1_700_000_000_500_000_000),
        vec![KeyValue::new("n", 3)],
        0,
    )];
    let mut links = SpanLinks::default();
    links.links = vec![Link::new(
        SpanContext::new(
            TraceId::from_bytes([9; 16]),
            SpanId::from_bytes([8; 8]),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        ),
        vec![KeyValue::new("why", "retry")],
        0,
    )];
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes([1; 16]),
            SpanId::from_bytes([2; 8]),
            TraceFlags::SAMPLED,
            false,
            state,
        ),
        parent_span_id: SpanId::from_bytes([3; 8]),
        parent_span_is_remote: true,
        span_kind: SpanKind::Server,
        name: Cow::Borrowed(name),
        start_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_000_000_000),
        end_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_001_000_000_000),
        attributes,
        dropped_attributes_count: 0,
        events,
        links,
        status: Status::error("upstream reset"),
        instrumentation_scope: InstrumentationScope::builder("ferry").build(),
    }
}

fn decode(batch: &mut Batch, grpc: bool) -> ExportTraceServiceRequest {
    let out = batch.take_request(grpc);
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

fn string(v: &Option<AnyValue>) -> Option<&str> {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

#[test]
fn every_span_field_reads_back() {
    let resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "ferry-test"),
            KeyValue::new("k8s.pod.name", "p-1"),
        ])
        .build();
    let mut batch = Batch::new(&resource);
    batch.push(&span(
        "GET /v2/models/{name}/infer",
        vec![
            KeyValue::new("http.request.method", "POST"),
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
    ));
    assert_eq!(batch.len(), 1);
    for grpc in [true, false] {
        if grpc {
            // take_request emptied the batch: refill it for the second encoding.
        } else {
            batch.push(&span("GET /v2/models/{name}/infer", vec![]));
        }
        let req = decode(&mut batch, grpc);
        assert!(batch.is_empty());
        let rs = &req.resource_spans[0];
        let res = rs.resource.as_ref().map(|r| &r.attributes);
        let names: Vec<_> = res
            .into_iter()
            .flatten()
            .map(|kv| (kv.key.as_str(), string(&kv.value)))
            .collect();
        assert!(names.contains(&("service.name", Some("ferry-test"))));
        assert!(names.contains(&("k8s.pod.name", Some("p-1"))));
        let ss = &rs.scope_spans[0];
        assert_eq!(ss.scope.as_ref().map(|s| s.name.as_str()), Some("ferry"));
        let s = &ss.spans[0];
        assert_eq!(s.trace_id, vec![1; 16]);
        assert_eq!(s.span_id, vec![2; 8]);
        assert_eq!(s.parent_span_id, vec![3; 8]);
        assert_eq!(s.trace_state, "vendor=x");
        assert_eq!(s.name, "GET /v2/models/{name}/infer");
        assert_eq!(s.kind, 2, "SERVER");
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(s.end_time_unix_nano, 1_700_000_001_000_000_000);
        assert_eq!(s.flags, 0x301, "sampled, parent known remote");
        let status = s.status.as_ref().map(|s| (s.code, s.message.as_str()));
        assert_eq!(status, Some((2, "upstream reset")));
        assert_eq!(s.events.len(), 1);
        assert_eq!(s.events[0].name, "first_byte");
        assert_eq!(s.events[0].time_unix_nano, 1_700_000_000_500_000_000);
        assert_eq!(s.links.len(), 1);
        assert_eq!(s.links[0].trace_id, vec![9; 16]);
        assert_eq!(s.links[0].flags, 0x301);
        if grpc {
            let attr = |k: &str| {
                s.attributes
                    .iter()
                    .find(|kv| kv.key == k)
                    .and_then(|kv| kv.value.clone())
                    .and_then(|v| v.value)
            };
            use any_value::Value as V;
            assert_eq!(
                attr("http.request.method"),
                Some(V::StringValue("POST".into()))
            );
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
}

proptest! {
    /// Lengths cross every varint size boundary the in-place writer must move across.
    #[test]
    fn any_attribute_sizes_and_span_counts_read_back(
        values in proptest::collection::vec(".{0,300}", 0..40),
        spans in 1usize..6,
    ) {
        let mut batch = Batch::new(&Resource::builder_empty().build());
        let attributes: Vec<KeyValue> = values
            .iter()
            .enumerate()
            .map(|(i, v)| KeyValue::new(format!("k{i}"), v.clone()))
            .collect();
        for _ in 0..spans {
            batch.push(&span("s", attributes.clone()));
        }
        let req = decode(&mut batch, true);
        let got = &req.resource_spans[0].scope_spans[0].spans;
        prop_assert_eq!(got.len(), spans);
        for s in got {
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
