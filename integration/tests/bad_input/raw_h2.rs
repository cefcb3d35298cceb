//! HTTP/2 frames written by hand: a conforming client library cannot send the floods and
//! malformed frames these cases need. Header blocks use HPACK literals without Huffman coding
//! (plus, for the HPACK bomb, one indexed literal referenced many times). Reading decodes just
//! enough of the server's frames: each stream's `:status`, RST_STREAM and GOAWAY codes, DATA
//! byte counts, and whether the connection closed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types used here (RFC 9113 §6).
pub const DATA: u8 = 0x0;
/// HEADERS.
pub const HEADERS: u8 = 0x1;
/// RST_STREAM.
pub const RST_STREAM: u8 = 0x3;
/// SETTINGS.
pub const SETTINGS: u8 = 0x4;
/// GOAWAY.
pub const GOAWAY: u8 = 0x7;
/// WINDOW_UPDATE.
pub const WINDOW_UPDATE: u8 = 0x8;
/// CONTINUATION.
pub const CONTINUATION: u8 = 0x9;
/// END_STREAM flag (DATA, HEADERS); ACK for SETTINGS.
pub const END_STREAM: u8 = 0x1;
/// END_HEADERS flag.
pub const END_HEADERS: u8 = 0x4;
/// SETTINGS_INITIAL_WINDOW_SIZE.
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// Error code CANCEL.
pub const CANCEL: u32 = 0x8;
/// Error code PROTOCOL_ERROR.
pub const PROTOCOL_ERROR: u32 = 0x1;
/// Error code ENHANCE_YOUR_CALM.
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// What the server has sent so far on one connection.
#[derive(Debug, Default)]
pub struct Seen {
    /// `:status` per stream (0: a status this decoder cannot read, e.g. dynamic-table).
    pub statuses: BTreeMap<u32, u16>,
    /// RST_STREAM error code per stream.
    pub resets: BTreeMap<u32, u32>,
    /// DATA payload bytes per stream.
    pub data: BTreeMap<u32, u64>,
    /// The last GOAWAY's error code.
    pub goaway: Option<u32>,
    /// The server closed (or reset) the connection.
    pub closed: bool,
}

/// A raw HTTP/2 client connection.
pub struct H2 {
    read: OwnedReadHalf,
    write: Option<OwnedWriteHalf>,
    buf: Vec<u8>,
    /// What came back so far.
    pub seen: Seen,
}

// === impl H2 ===

impl H2 {
    /// Connects, sends the preface and a SETTINGS frame with `settings`.
    pub async fn connect(addr: SocketAddr, settings: &[(u16, u32)]) -> anyhow::Result<H2> {
        Self::start(TcpStream::connect(addr).await?, settings).await
    }

    /// [`H2::connect`] with a small receive buffer, for a client that does not read.
    pub async fn connect_small_window(
        addr: SocketAddr,
        settings: &[(u16, u32)],
    ) -> anyhow::Result<H2> {
        let socket = TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(4096)?;
        Self::start(socket.connect(addr).await?, settings).await
    }

    async fn start(stream: TcpStream, settings: &[(u16, u32)]) -> anyhow::Result<H2> {
        let (read, mut write) = stream.into_split();
        let mut hello = PREFACE.to_vec();
        hello.extend(settings_frame(settings));
        write.write_all(&hello).await?;
        Ok(H2 {
            read,
            write: Some(write),
            buf: Vec::new(),
            seen: Seen::default(),
        })
    }

    /// Writes `bytes`; an error means the server stopped reading or closed.
    pub async fn send(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        match &mut self.write {
            Some(w) => Ok(w.write_all(bytes).await?),
            None => anyhow::bail!("the writer was taken"),
        }
    }

    /// Hands the write half to a flooding task; SETTINGS are no longer acked after this.
    pub fn take_writer(&mut self) -> Option<OwnedWriteHalf> {
        self.write.take()
    }

    /// Reads frames until `done` holds, the connection closes, or `patience` runs out;
    /// returns whether `done` held.
    pub async fn read_until(&mut self, patience: Duration, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + patience;
        loop {
            while let Some((kind, flags, stream, payload)) = self.next_frame() {
                self.on_frame(kind, flags, stream, &payload).await;
            }
            if done(&self.seen) {
                return true;
            }
            if self.seen.closed {
                return false;
            }
            let mut chunk = [0u8; 16 * 1024];
            match tokio::time::timeout_at(deadline, self.read.read(&mut chunk)).await {
                Ok(Ok(0) | Err(_)) => self.seen.closed = true,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => return false,
            }
        }
    }

    fn next_frame(&mut self) -> Option<(u8, u8, u32, Vec<u8>)> {
        let head = self.buf.get(..9)?;
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let payload = self.buf.get(9..9 + len)?.to_vec();
        self.buf.drain(..9 + len);
        Some((kind, flags, stream, payload))
    }

