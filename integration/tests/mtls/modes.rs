//! Listener modes: permissive serves mutual TLS and plaintext on one port (told apart by the
//! first byte), strict closes plaintext connections before reading any HTTP, and on every
//! listener a caller's own `x-forwarded-client-cert` is removed.

use std::time::{Duration, Instant};

use ferry_integration::client::{body_full, raw_exchange, request};
use ferry_integration::{Echo, EchoReport, HttpClient, peers};
use http::Method;
use serde_json::json;

use crate::support::{
    CLIENT_ID, INBOUND, Pki, SERVER_ID, TRUST_DOMAIN, catch_all, cluster, config, counter,
    counter_reaches, listener, start, strict, xfcc,
};

const SPOOFED: &str =
    "By=spiffe://cluster.local/ns/x/sa/y;Hash=00;URI=spiffe://cluster.local/ns/admin/sa/root";

#[tokio::test]
async fn permissive_serves_tls_and_plaintext_on_one_port() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let tls = json!({ "mode": "permissive", "peers": { "trust_domain": TRUST_DOMAIN } });
    let ferry = start(&config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(tls), catch_all("app"))]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = ferry.listener(INBOUND)?;

    // TLS: curl presenting the client certificate and checking ferry's against the CA, with
    // each protocol ferry offers in ALPN.
    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let mut args: Vec<String> = vec!["-sS".into(), "--max-time".into(), "10".into()];
        args.extend(client_cert.curl_args(&pki.ca_path()));
        args.extend([flag.into(), "-w".into(), "\n%{http_version}".into()]);
        args.extend(["-H".into(), format!("x-forwarded-client-cert: {SPOOFED}")]);
        args.push(format!(
            "https://127.0.0.1:{}/v2/models/resnet50/infer",
            addr.port()
        ));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = peers::run_curl(&args).await?;
        assert!(
            out.status.success(),
            "curl {flag} over TLS: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            ferry.logs()
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let (body, got_version) = text.rsplit_once('\n').unwrap_or_default();
        assert_eq!(
            got_version, version,
            "curl {flag} negotiated HTTP/{got_version}"
        );
        let seen: EchoReport = serde_json::from_str(body)?;
        assert_eq!(
            seen.headers.get("x-forwarded-client-cert"),
            Some(&xfcc(SERVER_ID, &client_cert.issued, CLIENT_ID)),
            "curl {flag}"
        );
    }

    // Plaintext on the same port, HTTP/1.1 and h2c: served, anonymous, spoofed header dropped.
    for (name, client) in [("http1", HttpClient::http1()), ("h2c", HttpClient::h2c())] {
        let req = request(
            Method::GET,
            addr,
            "/plain",
            &[("x-forwarded-client-cert", SPOOFED)],
            body_full(""),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{name}: {}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(seen.headers.get("x-forwarded-client-cert"), None, "{name}");
    }
    assert_eq!(echo.requests(), 4);
    counter_reaches(
        &ferry,
        "ferry_tls_plaintext_connections_total",
        &[("listener", INBOUND)],
        2.0,
    )
    .await?;
    let handshakes = counter(
        &ferry,
        "ferry_tls_handshakes_total",
        &[("listener", INBOUND)],
    )
    .await?;
    assert_eq!(handshakes, 2.0);
    Ok(())
}

#[tokio::test]
async fn strict_closes_plaintext_at_once() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    // A long handshake timeout: the close below must come from the first byte, not a timer.
    let mut tls = strict();
    tls["handshake_timeout"] = json!("30s");
    let ferry = start(&config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(tls), catch_all("app"))]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = ferry.listener(INBOUND)?;
    for raw in [
        &b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"[..],
        &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..],
    ] {
        let started = Instant::now();
        let (answer, closed) = raw_exchange(addr, raw, Duration::from_secs(10)).await?;
        assert!(closed, "strict listener kept a plaintext connection open");
        assert_eq!(answer, "", "strict listener answered plaintext");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    counter_reaches(
        &ferry,
        "ferry_tls_handshake_failures_total",
        &[("listener", INBOUND), ("reason", "plaintext")],
        2.0,
    )
    .await?;
    assert_eq!(echo.requests(), 0);
    let ok = pki
        .tls_client(&client_cert)?
        .get(addr, "/after", &[])
        .await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    Ok(())
}

#[tokio::test]
async fn spoofed_xfcc_is_removed_on_a_plaintext_listener() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let ferry = start(&config(
        None,
        json!([listener(
            INBOUND,
            Some(json!({ "mode": "disabled" })),
            catch_all("app")
        )]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = ferry.listener(INBOUND)?;
    for (name, client) in [("http1", HttpClient::http1()), ("h2c", HttpClient::h2c())] {
        let req = request(
            Method::GET,
            addr,
            "/spoof",
            &[
                ("x-forwarded-client-cert", SPOOFED),
                ("X-Forwarded-Client-Cert", "By=again"),
            ],
            body_full(""),
        )?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "{name}: {}", reply.text());
        let seen: EchoReport = reply.json()?;
        assert_eq!(
            seen.headers.get("x-forwarded-client-cert"),
            None,
            "{name}: {:?}",
            seen.headers
        );
    }
    Ok(())
}

#[tokio::test]
async fn permissive_plaintext_is_anonymous_to_authorization() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let mut inbound = listener(
        INBOUND,
        Some(json!({ "mode": "permissive" })),
        catch_all("app"),
    );
    inbound["authorization"] =
        json!({ "default": "deny", "rules": [{ "allow": [{ "trust_domain": TRUST_DOMAIN }] }] });
    let ferry = start(&config(
        Some(pki.identity(&server_cert)),
        json!([inbound]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = ferry.listener(INBOUND)?;
    let ok = pki
        .tls_client(&client_cert)?
        .get(addr, "/v2/models/m/infer", &[])
        .await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    // No identity, so no rule admits it, even one admitting the whole trust domain.
    let plain = HttpClient::http1().get(addr, "/v2/models/m/infer").await?;
    assert_eq!(plain.status, 403, "{}", plain.text());
    assert_eq!(
        plain.json::<serde_json::Value>()?,
        json!({ "error": "permission denied" })
    );
    // Bytes that are neither TLS nor HTTP reach the HTTP server, which answers 400.
    let (answer, _) = raw_exchange(addr, b"hello there\r\n\r\n", Duration::from_secs(5)).await?;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    assert_eq!(echo.requests(), 1);
    Ok(())
}
