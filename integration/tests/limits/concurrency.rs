//! The in-flight cap, seen from the upstream's side: it never holds more than `max`, the queue
//! is served once slots free up, overflow is a 503, the gauges show who waits, a streamed
//! answer holds its slot until it ends, and slots are per model.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_integration::{Admin, Gate, HttpClient, Reply, Sse, eventually};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{LISTENER, PATIENCE, get, one_route, post_json, start};

/// `n` concurrent `GET path`s, each on its own task.
fn spawn_gets(
    client: &HttpClient,
    addr: SocketAddr,
    path: &str,
    n: usize,
) -> Vec<JoinHandle<anyhow::Result<Reply>>> {
    (0..n)
        .map(|_| {
            let (client, path) = (client.clone(), path.to_owned());
            tokio::spawn(async move { get(&client, addr, &path, &[]).await })
        })
        .collect()
}

/// In flight and queued for (route `llm`, `model`) on `/metrics`.
async fn gauges(admin: &Admin, model: &str) -> anyhow::Result<(f64, f64)> {
    let m = admin.metrics().await?;
    let labels = [("route", "llm"), ("model", model)];
    Ok((
        m.get("ferry_concurrency_in_flight", &labels)?,
        m.get("ferry_concurrency_queue_depth", &labels)?,
    ))
}

