//! `GET /stats?window=30s&by=route&series=1`: the window's rows as JSON.
//!
//! A window is the sum of the ring's last `window` seconds (the sampler runs at 1 Hz, so the
//! newest second is up to one second old); `covered_s` says how many seconds the ring really
//! had (fewer just after start). Rows list every route, model, cluster or endpoint of the
//! current config, busy or not.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::Counts;
use super::window::{By, Ring, RowKey, SECONDS, Windows};

/// A parsed `/stats` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Seconds summed.
    pub window: usize,
    /// Grouping.
    pub by: By,
    /// Whether each row carries its per-second series.
    pub series: bool,
}

/// A bad `/stats` query: which parameter, and why (answered as 400 with both).
#[derive(Debug, thiserror::Error)]
#[error("{parameter}: {problem}")]
pub struct QueryError {
    /// The parameter at fault.
    pub parameter: String,
    /// What is wrong with it.
    pub problem: String,
}

// === impl Query ===

impl Query {
    /// Parses a query string (`None`: no query: the defaults, 30 s by route).
    pub fn parse(query: Option<&str>) -> Result<Self, QueryError> {
        let mut q = Query {
            window: 30,
            by: By::Route,
            series: false,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let bad = |problem: String| QueryError {
                parameter: name.chars().take(64).collect(),
                problem,
            };
            match name {
                "window" => q.window = window(value).map_err(bad)?,
                "by" => {
                    q.by = match value {
                        "route" => By::Route,
                        "model" => By::Model,
                        "cluster" => By::Cluster,
                        "endpoint" => By::Endpoint,
                        _ => {
                            return Err(bad(format!(
                                "unknown grouping {:?} (expected route, model, cluster or endpoint)",
                                value.chars().take(64).collect::<String>()
                            )));
                        }
                    }
                }
                "series" => {
                    q.series = match value {
                        "1" | "true" | "" => true,
                        "0" | "false" => false,
                        _ => return Err(bad("expected 1 or 0".into())),
                    }
                }
                _ => {
                    return Err(bad(
                        "unknown parameter (expected window, by or series)".into()
                    ));
                }
            }
        }
        Ok(q)
    }
}

/// Whole seconds of a window like `30s` or `5m`, from 1 s to the ring's length.
fn window(text: &str) -> Result<usize, String> {
    let d = ferry_config::parse_duration(text)?;
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    if secs == 0 {
        return Err(format!("window {text:?} is empty (expected 1s to 5m)"));
    }
    if secs > SECONDS as u64 {
        return Err(format!(
            "window {text:?} is longer than the {SECONDS} s kept (expected 1s to 5m)"
        ));
    }
    usize::try_from(secs).map_err(|_| format!("window {text:?} is too long"))
}

// === impl Windows ===

impl Windows {
    /// The rows of `q`'s window.
    pub fn query(&self, q: &Query) -> Value {
        self.read(|ring| rows(ring, q))
            .unwrap_or_else(|| json!({ "error": "statistics unavailable" }))
    }
}

fn rows(ring: &Ring, q: &Query) -> Value {
    let seconds: Vec<_> = ring.seconds.iter().rev().take(q.window).rev().collect();
    let covered = seconds.len();
    let selected: Vec<_> = ring.now.iter().filter(|r| r.key.by() == q.by).collect();
    let index: HashMap<&RowKey, usize> = selected
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.key, i))
        .collect();
    // One pass over the window: each second's deltas added to their row.
    let mut totals = vec![Counts::default(); selected.len()];
    let mut series = vec![Vec::new(); if q.series { selected.len() } else { 0 }];
    for s in &seconds {
        if q.series {
            series.iter_mut().for_each(|v| v.push(Counts::default()));
        }
        for (key, delta) in &s.rows {
            let Some(&i) = index.get(key) else { continue };
            if let Some(total) = totals.get_mut(i) {
                delta.add_to(total);
            }
            if let Some(last) = series.get_mut(i).and_then(|v| v.last_mut()) {
                delta.add_to(last);
            }
        }
    }
    let mut out = Vec::with_capacity(selected.len());
    for ((i, row), total) in selected.iter().enumerate().zip(totals) {
        let per_second = series.get(i).map(Vec::as_slice).unwrap_or_default();
        let mut obj = key_fields(&row.key, row.model.as_deref());
        let requests = total.requests();
        let rps = if covered == 0 {
            0.0
        } else {
            requests as f64 / covered as f64
        };
        obj.insert("requests".into(), requests.into());
        obj.insert("rps".into(), round(rps, 3).into());
        obj.insert("failures".into(), total.failures.into());
        obj.insert("success_rate".into(), success_rate(&total).into());
        for (name, q) in [("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99)] {
            obj.insert(name.into(), ms(total.quantile(q)).into());
        }
        obj.insert("in_flight".into(), row.in_flight.into());
        obj.insert("retries".into(), total.retries.into());
        obj.insert("limited".into(), total.limited.into());
        obj.insert("queued".into(), total.queued.into());
        if q.series {
            let start = seconds.first().map_or(0, |s| s.unix);
            obj.insert(
                "series".into(),
                json!({
                    "start": start,
                    "step_s": 1,
                    "rps": per_second.iter().map(Counts::requests).collect::<Vec<_>>(),
                    "success_rate": per_second.iter().map(success_rate).collect::<Vec<_>>(),
                    "p99_ms": per_second.iter().map(|c| ms(c.quantile(0.99))).collect::<Vec<_>>(),
                }),
            );
        }
        out.push(Value::Object(obj));
    }
    let by = match q.by {
        By::Route => "route",
        By::Model => "model",
        By::Cluster => "cluster",
        By::Endpoint => "endpoint",
    };
    json!({
        "by": by,
        "window_s": q.window,
        "covered_s": covered,
        "at": seconds.last().map_or(0, |s| s.unix),
        "rows": out,
    })
}

fn key_fields(key: &RowKey, model: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    match key {
        RowKey::Route { listener, route } => {
            m.insert("listener".into(), (**listener).into());
            m.insert("route".into(), (**route).into());
            m.insert("model".into(), model.unwrap_or("").into());
        }
        RowKey::Model(model) => {
            m.insert("model".into(), (**model).into());
        }
        RowKey::Cluster(cluster) => {
            m.insert("cluster".into(), (**cluster).into());
        }
        RowKey::Endpoint { cluster, endpoint } => {
            m.insert("cluster".into(), (**cluster).into());
            m.insert("endpoint".into(), endpoint.to_string().into());
        }
    }
    m
}

/// Share of answers that did not fail; `None` without answers.
fn success_rate(c: &Counts) -> Option<f64> {
    let n = c.requests();
    (n > 0).then(|| round(n.saturating_sub(c.failures) as f64 / n as f64, 4))
}

fn ms(seconds: Option<f64>) -> Option<f64> {
    seconds.map(|s| round(s * 1000.0, 3))
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}
