//! `lb: {policy: hash}`: session affinity, the load bound on a hot key, keys moved by an added
//! endpoint, and prompt-prefix affinity for chat bodies sharing a long system prompt.

use std::collections::{HashMap, HashSet};

use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, Gate, HttpClient, eventually};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, PATIENCE, cluster, config, instance, start};

async fn echoes(n: usize) -> anyhow::Result<Vec<Echo>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(Echo::start(&format!("e{i}")).await?);
    }
    Ok(out)
}

#[tokio::test]
async fn one_session_lands_on_one_endpoint_over_1000_requests() -> anyhow::Result<()> {
    let ups = echoes(4).await?;
    let addrs: Vec<_> = ups.iter().map(Echo::addr).collect();
    let lb = json!({ "policy": "hash", "key": ["header:x-session-id"] });
    let cfg = config(
        json!([{ "name": "chat", "to": "vllm" }]),
        json!([cluster("vllm", &addrs, lb)]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    // 1,000 requests of one session, one after another as a chat's turns come: every one on
    // the same replica. (Sent 8 at a time, the default bound would spill some: one session's
    // 8 requests in flight are over 1.25 × the mean of 4 replicas. The hot-key test below.)
    let mut seen = HashSet::new();
    for _ in 0..1000 {
        let h = [("x-session-id", "session-42")];
        seen.insert(instance(&client, addr, Method::POST, &h, "{}".into()).await?);
    }
    assert_eq!(seen.len(), 1, "one session reached {seen:?}");
    // Other sessions are each as sticky, and together spread over the replicas.
    let mut homes = HashSet::new();
    for s in 0..40 {
        let id = format!("session-{s}");
        let h = [("x-session-id", id.as_str())];
        let first = instance(&client, addr, Method::GET, &h, String::new()).await?;
        for _ in 0..5 {
            let again = instance(&client, addr, Method::GET, &h, String::new()).await?;
            assert_eq!(again, first, "session {id} moved");
        }
        homes.insert(first);
    }
    assert!(homes.len() >= 3, "40 sessions landed on {homes:?}");
    // Without the header, the fallback (p2c-ewma) spreads requests.
    let mut spread = HashSet::new();
    for _ in 0..200 {
        spread.insert(instance(&client, addr, Method::GET, &[], String::new()).await?);
    }
    assert!(spread.len() >= 2, "keyless requests all went to {spread:?}");
    Ok(())
}

/// A hot session under `bounded_load: 1.25`: requests held in flight at the upstreams (each
/// sent once the previous one arrived, so every pick sees the ones before it), then released.
#[tokio::test]
async fn a_hot_key_spreads_to_the_next_endpoints_within_the_bound() -> anyhow::Result<()> {
    const N: u64 = 40;
    let mut gates = Vec::new();
    for _ in 0..4 {
        gates.push(Gate::start().await?);
    }
    let addrs: Vec<_> = gates.iter().map(Gate::addr).collect();
    let lb = json!({ "policy": "hash", "key": ["header:x-session-id"], "bounded_load": 1.25 });
    let cfg = config(
        json!([{ "name": "chat", "to": "vllm", "timeout": "60s" }]),
        json!([cluster("vllm", &addrs, lb)]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let mut pending = Vec::new();
    for i in 1..=N {
        let client = client.clone();
        let req = request(
            Method::POST,
            addr,
            "/v1/chat/completions",
            &[("x-session-id", "hot")],
            body_full("{}"),
        )?;
        pending.push(tokio::spawn(async move { client.call(req).await }));
        eventually(PATIENCE, || async {
            let arrived: u64 = gates.iter().map(Gate::arrived).sum();
            anyhow::ensure!(arrived == i, "{arrived} of {i} arrived");
            Ok(())
        })
        .await?;
        // The bound ferry applies: ceil(1.25 × mean in flight, this request counted).
        let bound = (1.25 * i as f64 / 4.0).ceil() as u64;
        for (g, gate) in gates.iter().enumerate() {
            assert!(
                gate.in_flight() <= bound,
                "request {i}: endpoint {g} holds {} (bound {bound})",
                gate.in_flight()
            );
        }
    }
    let loads: Vec<u64> = gates.iter().map(Gate::in_flight).collect();
    let busy = loads.iter().filter(|&&l| l > 0).count();
    assert!(busy >= 3, "the hot key did not spread: {loads:?}");
    // The key's own endpoint is full: it holds the most.
    let max = *loads.iter().max().unwrap_or(&0);
    assert_eq!(max, (1.25 * N as f64 / 4.0).ceil() as u64, "{loads:?}");
    for gate in &gates {
        gate.open();
    }
    for p in pending {
        assert_eq!(p.await??.status, 200);
    }
    Ok(())
}

/// A reload that adds an 11th endpoint to ten moves only the keys the new one takes: about
/// 1/11 of them (9 % on the ring's unit test; the target is at most 15 %).
#[tokio::test]
async fn adding_an_endpoint_by_reload_moves_about_a_tenth_of_the_keys() -> anyhow::Result<()> {
    const KEYS: usize = 1000;
    let ups = echoes(11).await?;
    let addrs: Vec<_> = ups.iter().map(Echo::addr).collect();
    let lb = json!({ "policy": "hash", "key": ["header:x-session-id"] });
    let routes = json!([{ "name": "chat", "to": "vllm" }]);
    let ten = config(
        routes.clone(),
        json!([cluster("vllm", &addrs[..10], lb.clone())]),
    );
    let ferry = start(&ten).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let homes = |client: HttpClient| async move {
        let mut out = HashMap::new();
        for k in 0..KEYS {
            let id = format!("user-{k}");
            let h = [("x-session-id", id.as_str())];
            out.insert(
                k,
                instance(&client, addr, Method::GET, &h, String::new()).await?,
            );
        }
        anyhow::Ok(out)
    };
    let before = homes(client.clone()).await?;
    let admin = Admin::new(ferry.admin());
    let reloads = admin
        .metrics()
        .await?
        .sum("ferry_config_reloads_total", &[]);
    let eleven = config(routes, json!([cluster("vllm", &addrs, lb)]));
    ferry.config()?.write_value(&eleven).await?;
    eventually(PATIENCE, || async {
        let now = admin
            .metrics()
            .await?
            .sum("ferry_config_reloads_total", &[]);
        anyhow::ensure!(now > reloads, "not reloaded yet");
        Ok(())
    })
    .await?;
    let after = homes(client).await?;
    let moved: Vec<usize> = (0..KEYS).filter(|k| before[k] != after[k]).collect();
    let share = moved.len() as f64 / KEYS as f64;
    println!(
        "adding 1 endpoint to 10 moved {:.1} % of {KEYS} keys",
        share * 100.0
    );
    assert!(share <= 0.15, "{:.1} % of keys moved", share * 100.0);
    assert!(
        share >= 0.04,
        "only {:.1} % moved: the new endpoint took nothing",
        share * 100.0
    );
    // Every key that moved went to the new endpoint.
    assert!(
        moved.iter().all(|k| after[k] == "e10"),
        "a key moved between old endpoints"
    );
    Ok(())
}

fn chat(system: &str, user: &str) -> String {
    json!({
        "model": "llama",
        "messages": [
            { "role": "system", "content": system },
            { "role": "user", "content": user },
        ],
        "stream": false,
    })
    .to_string()
}

#[tokio::test]
async fn chats_sharing_a_long_system_prompt_land_on_one_replica() -> anyhow::Result<()> {
    let ups = echoes(4).await?;
    let addrs: Vec<_> = ups.iter().map(Echo::addr).collect();
    let lb = json!({ "policy": "hash", "key": ["prompt_prefix:1024"], "bounded_load": 0 });
    let cfg = config(
        json!([{ "name": "chat", "to": "vllm" }]),
        json!([cluster("vllm", &addrs, lb)]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let json = [("content-type", "application/json")];
    let mut homes = HashSet::new();
    for app in 0..12 {
        // A 2 KiB system prompt per application; only its first 1,024 bytes are the key.
        let system = format!("You are assistant {app} of the fleet. ").repeat(60);
        let mut seen = HashSet::new();
        for q in 0..20 {
            let body = chat(&system, &format!("question {q}: what is {q} squared?"));
            seen.insert(instance(&client, addr, Method::POST, &json, body).await?);
        }
        assert_eq!(seen.len(), 1, "application {app}'s chats reached {seen:?}");
        homes.extend(seen);
    }
    assert!(
        homes.len() >= 2,
        "12 system prompts all landed on {homes:?}"
    );
    // The whole body reached the upstream (the prefix read was replayed).
    let body = chat(&"x".repeat(5000), "hi");
    let req = request(
        Method::POST,
        addr,
        "/v1/chat/completions",
        &json,
        body_full(body.clone()),
    )?;
    let reply = client.call(req).await?;
    let report: ferry_integration::EchoReport = reply.json()?;
    assert_eq!(report.body_len, body.len() as u64);
    Ok(())
}
