//! A caller rotating a key part (here `x-tenant`) makes a bucket per value; ferry's memory must
//! stay bounded and the idle keys must be forgotten (every 10 s, a key whose bucket is full
//! again). Tens of thousands of distinct keys over keep-alive connections stand in for the
//! million a real attacker would send: the growth per key is what is measured.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferry_integration::{Admin, Echo, HttpClient, eventually};
use serde_json::json;

use crate::support::{LISTENER, TENANT, as_tenant, decisions, one_route, start};

/// Distinct keys sent.
const KEYS: u64 = 50_000;
/// Requests in flight at once.
const CONNECTIONS: u64 = 16;
/// What the keys may add to ferry's resident memory.
const MAX_GROWTH: u64 = 32 << 20;

/// Keys the `per-tenant` bucket holds, from `/config_dump`.
async fn keys_held(admin: &Admin) -> anyhow::Result<u64> {
    let dump = admin.config_dump().await?;
    dump["limits"]["rate_limits"]
        .as_array()
        .and_then(|all| all.iter().find(|l| l["limit"] == "per-tenant"))
        .and_then(|l| l["keys"].as_u64())
        .ok_or_else(|| anyhow::anyhow!("no per-tenant bucket in {}", dump["limits"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_keys_leave_memory_bounded_and_are_evicted() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    let limit = json!({ "rate_limit": [{
        "name": "per-tenant", "requests": 1, "per": "1s", "key": [format!("header:{TENANT}")],
    }]});
    let ferry = start(&one_route(up.addr(), limit)).await?;
    let (addr, admin) = (ferry.listener(LISTENER)?, Admin::new(ferry.admin()));
    let client = HttpClient::h2c();
    // Warm up: connections, pools and allocator arenas exist before the baseline.
    for i in 0..200 {
        assert_eq!(
            as_tenant(&client, addr, &format!("warm-{i}")).await?.status,
            200
        );
    }
    let before = ferry.rss_bytes().await?;

    let next = Arc::new(AtomicU64::new(0));
    let mut senders = Vec::new();
    for _ in 0..CONNECTIONS {
        let (client, next) = (client.clone(), next.clone());
        senders.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= KEYS {
                    return anyhow::Ok(());
                }
                let r = as_tenant(&client, addr, &format!("tenant-{i:08}")).await?;
                anyhow::ensure!(r.status == 200, "tenant {i}: {} {}", r.status, r.text());
            }
        }));
    }
    for s in senders {
        s.await??;
    }
    let after = ferry.rss_bytes().await?;
    let growth = after.saturating_sub(before);
    eprintln!(
        "{KEYS} keys: RSS {} -> {} KiB (+{} KiB)",
        before >> 10,
        after >> 10,
        growth >> 10
    );
    assert!(
        growth < MAX_GROWTH,
        "{KEYS} keys grew RSS by {} KiB ({} -> {} KiB)",
        growth >> 10,
        before >> 10,
        after >> 10
    );
    assert_eq!(
        decisions(&admin, "per-tenant", "allowed").await?,
        (KEYS + 200) as f64
    );
    // The last second's keys are certainly still held: their buckets are not full yet.
    let held = keys_held(&admin).await?;
    assert!(held > 0, "no keys held right after {KEYS} distinct ones");

    // Every key's bucket is full again 1 s after its request; the next sweep forgets it.
    eventually(Duration::from_secs(25), || async {
        let held = keys_held(&admin).await?;
        anyhow::ensure!(held < 100, "{held} keys still held");
        Ok(())
    })
    .await?;
    Ok(())
}
