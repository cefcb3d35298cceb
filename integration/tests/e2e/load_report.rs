//! Balancing on load reports (issue 20), end to end: real model-server stand-ins that report
//! their load as vLLM (TEXT header) and gRPC servers (binary ORCA trailer) do, one ferry's
//! inbound report steering another ferry's outbound, and slow start ramping a replica back.

mod peers;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferry_integration::{Admin, Ferry, HttpClient, eventually};
use serde_json::{Value, json};

use self::peers::{Peer, grpc_calls};
use crate::support::{LISTENER, PATIENCE, cluster, config, start};

/// `n` GETs one after another to `addr`; how many each replica answered (by the name it
/// puts in the body), and the last answer's load-report header, if any.
async fn sequential(
    client: &HttpClient,
    addr: SocketAddr,
    n: u32,
) -> anyhow::Result<(BTreeMap<String, u64>, Option<String>)> {
    let mut counts = BTreeMap::new();
    let mut header = None;
    for i in 0..n {
        let reply = client.get(addr, &format!("/v1/completions?i={i}")).await?;
        anyhow::ensure!(reply.status == 200, "request {i}: {}", reply.status);
        *counts.entry(reply.text()).or_insert(0) += 1;
        header = reply.header("endpoint-load-metrics").map(str::to_owned);
    }
    Ok((counts, header))
}

/// `callers` loops of GETs to `addr` for `time`; how many each replica answered.
async fn concurrent(
    client: &HttpClient,
    addr: SocketAddr,
    callers: usize,
    time: Duration,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let end = Instant::now() + time;
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut counts = BTreeMap::new();
                while Instant::now() < end {
                    let reply = client.get(addr, "/x").await?;
                    anyhow::ensure!(reply.status == 200, "{}", reply.status);
                    *counts.entry(reply.text()).or_insert(0u64) += 1;
                }
                Ok(counts)
            })
        })
        .collect();
    let mut total = BTreeMap::new();
    for t in tasks {
        for (name, n) in t.await?? {
            *total.entry(name).or_insert(0) += n;
        }
    }
    Ok(total)
}

fn share(counts: &BTreeMap<String, u64>, name: &str) -> f64 {
    let total: u64 = counts.values().sum();
    counts.get(name).copied().unwrap_or(0) as f64 / total.max(1) as f64
}

/// A cluster over `endpoints` balancing on `metric` with `weight`.
fn reporting_cluster(name: &str, endpoints: &[SocketAddr], metric: &str, weight: f64) -> Value {
    let mut c = cluster(name, endpoints);
    c["lb"] =
        json!({ "policy": "p2c-ewma", "load_report": { "metric": metric, "weight": weight } });
    c
}

/// 0.9 against 0.1 at weight 4 is a cost factor of 4.6 against 1.4: 3.3×. At weight 1 (1.9
/// against 1.1) one late answer of the idle replica, taken at once as its latency estimate,
/// outweighs the reports on a busy test machine (docs/balancing.md).
const KV_WEIGHT: f64 = 4.0;

