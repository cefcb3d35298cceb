//! Request-rate limits: a burst is admitted and the next request refused with honest headers,
//! the bucket refills after its window, one tenant's flood does not spend another's quota,
//! overrides give a key more, and shadow limits count without refusing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferry_integration::{Admin, Echo, HttpClient};
use serde_json::json;
use tokio::time::Instant;

use crate::support::{
    LISTENER, PATIENCE, TENANT, as_tenant, assert_limited, cluster, config, decisions, get,
    header_u64, one_route, start,
};

#[tokio::test]
async fn burst_then_429_then_refill_after_the_window() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    // 4 per second: a cell comes back every 250 ms, and a full bucket holds 4.
    let routes = json!([
        { "name": "warm", "match": { "path": { "prefix": "/warm" } }, "to": "up" },
        { "name": "llm", "to": "up", "rate_limit": [{ "name": "burst", "requests": 4, "per": "1s" }] },
    ]);
    let ferry = start(&config(routes, json!([cluster("up", up.addr())]))).await?;
    let (addr, client) = (ferry.listener(LISTENER)?, HttpClient::http1());
    // A warm keep-alive connection, so the burst below is not slowed by a connect.
    assert_eq!(get(&client, addr, "/warm", &[]).await?.status, 200);

    for round in 0..2 {
        let started = Instant::now();
        let mut admitted = Vec::new();
        let refused = loop {
            anyhow::ensure!(admitted.len() < 20, "round {round}: never refused");
            let r = get(&client, addr, "/", &[]).await?;
            if r.status != 200 {
                break r;
            }
            admitted.push(header_u64(&r, "x-ratelimit-remaining")?);
            assert_eq!(header_u64(&r, "x-ratelimit-limit")?, 4);
        };
        let retry_after = assert_limited(&refused, "burst", 4)?;
        // The whole burst passes; a cell earned back while it was sent may add one more.
        let earned = started.elapsed().as_millis() as usize / 250;
        assert!(
            (4..=4 + earned + 1).contains(&admitted.len()),
            "round {round}: admitted {} ({admitted:?}), {earned} cells earned",
            admitted.len()
        );
        assert_eq!(
            &admitted[..4],
            &[3, 2, 1, 0],
            "x-ratelimit-remaining counts down"
        );
        assert_eq!(retry_after, 1, "250 ms to the next cell, rounded up");
        // The window: a full bucket again after 1 s. Waiting is the claim under test here.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let admin = Admin::new(ferry.admin());
    assert_eq!(decisions(&admin, "burst", "limited").await?, 2.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_tenant_does_not_spend_another_tenants_quota() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    let limit = json!({ "rate_limit": [{
        "name": "per-tenant", "requests": 20, "per": "1s", "key": [format!("header:{TENANT}")],
    }]});
    let ferry = start(&one_route(up.addr(), limit)).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let (noisy_ok, noisy_limited) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let mut flood = Vec::new();
    for _ in 0..4 {
        let (client, ok, limited) = (client.clone(), noisy_ok.clone(), noisy_limited.clone());
        flood.push(tokio::spawn(async move {
            for _ in 0..150 {
                match as_tenant(&client, addr, "noisy").await?.status.as_u16() {
                    200 => ok.fetch_add(1, Ordering::Relaxed),
                    429 => limited.fetch_add(1, Ordering::Relaxed),
                    other => anyhow::bail!("noisy got {other}"),
                };
            }
            anyhow::Ok(())
        }));
    }
    // The quiet tenant sends within its own limit while the flood runs: every request passes.
    let mut quiet = Vec::new();
    for _ in 0..15 {
        let r = as_tenant(&client, addr, "quiet").await?;
        quiet.push(r.status.as_u16());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for task in flood {
        task.await??;
    }
    let elapsed = started.elapsed();
    assert_eq!(
        quiet,
        vec![200; 15],
        "quiet tenant refused during the flood"
    );
    let (ok, limited) = (
        noisy_ok.load(Ordering::Relaxed),
        noisy_limited.load(Ordering::Relaxed),
    );
    // The noisy tenant got its burst and its rate, no more.
    let allowed = 20 + (elapsed.as_millis() as u64 * 20).div_ceil(1000) + 1;
    assert!(
        ok <= allowed && limited > 0,
        "noisy: {ok} admitted (at most {allowed} in {elapsed:?}), {limited} refused"
    );
    // A missing header is a key of its own ("" ), limited like any other, never a bypass.
    let mut missing = Vec::new();
    for _ in 0..25 {
        missing.push(get(&client, addr, "/", &[]).await?.status.as_u16());
    }
    assert_eq!(missing[0], 200, "no header: not charged to noisy's bucket");
    assert!(missing.contains(&429), "no header must still be limited");
    Ok(())
}

#[tokio::test]
async fn overrides_give_a_key_a_larger_amount() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    let limit = json!({ "rate_limit": [{
        "name": "tiers", "requests": 2, "per": "60s", "key": [format!("header:{TENANT}")],
        "overrides": [{ "match": { format!("header:{TENANT}"): "gold" }, "requests": 6 }],
    }]});
    let ferry = start(&one_route(up.addr(), limit)).await?;
    let (addr, client) = (ferry.listener(LISTENER)?, HttpClient::http1());
    for (tenant, amount) in [("silver", 2u64), ("gold", 6), ("bronze", 2)] {
        for i in 0..amount {
            let r = as_tenant(&client, addr, tenant).await?;
            assert_eq!(r.status, 200, "{tenant} request {i}: {}", r.text());
            assert_eq!(header_u64(&r, "x-ratelimit-limit")?, amount);
            assert_eq!(header_u64(&r, "x-ratelimit-remaining")?, amount - 1 - i);
        }
        assert_limited(&as_tenant(&client, addr, tenant).await?, "tiers", amount)?;
    }
    Ok(())
}

#[tokio::test]
async fn shadow_limits_count_but_never_refuse_and_stay_invisible() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    let limits = json!({ "rate_limit": [
        { "name": "trial", "requests": 1, "per": "60s", "mode": "shadow" },
        { "name": "roomy", "requests": 1000, "per": "60s" },
    ]});
    let ferry = start(&one_route(up.addr(), limits)).await?;
    let (addr, client) = (ferry.listener(LISTENER)?, HttpClient::http1());
    for i in 0..10u64 {
        let r = get(&client, addr, "/", &[]).await?;
        assert_eq!(r.status, 200, "shadow refused request {i}: {}", r.text());
        // The headers are the enforced limit's: the shadow one is invisible to callers.
        assert_eq!(header_u64(&r, "x-ratelimit-limit")?, 1000);
        assert_eq!(header_u64(&r, "x-ratelimit-remaining")?, 999 - i);
    }
    assert_eq!(up.requests(), 10);
    let admin = Admin::new(ferry.admin());
    assert_eq!(decisions(&admin, "trial", "allowed").await?, 1.0);
    assert_eq!(decisions(&admin, "trial", "shadow_limited").await?, 9.0);
    assert_eq!(decisions(&admin, "trial", "limited").await?, 0.0);
    assert_eq!(decisions(&admin, "roomy", "allowed").await?, 10.0);
    // A shadow limit alone writes no quota headers at all.
    let only_shadow = json!({ "rate_limit": [
        { "name": "trial", "requests": 1, "per": "60s", "mode": "shadow" },
    ]});
    ferry
        .config()?
        .write_value(&one_route(up.addr(), only_shadow))
        .await?;
    ferry_integration::eventually(PATIENCE, || async {
        let r = get(&client, addr, "/", &[]).await?;
        anyhow::ensure!(r.status == 200, "{}", r.status);
        anyhow::ensure!(
            r.header("x-ratelimit-limit").is_none(),
            "still the old table"
        );
        Ok(())
    })
    .await?;
    Ok(())
}
