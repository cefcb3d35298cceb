//! Header handling on the hop: hop-by-hop removal (RFC 9110 §7.6.1), forwarding headers and
//! request ids.

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CONNECTION, HeaderName, HeaderValue, TE, TRANSFER_ENCODING, UPGRADE};

/// `x-request-id`.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static FORWARDED: HeaderName = HeaderName::from_static("forwarded");

/// Removes hop-by-hop headers: the fixed list plus every name listed in `Connection`.
/// `te: trailers` survives (gRPC needs it end to end). When `keep_upgrade` is set (a WebSocket
/// handshake being forwarded), `Connection: upgrade` and `Upgrade` are kept.
pub fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    // Most requests carry none of these: one pass over the names (standard ones compare as
    // enum tags) is cheaper than the dozen hashed removals below.
    if !keep_upgrade && !headers.keys().any(is_hop_by_hop) {
        return;
    }
    let listed: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .filter(|name| !(keep_upgrade && name == UPGRADE))
        .collect();
    for name in listed {
        if name != TE {
            headers.remove(&name);
        }
    }
    let te_trailers = headers
        .get(TE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("trailers"))
        });
    headers.remove(TE);
    if te_trailers {
        headers.insert(TE, HeaderValue::from_static("trailers"));
    }
    for name in &ALWAYS_HOP_BY_HOP {
        headers.remove(name);
    }
    if keep_upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    } else {
        headers.remove(CONNECTION);
        headers.remove(UPGRADE);
    }
}

/// Hop-by-hop whatever `Connection` says (`Connection`, `TE` and `Upgrade` have their own rules).
static ALWAYS_HOP_BY_HOP: [HeaderName; 6] = [
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    TRANSFER_ENCODING,
    http::header::PROXY_AUTHENTICATE,
    http::header::PROXY_AUTHORIZATION,
    http::header::TRAILER,
];

/// Whether `name` is hop-by-hop by itself (names listed in `Connection` need `Connection`).
/// Runs on every header of every request and answer: one string match (length first, then
/// bytes) instead of nine `HeaderName` comparisons, ~300 instructions per message by callgrind.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "te"
            | "upgrade"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "trailer"
    )
}

pub use ferry_filters::connection::ClientAddr;

/// Appends the client address to `x-forwarded-for` and a `forwarded` element (RFC 7239).
pub fn append_forwarded(
    headers: &mut HeaderMap,
    client: &ClientAddr,
    proto: &str,
    host: Option<&str>,
) {
    // Header values are made from owned buffers (`from_maybe_shared`), not copied: two
    // allocations fewer on every request (dhat).
    let xff = match headers.get(&X_FORWARDED_FOR).and_then(|v| v.to_str().ok()) {
        Some(existing) => {
            HeaderValue::from_maybe_shared(Bytes::from(format!("{existing}, {}", client.ip()))).ok()
        }
        None => client.ip_header().cloned(),
    };
    if let Some(v) = xff {
        headers.insert(X_FORWARDED_FOR.clone(), v);
    }
    let host = host.filter(|host| {
        host.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b';' && b != b',')
    });
    // Exactly sized: a `Vec` whose length is its capacity becomes `Bytes` without another
    // allocation.
    let len = client.forwarded_for().len()
        + ";proto=".len()
        + proto.len()
        + host.map_or(0, |h| ";host=\"\"".len() + h.len());
    let mut element = Vec::with_capacity(len);
    element.extend_from_slice(client.forwarded_for().as_bytes());
    element.extend_from_slice(b";proto=");
    element.extend_from_slice(proto.as_bytes());
    if let Some(host) = host {
        element.extend_from_slice(b";host=\"");
        element.extend_from_slice(host.as_bytes());
        element.push(b'"');
    }
    if let Ok(v) = HeaderValue::from_maybe_shared(Bytes::from(element)) {
        headers.append(FORWARDED.clone(), v);
    }
}

/// A random request id in UUID v4 text form. Written by hand into a stack buffer: this runs
/// for nearly every request and `format!` showed up in profiles.
pub fn new_request_id() -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits: u128 = rand::random();
    // Version 4, variant 10xx (RFC 9562).
    let bits = (bits & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let mut out = [0u8; 36];
    let mut nibble = 0;
    for (i, slot) in out.iter_mut().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            *slot = b'-';
            continue;
        }
        let shift = 124 - 4 * nibble;
        *slot = HEX[((bits >> shift) & 0xf) as usize];
        nibble += 1;
    }
    let mut value =
        HeaderValue::from_bytes(&out).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    // Unique per request: HTTP/2's HPACK would add each one to the connection's header table,
    // evicting entries that do repeat (user-agent, content-type, forwarded ...). Sensitive
    // values are sent literally and never indexed.
    value.set_sensitive(true);
    value
}

pub use ferry_filters::failure::is_grpc;

/// Whether an HTTP/1.1 request asks to switch protocols (e.g. WebSocket).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(UPGRADE)
        && headers
            .get_all(CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// The authority the caller addressed: the URI's (HTTP/2, absolute-form) or the `Host` header.
pub fn authority_of<B>(req: &http::Request<B>) -> Option<std::borrow::Cow<'_, str>> {
    req.uri()
        .authority()
        .map(|a| std::borrow::Cow::Borrowed(a.as_str()))
        .or_else(|| {
            req.headers()
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(std::borrow::Cow::Borrowed)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_removed_te_trailers_kept() {
        let mut h = HeaderMap::new();
        h.insert(CONNECTION, HeaderValue::from_static("close, x-secret"));
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(TE, HeaderValue::from_static("trailers, deflate"));
        h.insert("x-app", HeaderValue::from_static("kept"));
        strip_hop_by_hop(&mut h, false);
        assert!(h.get("x-secret").is_none());
        assert!(h.get(CONNECTION).is_none());
        assert!(h.get("keep-alive").is_none());
        assert_eq!(h[TE], "trailers");
        assert_eq!(h["x-app"], "kept");
    }

    #[test]
    fn each_hop_by_hop_header_alone_is_removed() {
        for name in [
            "connection",
            "te",
            "transfer-encoding",
            "upgrade",
            "trailer",
            "proxy-authenticate",
            "proxy-authorization",
            "keep-alive",
            "proxy-connection",
        ] {
            let mut h = HeaderMap::new();
            h.insert("x-kept", HeaderValue::from_static("1"));
            h.insert(HeaderName::from_static(name), HeaderValue::from_static("x"));
            strip_hop_by_hop(&mut h, false);
            assert!(!h.contains_key(name), "{name} survived");
            assert!(h.contains_key("x-kept"));
        }
        let mut h = HeaderMap::new();
        h.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h, false);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn forwarded_headers_append() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        append_forwarded(
            &mut h,
            &ClientAddr::new("127.0.0.1:5000".parse().unwrap()),
            "http",
            Some("m.svc"),
        );
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(h["forwarded"], "for=127.0.0.1;proto=http;host=\"m.svc\"");
    }

    #[test]
    fn request_ids_are_uuid_shaped_and_distinct() {
        let a = new_request_id();
        let b = new_request_id();
        assert_ne!(a, b);
        let s = a.to_str().unwrap();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "4");
        // Never indexed by HPACK: each id is used once.
        assert!(a.is_sensitive() && b.is_sensitive());
    }
}
