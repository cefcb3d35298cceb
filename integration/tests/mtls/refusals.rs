//! Every kind of refused client on a strict listener: the connection is closed, the refusal is
//! counted under its reason, nothing reaches the app, and a good client on another connection
//! is still served. Clients are curl and openssl where they can express the case, the rustls
//! test client where they refuse to (a certificate with someone else's key), and raw TCP for
//! bytes no TLS library would send.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ferry_integration::{Echo, Ferry, Workload, peers};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::{
    CLIENT_ID, Cert, INBOUND, Pki, catch_all, cluster, config, counter, counter_reaches, listener,
    path_str, start, strict,
};

/// A strict server sidecar (handshake timeout 1s) and a client that it admits.
struct Server {
    pki: Pki,
    echo: Echo,
    ferry: Ferry,
    good: Cert,
    /// Requests the good client has made: all the app may have seen.
    served: AtomicU64,
}

impl Server {
    async fn start() -> anyhow::Result<Server> {
        let echo = Echo::start("app").await?;
        let pki = Pki::new().await?;
        let server_cert = pki.server().await?;
        let good = pki.client("good", CLIENT_ID).await?;
        let ferry = start(&config(
            Some(pki.identity(&server_cert)),
            json!([listener(INBOUND, Some(strict()), catch_all("app"))]),
            json!([cluster("app", echo.addr())]),
        ))
        .await?;
        Ok(Server {
            pki,
            echo,
            ferry,
            good,
            served: AtomicU64::new(0),
        })
    }

    fn addr(&self) -> anyhow::Result<SocketAddr> {
        self.ferry.listener(INBOUND)
    }

    fn url(&self) -> anyhow::Result<String> {
        Ok(format!(
            "https://127.0.0.1:{}/v2/models/m/infer",
            self.addr()?.port()
        ))
    }

    async fn failures(&self, reason: &str) -> anyhow::Result<f64> {
        let labels = [("listener", INBOUND), ("reason", reason)];
        counter(&self.ferry, "ferry_tls_handshake_failures_total", &labels).await
    }

    /// curl with `extra` arguments must fail; returns its stderr.
    async fn curl_refused(&self, extra: &[String]) -> anyhow::Result<String> {
        let mut args: Vec<String> = vec!["-sS".into(), "--max-time".into(), "10".into()];
        args.extend_from_slice(extra);
        args.push(self.url()?);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = peers::run_curl(&args).await?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success(),
            "curl {args:?} was served: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        Ok(stderr)
    }

    /// The refusal was counted under `reason` (one more than `before`), nothing reached the
    /// app, and the good client is served on a new connection.
    async fn assert_refused(&self, reason: &str, before: f64) -> anyhow::Result<()> {
        counter_reaches(
            &self.ferry,
            "ferry_tls_handshake_failures_total",
            &[("listener", INBOUND), ("reason", reason)],
            before + 1.0,
        )
        .await?;
        let served = self.served.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            self.echo.requests(),
            served,
            "a refused client reached the app"
        );
        let mut args = vec!["-sS".to_owned(), "--max-time".into(), "10".into()];
        args.extend(self.good.curl_args(&self.pki.ca_path()));
        args.push(self.url()?);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = peers::run_curl(&args).await?;
        assert!(
            out.status.success(),
            "the good client failed after a {reason} refusal: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.ferry.logs()
        );
        Ok(())
    }

    /// Refuses `cert` (presented by curl) with `reason`.
    async fn refuses_cert(&self, cert: &Cert, reason: &str) -> anyhow::Result<()> {
        let before = self.failures(reason).await?;
        self.curl_refused(&cert.curl_args(&self.pki.ca_path()))
            .await?;
        self.assert_refused(reason, before).await
    }
}

#[tokio::test]
async fn expired_and_not_yet_valid_client_certs() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let expired = s
        .pki
        .issue("expired", &Workload::spiffe(CLIENT_ID).expired())
        .await?;
    s.refuses_cert(&expired, "expired").await?;
    let early = s
        .pki
        .issue("early", &Workload::spiffe(CLIENT_ID).not_yet_valid())
        .await?;
    s.refuses_cert(&early, "expired").await
}

