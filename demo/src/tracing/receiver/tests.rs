use super::*;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PbSpan, Status};

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn export() -> ExportTraceServiceRequest {
    let span = PbSpan {
        trace_id: vec![0xab; 16],
        span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
        parent_span_id: Vec::new(),
        name: "POST models".into(),
        kind: span::SpanKind::Server as i32,
        start_time_unix_nano: 1_000,
        end_time_unix_nano: 3_500,
        attributes: vec![kv(
            "http.response.status_code",
            any_value::Value::IntValue(502),
        )],
        status: Some(Status {
            message: "HTTP 502".into(),
            code: status::StatusCode::Error as i32,
        }),
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv(
                    "service.name",
                    any_value::Value::StringValue("model-sidecar".into()),
                )],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[test]
fn flattens_with_the_service_name() {
    let spans = flatten(export());
    assert_eq!(spans.len(), 1);
    let s = &spans[0];
    assert_eq!(s.service, "model-sidecar");
    assert_eq!(s.trace_id, "ab".repeat(16));
    assert_eq!(s.span_id, "0102030405060708");
    assert_eq!(s.parent_id, "");
    assert_eq!(s.kind, "SERVER");
    assert_eq!(s.duration(), Duration::from_nanos(2_500));
    assert_eq!(s.attribute("http.response.status_code"), Some("502"));
    assert_eq!(s.error.as_deref(), Some("HTTP 502"));
}

/// What ferry's OTLP/HTTP exporter does: POST protobuf, read back a protobuf answer.
#[tokio::test]
async fn answers_an_export_and_keeps_its_spans() {
    use http_body_util::Empty;
    use hyper_util::client::legacy::Client;

    let mut receiver = Receiver::start().await.unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let endpoint = receiver.endpoint();
    let post = |ct: &'static str, body: Vec<u8>| {
        Request::post(&endpoint)
            .header(header::CONTENT_TYPE, ct)
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let resp = client
        .request(post(PROTOBUF, export().encode_to_vec()))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(ExportTraceServiceResponse::decode(body).is_ok());
    let spans = receiver
        .wait_for(Duration::from_secs(5), |s| !s.is_empty())
        .await;
    assert_eq!(spans, flatten(export()));

    let json = client
        .request(post("application/json", b"{}".to_vec()))
        .await
        .unwrap();
    assert_eq!(json.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let garbage = client.request(post(PROTOBUF, vec![0xff; 7])).await.unwrap();
    assert_eq!(garbage.status(), StatusCode::BAD_REQUEST);
    let other = Client::builder(TokioExecutor::new())
        .build_http::<Empty<Bytes>>()
        .get(
            format!("http://{}/v1/metrics", receiver.addr)
                .parse()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    receiver.stop().await;
}
