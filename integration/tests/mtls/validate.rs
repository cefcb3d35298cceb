//! `ferry validate` reads the identity files named in the config and reports a bad set the
//! way it reports any config error: `file:line:col: field: problem`, exit code 64.

use ferry_integration::ferry::validate;
use ferry_integration::{ConfigDir, Workload, to_yaml};
use serde_json::json;

use crate::support::{INBOUND, Pki, SERVER_ID, catch_all, config, listener, strict};

/// A plain config directory whose identity names `server.crt` / `server.key` / `ca.crt` next
/// to the config file (relative paths), written from `cert_pem` / `key_pem`.
async fn config_dir(pki: &Pki, cert_pem: &str, key_pem: &str) -> anyhow::Result<ConfigDir> {
    let cfg = config(
        Some(json!({ "cert": "server.crt", "key": "server.key", "trust": ["ca.crt"] })),
        json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
        json!([{ "name": "app", "endpoints": ["127.0.0.1:9"] }]),
    );
    let dir = ConfigDir::plain(&to_yaml(&cfg)).await?;
    tokio::fs::write(dir.dir().join("server.crt"), cert_pem).await?;
    tokio::fs::write(dir.dir().join("server.key"), key_pem).await?;
    pki.ca.write(&dir.dir().join("ca.crt")).await?;
    Ok(dir)
}

/// True when some line of `output` reads `...<file>:<line>:<col>: ...` and mentions `needle`.
fn located(output: &str, file: &str, needle: &str) -> bool {
    output.lines().any(|l| {
        let Some(rest) = l.find(file).map(|i| &l[i + file.len()..]) else {
            return false;
        };
        let mut parts = rest.splitn(4, ':');
        let number = |s: Option<&str>| {
            s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        };
        parts.next() == Some("")
            && number(parts.next())
            && number(parts.next())
            && l.contains(needle)
    })
}

#[tokio::test]
async fn good_identity_validates() -> anyhow::Result<()> {
    let pki = Pki::new().await?;
    let server = pki.ca.issue(&Workload::spiffe(SERVER_ID)).await?;
    let dir = config_dir(&pki, &server.cert_pem, &server.key_pem).await?;
    let (code, out) = validate(&[dir.path()]).await?;
    assert_eq!(code, 0, "{out}");
    Ok(())
}

#[tokio::test]
async fn key_that_does_not_match_the_cert() -> anyhow::Result<()> {
    let pki = Pki::new().await?;
    let server = pki.ca.issue(&Workload::spiffe(SERVER_ID)).await?;
    let other = pki.ca.issue(&Workload::spiffe(SERVER_ID)).await?;
    let dir = config_dir(&pki, &server.cert_pem, &other.key_pem).await?;
    let (code, out) = validate(&[dir.path()]).await?;
    assert_eq!(code, 64, "{out}");
    assert!(
        located(&out, "ferry.yaml", "identity"),
        "no file:line:col error naming identity:\n{out}"
    );
    assert!(
        out.to_lowercase().contains("match"),
        "the error should say the key does not match:\n{out}"
    );
    Ok(())
}

#[tokio::test]
async fn cert_without_a_spiffe_id() -> anyhow::Result<()> {
    let pki = Pki::new().await?;
    let server = pki
        .ca
        .issue(&Workload::anonymous().dns("triton.models.svc"))
        .await?;
    let dir = config_dir(&pki, &server.cert_pem, &server.key_pem).await?;
    let (code, out) = validate(&[dir.path()]).await?;
    assert_eq!(code, 64, "{out}");
    assert!(
        located(&out, "ferry.yaml", "identity.cert"),
        "no file:line:col error at identity.cert:\n{out}"
    );
    Ok(())
}

#[tokio::test]
async fn expired_cert_and_missing_trust_file() -> anyhow::Result<()> {
    let pki = Pki::new().await?;
    let server = pki.ca.issue(&Workload::spiffe(SERVER_ID).expired()).await?;
    let dir = config_dir(&pki, &server.cert_pem, &server.key_pem).await?;
    tokio::fs::remove_file(dir.dir().join("ca.crt")).await?;
    let (code, out) = validate(&[dir.path()]).await?;
    assert_eq!(code, 64, "{out}");
    assert!(
        located(&out, "ferry.yaml", "identity.cert"),
        "expired cert not reported:\n{out}"
    );
    assert!(
        located(&out, "ferry.yaml", "identity.trust"),
        "missing trust file not reported:\n{out}"
    );
    Ok(())
}