#[tokio::test]
async fn client_cert_from_an_unknown_ca() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let other = Pki::named("another mesh's CA").await?;
    let stranger = other.client("stranger", CLIENT_ID).await?;
    // openssl s_client this time, in TLS 1.2, where the server checks the client's certificate
    // inside the handshake, so s_client sees the alert before it exits.
    let connect = s.addr()?.to_string();
    let s_client = |cert: &Cert, ca: &Path| {
        let args = [
            "s_client".to_owned(),
            "-tls1_2".into(),
            "-connect".into(),
            connect.clone(),
            "-cert".into(),
            path_str(&cert.files.cert),
            "-key".into(),
            path_str(&cert.files.key),
            "-CAfile".into(),
            path_str(ca),
        ];
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = peers::run_openssl(&args).await?;
            Ok::<_, anyhow::Error>(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let before = s.failures("unknown_ca").await?;
    let text = s_client(&stranger, &s.pki.ca_path()).await?;
    assert!(
        text.contains("alert unknown ca"),
        "openssl s_client said:\n{text}"
    );
    // The same client with a certificate from ferry's CA completes a TLS 1.2 handshake.
    let text = s_client(&s.good, &s.pki.ca_path()).await?;
    assert!(
        text.contains("Protocol  : TLSv1.2") && text.contains("Verify return code: 0 (ok)"),
        "TLS 1.2 with a good certificate failed:\n{text}"
    );
    s.assert_refused("unknown_ca", before).await
}

#[tokio::test]
async fn client_cert_from_an_impostor_ca_with_the_trusted_name() -> anyhow::Result<()> {
    let s = Server::start().await?;
    // Same subject name as ferry's CA, other key: webpki picks the trusted anchor by name and
    // the chain's signature does not verify against it.
    let impostor = Pki::new().await?;
    let forged = impostor.client("forged", CLIENT_ID).await?;
    s.refuses_cert(&forged, "bad_signature").await
}

#[tokio::test]
async fn client_identities_ferry_does_not_accept() -> anyhow::Result<()> {
    let s = Server::start().await?;
    for (stem, workload) in [
        (
            "foreign",
            Workload::spiffe("spiffe://evil.local/ns/prep/sa/client"),
        ),
        ("no-uri", Workload::anonymous().dns("client.prep.svc")),
        (
            "two-uris",
            Workload::spiffe(CLIENT_ID).uri("spiffe://cluster.local/ns/x/sa/y"),
        ),
        (
            "not-spiffe",
            Workload::spiffe("https://cluster.local/ns/prep/sa/client"),
        ),
    ] {
        let cert = s.pki.issue(stem, &workload).await?;
        s.refuses_cert(&cert, "bad_identity")
            .await
            .with_context(|| format!("client cert {stem}"))?;
    }
    Ok(())
}

#[tokio::test]
async fn client_without_a_certificate() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let before = s.failures("no_client_cert").await?;
    s.curl_refused(&["--cacert".into(), path_str(&s.pki.ca_path())])
        .await?;
    s.assert_refused("no_client_cert", before).await
}

#[tokio::test]
async fn client_cert_with_someone_elses_key() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let other = s.pki.client("other", CLIENT_ID).await?;
    // curl and openssl check the pair before connecting and refuse to send it.
    let local = peers::run_openssl(&[
        "s_client",
        "-connect",
        &s.addr()?.to_string(),
        "-cert",
        &path_str(&s.good.files.cert),
        "-key",
        &path_str(&other.files.key),
    ])
    .await?;
    assert!(
        String::from_utf8_lossy(&local.stderr).contains("key values mismatch"),
        "openssl no longer refuses a mismatched pair locally: {}",
        String::from_utf8_lossy(&local.stderr)
    );
    // So the rustls client presents the good certificate and signs with the other key.
    let before = s.failures("bad_signature").await?;
    let client = ferry_integration::TlsClient::new(
        s.pki.ca.pem(),
        &s.good.issued.cert_pem,
        &other.issued.key_pem,
    )?;
    let result = client.get(s.addr()?, "/x", &[]).await;
    assert!(result.is_err(), "served with the wrong key: {result:?}");
    s.assert_refused("bad_signature", before).await
}

#[tokio::test]
async fn client_that_does_not_trust_ferry() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let other = Pki::named("another mesh's CA").await?;
    let before = s.failures("peer_refused").await?;
    // The good certificate, but checking ferry's against another CA.
    s.curl_refused(&s.good.curl_args(&other.ca_path())).await?;
    s.assert_refused("peer_refused", before).await
}

#[tokio::test]
async fn rsa_client_cert_is_accepted() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let rsa = s
        .pki
        .issue("rsa", &Workload::spiffe(CLIENT_ID).rsa())
        .await?;
    let reply = s.pki.tls_client(&rsa)?.get(s.addr()?, "/rsa", &[]).await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    Ok(())
}

/// Writes `bytes` on a new connection and waits for ferry to close it; returns how long that
/// took.
async fn closed_after(addr: SocketAddr, bytes: &[u8]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tcp = TcpStream::connect(addr).await?;
    tcp.write_all(bytes).await?;
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await {
            Err(_) => anyhow::bail!("ferry kept the connection open for 10s"),
            Ok(Ok(0) | Err(_)) => return Ok(started.elapsed()),
            // An alert record before the close is fine.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn garbage_after_the_handshake_byte() -> anyhow::Result<()> {
    let s = Server::start().await?;
    let before = s.failures("protocol").await?;
    // A handshake record header, then a body that is no handshake message.
    let mut junk = vec![0x16, 0x03, 0x01, 0x00, 0x20];
    junk.extend_from_slice(&[0xde; 32]);
    closed_after(s.addr()?, &junk).await?;
    s.assert_refused("protocol", before).await?;
    // And a record header that is not TLS at all.
    let before = s.failures("protocol").await?;
    closed_after(s.addr()?, b"\x16garbage garbage garbage").await?;
    s.assert_refused("protocol", before).await
}

#[tokio::test]
async fn stalled_and_silent_handshakes_time_out() -> anyhow::Result<()> {
    let s = Server::start().await?;
    for (what, bytes) in [("stalled after 0x16", &[0x16u8][..]), ("silent", &[][..])] {
        let before = s.failures("timeout").await?;
        let took = closed_after(s.addr()?, bytes).await?;
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(5),
            "{what}: closed after {took:?}, handshake_timeout is 1s"
        );
        s.assert_refused("timeout", before)
            .await
            .with_context(|| what.to_owned())?;
    }
    Ok(())
}