    async fn on_frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let code = |p: &[u8], at: usize| {
            p.get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        match kind {
            DATA => *self.seen.data.entry(stream).or_default() += payload.len() as u64,
            HEADERS if !self.seen.statuses.contains_key(&stream) => {
                let status = status_of(payload).unwrap_or(0);
                self.seen.statuses.insert(stream, status);
            }
            RST_STREAM => {
                if let Some(c) = code(payload, 0) {
                    self.seen.resets.insert(stream, c);
                }
            }
            GOAWAY => self.seen.goaway = code(payload, 4),
            SETTINGS if flags & END_STREAM == 0 => {
                // Acknowledged as a client must; not once a flood owns the writer.
                if let Some(w) = &mut self.write {
                    let _ = w.write_all(&frame(SETTINGS, END_STREAM, 0, &[])).await;
                }
            }
            _ => {}
        }
    }
}

/// One frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len())
        .unwrap_or(u32::MAX)
        .to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A SETTINGS frame.
pub fn settings_frame(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in pairs {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &payload)
}

/// RST_STREAM with `code`.
pub fn rst_stream(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// WINDOW_UPDATE by `increment`.
pub fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// The header block of `GET path` for `authority`, then `extra` fields, all literal.
pub fn get_block(path: &str, authority: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    // Static table: 2 = `:method GET`, 6 = `:scheme http`; names 1 = `:authority`, 4 = `:path`.
    let mut out = vec![0x82, 0x86];
    literal_indexed_name(&mut out, 4, path);
    literal_indexed_name(&mut out, 1, authority);
    for (name, value) in extra {
        literal(&mut out, name, value);
    }
    out
}

/// A literal field without indexing whose name is static-table entry `index`.
pub fn literal_indexed_name(out: &mut Vec<u8>, index: usize, value: &str) {
    int(out, 4, 0x00, index);
    string(out, value.as_bytes());
}

/// A literal field without indexing, new name.
pub fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x00);
    string(out, name.as_bytes());
    string(out, value.as_bytes());
}

/// A literal field with incremental indexing, new name: it enters the dynamic table.
pub fn literal_indexed(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(0x40);
    string(out, name.as_bytes());
    string(out, value.as_bytes());
}

/// An indexed field (62 = the newest dynamic-table entry).
pub fn indexed(out: &mut Vec<u8>, index: usize) {
    int(out, 7, 0x80, index);
}

fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    int(out, 7, 0x00, bytes.len());
    out.extend_from_slice(bytes);
}

/// An HPACK integer with an `bits`-bit prefix (RFC 7541 §5.1).
fn int(out: &mut Vec<u8>, bits: u32, flags: u8, value: usize) {
    let max = (1usize << bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// `:status` from the first field of a response header block: a static-table index
/// (8..=14), or a literal with name index 8 whose value is plain or Huffman-coded digits.
fn status_of(block: &[u8]) -> Option<u16> {
    let first = *block.first()?;
    if first & 0x80 != 0 {
        let status = [200, 204, 206, 304, 400, 404, 500];
        return status
            .get(usize::from(first & 0x7f).checked_sub(8)?)
            .copied();
    }
    let name_index = if first & 0x40 != 0 {
        first & 0x3f
    } else {
        first & 0x0f
    };
    if name_index != 8 {
        return None;
    }
    let len = usize::from(block.get(1)? & 0x7f);
    let value = block.get(2..2 + len)?;
    let text = if block[1] & 0x80 != 0 {
        huffman_digits(value)?
    } else {
        String::from_utf8(value.to_vec()).ok()?
    };
    text.parse().ok()
}

/// Decodes Huffman-coded digits (RFC 7541 Appendix B: `0`-`2` are 5-bit codes 0-2, `3`-`9`
/// are 6-bit codes 0x19-0x1f); all a status needs.
fn huffman_digits(bytes: &[u8]) -> Option<String> {
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let (mut out, mut at) = (String::new(), 0);
    while out.len() < 3 && at + 5 <= bits.len() {
        let code5 = bits[at..at + 5].iter().fold(0u8, |acc, b| acc << 1 | b);
        if code5 <= 2 {
            out.push(char::from(b'0' + code5));
            at += 5;
            continue;
        }
        let code6 = (code5 << 1) | *bits.get(at + 5)?;
        if !(0x19..=0x1f).contains(&code6) {
            return None;
        }
        out.push(char::from(b'3' + code6 - 0x19));
        at += 6;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_status_digits_decode() {
        // "503": 011011 00000 011001, padded with ones.
        assert_eq!(
            huffman_digits(&[0b0110_1100, 0b0000_1100, 0b1111_1111]),
            Some("503".into())
        );
        assert_eq!(status_of(&[0x8c]), Some(400));
        assert_eq!(status_of(&[0x08, 0x03, b'4', b'3', b'1']), Some(431));
    }
}
