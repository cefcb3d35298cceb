//! The access log over a mutual-TLS hop: the server sidecar's line names the caller's verified
//! SPIFFE ID (`peer_identity`); the client sidecar's line, for a plaintext caller, has none.

use ferry_integration::{Echo, HttpClient, eventually};
use serde_json::{Value, json};

use crate::support::{
    CLIENT_ID, INBOUND, OUTBOUND, PATIENCE, Pki, catch_all, cluster, config, listener,
    mesh_cluster, start, strict,
};

fn lines(path: &std::path::Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| Ok(serde_json::from_str(l)?)).collect()
}

#[tokio::test]
async fn the_server_sidecars_line_names_the_verified_caller() -> anyhow::Result<()> {
    let app = Echo::start("app").await?;
    let pki = Pki::new().await?;
    let (server_cert, client_cert) = (pki.server().await?, pki.client("client", CLIENT_ID).await?);
    let logs = tempfile::tempdir()?;
    let (server_log, client_log) = (
        logs.path().join("server.json"),
        logs.path().join("client.json"),
    );
    let mut server_cfg = config(
        Some(pki.identity(&server_cert)),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([cluster("app", app.addr())]),
    );
    server_cfg["access_log"] = json!([{ "path": server_log.to_str().unwrap() }]);
    let server = start(&server_cfg).await?;
    let mut client_cfg = config(
        Some(pki.identity(&client_cert)),
        json!([listener(OUTBOUND, None, catch_all("mesh"))]),
        json!([mesh_cluster("mesh", server.listener(INBOUND)?)]),
    );
    client_cfg["access_log"] = json!([{ "path": client_log.to_str().unwrap() }]);
    let client = start(&client_cfg).await?;
    let reply = HttpClient::http1()
        .get(client.listener(OUTBOUND)?, "/v2/models/resnet50/ready")
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (inner, outer) = eventually(PATIENCE, || async {
        let (s, c) = (lines(&server_log)?, lines(&client_log)?);
        anyhow::ensure!(
            s.len() == 1 && c.len() == 1,
            "{} and {} lines",
            s.len(),
            c.len()
        );
        Ok((s[0].clone(), c[0].clone()))
    })
    .await?;
    assert_eq!(inner["peer_identity"], CLIENT_ID, "{inner}");
    assert!(
        outer.get("peer_identity").is_none(),
        "a plaintext caller has no identity: {outer}"
    );
    assert_eq!(inner["request_id"], outer["request_id"]);
    assert_eq!(
        (inner["listener"].as_str(), outer["listener"].as_str()),
        (Some(INBOUND), Some(OUTBOUND))
    );
    Ok(())
}
