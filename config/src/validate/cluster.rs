//! Clusters: endpoint source, protocol, load balancing, timeouts, outlier detection and TLS.

use std::collections::HashMap;
use std::time::Duration;

use super::Ctx;
use super::values::{parse_host_port, parse_percent};
use crate::defaults;
use crate::ir::{
    Cluster, Endpoints, LbPolicy, LoadMetric, LoadReportLb, OutlierDetection, SlowStart,
    UpstreamProtocol,
};
use crate::raw::{
    LbObjectSpec, LbSpec, OutlierSpec, RawCluster, RawLb, RawProtocol, SlowStartSpec,
};

pub(super) fn clusters(ctx: &mut Ctx<'_>, raw: &[RawCluster], has_identity: bool) -> Vec<Cluster> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, c) in raw.iter().enumerate() {
        let path = format!("clusters[{i}]");
        if let Some(first) = names.insert(c.name.as_str(), i) {
            ctx.error(
                &format!("{path}.name"),
                format!(
                    "duplicate cluster name {:?} (expected unique names; first used by clusters[{first}])",
                    c.name.as_str()
                ),
            );
        }
        out.push(cluster(ctx, &path, c, has_identity));
    }
    out
}

fn cluster(ctx: &mut Ctx<'_>, path: &str, c: &RawCluster, has_identity: bool) -> Cluster {
    Cluster {
        name: c.name.0.clone(),
        // A stand-in when invalid: the recorded error keeps this config from being used.
        endpoints: endpoints(ctx, path, c).unwrap_or(Endpoints::Static(Vec::new())),
        protocol: match c.protocol {
            None => defaults::PROTOCOL,
            Some(RawProtocol::Auto) => UpstreamProtocol::Auto,
            Some(RawProtocol::Http1) => UpstreamProtocol::Http1,
            Some(RawProtocol::H2) => UpstreamProtocol::H2,
        },
        lb: match c.lb.as_ref().and_then(LbSpec::policy) {
            None => defaults::LB,
            Some(RawLb::RoundRobin) => LbPolicy::RoundRobin,
            Some(RawLb::P2cEwma) => LbPolicy::P2cEwma,
            Some(RawLb::Hash) => LbPolicy::Hash,
        },
        hash: super::hash_lb::hash_lb(ctx, &format!("{path}.lb"), c.lb.as_ref()),
        load_report: match &c.lb {
            Some(LbSpec::Spec(spec)) => load_report(ctx, &format!("{path}.lb"), spec),
            _ => None,
        },
        connect_timeout: ctx.duration_or(
            &format!("{path}.connect_timeout"),
            c.connect_timeout.as_ref(),
            defaults::CONNECT_TIMEOUT,
        ),
        idle_timeout: ctx.duration_or(
            &format!("{path}.idle_timeout"),
            c.idle_timeout.as_ref(),
            defaults::CLUSTER_IDLE_TIMEOUT,
        ),
        outlier: outlier(ctx, &format!("{path}.outlier"), c.outlier.as_ref()),
        tls: super::tls::cluster_tls(ctx, &format!("{path}.tls"), c.tls.as_ref(), has_identity),
        slow_start: c
            .slow_start
            .as_ref()
            .and_then(|s| slow_start(ctx, &format!("{path}.slow_start"), s)),
    }
}

/// `lb.load_report`: only `p2c-ewma` compares costs, so only it can use a report.
fn load_report(ctx: &mut Ctx<'_>, path: &str, spec: &LbObjectSpec) -> Option<LoadReportLb> {
    let lr = spec.load_report.as_ref()?;
    let path = format!("{path}.load_report");
    if spec.policy == Some(RawLb::Hash) {
        // Reported by `hash_lb`.
        return None;
    }
    if spec.policy == Some(RawLb::RoundRobin) {
        ctx.error(
            &path,
            "round-robin does not read load reports (expected policy: p2c-ewma, or no load_report)",
        );
    }
    let metric = ctx.check(&format!("{path}.metric"), load_metric(lr.metric.as_str()));
    let weight = match &lr.weight {
        None => Some(defaults::LOAD_REPORT_WEIGHT),
        Some(w) => {
            let w = w.as_str();
            let parsed = w.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
            ctx.check(
                &format!("{path}.weight"),
                parsed.ok_or_else(|| {
                    format!("invalid weight {w:?} (expected a finite number > 0, e.g. 1.0)")
                }),
            )
        }
    };
    Some(LoadReportLb {
        metric: metric?,
        weight: weight?,
    })
}

/// A metric name as ORCA spells it: a scalar field, or `<map>.<key>`.
fn load_metric(s: &str) -> Result<LoadMetric, String> {
    let unknown = || {
        format!(
            "unknown load-report metric {s:?} (expected cpu_utilization, mem_utilization, application_utilization, rps_fractional, eps, or named_metrics.<name>, utilization.<name>, request_cost.<name>)"
        )
    };
    Ok(match s {
        "cpu_utilization" => LoadMetric::CpuUtilization,
        "mem_utilization" => LoadMetric::MemUtilization,
        "application_utilization" => LoadMetric::ApplicationUtilization,
        "rps_fractional" => LoadMetric::RpsFractional,
        "eps" => LoadMetric::Eps,
        _ => {
            let (map, key) = s.split_once('.').ok_or_else(unknown)?;
            // A TEXT report separates pairs with ',' and keys from values with '='.
            if key.is_empty() || key.contains([',', '=', ' ']) {
                return Err(unknown());
            }
            match map {
                "named_metrics" => LoadMetric::Named(key.to_owned()),
                "utilization" => LoadMetric::Utilization(key.to_owned()),
                "request_cost" => LoadMetric::RequestCost(key.to_owned()),
                _ => return Err(unknown()),
            }
        }
    })
}

