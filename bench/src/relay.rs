//! A plain TCP relay, the floor of a proxy hop: accept, connect to the upstream, copy bytes both
//! ways. No parsing, no routing, no pools; one read and one write per direction per request on a
//! keep-alive connection. Measured as the `tcp-relay` target so the report shows what the kernel's
//! loopback TCP and the wake-ups on the proxy's core cost before any proxy does any work.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

/// Relays every connection accepted on `listener` to `upstream` until the task is dropped.
pub async fn serve(listener: TcpListener, upstream: SocketAddr) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            relay(client, server).await;
        });
    }
}

async fn relay(mut client: TcpStream, mut server: TcpStream) {
    // As the proxies under test do: small messages go out at once.
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn bytes_cross_both_ways_unchanged() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_addr = upstream.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await.unwrap();
            buf.reverse();
            s.write_all(&buf).await.unwrap();
        });
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        tokio::spawn(serve(front, up_addr));
        let mut c = TcpStream::connect(front_addr).await.unwrap();
        c.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"olleh");
    }
}
