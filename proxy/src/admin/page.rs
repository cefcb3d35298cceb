//! The admin page: `GET /` serves one self-contained HTML page (inline CSS and JavaScript, no
//! CDN, no build step), compiled into the binary. In the browser it reads the admin port's
//! JSON endpoints every two seconds and draws listeners, routes, clusters with endpoint health,
//! per-route and per-model traffic charts (inline SVG) and recent failed and slow requests.

use http::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};

use crate::body::{ProxyBody, full};

/// The page, as written in `page.html`.
pub const PAGE: &str = include_str!("page.html");

/// The page's answer.
pub(super) fn page() -> Response<ProxyBody> {
    let mut resp = Response::new(full(PAGE));
    let headers = resp.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Everything the page needs is inline or same-origin.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:",
        ),
    );
    resp
}
