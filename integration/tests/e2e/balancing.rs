//! Weighted splits across clusters, and retries plus outlier ejection when an endpoint dies.

use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, EchoReport, Ferry, HttpClient};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, cluster, config, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_split_90_10_over_10000_requests() -> anyhow::Result<()> {
    const N: u64 = 10_000;
    let (a, b) = (Echo::start("a").await?, Echo::start("b").await?);
    let cfg = config(
        json!([{ "name": "split", "to": [
            { "cluster": "ca", "weight": 90 },
            { "cluster": "cb", "weight": 10 },
        ] }]),
        json!([cluster("ca", &[a.addr()]), cluster("cb", &[b.addr()])]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    // Bounded: exactly N requests, 16 at a time on pooled keep-alive connections.
    let failures: Vec<String> = futures_util::stream::iter(0..N)
        .map(|i| {
            let client = client.clone();
            async move {
                let req = request(Method::GET, addr, &format!("/s/{i}"), &[], body_full(""))?;
                let reply = client.call(req).await?;
                anyhow::ensure!(
                    reply.status == 200,
                    "status {}: {}",
                    reply.status,
                    reply.text()
                );
                Ok(())
            }
        })
        .buffer_unordered(16)
        .filter_map(|r: anyhow::Result<()>| async move { r.err().map(|e| format!("{e:#}")) })
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{} failed, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(a.requests() + b.requests(), N);
    let share_b = b.requests() as f64 / N as f64;
    assert!(
        (0.07..=0.13).contains(&share_b),
        "cluster cb got {:.2}% of requests (want 10% ± 3%)",
        share_b * 100.0
    );
    Ok(())
}

#[tokio::test]
async fn retries_and_ejection_hide_a_killed_endpoint() -> anyhow::Result<()> {
    let (a, mut b) = (Echo::start("a").await?, Echo::start("b").await?);
    let mut pool = cluster("pool", &[a.addr(), b.addr()]);
    pool["lb"] = json!("round-robin");
    pool["outlier"] = json!({ "consecutive_failures": 2, "ejection": "60s" });
    let cfg = config(
        json!([{
            "name": "all",
            "to": "pool",
            "retry": { "attempts": 3, "on": ["connect-failure"], "budget": "100%" },
        }]),
        json!([pool]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();
    for i in 0..300 {
        if i == 100 {
            // Both endpoints served so far; now one dies between two requests.
            assert!(
                a.requests() > 20 && b.requests() > 20,
                "round robin did not spread load"
            );
            b.kill().await;
        }
        let req = request(Method::GET, addr, &format!("/r/{i}"), &[], body_full(""))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "request {i} failed: {}", reply.text());
        if i >= 100 {
            assert_eq!(reply.json::<EchoReport>()?.instance, "a");
        }
    }
    assert_eq!(a.requests() + b.requests(), 300);
    let m = admin.metrics().await?;
    let retries = m.sum("ferry_retries_total", &[("route", "all")]);
    let ejections = m.sum("ferry_endpoint_ejections_total", &[("cluster", "pool")]);
    let connect_errors = m.sum(
        "ferry_upstream_connect_errors_total",
        &[("cluster", "pool")],
    );
    assert!(retries >= 1.0, "no retry counted:\n{}", m.text);
    assert!(ejections >= 1.0, "no ejection counted:\n{}", m.text);
    // Ejected after 2 consecutive failures: the dead endpoint is not tried 100 more times.
    assert!(
        (1.0..=6.0).contains(&connect_errors),
        "{connect_errors} connect errors: the dead endpoint kept being tried"
    );
    Ok(())
}

/// Issue 20: at low load (one request at a time, so in-flight counts never differ) p2c-ewma
/// must still spread two identical replicas: an idle replica's latency estimate decays and it
/// looks cheap again. Before, 30 sequential requests all went to one replica.
#[tokio::test]
async fn p2c_ewma_spreads_sequential_requests_over_identical_replicas() -> anyhow::Result<()> {
    const N: u64 = 400;
    let (a, b) = (Echo::start("a").await?, Echo::start("b").await?);
    // `lb` left at its default, p2c-ewma, as a new user would.
    let cfg = config(
        json!([{ "name": "all", "to": "pool" }]),
        json!([cluster("pool", &[a.addr(), b.addr()])]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    for i in 0..N {
        let req = request(Method::GET, addr, &format!("/p/{i}"), &[], body_full(""))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "request {i}: {}", reply.text());
        // Paced (~100 req/s, ~4 s in all): a replica whose one answer came late (a stall on
        // a loaded CI machine) looks dear until its estimate decays (2 s time constant), so
        // the test spans a few decay times; a balancer that never forgets still starves it.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(a.requests() + b.requests(), N);
    // A starvation check (before: every request but the first to one replica). Not a spread
    // check: on a loaded CI machine a scheduling stall is a real latency peak that keeps its
    // replica out of favour for a second or more (unpaced, whole runs went 96/4 and 399/1). The spread is checked on a synthetic clock in `cluster::balance::tests` and
    // measured in bench/results/2026-12-05-spread.
    let least = a.requests().min(b.requests());
    assert!(
        least >= N / 100,
        "a replica was starved: a {} / b {} of {N} sequential requests",
        a.requests(),
        b.requests()
    );
    Ok(())
}

/// A replica that takes each request and dies on it: reads the head, then closes the
/// connection without a byte of answer (what a SIGKILLed model server does to a request
/// already written to a pooled connection). Counts the heads it took.
async fn dies_on_every_request() -> anyhow::Result<(
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
)> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let heads = Arc::new(AtomicUsize::new(0));
    let counted = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Bounded: a head is small; give up on anything else.
                while buf.len() < 64 * 1024 {
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        counted.fetch_add(1, Ordering::SeqCst);
                        return; // dropped: closed with no answer
                    }
                }
            });
        }
    });
    Ok((addr, heads))
}

