//! The request body's framing and size: requests whose framing is ambiguous (request
//! smuggling, RFC 9112 §6.3) are refused, a declared length over the listener's
//! `max_request_body_bytes` is refused before a byte is read, and a body that streams past the
//! limit fails with [`BodyTooLarge`] (413 / RESOURCE_EXHAUSTED) wherever it is being read.

use std::future::Ready;
use std::task::{Context, Poll};

use futures_util::future::Either;

use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::body::{BodyTooLarge, BoxError, ProxyBody};
use crate::failure::Failure;

/// The listener found this HTTP/1.1 request's head ambiguous (set by the listener, which
/// reads the bytes; answered here, inside the error renderer).
#[derive(Debug, Clone, Copy)]
pub struct AmbiguousFraming(pub &'static str);

/// Tower layer checking framing and bounding the body.
#[derive(Debug, Clone, Copy)]
pub struct RequestBodyLayer {
    limit: Option<u64>,
}

/// The service made by [`RequestBodyLayer`].
#[derive(Debug, Clone)]
pub struct RequestBody<S> {
    inner: S,
    limit: Option<u64>,
}

impl RequestBodyLayer {
    /// Bodies of at most `limit` bytes (`None`: unbounded).
    pub fn new(limit: Option<u64>) -> Self {
        RequestBodyLayer { limit }
    }
}

impl<S> tower::Layer<S> for RequestBodyLayer {
    type Service = RequestBody<S>;

    fn layer(&self, inner: S) -> RequestBody<S> {
        RequestBody {
            inner,
            limit: self.limit,
        }
    }
}

// === impl RequestBody ===

impl<S> tower::Service<Request<ProxyBody>> for RequestBody<S>
where
    S: tower::Service<Request<ProxyBody>, Response = Response<ProxyBody>, Error = BoxError>,
{
    type Response = Response<ProxyBody>;
    type Error = BoxError;
    type Future = Either<S::Future, Ready<Result<Response<ProxyBody>, BoxError>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ProxyBody>) -> Self::Future {
        match check(req, self.limit) {
            Ok(req) => Either::Left(self.inner.call(req)),
            Err(failure) => Either::Right(std::future::ready(Err(failure.into()))),
        }
    }
}

fn check(req: Request<ProxyBody>, limit: Option<u64>) -> Result<Request<ProxyBody>, Failure> {
    if let Some(AmbiguousFraming(reason)) = req.extensions().get() {
        return Err(Failure::AmbiguousFraming(reason));
    }
    check_framing(req.headers())?;
    let req = check_authority(req)?;
    let Some(limit) = limit else {
        return Ok(req);
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(Failure::BodyTooLarge { limit });
    }
    Ok(req.map(|body| bounded(body, limit)))
}

/// `body`, failing with [`BodyTooLarge`] (which says the limit, unlike `Limited`'s own error)
/// once more than `limit` bytes have passed.
pub fn bounded(body: ProxyBody, limit: u64) -> ProxyBody {
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    Limited::new(body, cap)
        .map_err(move |e| -> BoxError {
            if e.is::<LengthLimitError>() {
                Box::new(BodyTooLarge { limit })
            } else {
                e
            }
        })
        .boxed_unsync()
}

