//! A cluster in the effective config: endpoints, protocol, balancing, timeouts, outlier
//! detection, slow start and TLS, with every default filled in.

use serde_json::{Map, Value, json};

use super::tls;
use crate::ir::{Cluster, Endpoints, LbPolicy, UpstreamProtocol};
use crate::validate::format_duration;

pub(super) fn cluster(c: &Cluster) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), c.name.clone().into());
    match &c.endpoints {
        Endpoints::Static(addrs) => {
            let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
            out.insert("endpoints".into(), list.into());
        }
        Endpoints::Dns { names, refresh } => {
            let list: Vec<String> = names
                .iter()
                .map(|n| format!("{}:{}", n.host, n.port))
                .collect();
            out.insert(
                "dns".into(),
                json!({ "names": list, "refresh": format_duration(*refresh) }),
            );
        }
        Endpoints::OriginalAuthority { default_port } => {
            out.insert(
                "original_authority".into(),
                json!({ "default_port": default_port }),
            );
        }
    }
    let protocol = match c.protocol {
        UpstreamProtocol::Auto => "auto",
        UpstreamProtocol::Http1 => "http1",
        UpstreamProtocol::H2 => "h2",
    };
    out.insert("protocol".into(), protocol.into());
    let lb = policy_name(c.lb);
    match (&c.load_report, &c.hash) {
        (_, Some(h)) => out.insert(
            "lb".into(),
            json!({
                "policy": lb,
                "key": h.key.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "bounded_load": h.bounded_load.unwrap_or(0.0),
                "fallback": policy_name(h.fallback),
            }),
        ),
        (None, None) => out.insert("lb".into(), lb.into()),
        (Some(r), None) => out.insert(
            "lb".into(),
            json!({ "policy": lb, "load_report": { "metric": r.metric.to_string(), "weight": r.weight } }),
        ),
    };
    out.insert(
        "connect_timeout".into(),
        format_duration(c.connect_timeout).into(),
    );
    out.insert(
        "idle_timeout".into(),
        format_duration(c.idle_timeout).into(),
    );
    let outlier = match &c.outlier {
        None => json!({ "enabled": false }),
        Some(o) => json!({
            "enabled": true,
            "consecutive_failures": o.consecutive_failures,
            "ejection": format_duration(o.base_ejection),
            "max_ejection": format_duration(o.max_ejection),
            "max_ejection_percent": o.max_ejection_percent,
        }),
    };
    out.insert("outlier".into(), outlier);
    if let Some(s) = &c.slow_start {
        out.insert(
            "slow_start".into(),
            json!({ "window": format_duration(s.window), "initial": format!("{}%", s.initial * 100.0) }),
        );
    }
    if let Some(t) = &c.tls {
        out.insert("tls".into(), tls::cluster_tls(t));
    }
    Value::Object(out)
}

fn policy_name(lb: LbPolicy) -> &'static str {
    match lb {
        LbPolicy::RoundRobin => "round-robin",
        LbPolicy::P2cEwma => "p2c-ewma",
        LbPolicy::Hash => "hash",
    }
}
