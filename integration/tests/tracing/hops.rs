//! Two sidecars, as in a mesh: caller → outbound ferry → inbound ferry → model server (echo).
//! The caller's sampled W3C context must come out as one trace in Phoenix: the caller's span
//! → outbound SERVER → outbound CLIENT → inbound SERVER → inbound CLIENT, each nested in time
//! within its parent, and the model server's parent is the inbound CLIENT span.

use std::sync::Arc;

use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, HttpClient, Phoenix};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{
    assert_nested, caller, children, config, echoed, in_trace, one, otlp_grpc,
    upstream_traceparent, wait_for_trace,
};

const PATH: &str = "/v2/models/resnet/versions/3/infer";

fn listener(name: &str, route: &str, cluster: &str) -> Value {
    json!([{
        "name": name,
        "address": "127.0.0.1:0",
        "routes": [{ "name": route, "to": cluster }],
    }])
}

pub async fn two_sidecars_one_trace(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("two-sidecars");
    let echo = Echo::start("model").await?;
    let tracing = |service: &str| json!({ "otlp": otlp_grpc(&phoenix), "service_name": service });
    let server_side = crate::support::start(
        &config(
            tracing("model-pod"),
            listener("inbound", "infer", "model"),
            json!([{ "name": "model", "endpoints": [echo.addr().to_string()] }]),
        ),
        &project,
    )
    .await?;
    let inbound = server_side.listener("inbound")?;
    let client_side = crate::support::start(
        &config(
            tracing("caller-pod"),
            listener("outbound", "egress", "model-service"),
            json!([{ "name": "model-service", "endpoints": [inbound.to_string()] }]),
        ),
        &project,
    )
    .await?;
    let outbound = client_side.listener("outbound")?;

    let (trace_id, caller_span) = caller();
    let traceparent = format!("00-{trace_id}-{caller_span}-01");
    let reply = HttpClient::http1()
        .call(request(
            Method::POST,
            outbound,
            PATH,
            &[
                ("traceparent", &traceparent),
                ("tracestate", "caller=1"),
                ("content-type", "application/json"),
            ],
            body_full(r#"{"inputs": []}"#),
        )?)
        .await?;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let report = echoed(&reply)?;

    let names = [
        "POST egress",
        "POST model-service",
        "POST infer",
        "POST model",
    ];
    let spans = wait_for_trace(&phoenix, &project, &trace_id, &names).await?;
    let trace = in_trace(&spans, &trace_id);
    let out_server = one(&trace, "POST egress");
    let out_client = one(&trace, "POST model-service");
    let in_server = one(&trace, "POST infer");
    let in_client = one(&trace, "POST model");

    // Parents: the caller's span, then each hop under the previous one.
    assert_eq!(out_server.parent_id.as_deref(), Some(caller_span.as_str()));
    assert_nested(out_server, out_client);
    assert_nested(out_client, in_server);
    assert_nested(in_server, in_client);
    // The model server's parent is the inbound attempt, in the caller's trace, sampled.
    let (seen_trace, seen_parent, flags) = upstream_traceparent(&report)?;
    assert_eq!(
        (seen_trace.as_str(), seen_parent.as_str(), flags.as_str()),
        (trace_id.as_str(), in_client.span_id.as_str(), "01")
    );
    assert_eq!(
        report.headers.get("tracestate").map(String::as_str),
        Some("caller=1"),
        "tracestate travels on unchanged"
    );

    // SERVER spans: the route's names, the request, the answer.
    for (span, listener, route, cluster) in [
        (out_server, "outbound", "egress", "model-service"),
        (in_server, "inbound", "infer", "model"),
    ] {
        let s = |k: &str| span.attr_str(k);
        assert_eq!(s("ferry.listener"), Some(listener), "{span:#?}");
        assert_eq!(s("ferry.route"), Some(route), "{span:#?}");
        assert_eq!(s("ferry.cluster"), Some(cluster), "{span:#?}");
        assert_eq!(s("http.request.method"), Some("POST"), "{span:#?}");
        assert_eq!(s("url.path"), Some(PATH), "{span:#?}");
        assert_eq!(s("server.address"), Some("127.0.0.1"), "{span:#?}");
        assert_eq!(s("network.peer.address"), Some("127.0.0.1"), "{span:#?}");
        assert_eq!(s("model.name"), Some("resnet"), "{span:#?}");
        assert_eq!(s("model.version"), Some("3"), "{span:#?}");
        assert_eq!(
            span.attr_i64("http.response.status_code"),
            Some(200),
            "{span:#?}"
        );
        assert!(span.attr("ferry.translate").is_none(), "{span:#?}");
        for event in ["response.headers", "response.first_byte"] {
            let at = span
                .event(event)
                .and_then(|e| e.unix_micros())
                .unwrap_or_else(|| panic!("no event {event} on {span:#?}"));
            assert!(
                (span.start_unix_micros()..=span.end_unix_micros()).contains(&at),
                "{event} outside its span: {span:#?}"
            );
        }
    }
    // Both hops passed the same answer body on.
    let size = i64::try_from(reply.body.len())?;
    assert_eq!(out_server.attr_i64("http.response.body.size"), Some(size));
    assert_eq!(in_server.attr_i64("http.response.body.size"), Some(size));

    // CLIENT spans: the endpoint each attempt went to.
    for (span, cluster, port) in [
        (out_client, "model-service", inbound.port()),
        (in_client, "model", echo.addr().port()),
    ] {
        assert_eq!(span.attr_str("ferry.cluster"), Some(cluster), "{span:#?}");
        assert_eq!(span.attr_str("server.address"), Some("127.0.0.1"));
        assert_eq!(span.attr_i64("server.port"), Some(i64::from(port)));
        assert_eq!(span.attr_str("network.peer.address"), Some("127.0.0.1"));
        assert_eq!(span.attr_str("http.request.method"), Some("POST"));
        assert_eq!(span.attr_i64("http.response.status_code"), Some(200));
        assert!(span.attr("http.request.resend_count").is_none());
        // The first request to each upstream opened the connection, under its attempt.
        let connects = children(&trace, span, "connect");
        assert_eq!(
            connects.len(),
            1,
            "connect under {:?}: {trace:#?}",
            span.name
        );
        assert_nested(span, connects[0]);
    }
    // Only these six spans: nothing else joined this trace.
    assert_eq!(trace.len(), 6, "{}", crate::support::describe(&trace));

    // The trace id is the latency exemplar of the OpenMetrics scrape (the access record's
    // trace id is not observable: `ferry run` writes no access log).
    let scrape = Admin::new(client_side.admin());
    let text = scrape.openmetrics_text().await?;
    assert!(
        text.lines()
            .any(|l| l.starts_with("ferry_request_duration_seconds_bucket")
                && l.contains(&format!("trace_id=\"{trace_id}\""))),
        "no exemplar with the caller's trace id:\n{text}"
    );
    Ok(())
}
