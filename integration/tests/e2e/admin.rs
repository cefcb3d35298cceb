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
        "ferry_runtime_alive_tasks",
        "ferry_request_duration_seconds",
        "ferry_config_reloads_total",
        "ferry_config_reload_failures_total",
    ] {
        assert!(m.has_family(family), "no {family} in /metrics:\n{}", m.text);
    }
    // Series for every configured name exist from the start (label sets are registered at
    // config load, as the design asks), so dashboards and `rate()` alerts see 0, not a gap.
    for (name, labels) in [
        ("ferry_upstream_connect_errors_total", [("cluster", "up")]),
        ("ferry_endpoint_ejections_total", [("cluster", "up")]),
        ("ferry_retries_total", [("route", "all")]),
        ("ferry_active_connections", [("listener", LISTENER)]),
    ] {
        let found = m.matching(name, &labels).count();
        assert!(found >= 1, "no {name}{labels:?} in /metrics:\n{}", m.text);
    }
    assert!(
        m.matching("ferry_request_duration_seconds_bucket", &[("route", "all")])
            .count()
            > 1
    );
    Ok(())
}

/// Runs `ferry validate` on `lines` and returns the `file:line:col:` lines of its output.
async fn validate_lines(lines: &[&str]) -> anyhow::Result<(i32, Vec<String>, String)> {
    let dir = tempfile::tempdir()?;
    let bad = dir.path().join("bad.yaml");
    tokio::fs::write(&bad, lines.join("\n")).await?;
    let (code, out) = validate(std::slice::from_ref(&bad)).await?;
    let prefix = format!("{}:", bad.display());
    let located = out
        .lines()
        .filter(|l| {
            l.strip_prefix(&prefix).is_some_and(|rest| {
                let mut parts = rest.splitn(3, ':');
                parts.next().is_some_and(|l| l.parse::<u32>().is_ok())
                    && parts.next().is_some_and(|c| c.parse::<u32>().is_ok())
            })
        })
        .map(str::to_owned)
        .collect();
    Ok((code, located, out))
}

const HEAD: [&str; 5] = [
    "apiVersion: ferry/v1",
    "listeners:",
    "  - name: main",
    "    address: 127.0.0.1:0",
    "    routes:",
];
const TAIL: [&str; 3] = ["clusters:", "  - name: c", "    endpoints: [127.0.0.1:1]"];

#[tokio::test]
async fn validate_reports_every_error_with_position_and_exits_64() -> anyhow::Result<()> {
    let routes = [
        "      - name: r",
        "        to: nowhere",
        "        timeout: 5 sec",
        "      - name: w",
        "        to: [{ cluster: c, weight: 0 }]",
    ];
    let lines: Vec<&str> = HEAD.iter().chain(&routes).chain(&TAIL).copied().collect();
    let (code, located, out) = validate_lines(&lines).await?;
    assert_eq!(code, 64, "output:\n{out}");
    // Three separate faults, all reported at once, each as file:line:col: path: message.
    assert!(
        located.len() >= 3,
        "want >= 3 file:line:col errors, got:\n{out}"
    );
    for needle in ["nowhere", "5 sec", "weight"] {
        let hit = located.iter().any(|l| l.contains(needle));
        assert!(hit, "no error mentions {needle:?}:\n{out}");
    }

    // Every shipped example, descriptor sets included, validates from a clean checkout. An
    // example naming an identity is validated as a copy beside throwaway certificates written
    // where its relative paths point (a pod mounts real ones).
    let pki = tempfile::tempdir()?;
    let mut examples = Vec::new();
    for entry in std::fs::read_dir(workspace::root().join("examples"))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        if text.contains("\nidentity:") {
            let copy = pki.path().join(path.file_name().unwrap_or_default());
            std::fs::write(&copy, &text)?;
            write_example_pki(&pki.path().join("certs")).await?;
            examples.push(copy);
        } else {
            examples.push(path);
        }
    }
    assert!(examples.len() >= 5, "{examples:?}");
    let (code, out) = validate(&examples).await?;
    assert_eq!(code, 0, "every example must validate:\n{out}");
    Ok(())
}

#[tokio::test]
async fn validate_reports_an_unknown_field_together_with_other_errors() -> anyhow::Result<()> {
    let routes = [
        "      - name: r",
        "        to: nowhere",
        "        colour: blue",
    ];
    let lines: Vec<&str> = HEAD.iter().chain(&routes).chain(&TAIL).copied().collect();
    let (code, located, out) = validate_lines(&lines).await?;
    assert_eq!(code, 64, "output:\n{out}");
    // The issue lists unknown fields among the errors reported all at once.
    for needle in ["colour", "nowhere"] {
        let hit = located.iter().any(|l| l.contains(needle));
        assert!(hit, "no error mentions {needle:?}:\n{out}");
    }
    Ok(())
}

/// `certs/{ca.crt,tls.crt,tls.key}` made with the openssl CLI (a CA and a workload certificate
/// with a SPIFFE URI SAN), as `examples/mtls.yaml` names them.
async fn write_example_pki(dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir)?;
    let ext = dir.join("ext.cnf");
    std::fs::write(
        &ext,
        "[leaf]\nsubjectAltName=URI:spiffe://cluster.local/ns/models/sa/example\n",
    )?;
    let d = |f: &str| dir.join(f).display().to_string();
    let steps: [Vec<String>; 4] = [
        [
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=example CA",
            "-days",
            "2",
            "-keyout",
            &d("ca.key"),
            "-out",
            &d("ca.crt"),
        ]
        .map(String::from)
        .to_vec(),
        [
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=example",
            "-keyout",
            &d("tls.key"),
            "-out",
            &d("tls.csr"),
        ]
        .map(String::from)
        .to_vec(),
        [
            "x509",
            "-req",
            "-in",
            &d("tls.csr"),
            "-CA",
            &d("ca.crt"),
            "-CAkey",
            &d("ca.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &d("ext.cnf"),
            "-extensions",
            "leaf",
            "-out",
            &d("tls.crt"),
        ]
        .map(String::from)
        .to_vec(),
        ["version"].map(String::from).to_vec(),
    ];
    for args in steps {
        let out = tokio::process::Command::new("openssl")
            .args(&args)
            .output()
            .await
            .context("running openssl (the base image must provide it)")?;
        anyhow::ensure!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