/// ferry over a good replica and one that dies on every request (round robin, no ejection, so
/// the dying one keeps getting its share), with route `all`'s retry policy `retry`.
async fn good_and_dying(
    retry: serde_json::Value,
) -> anyhow::Result<(Echo, std::sync::Arc<std::sync::atomic::AtomicUsize>, Ferry)> {
    let good = Echo::start("good").await?;
    let (bad, heads) = dies_on_every_request().await?;
    let mut pool = cluster("pool", &[good.addr(), bad]);
    pool["lb"] = json!("round-robin");
    pool["outlier"] = json!({ "enabled": false });
    let cfg = config(
        json!([{ "name": "all", "to": "pool", "retry": retry }]),
        json!([pool]),
    );
    let ferry = start(&cfg).await?;
    Ok((good, heads, ferry))
}

/// Issue 20: a request the upstream took and then died on, before any answer byte, is sent to
/// the other replica when resending is safe (GET), and counted as a `reset` retry; a POST is
/// not resent (it may have been processed) and gets the 503.
#[tokio::test]
async fn an_idempotent_request_reset_before_any_answer_goes_to_the_other_replica()
-> anyhow::Result<()> {
    use std::sync::atomic::Ordering;
    // The route's default retry policy: connect-failure and unavailable.
    let (_good, heads, ferry) = good_and_dying(json!({})).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();
    for i in 0..20 {
        let req = request(Method::GET, addr, &format!("/g/{i}"), &[], body_full(""))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "GET {i}: {}", reply.text());
        assert_eq!(reply.json::<EchoReport>()?.instance, "good");
    }
    let reset_gets = heads.load(Ordering::SeqCst);
    assert!(
        reset_gets >= 5,
        "round robin sent only {reset_gets} GETs to the dying replica"
    );
    let m = admin.metrics().await?;
    let resets = m.sum(
        "ferry_retries_total",
        &[("route", "all"), ("reason", "reset")],
    );
    assert_eq!(resets, reset_gets as f64, "{}", m.text);

    let mut refused = 0;
    for i in 0..20 {
        let req = request(Method::POST, addr, &format!("/p/{i}"), &[], body_full("x"))?;
        let reply = client.call(req).await?;
        match reply.status.as_u16() {
            200 => {}
            503 => refused += 1,
            other => anyhow::bail!("POST {i}: {other} {}", reply.text()),
        }
    }
    assert_eq!(
        refused,
        heads.load(Ordering::SeqCst) - reset_gets,
        "every POST the dying replica took must be answered 503, not resent"
    );
    assert!(
        refused >= 5,
        "round robin sent only {refused} POSTs to the dying replica"
    );
    Ok(())
}

/// Issue 20: with the opt-in `reset` trigger (Envoy's `retry_on: reset`), a POST the dying
/// replica took is resent to the other one too: the route says its calls are safe to repeat.
#[tokio::test]
async fn the_reset_trigger_resends_a_post_reset_before_any_answer() -> anyhow::Result<()> {
    use std::sync::atomic::Ordering;
    let retry = json!({ "on": ["connect-failure", "unavailable", "reset"] });
    let (_good, heads, ferry) = good_and_dying(retry).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();
    for i in 0..20 {
        let req = request(Method::POST, addr, &format!("/p/{i}"), &[], body_full("x"))?;
        let reply = client.call(req).await?;
        assert_eq!(reply.status, 200, "POST {i}: {}", reply.text());
        assert_eq!(reply.json::<EchoReport>()?.instance, "good");
    }
    let taken = heads.load(Ordering::SeqCst);
    assert!(
        taken >= 5,
        "round robin sent only {taken} POSTs to the dying replica"
    );
    let m = admin.metrics().await?;
    let resets = m.sum(
        "ferry_retries_total",
        &[("route", "all"), ("reason", "reset")],
    );
    assert_eq!(resets, taken as f64, "{}", m.text);
    Ok(())
}
