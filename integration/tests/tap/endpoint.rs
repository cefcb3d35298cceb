//! The admin `/tap` endpoint's refusals and its limit, over plain HTTP.

use ferry_integration::{Admin, Echo, HttpClient, eventually};
use serde_json::Value;

use crate::support::{PATIENCE, start_ferry};

#[tokio::test]
async fn an_unknown_filter_is_answered_400_naming_it() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start_ferry(echo.addr()).await?;
    let admin = Admin::new(ferry.admin());
    let reply = admin.get("/tap?route=echo&colour=red").await?;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body: Value = reply.json()?;
    assert_eq!(body["parameter"], "colour");
    assert!(
        body["error"].as_str().unwrap().contains("\"colour\""),
        "{body}"
    );
    let reply = admin.get("/tap?status=5xx,2x").await?;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json::<Value>()?["parameter"], "status");
    Ok(())
}

#[tokio::test]
async fn at_most_eight_taps_and_a_tap_whose_client_left_frees_its_slot() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start_ferry(echo.addr()).await?;
    let client = HttpClient::http1();
    let mut open = Vec::new();
    for _ in 0..8 {
        let resp = client.get_stream(ferry.admin(), "/tap").await?;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
        open.push(resp);
    }
    let refused = client.get(ferry.admin(), "/tap").await?;
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.json::<Value>()?["limit"], 8);
    // One client goes away: its connection closes and ferry detaches the tap.
    drop(open.pop());
    let resp = eventually(PATIENCE, || async {
        let resp = client.get_stream(ferry.admin(), "/tap").await?;
        anyhow::ensure!(resp.status() == 200, "still refused: {}", resp.status());
        Ok(resp)
    })
    .await?;
    open.push(resp);
    Ok(())
}
