//! Sinks come and go with the config: a reload adds one, a reload naming an unwritable one is
//! refused (the old sinks keep writing), and a reload that drops one stops its lines.

use std::path::Path;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, HttpClient, eventually, to_yaml};
use http::Method;
use serde_json::{Value, json};

use crate::support::{LISTENER, PATIENCE, cluster, json_lines, start};

fn config(echo: std::net::SocketAddr, sinks: &[&Path]) -> Value {
    let mut c = json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": [{ "name": LISTENER, "address": "127.0.0.1:0", "routes": [{ "name": "echo", "to": "echo" }] }],
        "clusters": [cluster("echo", echo, false)],
    });
    if !sinks.is_empty() {
        let list: Vec<Value> = sinks
            .iter()
            .map(|p| json!({ "path": p.to_str().unwrap() }))
            .collect();
        c["access_log"] = list.into();
    }
    c
}

/// Sends requests `{prefix}N` until `path` has a line of one; returns that id.
async fn until_in(addr: std::net::SocketAddr, path: &Path, prefix: &str) -> anyhow::Result<String> {
    let mut n = 0;
    eventually(PATIENCE, || {
        n += 1;
        let id = format!("{prefix}{n}");
        async move {
            let req = request(
                Method::GET,
                addr,
                "/",
                &[("x-request-id", id.as_str())],
                body_full(Bytes::new()),
            )?;
            assert_eq!(HttpClient::http1().call(req).await?.status, 200);
            let lines = json_lines(path)?;
            let seen = lines
                .iter()
                .find_map(|l| l["request_id"].as_str().filter(|i| i.starts_with(prefix)));
            seen.map(str::to_owned)
                .ok_or_else(|| anyhow::anyhow!("no {prefix}* in {} yet", path.display()))
        }
    })
    .await
}

/// Threads of ferry's named as access-log writers (`/proc/<pid>/task/*/comm`, 15 characters).
fn writer_threads(pid: u32) -> anyhow::Result<usize> {
    let mut n = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let comm = std::fs::read_to_string(task?.path().join("comm")).unwrap_or_default();
        n += usize::from(comm.trim() == "ferry-access-lo");
    }
    Ok(n)
}

async fn reloads(admin: &Admin, metric: &str) -> anyhow::Result<f64> {
    Ok(admin.metrics().await?.sum(metric, &[]))
}

#[tokio::test]
async fn reloads_add_refuse_and_remove_sinks() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let ferry = start(&config(echo.addr(), &[])).await?;
    let addr = ferry.listener(LISTENER)?;
    let admin = Admin::new(ferry.admin());
    let get = |id: &'static str| async move {
        let req = request(
            Method::GET,
            addr,
            "/",
            &[("x-request-id", id)],
            body_full(Bytes::new()),
        )?;
        anyhow::Ok(HttpClient::http1().call(req).await?.status.as_u16())
    };
    assert_eq!(get("before").await?, 200);
    assert_eq!(writer_threads(ferry.pid())?, 0, "no sink, no writer");

    // Added by a reload.
    ferry
        .config()?
        .write(&to_yaml(&config(echo.addr(), &[&a, &b])))
        .await?;
    until_in(addr, &a, "added").await?;
    until_in(addr, &b, "added-b").await?;
    assert_eq!(writer_threads(ferry.pid())?, 2, "one writer per sink");
    assert!(
        json_lines(&a)?.iter().all(|l| l["request_id"] != "before"),
        "no line before the sink existed"
    );

    // A reload naming a sink ferry cannot write is refused; the old sinks keep writing.
    let missing = dir.path().join("gone").join("c.json");
    let failures = reloads(&admin, "ferry_config_reload_failures_total").await?;
    ferry
        .config()?
        .write(&to_yaml(&config(echo.addr(), &[&a, &missing])))
        .await?;
    eventually(PATIENCE, || async {
        let now = reloads(&admin, "ferry_config_reload_failures_total").await?;
        anyhow::ensure!(now > failures, "reload not refused yet");
        Ok(())
    })
    .await?;
    assert!(
        ferry.logs().contains("access_log[1].path: directory"),
        "{}",
        ferry.logs()
    );
    until_in(addr, &b, "kept").await?;

    // Dropping `a`: a request logged by `b` under the new table is not in `a`.
    let done = reloads(&admin, "ferry_config_reloads_total").await?;
    ferry
        .config()?
        .write(&to_yaml(&config(echo.addr(), &[&b])))
        .await?;
    eventually(PATIENCE, || async {
        anyhow::ensure!(
            reloads(&admin, "ferry_config_reloads_total").await? > done,
            "not reloaded yet"
        );
        Ok(())
    })
    .await?;
    let id = until_in(addr, &b, "only-b").await?;
    // Lines are offered to the sinks of the table that served the request: `id` never was to
    // `a`, whose writer ends after writing what it had.
    assert!(
        json_lines(&a)?
            .iter()
            .all(|l| l["request_id"] != id.as_str()),
        "{id} written to a removed sink"
    );
    Ok(())
}
