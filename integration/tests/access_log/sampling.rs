//! `sample` and `slower_than` over 1 000 requests, three sinks on one ferry: everything,
//! a 10 % sample, and only the slow answers.

use std::collections::BTreeSet;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Echo, HttpClient};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::json;

use serde_json::Value;

use crate::support::{LISTENER, cluster, config, start};

const REQUESTS: usize = 1000;
/// Every 10th request is delayed past `slower_than`.
const SLOW_EVERY: usize = 10;
const SLOWER_THAN_MS: f64 = 200.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_and_slower_than_over_a_thousand_requests() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let all = dir.path().join("all.json");
    let sampled = dir.path().join("sampled.json");
    let slow = dir.path().join("slow.json");
    let ferry = start(&config(
        json!([
            { "path": all.to_str().unwrap() },
            { "path": sampled.to_str().unwrap(), "sample": 0.1 },
            { "path": slow.to_str().unwrap(), "sample": 0, "slower_than": "200ms" },
        ]),
        json!([{ "name": "echo", "to": "echo" }]),
        json!([cluster("echo", echo.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    // 32 at a time: the delayed ones (300 ms) must not serialize the run.
    let statuses: Vec<anyhow::Result<u16>> = futures_util::stream::iter(0..REQUESTS)
        .map(|i| {
            let client = client.clone();
            async move {
                let id = format!("r{i}");
                let mut headers = vec![("x-request-id", id.as_str())];
                if i % SLOW_EVERY == 0 {
                    headers.push(("x-test-delay-ms", "300"));
                }
                let req = request(Method::GET, addr, "/", &headers, body_full(Bytes::new()))?;
                Ok(client.call(req).await?.status.as_u16())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for s in statuses {
        assert_eq!(s?, 200);
    }

    // An error is written to every sink, after every line before it (one queue per sink): once
    // it is in a file, that file is complete.
    let req = request(
        Method::GET,
        addr,
        "/",
        &[("x-request-id", "sentinel"), ("x-test-status", "500")],
        body_full(Bytes::new()),
    )?;
    assert_eq!(client.call(req).await?.status, 500);
    let [every, slow_lines, sampled_lines] = [&all, &slow, &sampled].map(|p| until_sentinel(p));
    let (every, slow_lines, sampled_lines) =
        (every.await?, slow_lines.await?, sampled_lines.await?);
    let ids: BTreeSet<&str> = every
        .iter()
        .filter_map(|l| l["request_id"].as_str())
        .collect();
    assert_eq!(
        (every.len(), ids.len()),
        (REQUESTS, REQUESTS),
        "every request once"
    );

    // Slow sink: every delayed answer, whatever its sample of 0 says, and nothing faster than
    // the threshold (an undelayed request slowed past it by a busy machine belongs there too).
    let slow_ids: BTreeSet<usize> = slow_lines
        .iter()
        .map(|l| {
            assert!(l["duration_ms"].as_f64().unwrap() > SLOWER_THAN_MS, "{l}");
            l["request_id"].as_str().unwrap()[1..].parse().unwrap()
        })
        .collect();
    let delayed: BTreeSet<usize> = (0..REQUESTS).step_by(SLOW_EVERY).collect();
    assert!(
        slow_ids.is_superset(&delayed),
        "missing: {:?}",
        delayed.difference(&slow_ids)
    );
    assert!(
        slow_ids.len() < delayed.len() + 20,
        "{} slow lines",
        slow_ids.len()
    );

    // 10 % sample of 1 000 successes: binomial, mean 100, sd 9.5; ±5 sd fails by chance about
    // once in 3.5 million runs.
    let n = sampled_lines.len();
    assert!((52..=148).contains(&n), "sampled {n} of {REQUESTS} at 0.1");
    for l in &sampled_lines {
        assert!(ids.contains(l["request_id"].as_str().unwrap()));
    }
    Ok(())
}

/// The sink's lines once the sentinel is among them, without it.
async fn until_sentinel(path: &std::path::Path) -> anyhow::Result<Vec<Value>> {
    let lines = ferry_integration::eventually(crate::support::PATIENCE, || async {
        let lines = crate::support::json_lines(path)?;
        anyhow::ensure!(
            lines.iter().any(|l| l["request_id"] == "sentinel"),
            "no sentinel yet in {}",
            path.display()
        );
        Ok(lines)
    })
    .await?;
    Ok(lines
        .into_iter()
        .filter(|l| l["request_id"] != "sentinel")
        .collect())
}