/// Asserts a concurrency refusal: 503 with a JSON error.
fn assert_shed(r: &Reply, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(r.status == 503, "want 503, got {} {}", r.status, r.text());
    let body: Value = r.json()?;
    let error = body["error"].as_str().unwrap_or_default();
    anyhow::ensure!(
        error.contains(what),
        "503 body does not say {what:?}: {body}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_upstream_never_sees_more_than_max_and_the_queue_is_served() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    let limit = json!({ "concurrency": { "max": 2, "queue": 3, "queue_timeout": "20s" } });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let (addr, admin) = (ferry.listener(LISTENER)?, Admin::new(ferry.admin()));
    let client = HttpClient::http1();
    let mut calls = spawn_gets(&client, addr, "/slow", 8);

    // Two at the upstream, three waiting in ferry, and the gauges say so while they wait.
    eventually(PATIENCE, || async {
        anyhow::ensure!(gate.in_flight() == 2, "upstream holds {}", gate.in_flight());
        let g = gauges(&admin, "").await?;
        anyhow::ensure!(g == (2.0, 3.0), "in flight, queued = {g:?}");
        Ok(())
    })
    .await?;
    let dump = admin.config_dump().await?;
    let slots = &dump["limits"]["concurrency"][0];
    assert_eq!(slots["max"], 2, "{dump}");
    assert_eq!(
        slots["models"],
        json!([{ "model": "", "in_flight": 2, "queued": 3, "limit": 2 }])
    );

    // The other three found the queue full and were refused at once.
    let mut shed = 0;
    for call in calls.iter_mut().filter(|c| c.is_finished()) {
        assert_shed(&call.await??, "queue is full")?;
        shed += 1;
    }
    assert_eq!(shed, 3);
    assert_eq!(gate.arrived(), 2);

    gate.open();
    for call in calls.into_iter().filter(|c| !c.is_finished()) {
        let r = call.await??;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(
        (gate.answered(), gate.peak()),
        (5, 2),
        "peak at the upstream"
    );
    eventually(PATIENCE, || async {
        let g = gauges(&admin, "").await?;
        anyhow::ensure!(g == (0.0, 0.0), "gauges not back to zero: {g:?}");
        Ok(())
    })
    .await?;
    let waited = admin
        .metrics()
        .await?
        .sum("ferry_concurrency_queue_seconds_count", &[("route", "llm")]);
    assert_eq!(waited, 3.0, "three requests waited in the queue");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_request_gives_up_after_queue_timeout() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    let limit = json!({ "concurrency": { "max": 1, "queue": 1, "queue_timeout": "300ms" } });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let held = spawn_gets(&client, addr, "/held", 1);
    eventually(PATIENCE, || async {
        anyhow::ensure!(gate.in_flight() == 1);
        Ok(())
    })
    .await?;
    let started = tokio::time::Instant::now();
    let r = get(&client, addr, "/waits", &[]).await?;
    assert_shed(&r, "no slot within the queue timeout")?;
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    gate.open();
    for call in held {
        assert_eq!(call.await??.status, 200);
    }
    assert_eq!(gate.peak(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_holds_its_slot_until_the_stream_ends() -> anyhow::Result<()> {
    let sse = Sse::start().await?;
    // No route timeout: a stream's length is not a deadline.
    let limit = json!({
        "timeout": "0s",
        "concurrency": { "max": 1, "queue": 1, "queue_timeout": "20s" },
    });
    let ferry = start(&one_route(sse.addr(), limit)).await?;
    let (addr, admin) = (ferry.listener(LISTENER)?, Admin::new(ferry.admin()));
    let client = HttpClient::http1();

    let first = client.get_stream(addr, "/events/1").await?;
    assert_eq!(first.status(), 200);
    let upstream_first = sse.next_stream(PATIENCE).await?;
    upstream_first.send("one").await?;
    let mut first_body = first.into_body();
    let frame = first_body.frame().await.transpose()?;
    let data = frame.and_then(|f| f.into_data().ok()).unwrap_or_default();
    assert_eq!(&data[..], b"data: one\n\n");

    // While the stream is open the next request waits, and the one after is refused.
    let second = spawn_gets(&client, addr, "/events/2", 1);
    eventually(PATIENCE, || async {
        let g = gauges(&admin, "").await?;
        anyhow::ensure!(g == (1.0, 1.0), "in flight, queued = {g:?}");
        Ok(())
    })
    .await?;
    assert_shed(
        &get(&client, addr, "/events/3", &[]).await?,
        "queue is full",
    )?;

    // The stream ends: its slot goes to the waiting request, which now reaches the upstream.
    drop(upstream_first);
    assert!(first_body.collect().await?.to_bytes().is_empty());
    let upstream_second = sse.next_stream(PATIENCE).await?;
    assert_eq!(upstream_second.path(), "/events/2");
    upstream_second.send("two").await?;
    drop(upstream_second);
    for call in second {
        let r = call.await??;
        assert_eq!(
            (r.status.as_u16(), r.text().as_str()),
            (200, "data: two\n\n")
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_are_per_model_named_in_the_oip_path() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    let limit = json!({ "concurrency": { "max": 1, "queue": 0 } });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let (addr, admin) = (ferry.listener(LISTENER)?, Admin::new(ferry.admin()));
    let client = HttpClient::http1();
    let mut held = spawn_gets(&client, addr, "/v2/models/a/infer", 1);
    held.extend(spawn_gets(&client, addr, "/v2/models/b/infer", 1));
    // One of each model at the upstream at once: they do not share a slot.
    eventually(PATIENCE, || async {
        anyhow::ensure!(gate.in_flight() == 2, "upstream holds {}", gate.in_flight());
        Ok(())
    })
    .await?;
    assert_shed(
        &get(&client, addr, "/v2/models/a/infer", &[]).await?,
        "\"a\"",
    )?;
    assert_eq!(gauges(&admin, "a").await?, (1.0, 0.0));
    assert_eq!(gauges(&admin, "b").await?, (1.0, 0.0));
    gate.open();
    for call in held {
        assert_eq!(call.await??.status, 200);
    }
    Ok(())
}

/// The model an OpenAI-style request names is in its JSON body; concurrency slots are "per
/// route and model", so two models must not share one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_are_per_model_named_in_the_json_body() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    let limit = json!({ "concurrency": { "max": 1, "queue": 0 } });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let chat = |model: &str| json!({ "model": model, "messages": [] });
    let mut held = Vec::new();
    for model in ["a", "b"] {
        let (client, body) = (client.clone(), chat(model));
        held.push(tokio::spawn(async move {
            post_json(&client, addr, "/v1/chat/completions", &body).await
        }));
    }
    let both = eventually(PATIENCE, || async {
        anyhow::ensure!(gate.in_flight() == 2, "upstream holds {}", gate.in_flight());
        Ok(())
    })
    .await;
    gate.open();
    let mut statuses = Vec::new();
    for call in held {
        let r = call.await??;
        statuses.push(format!("{} {}", r.status, r.text()));
    }
    both.map_err(|e| e.context(format!("answers: {statuses:?}")))?;
    Ok(())
}

/// Same for a rate limit keyed on `model`: one model's exhausted bucket is not another's.
#[tokio::test]
async fn a_model_keyed_rate_limit_tells_json_models_apart() -> anyhow::Result<()> {
    let gate = Gate::start().await?;
    gate.open();
    let limit = json!({ "rate_limit": [{ "name": "per-model", "requests": 1, "per": "60s", "key": ["model"] }] });
    let ferry = start(&one_route(gate.addr(), limit)).await?;
    let (addr, client) = (ferry.listener(LISTENER)?, HttpClient::http1());
    let chat = |model: &str| json!({ "model": model, "messages": [] });
    let path = "/v1/chat/completions";
    assert_eq!(
        post_json(&client, addr, path, &chat("a")).await?.status,
        200
    );
    assert_eq!(
        post_json(&client, addr, path, &chat("a")).await?.status,
        429
    );
    let b = post_json(&client, addr, path, &chat("b")).await?;
    assert_eq!(
        b.status,
        200,
        "model b refused by model a's bucket: {}",
        b.text()
    );
    Ok(())
}