/// One authority per request, as routing and the upstream must both see it:
/// - at most one `Host` (RFC 9112 §3.2: a server MUST answer 400 to more than one; routing by
///   the first while the upstream reads the last would split the two);
/// - HTTP/1.1 needs `Host` (RFC 9112 §3.2: a server MUST answer 400 without it; HTTP/1.0 may
///   omit it), and a non-empty one must be a valid authority (400 otherwise, same section);
/// - an absolute-form target's authority wins over `Host` (RFC 9112 §3.2.2), so `Host` is
///   rewritten to it;
/// - HTTP/2 and HTTP/3's `:authority` and a `host` header that differ make the request
///   malformed (RFC 9113 §8.3.1): 400, rather than routing by one and forwarding the other.
fn check_authority(mut req: Request<ProxyBody>) -> Result<Request<ProxyBody>, Failure> {
    let mut hosts = req.headers().get_all(HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(Failure::BadRequest("more than one Host header".into()));
    }
    match req.version() {
        http::Version::HTTP_11 | http::Version::HTTP_10 => {
            if host.is_some_and(|h| !valid_host(h)) {
                return Err(Failure::BadRequest("invalid Host header".into()));
            }
            if let Some(authority) = req.uri().authority() {
                let same = host.is_some_and(|h| {
                    h.as_bytes()
                        .eq_ignore_ascii_case(authority.as_str().as_bytes())
                });
                if !same {
                    let value = HeaderValue::from_str(authority.as_str())
                        .map_err(|_| Failure::BadRequest("invalid request target".into()))?;
                    req.headers_mut().insert(HOST, value);
                }
            } else if host.is_none() && req.version() == http::Version::HTTP_11 {
                return Err(Failure::BadRequest(
                    "HTTP/1.1 request without a Host header".into(),
                ));
            }
        }
        _ => {
            if let (Some(authority), Some(host)) = (req.uri().authority(), host)
                && !host
                    .as_bytes()
                    .eq_ignore_ascii_case(authority.as_str().as_bytes())
            {
                return Err(Failure::BadRequest(
                    "the host header differs from :authority".into(),
                ));
            }
        }
    }
    Ok(req)
}

/// `Host = uri-host [ ":" port ]` (RFC 9112 §3.2, RFC 3986 §3.2.2), or empty. Checked on the
/// bytes by hand: parsing it as an `http::uri::Authority` copied the value into a new buffer
/// and scanned it three times, ~1,000 instructions on every HTTP/1.1 request by callgrind.
fn valid_host(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return true;
    }
    let (host, port) = if bytes[0] == b'[' {
        // IP-literal: an IPv6 address or IPvFuture, bracketed.
        let Some(close) = memchr::memchr(b']', bytes) else {
            return false;
        };
        let inside = &bytes[1..close];
        if inside.is_empty() || !inside.iter().all(|&b| b == b':' || is_reg_name_byte(b)) {
            return false;
        }
        (&bytes[..=close], &bytes[close + 1..])
    } else {
        let end = memchr::memchr(b':', bytes).unwrap_or(bytes.len());
        let host = &bytes[..end];
        if !host.iter().all(|&b| is_reg_name_byte(b)) {
            return false;
        }
        (host, &bytes[end..])
    };
    // An empty host with a port (`:80`) names nothing.
    if host.is_empty() {
        return false;
    }
    match port.split_first() {
        None => true,
        // `port = *DIGIT`: empty is allowed; otherwise a number that fits a port.
        Some((b':', digits)) => {
            digits.is_empty()
                || (digits.len() <= 5
                    && digits.iter().all(u8::is_ascii_digit)
                    && std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| d.parse::<u16>().ok())
                        .is_some())
        }
        Some(_) => false,
    }
}

/// `unreserved / pct-encoded / sub-delims` (RFC 3986 §3.2.2): the bytes of a reg-name or an
/// IPv4 address (the `%` of pct-encoding taken as is, like http's parser does).
fn is_reg_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'%'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
        )
}

