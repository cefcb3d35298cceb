//! The fields of each line, per protocol, and which answers are written.

use bytes::Bytes;
use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::grpc::STATUS_KEY;
use ferry_integration::{Echo, EchoReport, GrpcUpstream, HttpClient};
use http::Method;
use serde_json::{Value, json};

use crate::support::{
    LISTENER, assert_common_fields, by_id, cluster, config, json_lines, start, wait_lines,
    wait_text_lines,
};

fn echo_msg(m: &str) -> tonic::Request<EchoRequest> {
    let mut req = tonic::Request::new(EchoRequest {
        message: m.into(),
        payload: Vec::new(),
        repeat: 0,
    });
    req.metadata_mut()
        .insert("x-request-id", format!("grpc-{m}").parse().unwrap());
    req
}

#[tokio::test]
async fn one_line_per_request_on_http1_h2c_grpc_and_a_translated_route() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let grpc = GrpcUpstream::start("g").await?;
    let dir = tempfile::tempdir()?;
    let (json_path, text_path) = (dir.path().join("a.json"), dir.path().join("a.txt"));
    let ferry = start(&config(
        json!([
            { "path": json_path.to_str().unwrap() },
            { "path": text_path.to_str().unwrap(), "format": "text" },
        ]),
        json!([
            { "name": "grpc", "match": { "path": { "prefix": "/ferry.test.v1.Echo/" } }, "to": "grpc" },
            {
                "name": "infer",
                "match": { "path": { "prefix": "/v2/models/" } },
                "translate": { "from": "rest", "to": "grpc" },
                "to": "grpc",
            },
            { "name": "echo", "to": "echo" },
        ]),
        json!([cluster("echo", echo.addr(), false), cluster("grpc", grpc.addr(), true)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;

    // HTTP/1.1, with a query string that must not be logged.
    let reply = HttpClient::http1()
        .call(request(
            Method::GET,
            addr,
            "/a/b?api_key=secret",
            &[("x-request-id", "http1-1")],
            body_full(Bytes::new()),
        )?)
        .await?;
    assert_eq!(reply.status, 200);
    let http1_bytes = reply.body.len() as u64;
    // h2c, with a body.
    let reply = HttpClient::h2c()
        .call(request(
            Method::POST,
            addr,
            "/upload",
            &[("x-request-id", "h2c-1")],
            body_full(vec![7u8; 100]),
        )?)
        .await?;
    assert_eq!(reply.status, 200);
    // No id from the caller: ferry makes one, forwards it, answers with it and logs it.
    let reply = HttpClient::http1().get(addr, "/no-id").await?;
    let made = reply
        .header("x-request-id")
        .expect("ferry answers with an id")
        .to_owned();
    let forwarded: EchoReport = reply.json()?;
    assert_eq!(forwarded.headers.get("x-request-id"), Some(&made));
    // gRPC: a success, and a failure whose status comes in the trailers.
    let mut client = EchoClient::new(grpc_channel(addr).await?);
    client.unary(echo_msg("ok")).await?;
    let mut failing = echo_msg("fail");
    failing.metadata_mut().insert(STATUS_KEY, "5".parse()?);
    let status = client
        .unary(failing)
        .await
        .expect_err("NOT_FOUND asked for");
    assert_eq!(status.code(), tonic::Code::NotFound);
    // REST → gRPC translation.
    let body = json!({ "id": "1", "inputs": [{ "name": "x", "datatype": "FP32", "shape": [1], "data": [1.0] }] });
    let reply = HttpClient::http1()
        .call(request(
            Method::POST,
            addr,
            "/v2/models/resnet/versions/3/infer",
            &[
                ("x-request-id", "rest-1"),
                ("content-type", "application/json"),
            ],
            body_full(body.to_string()),
        )?)
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let lines = wait_lines(&json_path, 6).await?;
    assert_eq!(lines.len(), 6, "one line per request: {lines:#?}");
    lines.iter().for_each(assert_common_fields);
    let endpoint = echo.addr().to_string();
    let line = by_id(&lines, "http1-1")?;
    assert_eq!(
        pick(
            line,
            &[
                "listener",
                "route",
                "cluster",
                "endpoint",
                "protocol",
                "method",
                "authority",
                "path",
                "status",
                "attempts",
                "bytes_out"
            ]
        ),
        json!({
            "listener": LISTENER, "route": "echo", "cluster": "echo", "endpoint": endpoint,
            "protocol": "HTTP/1.1", "method": "GET", "authority": addr.to_string(),
            "path": "/a/b", "status": 200, "attempts": 1, "bytes_out": http1_bytes,
        })
    );
    assert!(line["upstream_ms"].as_f64().unwrap() <= line["ttfb_ms"].as_f64().unwrap());
    for absent in [
        "grpc_status",
        "failure",
        "model",
        "translate",
        "trace_id",
        "peer_identity",
    ] {
        assert!(line.get(absent).is_none(), "{absent} invented: {line}");
    }
    let line = by_id(&lines, "h2c-1")?;
    assert_eq!(
        pick(line, &["protocol", "method", "path", "bytes_in"]),
        json!({ "protocol": "HTTP/2", "method": "POST", "path": "/upload", "bytes_in": 100 })
    );
    assert_eq!(by_id(&lines, &made)?["path"], "/no-id");
    let line = by_id(&lines, "grpc-ok")?;
    assert_eq!(
        pick(
            line,
            &[
                "route",
                "protocol",
                "grpc_service",
                "grpc_method",
                "status",
                "grpc_status"
            ]
        ),
        json!({ "route": "grpc", "protocol": "HTTP/2", "grpc_service": "ferry.test.v1.Echo", "grpc_method": "Unary", "status": 200, "grpc_status": 0 })
    );
    assert_eq!(by_id(&lines, "grpc-fail")?["grpc_status"], 5);
    let line = by_id(&lines, "rest-1")?;
    assert_eq!(
        pick(
            line,
            &[
                "route",
                "translate",
                "model",
                "model_version",
                "status",
                "cluster"
            ]
        ),
        json!({ "route": "infer", "translate": "rest->grpc", "model": "resnet", "model_version": "3", "status": 200, "cluster": "grpc" })
    );

    // The text sink got the same requests, one fixed 26-field line each.
    let text = wait_text_lines(&text_path, 6).await?;
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 6, "{text}");
    for row in &rows {
        assert_eq!(
            row.len(),
            28,
            "26 fields, the request's three words quoted: {row:?}"
        );
    }
    let http1 = rows
        .iter()
        .find(|r| r[23] == "http1-1")
        .expect("http1 text line");
    assert_eq!(
        (
            http1[1], http1[2], http1[3], http1[4], http1[5], http1[6], http1[16]
        ),
        (
            LISTENER,
            "echo",
            "\"GET",
            "/a/b",
            "HTTP/1.1\"",
            "200",
            "echo"
        )
    );
    Ok(())
}

#[tokio::test]
async fn errors_are_always_written_and_silenced_routes_write_nothing() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await?
        .local_addr()?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("errors.json");
    let ferry = start(&config(
        // sample 0: only errors are written.
        json!([{ "path": path.to_str().unwrap(), "sample": 0 }]),
        json!([
            { "name": "health", "match": { "path": { "exact": "/health" } }, "to": "echo", "access_log": false },
            { "name": "dead", "match": { "path": { "prefix": "/dead" } }, "to": "dead" },
            { "name": "echo", "match": { "path": { "prefix": "/e/" } }, "to": "echo" },
        ]),
        json!([cluster("echo", echo.addr(), false), cluster("dead", closed, false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let call = |path: &'static str, headers: Vec<(&'static str, &'static str)>| {
        let client = client.clone();
        async move {
            let reply = client
                .call(request(
                    Method::GET,
                    addr,
                    path,
                    &headers,
                    body_full(Bytes::new()),
                )?)
                .await?;
            anyhow::Ok(reply.status.as_u16())
        }
    };
    assert_eq!(call("/e/ok", vec![("x-request-id", "ok")]).await?, 200);
    assert_eq!(
        call("/health", vec![("x-request-id", "health")]).await?,
        200
    );
    // Silenced means silent, even when the answer is an error.
    assert_eq!(
        call(
            "/health",
            vec![("x-request-id", "health-500"), ("x-test-status", "500")]
        )
        .await?,
        500
    );
    assert_eq!(
        call(
            "/e/fail",
            vec![("x-request-id", "upstream-503"), ("x-test-status", "503")]
        )
        .await?,
        503
    );
    assert_eq!(
        call(
            "/e/missing",
            vec![("x-request-id", "upstream-404"), ("x-test-status", "404")]
        )
        .await?,
        404
    );
    assert_eq!(
        call("/nowhere", vec![("x-request-id", "no-route")]).await?,
        404
    );
    assert!(call("/dead", vec![("x-request-id", "dead")]).await? >= 500);

    let lines = wait_lines(&path, 4).await?;
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec!["upstream-503", "upstream-404", "no-route", "dead"]
    );
    // An upstream's own error answer is not ferry's failure; ferry's answers name theirs.
    assert!(by_id(&lines, "upstream-503")?.get("failure").is_none());
    let no_route = by_id(&lines, "no-route")?;
    assert_eq!(
        pick(no_route, &["status", "failure"]),
        json!({ "status": 404, "failure": "no_route" })
    );
    assert!(no_route.get("route").is_none() && no_route.get("cluster").is_none());
    let dead = by_id(&lines, "dead")?;
    assert_eq!(
        pick(dead, &["route", "cluster", "failure"]),
        json!({ "route": "dead", "cluster": "dead", "failure": "unavailable" })
    );
    // Nothing else arrives later: one more error is the next line.
    assert_eq!(
        call("/nowhere", vec![("x-request-id", "sentinel")]).await?,
        404
    );
    let lines = wait_lines(&path, 5).await?;
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!(lines[4]["request_id"], "sentinel");
    assert_eq!(json_lines(&path)?.len(), 5);
    Ok(())
}

/// The listed keys of a line, as one object (absent keys absent).
fn pick(line: &Value, keys: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    for k in keys {
        if let Some(v) = line.get(*k) {
            out.insert((*k).to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

#[tokio::test]
async fn rate_limited_routes_log_the_limits_state_and_refusals() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("limits.json");
    let ferry = start(&config(
        json!([{ "path": path.to_str().unwrap() }]),
        json!([
            { "name": "limited", "match": { "path": { "prefix": "/limited" } }, "to": "echo", "rate_limit": [{ "requests": 2, "per": "1h" }] },
            { "name": "free", "to": "echo" },
        ]),
        json!([cluster("echo", echo.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    for (id, path, status) in [
        ("l1", "/limited", 200),
        ("l2", "/limited", 200),
        ("l3", "/limited", 429),
        ("f1", "/free", 200),
    ] {
        let req = request(
            Method::GET,
            addr,
            path,
            &[("x-request-id", id)],
            body_full(Bytes::new()),
        )?;
        assert_eq!(client.call(req).await?.status, status, "{id}");
    }
    let lines = wait_lines(&path, 4).await?;
    let state = |id: &str| {
        by_id(&lines, id).map(|l| (l.get("ratelimit").cloned(), l.get("failure").cloned()))
    };
    let (l1, failure) = state("l1")?;
    let l1 = l1.expect("l1 carries the limit's state");
    assert_eq!(
        (&l1["limit"], &l1["remaining"], failure),
        (&json!(2), &json!(1), None)
    );
    // Seconds until the bucket has room again (GCRA: a request's share of the window).
    assert!(
        l1["reset_s"].as_u64().is_some_and(|s| s > 0 && s <= 3600),
        "{l1}"
    );
    assert_eq!(
        state("l2")?.0.map(|r| r["remaining"].clone()),
        Some(json!(0))
    );
    let (limited, failure) = state("l3")?;
    assert_eq!(limited.map(|r| r["remaining"].clone()), Some(json!(0)));
    assert_eq!(failure, Some(json!("rate_limited")));
    // No limit on the route: nothing to report, even if an upstream sent such headers.
    assert_eq!(state("f1")?, (None, None));
    Ok(())
}
