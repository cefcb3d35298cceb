//! Limit state across reloads: a reload that leaves a limit's own definition alone keeps its
//! counters (an edit to another route, or to the same route elsewhere), one that changes the
//! limit starts it afresh.

use ferry_integration::{Admin, Echo, HttpClient};
use serde_json::{Value, json};

use crate::support::{LISTENER, assert_limited, cluster, config, get, start, wait_generation};

/// The config: route `llm` with the limit `tight` of `amount` per minute and `timeout`, and an
/// unrelated route `other` whose header edit names `generation`.
fn generation(up: &Echo, generation: u32, amount: u64, timeout: &str) -> Value {
    config(
        json!([
            {
                "name": "other", "match": { "path": { "prefix": "/other" } }, "to": "up",
                "request_headers": { "set": { "x-generation": format!("generation-{generation}") } },
            },
            {
                "name": "llm", "to": "up", "timeout": timeout,
                "rate_limit": [{ "name": "tight", "requests": amount, "per": "60s" }],
            },
        ]),
        json!([cluster("up", up.addr())]),
    )
}

#[tokio::test]
async fn unchanged_limits_keep_their_counters_and_edited_ones_reset() -> anyhow::Result<()> {
    let up = Echo::start("up").await?;
    let ferry = start(&generation(&up, 1, 2, "15s")).await?;
    let (addr, client) = (ferry.listener(LISTENER)?, HttpClient::http1());
    let admin = Admin::new(ferry.admin());
    for _ in 0..2 {
        assert_eq!(get(&client, addr, "/", &[]).await?.status, 200);
    }
    assert_limited(&get(&client, addr, "/", &[]).await?, "tight", 2)?;

    // Another route edited: the limit is as spent as before.
    ferry
        .config()?
        .write_value(&generation(&up, 2, 2, "15s"))
        .await?;
    wait_generation(&admin, "2").await?;
    assert_limited(&get(&client, addr, "/", &[]).await?, "tight", 2)?;

    // The limit's own route edited elsewhere (its timeout): still spent.
    ferry
        .config()?
        .write_value(&generation(&up, 3, 2, "10s"))
        .await?;
    wait_generation(&admin, "3").await?;
    assert_limited(&get(&client, addr, "/", &[]).await?, "tight", 2)?;

    // The limit itself edited: a fresh bucket with the new amount.
    ferry
        .config()?
        .write_value(&generation(&up, 4, 3, "10s"))
        .await?;
    wait_generation(&admin, "4").await?;
    for i in 0..3 {
        let r = get(&client, addr, "/", &[]).await?;
        assert_eq!(
            r.status,
            200,
            "request {i} after the limit changed: {}",
            r.text()
        );
    }
    assert_limited(&get(&client, addr, "/", &[]).await?, "tight", 3)?;
    Ok(())
}
