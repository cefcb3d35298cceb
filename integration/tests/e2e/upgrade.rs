//! Protocol upgrades (WebSocket-style `Connection: upgrade`) pass through ferry: after the
//! upstream's 101 both connections are spliced and bytes flow both ways.

use std::time::Duration;

use bytes::Bytes;
use ferry_integration::upstream::serve::serve;
use ferry_integration::upstream::{Protocols, RespBody};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{LISTENER, one_upstream, start};

#[tokio::test]
async fn upgraded_connection_carries_bytes_both_ways() -> anyhow::Result<()> {
    // An upstream that accepts `Upgrade: echo` and then echoes every byte back upper-cased.
    let upstream = serve(
        Protocols::Http1Only,
        |mut req: http::Request<hyper::body::Incoming>| async move {
            let on_upgrade = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                if let Ok(upgraded) = on_upgrade.await {
                    let mut io = TokioIo::new(upgraded);
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = io.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let upper = buf[..n].to_ascii_uppercase();
                        if io.write_all(&upper).await.is_err() {
                            break;
                        }
                    }
                }
            });
            let body: RespBody = Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync();
            let mut resp = Response::new(body);
            *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            resp.headers_mut()
                .insert("connection", "upgrade".parse().unwrap());
            resp.headers_mut()
                .insert("upgrade", "echo".parse().unwrap());
            resp
        },
    )
    .await?;
    let ferry = start(&one_upstream(upstream.addr())).await?;
    let addr = ferry.listener(LISTENER)?;

    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /ws HTTP/1.1\r\nHost: up\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
        .await?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await??;
        anyhow::ensure!(
            n == 1,
            "connection closed before the 101: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: echo"), "{head}");

    for msg in [&b"hello"[..], b"over the tunnel"] {
        stream.write_all(msg).await?;
        let mut got = vec![0u8; msg.len()];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut got)).await??;
        assert_eq!(got, msg.to_ascii_uppercase());
    }
    Ok(())
}
