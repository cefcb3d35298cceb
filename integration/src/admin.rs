//! ferry's admin endpoint from the test's side: status probes, the config dump and a small
//! Prometheus text parser so tests can assert on counters by name and labels.

use std::net::SocketAddr;

use anyhow::Context as _;

use crate::client::{HttpClient, Reply, body_full, request};

/// A client for one ferry admin listener.
#[derive(Clone, Debug)]
pub struct Admin {
    addr: SocketAddr,
    http: HttpClient,
}

/// One parsed sample: `name{labels} value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Metric name including any `_bucket`/`_sum`/`_count` suffix.
    pub name: String,
    /// Label pairs in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

/// A parsed `/metrics` page.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Every sample line.
    pub samples: Vec<Sample>,
    /// The raw text, for error messages.
    pub text: String,
}

// === impl Admin ===

impl Admin {
    /// Admin client for `addr`.
    pub fn new(addr: SocketAddr) -> Admin {
        Admin {
            addr,
            http: HttpClient::http1(),
        }
    }

    /// `GET path` on the admin listener.
    pub async fn get(&self, path: &str) -> anyhow::Result<Reply> {
        self.http.get(self.addr, path).await
    }

    /// `GET /metrics`, parsed.
    pub async fn metrics(&self) -> anyhow::Result<Metrics> {
        let reply = self.get("/metrics").await?;
        anyhow::ensure!(
            reply.status.is_success(),
            "/metrics answered {}",
            reply.status
        );
        Ok(Metrics::parse(&reply.text()))
    }

    /// `GET /metrics` asking for OpenMetrics text, which carries the latency exemplars (trace
    /// ids of sampled requests) that the Prometheus text format has no room for; unparsed.
    pub async fn openmetrics_text(&self) -> anyhow::Result<String> {
        let reply = self
            .http
            .call(request(
                http::Method::GET,
                self.addr,
                "/metrics",
                &[("accept", "application/openmetrics-text; version=1.0.0")],
                body_full(""),
            )?)
            .await?;
        anyhow::ensure!(
            reply.status.is_success(),
            "/metrics (OpenMetrics) answered {}",
            reply.status
        );
        Ok(reply.text())
    }

    /// `GET /config_dump` as JSON.
    pub async fn config_dump(&self) -> anyhow::Result<serde_json::Value> {
        let reply = self.get("/config_dump").await?;
        anyhow::ensure!(
            reply.status.is_success(),
            "/config_dump answered {}",
            reply.status
        );
        reply.json()
    }
}

// === impl Metrics ===

impl Metrics {
    /// Parses Prometheus/OpenMetrics text exposition (comments skipped).
    pub fn parse(text: &str) -> Metrics {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(parse_line)
            .collect();
        Metrics {
            samples,
            text: text.to_owned(),
        }
    }

    /// Sum of all samples named `name` whose labels include every pair in `labels`
    /// (0 when none match: an unincremented counter may not be exposed yet).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }

    /// Samples named `name` whose labels include every pair in `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
    }

    /// True when some sample's name is `name` or starts with `name_` (histogram parts).
    pub fn has_family(&self, name: &str) -> bool {
        self.samples.iter().any(|s| {
            s.name == name
                || s.name
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('_'))
        }) || self.text.contains(&format!("# TYPE {name} "))
            // OpenMetrics names a counter family without its `_total` suffix, and a family
            // with no label set used yet has only its HELP/TYPE lines.
            || name
                .strip_suffix("_total")
                .is_some_and(|base| self.text.contains(&format!("# TYPE {base} counter")))
    }

    /// The value of the one sample matching, or an error naming what was there.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
        let mut found = self.matching(name, labels);
        let first = found
            .next()
            .with_context(|| format!("no sample {name}{labels:?} in:\n{}", self.text))?;
        Ok(first.value)
    }
}

fn parse_line(line: &str) -> Option<Sample> {
    let (name_labels, rest) = if line.contains('{') {
        let close = line.rfind('}')?;
        line.split_at(close + 1)
    } else {
        line.split_once(' ')?
    };
    let value = rest.split_whitespace().next()?.parse::<f64>().ok()?;
    let (name, labels) = match name_labels.split_once('{') {
        Some((name, labels)) => (name, parse_labels(labels.strip_suffix('}')?)),
        None => (name_labels, Vec::new()),
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

fn parse_labels(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        let key = key.trim().trim_start_matches(',').trim().to_owned();
        if key.is_empty() || chars.next() != Some('"') {
            break;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        out.push((key, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_and_sums() {
        let m = Metrics::parse(
            "# TYPE ferry_requests_total counter\n\
             ferry_requests_total{listener=\"main\",route=\"a\",code=\"200\"} 3\n\
             ferry_requests_total{listener=\"main\",route=\"b\",code=\"200\"} 4\n\
             ferry_config_reloads_total 2\n\
             x_bucket{le=\"+Inf\",q=\"a\\\"b\"} 1\n",
        );
        assert_eq!(m.sum("ferry_requests_total", &[("code", "200")]), 7.0);
        assert_eq!(m.get("ferry_config_reloads_total", &[]).unwrap(), 2.0);
        assert_eq!(m.get("x_bucket", &[("q", "a\"b")]).unwrap(), 1.0);
        assert!(m.has_family("x"));
    }
}
