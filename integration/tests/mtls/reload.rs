//! Identity changes that come through other doors than a certificate swap: a rewritten trust
//! bundle (the first step of a trust-anchor change) and a config reload that names other
//! identity files.

use anyhow::Context as _;
use ferry_integration::{Echo, TlsClient, Workload, eventually};
use serde_json::json;

use crate::support::{
    CLIENT_ID, INBOUND, PATIENCE, Pki, SERVER_ID, assert_serves, catch_all, cluster, config,
    counter, counter_reaches, listener, path_str, start, strict,
};

#[tokio::test]
async fn trust_bundle_rewrite_admits_a_new_ca() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let server = start(&config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([cluster("app", echo.addr())]),
    ))
    .await?;
    let addr = server.listener(INBOUND)?;
    // A client issued by the next CA, which trusts both (the order of a trust-anchor change).
    let next = Pki::named("next mesh CA").await?;
    let moved = next.client("moved", CLIENT_ID).await?;
    let both = format!("{}{}", pki.ca.pem(), next.ca.pem());
    let client = TlsClient::new(&both, &moved.issued.cert_pem, &moved.issued.key_pem)?;
    assert!(
        client.get(addr, "/", &[]).await.is_err(),
        "served before ferry trusts the new CA"
    );
    counter_reaches(
        &server,
        "ferry_tls_handshake_failures_total",
        &[("listener", INBOUND), ("reason", "unknown_ca")],
        1.0,
    )
    .await?;
    let tmp = pki.dir().join(".ca.crt.tmp");
    tokio::fs::write(&tmp, &both).await?;
    tokio::fs::rename(&tmp, pki.ca_path()).await?;
    let reply = eventually(PATIENCE, || async { client.get(addr, "/", &[]).await })
        .await
        .with_context(|| format!("the new CA was never trusted; logs:\n{}", server.logs()))?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The old CA's clients are still admitted.
    let old = pki.tls_client(&pki.client("old", CLIENT_ID).await?)?;
    assert_eq!(old.get(addr, "/", &[]).await?.status, 200);
    Ok(())
}

#[tokio::test]
async fn config_reload_naming_other_files_switches_identity() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let v1 = pki.server().await?;
    let v2 = pki
        .issue("server-v2", &Workload::spiffe(SERVER_ID).loopback())
        .await?;
    let cfg = |identity| {
        config(
            Some(identity),
            json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
            json!([cluster("app", echo.addr())]),
        )
    };
    let server = start(&cfg(pki.identity(&v1))).await?;
    assert_serves(&server, &pki, &client_cert, &v1.issued, "at start").await?;
    server
        .config()?
        .write_value(&cfg(pki.identity(&v2)))
        .await?;
    assert_serves(
        &server,
        &pki,
        &client_cert,
        &v2.issued,
        "after the config reload",
    )
    .await?;
    // A config naming a missing key is refused as a whole and counted (as a TLS reload failure,
    // not a config reload failure); v2 keeps serving.
    let failures = counter(&server, "ferry_tls_reload_failures_total", &[]).await?;
    let mut broken = pki.identity(&v2);
    broken["key"] = json!(path_str(&pki.dir().join("missing.key")));
    server.config()?.write_value(&cfg(broken)).await?;
    counter_reaches(
        &server,
        "ferry_tls_reload_failures_total",
        &[],
        failures + 1.0,
    )
    .await?;
    assert_serves(
        &server,
        &pki,
        &client_cert,
        &v2.issued,
        "after a bad reload",
    )
    .await?;
    let ok = pki
        .tls_client(&client_cert)?
        .get(server.listener(INBOUND)?, "/", &[])
        .await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    Ok(())
}
