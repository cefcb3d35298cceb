//! HTTP/1.1 bad input over raw sockets, against one ferry: malformed chunked bodies (issue 18
//! item 1), requests without `Host` and absolute-form targets (items 2 and 3), smuggling
//! shapes, forbidden bytes in headers, oversized heads, pipelining and a client that never
//! reads its answer. Each case states the status, whether ferry closes the connection, and
//! what the upstream may have seen; a connection ferry keeps must then serve a normal request.

use serde_json::json;

use crate::harness::{PATIENCE, Suite};
use crate::raw_h1::H1;

/// What the upstream may see of a case (requests whose path starts with `/c/<case>`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reach {
    /// Not a byte: refused from the head alone.
    Nothing,
    /// Possibly the head (ferry streams bodies), never a whole body: the body failed.
    NoWholeBody,
    /// This many whole requests.
    Whole(usize),
}

struct Case {
    name: &'static str,
    raw: Vec<u8>,
    status: u16,
    closes: bool,
    reach: Reach,
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

fn cases() -> Vec<Case> {
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

#[tokio::test]
async fn http1_bad_input() -> anyhow::Result<()> {
    let routes = json!([
        { "name": "a", "match": { "authority": "a.test" }, "to": "up" },
        { "name": "b", "match": { "authority": "b.test" }, "to": "dead" },
        { "name": "all", "to": "up" },
    ]);
    let mut suite = Suite::start(routes).await?;
    for c in cases() {
        let outcome = run(&mut suite, &c).await;
        suite.record(c.name, outcome).await?;
    }
    let outcome = absolute_form(&mut suite).await;
    suite.record("absolute-form", outcome).await?;
    let outcome = pipelining(&mut suite).await;
    suite.record("pipelining", outcome).await?;
    let outcome = slow_reader(&mut suite).await;
    suite.record("slow-reader", outcome).await?;
    suite.finish().await
}

async fn run(suite: &mut Suite, c: &Case) -> anyhow::Result<()> {
    let mut conn = H1::connect(suite.addr()?).await?;
    conn.send(&c.raw, PATIENCE).await;
    let answer = conn.answer(PATIENCE).await?;
    let status = answer.as_ref().map_or(0, |a| a.status);
    let text = answer.as_ref().map(|a| a.text()).unwrap_or_default();
    suite.check(
        c.name,
        status == c.status,
        format_args!("status {status}, want {} ({text})", c.status),
    );
    if c.closes {
        let closed = conn.closes(PATIENCE).await;
        suite.check(c.name, closed, "connection left open");
    } else {
        // Kept open: it must serve a normal request next.
        conn.send(
            format!("GET /c/{}/after HTTP/1.1\r\nHost: x.test\r\n\r\n", c.name).as_bytes(),
            PATIENCE,
        )
        .await;
        let next = conn.answer(PATIENCE).await?.map_or(0, |a| a.status);
        suite.check(
            c.name,
            next == 200,
            format_args!("next request on the connection: {next}"),
        );
    }
    let seen: Vec<_> = suite
        .recorder
        .under(&format!("/c/{}", c.name))
        .into_iter()
        .filter(|r| !r.path.ends_with("/after"))
        .collect();
    let whole = seen
        .iter()
        .filter(|r| r.body_complete == Some(true))
        .count();
    let ok = match c.reach {
        Reach::Nothing => seen.is_empty(),
        Reach::NoWholeBody => whole == 0,
        Reach::Whole(n) => whole == n && seen.len() == n,
    };
    let paths: Vec<_> = seen.iter().map(|r| (&r.path, r.body_complete)).collect();
    suite.check(
        c.name,
        ok,
        format_args!("upstream saw {paths:?}, want {:?}", c.reach),
    );
    Ok(())
}

/// Issue 18 item 3: `GET http://a.test/... HTTP/1.1` with `Host: b.test` is routed by
/// `a.test` (route `a` → the recorder; `b` would be the dead cluster's 503) and forwarded with
/// `Host: a.test`.
async fn absolute_form(suite: &mut Suite) -> anyhow::Result<()> {
    let name = "absolute-form";
    let mut conn = H1::connect(suite.addr()?).await?;
    conn.send(
        b"GET http://a.test/c/absolute-form HTTP/1.1\r\nHost: b.test\r\n\r\n",
        PATIENCE,
    )
    .await;
    let answer = conn.answer(PATIENCE).await?;
    let status = answer.as_ref().map_or(0, |a| a.status);
    suite.check(
        name,
        status == 200,
        format_args!("status {status}, want 200 (routed by the target)"),
    );
    let seen = suite.recorder.under("/c/absolute-form");
    let hosts: Vec<_> = seen
        .iter()
        .map(|r| r.header("host").unwrap_or("-").to_owned())
        .collect();
    suite.check(
        name,
        hosts == ["a.test"],
        format_args!("upstream saw Host {hosts:?}, want [\"a.test\"]"),
    );
    Ok(())
}

/// Three requests in one write (the last with a body): three answers, in order, each from
/// the upstream for its own path, and the connection stays open.
async fn pipelining(suite: &mut Suite) -> anyhow::Result<()> {
    let name = "pipelining";
    let mut conn = H1::connect(suite.addr()?).await?;
    let raw = b"GET /c/pipelining/1 HTTP/1.1\r\nHost: x.test\r\n\r\n\
GET /c/pipelining/2 HTTP/1.1\r\nHost: x.test\r\n\r\n\
POST /c/pipelining/3 HTTP/1.1\r\nHost: x.test\r\nContent-Length: 5\r\n\r\nhello";
    conn.send(raw, PATIENCE).await;
    for i in 1..=3 {
        let answer = conn.answer(PATIENCE).await?;
        let status = answer.as_ref().map_or(0, |a| a.status);
        let path = answer
            .and_then(|a| serde_json::from_slice::<serde_json::Value>(&a.body).ok())
            .and_then(|v| v["path"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let want = format!("/c/pipelining/{i}");
        suite.check(
            name,
            status == 200 && path == want,
            format_args!("answer {i}: {status} for {path:?}, want 200 for {want}"),
        );
    }
    let paths: Vec<_> = suite
        .recorder
        .under("/c/pipelining/")
        .into_iter()
        .map(|r| r.path)
        .collect();
    suite.check(
        name,
        paths == ["/c/pipelining/1", "/c/pipelining/2", "/c/pipelining/3"],
        format_args!("upstream order {paths:?}"),
    );
    // Still open: a fourth request on it is served.
    conn.send(
        b"GET /c/pipelining/4 HTTP/1.1\r\nHost: x.test\r\n\r\n",
        PATIENCE,
    )
    .await;
    let next = conn.answer(PATIENCE).await?.map_or(0, |a| a.status);
    suite.check(
        name,
        next == 200,
        format_args!("request after the pipelined ones: {next}"),
    );
    Ok(())
}

/// A client asks for 32 MiB and never reads: the socket buffers fill, and ferry drops the
/// connection after `stalled_write_timeout` (1 s here) instead of buffering the answer.
async fn slow_reader(suite: &mut Suite) -> anyhow::Result<()> {
    let name = "slow-reader";
    const ANSWER: usize = 32 << 20;
    let mut conn = H1::connect_small_window(suite.addr()?).await?;
    let raw = format!(
        "GET /c/slow-reader HTTP/1.1\r\nHost: x.test\r\nx-test-answer-bytes: {ANSWER}\r\n\r\n"
    );
    let before = suite.stalled_closes().await?;
    conn.send(raw.as_bytes(), PATIENCE).await;
    suite.stalled_closes_reach(before + 1.0).await?;
    // Only now read: what arrives is what was in flight, then the close.
    let closed = conn.closes(PATIENCE).await;
    suite.check(
        name,
        closed,
        "connection still open after the stalled-write close was counted",
    );
    let got = conn.buffered();
    suite.check(
        name,
        got < ANSWER,
        format_args!("all {got} bytes arrived: nothing was cut"),
    );
    let seen = suite.recorder.under("/c/slow-reader").len();
    suite.check(
        name,
        seen == 1,
        format_args!("upstream saw {seen} requests, want 1"),
    );
    Ok(())
}