fn slow_start(ctx: &mut Ctx<'_>, path: &str, s: &SlowStartSpec) -> Option<SlowStart> {
    let window = ctx.duration_or(&format!("{path}.window"), Some(&s.window), Duration::ZERO);
    if window.is_zero() {
        ctx.error(
            &format!("{path}.window"),
            "zero slow-start window (expected e.g. \"60s\"; omit slow_start to turn it off)",
        );
        return None;
    }
    let initial = match &s.initial {
        None => defaults::SLOW_START_INITIAL,
        Some(t) => {
            let p = format!("{path}.initial");
            let v = ctx.check(&p, parse_percent(t.as_str()))?;
            if v <= 0.0 {
                ctx.error(
                    &p,
                    "0% would never send the endpoint a request (expected e.g. \"10%\")",
                );
                return None;
            }
            v
        }
    };
    Some(SlowStart { window, initial })
}

fn endpoints(ctx: &mut Ctx<'_>, path: &str, c: &RawCluster) -> Option<Endpoints> {
    match (&c.endpoints, &c.dns, &c.original_authority) {
        (Some(list), None, None) => {
            let p = format!("{path}.endpoints");
            if list.is_empty() {
                ctx.error(&p, "empty list (expected at least one ip:port)");
                return None;
            }
            let addrs: Vec<_> = list
                .iter()
                .enumerate()
                .map(|(i, a)| ctx.socket_addr(&format!("{p}[{i}]"), a))
                .collect();
            addrs
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .map(Endpoints::Static)
        }
        (None, Some(dns), None) => {
            let p = format!("{path}.dns");
            if dns.names.is_empty() {
                ctx.error(
                    &format!("{p}.names"),
                    "empty list (expected at least one host:port)",
                );
                return None;
            }
            let names: Vec<_> = dns
                .names
                .iter()
                .enumerate()
                .map(|(i, n)| ctx.check(&format!("{p}.names[{i}]"), parse_host_port(n.as_str())))
                .collect();
            let refresh = ctx.duration_or(
                &format!("{p}.refresh"),
                dns.refresh.as_ref(),
                defaults::DNS_REFRESH,
            );
            if refresh.is_zero() {
                ctx.error(
                    &format!("{p}.refresh"),
                    "zero refresh interval (expected e.g. \"5s\")",
                );
            }
            Some(Endpoints::Dns {
                names: names.into_iter().collect::<Option<Vec<_>>>()?,
                refresh,
            })
        }
        (None, None, Some(oa)) => Some(Endpoints::OriginalAuthority {
            default_port: oa.default_port.unwrap_or(defaults::DEFAULT_PORT),
        }),
        _ => {
            ctx.error(
                path,
                "exactly one of endpoints, dns, original_authority must be set (expected e.g. endpoints: [127.0.0.1:8080])",
            );
            None
        }
    }
}

fn outlier(ctx: &mut Ctx<'_>, path: &str, spec: Option<&OutlierSpec>) -> Option<OutlierDetection> {
    let default = OutlierSpec::default();
    let spec = spec.unwrap_or(&default);
    if spec.enabled == Some(false) {
        return None;
    }
    let consecutive_failures = match spec.consecutive_failures {
        Some(0) => {
            ctx.error(
                &format!("{path}.consecutive_failures"),
                "invalid consecutive_failures 0 (expected an integer >= 1)",
            );
            defaults::OUTLIER_CONSECUTIVE_FAILURES
        }
        Some(n) => n,
        None => defaults::OUTLIER_CONSECUTIVE_FAILURES,
    };
    let base_ejection = ctx.duration_or(
        &format!("{path}.ejection"),
        spec.ejection.as_ref(),
        defaults::OUTLIER_EJECTION,
    );
    let max_ejection = ctx.duration_or(
        &format!("{path}.max_ejection"),
        spec.max_ejection.as_ref(),
        defaults::OUTLIER_MAX_EJECTION,
    );
    if max_ejection < base_ejection {
        ctx.error(
            &format!("{path}.max_ejection"),
            format!(
                "max_ejection {} is shorter than ejection {} (expected max_ejection >= ejection)",
                super::format_duration(max_ejection),
                super::format_duration(base_ejection)
            ),
        );
    }
    let max_ejection_percent = match spec.max_ejection_percent {
        None => defaults::OUTLIER_MAX_EJECTION_PERCENT,
        Some(n) => ctx
            .check(
                &format!("{path}.max_ejection_percent"),
                u8::try_from(n)
                    .ok()
                    .filter(|n| *n <= 100)
                    .ok_or_else(|| format!("invalid max_ejection_percent {n} (expected 0 to 100)")),
            )
            .unwrap_or(defaults::OUTLIER_MAX_EJECTION_PERCENT),
    };
    Some(OutlierDetection {
        consecutive_failures,
        base_ejection,
        max_ejection,
        max_ejection_percent,
    })
}
