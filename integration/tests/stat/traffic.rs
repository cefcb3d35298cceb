//! `ferry stat` after known traffic: counts, success rates, groupings, refusals.

use ferry_integration::{Admin, eventually};
use serde_json::Value;

use crate::support::{CHAT, EMBED, GRPC, PATIENCE, Scene, ferry_stat, row, stat_json};

fn counts(row: &Value) -> (u64, u64) {
    (
        row["requests"].as_u64().unwrap_or(0),
        row["failures"].as_u64().unwrap_or(0),
    )
}

fn success(row: &Value) -> f64 {
    row["success_rate"].as_f64().unwrap_or(-1.0)
}

#[tokio::test]
async fn stat_reports_the_requests_and_success_rate_of_known_traffic() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    scene.known_traffic().await?;
    // The sampler counts a second after the answers: wait for the window to hold them all.
    let stats = eventually(PATIENCE, || async {
        let stats = stat_json(&scene.ferry, &["--window", "1m"]).await?;
        let got = [
            counts(row(&stats, "route", "chat")?),
            counts(row(&stats, "route", "embed")?),
            counts(row(&stats, "route", "grpc")?),
        ];
        anyhow::ensure!(got == [CHAT, EMBED, GRPC], "counts {got:?} in {stats:#}");
        Ok(stats)
    })
    .await?;
    assert_eq!(stats["by"], "route");
    assert_eq!(stats["window_s"], 60);
    let chat = row(&stats, "route", "chat")?;
    assert_eq!(chat["listener"], "main");
    assert_eq!(chat["model"], "llama");
    assert!((success(chat) - 14.0 / 17.0).abs() < 1e-3, "{chat}");
    assert_eq!(success(row(&stats, "route", "embed")?), 1.0);
    assert!((success(row(&stats, "route", "grpc")?) - 5.0 / 7.0).abs() < 1e-3);
    for q in ["p50_ms", "p95_ms", "p99_ms"] {
        let ms = chat[q].as_f64().unwrap_or(-1.0);
        assert!(ms > 0.0 && ms < 5000.0, "{q} {ms} in {chat}");
    }
    assert!(chat["p50_ms"].as_f64() <= chat["p99_ms"].as_f64());
    assert!(chat["rps"].as_f64().unwrap_or(0.0) > 0.0);
    assert_eq!(chat["in_flight"], 0);
    assert_eq!(chat["retries"], 0);

    // The table names every route with its success rate.
    let (code, table, err) = ferry_stat(&scene.ferry, &["--window", "1m"]).await?;
    assert_eq!(code, 0, "{err}");
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("ROUTE") && header.contains("SUCCESS"),
        "{table}"
    );
    let chat_line = table.lines().find(|l| l.starts_with("chat")).expect(&table);
    assert!(
        chat_line.contains("82.35%") && chat_line.contains("llama"),
        "{table}"
    );
    Ok(())
}

#[tokio::test]
async fn stat_groups_by_model_cluster_and_endpoint() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    scene.known_traffic().await?;
    let models = eventually(PATIENCE, || async {
        let stats = stat_json(&scene.ferry, &["--by", "model", "--window", "1m"]).await?;
        let got = [
            counts(row(&stats, "model", "llama")?),
            counts(row(&stats, "model", "bge")?),
        ];
        anyhow::ensure!(got == [CHAT, EMBED], "counts {got:?} in {stats:#}");
        Ok(stats)
    })
    .await?;
    assert_eq!(models["by"], "model");
    // The gRPC route matches no model: its row is the empty model.
    assert_eq!(counts(row(&models, "model", "")?), GRPC);
    assert!(models["rows"][0].get("route").is_none(), "{models:#}");

    let clusters = stat_json(&scene.ferry, &["--by", "cluster", "--window", "1m"]).await?;
    assert_eq!(counts(row(&clusters, "cluster", "llm")?), CHAT);
    assert_eq!(counts(row(&clusters, "cluster", "grpc")?), GRPC);
    let endpoints = stat_json(&scene.ferry, &["--by", "endpoint", "--window", "1m"]).await?;
    let emb = row(&endpoints, "cluster", "emb")?;
    assert_eq!(counts(emb), EMBED);
    assert!(
        emb["endpoint"]
            .as_str()
            .unwrap_or("")
            .starts_with("127.0.0.1:")
    );
    Ok(())
}

#[tokio::test]
async fn bad_windows_and_queries_are_refused_by_name() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    let (code, out, err) = ferry_stat(&scene.ferry, &["--window", "soon"]).await?;
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("--window: invalid duration \"soon\""), "{err}");
    let (code, _, err) = ferry_stat(&scene.ferry, &["--window", "10m"]).await?;
    assert_ne!(code, 0);
    assert!(err.contains("HTTP 400") && err.contains("window"), "{err}");
    assert!(err.contains("longer than the 300 s kept"), "{err}");
    let (code, _, err) = ferry_stat(&scene.ferry, &["--by", "pod"]).await?;
    assert_ne!(code, 0);
    assert!(err.contains("invalid value 'pod' for '--by"), "{err}");

    let admin = Admin::new(scene.ferry.admin());
    for (query, parameter) in [
        ("/stats?by=pod", "by"),
        ("/stats?window=5", "window"),
        ("/stats?window=0s", "window"),
        ("/stats?limit=3", "limit"),
    ] {
        let reply = admin.get(query).await?;
        assert_eq!(reply.status.as_u16(), 400, "{query}");
        let body: Value = reply.json()?;
        assert_eq!(body["parameter"], parameter, "{query}: {body}");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with(parameter))
        );
    }
    let ok: Value = admin.get("/stats?window=5m&series=1").await?.json()?;
    assert_eq!(ok["window_s"], 300);
    let series = &row(&ok, "route", "chat")?["series"];
    assert_eq!(series["step_s"], 1);
    let points = series["rps"].as_array().map_or(0, Vec::len);
    assert!(points <= 300 && points == ok["covered_s"].as_u64().unwrap_or(0) as usize);
    Ok(())
}
