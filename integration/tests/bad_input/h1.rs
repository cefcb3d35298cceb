//! HTTP/1.1 bad input over raw sockets, against one ferry: malformed chunked bodies (issue 18
//! item 1), requests without `Host` and absolute-form targets (items 2 and 3), smuggling
//! shapes, forbidden bytes in headers, oversized heads, pipelining and a client that never
//! reads its answer. Each case states the status, whether ferry closes the connection, and
//! what the upstream may have seen; a connection ferry keeps must then serve a normal request.

mod cases;

use serde_json::json;

use crate::harness::{PATIENCE, Suite};
use crate::raw_h1::H1;

use self::cases::{Case, Reach, cases};

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
        let next = conn.next_status(c.name, PATIENCE).await?;
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