#[tokio::test]
async fn a_replica_reporting_a_fuller_kv_cache_gets_clearly_less() -> anyhow::Result<()> {
    let busy = Peer::http("busy", Some(0.9)).await?;
    let idle = Peer::http("idle", Some(0.1)).await?;
    let cfg = config(
        json!([{ "name": "all", "to": "pool" }]),
        json!([reporting_cluster(
            "pool",
            &[busy.addr, idle.addr],
            "named_metrics.kv_cache_usage_perc",
            KV_WEIGHT,
        )]),
    );
    let ferry = start(&cfg).await?;
    let (counts, header) = sequential(&HttpClient::http1(), ferry.listener(LISTENER)?, 600).await?;
    // The busy replica is taken only once its latency estimate has decayed well below its
    // twin's (a probe now and then), not half the time.
    let busy_share = share(&counts, "busy");
    eprintln!("load reports: busy replica got {busy_share:.3}: {counts:?}");
    assert!(
        busy_share <= 0.30,
        "busy replica got {busy_share:.2}: {counts:?}"
    );
    assert!(
        busy_share > 0.0,
        "busy replica was never probed: {counts:?}"
    );
    // Reports pass through unless the route strips them.
    assert!(header.is_some_and(|h| h.contains("kv_cache_usage_perc")));
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let reported: Vec<f64> = dump["endpoints"]["pool"]["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["load_report"].as_f64())
        .collect();
    assert_eq!(reported.len(), 2, "{dump:#}");
    Ok(())
}

#[tokio::test]
async fn grpc_replicas_reporting_in_binary_trailers_steer_the_pick() -> anyhow::Result<()> {
    let busy = Peer::grpc("busy", 0.9).await?;
    let idle = Peer::grpc("idle", 0.1).await?;
    let mut pool = reporting_cluster(
        "pool",
        &[busy.addr, idle.addr],
        "named_metrics.kv_cache_usage_perc",
        KV_WEIGHT,
    );
    pool["protocol"] = json!("h2");
    let cfg = config(json!([{ "name": "all", "to": "pool" }]), json!([pool]));
    let ferry = start(&cfg).await?;
    let counts = grpc_calls(ferry.listener(LISTENER)?, 400).await?;
    assert_eq!(counts.values().sum::<u64>(), 400, "{counts:?}");
    let busy_share = share(&counts, "busy");
    eprintln!("load reports: busy replica got {busy_share:.3}: {counts:?}");
    assert!(
        busy_share <= 0.30,
        "busy replica got {busy_share:.2}: {counts:?}"
    );
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let busy_report = dump["endpoints"]["pool"]["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["address"] == busy.addr.to_string())
        .and_then(|e| e["load_report"].as_f64());
    assert_eq!(busy_report, Some(0.9), "{dump:#}");
    Ok(())
}

/// An inbound ferry in front of one replica, adding its own load report to every answer.
async fn inbound(upstream: SocketAddr) -> anyhow::Result<Ferry> {
    start(&config(
        json!([{
            "name": "model",
            "to": "local",
            // Held requests stay in flight for the whole test.
            "timeout": "0s",
            "load_report": { "report": true },
        }]),
        json!([cluster("local", &[upstream])]),
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_ferrys_load_report_steers_an_outbound_ferry() -> anyhow::Result<()> {
    // Neither replica reports anything itself: the inbound ferries do.
    let (ua, ub) = (Peer::http("a", None).await?, Peer::http("b", None).await?);
    let (fa, fb) = (inbound(ua.addr).await?, inbound(ub.addr).await?);
    let (ia, ib) = (fa.listener(LISTENER)?, fb.listener(LISTENER)?);
    let outbound = start(&config(
        json!([{ "name": "all", "to": "models", "load_report": { "strip": true } }]),
        json!([reporting_cluster(
            "models",
            &[ia, ib],
            "named_metrics.ferry_inflight",
            1.0,
        )]),
    ))
    .await?;
    // Replica A is busy with 6 long requests that did not come through the outbound ferry
    // (another client, another outbound): only A's inbound ferry knows.
    let client = HttpClient::http1();
    let holds: Vec<_> = (0..6)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.get(ia, "/hold?s=60").await })
        })
        .collect();
    let admin_a = Admin::new(fa.admin());
    eventually(PATIENCE, || async {
        let dump = admin_a.config_dump().await?;
        let n = dump["endpoints"]["local"]["endpoints"][0]["in_flight"].as_u64();
        anyhow::ensure!(n == Some(6), "in flight at A: {n:?}");
        Ok(())
    })
    .await?;
    let reply = client.get(ia, "/probe").await?;
    let own = reply.header("endpoint-load-metrics").unwrap_or_default();
    assert!(
        own.contains("named_metrics.ferry_inflight=6"),
        "inbound A reports {own:?}"
    );

    let (counts, header) = sequential(&client, outbound.listener(LISTENER)?, 400).await?;
    let a_share = share(&counts, "a");
    eprintln!("inbound ferry reports: busy replica A got {a_share:.3}: {counts:?}");
    assert!(
        a_share <= 0.25,
        "busy replica A got {a_share:.2}: {counts:?}"
    );
    assert!(
        header.is_none(),
        "the outbound route strips reports: {header:?}"
    );
    for h in holds {
        h.abort();
    }
    Ok(())
}

/// Issue 20, slow start: a replica back from an ejection gets less over its ramp than after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_replica_ramps_up_over_its_slow_start_window() -> anyhow::Result<()> {
    const WINDOW: Duration = Duration::from_secs(3);
    let (a, b) = (Peer::http("a", None).await?, Peer::http("b", None).await?);
    let mut pool = cluster("pool", &[a.addr, b.addr]);
    pool["slow_start"] = json!({ "window": "3s", "initial": "10%" });
    pool["outlier"] = json!({ "consecutive_failures": 2, "ejection": "1s", "max_ejection": "1s" });
    let ferry = start(&config(
        json!([{ "name": "all", "to": "pool" }]),
        json!([pool]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();
    let b_ejected = |dump: &Value| {
        dump["endpoints"]["pool"]["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["address"] == b.addr.to_string())
            .and_then(|e| e["ejected"].as_bool())
    };
    // B fails until ejected, then is healthy again.
    client.get(b.addr, "/control?fail=1").await?;
    eventually(PATIENCE, || async {
        client.get(addr, "/x").await?;
        let dump = admin.config_dump().await?;
        anyhow::ensure!(b_ejected(&dump) == Some(true), "B not ejected yet");
        Ok(())
    })
    .await?;
    client.get(b.addr, "/control?fail=0").await?;
    eventually(PATIENCE, || async {
        let dump = admin.config_dump().await?;
        anyhow::ensure!(b_ejected(&dump) == Some(false), "B still ejected");
        Ok(())
    })
    .await?;
    // Two callers at once over the ramp, then over as long again after it: the in-flight
    // counts spread them evenly once B is at full share (one caller alone, a single late answer
    // keeps a replica out for a second or more: bench/results/2026-12-05-spread). Not many
    // more: with eight, A's in-flight factor (up to 9×) would outweigh B's 1/10 share at once.
    let mut windows = Vec::new();
    for _ in 0..2 {
        windows.push(concurrent(&client, addr, 2, WINDOW).await?);
    }
    let (ramp, steady) = (share(&windows[0], "b"), share(&windows[1], "b"));
    eprintln!("slow start: B got {ramp:.3} over its ramp, {steady:.3} after: {windows:?}");
    let dump = admin.config_dump().await?;
    assert!(
        steady >= 0.2,
        "after the ramp B got {steady:.2}: {:?}\n{:#}",
        windows[1],
        dump["endpoints"]
    );
    assert!(
        ramp < 0.75 * steady,
        "B got {ramp:.2} over its ramp and {steady:.2} after: {windows:?}"
    );
    Ok(())
}
