//! The admin endpoint and `ferry validate`.

use ferry_integration::ferry::validate;
use ferry_integration::{Admin, Echo, HttpClient, workspace};

use crate::support::{LISTENER, one_upstream, start};

#[tokio::test]
async fn live_ready_config_dump_and_metrics() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start(&one_upstream(echo.addr())).await?;
    let admin = Admin::new(ferry.admin());
    assert_eq!(admin.get("/live").await?.status, 200);
    assert_eq!(admin.get("/ready").await?.status, 200);
    let dump = admin.config_dump().await?;
    assert!(
        !dump["version"].is_null(),
        "config_dump has no version: {dump}"
    );
    assert!(
        !dump["loaded_at"].is_null(),
        "config_dump has no loaded_at: {dump}"
    );

    let reply = HttpClient::http1()
        .get(ferry.listener(LISTENER)?, "/m")
        .await?;
    assert_eq!(reply.status, 200);
    let m = admin.metrics().await?;
    let labels = [
        ("listener", LISTENER),
        ("route", "all"),
        ("cluster", "up"),
        ("code", "200"),
    ];
    assert_eq!(m.sum("ferry_requests_total", &labels), 1.0, "{}", m.text);
    for family in [
        "ferry_request_duration_seconds",
        "ferry_upstream_connect_errors_total",
        "ferry_active_connections",
        "ferry_config_reloads_total",
        "ferry_config_reload_failures_total",
        "ferry_endpoint_ejections_total",
        "ferry_retries_total",
    ] {
        assert!(m.has_family(family), "no {family} in /metrics:\n{}", m.text);
    }
    assert!(
        m.matching("ferry_request_duration_seconds_bucket", &[("route", "all")])
            .count()
            > 1
    );
    Ok(())
}

#[tokio::test]
async fn validate_reports_every_error_with_position_and_exits_64() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bad = dir.path().join("bad.yaml");
    let text = "apiVersion: ferry/v1\n\
listeners:\n\
  - name: main\n\
    address: 127.0.0.1:0\n\
    routes:\n\
      - name: r\n\
        to: nowhere\n\
        timeout: 5 sec\n\
        colour: blue\n\
clusters:\n\
  - name: c\n\
    endpoints: [127.0.0.1:1]\n";
    tokio::fs::write(&bad, text).await?;
    let (code, out) = validate(std::slice::from_ref(&bad)).await?;
    assert_eq!(code, 64, "output:\n{out}");
    let prefix = format!("{}:", bad.display());
    let located: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.strip_prefix(&prefix).is_some_and(|rest| {
                let mut parts = rest.splitn(3, ':');
                parts.next().is_some_and(|l| l.parse::<u32>().is_ok())
                    && parts.next().is_some_and(|c| c.parse::<u32>().is_ok())
            })
        })
        .collect();
    // Three separate faults, all reported at once, each as file:line:col: path: message.
    assert!(
        located.len() >= 3,
        "want >= 3 file:line:col errors, got:\n{out}"
    );
    for needle in ["nowhere", "5 sec", "colour"] {
        assert!(
            located.iter().any(|l| l.contains(needle)),
            "no error mentions {needle:?}:\n{out}"
        );
    }

    let example = workspace::root().join("examples").join("full.yaml");
    let (code, out) = validate(&[example]).await?;
    assert_eq!(code, 0, "examples/full.yaml must validate:\n{out}");
    Ok(())
}
