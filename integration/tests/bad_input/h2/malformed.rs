//! Malformed HTTP/2 requests (RFC 9113 §8.2, §8.3): connection-specific and uppercase header
//! names, `te` other than `trailers`, pseudo-headers that are unknown, late or missing, and a
//! `content-length` the DATA frames do not add up to.

use crate::harness::{PATIENCE, Suite};
use crate::raw_h2::{
    DATA, END_HEADERS, END_STREAM, H2, HEADERS, PROTOCOL_ERROR, frame, get_block, literal,
    literal_indexed_name,
};

use super::get;

/// How a malformed request is refused.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Refusal {
    /// RST_STREAM(PROTOCOL_ERROR); the connection serves the next stream.
    Stream,
    /// GOAWAY(PROTOCOL_ERROR) and close. h2 meets these while decoding the header block and
    /// fails the whole connection, stricter than the stream error RFC 9113 §8.1.1 asks for.
    Connection,
}

/// Requests RFC 9113 §8.2 and §8.3 call malformed, each on its own connection: refused as
/// [`Refusal`] says, and nothing reaches the upstream whole.
pub(super) async fn malformed(suite: &mut Suite) -> anyhow::Result<()> {
    let with = |extra: &[(&str, &str)], path: &str| get_block(path, "x.test", extra);
    let mut late_pseudo = with(&[("x-first", "a")], "/c/h2-malformed/pseudo-late");
    literal(&mut late_pseudo, ":scheme", "http");
    // `:method GET`, `:scheme http`, `:authority x.test`, and no `:path`.
    let no_path = vec![0x82, 0x86, 0x41, 0x06, b'x', b'.', b't', b'e', b's', b't'];
    let cases = [
        (
            "connection-header",
            Refusal::Stream,
            with(
                &[("connection", "keep-alive")],
                "/c/h2-malformed/connection",
            ),
        ),
        (
            "transfer-encoding",
            Refusal::Stream,
            with(
                &[("transfer-encoding", "chunked")],
                "/c/h2-malformed/te-chunked",
            ),
        ),
        (
            "te-not-trailers",
            Refusal::Stream,
            with(&[("te", "gzip")], "/c/h2-malformed/te-gzip"),
        ),
        ("pseudo-after-regular", Refusal::Stream, late_pseudo),
        ("no-path", Refusal::Stream, no_path),
        (
            "uppercase-name",
            Refusal::Connection,
            with(&[("X-Upper", "a")], "/c/h2-malformed/uppercase"),
        ),
        (
            "unknown-pseudo-header",
            Refusal::Connection,
            with(&[(":bogus", "a")], "/c/h2-malformed/bogus-pseudo"),
        ),
    ];
    for (name, refusal, block) in cases {
        let mut c = H2::connect(suite.addr()?, &[]).await?;
        c.send(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
            .await?;
        let outcome = match refusal {
            Refusal::Stream => {
                c.read_until(PATIENCE, |s| s.resets.contains_key(&1)).await;
                c.send(&get(3, "/c/h2-malformed-after", &[])).await?;
                c.read_until(PATIENCE, |s| s.statuses.contains_key(&3))
                    .await;
                c.seen.resets.get(&1) == Some(&PROTOCOL_ERROR)
                    && c.seen.statuses.get(&3) == Some(&200)
                    && c.seen.goaway.is_none()
            }
            Refusal::Connection => {
                c.read_until(PATIENCE, |s| s.closed).await;
                c.seen.goaway == Some(PROTOCOL_ERROR) && c.seen.closed
            }
        };
        suite.check(
            name,
            outcome,
            format_args!("want {refusal:?}, got {:?}", c.seen),
        );
    }
    // A declared length the DATA frames do not add up to (§8.1.1): the head may have gone
    // upstream (ferry streams bodies), its body must not arrive whole.
    let name = "content-length-mismatch";
    let mut c = H2::connect(suite.addr()?, &[]).await?;
    let mut head = vec![0x83, 0x86]; // `:method POST`, `:scheme http`
    literal_indexed_name(&mut head, 4, "/c/h2-malformed/length-mismatch");
    literal_indexed_name(&mut head, 1, "x.test");
    literal(&mut head, "content-length", "10");
    c.send(&frame(HEADERS, END_HEADERS, 1, &head)).await?;
    c.send(&frame(DATA, END_STREAM, 1, b"hello")).await?;
    c.read_until(PATIENCE, |s| s.resets.contains_key(&1)).await;
    c.send(&get(3, "/c/h2-malformed-after", &[])).await?;
    c.read_until(PATIENCE, |s| s.statuses.contains_key(&3))
        .await;
    suite.check(
        name,
        c.seen.resets.get(&1) == Some(&PROTOCOL_ERROR)
            && c.seen.statuses.get(&3) == Some(&200)
            && c.seen.goaway.is_none(),
        format_args!("want Stream, got {:?}", c.seen),
    );
    let reached: Vec<_> = suite
        .recorder
        .under("/c/h2-malformed/")
        .into_iter()
        .filter(|r| r.body_complete == Some(true) || !r.path.ends_with("/length-mismatch"))
        .map(|r| r.path)
        .collect();
    suite.check(
        "malformed-requests",
        reached.is_empty(),
        format_args!("upstream saw {reached:?}"),
    );
    Ok(())
}
