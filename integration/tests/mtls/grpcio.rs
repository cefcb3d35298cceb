//! Python grpcio with `ssl_channel_credentials` (a client certificate) straight to a strict
//! inbound listener: the TLS stack most model clients ship with, no ferry on the client side.

use ferry_integration::{GrpcUpstream, peers};
use serde_json::json;

use crate::support::{
    CLIENT_ID, INBOUND, Pki, catch_all, cluster, config, counter_reaches, listener, path_str,
    start, strict,
};

#[tokio::test]
async fn python_grpcio_with_client_cert_to_strict_inbound() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("py-mtls").await?;
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let client_cert = pki.client("client", CLIENT_ID).await?;
    let ferry = start(&config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([cluster("app", up.addr())]),
    ))
    .await?;
    let (ca, cert, key) = (
        path_str(&pki.ca_path()),
        path_str(&client_cert.files.cert),
        path_str(&client_cert.files.key),
    );
    // grpcio checks the server's certificate against the name: the server cert has the DNS
    // SAN `localhost`, and the channel is told to expect it while dialling 127.0.0.1.
    let out = peers::grpcio_client(
        ferry.listener(INBOUND)?,
        &[
            "--message",
            "over mtls",
            "--ca",
            &ca,
            "--cert",
            &cert,
            "--key",
            &key,
            "--server-name",
            "localhost",
        ],
    )
    .await?;
    assert_eq!(out["unary"]["code"], "OK", "{out}");
    assert_eq!(out["unary"]["message"], "over mtls");
    assert_eq!(out["unary"]["instance"], "py-mtls");
    assert_eq!(
        out["server_stream"],
        json!(["over mtls#1", "over mtls#2", "over mtls#3"])
    );
    assert_eq!(up.calls(), 2);
    counter_reaches(
        &ferry,
        "ferry_tls_handshakes_total",
        &[("listener", INBOUND)],
        1.0,
    )
    .await?;
    Ok(())
}
