//! `ferry stat`: one window of the admin's `/stats` as a table (like `linkerd viz stat`) or as
//! the endpoint's JSON.

use std::fmt::Write as _;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::admin_client;

/// Arguments of `ferry stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// ferry's admin address.
    #[arg(long, default_value = "127.0.0.1:15000")]
    pub admin: String,
    /// What a row is.
    #[arg(long, value_enum, default_value_t = By::Route)]
    pub by: By,
    /// How far back, from 1s to 5m (e.g. 30s, 1m, 5m).
    #[arg(long, default_value = "30s")]
    pub window: String,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// `--by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// Listener and route.
    Route,
    /// The route's configured model.
    Model,
    /// Cluster of the last attempt.
    Cluster,
    /// Endpoint of the last attempt.
    Endpoint,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns.
    Table,
    /// The admin's `/stats` JSON, unchanged.
    Json,
}

// === impl By ===

impl By {
    /// The query value.
    pub fn as_str(self) -> &'static str {
        match self {
            By::Route => "route",
            By::Model => "model",
            By::Cluster => "cluster",
            By::Endpoint => "endpoint",
        }
    }

    /// The columns naming a row, and the JSON fields they show.
    pub fn key_columns(self) -> &'static [(&'static str, &'static str)] {
        match self {
            By::Route => &[
                ("ROUTE", "route"),
                ("LISTENER", "listener"),
                ("MODEL", "model"),
            ],
            By::Model => &[("MODEL", "model")],
            By::Cluster => &[("CLUSTER", "cluster")],
            By::Endpoint => &[("ENDPOINT", "endpoint"), ("CLUSTER", "cluster")],
        }
    }
}

/// Checks a `--window` before asking (the admin checks its range).
pub fn check_window(window: &str) -> anyhow::Result<()> {
    ferry_config::parse_duration(window)
        .map(|_| ())
        .map_err(|e| anyhow::anyhow!("--window: {e}"))
}

/// Runs `ferry stat`.
pub async fn run(args: StatArgs) -> anyhow::Result<()> {
    check_window(&args.window)?;
    let path = format!("/stats?window={}&by={}", args.window, args.by.as_str());
    let stats = admin_client::get_json(&args.admin, &path).await?;
    let out = match args.output {
        Output::Json => format!("{stats}\n"),
        Output::Table => table(&stats, args.by).context("unexpected /stats answer")?,
    };
    print!("{out}");
    Ok(())
}

/// The rows of a `/stats` answer as aligned columns.
pub fn table(stats: &Value, by: By) -> anyhow::Result<String> {
    let rows = stats["rows"].as_array().context("no rows")?;
    let mut header: Vec<String> = by.key_columns().iter().map(|(h, _)| (*h).into()).collect();
    header.extend(
        [
            "SUCCESS",
            "RPS",
            "P50",
            "P95",
            "P99",
            "IN_FLIGHT",
            "RETRIES",
            "LIMITED",
            "QUEUED",
        ]
        .map(String::from),
    );
    let mut lines = vec![header];
    for row in rows {
        let mut cells: Vec<String> = by
            .key_columns()
            .iter()
            .map(|(_, field)| match row[*field].as_str() {
                Some("") | None => "-".into(),
                Some(s) => s.into(),
            })
            .collect();
        cells.push(percent(&row["success_rate"]));
        cells.push(match row["rps"].as_f64() {
            Some(r) => format!("{r:.1}rps"),
            None => "-".into(),
        });
        for q in ["p50_ms", "p95_ms", "p99_ms"] {
            cells.push(latency(&row[q]));
        }
        for n in ["in_flight", "retries", "limited", "queued"] {
            cells.push(row[n].as_u64().map_or("-".into(), |v| v.to_string()));
        }
        lines.push(cells);
    }
    Ok(align(&lines))
}

/// `98.50%`, or `-` without answers.
pub fn percent(v: &Value) -> String {
    v.as_f64()
        .map_or_else(|| "-".into(), |r| format!("{:.2}%", r * 100.0))
}

/// `12ms`, `1.5s`, `850µs`, or `-` without answers.
pub fn latency(v: &Value) -> String {
    match v.as_f64() {
        None => "-".into(),
        Some(ms) if ms >= 1000.0 => format!("{:.1}s", ms / 1000.0),
        Some(ms) if ms >= 10.0 => format!("{ms:.0}ms"),
        Some(ms) if ms >= 1.0 => format!("{ms:.1}ms"),
        Some(ms) => format!("{:.0}µs", ms * 1000.0),
    }
}

fn align(lines: &[Vec<String>]) -> String {
    let columns = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let mut text = String::new();
        for (cell, width) in line.iter().zip(&widths) {
            let _ = write!(text, "{cell:<width$}   ");
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    #[test]
    fn rows_become_aligned_columns() {
        let stats = json!({ "rows": [
            { "listener": "main", "route": "chat", "model": "llama", "rps": 4.0,
              "success_rate": 0.985, "p50_ms": 12.3, "p95_ms": 0.5, "p99_ms": 1500.0,
              "in_flight": 1, "retries": 0, "limited": 2, "queued": 0 },
            { "listener": "main", "route": "health", "model": "", "rps": 0.0,
              "success_rate": null, "p50_ms": null, "p95_ms": null, "p99_ms": null,
              "in_flight": 0, "retries": 0, "limited": 0, "queued": 0 },
        ]});
        let text = table(&stats, By::Route).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("ROUTE    LISTENER   MODEL   SUCCESS"),
            "{text}"
        );
        assert!(
            lines[1].contains("chat") && lines[1].contains("98.50%"),
            "{text}"
        );
        assert!(
            lines[1].contains("4.0rps") && lines[1].contains("12ms"),
            "{text}"
        );
        assert!(
            lines[1].contains("500µs") && lines[1].contains("1.5s"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("health   main       -       -"),
            "{text}"
        );
    }

    #[test]
    fn a_malformed_window_is_refused_before_asking() {
        let e = check_window("soon").unwrap_err().to_string();
        assert!(e.starts_with("--window: invalid duration \"soon\""), "{e}");
        check_window("90s").unwrap();
    }
}
