//! HTTP/1.1 and h2c on both sides of ferry, forwarding headers, request ids, hop-by-hop
//! headers, and the one-route sidecar flags.

use ferry_integration::client::{body_full, request};
use ferry_integration::upstream::Protocols;
use ferry_integration::{Echo, EchoReport, Ferry, HttpClient};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, cluster, config, one_upstream, start};

#[tokio::test]
async fn http1_client_to_http1_upstream_with_forwarding_headers() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    let req = request(
        Method::POST,
        addr,
        "/v1/x?y=z",
        &[("x-custom", "1")],
        body_full("hello"),
    )?;
    let reply = HttpClient::http1().call(req).await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let rid = reply.header("x-request-id").map(str::to_owned);
    assert!(
        rid.as_deref().is_some_and(|r| !r.is_empty()),
        "no x-request-id generated"
    );
    let seen: EchoReport = reply.json()?;
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/v1/x?y=z")
    );
    assert_eq!(seen.body_len, 5);
    assert_eq!(seen.headers.get("x-custom").map(String::as_str), Some("1"));
    assert_eq!(
        seen.headers.get("x-request-id"),
        rid.as_ref(),
        "upstream saw another id"
    );
    let xff = seen
        .headers
        .get("x-forwarded-for")
        .cloned()
        .unwrap_or_default();
    assert!(xff.contains("127.0.0.1"), "x-forwarded-for {xff:?}");
    let fwd = seen.headers.get("forwarded").cloned().unwrap_or_default();
    assert!(
        fwd.to_ascii_lowercase().contains("for="),
        "forwarded {fwd:?}"
    );
    assert_eq!(echo.requests(), 1);
    Ok(())
}

#[tokio::test]
async fn request_id_is_kept_when_present() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let req = request(
            Method::GET,
            addr,
            "/",
            &[("x-request-id", "req-abc-123")],
            body_full(""),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.header("x-request-id"), Some("req-abc-123"));
        let seen: EchoReport = reply.json()?;
        assert_eq!(
            seen.headers.get("x-request-id").map(String::as_str),
            Some("req-abc-123")
        );
    }
    Ok(())
}

#[tokio::test]
async fn hop_by_hop_headers_are_not_forwarded() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let headers = [
        ("connection", "keep-alive, x-hop"),
        ("x-hop", "secret"),
        ("keep-alive", "timeout=5"),
        ("proxy-connection", "keep-alive"),
        ("x-end-to-end", "kept"),
    ];
    let req = request(
        Method::GET,
        ferry.listener(LISTENER)?,
        "/",
        &headers,
        body_full(""),
    )?;
    let seen: EchoReport = HttpClient::http1().call(req).await?.json()?;
    for hop in ["x-hop", "keep-alive", "proxy-connection"] {
        assert!(
            !seen.headers.contains_key(hop),
            "{hop} reached the upstream: {:?}",
            seen.headers
        );
    }
    assert_eq!(
        seen.headers.get("x-end-to-end").map(String::as_str),
        Some("kept")
    );
    Ok(())
}

#[tokio::test]
async fn h2c_client_reaches_an_http1_only_upstream() -> anyhow::Result<()> {
    let echo = Echo::start_with("h1only", Protocols::Http1Only).await?;
    // Default cluster protocol (auto): non-gRPC requests ride HTTP/1.1 upstream.
    let ferry = start(&one_upstream(echo.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::h2c();
    for i in 0..20 {
        let req = request(
            Method::POST,
            addr,
            &format!("/n/{i}"),
            &[],
            body_full("abc"),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(seen.version, "HTTP/1.1");
        assert_eq!(seen.path, format!("/n/{i}"));
    }
    assert_eq!(echo.requests(), 20);
    Ok(())
}

#[tokio::test]
async fn http1_and_h2c_clients_reach_an_h2c_upstream() -> anyhow::Result<()> {
    let echo = Echo::start_with("h2only", Protocols::Http2Only).await?;
    let mut up = cluster("up", &[echo.addr()]);
    up["protocol"] = json!("h2");
    let ferry = start(&config(json!([{ "name": "all", "to": "up" }]), json!([up]))).await?;
    let addr = ferry.listener(LISTENER)?;
    for client in [HttpClient::http1(), HttpClient::h2c()] {
        let req = request(Method::PUT, addr, "/h2", &[], body_full("xyz!"))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(seen.version, "HTTP/2.0");
        assert_eq!(seen.body_len, 4);
    }
    Ok(())
}

#[tokio::test]
async fn one_route_sidecar_from_flags() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let upstream = echo.addr().to_string();
    let ferry = Ferry::start_args(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--admin",
        "127.0.0.1:0",
    ])
    .await?;
    let reply = HttpClient::http1()
        .get(ferry.only_listener()?, "/flags")
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json::<EchoReport>()?.path, "/flags");
    Ok(())
}

#[tokio::test]
async fn original_authority_cluster_reaches_the_host_the_caller_named() -> anyhow::Result<()> {
    // The outbound shape of the default config: no endpoints, the request names its own
    // destination. One cluster per upstream protocol, so both of ferry's pooled clients
    // (HTTP/1.1 and h2c) carry a request.
    let (a, b) = (Echo::start("a").await?, Echo::start("b").await?);
    let cfg = config(
        json!([
            { "name": "h2", "match": { "path": { "prefix": "/h2/" } }, "to": "out-h2" },
            { "name": "h1", "to": "out-h1" },
        ]),
        json!([
            { "name": "out-h1", "original_authority": { "default_port": 80 } },
            { "name": "out-h2", "original_authority": { "default_port": 80 }, "protocol": "h2" },
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    for (echo, path, version) in [
        (&a, "/h1/x", "HTTP/1.1"),
        (&b, "/h1/y", "HTTP/1.1"),
        (&a, "/h2/z", "HTTP/2.0"),
        (&b, "/h2/w", "HTTP/2.0"),
    ] {
        let host = echo.addr().to_string();
        for _ in 0..2 {
            let req = request(Method::GET, addr, path, &[("host", &host)], body_full(""))?;
            let reply = client.call(req).await?;
            assert_eq!(reply.status, 200, "{path}: {}", reply.text());
            let seen: EchoReport = reply.json()?;
            assert_eq!(
                (
                    seen.instance.as_str(),
                    seen.path.as_str(),
                    seen.version.as_str()
                ),
                (
                    if echo.addr() == a.addr() { "a" } else { "b" },
                    path,
                    version
                )
            );
        }
    }
    assert_eq!((a.requests(), b.requests()), (4, 4));
    Ok(())
}
