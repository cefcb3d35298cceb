//! The gRPC status as headers (trailers, or the headers of a trailers-only answer):
//! `grpc-status` read with its `grpc-message`, and that header's encoding (bytes outside
//! printable ASCII, and `%`, as `%XX`); shared by the readers of gRPC upstreams' answers
//! (translated and transcoded) and the error renderer, which writes it.

use http::HeaderMap;

/// gRPC's grpc-message encoding: bytes outside printable ASCII, and `%`, as `%XX`.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes a `grpc-message` value (invalid escapes are kept as they are).
pub(crate) fn percent_decode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The gRPC status in `headers` (trailers, or the headers of a trailers-only answer), message
/// percent-decoded.
pub(crate) fn grpc_status(headers: &HeaderMap) -> Option<(u32, String)> {
    let code = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    Some((code, message))
}
