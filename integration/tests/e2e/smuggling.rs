//! Request smuggling attempts over a raw TCP socket are rejected with 400 and the connection
//! closed, and nothing reaches the upstream.

use std::time::Duration;

use ferry_integration::Echo;
use ferry_integration::client::raw_exchange;

use crate::support::{LISTENER, one_upstream, start};

const CASES: [(&str, &[u8]); 4] = [
    (
        "Content-Length with Transfer-Encoding",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
    ),
    (
        "duplicate Content-Length, different values",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
    ),
    (
        "duplicate Content-Length, same value",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    ),
    (
        "Transfer-Encoding not ending in chunked",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    ),
];

#[tokio::test]
async fn smuggling_attempts_are_rejected_with_400() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let addr = ferry.listener(LISTENER)?;
    let mut wrong = Vec::new();
    for (name, raw) in CASES {
        let (answer, closed) = raw_exchange(addr, raw, Duration::from_secs(5)).await?;
        if !answer.starts_with("HTTP/1.1 400") || !closed {
            let first = answer.lines().next().unwrap_or("<nothing>").to_owned();
            wrong.push(format!("{name}: got {first:?}, closed={closed}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "not rejected with 400 + close:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        echo.requests(),
        0,
        "a smuggling attempt reached the upstream"
    );
    Ok(())
}
