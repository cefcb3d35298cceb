//! SIGTERM: ferry stops accepting, `/ready` turns 503, in-flight requests finish, exit 0.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, HttpClient, eventually};
use http::Method;
use serde_json::json;
use tokio::time::Instant;

use crate::support::{LISTENER, PATIENCE, one_upstream, start};

#[derive(Debug, Default)]
struct Outcome {
    ok: u64,
    /// Successful requests that were started before SIGTERM and finished after it.
    spanning: u64,
    refused_after_term: u64,
    failures: Vec<String>,
}

async fn worker(
    client: HttpClient,
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    term_at: Arc<std::sync::Mutex<Option<Instant>>>,
) -> Outcome {
    let mut out = Outcome::default();
    let signalled = || term_at.lock().ok().and_then(|t| *t);
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let req = match request(
            Method::GET,
            addr,
            "/work",
            &[("x-test-delay-ms", "150")],
            body_full(""),
        ) {
            Ok(r) => r,
            Err(e) => {
                out.failures.push(format!("{e:#}"));
                break;
            }
        };
        match client.call(req).await {
            Ok(reply) if reply.status == 200 => {
                out.ok += 1;
                if signalled().is_some_and(|t| started < t) {
                    out.spanning += 1;
                }
            }
            Ok(reply) => out
                .failures
                .push(format!("status {}: {}", reply.status, reply.text())),
            Err(e) => {
                let refused = e
                    .chain()
                    .filter_map(|c| c.downcast_ref::<hyper_util::client::legacy::Error>())
                    .any(|e| e.is_connect());
                // After SIGTERM ferry stops accepting: a refused *new connection* is the
                // expected end for a client; anything else lost a request.
                if refused && signalled().is_some_and(|t| started >= t) {
                    out.refused_after_term += 1;
                    break;
                }
                out.failures.push(format!("{e:#}"));
                break;
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_requests_and_exits_zero() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let mut cfg = one_upstream(echo.addr());
    cfg["runtime"] = json!({ "drain_timeout": "15s" });
    let mut ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let stop = Arc::new(AtomicBool::new(false));
    let term_at = Arc::new(std::sync::Mutex::new(None));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let client = if i % 2 == 0 {
                HttpClient::http1()
            } else {
                HttpClient::h2c()
            };
            tokio::spawn(worker(client, addr, stop.clone(), term_at.clone()))
        })
        .collect();
    eventually(PATIENCE, || async {
        anyhow::ensure!(
            echo.requests() >= 24,
            "load not flowing yet ({})",
            echo.requests()
        );
        Ok(())
    })
    .await?;
    // A slow request in flight keeps the drain open long enough to observe /ready.
    let slow = tokio::spawn({
        let req = request(
            Method::GET,
            addr,
            "/slow",
            &[("x-test-delay-ms", "1500")],
            body_full(""),
        )?;
        async move { HttpClient::http1().call(req).await }
    });
    eventually(PATIENCE, || async {
        anyhow::ensure!(
            echo.requests() >= 25,
            "slow request not at the upstream yet"
        );
        Ok(())
    })
    .await?;
    if let Ok(mut t) = term_at.lock() {
        *t = Some(Instant::now());
    }
    ferry.signal("TERM").await?;
    eventually(PATIENCE, || async {
        let ready = admin.get("/ready").await?;
        anyhow::ensure!(ready.status == 503, "/ready still {}", ready.status);
        Ok(())
    })
    .await?;
    let status = ferry.wait_exit(Duration::from_secs(20)).await?;
    stop.store(true, Ordering::SeqCst);
    let slow = slow.await??;
    assert_eq!(
        slow.status,
        200,
        "the slow in-flight request was cut: {}",
        slow.text()
    );
    let mut total = Outcome::default();
    for w in workers {
        let o = w.await?;
        total.ok += o.ok;
        total.spanning += o.spanning;
        total.refused_after_term += o.refused_after_term;
        total.failures.extend(o.failures);
    }
    assert!(
        total.failures.is_empty(),
        "requests failed during drain: {:#?}",
        total.failures
    );
    assert!(
        total.spanning >= 1,
        "no request was in flight across SIGTERM: {total:?}"
    );
    assert_eq!(status.code(), Some(0), "ferry exit status {status}");
    Ok(())
}
