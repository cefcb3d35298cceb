//! HTTP/1.1 over a bare TCP socket: the test writes exactly the bytes it means (malformed on
//! purpose), then reads answers one at a time (several for a pipelined write) and whether the
//! server closed the connection.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;

/// A raw HTTP/1.1 client connection.
pub struct H1 {
    stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
}

/// One parsed answer.
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

// === impl H1 ===

impl H1 {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<H1> {
        Ok(Self::wrap(TcpStream::connect(addr).await?))
    }

    /// Connects with a small receive buffer, for a client that does not read.
    pub async fn connect_small_window(addr: SocketAddr) -> anyhow::Result<H1> {
        let socket = TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(4096)?;
        Ok(Self::wrap(socket.connect(addr).await?))
    }

    fn wrap(stream: TcpStream) -> H1 {
        H1 {
            stream,
            buf: Vec::new(),
            eof: false,
        }
    }

    /// Writes `bytes`. A server that answers and closes before reading them all makes the
    /// write fail; that is an outcome the caller reads from the answer and the close, so it is
    /// not an error here. A server that neither reads nor closes is bounded by `patience`.
    pub async fn send(&mut self, bytes: &[u8], patience: Duration) {
        let _ = tokio::time::timeout(patience, self.stream.write_all(bytes)).await;
    }

    /// Sends a plain `GET /c/<case>/after` on this connection and returns its status (0 when
    /// no answer came): a connection kept open after a refusal must still serve.
    pub async fn next_status(&mut self, case: &str, patience: Duration) -> anyhow::Result<u16> {
        let head = format!("GET /c/{case}/after HTTP/1.1\r\nHost: x.test\r\n\r\n");
        self.send(head.as_bytes(), patience).await;
        Ok(self.answer(patience).await?.map_or(0, |a| a.status))
    }

    /// The next whole answer, or `None` if the connection closed before one came.
    pub async fn answer(&mut self, patience: Duration) -> anyhow::Result<Option<Answer>> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some((answer, used)) = parse(&self.buf, self.eof)? {
                self.buf.drain(..used);
                return Ok(Some(answer));
            }
            if self.eof {
                return Ok(None);
            }
            self.fill(deadline)
                .await
                .context("no whole answer in time")?;
        }
    }

    /// Whether the server closes the connection within `patience` (bytes that come first
    /// are read and dropped, up to a bound).
    pub async fn closes(&mut self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        while !self.eof && self.buf.len() < 64 << 20 {
            if self.fill(deadline).await.is_err() {
                return false;
            }
        }
        self.eof
    }

    /// Bytes read and not yet parsed as answers.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Reads once; a reset counts as a close (it is one, after the answer).
    async fn fill(&mut self, deadline: Instant) -> anyhow::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) => self.eof = true,
            Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            Err(_) => bail!("timed out"),
        }
        Ok(())
    }
}

// === impl Answer ===

impl Answer {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Parses one answer from the front of `buf`: `Some((answer, bytes used))` when whole.
fn parse(buf: &[u8], eof: bool) -> anyhow::Result<Option<(Answer, usize)>> {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&buf[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not a status line: {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buf[end + 4..];
    let get = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    let body = if let Some(len) = get("content-length") {
        let len: usize = len.parse().context("content-length")?;
        if rest.len() < len {
            return Ok(None);
        }
        Some((rest[..len].to_vec(), len))
    } else if get("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
        dechunk(rest)?
    } else if status < 200 || status == 204 || status == 304 {
        Some((Vec::new(), 0))
    } else if eof {
        Some((rest.to_vec(), rest.len()))
    } else {
        None
    };
    Ok(body.map(|(body, used)| {
        let answer = Answer { status, body };
        (answer, end + 4 + used)
    }))
}

/// A whole chunked body at the front of `buf` (trailers skipped), with the bytes it used.
fn dechunk(buf: &[u8]) -> anyhow::Result<Option<(Vec<u8>, usize)>> {
    let (mut body, mut at) = (Vec::new(), 0);
    loop {
        let Some(eol) = find(&buf[at..], b"\r\n") else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&buf[at..at + eol]);
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).with_context(|| format!("chunk {line:?}"))?;
        at += eol + 2;
        if size == 0 {
            // Trailer lines, then the empty line.
            loop {
                let Some(eol) = find(&buf[at..], b"\r\n") else {
                    return Ok(None);
                };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        at += size + 2;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
