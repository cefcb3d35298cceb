//! Files that move, fail or cannot be written: rotation (rename, SIGUSR1), a full disk, a
//! removed directory, and configs naming sinks ferry cannot write.

use std::path::Path;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Echo, Ferry, HttpClient, eventually, to_yaml};
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, PATIENCE, cluster, config, json_lines, start, wait_lines};

async fn get(addr: std::net::SocketAddr, id: &str) -> anyhow::Result<u16> {
    let req = request(
        Method::GET,
        addr,
        "/",
        &[("x-request-id", id)],
        body_full(Bytes::new()),
    )?;
    Ok(HttpClient::http1().call(req).await?.status.as_u16())
}

/// Sends requests `{prefix}0`, `{prefix}1`, … until the file at `path` has a line of them.
async fn until_written(
    addr: std::net::SocketAddr,
    path: &Path,
    prefix: &str,
) -> anyhow::Result<()> {
    let mut n = 0;
    eventually(PATIENCE, || {
        n += 1;
        let id = format!("{prefix}{n}");
        async move {
            assert_eq!(get(addr, &id).await?, 200);
            let lines = json_lines(path)?;
            anyhow::ensure!(
                lines.iter().any(|l| l["request_id"]
                    .as_str()
                    .is_some_and(|i| i.starts_with(prefix))),
                "no {prefix}* line in {} yet",
                path.display()
            );
            Ok(())
        }
    })
    .await
}

#[tokio::test]
async fn a_rotated_file_is_reopened_on_rename_and_on_sigusr1() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("access.log");
    let ferry = start(&config(
        json!([{ "path": path.to_str().unwrap() }]),
        json!([{ "name": "echo", "to": "echo" }]),
        json!([cluster("echo", echo.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    for id in ["a1", "a2", "a3"] {
        assert_eq!(get(addr, id).await?, 200);
    }
    wait_lines(&path, 3).await?;
    // logrotate's default: rename, and let the writer create the new file.
    let first = dir.path().join("access.log.1");
    std::fs::rename(&path, &first)?;
    until_written(addr, &path, "b").await?;
    let old: Vec<String> = json_lines(&first)?
        .iter()
        .map(|l| l["request_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(&old[..3], ["a1", "a2", "a3"]);
    assert!(
        json_lines(&path)?
            .iter()
            .all(|l| l["request_id"].as_str().unwrap().starts_with('b'))
    );
    // `postrotate kill -USR1`: reopened, and ferry keeps running (USR1's default would kill it).
    let second = dir.path().join("access.log.2");
    std::fs::rename(&path, &second)?;
    ferry.signal("USR1").await?;
    until_written(addr, &path, "c").await?;
    assert!(
        ferry.logs().contains("reopening access-log files"),
        "{}",
        ferry.logs()
    );
    assert!(
        json_lines(&second)?
            .iter()
            .all(|l| l["request_id"].as_str().unwrap().starts_with('b'))
    );
    Ok(())
}

#[tokio::test]
async fn a_failing_sink_never_fails_requests() -> anyhow::Result<()> {
    let echo = Echo::start("echo").await?;
    let dir = tempfile::tempdir()?;
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs)?;
    let removed = logs.join("access.log");
    let healthy = dir.path().join("ok.log");
    let ferry = start(&config(
        // /dev/full: every write fails with ENOSPC, as on a full disk.
        json!([
            { "path": "/dev/full" },
            { "path": removed.to_str().unwrap() },
            { "path": healthy.to_str().unwrap() },
        ]),
        json!([{ "name": "echo", "to": "echo" }]),
        json!([cluster("echo", echo.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    assert_eq!(get(addr, "before").await?, 200);
    wait_lines(&removed, 1).await?;
    std::fs::remove_dir_all(&logs)?;
    for i in 0..50 {
        assert_eq!(get(addr, &format!("during{i}")).await?, 200, "request {i}");
    }
    let admin = Admin::new(ferry.admin());
    // Lines written before the writer's next check (at most a second) still reach the removed
    // file; later ones are dropped and counted. Each try sends one more request, which must
    // succeed.
    let sent = std::sync::atomic::AtomicUsize::new(0);
    let dropped = |path: String| {
        let (admin, sent) = (admin.clone(), &sent);
        async move {
            let i = sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(get(addr, &format!("late{i}")).await?, 200);
            let m = admin.metrics().await?;
            let n = m.sum(
                "ferry_access_log_dropped_total",
                &[("path", &path), ("reason", "write_failed")],
            );
            anyhow::ensure!(n > 0.0, "nothing dropped for {path} yet");
            Ok(n)
        }
    };
    eventually(PATIENCE, || dropped("/dev/full".to_owned())).await?;
    eventually(PATIENCE, || dropped(removed.display().to_string())).await?;
    // The healthy sink is unaffected: every request so far, once.
    let total = 51 + sent.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(wait_lines(&healthy, total).await?.len(), total);
    assert!(
        ferry.logs().contains("cannot write the access log"),
        "{}",
        ferry.logs()
    );
    // The directory comes back: the sink is retried and writes again.
    std::fs::create_dir(&logs)?;
    until_written(addr, &removed, "after").await?;
    Ok(())
}

#[tokio::test]
async fn unwritable_sinks_and_bad_samples_are_refused_with_their_position() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let write = |name: &str, sink: serde_json::Value| {
        let file = dir.path().join(name);
        let cfg = json!({ "apiVersion": "ferry/v1", "admin": { "address": "127.0.0.1:0" }, "access_log": [sink] });
        std::fs::write(&file, to_yaml(&cfg)).map(|()| file)
    };
    let missing = dir.path().join("no-such-dir").join("a.log");
    let bad_dir = write("bad-dir.yaml", json!({ "path": missing.to_str().unwrap() }))?;
    let bad_sample = write(
        "bad-sample.yaml",
        json!({ "path": "/dev/stdout", "sample": 1.5 }),
    )?;
    let (code, out) =
        ferry_integration::ferry::validate(&[bad_dir.clone(), bad_sample.clone()]).await?;
    assert_eq!(code, 64, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let at = |file: &Path, rest: &str| format!("{}:{rest}", file.display());
    assert!(
        lines.iter().any(|l| l.starts_with(&at(&bad_dir, ""))
            && l.contains(": access_log[0].path: directory ")
            && l.contains("(expected an existing, writable directory)")),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&at(&bad_sample, "")) && l.ends_with(r#"access_log[0].sample: invalid sample "1.5" (expected a number from 0 to 1, e.g. 0.1)"#)),
        "{out}"
    );
    // `ferry run` refuses the same file before it listens.
    let yaml = std::fs::read_to_string(&bad_dir)?;
    let err = Ferry::start(&yaml)
        .await
        .expect_err("an unwritable sink is refused");
    assert!(
        format!("{err:#}").contains("access_log[0].path: directory"),
        "{err:#}"
    );
    Ok(())
}
