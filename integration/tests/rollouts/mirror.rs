//! `routes[].mirror`: the mirrored share and its stability per request id, a dead, hung or
//! failing candidate never failing the primary, and requests over `max_body` served but not
//! mirrored. Comparisons are in `mirror_compare`.

use std::collections::HashSet;
use std::net::SocketAddr;

use ferry_integration::client::{body_full, body_stream, request};
use ferry_integration::{Admin, Ferry, HttpClient, eventually};
use futures_util::StreamExt as _;
use http::Method;
use serde_json::{Value, json};

use crate::oip_model::{Behaviour, OipModel};
use crate::support::{LISTENER, PATIENCE, config, start};

pub(crate) const INFER: &str = "/v2/models/m/infer";

pub(crate) fn h2_cluster(name: &str, addr: SocketAddr) -> Value {
    json!({ "name": name, "endpoints": [addr.to_string()], "protocol": "h2" })
}

pub(crate) fn route(mirror: Value) -> Value {
    json!([{ "name": "infer", "to": "primary", "mirror": mirror }])
}

pub(crate) fn json_body() -> String {
    json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1.0, 2.0] }] })
        .to_string()
}

/// Sends `n` REST JSON requests, `concurrency` at a time, with ids `id-<i>` (or ferry's own
/// when `ids` is false); returns the statuses that were not 200.
async fn send_many(
    client: &HttpClient,
    addr: SocketAddr,
    ids: impl Iterator<Item = usize>,
    with_ids: bool,
    concurrency: usize,
) -> anyhow::Result<Vec<u16>> {
    let statuses: Vec<anyhow::Result<u16>> = futures_util::stream::iter(ids)
        .map(|i| {
            let client = client.clone();
            async move {
                let id = format!("id-{i}");
                let headers: Vec<(&str, &str)> = if with_ids {
                    vec![
                        ("x-request-id", id.as_str()),
                        ("content-type", "application/json"),
                    ]
                } else {
                    vec![("content-type", "application/json")]
                };
                let req = request(Method::POST, addr, INFER, &headers, body_full(json_body()))?;
                Ok(client.call(req).await?.status.as_u16())
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let statuses: Vec<u16> = statuses.into_iter().collect::<anyhow::Result<_>>()?;
    Ok(statuses.into_iter().filter(|&s| s != 200).collect())
}

async fn metric(ferry: &Ferry, name: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
    Ok(Admin::new(ferry.admin()).metrics().await?.sum(name, labels))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenth_is_mirrored_stably_per_request_id() -> anyhow::Result<()> {
    const N: usize = 5000;
    let primary = OipModel::start(0.0).await?;
    let next = OipModel::start(0.0).await?;
    let cfg = config(
        route(json!([{ "cluster": "next", "fraction": 0.1 }])),
        json!([
            h2_cluster("primary", primary.addr()),
            h2_cluster("next", next.addr())
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::h2c();
    let failed = send_many(&client, addr, 0..N, true, 64).await?;
    assert!(failed.is_empty(), "primary answers not 200: {failed:?}");
    assert_eq!(primary.requests(), N as u64);
    let mirrored = eventually(PATIENCE, || async {
        let answered = metric(&ferry, "ferry_mirror_total", &[("outcome", "answered")]).await?;
        anyhow::ensure!(
            answered as u64 == next.requests(),
            "{answered} vs {}",
            next.requests()
        );
        anyhow::ensure!(answered > 0.0);
        Ok(next.requests())
    })
    .await?;
    let share = mirrored as f64 / N as f64;
    assert!((0.08..=0.12).contains(&share), "mirrored share {share}");
    // Marked for the candidate: the header and a -shadow authority.
    let seen = next.seen();
    assert!(
        seen.iter().all(|s| s.mirror.as_deref() == Some("infer")),
        "{:?}",
        &seen[..3]
    );
    assert!(
        seen.iter().all(|s| s.host.contains("-shadow:")),
        "{:?}",
        &seen[..3]
    );
    // The same ids again: exactly the same ones are mirrored.
    let first: HashSet<String> = seen.iter().map(|s| s.request_id.clone()).collect();
    let failed = send_many(&client, addr, 0..1000, true, 64).await?;
    assert!(failed.is_empty());
    let expected = (0..1000)
        .filter(|i| first.contains(&format!("id-{i}")))
        .count() as u64;
    eventually(PATIENCE, || async {
        anyhow::ensure!(
            next.requests() == mirrored + expected,
            "{} vs {}",
            next.requests(),
            mirrored + expected
        );
        Ok(())
    })
    .await?;
    let again: Vec<String> = next.seen()[mirrored as usize..]
        .iter()
        .map(|s| s.request_id.clone())
        .collect();
    assert!(
        again.iter().all(|id| first.contains(id)),
        "a new id was mirrored the second time"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_hung_or_failing_candidate_never_fails_the_primary() -> anyhow::Result<()> {
    const N: usize = 300;
    for behaviour in ["killed", "hung", "failing"] {
        let primary = OipModel::start(0.0).await?;
        let mut next = OipModel::start(0.0).await?;
        match behaviour {
            "killed" => next.kill().await,
            "hung" => next.set(Behaviour::Hang),
            _ => next.set(Behaviour::Fail),
        }
        let cfg = config(
            route(json!([{ "cluster": "next", "fraction": 1, "compare": "oip",
                           "timeout": "300ms", "max_in_flight": 16 }])),
            json!([
                h2_cluster("primary", primary.addr()),
                h2_cluster("next", next.addr())
            ]),
        );
        let ferry = start(&cfg).await?;
        let addr = ferry.listener(LISTENER)?;
        let client = HttpClient::http1();
        let started = std::time::Instant::now();
        let failed = send_many(&client, addr, 0..N, false, 16).await?;
        assert!(
            failed.is_empty(),
            "{behaviour}: primary answers not 200: {failed:?}"
        );
        assert_eq!(primary.requests(), N as u64, "{behaviour}");
        // Not a latency figure (bench/ has those): a hung candidate must not hold the
        // primary's answers for its 300 ms timeout each.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{behaviour}"
        );
        let outcomes = eventually(PATIENCE, || async {
            let m = Admin::new(ferry.admin()).metrics().await?;
            let get = |o| m.sum("ferry_mirror_total", &[("cluster", "next"), ("outcome", o)]);
            let all: f64 = [
                "answered",
                "error_status",
                "failed",
                "timeout",
                "overflow",
                "too_large",
                "cancelled",
                "unavailable",
            ]
            .iter()
            .map(|o| get(o))
            .sum();
            anyhow::ensure!(all as usize == N, "{behaviour}: {all} outcomes of {N}");
            Ok((
                get("failed"),
                get("timeout"),
                get("overflow"),
                get("error_status"),
                get("unavailable"),
            ))
        })
        .await?;
        match behaviour {
            // Refused connects, then mirrors held back while the candidate is gone (a few
            // may find every slot taken by mirrors still failing).
            "killed" => assert!(
                outcomes.0 > 0.0
                    && outcomes.4 > 0.0
                    && (outcomes.0 + outcomes.2 + outcomes.4) as usize == N,
                "{outcomes:?}"
            ),
            "hung" => assert!(outcomes.1 > 0.0 && outcomes.2 > 0.0, "{outcomes:?}"),
            _ => {
                assert!(
                    outcomes.3 > 0.0 && (outcomes.3 + outcomes.2) as usize == N,
                    "{outcomes:?}"
                );
                // A 500 against the primary's 200 is a mismatch, named by its status.
                let mismatches = eventually(PATIENCE, || async {
                    let m = metric(
                        &ferry,
                        "ferry_mirror_compare_total",
                        &[("result", "mismatch")],
                    )
                    .await?;
                    anyhow::ensure!(m == outcomes.3, "{m} mismatches of {}", outcomes.3);
                    Ok(m)
                })
                .await?;
                assert!(mismatches > 0.0);
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_max_body_is_served_and_not_mirrored() -> anyhow::Result<()> {
    let primary = OipModel::start(0.0).await?;
    let next = OipModel::start(0.0).await?;
    let cfg = config(
        route(json!([{ "cluster": "next", "fraction": 1, "compare": "oip", "max_body": "1KiB" }])),
        json!([
            h2_cluster("primary", primary.addr()),
            h2_cluster("next", next.addr())
        ]),
    );
    let ferry = start(&cfg).await?;
    // The effective config spells out the mirror with its defaults.
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let shown = &dump["config"]["listeners"][0]["routes"][0]["mirror"][0];
    assert_eq!(
        shown,
        &json!({ "cluster": "next", "fraction": 1.0, "compare": "oip",
                 "tolerance": { "abs": 1e-4, "rel": 1e-3 }, "max_body": 1024,
                 "timeout": "10s", "max_in_flight": 64 }),
        "{dump}"
    );
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let big = vec![b' '; 4096];
    // With a Content-Length: never sent to the candidate.
    let req = request(Method::POST, addr, INFER, &[], body_full(big.clone()))?;
    assert_eq!(client.call(req).await?.status, 200);
    // Chunked: the copy is cut off when it passes the bound.
    let chunks = futures_util::stream::iter(
        big.chunks(512)
            .map(bytes::Bytes::copy_from_slice)
            .collect::<Vec<_>>(),
    );
    let req = request(Method::POST, addr, INFER, &[], body_stream(chunks))?;
    assert_eq!(client.call(req).await?.status, 200);
    // A small one is mirrored.
    let req = request(Method::POST, addr, INFER, &[], body_full(json_body()))?;
    assert_eq!(client.call(req).await?.status, 200);
    eventually(PATIENCE, || async {
        let too_large = metric(&ferry, "ferry_mirror_total", &[("outcome", "too_large")]).await?;
        let answered = metric(&ferry, "ferry_mirror_total", &[("outcome", "answered")]).await?;
        anyhow::ensure!(
            (too_large, answered) == (2.0, 1.0),
            "{too_large} {answered}"
        );
        Ok(())
    })
    .await?;
    assert_eq!(primary.requests(), 3);
    // The candidate got only the small request whole: the chunked one reached it, but its
    // body was cut off at the bound (a reset, never a truncated body as if whole).
    let whole: Vec<_> = next.seen().into_iter().filter(|s| s.whole).collect();
    assert_eq!(whole.len(), 1, "{whole:?}");
    Ok(())
}
