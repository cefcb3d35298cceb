//! Clients no one here wrote, through ferry: curl (HTTP/1.1 and h2c prior knowledge) and
//! Python grpcio (installed, pinned, by `integration/peers/install.sh`).

use ferry_integration::{Echo, GrpcUpstream, peers};

use crate::support::{LISTENER, one_upstream, start};

#[tokio::test]
async fn curl_http1_and_http2_prior_knowledge() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let url = format!("http://{}/curl?x=1", ferry.listener(LISTENER)?);
    for (flag, status_line) in [
        ("--http1.1", "HTTP/1.1 200"),
        ("--http2-prior-knowledge", "HTTP/2 200"),
    ] {
        let out = peers::run_curl(&[
            "-sS",
            "-i",
            "--max-time",
            "10",
            flag,
            "-H",
            "x-from: curl",
            &url,
        ])
        .await?;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "curl {flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.starts_with(status_line), "curl {flag} got:\n{text}");
        assert!(
            text.to_ascii_lowercase().contains("\nx-request-id: "),
            "no x-request-id:\n{text}"
        );
        let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
        let seen: serde_json::Value = serde_json::from_str(body)?;
        assert_eq!(seen["path"], "/curl?x=1");
        assert_eq!(seen["headers"]["x-from"], "curl");
    }
    assert_eq!(echo.requests(), 2);
    Ok(())
}

#[tokio::test]
async fn python_grpcio_calls_through_ferry() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("py-target").await?;
    let ferry = start(&one_upstream(up.addr())).await?;
    let out =
        peers::grpcio_client(ferry.listener(LISTENER)?, &["--message", "from python"]).await?;
    assert_eq!(out["grpcio"], "1.76.0");
    assert_eq!(out["unary"]["code"], "OK");
    assert_eq!(out["unary"]["message"], "from python");
    assert_eq!(out["unary"]["instance"], "py-target");
    assert_eq!(
        out["server_stream"],
        serde_json::json!(["from python#1", "from python#2", "from python#3"])
    );
    assert_eq!(up.calls(), 2);
    Ok(())
}
