//! The chart's Grafana dashboard (`charts/ferry/dashboards/ferry.json`) and alert rules
//! (`charts/ferry/rules/ferry-rules.yaml`): the dashboard's shape ([`panels`]); every panel
//! query and alert expression against a real Prometheus scraping a real ferry under traffic
//! ([`live`], with the scene in [`traffic`]); the rules through `promtool` ([`rules`]); and
//! the chart's optional ConfigMap and PrometheusRule through the real helm and
//! kubernetes-validate ([`chart`]). Prometheus and promtool are Debian's, installed by
//! `peers/install-prometheus.sh` on first use; a missing peer fails, nothing is skipped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

mod chart;
mod live;
mod panels;
mod rules;
mod shots;
mod traffic;
