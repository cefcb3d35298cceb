//! Protocol upgrades (WebSocket-style `Connection: upgrade`) pass through ferry: after the
//! upstream's 101 both connections are spliced and bytes flow both ways.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{LISTENER, one_upstream, start};

#[tokio::test]
async fn upgraded_connection_carries_bytes_both_ways() -> anyhow::Result<()> {
    // An upstream that answers any request with 101 and then echoes every byte back
    // upper-cased, written on a raw socket so the test does not depend on a server library's
    // upgrade support.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream_addr = listener.local_addr()?;
    let upstream = tokio::spawn(async move {
        let Ok((mut conn, _)) = listener.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let reply =
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";
        if conn.write_all(reply).await.is_err() {
            return;
        }
        let mut buf = [0u8; 1024];
        while let Ok(n) = conn.read(&mut buf).await {
            if n == 0
                || conn
                    .write_all(&buf[..n].to_ascii_uppercase())
                    .await
                    .is_err()
            {
                break;
            }
        }
    });
    let ferry = start(&one_upstream(upstream_addr)).await?;
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
    upstream.abort();
    Ok(())
}