/// Rejects requests whose framing is ambiguous (request smuggling, RFC 9112 §6.3).
fn check_framing(headers: &HeaderMap) -> Result<(), Failure> {
    if headers.contains_key(TRANSFER_ENCODING) && headers.contains_key(CONTENT_LENGTH) {
        return Err(Failure::BadRequest(
            "both Content-Length and Transfer-Encoding are present".into(),
        ));
    }
    if headers.get_all(CONTENT_LENGTH).iter().count() > 1 {
        return Err(Failure::BadRequest("duplicate Content-Length".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::body::full;

    #[tokio::test]
    async fn the_limit_says_itself_and_smaller_bodies_pass() {
        let err = bounded(full("0123456789"), 4).collect().await.unwrap_err();
        let too_large = err.downcast_ref::<BodyTooLarge>().unwrap();
        assert_eq!(too_large.limit, 4);
        let ok = bounded(full("0123"), 4).collect().await.unwrap();
        assert_eq!(ok.to_bytes(), "0123");
    }

    #[test]
    fn declared_lengths_and_ambiguous_framing_are_refused_up_front() {
        let req = Request::builder()
            .header(HOST, "a")
            .header(CONTENT_LENGTH, "10")
            .body(full("0123456789"))
            .unwrap();
        assert!(matches!(
            check(req, Some(4)),
            Err(Failure::BodyTooLarge { limit: 4 })
        ));
        let req = Request::builder()
            .header(CONTENT_LENGTH, "1")
            .header(TRANSFER_ENCODING, "chunked")
            .body(full("0"))
            .unwrap();
        assert!(matches!(check(req, None), Err(Failure::BadRequest(_))));
        let mut req = Request::new(full(""));
        req.headers_mut()
            .insert(HOST, HeaderValue::from_static("a"));
        req.extensions_mut().insert(AmbiguousFraming("obs-fold"));
        assert!(matches!(
            check(req, None),
            Err(Failure::AmbiguousFraming("obs-fold"))
        ));
    }

    #[test]
    fn one_authority_per_request() {
        let build = |version, uri: &str, host: Option<&str>| {
            let mut b = Request::builder().version(version).uri(uri);
            if let Some(h) = host {
                b = b.header(HOST, h);
            }
            b.body(full("")).unwrap()
        };
        use http::Version;
        // HTTP/1.1 needs Host; 1.0 does not.
        assert!(matches!(
            check(build(Version::HTTP_11, "/x", None), None),
            Err(Failure::BadRequest(_))
        ));
        assert!(check(build(Version::HTTP_10, "/x", None), None).is_ok());
        // One Host, and a valid one (or empty, for a target with no authority).
        let mut twice = build(Version::HTTP_11, "/x", Some("a.example"));
        twice
            .headers_mut()
            .append(HOST, HeaderValue::from_static("b.example"));
        assert!(matches!(check(twice, None), Err(Failure::BadRequest(_))));
        for bad in [
            "a b",
            "a/b",
            "a.example:port",
            "a.example:99999",
            "u@a.example",
            ":80",
            "[::1",
            "[]:80",
            "[::1]x",
            "a.example:1:2",
            "a.example:-1",
        ] {
            assert!(
                matches!(
                    check(build(Version::HTTP_11, "/x", Some(bad)), None),
                    Err(Failure::BadRequest(_))
                ),
                "{bad}"
            );
        }
        for good in [
            "",
            "a.example:8080",
            "a.example:",
            "[::1]:80",
            "127.0.0.1",
            "my_svc.local",
            "A.Example.",
            "[fe80::1%25eth0]",
            "[::ffff:127.0.0.1]:65535",
        ] {
            assert!(
                check(build(Version::HTTP_11, "/x", Some(good)), None).is_ok(),
                "{good:?}"
            );
        }
        // Absolute form: the target's authority wins and becomes Host.
        let req = check(
            build(Version::HTTP_11, "http://a.example/x", Some("b.example")),
            None,
        )
        .unwrap();
        assert_eq!(req.headers()[HOST], "a.example");
        // HTTP/2: a differing host header is malformed; the same one (any case) is fine.
        assert!(matches!(
            check(
                build(
                    Version::HTTP_2,
                    "http://evil.example/x",
                    Some("good.example")
                ),
                None
            ),
            Err(Failure::BadRequest(_))
        ));
        assert!(
            check(
                build(Version::HTTP_2, "http://a.example/x", Some("A.example")),
                None
            )
            .is_ok()
        );
        assert!(check(build(Version::HTTP_2, "http://a.example/x", None), None).is_ok());
    }
}
