//! The table of single-request HTTP/1.1 cases: the raw bytes, the answer, whether ferry
//! closes the connection, and what the upstream may see.

/// What the upstream may see of a case (requests whose path starts with `/c/<case>`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Reach {
    /// Not a byte: refused from the head alone.
    Nothing,
    /// Possibly the head (ferry streams bodies), never a whole body: the body failed.
    NoWholeBody,
    /// This many whole requests.
    Whole(usize),
}

pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) raw: Vec<u8>,
    pub(super) status: u16,
    pub(super) closes: bool,
    pub(super) reach: Reach,
}

/// A head line for `case`'s path, so the upstream's log can be sorted by case.
fn line(method: &str, case: &str, version: &str) -> String {
    format!("{method} /c/{case} {version}\r\n")
}

fn case(
    name: &'static str,
    head: &str,
    rest: &[u8],
    status: u16,
    closes: bool,
    reach: Reach,
) -> Case {
    let mut raw = head.as_bytes().to_vec();
    raw.extend_from_slice(rest);
    Case {
        name,
        raw,
        status,
        closes,
        reach,
    }
}

fn chunked(name: &'static str, body: &[u8]) -> Case {
    let head = format!(
        "{}Host: x.test\r\nTransfer-Encoding: chunked\r\n\r\n",
        line("POST", name, "HTTP/1.1")
    );
    case(name, &head, body, 400, true, Reach::NoWholeBody)
}

fn header(name: &'static str, field: &[u8]) -> Case {
    let mut rest = field.to_vec();
    rest.extend_from_slice(b"\r\n\r\n");
    let head = format!("{}Host: x.test\r\n", line("GET", name, "HTTP/1.1"));
    case(name, &head, &rest, 400, true, Reach::Nothing)
}

pub(super) fn cases() -> Vec<Case> {
    let extensions: Vec<u8> = (0..1000)
        .flat_map(|_| format!("1;ext={}\r\na\r\n", "e".repeat(1024)).into_bytes())
        .chain(*b"0\r\n\r\n")
        .collect();
    let long_line = format!(
        "GET /c/long-request-line/{} HTTP/1.1\r\nHost: x.test\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_block: String = (0..96)
        .map(|i| format!("x-big-{i}: {}\r\n", "b".repeat(1024)))
        .collect();
    let many: String = (0..200).map(|i| format!("x-many-{i}: m\r\n")).collect();
    let h11 = |name| line("GET", name, "HTTP/1.1");
    vec![
        // Issue 18 item 1: a client's broken chunked body is a 400, never a 5xx.
        chunked("chunk-size-zz", b"zz\r\nhello\r\n0\r\n\r\n"),
        chunked(
            "chunk-size-20-hex-digits",
            b"FFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n",
        ),
        chunked("chunk-extensions-1000x1k", &extensions),
        // Item 2: RFC 9112 §3.2; HTTP/1.0 may omit Host (and closes after its answer).
        case(
            "no-host-http11",
            &format!("{}\r\n", h11("no-host-http11")),
            b"",
            400,
            false,
            Reach::Nothing,
        ),
        case(
            "no-host-http10",
            &format!("{}\r\n", line("GET", "no-host-http10", "HTTP/1.0")),
            b"",
            200,
            true,
            Reach::Whole(1),
        ),
        // Smuggling shapes.
        case(
            "cl-and-te",
            &format!(
                "{}Host: x.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
                line("POST", "cl-and-te", "HTTP/1.1")
            ),
            b"0\r\n\r\nGET /c/cl-and-te-smuggled HTTP/1.1\r\nHost: x.test\r\n\r\n",
            400,
            true,
            Reach::Nothing,
        ),
        case(
            "duplicate-content-length",
            &format!(
                "{}Host: x.test\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\n",
                line("POST", "duplicate-content-length", "HTTP/1.1")
            ),
            b"helloGET /c/duplicate-content-length-smuggled HTTP/1.1\r\nHost: x.test\r\n\r\n",
            400,
            true,
            Reach::Nothing,
        ),
        case(
            "te-chunked-identity",
            &format!(
                "{}Host: x.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
                line("POST", "te-chunked-identity", "HTTP/1.1")
            ),
            b"0\r\n\r\n",
            400,
            true,
            Reach::Nothing,
        ),
        header("obs-fold", b"X-Folded: a\r\n b"),
        header("bare-cr", b"X-Bare: a\rb"),
        header("nul-in-value", b"X-Nul: a\0b"),
        header("ctl-in-value", b"X-Ctl: a\x01b"),
        header("del-in-name", b"X-D\x7fel: b"),
        header("space-before-colon", b"Transfer-Encoding : chunked"),
        // RFC 9112 §3.2 again: one Host, and a valid one. The head itself parses, so the
        // connection is kept.
        case(
            "second-host",
            &format!("{}Host: x.test\r\nHost: y.test\r\n\r\n", h11("second-host")),
            b"",
            400,
            false,
            Reach::Nothing,
        ),
        case(
            "host-not-an-authority",
            &format!("{}Host: a b\r\n\r\n", h11("host-not-an-authority")),
            b"",
            400,
            false,
            Reach::Nothing,
        ),
        case(
            "te-not-chunked",
            &format!(
                "{}Host: x.test\r\nTransfer-Encoding: gzip\r\n\r\n",
                line("POST", "te-not-chunked", "HTTP/1.1")
            ),
            b"",
            400,
            true,
            Reach::Nothing,
        ),
        case(
            "te-in-http10",
            &format!(
                "{}Host: x.test\r\nTransfer-Encoding: chunked\r\n\r\n",
                line("POST", "te-in-http10", "HTTP/1.0")
            ),
            b"5\r\nhello\r\n0\r\n\r\n",
            400,
            true,
            Reach::Nothing,
        ),
        case(
            "content-length-plus-sign",
            &format!(
                "{}Host: x.test\r\nContent-Length: +5\r\n\r\n",
                line("POST", "content-length-plus-sign", "HTTP/1.1")
            ),
            b"hello",
            400,
            true,
            Reach::Nothing,
        ),
        case(
            "content-length-list",
            &format!(
                "{}Host: x.test\r\nContent-Length: 5, 5\r\n\r\n",
                line("POST", "content-length-list", "HTTP/1.1")
            ),
            b"hello",
            400,
            true,
            Reach::Nothing,
        ),
        // Oversized heads: the request line alone, the header block, the header count. The
        // request line counts against `max_request_headers_bytes` (64 KiB) like the rest of
        // the head, so a 70,000-byte target is 431 (not 414).
        case(
            "long-request-line",
            &long_line,
            b"",
            431,
            true,
            Reach::Nothing,
        ),
        case(
            "big-header-block",
            &format!("{}Host: x.test\r\n{big_block}\r\n", h11("big-header-block")),
            b"",
            431,
            true,
            Reach::Nothing,
        ),
        case(
            "many-headers",
            &format!("{}Host: x.test\r\n{many}\r\n", h11("many-headers")),
            b"",
            431,
            true,
            Reach::Nothing,
        ),
    ]
}
