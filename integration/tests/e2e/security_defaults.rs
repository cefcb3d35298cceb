//! Security defaults a user gets without asking: identity headers from callers never reach an
//! upstream, and nothing secret reaches the log at info level (request bodies, credentials in
//! headers, key material, tracing API keys), even when things fail.

use ferry_integration::client::{body_full, request};
use ferry_integration::{Ca, Echo, EchoReport, HttpClient, Workload};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, catch_all, closed_port, cluster, config, start};

const BODY_SECRET: &str = "BODY-SECRET-4711";
const TOKEN_SECRET: &str = "TOKEN-SECRET-4712";
const API_KEY_SECRET: &str = "APIKEY-SECRET-4713";

#[tokio::test]
async fn forged_identity_headers_are_stripped_and_secrets_stay_out_of_the_log() -> anyhow::Result<()>
{
    let echo = Echo::start("up").await?;
    // An identity (so key material is loaded) on a permissive listener (so plaintext callers
    // still reach it), and tracing to a backend that is not there (so export fails and logs).
    let dir = tempfile::tempdir()?;
    let ca = Ca::new("security-defaults")?;
    let issued = ca
        .issue(&Workload::spiffe("spiffe://test.local/ns/a/sa/b").loopback())
        .await?;
    let (cert, key, trust) = (
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
        dir.path().join("ca.crt"),
    );
    tokio::fs::write(&cert, &issued.cert_pem).await?;
    tokio::fs::write(&key, &issued.key_pem).await?;
    ca.write(&trust).await?;
    let dead = closed_port().await?;
    let mut cfg = config(catch_all("up"), json!([cluster("up", &[echo.addr()])]));
    cfg["identity"] = json!({
        "cert": cert.display().to_string(),
        "key": key.display().to_string(),
        "trust": [trust.display().to_string()],
    });
    cfg["listeners"][0]["tls"] = json!({ "mode": "permissive" });
    cfg["tracing"] = json!({
        "otlp": {
            "endpoint": format!("http://{dead}"),
            "headers": { "x-api-key": API_KEY_SECRET },
            "timeout": "200ms",
        },
    });
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let forged = [
        (
            "x-forwarded-client-cert",
            "By=spiffe://evil;URI=spiffe://evil/admin",
        ),
        ("authorization", &format!("Bearer {TOKEN_SECRET}")[..]),
    ];
    for _ in 0..3 {
        let reply = client
            .call(request(
                Method::POST,
                addr,
                "/v1/chat/completions",
                &forged,
                body_full(format!("{{\"model\":\"m\",\"prompt\":\"{BODY_SECRET}\"}}")),
            )?)
            .await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let seen = reply.json::<EchoReport>()?;
        // A plaintext caller has no verified identity: the forged header is gone, not
        // passed on, and no header of ferry's own replaces it.
        assert!(
            !seen.headers.contains_key("x-forwarded-client-cert"),
            "{:?}",
            seen.headers
        );
        // Credentials meant for the model server do reach it.
        assert_eq!(
            seen.headers.get("authorization").map(String::as_str),
            Some(&format!("Bearer {TOKEN_SECRET}")[..])
        );
    }
    // A malformed request and an unroutable one log too.
    let _ = client
        .call(request(
            Method::POST,
            addr,
            "/v2/models/x/infer",
            &[("content-type", "application/json")],
            body_full(format!("{{\"inputs\": [{BODY_SECRET}")),
        )?)
        .await?;
    // Let the exporter fail at least once (batches go out within a second).
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let logs = ferry.logs();
    for secret in [BODY_SECRET, TOKEN_SECRET, API_KEY_SECRET] {
        assert!(!logs.contains(secret), "{secret} in the log:\n{logs}");
    }
    let key_body: String = issued
        .key_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    assert!(!logs.contains("PRIVATE KEY"), "{logs}");
    assert!(!logs.contains(&key_body[..40]), "{logs}");
    Ok(())
}
