//! The admin page in a real browser: headless Chromium (Debian `chromium`, installed by the
//! test set-up) loads `GET /` from the real `ferry` binary after traffic, runs the page's
//! JavaScript against the admin endpoints, and the resulting DOM shows the route and the model
//! by name, charts with drawn lines, the failed requests, and no script errors (neither in the
//! page's own error box nor on the browser console). A screenshot is taken too; with
//! `FERRY_ADMIN_SCREENSHOT=PATH` it is written there (docs/img/admin-page.png is made so).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails the test by panicking"
)]

use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, Ferry, HttpClient, chromium, eventually, to_yaml};
use http::Method;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(30);

/// The first `<path d="…">` with at least two points drawn inside the element `id`.
fn chart_line(dom: &str, id: &str) -> Option<String> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let rest = &dom[start..];
    let end = rest.find("</section>").unwrap_or(rest.len());
    rest[..end]
        .split("<path d=\"")
        .skip(1)
        .filter_map(|p| p.split('"').next())
        .find(|d| d.starts_with('M') && d.contains(" L"))
        .map(str::to_owned)
}

#[tokio::test]
async fn the_admin_page_shows_routes_models_charts_and_failures_in_a_real_browser()
-> anyhow::Result<()> {
    chromium::install().await?;
    let echo = Echo::start("up").await?;
    let config = json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{
            "name": "main",
            "address": "127.0.0.1:0",
            "routes": [
                {
                    "name": "resnet-infer",
                    "match": { "path": { "prefix": "/v2/models/" }, "model": { "name": "resnet" } },
                    "to": "models",
                },
                { "name": "fallback", "to": "models" },
            ],
        }],
        "clusters": [{ "name": "models", "endpoints": [echo.addr().to_string()] }],
    });
    let ferry = Ferry::start(&to_yaml(&config)).await?;
    let addr = ferry.listener("main")?;
    let admin = Admin::new(ferry.admin());
    let client = HttpClient::http1();

    // Traffic until the per-second series of the route has answers in three seconds, so
    // each chart has a line to draw; a few answers fail, for the failed list.
    let mut n = 0;
    eventually(PATIENCE, || {
        n += 1;
        let client = client.clone();
        let admin = admin.clone();
        async move {
            let failing = n % 4 == 0;
            let mut headers = vec![("content-type", "application/json")];
            if failing {
                headers.push(("x-test-status", "503"));
            }
            let req = request(
                Method::POST,
                addr,
                "/v2/models/resnet/infer",
                &headers,
                body_full(Bytes::from_static(b"{}")),
            )?;
            let status = client.call(req).await?.status;
            assert_eq!(status, if failing { 503 } else { 200 });
            let stats: Value = admin
                .get("/stats?window=5m&by=route&series=1")
                .await?
                .json()?;
            let seconds = stats["rows"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["route"] == "resnet-infer"))
                .and_then(|r| r["series"]["rps"].as_array())
                .map_or(0, |s| s.iter().filter(|v| v.as_u64() > Some(0)).count());
            anyhow::ensure!(
                seconds >= 3 && n >= 8,
                "answers in {seconds} seconds so far"
            );
            Ok(())
        }
    })
    .await?;

    let url = format!("http://{}/", ferry.admin());
    let run = chromium::dump_dom(&url, 5000).await?;
    let dom = &run.stdout;
    assert!(dom.contains("resnet-infer"), "route not shown:\n{dom}");
    assert!(
        dom.contains("data-count=\"0\""),
        "the page reported errors:\n{dom}"
    );
    let route_line = chart_line(dom, "by-route").unwrap_or_default();
    assert!(!route_line.is_empty(), "no route chart line:\n{dom}");
    let model_section = &dom[dom.find("id=\"by-model\"").unwrap()..];
    assert!(model_section.contains("resnet "), "model not shown:\n{dom}");
    assert!(
        chart_line(dom, "by-model").is_some(),
        "no model chart line:\n{dom}"
    );
    let failed = &dom[dom.find("id=\"failed\"").unwrap()..];
    assert!(failed.contains("503"), "failed request not listed:\n{dom}");
    assert!(
        dom.contains(&echo.addr().to_string()),
        "endpoint not listed"
    );
    let console_errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console messages: {console_errors:#?}"
    );

    let dir = tempfile::tempdir()?;
    let png = std::env::var_os("FERRY_ADMIN_SCREENSHOT")
        .map_or_else(|| dir.path().join("admin-page.png"), Into::into);
    chromium::screenshot(&url, 5000, &png).await?;
    let bytes = std::fs::read(&png)?;
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "not a screenshot: {} bytes",
        bytes.len()
    );
    Ok(())
}
