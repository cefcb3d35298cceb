//! `routes[].fault`: delays and aborts by percentage within binomial tolerance, the gating
//! header, the usual error body, gRPC callers answered trailers-only, and the metric.

use std::time::{Duration, Instant};

use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::{Admin, Echo, GrpcUpstream, HttpClient, peers};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::{Value, json};

use crate::support::{LISTENER, cluster, config, start};

const DELAY: Duration = Duration::from_millis(200);

fn drill(header: bool) -> Value {
    let mut fault = json!({
        "delay": { "fixed": "200ms", "percent": 10 },
        "abort": { "status": 503, "grpc_status": 14, "percent": 1 },
    });
    if header {
        fault["header"] = json!("x-ferry-fault");
    }
    fault
}

/// What one request saw: its status, how long it took, its body.
struct Seen {
    status: u16,
    took: Duration,
    body: String,
}

async fn send_many(
    client: &HttpClient,
    addr: std::net::SocketAddr,
    n: usize,
    headers: &'static [(&'static str, &'static str)],
) -> anyhow::Result<Vec<Seen>> {
    let seen: Vec<anyhow::Result<Seen>> = futures_util::stream::iter(0..n)
        .map(|i| {
            let client = client.clone();
            async move {
                let req = request(
                    Method::GET,
                    addr,
                    &format!("/d/{i}"),
                    headers,
                    body_full(""),
                )?;
                let start = Instant::now();
                let reply = client.call(req).await?;
                Ok(Seen {
                    status: reply.status.as_u16(),
                    took: start.elapsed(),
                    body: reply.text(),
                })
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    seen.into_iter().collect()
}

/// Whether `count` of `n` is within 4 standard deviations of a binomial share `p`.
fn binomial(count: usize, n: usize, p: f64) -> bool {
    let mean = n as f64 * p;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    (count as f64 - mean).abs() <= 4.0 * sigma
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_percent_delayed_and_one_percent_aborted_only_with_the_header() -> anyhow::Result<()> {
    const N: usize = 2000;
    let up = Echo::start("e").await?;
    let cfg = config(
        json!([{ "name": "drill", "to": "up", "fault": drill(true) }]),
        json!([cluster("up", &[up.addr()], json!("p2c-ewma"))]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();

    let seen = send_many(&client, addr, N, &[("x-ferry-fault", "1")]).await?;
    let aborted: Vec<&Seen> = seen.iter().filter(|s| s.status == 503).collect();
    let slow = seen.iter().filter(|s| s.took >= DELAY).count();
    assert!(seen.iter().all(|s| s.status == 200 || s.status == 503));
    let m = admin.metrics().await?;
    let faults = |kind| {
        m.sum(
            "ferry_faults_injected_total",
            &[("route", "drill"), ("kind", kind)],
        ) as usize
    };
    let (delays, aborts) = (faults("delay"), faults("abort"));
    println!("{N} requests: {delays} delayed ({slow} took >= 200 ms), {aborts} aborted");
    assert!(binomial(delays, N, 0.10), "{delays} of {N} delayed");
    assert!(binomial(aborts, N, 0.01), "{aborts} of {N} aborted");
    assert_eq!(aborted.len(), aborts);
    // Every delayed request took the delay; the others (a few slow on a busy machine) did not.
    assert!(
        slow >= delays && slow <= delays + N / 100,
        "{slow} slow, {delays} delayed"
    );
    // Aborts carry ferry's usual error body and never reach the upstream.
    for a in &aborted {
        let body: Value = serde_json::from_str(&a.body)?;
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.contains("fault injected")),
            "{body}"
        );
    }
    assert_eq!(up.requests() as usize, N - aborts);

    // Requests without the header are never touched.
    let plain = send_many(&client, addr, 500, &[]).await?;
    assert!(plain.iter().all(|s| s.status == 200));
    assert!(
        plain.iter().all(|s| s.took < DELAY),
        "an ungated request was delayed"
    );
    let m = admin.metrics().await?;
    let total = m.sum("ferry_faults_injected_total", &[("route", "drill")]) as usize;
    assert_eq!(
        total,
        delays + aborts,
        "faults counted for ungated requests"
    );
    Ok(())
}

#[tokio::test]
async fn grpc_callers_see_unavailable_trailers_only() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g").await?;
    let fault = json!({ "abort": { "status": 503, "grpc_status": 14, "percent": 100 } });
    let cfg = config(
        json!([{ "name": "drill", "to": "up", "fault": fault }]),
        json!([cluster("up", &[up.addr()], json!("p2c-ewma"))]),
    );
    let ferry = start(&cfg).await?;
    let mut client = EchoClient::new(grpc_channel(ferry.listener(LISTENER)?).await?);
    for _ in 0..5 {
        let req = EchoRequest {
            message: "hi".into(),
            payload: Vec::new(),
            repeat: 0,
        };
        let status = client
            .unary(req)
            .await
            .expect_err("the drill aborts every call");
        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        assert!(status.message().contains("fault injected"), "{status:?}");
    }
    assert_eq!(up.calls(), 0, "an aborted call reached the upstream");
    // The real grpcio client sees the same.
    let out = peers::grpcio_client(ferry.listener(LISTENER)?, &["--unary-calls", "3"]).await?;
    let calls = out["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 3, "{out}");
    for call in &calls {
        assert_eq!(call["code"], "UNAVAILABLE", "{out}");
        assert_eq!(call["value"], 14, "{out}");
    }
    assert_eq!(up.calls(), 0);
    Ok(())
}
