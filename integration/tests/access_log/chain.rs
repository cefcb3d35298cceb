//! Two sidecars in a chain, caller → outbound ferry → inbound ferry → model server, with
//! tracing on: each writes its own line for each call, and the lines join on `request_id`
//! (made by the first ferry, forwarded by both) and `trace_id`.

use std::collections::BTreeMap;

use ferry_integration::{Echo, EchoReport, HttpClient, to_yaml};
use serde_json::{Value, json};

use crate::support::{assert_common_fields, cluster, wait_lines};

const CALLS: usize = 5;

fn sidecar(
    listener: &str,
    sink: &std::path::Path,
    upstream: std::net::SocketAddr,
    collector: &str,
) -> String {
    to_yaml(&json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        // Nothing listens there: spans are dropped, ids are still made and propagated.
        "tracing": { "otlp": { "endpoint": collector } },
        "access_log": [{ "path": sink.to_str().unwrap() }],
        "listeners": [{
            "name": listener,
            "address": "127.0.0.1:0",
            "routes": [{ "name": "models", "to": "next" }],
        }],
        "clusters": [cluster("next", upstream, false)],
    }))
}

#[tokio::test]
async fn two_sidecars_write_lines_that_join_on_request_id_and_trace_id() -> anyhow::Result<()> {
    let echo = Echo::start("model").await?;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await?
        .local_addr()?;
    let collector = format!("http://{closed}");
    let dir = tempfile::tempdir()?;
    let (in_log, out_log) = (
        dir.path().join("inbound.json"),
        dir.path().join("outbound.json"),
    );
    let inbound =
        ferry_integration::Ferry::start(&sidecar("inbound", &in_log, echo.addr(), &collector))
            .await?;
    let inbound_addr = inbound.listener("inbound")?;
    let outbound =
        ferry_integration::Ferry::start(&sidecar("outbound", &out_log, inbound_addr, &collector))
            .await?;
    let client = HttpClient::http1();
    let mut seen_by_model = Vec::new();
    for i in 0..CALLS {
        let reply = client
            .get(
                outbound.listener("outbound")?,
                &format!("/v2/models/m/infer?call={i}"),
            )
            .await?;
        assert_eq!(reply.status, 200);
        let report: EchoReport = reply.json()?;
        seen_by_model.push(
            report
                .headers
                .get("x-request-id")
                .cloned()
                .expect("id forwarded to the model"),
        );
    }
    let by_id = |lines: Vec<Value>| -> BTreeMap<String, Value> {
        lines
            .into_iter()
            .map(|l| (l["request_id"].as_str().unwrap().to_owned(), l))
            .collect()
    };
    let outs = by_id(wait_lines(&out_log, CALLS).await?);
    let ins = by_id(wait_lines(&in_log, CALLS).await?);
    assert_eq!(outs.len(), CALLS);
    assert_eq!(
        outs.keys().collect::<Vec<_>>(),
        ins.keys().collect::<Vec<_>>(),
        "the same ids on both hops"
    );
    for id in &seen_by_model {
        let (o, i) = (&outs[id], &ins[id]);
        assert_common_fields(o);
        assert_common_fields(i);
        assert_eq!(
            (o["listener"].as_str(), i["listener"].as_str()),
            (Some("outbound"), Some("inbound"))
        );
        assert_eq!(o["endpoint"], inbound_addr.to_string());
        assert_eq!(i["endpoint"], echo.addr().to_string());
        let trace = o["trace_id"]
            .as_str()
            .expect("trace_id on the outbound hop");
        assert_eq!(trace.len(), 32);
        assert_eq!(i["trace_id"], trace, "one trace across both hops");
        let (os, is) = (
            o["span_id"].as_str().expect("span"),
            i["span_id"].as_str().expect("span"),
        );
        assert_eq!((os.len(), is.len()), (16, 16));
        assert_ne!(os, is, "each hop its own span");
        // The outer hop's time includes the inner hop's.
        assert!(o["duration_ms"].as_f64() >= i["duration_ms"].as_f64());
    }
    Ok(())
}
